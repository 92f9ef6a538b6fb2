// A small, dependency-free word tokenizer shared by the word-level tasks
// (word_lm, sentence classification). Rules (see tokenize()):
//  * whitespace separates tokens;
//  * every ASCII punctuation character, and the typographic punctuation
//    “ ” ‘ ’ — – … , is a token of its own (or dropped with keep_punctuation = false);
//  * an apostrophe (' or ’) or hyphen between two word characters stays inside the
//    word when keep_inner is set: "don't", "people’s", "whale-ship" (’ is normalised to ');
//  * other bytes (letters, digits, any other UTF-8) are word characters;
//  * lowercase folds ASCII letters only (UTF-8 beyond ASCII is kept as is).
#pragma once
#include <string>
#include <vector>

namespace cs {

struct TokenizerOptions {
  bool lowercase = true;
  bool keep_punctuation = true;  // punctuation marks become tokens (false: dropped)
  bool keep_inner = true;        // ' and - between word characters stay in the word
};

std::vector<std::string> tokenize(const std::string& text, const TokenizerOptions& opt = {});

// Split text into lines (\n, \r\n), without the line ends.
std::vector<std::string> split_lines(const std::string& text);

}  // namespace cs
