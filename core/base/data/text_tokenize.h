// UTF-8 helpers of the sentence-task loaders (data/text_datasets.cpp). Their word tokenizer is
// data/tokenizer.h's tokenize() (dataset.tokenizer; LegacyRules::Sentence for old runs).
#pragma once
#include <string>

namespace cs {

// Latin-1 (ISO 8859-1) bytes -> UTF-8.
std::string latin1_to_utf8(const std::string& s);
// Byte offset of the first invalid UTF-8 sequence, or std::string::npos.
size_t find_invalid_utf8(const std::string& s);

}  // namespace cs
