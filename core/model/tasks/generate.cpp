#include "tasks/generate.h"

#include <torch/nn/functional.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <sstream>

#include "data/vocab.h"
#include "tasks/task.h"
#include "util/error.h"

namespace cs {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kGreedyBelow = 1e-6;  // temperatures below this are argmax (T -> 0 limit)

// Samples an index from probabilities p (sum 1) with u ~ U[0, 1): the inverse CDF.
int64_t sample_index(const std::vector<double>& p, double u) {
  double acc = 0;
  int64_t last_nonzero = -1;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] <= 0) continue;
    last_nonzero = static_cast<int64_t>(i);
    acc += p[i];
    if (u < acc) return static_cast<int64_t>(i);
  }
  return last_nonzero;  // rounding: u at the very top of the CDF
}

}  // namespace

double surprisal_shade(double prob) {
  if (!std::isfinite(prob)) return 0.0;
  if (prob <= 0) return 1.0;
  return std::min(1.0, std::max(0.0, -std::log2(prob) / kShadeFullBits));
}

Rgb surprisal_colour(double prob) {
  const double s = surprisal_shade(prob);
  auto mix = [s](int to) { return static_cast<int>(std::lround(255.0 + (to - 255.0) * s)); };
  return {mix(240), mix(80), mix(60)};
}

namespace {
std::string html_escape(const std::string& x) {
  std::string o;
  for (char c : x) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}
}  // namespace

std::string Generation::to_html(const std::string& header) const {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Cellscope sample</title>\n"
       "<style>body{font-family:monospace;white-space:pre-wrap;max-width:60em}span.seed{text-decoration:underline}"
       "</style></head><body>\n<p>"
    << html_escape(header)
    << "<br>Shading: the model's surprisal of each token given what precedes it, -log2 p, from white (0 bits) "
       "to red (10 bits or more); the seed text is underlined. Hover for p.</p>\n<div>";
  const bool words = task == "word_lm";
  bool line_start = true;
  for (auto& t : tokens) {
    // as text() reads: words joined by spaces, <eos> a line break
    std::string txt = !words ? t.text : t.text == "<eos>" ? "\n" : (line_start ? t.text : " " + t.text);
    line_start = txt == "\n";
    const Rgb c = surprisal_colour(t.prob);
    o << "<span" << (t.from_seed ? " class=\"seed\"" : "") << " style=\"background:rgb(" << c.r << "," << c.g << ","
      << c.b << ")\" title=\"" << (std::isfinite(t.prob) ? std::to_string(t.prob) : std::string("first token")) << "\">"
      << html_escape(txt) << "</span>";
  }
  o << "</div>\n</body></html>\n";
  return o.str();
}

std::string Generation::text() const {
  std::string s;
  const bool words = task == "word_lm";
  for (size_t i = 0; i < tokens.size(); ++i) {
    const auto& t = tokens[i];
    if (!words) {
      s += t.text;
    } else if (t.text == "<eos>") {
      s += "\n";
    } else {
      if (!s.empty() && s.back() != '\n') s += " ";
      s += t.text;
    }
  }
  return s;
}

double Generation::generated_bits_per_token() const {
  double bits = 0;
  int64_t n = 0;
  for (auto& t : tokens)
    if (!t.from_seed) {
      bits -= std::log2(t.prob);
      ++n;
    }
  return n > 0 ? bits / static_cast<double>(n) : kNaN;
}

json Generation::to_json() const {
  auto num = [](double x) { return std::isfinite(x) ? json(x) : json(nullptr); };
  json toks = json::array();
  for (auto& t : tokens)
    toks.push_back({{"text", t.text},
                    {"id", t.id},
                    {"prob", num(t.prob)},
                    {"sample_prob", num(t.sample_prob)},
                    {"seed", t.from_seed}});
  return {{"task", task},
          {"text", text()},
          {"tokens", toks},
          {"seed_text", options.seed_text},
          {"length", options.length},
          {"temperature", options.temperature},
          {"seed", options.seed},
          {"top_k", options.top_k},
          {"unknown_seed_tokens", unknown_seed_tokens},
          {"generated_bits_per_token", num(generated_bits_per_token())}};
}

