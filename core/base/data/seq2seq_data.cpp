#include "data/seq2seq_data.h"

#include <algorithm>
#include <cmath>
#include <cctype>
#include <set>

#include "data/manifest.h"
#include "data/text_metrics.h"
#include "data/tokenizer.h"
#include "data/utf8.h"
#include "util/error.h"
#include "util/text.h"

namespace cs {

namespace {

// The lines of a one-sentence-per-line file, checked: UTF-8 (file:line:column), no NUL byte
// (a binary file), no empty line. A final newline does not make an extra line; CR LF is read as LF.
std::vector<std::string> read_sentence_lines(const std::string& file) {
  if (!file_exists(file)) throw UserError(file + ": file not found");
  const std::string text = read_text_file(file);
  const size_t bad = utf8_validate(reinterpret_cast<const unsigned char*>(text.data()), text.size(), nullptr);
  // A NUL byte is valid UTF-8 but means a binary file: report it before anything else on its line.
  const size_t nul = text.find('\0');
  if (nul != std::string::npos && (bad == std::string::npos || nul < bad)) {
    const size_t line = 1 + static_cast<size_t>(std::count(text.begin(), text.begin() + nul, '\n'));
    throw UserError(where(file, line) + ": NUL byte (a binary file? expected UTF-8 text, one sentence per line)");
  }
  if (bad != std::string::npos) throw UserError(utf8_error_message(text, bad, file));
  std::vector<std::string> lines;
  LineReader reader(text);
  std::string line;
  while (reader.next(line)) {
    if (line.find_first_not_of(" \t\r\f\v") == std::string::npos)
      throw UserError(where(file, reader.number()) +
                      ": empty line (expected one sentence per line; a pair with an empty side cannot be used)");
    lines.push_back(line);
  }
  return lines;
}

std::vector<TextPair> read_pair_files(const std::string& src, const std::string& tgt, bool lowercase,
                                      Tokenizer tokenizer, const std::string& locale) {
  const auto s = read_sentence_lines(src);
  const auto t = read_sentence_lines(tgt);
  if (s.size() != t.size())
    throw UserError(src + " has " + std::to_string(s.size()) + " lines but " + tgt + " has " +
                    std::to_string(t.size()) +
                    " (the files must be line-aligned: line i of one is the pair of line i "
                    "of the other)");
  if (s.empty()) throw UserError(src + ": no lines (expected one sentence per line)");
  std::vector<TextPair> out(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    out[i].source = lowercase ? lowercase_word(s[i], tokenizer, locale) : s[i];
    out[i].target = lowercase ? lowercase_word(t[i], tokenizer, locale) : t[i];
  }
  return out;
}

std::string count_text(const Seq2SeqSplits& s) {
  return std::to_string(s.train.size()) + "/" + std::to_string(s.valid.size()) + "/" + std::to_string(s.test.size()) +
         " train/valid/test pairs";
}

// dataset.<key> as a string (or `def` when absent).
std::string opt_string(const json& ds, const char* key, const std::string& def) {
  if (!ds.contains(key)) return def;
  if (!ds[key].is_string() || ds[key].get<std::string>().empty())
    throw UserError(std::string("dataset.") + key + ": expected a non-empty string");
  return ds[key].get<std::string>();
}
int64_t opt_int(const json& ds, const char* key, int64_t def, int64_t lo, int64_t hi) {
  if (!ds.contains(key)) return def;
  if (!ds[key].is_number_integer() || ds[key].get<int64_t>() < lo || ds[key].get<int64_t>() > hi)
    throw UserError(std::string("dataset.") + key + ": expected an integer in " + std::to_string(lo) + ".." +
                    std::to_string(hi) + " (got " + ds[key].dump() + ")");
  return ds[key].get<int64_t>();
}
bool opt_bool(const json& ds, const char* key, bool def) {
  if (!ds.contains(key)) return def;
  if (!ds[key].is_boolean()) throw UserError(std::string("dataset.") + key + ": expected true or false");
  return ds[key].get<bool>();
}

bool starts_with_ci(const std::string& s, size_t at, const char* p) {
  for (size_t k = 0; p[k]; ++k)
    if (at + k >= s.size() || std::tolower(static_cast<unsigned char>(s[at + k])) != p[k]) return false;
  return true;
}

// Body lines that are not the writer's own opening text: quoted lines ("> ..."), the attribution
// of a quote ("... wrote:"), pseudo-header lines some list software puts at the top of the body
// ("From: ...", "Date: ...", "URL: ..."), and separators made of punctuation only.
bool skip_body_line(const std::string& line) {
  size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos) return true;
  if (line[i] == '>' || line[i] == '|') return true;
  std::string t = line.substr(i);
  while (!t.empty() && is_ascii_space(t.back())) t.pop_back();
  auto ends_with = [&t](const std::string& e) {
    return t.size() >= e.size() && t.compare(t.size() - e.size(), e.size(), e) == 0;
  };
  if (ends_with("wrote:") || ends_with("writes:")) return true;
  static const char* headers[] = {
      "from:", "date:", "to:", "cc:", "subject:", "message-id:", "url:", "sent:", "reply-to:", "newsgroups:"};
  for (const char* h : headers)
    if (starts_with_ci(t, 0, h)) return true;
  bool any_alnum = false;
  for (char c : t)
    if (std::isalnum(static_cast<unsigned char>(c)) || static_cast<unsigned char>(c) >= 0x80) any_alnum = true;
  return !any_alnum;
}

}  // namespace

