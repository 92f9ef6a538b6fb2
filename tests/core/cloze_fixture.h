// CBT-format fixture sets for the cloze tests (tests/core/test_cloze_*.cpp): a learnable
// task whose frequency baseline is poor. Each document (20 short numbered lines) states
// "the key is A ." and "the gift is B ." once each among filler lines in which one other
// candidate occurs 4 times and the rest 0-2 times; the query asks "... the key is XXXXX ."
// (or gift), so the answer (A or B) occurs at most twice and the most frequent candidate is
// never the answer. A reader must match the query's marker word to the document.
#pragma once
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "harness.h"

namespace clozefix {

inline std::string cbt_text(int n, unsigned seed) {
  static const std::vector<std::string> nouns = {"apple", "boat", "cat",   "dog",  "egg",  "fish", "goat",
                                                 "hat",   "ink",  "jar",   "kite", "lamp", "moon", "nut",
                                                 "owl",   "pig",  "queen", "rat",  "sun",  "tree"};
  static const std::vector<std::string> fill = {"a",   "and", "then", "so",  "very", "big",
                                                "old", "it",  "ran",  "saw", "he",   "we"};
  std::mt19937 rng(seed);
  auto pick = [&](size_t k) { return static_cast<size_t>(rng() % k); };
  std::string out;
  for (int e = 0; e < n; ++e) {
    std::vector<std::string> pool = nouns;
    std::shuffle(pool.begin(), pool.end(), rng);
    std::vector<std::string> cands(pool.begin(), pool.begin() + 10);
    const bool key = pick(2) == 0;
    const std::string answer = cands[0], other = cands[1], frequent = cands[2];
    std::vector<std::vector<std::string>> lines(20);
    for (auto& l : lines)
      for (int k = 0; k < 3; ++k) l.push_back(fill[pick(fill.size())]);
    const size_t la = pick(20);
    size_t lb = pick(20);
    if (lb == la) lb = (la + 7) % 20;
    lines[la] = {"the", key ? "key" : "gift", "is", answer, "."};
    lines[lb] = {"the", key ? "gift" : "key", "is", other, "."};
    auto sprinkle = [&](const std::string& w, int times) {
      for (int t = 0; t < times; ++t) {
        size_t l = pick(20);
        while (l == la || l == lb) l = pick(20);
        lines[l].insert(lines[l].begin() + static_cast<std::ptrdiff_t>(pick(lines[l].size() + 1)), w);
      }
    };
    sprinkle(frequent, 4);
    sprinkle(answer, static_cast<int>(pick(2)));
    for (size_t c = 3; c < 10; ++c) sprinkle(cands[c], static_cast<int>(pick(3)));
    for (size_t l = 0; l < 20; ++l) {
      out += std::to_string(l + 1) + " ";
      for (size_t k = 0; k < lines[l].size(); ++k) out += (k ? " " : "") + lines[l][k];
      out += "\n";
    }
    std::shuffle(cands.begin(), cands.end(), rng);
    std::string cl;
    for (auto& c : cands) cl += (cl.empty() ? "" : "|") + c;
    out += std::string("21 she said the ") + (key ? "key" : "gift") + " is XXXXX .\t" + answer + "\t\t" + cl + "\n\n";
  }
  return out;
}

// A dataset directory with CBT's own file names.
inline std::string write_cbt_dir(const std::string& dir, int train = 400, int valid = 60, int test = 60) {
  cstest::write_text(dir + "/cbtest_CN_train.txt", cbt_text(train, 11));
  cstest::write_text(dir + "/cbtest_CN_valid_2000ex.txt", cbt_text(valid, 22));
  cstest::write_text(dir + "/cbtest_CN_test_2500ex.txt", cbt_text(test, 33));
  return dir;
}

}  // namespace clozefix
