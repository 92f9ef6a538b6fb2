#include "data/text_datasets.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <cstring>
#include <set>

#include <pugixml.hpp>

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
  LineReader reader(text);
  std::string line;
  while (reader.next(line)) fn(line, reader.number());
}

void check_text_line(const std::string& line, const std::string& file, size_t no) {
  if (line.find('\0') != std::string::npos)
    throw UserError(where(file, no) + ": NUL byte in a text line (binary file, or not the expected format?)");
}

std::vector<TextExample> read_latin1_lines(const std::string& file, const std::string& label) {
  std::vector<TextExample> out;
  const std::string text = read_text_file(file);
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

// Decodes the five predefined entities and character references of XML text or an attribute
// value; anything else after '&' is refused. `at(i)` names the position of byte i of `s`.
template <typename At>
std::string semeval_decode_entities(const std::string& s, At&& at) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '&') {
      o += s[i];
      continue;
    }
    size_t semi = s.find(';', i);
    if (semi == std::string::npos || semi - i > 10)
      throw UserError(at(i) + ": '&' that starts no entity (write &amp; for '&')");
    std::string ent = s.substr(i + 1, semi - i - 1);
    if (ent == "amp") o += '&';
    else if (ent == "lt") o += '<';
    else if (ent == "gt") o += '>';
    else if (ent == "quot") o += '"';
    else if (ent == "apos") o += '\'';
    else if (!ent.empty() && ent[0] == '#') {
      const bool hexref = ent.size() > 1 && (ent[1] == 'x' || ent[1] == 'X');
      const std::string digits = ent.substr(hexref ? 2 : 1);
      if (digits.empty() || digits.size() > 8 ||
          digits.find_first_not_of(hexref ? "0123456789abcdefABCDEF" : "0123456789") != std::string::npos)
        throw UserError(at(i) + ": bad character reference &" + ent + ";");
      const long cp = std::stol(digits, nullptr, hexref ? 16 : 10);  // at most 8 digits: no overflow
      // XML 1.0 Char: no NUL, no surrogate, nothing above U+10FFFF (these would make text that
      // is not UTF-8, and a vocabulary that cannot be read back)
      if (cp <= 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        throw UserError(at(i) + ": character reference &" + ent + "; is not a character (XML 1.0)");
      utf8_append(o, static_cast<uint32_t>(cp));
    } else {
      throw UserError(at(i) + ": unknown XML entity &" + ent +
                      "; (XML defines &amp; &lt; &gt; &quot; &apos; and &#N;)");
    }
    i = semi;
  }
  return o;
}

// What pugixml's parse status means, in the words of this loader.
std::string semeval_xml_problem(pugi::xml_parse_status st) {
  switch (st) {
    case pugi::status_unrecognized_tag:
      return "a '<' that starts no tag, comment or section (write &lt; for '<')";
    case pugi::status_bad_pi:
      return "malformed XML declaration or processing instruction (<?...?>)";
    case pugi::status_bad_comment:
      return "malformed or unterminated comment (<!-- ... -->)";
    case pugi::status_bad_cdata:
      return "malformed or unterminated CDATA section (<![CDATA[ ... ]]>)";
    case pugi::status_bad_doctype:
      return "malformed or unterminated <!DOCTYPE ...>";
    case pugi::status_bad_pcdata:
      return "malformed text";
    case pugi::status_bad_start_element:
      return "malformed start tag";
    case pugi::status_bad_attribute:
      return "malformed attribute (name=\"value\", the value quoted, without '<': write &lt;)";
    case pugi::status_bad_end_element:
      return "malformed closing tag";
    case pugi::status_end_element_mismatch:
      return "closing tag that does not match the open element";
    case pugi::status_append_invalid_root:
    case pugi::status_no_document_element:
      return "no XML element";
    default:
      return "not readable as XML";
  }
}

// Up to 40 bytes of `s` from `at` on one line, as a quoted excerpt ("" at the end of the text).
std::string semeval_excerpt(const std::string& s, size_t at) {
  if (at >= s.size()) return "";
  size_t e = std::min(s.size(), at + 40);
  const size_t nl = s.find_first_of("\r\n", at);
  if (nl != std::string::npos && nl < e) e = nl;
  while (e > at && e < s.size() && (static_cast<unsigned char>(s[e]) & 0xC0) == 0x80) --e;  // whole characters
  std::string x = s.substr(at, e - at);
  for (auto& c : x)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return x.empty() ? "" : " near '" + x + "'";
}