Generation generate(Task& task, const GenerateOptions& o) {
  if (o.length < 0 || o.length > 1000000)
    throw UserError("generation length must be between 0 and 1000000, got " + std::to_string(o.length));
  if (!std::isfinite(o.temperature) || o.temperature < 0)
    throw UserError("temperature must be >= 0 (0 = greedy), got " + std::to_string(o.temperature));
  if (o.top_k < 0) throw UserError("top-k must be >= 0 (0 = all tokens), got " + std::to_string(o.top_k));
  TokenStepper v = task.token_stepper(o.seed_text);
  const int64_t V = static_cast<int64_t>(v.vocab->size());
  if (V < 2) throw UserError("the run's vocabulary has no symbols besides <unk>: nothing to generate");

  Generation g;
  g.task = task.name();
  g.options = o;
  auto net = task.model();
  EvalScope eval_scope(*net);  // eval mode and no grad; training mode restored on exit (also on a throw)
  std::mt19937_64 rng(o.seed);
  std::uniform_real_distribution<double> unif(0.0, 1.0);

  // The seed: fed as one sequence; each seed token after the first is scored by the model.
  std::vector<int64_t> seed_ids;
  for (auto& s : v.seed_symbols) {
    const int32_t id = v.vocab->id(s);
    if (id == Vocab::kUnkId && s != Vocab::kUnk) ++g.unknown_seed_tokens;
    seed_ids.push_back(id);
  }
  bool primed = !seed_ids.empty();
  if (!primed) {
    // no seed: start after a line break (<eos> for words) when the vocabulary has one, else <unk>
    seed_ids.push_back(v.vocab->id(v.start_symbol));
  }
  auto x = torch::tensor(seed_ids, torch::kInt64).view({-1, 1});
  auto logits = v.forward(x).select(1, 0).to(torch::kFloat64);  // [S, V]
  if (primed) {
    auto lp = torch::log_softmax(logits, -1);
    for (size_t i = 0; i < seed_ids.size(); ++i) {
      GeneratedToken t;
      t.id = static_cast<int32_t>(seed_ids[i]);
      t.text = v.seed_symbols[i];
      t.prob = i == 0 ? kNaN : std::exp(lp[static_cast<int64_t>(i) - 1][seed_ids[i]].item<double>());
      t.sample_prob = kNaN;
      t.from_seed = true;
      g.tokens.push_back(std::move(t));
    }
  }
  auto last = logits[logits.size(0) - 1];  // [V]: the distribution of the next token
  const bool greedy = o.temperature < kGreedyBelow;
  for (int64_t n = 0; n < o.length; ++n) {
    auto model_p = torch::softmax(last, -1);  // T = 1: the model's own belief, for the shading
    // the sampling distribution: softmax(logits / T) over the allowed tokens (top-k)
    auto z = last.clone();
    if (!o.allow_unk) z[Vocab::kUnkId] = -std::numeric_limits<double>::infinity();
    if (o.top_k > 0 && o.top_k < V) {
      auto kth = std::get<0>(z.topk(o.top_k)).min();
      z = torch::where(z < kth, torch::full_like(z, -std::numeric_limits<double>::infinity()), z);
    }
    int64_t next;
    double sp;
    if (greedy) {
      next = z.argmax().item<int64_t>();  // ties: the lowest id
      sp = 1.0;
    } else {
      auto ps = torch::softmax(z / o.temperature, -1).contiguous();
      std::vector<double> p(ps.data_ptr<double>(), ps.data_ptr<double>() + V);
      next = sample_index(p, unif(rng));
      sp = p[static_cast<size_t>(next)];
    }
    GeneratedToken t;
    t.id = static_cast<int32_t>(next);
    t.text = v.vocab->symbol(t.id);
    t.prob = model_p[next].item<double>();
    t.sample_prob = sp;
    g.tokens.push_back(std::move(t));
    if (n + 1 == o.length) break;
    auto xi = torch::tensor(std::vector<int64_t>{next}, torch::kInt64).view({1, 1});
    last = v.forward(xi).select(1, 0)[0].to(torch::kFloat64);
  }
  return g;
}

}  // namespace cs
