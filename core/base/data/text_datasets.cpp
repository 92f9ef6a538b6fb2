#include "data/text_datasets.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "data/text_tokenize.h"
#include "data/utf8.h"
#include "util/error.h"
#include "util/text.h"
#include "util/paths.h"

namespace cs {

namespace {

// Split into lines (LF, with a trailing CR removed); calls fn(line, line_number).
template <typename Fn>
void for_each_line(const std::string& text, Fn&& fn) {
  size_t pos = 0, no = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string line = text.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    fn(line, ++no);
    pos = nl + 1;
  }
}

void check_text_line(const std::string& line, const std::string& file, size_t no) {
  if (line.find('\0') != std::string::npos)
    throw UserError(where(file, no) + ": NUL byte in a text line (binary file, or not the expected format?)");
}

std::vector<TextExample> read_latin1_lines(const std::string& file, const std::string& label) {
  std::vector<TextExample> out;
  const std::string text = read_file(file);
  for_each_line(text, [&](const std::string& line, size_t no) {
    check_text_line(line, file, no);
    std::string u = latin1_to_utf8(line);
    if (u.find_first_not_of(" \t") == std::string::npos) return;  // blank lines are skipped
    TextExample e;
    e.text = std::move(u);
    e.label = label;
    out.push_back(std::move(e));
  });
  if (out.empty()) throw UserError(file + ": no text lines (expected one example per line)");
  return out;
}

std::string decode_xml_entities(const std::string& s, const std::string& w) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      o += s[i];
      continue;
    }
    size_t semi = s.find(';', i);
    if (semi == std::string::npos || semi - i > 10) throw UserError(w + ": unterminated XML entity");
    std::string ent = s.substr(i + 1, semi - i - 1);
    if (ent == "amp") o += '&';
    else if (ent == "lt") o += '<';
    else if (ent == "gt") o += '>';
    else if (ent == "quot") o += '"';
    else if (ent == "apos") o += '\'';
    else if (!ent.empty() && ent[0] == '#') {
      long cp = 0;
      try {
        const bool hexref = ent.size() > 1 && (ent[1] == 'x' || ent[1] == 'X');
        const std::string digits = ent.substr(hexref ? 2 : 1);
        if (digits.empty() || digits.size() > 8 ||
            digits.find_first_not_of(hexref ? "0123456789abcdefABCDEF" : "0123456789") != std::string::npos)
          throw 1;
        cp = std::stol(digits, nullptr, hexref ? 16 : 10);
      } catch (...) {
        throw UserError(w + ": bad character reference &" + ent + ";");
      }
      // XML 1.0 Char: no NUL, no surrogate, nothing above U+10FFFF (these would make text that
      // is not UTF-8, and a vocabulary that cannot be read back)
      if (cp <= 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        throw UserError(w + ": character reference &" + ent + "; is not a character (XML 1.0)");
      utf8_append(o, static_cast<uint32_t>(cp));
    } else {
      throw UserError(w + ": unknown XML entity &" + ent + ";");
    }
    i = semi;
  }
  return o;
}

// A minimal XML tokenizer: tags with attributes, text, comments, <?...?>; line numbers.
struct XmlTag {
  std::string name;
  bool closing = false, self_closing = false;
  std::map<std::string, std::string> attrs;
  size_t line = 0;
};

class XmlReader {
 public:
  XmlReader(const std::string& text, const std::string& file) : s_(text), file_(file) {}
  // Next item: returns false at the end. Either a tag (is_tag) or text.
  bool next(bool& is_tag, XmlTag& tag, std::string& text) {
    while (pos_ < s_.size()) {
      if (s_[pos_] == '<') {
        if (s_.compare(pos_, 4, "<!--") == 0) { skip_to("-->"); continue; }
        if (s_.compare(pos_, 2, "<?") == 0) { skip_to("?>"); continue; }
        if (s_.compare(pos_, 2, "<!") == 0) { skip_to(">"); continue; }
        is_tag = true;
        tag = parse_tag();
        return true;
      }
      size_t lt = s_.find('<', pos_);
      if (lt == std::string::npos) lt = s_.size();
      const size_t start_line = line_;
      std::string raw = s_.substr(pos_, lt - pos_);
      advance(lt);
      is_tag = false;
      text = decode_xml_entities(raw, where(file_, start_line));
      return true;
    }
    return false;
  }
  size_t line() const { return line_; }

