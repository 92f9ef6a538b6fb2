// Word tokenizer for the sentence-level tasks (classify, absa). A stand-in named
// differently from the word-LM engineer's core/base/data/tokenizer.h (tokenize()) to
// avoid conflicts; the sentence tasks can switch to it once it is on main.
//
// Rules (tokenize_words):
//  * whitespace (space, tab, CR, LF, FF, VT) separates tokens;
//  * a word is a maximal run of word characters: ASCII letters and digits, '_',
//    and every byte >= 0x80 (so UTF-8 letters stay inside words);
//  * an apostrophe or hyphen between two word characters stays inside the word
//    ("don't", "well-known"); elsewhere it is punctuation;
//  * every other ASCII character (punctuation, symbols) is a token of its own;
//  * with `lowercase`, ASCII letters are lower-cased (other bytes unchanged);
//  * with max_tokens > 0, only the first max_tokens tokens are returned.
#pragma once
#include <string>
#include <vector>

namespace cs {

struct TextTokenizeOptions {
  bool lowercase = true;
  size_t max_tokens = 0;  // 0 = all
};

std::vector<std::string> tokenize_words(const std::string& text, const TextTokenizeOptions& opt = {});

// Latin-1 (ISO 8859-1) bytes -> UTF-8.
std::string latin1_to_utf8(const std::string& s);
// Byte offset of the first invalid UTF-8 sequence, or std::string::npos.
size_t find_invalid_utf8(const std::string& s);

}  // namespace cs