// The UserError of a SemEval XML file pugixml could not parse: the file:line:column of the problem
// and what it is (a closing tag that does not match is named).
[[noreturn]] void refuse_semeval_parse(const std::string& s, const std::string& file, const pugi::xml_parse_result& r) {
  auto pos = [&](ptrdiff_t off) { return text_position(s, off < 0 ? 0 : static_cast<size_t>(off), file); };
  if (r.status == pugi::status_no_document_element || r.status == pugi::status_append_invalid_root)
    throw UserError(file + ":1: not a SemEval-2014 Task 4 file (no XML element, no <sentences>)");
  const size_t off = r.offset < 0 ? 0 : std::min(static_cast<size_t>(r.offset), s.size());
  if (r.status == pugi::status_end_element_mismatch) {
    if (s.find_first_not_of(" \t\r\n", off) == std::string::npos)
      throw UserError(pos(static_cast<ptrdiff_t>(s.size())) + ": the file ends before every element is closed");
    // pugixml points into or after the closing tag: name it.
    const size_t lt = s.rfind("</", off);
    if (lt != std::string::npos && off - lt < 256) {
      const size_t e = s.find_first_of("> \t\r\n", lt + 2);
      const std::string name = s.substr(lt + 2, (e == std::string::npos ? s.size() : e) - lt - 2);
      throw UserError(pos(static_cast<ptrdiff_t>(lt)) + ": closing tag </" + name +
                      "> does not match the open element");
    }
    throw UserError(pos(static_cast<ptrdiff_t>(off)) + ": the file ends before every element is closed");
  }
  throw UserError(pos(static_cast<ptrdiff_t>(off)) + ": " + semeval_xml_problem(r.status) + semeval_excerpt(s, off));
}

}  // namespace

