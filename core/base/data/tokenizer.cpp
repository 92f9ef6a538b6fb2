#include "data/tokenizer.h"

#include <unicode/brkiter.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>
#include <unicode/ubrk.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <cctype>
#include <memory>

#include "util/error.h"
#include "util/text.h"

namespace cs {

const char* tokenizer_option_help() {
  return "Word tokenizer: icu = NFC, Unicode (UAX #29) word breaks and full Unicode lower-casing; legacy = the "
         "byte rules of runs written before this option existed (ASCII-only lower-casing). A run whose config "
         "lacks the key is read as legacy, so its vocabulary keeps its meaning (data/TOKENIZER_NOTES.md).";
}

const char* locale_option_help() {
  return "The language whose rules lower-case words (tokenizer icu), a BCP 47 tag: tr or az (I -> dotless i, "
         "dotted I -> i), lt (the dot of i kept above accents), ...; empty = language-independent (root) rules.";
}

std::string locale_error(const std::string& tag) {
  if (tag.empty()) return "";
  UErrorCode st = U_ZERO_ERROR;
  const icu::Locale l = icu::Locale::forLanguageTag(tag, st);
  if (U_FAILURE(st) || l.isBogus() || std::string(l.getLanguage()).empty())
    return "'" + tag + "' is not a BCP 47 language tag (e.g. tr, az, lt, de-CH)";
  // A language ICU has no name for (e.g. "qq") would silently fall back to the root rules.
  icu::UnicodeString name;
  l.getDisplayLanguage(icu::Locale::getEnglish(), name);
  std::string shown;
  name.toUTF8String(shown);
  if (shown == l.getLanguage()) return "'" + tag + "': ICU knows no language '" + std::string(l.getLanguage()) + "'";
  return "";
}

namespace {

// The locale of lower-casing: root for "", else the tag's (locale_error has accepted it).
// (Parsed once per thread and tag: lowercase_word runs once per word of a corpus.)
const icu::Locale& lower_locale(const std::string& tag) {
  if (tag.empty()) return icu::Locale::getRoot();
  thread_local std::string last_tag;
  thread_local icu::Locale last;
  if (tag != last_tag) {
    UErrorCode st = U_ZERO_ERROR;
    icu::Locale l = icu::Locale::forLanguageTag(tag, st);
    if (U_FAILURE(st) || l.isBogus()) throw UserError("dataset.locale: " + locale_error(tag));
    last = l;
    last_tag = tag;
  }
  return last;
}

// u lower-cased by ICU in the locale `tag` (lower_locale), appended to `out` as UTF-8: the one ICU
// lower-casing of the tree (lowercase_word, the icu tokenizer, icu_lower and so the metrics' unicode_lower).
void append_lower(icu::UnicodeString u, const std::string& tag, std::string& out) {
  u.toLower(lower_locale(tag));
  u.toUTF8String(out);
}

// ---------------------------------------------------------------- legacy: word LM rules

// Length in bytes of a typographic punctuation sequence at text[i], or 0.
size_t legacy_unicode_punct(const std::string& s, size_t i) {
  static const char* marks[] = {"\xE2\x80\x9C", "\xE2\x80\x9D", "\xE2\x80\x98", "\xE2\x80\x99",  // “ ” ‘ ’
                                "\xE2\x80\x94", "\xE2\x80\x93", "\xE2\x80\xA6"};                 // — – …
  for (const char* m : marks)
    if (s.compare(i, 3, m) == 0) return 3;
  return 0;
}

// Is position i the start of a word character (not space, not punctuation)?
bool legacy_word_char_at(const std::string& s, size_t i) {
  if (i >= s.size()) return false;
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (is_ascii_space(c)) return false;
  if (c < 0x80) return !std::ispunct(c);
  return legacy_unicode_punct(s, i) == 0;
}

std::vector<std::string> legacy_word_lm(const std::string& s, const TokenizerOptions& opt) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty()) out.push_back(cur);
    cur.clear();
  };
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (is_ascii_space(c)) {
      flush();
      ++i;
      continue;
    }
    size_t plen = c < 0x80 ? (std::ispunct(c) ? 1 : 0) : legacy_unicode_punct(s, i);
    if (plen == 0) {
      cur += opt.lowercase && c < 0x80 ? static_cast<char>(std::tolower(c)) : static_cast<char>(c);
      ++i;
      continue;
    }
    const bool apostrophe = (plen == 1 && c == '\'') || (plen == 3 && s.compare(i, 3, "\xE2\x80\x99") == 0);
    const bool hyphen = plen == 1 && c == '-';
    if (opt.keep_inner && (apostrophe || hyphen) && !cur.empty() && legacy_word_char_at(s, i + plen)) {
      cur += apostrophe ? '\'' : '-';  // inner apostrophe/hyphen: part of the word
      i += plen;
      continue;
    }
    flush();
    if (opt.keep_punctuation) out.push_back(apostrophe ? std::string("'") : s.substr(i, plen));
    i += plen;
  }
  flush();
  return out;
}

