#include "data/cbt_build.h"
#include "data/utf8.h"
#include "util/text.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <unordered_map>
#include <unordered_set>

#include "data/fetch.h"
#include "data/manifest.h"
#include "data/tokenizer.h"
#include "data/wordnet.h"
#include "config/json.h"
#include "util/error.h"
#include "util/own_paths.h"
#include "util/paths.h"

namespace cs {

namespace fs = std::filesystem;

// Recorded in build.json; a cached build by another version is rebuilt.
const char* const kBuilder = "cellscope cbt 1";

namespace {

// splitmix64: a portable, seeded stream (std:: distributions differ between libraries).
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  size_t below(size_t n) { return static_cast<size_t>(next() % n); }
};

// A word token: starts with a letter or digit, ASCII or not (the typographic punctuation that
// cs::tokenize makes tokens of is not a word).
bool is_word(const std::string& t) {
  if (t.empty()) return false;
  static const char* const punct[] = {"“", "”", "‘", "’", "—", "–", "…"};
  for (const char* p : punct)
    if (t == p) return false;
  const unsigned char c = static_cast<unsigned char>(t[0]);
  return std::isalnum(c) || c >= 0x80;
}

bool is_lower_token(const std::string& t) {
  if (t.empty()) return false;
  for (char c : t)
    if (!((c >= 'a' && c <= 'z') || c == '-')) return false;
  return true;
}

bool is_title_token(const std::string& t) {
  if (t.size() < 2 || !(t[0] >= 'A' && t[0] <= 'Z')) return false;
  for (size_t i = 1; i < t.size(); ++i)
    if (!(t[i] >= 'a' && t[i] <= 'z')) return false;
  return true;
}

bool ends_sentence(const std::string& t) { return t == "." || t == "!" || t == "?" || t == "…"; }
bool closes(const std::string& t) { return t == "”" || t == "’" || t == "\"" || t == "'" || t == ")" || t == "]"; }
bool title_abbrev(const std::string& t) { return t == "Mr" || t == "Mrs" || t == "Dr" || t == "St"; }

size_t first_word(const std::vector<std::string>& s) {
  for (size_t i = 0; i < s.size(); ++i)
    if (is_word(s[i])) return i;
  return s.size();
}

json read_build_info(const std::string& path) {
  try {
    return parse_json(read_file(path), "'" + path + "'");
  } catch (const std::exception&) {
    return json();  // an unreadable build.json only loses the counts
  }
}

}  // namespace

json CbtSplitStats::to_json() const {
  return {{"sentences", sentences},
          {"windows", windows},
          {"questions", questions},
          {"no_class_word", no_class_word},
          {"skipped_not_in_context", skipped_not_in_context},
          {"skipped_few_candidates", skipped_few_candidates}};
}

json CbtBuild::stats_json() const {
  return {{"sentences", sentences},
          {"tokens", tokens},
          {"train", train_stats.to_json()},
          {"valid", valid_stats.to_json()},
          {"test", test_stats.to_json()}};
}

std::vector<std::vector<std::string>> cbt_sentences(const std::string& text) {
  // paragraphs: runs of non-blank lines
  std::vector<std::string> paragraphs;
  std::string cur;
  for (const auto& line : split_lines(text)) {
    if (line.find_first_not_of(" \t\r\f\v") == std::string::npos) {
      if (!cur.empty()) paragraphs.push_back(cur);
      cur.clear();
    } else {
      cur += (cur.empty() ? "" : "\n") + line;
    }
  }
  if (!cur.empty()) paragraphs.push_back(cur);

  // The legacy word-LM rules, fixed: the built files are part of the dataset's definition
  // (the same bytes wherever and whenever it is built; data/TOKENIZER_NOTES.md).
  TokenizerOptions to;
  to.rules = kTokenizerLegacy;
  to.legacy_rules = LegacyRules::WordLM;
  to.lowercase = false;
  to.keep_punctuation = true;
  to.keep_inner = true;
  std::vector<std::vector<std::string>> out;
  for (const auto& p : paragraphs) {
    std::vector<std::string> raw = tokenize(p, to), toks;
    if (!raw.empty() && raw[0] == "CHAPTER") continue;  // chapter headings
    for (size_t i = 0; i < raw.size(); ++i) {
      const std::string& t = raw[i];
      if (t.size() > 2 && t.compare(t.size() - 2, 2, "'s") == 0) {
        toks.push_back(t.substr(0, t.size() - 2));
        toks.push_back("'s");
      } else if (title_abbrev(t) && i + 1 < raw.size() && raw[i + 1] == ".") {
        toks.push_back(t + ".");
        ++i;
      } else {
        toks.push_back(t);
      }
    }
    std::vector<std::string> s;
    auto flush = [&] {
      if (first_word(s) < s.size()) out.push_back(s);
      s.clear();
    };
    for (size_t i = 0; i < toks.size(); ++i) {
      s.push_back(toks[i]);
      if (ends_sentence(toks[i])) {
        while (i + 1 < toks.size() && (closes(toks[i + 1]) || ends_sentence(toks[i + 1]))) s.push_back(toks[++i]);
        flush();
      }
    }
    flush();
  }
  return out;
}