std::vector<TextExample> load_jsonl_examples(const std::string& path, const std::string& tf, const std::string& lf,
                                             const std::string& sf) {
  std::vector<TextExample> out;
  const std::string text = read_text_file(path);
  require_utf8_text(text, path);  // NUL, invalid UTF-8: path:line:column
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
      throw UserError(where(path, no) + ": missing field '" + lf +
                      "' (dataset.label_field; a string, integer or boolean)");
    TextExample e;
    e.text = j[tf].get<std::string>();
    e.label = j[lf].is_string() ? j[lf].get<std::string>() : j[lf].dump();
    uint32_t cp = 0;
    if (find_unprintable_name_char(e.label, &cp) != std::string::npos)
      throw UserError(where(path, no) + ": the label (field '" + lf + "') holds " + describe_unprintable_name_char(cp) +
                      "; class labels are printed in tables: remove it");
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
        std::string t = read_text_file(f);
        require_utf8_text(t, f);
        // CR LF reads as LF (one pass: a review may be large)
        size_t o = 0;
        for (size_t i = 0; i < t.size(); ++i)
          if (!(t[i] == '\r' && i + 1 < t.size() && t[i + 1] == '\n')) t[o++] = t[i];
        t.resize(o);
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
  auto ws = [&] {
    while (i < line.size() && line[i] == ' ') ++i;
  };
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
  const std::pair<const char*, const char*> files[] = {
      {"train.txt", "train"}, {"dev.txt", "valid"}, {"test.txt", "test"}};
  for (const auto& fs : files) {
    const std::string f = join_path(dir, fs.first);
    const std::string split = fs.second;
    const std::string text = read_text_file(f);
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
  const std::string s = read_text_file(file);
  require_utf8_text(s, file);
  auto pos = [&](ptrdiff_t off) { return text_position(s, off < 0 ? 0 : static_cast<size_t>(off), file); };
  pugi::xml_document doc;
  // Entities are decoded here (strictly: unknown ones and references to non-characters are
  // refused); pugixml leaves them as written without parse_escapes. CR LF reads as LF.
  const unsigned opts = pugi::parse_cdata | pugi::parse_wconv_attribute | pugi::parse_eol;
  const pugi::xml_parse_result r = doc.load_buffer(s.data(), s.size(), opts, pugi::encoding_utf8);
  if (!r) refuse_semeval_parse(s, file, r);
  std::vector<TextExample> out, pending;
  bool saw_sentences = false;
  pugi::xml_node sentence;  // the open <sentence>, or null
  int text_depth = 0;       // > 0 inside a <text> element
  std::string sent_id, sent_text;
  auto attr = [&](const pugi::xml_node& n, const char* name) -> std::pair<bool, std::string> {
    const pugi::xml_attribute a = n.attribute(name);
    if (!a) return {false, ""};
    // pugixml has no position for an attribute: its name after the element's start.
    auto at = [&](size_t) {
      const ptrdiff_t start = n.offset_debug();
      size_t p = start < 0 ? 0 : static_cast<size_t>(start);
      while ((p = s.find(name, p)) != std::string::npos) {
        size_t q = p + std::strlen(name);
        while (q < s.size() && (s[q] == ' ' || s[q] == '\t' || s[q] == '\r' || s[q] == '\n')) ++q;
        if (q < s.size() && s[q] == '=' && p > 0 && std::isspace(static_cast<unsigned char>(s[p - 1])))
          return pos(static_cast<ptrdiff_t>(p));
        p = q;
      }
      return pos(start);
    };
    // XML forbids a literal '<' in an attribute value (pugixml lets it through).
    if (std::strchr(a.value(), '<'))
      throw UserError(at(0) + ": attribute '" + name + "' of <" + n.name() + "> holds a '<' (write &lt;)");
    return {true, semeval_decode_entities(a.value(), at)};
  };
  auto enter = [&](const pugi::xml_node& n) {
    if (n.type() == pugi::node_pcdata || n.type() == pugi::node_cdata) {
      if (text_depth == 0) return;
      if (n.type() == pugi::node_cdata) {
        sent_text += n.value();
      } else {
        const ptrdiff_t base = n.offset_debug();
        sent_text +=
            semeval_decode_entities(n.value(), [&](size_t i) { return pos(base + static_cast<ptrdiff_t>(i)); });
      }
      return;
    }
    if (n.type() != pugi::node_element) return;
    const std::string name = n.name();
    const std::string w = pos(n.offset_debug() - 1);  // the '<'
    if (name == "sentences") {
      saw_sentences = true;
    } else if (name == "sentence") {
      if (sentence) throw UserError(w + ": <sentence> inside another sentence");
      auto id = attr(n, "id");
      if (!id.first) throw UserError(w + ": <sentence> without an id attribute");
      sentence = n;
      sent_id = id.second;
      sent_text.clear();
    } else if (name == "text") {
      if (!sentence) throw UserError(w + ": <text> outside a <sentence>");
      ++text_depth;
    } else if (name == "aspectTerm") {
      if (!sentence) throw UserError(w + ": <aspectTerm> outside a <sentence>");
      auto term = attr(n, "term"), pol = attr(n, "polarity");
      if (!term.first) throw UserError(w + ": <aspectTerm> without a 'term' attribute");
      if (!pol.first) throw UserError(w + ": <aspectTerm> without a 'polarity' attribute");
      if (pol.second != "positive" && pol.second != "negative" && pol.second != "neutral" && pol.second != "conflict")
        throw UserError(w + ": aspect polarity '" + pol.second +
                        "' (expected positive, negative, neutral or conflict)");
      TextExample e;
      e.aspect = term.second;
      e.label = pol.second;
      e.split = split;
      e.group = split + ":" + sent_id;
      pending.push_back(std::move(e));
    }
  };
  auto leave = [&](const pugi::xml_node& n) {
    if (n.type() != pugi::node_element) return;
    if (std::strcmp(n.name(), "text") == 0 && sentence) --text_depth;
    if (n == sentence) {
      for (auto& e : pending) {
        e.text = sent_text;
        out.push_back(std::move(e));
      }
      pending.clear();
      sentence = pugi::xml_node();
      text_depth = 0;
    }
  };
  // Depth-first without recursion (a deeply nested file must not exhaust the stack).
  for (pugi::xml_node n = doc.first_child(); n;) {
    enter(n);
    if (pugi::xml_node c = n.first_child()) {
      n = c;
      continue;
    }
    for (;;) {
      leave(n);
      if (pugi::xml_node sib = n.next_sibling()) {
        n = sib;
        break;
      }
      n = n.parent();
      if (!n || n == doc) {
        n = pugi::xml_node();
        break;
      }
    }
  }
  if (!saw_sentences) throw UserError(file + ":1: not a SemEval-2014 Task 4 file (no <sentences> element)");
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
  const char* path;  // relative to the data cache
  DatasetFormat format;
  const char* how;  // how to obtain it
};
const Known kKnown[] = {
    {"spam-assassin", "classify", "spam-assassin.jsonl", DatasetFormat::Jsonl, "run `cellscope-cli fetch`"},
    {"sotu", "classify", "sotu.jsonl", DatasetFormat::Jsonl, "run `cellscope-cli fetch`"},
    {"mr", "classify", "mr", DatasetFormat::PosNegLines,
     "put rt-polarity.pos/.neg (rt-polaritydata.tar.gz, Pang & Lee) there"},
    {"subj", "classify", "subj", DatasetFormat::SubjLines,
     "put quote.tok.gt9.5000 and plot.tok.gt9.5000 (rotten_imdb.tar.gz) there"},
    {"imdb", "classify", "imdb/aclImdb", DatasetFormat::Aclimdb, "unpack aclImdb_v1.tar.gz so that aclImdb/ is there"},
    {"sst", "classify", "sst", DatasetFormat::SstTrees,
     "put train.txt, dev.txt, test.txt (trainDevTestTrees_PTB.zip) there"},
    {"semeval2014-restaurants", "absa", "semeval2014", DatasetFormat::Semeval2014Xml,
     "put Restaurants_Train_v2.xml and Restaurants_Test_Gold.xml there"},
    {"semeval2014-laptops", "absa", "semeval2014", DatasetFormat::Semeval2014Xml,
     "put Laptop_Train_v2.xml and Laptops_Test_Gold.xml there"},
};

}  // namespace

