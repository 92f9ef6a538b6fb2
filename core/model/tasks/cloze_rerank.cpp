#include "tasks/cloze_rerank.h"

#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <memory>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "data/utf8.h"
#include "data/vocab.h"
#include "data/wordnet.h"
#include "tasks/eval_scope.h"
#include "tasks/task.h"
#include "tasks/word_lm.h"
#include "util/error.h"
#include "util/text.h"

namespace cs {

namespace {

constexpr double kMinProb = 1e-12;  // the reader's probability floor before the log
const char kSep = '\x1f';

std::vector<std::string> lowered(const std::vector<std::string>& v) {
  std::vector<std::string> o;
  o.reserve(v.size());
  for (auto& w : v) o.push_back(ascii_lower(w));
  return o;
}

std::string key(const std::vector<std::string>& v, size_t a, size_t b) {  // v[a, b)
  std::string k;
  for (size_t i = a; i < b; ++i) {
    if (i > a) k += kSep;
    k += v[i];
  }
  return k;
}

std::vector<std::string> str_array(const json& j, const char* field, const std::string& at) {
  if (!j.contains(field)) throw UserError(at + "missing \"" + field + "\" (an array of strings)");
  const json& a = j[field];
  if (!a.is_array()) throw UserError(at + "\"" + field + "\" must be an array of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string())
      throw UserError(at + "\"" + field + "\"[" + std::to_string(i) + "] is not a string (" +
                      a[i].dump().substr(0, 30) + ")");
    out.push_back(a[i].get<std::string>());
  }
  return out;
}

}  // namespace

// ---- JSONL ----

std::vector<std::string> ClozeScored::filled(size_t c) const {
  std::vector<std::string> q = query;
  for (auto& w : q)
    if (w == "XXXXX") w = candidates.at(c);
  return q;
}

std::vector<ClozeScored> parse_cloze_scores(const std::string& text, const std::string& source) {
  std::vector<ClozeScored> out;
  LineReader lines(text);
  std::string line;
  while (lines.next(line)) {
    const size_t ln = lines.number();
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string at = source + ":" + std::to_string(ln) + ": ";
    json j;
    try {
      j = json::parse(line);
    } catch (const std::exception& e) {
      throw UserError(at + "not valid JSON: " + json_error_text(e));
    }
    if (!j.is_object()) throw UserError(at + "expected a JSON object per line");
    ClozeScored q;
    q.document = str_array(j, "document", at);
    q.query = str_array(j, "query", at);
    q.candidates = str_array(j, "candidates", at);
    const auto blanks = std::count(q.query.begin(), q.query.end(), "XXXXX");
    if (blanks != 1)
      throw UserError(at + "\"query\" must hold exactly one \"XXXXX\" (it holds " + std::to_string(blanks) + ")");
    if (q.candidates.size() < 2) throw UserError(at + "\"candidates\" needs at least 2 words");
    for (size_t i = 0; i < q.candidates.size(); ++i)
      for (size_t k = 0; k < i; ++k)
        if (q.candidates[i] == q.candidates[k])
          throw UserError(at + "\"candidates\" lists '" + q.candidates[i] + "' twice");
    if (!j.contains("prob") || !j["prob"].is_array()) throw UserError(at + "missing \"prob\" (an array of numbers)");
    for (size_t i = 0; i < j["prob"].size(); ++i) {
      const json& p = j["prob"][i];
      if (!p.is_number()) throw UserError(at + "\"prob\"[" + std::to_string(i) + "] is not a number");
      const double x = p.get<double>();
      if (!(x >= 0 && x <= 1))
        throw UserError(at + "\"prob\"[" + std::to_string(i) + "] = " + p.dump() + " is not a probability in [0, 1]");
      q.prob.push_back(x);
    }
    if (q.prob.size() != q.candidates.size())
      throw UserError(at + "\"prob\" has " + std::to_string(q.prob.size()) + " numbers for " +
                      std::to_string(q.candidates.size()) + " candidates");
    if (!j.contains("answer") || !j["answer"].is_number_integer())
      throw UserError(at + "missing \"answer\" (the index of the answer in \"candidates\")");
    q.answer = j["answer"].get<int64_t>();
    if (q.answer < 0 || q.answer >= static_cast<int64_t>(q.candidates.size()))
      throw UserError(at + "\"answer\" = " + std::to_string(q.answer) + " is not an index of \"candidates\" (0.." +
                      std::to_string(q.candidates.size() - 1) + ")");
    out.push_back(std::move(q));
  }
  if (out.empty())
    throw UserError(source +
                    ": no questions (expected one JSON object per line, as `cellscope-cli cloze scores` writes)");
  return out;
}

std::vector<ClozeScored> read_cloze_scores(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw UserError("cannot read '" + path + "'");
  std::ostringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  text.erase(0, utf8_bom_size(reinterpret_cast<const unsigned char*>(text.data()), text.size()));
  return parse_cloze_scores(text, path);
}

// ---- n-gram LM ----

NgramLM::NgramLM(int order, double discount) : order_(order), d_(discount) {
  if (order < 1 || order > 10) throw UserError("n-gram order must be 1..10, got " + std::to_string(order));
  if (!(discount > 0 && discount < 1)) throw UserError("n-gram discount must be in (0, 1)");
  ngram_.resize(order + 1);
  hist_n_.resize(order + 1);
  hist_types_.resize(order + 1);
}

void NgramLM::add_sentence(const std::vector<std::string>& words) {
  std::vector<std::string> t{"<s>"};
  t.insert(t.end(), words.begin(), words.end());
  t.push_back("</s>");
  for (size_t i = 1; i < t.size(); ++i) {
    ++tokens_;
    for (int k = 1; k <= order_ && static_cast<size_t>(k) <= i + 1; ++k) {
      const size_t a = i + 1 - static_cast<size_t>(k);
      const bool is_new = ngram_[k][key(t, a, i + 1)]++ == 0;
      if (k >= 2) {
        const std::string h = key(t, a, i);
        ++hist_n_[k][h];
        if (is_new) ++hist_types_[k][h];
      }
    }
  }
}

double NgramLM::p(const std::vector<std::string>& ctx, size_t from, const std::string& w) const {
  // ctx[from..] is the history (length k-1)
  const int k = static_cast<int>(ctx.size() - from) + 1;
  if (k == 1) {
    auto it = ngram_[1].find(w);
    const double c = it == ngram_[1].end() ? 0.0 : static_cast<double>(it->second);
    return (c + 1.0) / (static_cast<double>(tokens_) + static_cast<double>(ngram_[1].size()) + 1.0);
  }
  const double lower_p = p(ctx, from + 1, w);
  const std::string h = key(ctx, from, ctx.size());
  auto hn = hist_n_[k].find(h);
  if (hn == hist_n_[k].end()) return lower_p;
  auto cw = ngram_[k].find(h + kSep + w);
  const double c = cw == ngram_[k].end() ? 0.0 : static_cast<double>(cw->second);
  const double types = static_cast<double>(hist_types_[k].at(h));
  return (std::max(c - d_, 0.0) + d_ * types * lower_p) / static_cast<double>(hn->second);
}

double NgramLM::prob(const std::vector<std::string>& history, const std::string& w) const {
  const size_t keep = std::min(history.size(), static_cast<size_t>(order_ - 1));
  std::vector<std::string> ctx(history.end() - static_cast<std::ptrdiff_t>(keep), history.end());
  return p(ctx, 0, w);
}

double NgramLM::sentence_logprob(const std::vector<std::string>& words) const {
  std::vector<std::string> t{"<s>"};
  t.insert(t.end(), words.begin(), words.end());
  t.push_back("</s>");
  double lp = 0;
  for (size_t i = 1; i < t.size(); ++i) {
    const size_t a = i >= static_cast<size_t>(order_ - 1) ? i - static_cast<size_t>(order_ - 1) : 0;
    std::vector<std::string> ctx(t.begin() + static_cast<std::ptrdiff_t>(a),
                                 t.begin() + static_cast<std::ptrdiff_t>(i));
    lp += std::log(p(ctx, 0, t[i]));
  }
  return lp;
}

// ---- Global LM ----

double stepper_logprob(const TokenStepper& v, const std::vector<std::string>& symbols) {
  if (!v.vocab || !v.forward) throw UserError("global LM: the run gives no token stepper");
  std::vector<int64_t> ids{v.vocab->id(v.start_symbol)};
  for (auto& s : symbols) ids.push_back(v.vocab->id(s));
  auto x = torch::tensor(ids, torch::kInt64).view({-1, 1});
  auto lp = torch::log_softmax(v.forward(x).select(1, 0).to(torch::kFloat64), -1);  // [T, V]
  double sum = 0;
  for (size_t i = 1; i < ids.size(); ++i) sum += lp[static_cast<int64_t>(i) - 1][ids[i]].item<double>();
  return sum;
}

std::function<double(const std::vector<std::string>&)> task_lm_scorer(Task& task) {
  return [&task](const std::vector<std::string>& words) {
    std::string text;
    for (size_t i = 0; i < words.size(); ++i) text += (i ? " " : "") + words[i];
    TokenStepper v = task.token_stepper(text);
    EvalScope es(*task.model());
    return stepper_logprob(v, v.seed_symbols);
  };
}

// ---- has the Global LM seen the questions? ----

json LmOverlap::to_json() const {
  return {{"questions", questions}, {"checked", checked},     {"found", found},
          {"fraction", fraction()}, {"overlaps", overlaps()}, {"order", kLmOverlapOrder}};
}

std::string LmOverlap::warning(const std::string& lm, const std::string& split) const {
  if (!overlaps()) return "";
  std::ostringstream o;
  o << std::fixed << std::setprecision(1) << "the Global LM " << lm << " was trained on text that holds " << found
    << " of the " << checked << " checked " << split << " questions (" << 100 * fraction()
    << "%: at least half of each query's word " << kLmOverlapOrder << "-grams occur in its training split): it has "
    << "seen the " << split << " split, so the re-ranked " << split << " accuracy is not a held-out number; train "
    << "the LM on the cloze training split only (preset word-lm-moby-cloze-train)";
  return o.str();
}

LmOverlap lm_overlap(const std::vector<ClozeScored>& qs, const std::vector<std::string>& lm_train_tokens,
                     const std::function<std::vector<std::string>(const std::vector<std::string>&)>& tokenize) {
  const size_t n = static_cast<size_t>(kLmOverlapOrder);
  auto usable = [](const std::string& w) { return w != Vocab::kUnk && w != "<eos>"; };
  // the n-grams of v that hold no <unk> / <eos>, as keys
  auto ngrams = [&](const std::vector<std::string>& v, const std::function<void(std::string)>& f) {
    size_t run = 0;  // usable tokens ending at i
    for (size_t i = 0; i < v.size(); ++i) {
      run = usable(v[i]) ? run + 1 : 0;
      if (run >= n) f(key(v, i + 1 - n, i + 1));
    }
  };
  std::unordered_set<std::string> seen;
  ngrams(lm_train_tokens, [&](std::string k) { seen.insert(std::move(k)); });
  LmOverlap r;
  r.questions = static_cast<int64_t>(qs.size());
  for (auto& q : qs) {
    int64_t total = 0, hit = 0;
    ngrams(tokenize(q.filled(static_cast<size_t>(q.answer))), [&](std::string k) {
      ++total;
      hit += seen.count(k) ? 1 : 0;
    });
    if (total < kLmOverlapMinNgrams) continue;
    ++r.checked;
    if (2 * hit >= total) ++r.found;
  }
  return r;
}

std::vector<std::string> lm_training_symbols(Task& task) {
  auto* w = dynamic_cast<WordLMTask*>(&task);
  if (!w) throw UserError("the Global LM must be a word_lm run (this one is a " + task.name() + " run)");
  const WordCorpus& c = w->corpus();
  std::vector<std::string> out;
  out.reserve(c.train.size());
  for (int32_t id : c.train) out.push_back(c.vocab.symbol(id));
  return out;
}

std::function<std::vector<std::string>(const std::vector<std::string>&)> task_lm_tokenizer(Task& task) {
  return [&task](const std::vector<std::string>& words) {
    std::string text;
    for (size_t i = 0; i < words.size(); ++i) text += (i ? " " : "") + words[i];
    const TokenStepper v = task.token_stepper(text);
    std::vector<std::string> out;
    out.reserve(v.seed_symbols.size());
    for (auto& s : v.seed_symbols) out.push_back(v.vocab && v.vocab->contains(s) ? s : std::string(Vocab::kUnk));
    return out;
  };
}

// ---- word classes ----

WordClasses::WordClasses(const WordNet* wn, std::unordered_set<std::string> frequent)
    : wn_(wn), frequent_(std::move(frequent)) {}

std::string WordClasses::of(const std::string& word) const {
  const std::string lw = ascii_lower(word);
  if (frequent_.count(lw)) return lw;
  const unsigned char c0 = word.empty() ? 0 : static_cast<unsigned char>(word[0]);
  if (!(std::isalnum(c0) || c0 >= 0x80)) return word;  // punctuation
  const bool cap = c0 >= 'A' && c0 <= 'Z';
  if (wn_) {
    if (!cap && wn_->common_noun(lw)) {
      const int lf = wn_->first_lexfile(lw, 'n');
      if (lf >= 0) return (lf < 10 ? "n0" : "n") + std::to_string(lf);
    }
    if (!cap && !wn_->morphy(lw, 'v').empty()) {
      const int lf = wn_->first_lexfile(lw, 'v');
      return (lf < 10 ? "v0" : "v") + std::to_string(lf);
    }
    if (!cap && !wn_->morphy(lw, 'a').empty()) return "adj";
    if (!cap && !wn_->morphy(lw, 'r').empty()) return "adv";
  }
  return cap ? "Cap" : "w";
}

std::unordered_set<std::string> WordClasses::most_frequent(const std::vector<std::vector<std::string>>& sentences,
                                                           int64_t k) {
  std::unordered_map<std::string, int64_t> n;
  for (auto& s : sentences)
    for (auto& w : s) ++n[ascii_lower(w)];
  std::vector<std::pair<std::string, int64_t>> v(n.begin(), n.end());
  std::sort(v.begin(), v.end(),
            [](auto& a, auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
  std::unordered_set<std::string> out;
  for (size_t i = 0; i < v.size() && static_cast<int64_t>(i) < k; ++i) out.insert(v[i].first);
  return out;
}

// ---- weights ----

int64_t rerank_choice(const std::vector<std::vector<double>>& cf, const std::vector<double>& w) {
  int64_t best = 0;
  double best_s = -std::numeric_limits<double>::infinity();
  for (size_t c = 0; c < cf.size(); ++c) {
    double s = 0;
    for (size_t k = 0; k < w.size(); ++k)
      if (w[k] != 0) s += w[k] * cf[c][k];
    if (s > best_s) {
      best_s = s;
      best = static_cast<int64_t>(c);
    }
  }
  return best;
}

double rerank_accuracy(const FeatureTable& f, const std::vector<int64_t>& answers, const std::vector<double>& w) {
  if (f.empty()) return 0;
  int64_t right = 0;
  for (size_t q = 0; q < f.size(); ++q) right += rerank_choice(f[q], w) == answers[q];
  return static_cast<double>(right) / static_cast<double>(f.size());
}

TunedWeights tune_weights(const FeatureTable& f, const std::vector<int64_t>& answers, const std::vector<double>& grid) {
  if (grid.empty()) throw UserError("re-ranking: the weight grid is empty");
  const size_t K = f.empty() || f[0].empty() ? 1 : f[0][0].size();
  TunedWeights best;
  best.weights.assign(K, 0.0);
  best.weights[0] = 1;
  best.accuracy = -1;
  double best_sum = std::numeric_limits<double>::infinity();
  std::vector<size_t> idx(K, 0);  // idx[1..K-1] into grid
  while (true) {
    std::vector<double> w(K, 1.0);
    double sum = 0;
    for (size_t k = 1; k < K; ++k) {
      w[k] = grid[idx[k]];
      sum += w[k];
    }
    const double acc = rerank_accuracy(f, answers, w);
    ++best.evaluated;
    if (acc > best.accuracy + 1e-12 || (std::abs(acc - best.accuracy) <= 1e-12 && sum < best_sum - 1e-12)) {
      best.accuracy = acc;
      best.weights = w;
      best_sum = sum;
    }
    size_t k = K - 1;  // odometer over idx[1..K-1]
    while (k >= 1 && ++idx[k] == grid.size()) idx[k--] = 0;
    if (k == 0) break;
  }
  return best;
}

// ---- the step ----

json RerankReport::to_json() const {
  json w = json::object();
  for (size_t k = 0; k < features.size(); ++k) w[features[k]] = weights[k];
  return {
      {"features", features},
      {"weights", w},
      {"valid", {{"questions", valid_questions}, {"accuracy_before", valid_before}, {"accuracy_after", valid_after}}},
      {"test", {{"questions", test_questions}, {"accuracy_before", test_before}, {"accuracy_after", test_after}}},
      {"grid_points", grid_points},
      {"class_lm_training", class_lm_training}};
}

std::string RerankReport::to_text() const {
  std::ostringstream o;
  o << std::fixed << std::setprecision(2);
  o << "features and weights tuned on valid (" << grid_points << " grid points):\n";
  for (size_t k = 0; k < features.size(); ++k)
    o << "  " << std::left << std::setw(14) << features[k] << weights[k] << "\n";
  if (!class_lm_training.empty()) o << "word-class LM trained on: " << class_lm_training << "\n";
  o << "                 questions   reader   + re-ranking\n";
  o << "  valid    " << std::right << std::setw(14) << valid_questions << std::setw(8) << 100 * valid_before << "%"
    << std::setw(13) << 100 * valid_after << "%\n";
  o << "  test     " << std::setw(14) << test_questions << std::setw(8) << 100 * test_before << "%" << std::setw(13)
    << 100 * test_after << "%\n";
  return o.str();
}

std::vector<std::string> RerankModels::feature_names() const {
  std::vector<std::string> f{"reader", "local_lm"};
  if (global_lm) f.push_back("global_lm");
  if (classes && class_lm) f.push_back("word_class_lm");
  return f;
}

FeatureTable rerank_features(const std::vector<ClozeScored>& qs, const RerankModels& m) {
  FeatureTable f;
  for (auto& q : qs) {
    NgramLM local(m.order, m.discount);
    local.add_sentence(lowered(q.document));
    std::vector<std::vector<double>> cf;
    for (size_t c = 0; c < q.candidates.size(); ++c) {
      const auto filled = q.filled(c);
      std::vector<double> x{std::log(std::max(q.prob[c], kMinProb)), local.sentence_logprob(lowered(filled))};
      if (m.global_lm) x.push_back(m.global_lm(filled));
      if (m.classes && m.class_lm) {
        std::vector<std::string> cs;
        for (auto& w : filled) cs.push_back(m.classes->of(w));
        x.push_back(m.class_lm->sentence_logprob(cs));
      }
      cf.push_back(std::move(x));
    }
    f.push_back(std::move(cf));
  }
  return f;
}

RerankReport rerank_cloze(const std::vector<ClozeScored>& valid, const std::vector<ClozeScored>& test,
                          const std::vector<ClozeScored>& train, const WordNet* wn,
                          const std::function<double(const std::vector<std::string>&)>& global_lm,
                          const RerankOptions& o) {
  RerankReport r;
  RerankModels m;
  m.order = o.order;
  m.discount = o.discount;
  m.global_lm = global_lm;
  std::unique_ptr<WordClasses> classes;
  std::unique_ptr<NgramLM> class_lm;
  if (wn) {
    std::vector<std::vector<std::string>> text;
    const auto& src = train.empty() ? valid : train;
    for (auto& q : src) {
      text.push_back(q.document);
      if (!train.empty()) text.push_back(q.filled(static_cast<size_t>(q.answer)));
    }
    r.class_lm_training = train.empty()
                              ? "the valid documents (" + std::to_string(valid.size()) + "; no --train given)"
                              : "the training documents and answered queries (" + std::to_string(train.size()) + ")";
    classes = std::make_unique<WordClasses>(wn, WordClasses::most_frequent(text, o.frequent_words));
    class_lm = std::make_unique<NgramLM>(o.order, o.discount);
    for (auto& s : text) {
      std::vector<std::string> cs;
      for (auto& w : s) cs.push_back(classes->of(w));
      class_lm->add_sentence(cs);
    }
    m.classes = classes.get();
    m.class_lm = class_lm.get();
  }
  r.features = m.feature_names();
  auto answers = [](const std::vector<ClozeScored>& qs) {
    std::vector<int64_t> a;
    for (auto& q : qs) a.push_back(q.answer);
    return a;
  };
  const FeatureTable fv = rerank_features(valid, m), ft = rerank_features(test, m);
  const auto av = answers(valid), at = answers(test);
  std::vector<double> reader_only(r.features.size(), 0.0);
  reader_only[0] = 1;
  const TunedWeights tw = tune_weights(fv, av, o.grid);
  r.weights = tw.weights;
  r.grid_points = tw.evaluated;
  r.valid_questions = static_cast<int64_t>(valid.size());
  r.test_questions = static_cast<int64_t>(test.size());
  r.valid_before = rerank_accuracy(fv, av, reader_only);
  r.test_before = rerank_accuracy(ft, at, reader_only);
  r.valid_after = tw.accuracy;
  r.test_after = rerank_accuracy(ft, at, r.weights);
  return r;
}

}  // namespace cs