char cbt_word_class(const std::vector<std::string>& s, size_t i, const WordNet& wn) {
  const std::string& t = s[i];
  if (is_lower_token(t)) return wn.common_noun(t) ? 'C' : 0;
  if (is_title_token(t) && i != first_word(s) && !wn.common_word(ascii_lower(t))) return 'N';
  return 0;
}

CbtBuild build_cbt_questions(const std::vector<std::vector<std::string>>& sents, const WordNet& wn,
                             const CbtBuildOptions& o) {
  if (o.word_class != "CN" && o.word_class != "NE")
    throw UserError("cloze builder: word class must be \"CN\" or \"NE\", got \"" + o.word_class + "\"");
  if (o.context_sentences < 1 || o.candidates < 2)
    throw UserError("cloze builder: context_sentences must be >= 1 and candidates >= 2");
  if (!(o.valid_fraction > 0 && o.test_fraction > 0 && o.valid_fraction + o.test_fraction < 1))
    throw UserError("cloze builder: valid_fraction and test_fraction must be > 0 with a sum below 1");
  const char want = o.word_class == "CN" ? 'C' : 'N';
  const int64_t n = static_cast<int64_t>(sents.size());
  CbtBuild b;
  b.sentences = n;
  // classes of every token, once
  std::vector<std::vector<char>> cls(sents.size());
  for (size_t k = 0; k < sents.size(); ++k) {
    b.tokens += static_cast<int64_t>(sents[k].size());
    cls[k].resize(sents[k].size());
    for (size_t i = 0; i < sents[k].size(); ++i) cls[k][i] = cbt_word_class(sents[k], i, wn);
  }
  // Book-level refinement of the named entities (datasets/README.md): a type whose lower-case
  // form occurs in the book is not one ("Thou" after an opening quote); the sentence-initial
  // occurrences of the remaining types count as well ("Ahab" opening a sentence).
  std::unordered_set<std::string> lower_seen, ne_types;
  for (const auto& s : sents)
    for (const auto& t : s)
      if (is_lower_token(t)) lower_seen.insert(t);
  for (size_t k = 0; k < sents.size(); ++k)
    for (size_t i = 0; i < sents[k].size(); ++i)
      if (cls[k][i] == 'N') {
        if (lower_seen.count(ascii_lower(sents[k][i]))) cls[k][i] = 0;
        else ne_types.insert(sents[k][i]);
      }
  for (size_t k = 0; k < sents.size(); ++k) {
    const size_t f = first_word(sents[k]);
    if (f < sents[k].size() && ne_types.count(sents[k][f])) cls[k][f] = 'N';
  }
  const int64_t n_valid = static_cast<int64_t>(n * o.valid_fraction);
  const int64_t n_test = static_cast<int64_t>(n * o.test_fraction);
  const int64_t n_train = n - n_valid - n_test;
  struct Range {
    int64_t a, b;
    std::vector<CbtQuestion>* out;
    CbtSplitStats* st;
  };
  const Range ranges[3] = {{0, n_train, &b.train, &b.train_stats},
                           {n_train, n_train + n_valid, &b.valid, &b.valid_stats},
                           {n_train + n_valid, n, &b.test, &b.test_stats}};
  const uint64_t cls_salt = want == 'C' ? 0x434eULL : 0x4e45ULL;
  const int64_t C = o.context_sentences;
  for (const Range& r : ranges) {
    r.st->sentences = r.b - r.a;
    for (int64_t q = r.a + C; q < r.b; ++q) {
      ++r.st->windows;
      // the candidate pool: distinct words of the class in the context, by first occurrence
      std::vector<std::string> pool;
      std::unordered_set<std::string> in_pool;
      for (int64_t k = q - C; k < q; ++k)
        for (size_t i = 0; i < sents[k].size(); ++i)
          if (cls[k][i] == want && in_pool.insert(sents[k][i]).second) pool.push_back(sents[k][i]);
      std::vector<size_t> any, eligible;
      for (size_t i = 0; i < sents[q].size(); ++i) {
        if (cls[q][i] != want) continue;
        any.push_back(i);
        if (in_pool.count(sents[q][i])) eligible.push_back(i);
      }
      if (any.empty()) {
        ++r.st->no_class_word;
        continue;
      }
      if (eligible.empty()) {
        ++r.st->skipped_not_in_context;
        continue;
      }
      if (static_cast<int64_t>(pool.size()) < o.candidates) {
        ++r.st->skipped_few_candidates;
        continue;
      }
      Rng rng{o.seed * 0x100000001B3ULL ^ (static_cast<uint64_t>(q) << 16) ^ cls_salt};
      const size_t pos = eligible[rng.below(eligible.size())];
      CbtQuestion Q;
      Q.sentence = q;
      Q.answer = sents[q][pos];
      Q.query = sents[q];
      Q.query[pos] = "XXXXX";
      for (int64_t k = q - C; k < q; ++k) Q.context.push_back(sents[k]);
      std::vector<std::string> others;
      for (auto& w : pool)
        if (w != Q.answer) others.push_back(w);
      for (int64_t j = 0; j < o.candidates - 1; ++j) {  // partial Fisher-Yates
        const size_t pick = static_cast<size_t>(j) + rng.below(others.size() - static_cast<size_t>(j));
        std::swap(others[static_cast<size_t>(j)], others[pick]);
      }
      Q.candidates.assign(others.begin(), others.begin() + (o.candidates - 1));
      Q.candidates.push_back(Q.answer);
      std::sort(Q.candidates.begin(), Q.candidates.end());
      r.out->push_back(std::move(Q));
      ++r.st->questions;
    }
  }
  return b;
}