 private:
  void advance(size_t to) {
    for (size_t i = pos_; i < to && i < s_.size(); ++i)
      if (s_[i] == '\n') ++line_;
    pos_ = to;
  }
  void skip_to(const char* end) {
    size_t e = s_.find(end, pos_);
    if (e == std::string::npos) throw UserError(where(file_, line_) + ": unterminated XML comment or declaration");
    advance(e + std::string(end).size());
  }
  XmlTag parse_tag() {
    XmlTag t;
    t.line = line_;
    size_t gt = s_.find('>', pos_);
    if (gt == std::string::npos) throw UserError(where(file_, line_) + ": unterminated XML tag");
    std::string body = s_.substr(pos_ + 1, gt - pos_ - 1);
    const std::string w = where(file_, line_);
    advance(gt + 1);
    if (!body.empty() && body[0] == '/') { t.closing = true; body = body.substr(1); }
    if (!body.empty() && body.back() == '/') { t.self_closing = true; body.pop_back(); }
    size_t i = 0;
    auto ws = [&] { while (i < body.size() && std::isspace(static_cast<unsigned char>(body[i]))) ++i; };
    while (i < body.size() && !std::isspace(static_cast<unsigned char>(body[i]))) t.name += body[i++];
    if (t.name.empty()) throw UserError(w + ": XML tag without a name");
    for (;;) {
      ws();
      if (i >= body.size()) break;
      std::string key;
      while (i < body.size() && body[i] != '=' && !std::isspace(static_cast<unsigned char>(body[i]))) key += body[i++];
      ws();
      if (i >= body.size() || body[i] != '=') throw UserError(w + ": attribute '" + key + "' of <" + t.name + "> has no value");
      ++i;
      ws();
      if (i >= body.size() || (body[i] != '"' && body[i] != '\'')) throw UserError(w + ": attribute '" + key + "' of <" + t.name + "> is not quoted");
      const char q = body[i++];
      size_t e = body.find(q, i);
      if (e == std::string::npos) throw UserError(w + ": unterminated value of attribute '" + key + "'");
      t.attrs[key] = decode_xml_entities(body.substr(i, e - i), w);
      i = e + 1;
    }
    return t;
  }
  const std::string& s_;
  std::string file_;
  size_t pos_ = 0, line_ = 1;
};

}  // namespace

std::vector<TextExample> load_jsonl_examples(const std::string& path, const std::string& tf, const std::string& lf,
                                             const std::string& sf) {
  std::vector<TextExample> out;
  const std::string text = read_file(path);
  for_each_line(text, [&](const std::string& line, size_t no) {
    if (line.find_first_not_of(" \t") == std::string::npos) return;
    json j;
    try {
      j = parse_json(line, where(path, no));
    } catch (const UserError&) {
      throw;  // too deep, or a number out of range: named already
    } catch (const std::exception& e) {
      throw UserError(where(path, no) + ": not valid JSON (" + json_error_text(e) + ")");
    }
    if (!j.is_object()) throw UserError(where(path, no) + ": expected a JSON object per line");
    if (!j.contains(tf) || !j[tf].is_string())
      throw UserError(where(path, no) + ": missing string field '" + tf + "' (dataset.text_field)");
    if (!j.contains(lf) || !(j[lf].is_string() || j[lf].is_number_integer() || j[lf].is_boolean()))
      throw UserError(where(path, no) + ": missing field '" + lf + "' (dataset.label_field; a string, integer or boolean)");
    TextExample e;
    e.text = j[tf].get<std::string>();
    e.label = j[lf].is_string() ? j[lf].get<std::string>() : j[lf].dump();
    if (!sf.empty() && j.contains(sf)) {
      if (!j[sf].is_string()) throw UserError(where(path, no) + ": field '" + sf + "' must be a string");
      e.split = j[sf].get<std::string>();
      if (e.split == "dev") e.split = "valid";
      if (e.split != "train" && e.split != "valid" && e.split != "test")
        throw UserError(where(path, no) + ": field '" + sf + "' is '" + e.split + "' (expected train, valid or test)");
    }
    out.push_back(std::move(e));
  });
  if (out.empty()) throw UserError(path + ": no examples (expected one JSON object per line)");
  return out;
}