std::vector<std::string> text_dataset_names(const std::string& task) {
  std::vector<std::string> v;
  for (auto& k : kKnown)
    if (task == k.task) v.push_back(k.name);
  return v;
}

TextDatasetLocation resolve_text_dataset(const DatasetOptions& ds, const std::string& task) {
  TextDatasetLocation loc;
  const std::string path = ds.path.value_or("");
  loc.format = check_format_for_task(ds.format, task);
  if (!path.empty()) {
    loc.path = path;
    if (!file_exists(path) && !dir_exists(path)) throw UserError("dataset.path: '" + path + "' does not exist");
    loc.format = detect_dataset_format(path, task, loc.format);
  } else {
    loc.name = ds.name;
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
    if (loc.format == DatasetFormat::Auto) loc.format = k->format;
    if (!file_exists(loc.path) && !dir_exists(loc.path))
      throw UserError("dataset '" + loc.name + "' is not in the data cache: '" + loc.path + "' is missing (" + k->how +
                      ", or point dataset.path at your copy)");
  }
  return loc;
}

std::vector<TextExample> load_text_examples(const TextDatasetLocation& loc, const TextExampleOptions& o) {
  using F = DatasetFormat;
  const F f = loc.format;
  if (f == F::Jsonl) return load_jsonl_examples(loc.path, o.text_field, o.label_field, o.split_field);
  if (f == F::PosNegLines) return load_pos_neg_lines(loc.path);
  if (f == F::SubjLines) return load_subj_lines(loc.path);
  if (f == F::Aclimdb)
    return load_aclimdb(dir_exists(join_path(loc.path, "aclImdb")) ? join_path(loc.path, "aclImdb") : loc.path);
  if (f == F::SstTrees) return load_sst_trees(loc.path, static_cast<int>(o.sst_classes));
  if (f == F::Semeval2014Xml) {
    if (!dir_exists(loc.path)) return load_semeval_xml(loc.path, "");
    // A directory: the domain's train and test files. auto: the named dataset's own domain (the default was
    // restaurants before, so dataset.name = semeval2014-laptops alone read the Restaurants files of the shared
    // directory); a domain a run names is kept, so a run records and reloads the files it trained on.
    const AbsaDomain d = o.domain != AbsaDomain::Auto        ? o.domain
                         : loc.name == "semeval2014-laptops" ? AbsaDomain::Laptops
                                                             : AbsaDomain::Restaurants;
    const std::string domain = to_string(d);
    const std::string prefix = d == AbsaDomain::Laptops ? "Laptop" : "Restaurants";
    std::string train, test;
    for (auto& n : list_dir(loc.path)) {
      if (n.rfind(prefix, 0) != 0 || n.size() < 5 || n.substr(n.size() - 4) != ".xml") continue;
      if (n.find("Train") != std::string::npos) train = join_path(loc.path, n);
      else if (n.find("Test") != std::string::npos) test = join_path(loc.path, n);
    }
    if (train.empty() || test.empty())
      throw UserError(loc.path + ": expected " + prefix + "*Train*.xml and " + prefix +
                      "*Test*.xml (dataset.domain = " + domain + ")");
    auto a = load_semeval_xml(train, "train");
    auto b = load_semeval_xml(test, "test");
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }
  throw UserError("dataset.format: '" + to_string(f) + "' is not a format of the sentence datasets");
}

}  // namespace cs
