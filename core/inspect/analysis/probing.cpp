#include "analysis/probing.h"

#include <algorithm>
#include <regex>

#include "analysis/results.h"
#include "data/vocab.h"
#include "util/error.h"

namespace cs {

EncodedText encode_nonempty(Task& task, const std::string& text) {
  EncodedText e = task.encode_text(text);
  for (auto& t : e.tokens) t = display_symbol(t);
  if (e.ids.empty()) throw UserError("the text is empty");
  return e;
}

std::vector<std::string> unknown_symbols(const EncodedText& enc) {
  std::vector<std::string> out;
  for (size_t i = 0; i < enc.ids.size() && i < enc.tokens.size(); ++i)
    if (enc.ids[i] == Vocab::kUnkId) {
      const std::string s = display_symbol(enc.tokens[i]);
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
  return out;
}

std::string mark_unknown(const std::string& label) { return "\u00ab" + label + "\u00bb"; }

Probe probe_ids(Task& task, const std::vector<int32_t>& ids) {
  Probe probe;
  task.probe_sequence(ids, probe);
  return probe;
}

Probe probe_text_or_split(Task& task, const std::string& text) {
  Probe probe;
  if (task.probe_split_sentences(text, 64, probe)) return probe;
  return probe_ids(task, encode_nonempty(task, text).ids);
}

std::string layer_of(const Probe& p, int layer) {
  int n = 0;
  std::regex re("^l([0-9]+)/");
  for (auto& [k, v] : p.series) {
    std::smatch m;
    if (std::regex_search(k, m, re)) n = std::max(n, std::stoi(m[1].str()) + 1);
  }
  if (n == 0) throw UserError("the model records nothing for this analysis");
  int l = layer < 0 ? n + layer : layer;
  if (l < 0 || l >= n)
    throw UserError("layer " + std::to_string(layer) + " out of range (the model has " + std::to_string(n) +
                    " layers)");
  return "l" + std::to_string(l) + "/";
}

torch::Tensor recorded(const Probe& p, const std::string& key, const std::string& cell) {
  if (!p.has(key)) throw UserError("cell '" + cell + "' does not record '" + key + "' for this analysis");
  return p.stacked(key);
}

std::vector<std::string> keys_named(const Probe& p, const std::set<std::string>& names) {
  std::vector<std::string> out;
  for (auto& [k, v] : p.series) {
    auto slash = k.rfind('/');
    if (names.count(slash == std::string::npos ? k : k.substr(slash + 1))) out.push_back(k);
  }
  return out;
}

const std::set<std::string>& gate_names() {
  static const std::set<std::string> names = {"gate", "reset", "forget", "output_gate"};
  return names;
}

}  // namespace cs