std::vector<TextExample> load_pos_neg_lines(const std::string& dir) {
  auto pos = read_latin1_lines(join_path(dir, "rt-polarity.pos"), "pos");
  auto neg = read_latin1_lines(join_path(dir, "rt-polarity.neg"), "neg");
  pos.insert(pos.end(), neg.begin(), neg.end());
  return pos;
}

std::vector<TextExample> load_subj_lines(const std::string& dir) {
  auto subj = read_latin1_lines(join_path(dir, "quote.tok.gt9.5000"), "subjective");
  auto obj = read_latin1_lines(join_path(dir, "plot.tok.gt9.5000"), "objective");
  subj.insert(subj.end(), obj.begin(), obj.end());
  return subj;
}

std::vector<TextExample> load_aclimdb(const std::string& dir) {
  std::vector<TextExample> out;
  for (std::string split : {"train", "test"}) {
    for (std::string lab : {"pos", "neg"}) {
      const std::string d = join_path(join_path(dir, split), lab);
      if (!dir_exists(d)) throw UserError(d + ": missing directory (expected the aclImdb/{train,test}/{pos,neg} tree)");
      for (auto& name : list_dir(d)) {
        if (name.size() < 5 || name.substr(name.size() - 4) != ".txt") continue;
        const std::string f = join_path(d, name);
        const std::string stem = name.substr(0, name.size() - 4);
        const size_t us = stem.find('_');
        if (us == std::string::npos || us == 0 || us + 1 == stem.size() ||
            stem.find_first_not_of("0123456789_") != std::string::npos)
          throw UserError(f + ":1: file name is not <id>_<rating>.txt");
        std::string t = read_file(f);
        require_utf8(t, f);
        if (t.find('\0') != std::string::npos) throw UserError(f + ":1: NUL byte (not a text review)");
        for (size_t p; (p = t.find("<br />")) != std::string::npos;) t.replace(p, 6, " ");
        TextExample e;
        e.text = std::move(t);
        e.label = lab;
        e.split = split;
        e.group = split + "/" + lab + "/" + name;
        out.push_back(std::move(e));
      }
    }
  }
  if (out.empty()) throw UserError(dir + ": no reviews found (expected aclImdb/{train,test}/{pos,neg}/*.txt)");
  return out;
}

int parse_sst_tree(const std::string& line, std::vector<std::string>& leaves, const std::string& w) {
  size_t i = 0;
  int root = -1, depth = 0;
  auto col = [&] { return " (column " + std::to_string(i + 1) + ")"; };
  auto ws = [&] { while (i < line.size() && line[i] == ' ') ++i; };
  ws();
  if (i >= line.size() || line[i] != '(') throw UserError(w + ": expected '(' at the start of a tree" + col());
  while (i < line.size()) {
    ws();
    if (i >= line.size()) break;
    if (line[i] == '(') {
      ++i;
      ++depth;
      size_t s = i;
      while (i < line.size() && std::isdigit(static_cast<unsigned char>(line[i]))) ++i;
      if (s == i) throw UserError(w + ": expected a label 0-4 after '('" + col());
      if (i - s > 3) throw UserError(w + ": label " + line.substr(s, i - s) + " out of range 0-4" + col());
      const int lab = std::stoi(line.substr(s, i - s));
      if (lab < 0 || lab > 4) throw UserError(w + ": label " + std::to_string(lab) + " out of range 0-4" + col());
      if (root < 0) root = lab;
    } else if (line[i] == ')') {
      if (--depth < 0) throw UserError(w + ": unbalanced ')'" + col());
      ++i;
      if (depth == 0) {
        ws();
        if (i < line.size()) throw UserError(w + ": text after the end of the tree" + col());
      }
    } else {
      size_t s = i;
      while (i < line.size() && line[i] != ' ' && line[i] != ')' && line[i] != '(') ++i;
      leaves.push_back(line.substr(s, i - s));
    }
  }
  if (depth != 0) throw UserError(w + ": unbalanced parentheses (" + std::to_string(depth) + " not closed)");
  return root;
}

