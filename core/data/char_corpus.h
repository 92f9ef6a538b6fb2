#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "config/schema.h"
#include "data/vocab.h"

namespace cs {
struct CharCorpus {
  std::vector<int32_t> train, valid, test;
  Vocab vocab;
  std::string source;
  std::string format;
};
CharCorpus load_char_corpus(const json& dataset, const Vocab* fixed_vocab = nullptr);
}  // namespace cs