std::string lead_baseline(const std::string& source, int64_t n_words) {
  if (n_words <= 0) return "";
  return join(split_ascii_words(source), " ", static_cast<size_t>(n_words));
}

std::string clean_subject(const std::string& subject) {
  std::string s = subject;
  bool changed = true;
  while (changed) {
    changed = false;
    size_t i = s.find_first_not_of(" \t");
    if (i == std::string::npos) return "";
    s = s.substr(i);
    // A list tag: "[ILUG]", "[SAtalk]", "[Razor-users]" (brackets around one token, no spaces).
    if (s[0] == '[') {
      const size_t close = s.find(']');
      if (close != std::string::npos && s.find(' ') > close) {
        s = s.substr(close + 1);
        changed = true;
        continue;
      }
    }
    // Reply / forward prefixes: Re:, RE:, Re[2]:, Fwd:, Fw:, FW:, AW:, WG:, Antw: (any case).
    for (const char* p : {"re", "fwd", "fw", "aw", "wg", "antw"}) {
      if (!starts_with_ci(s, 0, p)) continue;
      size_t j = std::string(p).size();
      if (j < s.size() && s[j] == '[') {  // Re[2]:
        const size_t close = s.find(']', j);
        if (close == std::string::npos) continue;
        j = close + 1;
      }
      while (j < s.size() && s[j] == ' ') ++j;
      if (j < s.size() && s[j] == ':') {
        s = s.substr(j + 1);
        changed = true;
        break;
      }
    }
  }
  // A trailing "(was: ...)" / "(was Re: ...)" names an older subject, not this one.
  for (size_t at = 0; (at = s.find('(', at)) != std::string::npos; ++at) {
    if (starts_with_ci(s, at + 1, "was ") || starts_with_ci(s, at + 1, "was:")) {
      s = s.substr(0, at);
      break;
    }
  }
  return join(split_ascii_words(s), " ");
}