std::string cbt_text(const std::vector<CbtQuestion>& qs) {
  std::string o;
  for (const auto& q : qs) {
    for (size_t k = 0; k < q.context.size(); ++k) o += std::to_string(k + 1) + " " + join(q.context[k], " ") + "\n";
    o += std::to_string(q.context.size() + 1) + " " + join(q.query, " ") + "\t" + q.answer + "\t\t" +
         join(q.candidates, "|") + "\n\n";
  }
  return o;
}

std::string cbt_file_name(const std::string& word_class, const std::string& split) {
  return "cbt_" + word_class + "_" + split + ".txt";
}

std::string not_an_earlier_cbt_build(const std::string& dir) {
  std::error_code ec;
  const auto st = fs::symlink_status(dir, ec);
  if (ec || st.type() == fs::file_type::not_found) return "";
  if (st.type() != fs::file_type::directory) return "is not a folder";
  bool any = false, has_build = false;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    any = true;
    const std::string n = e.path().filename().string();
    if (n == "build.json") {
      has_build = true;
      continue;
    }
    bool known = false;  // cbt_<CLASS>_<split>.txt (cbt_file_name), the class letters and digits
    for (const char* sp : {"train", "valid", "test"}) {
      const std::string tail = std::string("_") + sp + ".txt";
      if (n.size() > 4 + tail.size() && n.rfind("cbt_", 0) == 0 &&
          n.compare(n.size() - tail.size(), tail.size(), tail) == 0) {
        const std::string cls = n.substr(4, n.size() - 4 - tail.size());
        known = known || std::all_of(cls.begin(), cls.end(), [](unsigned char ch) { return std::isalnum(ch) != 0; });
      }
    }
    if (!known || !e.is_regular_file()) return "holds '" + n + "', which no build of Cellscope's makes";
  }
  if (ec) return "cannot be read (" + ec.message() + ")";
  if (!any) return "";
  if (!has_build) return "holds question files but no build.json of Cellscope's builder";
  try {
    const json info = parse_json(read_file(join_path(dir, "build.json")), join_path(dir, "build.json"));
    const std::string builder = info.is_object() && info.contains("builder") && info["builder"].is_string()
                                    ? info["builder"].get<std::string>()
                                    : std::string();
    if (builder.rfind("cellscope cbt", 0) != 0) return "has a build.json that Cellscope's builder did not write";
  } catch (const std::exception&) {
    return "has a build.json that is not Cellscope's (not JSON)";
  }
  return "";
}