std::vector<TextExample> load_sst_trees(const std::string& dir, int classes) {
  std::vector<TextExample> out;
  const std::pair<const char*, const char*> files[] = {{"train.txt", "train"}, {"dev.txt", "valid"}, {"test.txt", "test"}};
  for (const auto& fs : files) {
    const std::string f = join_path(dir, fs.first);
    const std::string split = fs.second;
    const std::string text = read_file(f);
    require_utf8(text, f);
    for_each_line(text, [&](const std::string& line, size_t no) {
      if (line.find_first_not_of(" \t") == std::string::npos) return;
      check_text_line(line, f, no);
      std::vector<std::string> leaves;
      const int lab = parse_sst_tree(line, leaves, where(f, no));
      if (leaves.empty()) throw UserError(where(f, no) + ": tree without words");
      if (classes == 2 && lab == 2) return;  // SST-2: neutral sentences dropped
      TextExample e;
      for (auto& l : leaves) e.text += (e.text.empty() ? "" : " ") + l;
      e.label = classes == 2 ? (lab < 2 ? "neg" : "pos") : std::to_string(lab);
      e.split = split;
      e.pretokenized = true;
      out.push_back(std::move(e));
    });
  }
  return out;
}

std::vector<TextExample> load_semeval_xml(const std::string& file, const std::string& split) {
  const std::string s = read_file(file);
  require_utf8(s, file);
  XmlReader rd(s, file);
  std::vector<TextExample> out;
  bool is_tag = false, in_text = false, in_sentence = false, saw_sentences = false;
  XmlTag tag;
  std::string txt, sent_id, sent_text;
  size_t sent_line = 0;
  std::vector<std::string> open;
  std::vector<TextExample> pending;
  while (rd.next(is_tag, tag, txt)) {
    if (!is_tag) {
      if (in_text) sent_text += txt;
      continue;
    }
    const std::string w = where(file, tag.line);
    if (tag.closing) {
      if (open.empty() || open.back() != tag.name)
        throw UserError(w + ": closing tag </" + tag.name + "> does not match " + (open.empty() ? std::string("anything") : "<" + open.back() + ">"));
      open.pop_back();
      if (tag.name == "text") in_text = false;
      if (tag.name == "sentence") {
        for (auto& e : pending) {
          e.text = sent_text;
          out.push_back(std::move(e));
        }
        pending.clear();
        in_sentence = false;
      }
      continue;
    }
    if (!tag.self_closing) open.push_back(tag.name);
    if (tag.name == "sentences") saw_sentences = true;
    if (tag.name == "sentence") {
      if (in_sentence) throw UserError(w + ": <sentence> inside another sentence");
      in_sentence = true;
      auto it = tag.attrs.find("id");
      if (it == tag.attrs.end()) throw UserError(w + ": <sentence> without an id attribute");
      sent_id = it->second;
      sent_text.clear();
      sent_line = tag.line;
    } else if (tag.name == "text") {
      if (!in_sentence) throw UserError(w + ": <text> outside a <sentence>");
      in_text = !tag.self_closing;
    } else if (tag.name == "aspectTerm") {
      if (!in_sentence) throw UserError(w + ": <aspectTerm> outside a <sentence>");
      for (const char* a : {"term", "polarity"})
        if (!tag.attrs.count(a)) throw UserError(w + ": <aspectTerm> without a '" + std::string(a) + "' attribute");
      const std::string pol = tag.attrs["polarity"];
      if (pol != "positive" && pol != "negative" && pol != "neutral" && pol != "conflict")
        throw UserError(w + ": aspect polarity '" + pol + "' (expected positive, negative, neutral or conflict)");
      TextExample e;
      e.aspect = tag.attrs["term"];
      e.label = pol;
      e.split = split;
      e.group = split + ":" + sent_id;
      pending.push_back(std::move(e));
    }
  }
  if (!open.empty()) throw UserError(where(file, rd.line()) + ": unexpected end of file inside <" + open.back() + ">");
  if (!saw_sentences) throw UserError(file + ":1: not a SemEval-2014 Task 4 file (no <sentences> element)");
  (void)sent_line;
  mark_hard_sentences(out);
  return out;
}