// ---------------------------------------------------------------- legacy: sentence-task rules

bool legacy_sentence_word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c >= 0x80;
}

std::vector<std::string> legacy_sentence(const std::string& text, const TokenizerOptions& opt) {
  std::vector<std::string> out;
  const size_t n = text.size();
  size_t i = 0;
  auto full = [&] { return opt.max_tokens > 0 && out.size() >= opt.max_tokens; };
  while (i < n && !full()) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (is_ascii_space(c)) {
      ++i;
      continue;
    }
    if (legacy_sentence_word_byte(c)) {
      std::string w;
      while (i < n) {
        const unsigned char d = static_cast<unsigned char>(text[i]);
        if (legacy_sentence_word_byte(d)) {
          w += (opt.lowercase && d >= 'A' && d <= 'Z') ? static_cast<char>(d - 'A' + 'a') : static_cast<char>(d);
          ++i;
        } else if ((d == '\'' || d == '-') && i + 1 < n &&
                   legacy_sentence_word_byte(static_cast<unsigned char>(text[i + 1]))) {
          w += static_cast<char>(d);  // inner apostrophe / hyphen
          ++i;
        } else {
          break;
        }
      }
      out.push_back(std::move(w));
      continue;
    }
    out.emplace_back(1, static_cast<char>(c));  // punctuation / symbol
    ++i;
  }
  return out;
}

// ---------------------------------------------------------------- icu

[[noreturn]] void icu_failure(const char* what, UErrorCode st) {
  throw UserError(std::string("ICU: ") + what + " failed (" + u_errorName(st) + "); is libicu72's data installed?");
}

// The NFC normaliser (a process-wide singleton of ICU) and this thread's word break iterator:
// creating an iterator loads its rules, far too slow to do for every line.
const icu::Normalizer2& nfc() {
  UErrorCode st = U_ZERO_ERROR;
  const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(st);
  if (U_FAILURE(st) || !n) icu_failure("the NFC normaliser", st);
  return *n;
}

icu::BreakIterator& word_breaks() {
  thread_local std::unique_ptr<icu::BreakIterator> it;
  if (!it) {
    UErrorCode st = U_ZERO_ERROR;
    it.reset(icu::BreakIterator::createWordInstance(icu::Locale::getRoot(), st));
    if (U_FAILURE(st) || !it) icu_failure("the UAX #29 word break iterator", st);
  }
  return *it;
}

icu::UnicodeString nfc_of(const std::string& utf8) {
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(utf8);
  bool ascii = true;
  for (const char c : utf8) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return u;  // ASCII is NFC
  UErrorCode st = U_ZERO_ERROR;
  const icu::Normalizer2& n = nfc();
  if (n.isNormalized(u, st) && U_SUCCESS(st)) return u;
  st = U_ZERO_ERROR;
  icu::UnicodeString out = n.normalize(u, st);
  if (U_FAILURE(st)) icu_failure("NFC normalisation", st);
  return out;
}

bool all_of_range(const icu::UnicodeString& u, int32_t b, int32_t e, UBool (*pred)(UChar32)) {
  for (int32_t i = b; i < e;) {
    const UChar32 c = u.char32At(i);
    if (!pred(c)) return false;
    i += U16_LENGTH(c);
  }
  return true;
}