Seq2SeqSplits load_headlines_jsonl(const std::string& jsonl_path, const HeadlineOptions& o) {
  if (!file_exists(jsonl_path)) throw UserError(jsonl_path + ": file not found");
  const std::string text = read_text_file(jsonl_path);
  require_utf8_text(text, jsonl_path);
  Seq2SeqSplits out;
  std::set<std::pair<std::string, std::string>> seen;
  int64_t records = 0, short_subject = 0, short_body = 0, duplicates = 0;
  LineReader reader(text);
  std::string line;
  while (reader.next(line)) {
    const size_t no = reader.number();
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json j;
    try {
      j = parse_json(line, where(jsonl_path, no));
    } catch (const UserError&) {
      throw;
    } catch (const std::exception& e) {
      throw UserError(where(jsonl_path, no) + ": not valid JSON (" + json_error_text(e) + ")");
    }
    if (!j.is_object() || !j.contains("text") || !j["text"].is_string())
      throw UserError(where(jsonl_path, no) + ": expected an object with a string \"text\" (subject line, then body)");
    std::string split = "train";
    if (j.contains("split")) {
      if (!j["split"].is_string()) throw UserError(where(jsonl_path, no) + ": \"split\" must be a string");
      split = j["split"].get<std::string>();
      if (split != "train" && split != "valid" && split != "test")
        throw UserError(where(jsonl_path, no) + ": \"split\" is '" + split + "' (expected train, valid or test)");
    }
    ++records;
    const std::string t = j["text"].get<std::string>();
    const size_t first_nl = t.find('\n');
    std::string subject = clean_subject(t.substr(0, first_nl));
    if (static_cast<int64_t>(split_ascii_words(subject).size()) < o.min_subject_words) {
      ++short_subject;
      continue;
    }
    std::vector<std::string> words;
    if (first_nl != std::string::npos) {
      size_t p = first_nl + 1;
      while (p < t.size() && static_cast<int64_t>(words.size()) < o.source_words) {
        size_t e = t.find('\n', p);
        if (e == std::string::npos) e = t.size();
        const std::string bl = t.substr(p, e - p);
        p = e + 1;
        if (skip_body_line(bl)) continue;
        for (auto& w : split_ascii_words(bl)) words.push_back(std::move(w));
      }
    }
    if (static_cast<int64_t>(words.size()) < o.min_source_words) {
      ++short_body;
      continue;
    }
    TextPair pair;
    pair.source = join(words, " ", static_cast<size_t>(o.source_words));
    pair.target = subject;
    if (o.lowercase) {
      pair.source = lowercase_word(pair.source, o.tokenizer, o.locale);
      pair.target = lowercase_word(pair.target, o.tokenizer, o.locale);
    }
    if (!seen.insert({pair.source, pair.target}).second) {
      ++duplicates;
      continue;
    }
    (split == "train" ? out.train : split == "valid" ? out.valid : out.test).push_back(std::move(pair));
  }
  if (out.train.empty() || out.valid.empty() || out.test.empty())
    throw UserError(jsonl_path + ": the headline builder kept " + count_text(out) +
                    "; every split needs at least one pair (expected spam-assassin.jsonl's records)");
  out.description = "headlines from " + jsonl_path + ": " + count_text(out) + " (source = the first " +
                    std::to_string(o.source_words) + " words of the body, target = the cleaned Subject; of " +
                    std::to_string(records) + " mails, dropped " + std::to_string(short_subject) +
                    " with a subject under " + std::to_string(o.min_subject_words) + " words, " +
                    std::to_string(short_body) + " with a body under " + std::to_string(o.min_source_words) +
                    " words, " + std::to_string(duplicates) + " duplicate pairs)";
  return out;
}

Seq2SeqSplits load_parallel_dir(const std::string& dir, const std::string& source_lang, const std::string& target_lang,
                                bool lowercase, Tokenizer tokenizer, const std::string& locale) {
  if (!dir_exists(dir))
    throw UserError(dir + ": not a directory (format \"parallel\" expects a directory with train." + source_lang +
                    ", train." + target_lang + ", valid.*, test.*)");
  if (source_lang == target_lang)
    throw UserError("dataset.source_lang and dataset.target_lang are both '" + source_lang + "'");
  Seq2SeqSplits out;
  for (const char* split : {"train", "valid", "test"}) {
    const std::string base = join_path(dir, split);
    auto pairs = read_pair_files(base + "." + source_lang, base + "." + target_lang, lowercase, tokenizer, locale);
    (std::string(split) == "train"   ? out.train
     : std::string(split) == "valid" ? out.valid
                                     : out.test) = std::move(pairs);
  }
  out.description = "parallel text " + dir + " (" + source_lang + " -> " + target_lang + "): " + count_text(out);
  return out;
}