CbtBuild build_cbt_dataset(const std::string& book_path, const std::string& wordnet_dir, const std::string& out_dir,
                           const CbtBuildOptions& o, const std::string& source_name) {
  const WordNet wn = WordNet::load(wordnet_dir);
  const std::string text = read_text_file(book_path);
  const CbtBuild b = build_cbt_questions(cbt_sentences(text), wn, o);
  fs::path out(out_dir);
  if (out.filename().empty()) out = out.parent_path();
  // The one folder this replaces is its own earlier build (checked here and again just before the
  // replace); the new one is made in a temporary folder of this call's own (mkdtemp), so a user's
  // files, or a second process building the same dataset at the same time, are never removed (#52:
  // remove_all of the dataset folder, and of a pid-named temporary one, whatever they held).
  const std::string why_not = not_an_earlier_cbt_build(out.string());
  if (!why_not.empty())
    throw UserError("cloze builder: '" + out.string() + "' " + why_not +
                    "; it is left as it is (move it away, or point CELLSCOPE_DATA_DIR elsewhere, to build the set)");
  make_dirs(out.parent_path().string());
  const std::string tmp = make_temp_dir_beside(out.string(), "build");
  std::error_code ec;
  try {
    const std::pair<const char*, const std::vector<CbtQuestion>*> splits[3] = {
        {"train", &b.train}, {"valid", &b.valid}, {"test", &b.test}};
    for (auto& [name, qs] : splits) {
      if (qs->empty())
        throw UserError("cloze builder: the " + std::string(name) + " split of '" + book_path + "' has no " +
                        o.word_class + " question (" + std::to_string(b.sentences) +
                        " sentences; the book is too short for 21-sentence windows)");
      atomic_write(join_path(tmp, cbt_file_name(o.word_class, name)), cbt_text(*qs));
    }
    json info = {{"builder", kBuilder},
                 {"source", source_name.empty() ? book_path : source_name},
                 {"wordnet", wordnet_dir},
                 {"class", o.word_class},
                 {"seed", o.seed},
                 {"valid_fraction", o.valid_fraction},
                 {"test_fraction", o.test_fraction},
                 {"context_sentences", o.context_sentences},
                 {"candidates", o.candidates},
                 {"counts", b.stats_json()}};
    atomic_write(join_path(tmp, "build.json"), info.dump(2) + "\n");
    const std::string now = not_an_earlier_cbt_build(out.string());  // again: files may have come meanwhile
    if (!now.empty())
      throw UserError("cloze builder: '" + out.string() + "' " + now + " (since the build began); it is left as it is");
    replace_dir_with(tmp, out.string());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return b;
}

json build_manifest_dataset(const json& manifest, const json& entry, bool force) {
  const std::string name = entry.value("name", "");
  if (entry.value("obtain", "") != "build" || !entry.contains("build") || !entry["build"].is_object())
    throw UserError("dataset '" + name +
                    "' is not built by Cellscope (no \"obtain\": \"build\" with a \"build\" object)");
  const json& bo = entry["build"];
  if (bo.value("builder", "") != "cbt")
    throw UserError("dataset '" + name + "': unknown builder '" + bo.value("builder", "") + "' (known: cbt)");
  const std::string from = bo.value("from", "");
  const json* src = find_manifest_entry(manifest, from);
  if (!src) throw UserError("dataset '" + name + "' is built from '" + from + "', which the manifest does not know");
  std::string missing;
  if (!dataset_fetched(*src, &missing))
    throw UserError("dataset '" + name + "' is built from '" + from + "', which is not fetched yet (missing '" +
                    missing + "'); " + fetch_hint());
  const std::string out = join_path(data_cache_dir(), entry.at("path").get<std::string>());
  CbtBuildOptions o;
  o.word_class = bo.value("class", "CN");
  o.seed = bo.value("seed", uint64_t{18});
  o.valid_fraction = bo.value("valid_fraction", 0.1);
  o.test_fraction = bo.value("test_fraction", 0.1);
  if (!force && dataset_fetched(entry)) {
    // built before: reused unless another builder version or other options made it
    const json info = read_build_info(join_path(out, "build.json"));
    if (info.is_object() && info.value("builder", "") == kBuilder && info.value("class", "") == o.word_class &&
        info.value("seed", uint64_t{0}) == o.seed && info.value("valid_fraction", -1.0) == o.valid_fraction &&
        info.value("test_fraction", -1.0) == o.test_fraction)
      return info;
  }
  const std::string book = join_path(data_cache_dir(), src->at("path").get<std::string>());
  build_cbt_dataset(book, WordNet::default_dir(), out, o, from);
  std::string still;
  if (!dataset_fetched(entry, &still))
    throw UserError("dataset '" + name + "': the build did not produce '" + still +
                    "' (the manifest's \"files\" and the builder disagree)");
  return read_build_info(join_path(out, "build.json"));
}

}  // namespace cs
