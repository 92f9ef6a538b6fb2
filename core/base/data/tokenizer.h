// The one word tokenizer of the word-level tasks (word_lm on plain text, classify, absa), chosen
// by a run's dataset.tokenizer (data/TOKENIZER_NOTES.md):
//
//  "icu" (new runs): ICU does the Unicode work.
//   * the text is put in NFC first (U+0055 U+0308 and U+00DC are the same word);
//   * words are the segments of ICU's UAX #29 word break iterator (root locale): "don't" and
//     "3.14" are one token, CJK is split by ICU's dictionary, an emoji sequence (ZWJ, skin tone,
//     flag) is one token;
//   * white space separates and is dropped; every other segment (punctuation, symbols, emoji) is a
//     token of its own, as in the legacy rules; with keep_punctuation = false the segments made of
//     punctuation only (general category P*) are dropped, symbols and emoji kept;
//   * keep_inner: a hyphen-minus between two word segments with no space around it joins them
//     ("e-mail", "whale-ship"), as the legacy rules do (UAX #29 breaks there);
//   * U+2019 (’, the typographic apostrophe) becomes U+0027 ('), so "don’t" == "don't";
//   * lowercase: full Unicode lower-casing, root locale ("ÜBER" -> "über").
//
//  "legacy" (runs written before dataset.tokenizer existed): the two rule sets those runs used,
//  kept byte for byte so that a saved vocabulary keeps meaning the same. `legacy_rules` says which:
//   WordLM (word_lm, cbt-build): whitespace separates; every ASCII punctuation byte and “ ” ‘ ’ — – …
//     is a token; ' ’ and - between word characters stay inside the word (’ becomes '); other
//     bytes are word characters; lowercase folds ASCII only.
//   Sentence (classify, absa): a word is a run of ASCII letters, digits, '_' and bytes >= 0x80,
//     with ' and - inside; every other ASCII byte is a token; lowercase folds ASCII only;
//     keep_punctuation and keep_inner do not apply (always on).
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "config/option_spec.h"

namespace cs {

// dataset.tokenizer: icu = NFC, Unicode word breaks and full Unicode lower-casing; legacy = the byte
// rules of runs written before the option existed (ASCII-only lower-casing).
enum class Tokenizer { Icu, Legacy };
constexpr EnumNames<Tokenizer, 2> enum_names(Tokenizer) {
  return {{{Tokenizer::Icu, "icu"}, {Tokenizer::Legacy, "legacy"}}};
}
inline constexpr Tokenizer kTokenizerIcu = Tokenizer::Icu;
inline constexpr Tokenizer kTokenizerLegacy = Tokenizer::Legacy;
// The option's help text, shared by the tasks' option tables (the choices: enum_names above).
const char* tokenizer_option_help();

enum class LegacyRules { WordLM, Sentence };

// dataset.locale: the language whose rules lower-case words (tokenizer icu), as a BCP 47 tag ("tr",
// "az", "lt", "tr-TR"); "" = the root locale (language-independent rules). Turkish and Azeri map I to
// dotless ı and İ to i; Lithuanian keeps the dot of i above accents (data/TOKENIZER_NOTES.md).
const char* locale_option_help();
// What is wrong with `tag` as dataset.locale ("" when it is usable: empty, or a well-formed tag ICU knows
// the language of).
std::string locale_error(const std::string& tag);

struct TokenizerOptions {
  Tokenizer rules = Tokenizer::Icu;                // dataset.tokenizer
  std::string locale;                              // dataset.locale ("" = root); icu rules only
  LegacyRules legacy_rules = LegacyRules::WordLM;  // what "legacy" means to the caller
  bool lowercase = true;
  bool keep_punctuation = true;  // punctuation marks become tokens (false: dropped)
  bool keep_inner = true;        // ' and - between word characters stay in the word
  size_t max_tokens = 0;         // 0 = all; otherwise only the first max_tokens tokens
};

std::vector<std::string> tokenize(const std::string& text, const TokenizerOptions& opt = {});

// A word lower-cased as `rules` does it: "icu" NFC + full Unicode lower-casing, "legacy" ASCII only
// (for pre-tokenised text and vocabulary look-ups).
std::string lowercase_word(const std::string& word, Tokenizer rules, const std::string& locale = "");

// ICU's full lower-casing of valid UTF-8 text, without NFC: Unicode's default case mapping tailored by
// `locale` (a BCP 47 tag as dataset.locale; "" = root, which is what Python's str.lower() does). The
// ICU lower-casing lowercase_word (after NFC) and the metrics (unicode_lower, text_metrics.h) share.
std::string icu_lower(std::string_view utf8, const std::string& locale = "");

// Split text into lines (\n, \r\n), without the line ends.
std::vector<std::string> split_lines(const std::string& text);

}  // namespace cs