Seq2SeqSplits load_gigaword_dir(const std::string& dir, bool lowercase, Tokenizer tokenizer,
                                const std::string& locale) {
  if (!dir_exists(dir))
    throw UserError(dir +
                    ": not a directory (format \"gigaword\" expects a directory with train.article.txt, "
                    "train.title.txt, valid.article.txt, ...)");
  Seq2SeqSplits out;
  for (const char* split : {"train", "valid", "test"}) {
    const std::string base = join_path(dir, split);
    // The common distribution (Rush et al. 2015's sumdata) names the validation files
    // valid.{article,title}.filter.txt; either name is read.
    std::string art = base + ".article.txt", tit = base + ".title.txt";
    if (!file_exists(art) && file_exists(base + ".article.filter.txt")) {
      art = base + ".article.filter.txt";
      tit = base + ".title.filter.txt";
    }
    auto pairs = read_pair_files(art, tit, lowercase, tokenizer, locale);
    (std::string(split) == "train"   ? out.train
     : std::string(split) == "valid" ? out.valid
                                     : out.test) = std::move(pairs);
  }
  out.description = "Gigaword-style article/headline pairs " + dir + ": " + count_text(out);
  return out;
}

Seq2SeqDataOptions read_seq2seq_data_options(const json& ds) {
  if (!ds.is_object()) throw UserError("dataset: expected an object");
  Seq2SeqDataOptions o;
  o.dataset = dataset_option_table().read_partial(ds);
  o.source_lang = opt_string(ds, "source_lang", o.source_lang);
  o.target_lang = opt_string(ds, "target_lang", o.target_lang);
  if (ds.contains("tokenizer")) o.tokenizer = enum_from_json<Tokenizer>(ds["tokenizer"], "dataset.tokenizer");
  // a resolved config has the key, empty
  if (ds.contains("locale") && ds["locale"].is_string()) o.locale = ds["locale"].get<std::string>();
  if (const std::string why = locale_error(o.locale); !why.empty()) throw UserError("dataset.locale: " + why);
  HeadlineOptions& h = o.headlines;
  h.source_words = opt_int(ds, "source_words", h.source_words, 1, 100000);
  h.min_subject_words = opt_int(ds, "min_subject_words", h.min_subject_words, 1, 1000);
  h.min_source_words = opt_int(ds, "min_source_words", h.min_source_words, 1, 100000);
  h.lowercase = opt_bool(ds, "lowercase", h.lowercase);
  h.tokenizer = o.tokenizer;
  h.locale = o.locale;
  o.lowercase = opt_bool(ds, "lowercase", o.lowercase);
  return o;
}

Seq2SeqSplits load_seq2seq_dataset(const Seq2SeqDataOptions& o) {
  const DatasetLocation loc = resolve_dataset(o.dataset);
  const DatasetFormat format = detect_dataset_format(loc.path, "seq2seq", check_format_for_task(loc.format, "seq2seq"));
  Seq2SeqSplits s;
  if (format == DatasetFormat::Parallel)
    s = load_parallel_dir(loc.path, o.source_lang, o.target_lang, o.lowercase, o.tokenizer, o.locale);
  else if (format == DatasetFormat::Gigaword) s = load_gigaword_dir(loc.path, o.lowercase, o.tokenizer, o.locale);
  else s = load_headlines_jsonl(loc.path, o.headlines);
  if (!loc.name.empty()) s.description = loc.name + ": " + s.description;
  return s;
}

int64_t default_lead_words(const std::vector<TextPair>& pairs) {
  if (pairs.empty()) return 1;
  double n = 0;
  for (const auto& p : pairs) n += static_cast<double>(whitespace_words(p.target).size());
  return std::max<int64_t>(1, std::llround(n / static_cast<double>(pairs.size())));
}

}  // namespace cs