void mark_hard_sentences(std::vector<TextExample>& ex) {
  std::map<std::string, std::set<std::string>> pols;
  std::map<std::string, int> count;
  for (auto& e : ex) {
    pols[e.group].insert(e.label);
    ++count[e.group];
  }
  for (auto& e : ex) e.hard = count[e.group] >= 2 && pols[e.group].size() >= 2;
}

// ---------------------------------------------------------------- location
namespace {
struct Known {
  const char* name;
  const char* task;
  const char* path;    // relative to the data cache
  const char* format;
  const char* how;     // how to obtain it
};
const Known kKnown[] = {
    {"spam-assassin", "classify", "spam-assassin.jsonl", "jsonl", "run `cellscope-cli fetch`"},
    {"sotu", "classify", "sotu.jsonl", "jsonl", "run `cellscope-cli fetch`"},
    {"mr", "classify", "mr", "pos_neg_lines", "put rt-polarity.pos/.neg (rt-polaritydata.tar.gz, Pang & Lee) there"},
    {"subj", "classify", "subj", "subj_lines", "put quote.tok.gt9.5000 and plot.tok.gt9.5000 (rotten_imdb.tar.gz) there"},
    {"imdb", "classify", "imdb/aclImdb", "aclimdb", "unpack aclImdb_v1.tar.gz so that aclImdb/ is there"},
    {"sst", "classify", "sst", "sst_trees", "put train.txt, dev.txt, test.txt (trainDevTestTrees_PTB.zip) there"},
    {"semeval2014-restaurants", "absa", "semeval2014", "semeval2014_xml",
     "put Restaurants_Train_v2.xml and Restaurants_Test_Gold.xml there"},
    {"semeval2014-laptops", "absa", "semeval2014", "semeval2014_xml", "put Laptop_Train_v2.xml and Laptops_Test_Gold.xml there"},
};

std::string guess_format(const std::string& p) {
  auto ends = [&](const std::string& s) { return p.size() >= s.size() && p.compare(p.size() - s.size(), s.size(), s) == 0; };
  if (ends(".jsonl") || ends(".json")) return "jsonl";
  if (ends(".xml")) return "semeval2014_xml";
  if (dir_exists(p)) {
    if (file_exists(join_path(p, "rt-polarity.pos"))) return "pos_neg_lines";
    if (file_exists(join_path(p, "quote.tok.gt9.5000"))) return "subj_lines";
    if (dir_exists(join_path(p, "train/pos")) || dir_exists(join_path(p, "aclImdb/train/pos"))) return "aclimdb";
    if (file_exists(join_path(p, "dev.txt"))) return "sst_trees";
    for (auto& n : list_dir(p))
      if (n.size() > 4 && n.substr(n.size() - 4) == ".xml") return "semeval2014_xml";
  }
  throw UserError("dataset.path: cannot tell the format of '" + p +
                  "'; set dataset.format (jsonl, pos_neg_lines, subj_lines, aclimdb, sst_trees, semeval2014_xml)");
}
}  // namespace