std::vector<std::string> icu_tokenize(const std::string& text, const TokenizerOptions& opt) {
  icu::UnicodeString u = nfc_of(text);
  u.findAndReplace(icu::UnicodeString(static_cast<UChar>(0x2019)), icu::UnicodeString(static_cast<UChar>(0x27)));
  icu::BreakIterator& bi = word_breaks();
  bi.setText(u);

  // The segments, white space dropped: [begin, end) and whether UAX #29 calls it a word
  // (a letter, number, kana or ideograph segment; rule status >= UBRK_WORD_NONE_LIMIT).
  struct Seg {
    int32_t b, e;
    bool word;
  };
  std::vector<Seg> segs;
  for (int32_t b = bi.first(), e = bi.next(); e != icu::BreakIterator::DONE; b = e, e = bi.next()) {
    const bool word = bi.getRuleStatus() >= UBRK_WORD_NONE_LIMIT;
    if (!word && all_of_range(u, b, e, u_isUWhiteSpace)) continue;
    segs.push_back({b, e, word});
  }
  // keep_inner: word '-' word, adjacent, is one word (chains too: "jack-in-the-box").
  if (opt.keep_inner) {
    std::vector<Seg> joined;
    for (size_t i = 0; i < segs.size(); ++i) {
      const Seg& s = segs[i];
      const bool hyphen = !s.word && s.e == s.b + 1 && u.charAt(s.b) == 0x2D;
      if (hyphen && !joined.empty() && joined.back().word && joined.back().e == s.b && i + 1 < segs.size() &&
          segs[i + 1].word && segs[i + 1].b == s.e) {
        joined.back().e = segs[i + 1].e;
        ++i;
        continue;
      }
      joined.push_back(s);
    }
    segs.swap(joined);
  }
  std::vector<std::string> out;
  for (const Seg& s : segs) {
    if (opt.max_tokens > 0 && out.size() >= opt.max_tokens) break;
    if (!s.word && !opt.keep_punctuation && all_of_range(u, s.b, s.e, u_ispunct)) continue;
    std::string w;
    bool ascii = true;
    for (int32_t i = s.b; i < s.e && ascii; ++i) ascii = u.charAt(i) < 0x80;
    // (Turkish and Azeri lower-case ASCII I to dotless i: a locale other than root always goes through ICU.)
    if (ascii && opt.locale.empty()) {  // the common case, and the same result as toLower: ASCII maps to ASCII
      w.resize(static_cast<size_t>(s.e - s.b));
      for (int32_t i = s.b; i < s.e; ++i) {
        const char c = static_cast<char>(u.charAt(i));
        w[static_cast<size_t>(i - s.b)] = opt.lowercase && c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
      }
    } else {
      icu::UnicodeString t = u.tempSubStringBetween(s.b, s.e);
      if (opt.lowercase) append_lower(std::move(t), opt.locale, w);
      else t.toUTF8String(w);
    }
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace

std::vector<std::string> tokenize(const std::string& text, const TokenizerOptions& opt) {
  if (opt.rules == Tokenizer::Icu) return icu_tokenize(text, opt);
  if (opt.legacy_rules == LegacyRules::Sentence) return legacy_sentence(text, opt);
  auto out = legacy_word_lm(text, opt);
  if (opt.max_tokens > 0 && out.size() > opt.max_tokens) out.resize(opt.max_tokens);
  return out;
}

std::string lowercase_word(const std::string& word, Tokenizer rules, const std::string& locale) {
  if (rules == Tokenizer::Legacy) return ascii_lower(word);
  std::string out;
  append_lower(nfc_of(word), locale, out);
  return out;
}

std::string icu_lower(std::string_view utf8, const std::string& locale) {
  bool ascii = true;
  for (const char c : utf8) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii && locale.empty()) return ascii_lower(std::string(utf8));  // root maps ASCII to ASCII: the same result
  std::string out;
  append_lower(icu::UnicodeString::fromUTF8(icu::StringPiece(utf8.data(), static_cast<int32_t>(utf8.size()))), locale,
               out);
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  LineReader reader(text);
  std::string line;
  while (reader.next(line)) lines.push_back(line);
  return lines;
}

}  // namespace cs