std::vector<std::string> text_dataset_names(const std::string& task) {
  std::vector<std::string> v;
  for (auto& k : kKnown)
    if (task == k.task) v.push_back(k.name);
  return v;
}

TextDatasetLocation resolve_text_dataset(const json& ds, const std::string& task) {
  TextDatasetLocation loc;
  const std::string path = ds.contains("path") && ds["path"].is_string() ? ds["path"].get<std::string>() : "";
  const std::string fmt = ds.at("format").get<std::string>();
  if (!path.empty()) {
    loc.path = path;
    if (!file_exists(path) && !dir_exists(path)) throw UserError("dataset.path: '" + path + "' does not exist");
    loc.format = fmt == "auto" ? guess_format(path) : fmt;
  } else {
    loc.name = ds.at("name").get<std::string>();
    const Known* k = nullptr;
    for (auto& c : kKnown)
      if (loc.name == c.name && task == c.task) k = &c;
    if (!k) {
      std::string names;
      for (auto& n : text_dataset_names(task)) names += (names.empty() ? "" : ", ") + n;
      throw UserError("dataset.name: '" + loc.name + "' is not a dataset for task " + task + " (known: " + names +
                      "); or set dataset.path");
    }
    loc.path = join_path(data_cache_dir(), k->path);
    loc.format = fmt == "auto" ? k->format : fmt;
    if (!file_exists(loc.path) && !dir_exists(loc.path))
      throw UserError("dataset '" + loc.name + "' is not in the data cache: '" + loc.path + "' is missing (" + k->how +
                      ", or point dataset.path at your copy)");
  }
  static const std::set<std::string> fmts = {"jsonl", "pos_neg_lines", "subj_lines", "aclimdb", "sst_trees", "semeval2014_xml"};
  if (!fmts.count(loc.format))
    throw UserError("dataset.format: '" + loc.format + "' is not a format of task " + task +
                    " (expected jsonl, pos_neg_lines, subj_lines, aclimdb, sst_trees, semeval2014_xml)");
  return loc;
}

std::vector<TextExample> load_text_examples(const TextDatasetLocation& loc, const json& ds) {
  const std::string& f = loc.format;
  if (f == "jsonl")
    return load_jsonl_examples(loc.path, ds.at("text_field").get<std::string>(),
                               ds.at("label_field").get<std::string>(), ds.at("split_field").get<std::string>());
  if (f == "pos_neg_lines") return load_pos_neg_lines(loc.path);
  if (f == "subj_lines") return load_subj_lines(loc.path);
  if (f == "aclimdb") return load_aclimdb(dir_exists(join_path(loc.path, "aclImdb")) ? join_path(loc.path, "aclImdb") : loc.path);
  if (f == "sst_trees") return load_sst_trees(loc.path, ds.at("sst_classes").get<int>());
  if (f == "semeval2014_xml") {
    if (!dir_exists(loc.path)) return load_semeval_xml(loc.path, "");
    // A directory: the domain's train and test files.
    std::string domain = ds.at("domain").get<std::string>();
    if (domain.empty()) domain = loc.name == "semeval2014-laptops" ? "laptops" : "restaurants";
    const std::string prefix = domain == "laptops" ? "Laptop" : "Restaurants";
    std::string train, test;
    for (auto& n : list_dir(loc.path)) {
      if (n.rfind(prefix, 0) != 0 || n.size() < 5 || n.substr(n.size() - 4) != ".xml") continue;
      if (n.find("Train") != std::string::npos) train = join_path(loc.path, n);
      else if (n.find("Test") != std::string::npos) test = join_path(loc.path, n);
    }
    if (train.empty() || test.empty())
      throw UserError(loc.path + ": expected " + prefix + "*Train*.xml and " + prefix + "*Test*.xml (dataset.domain = " + domain + ")");
    auto a = load_semeval_xml(train, "train");
    auto b = load_semeval_xml(test, "test");
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  throw UserError("dataset.format: unknown format '" + f + "'");
}

}  // namespace cs
