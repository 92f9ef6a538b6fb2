// The sentence-level dataset loaders (data/text_datasets.h) of tasks classify and absa:
// JSONL, MR (pos_neg_lines), SUBJ (subj_lines), IMDB (aclimdb), SST (sst_trees) and
// SemEval-2014 XML, through resolve_text_dataset + load_text_examples as make_task does.
// Input: byte 0 picks the format (and SST's classes, SemEval's domain); the rest is an archive
// (fuzz_common.h) written into "data". JSONL and a SemEval archive of one file read that file,
// the others the directory.
#include <string>
#include "config/json.h"
#include "data/text_datasets.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // The keys of a resolved classify/absa dataset section the loaders read (written out here
  // so this target needs only cellscope_base).
  static const cs::json section = cs::json::parse(R"({"name": "x", "path": "x", "format": "jsonl",
      "valid_fraction": 0.1, "test_fraction": 0.1, "max_chars": 0,
      "text_field": "text", "label_field": "label", "split_field": "split", "sst_classes": 2,
      "domain": "restaurants"})");
  static const cs::json classify = {{"dataset", section}}, absa = classify;
  const uint8_t sel = data[0];
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  csfuzz::clear_scratch();
  const auto files = csfuzz::write_archive("data", rest, 8);
  if (files.empty()) return 0;
  static const char* formats[] = {"jsonl", "pos_neg_lines", "subj_lines", "aclimdb", "sst_trees", "semeval2014_xml"};
  const std::string format = formats[sel % 6];
  const bool semeval = format == "semeval2014_xml";
  const std::string task = semeval ? "absa" : "classify";
  cs::json ds = (semeval ? absa : classify).at("dataset");
  ds["format"] = format;
  const bool one_file = format == "jsonl" || (semeval && files.size() == 1);
  ds["path"] = one_file ? files[0] : csfuzz::scratch_dir() + "/data";
  if (ds.contains("sst_classes")) ds["sst_classes"] = (sel & 0x40) ? 5 : 2;
  if (ds.contains("domain")) ds["domain"] = (sel & 0x80) ? "laptops" : "restaurants";
  csfuzz::expect_only_user_errors([&] {
    auto loc = cs::resolve_text_dataset(cs::read_dataset_options(ds), task);
    cs::TextExampleOptions o;
    o.sst_classes = ds.at("sst_classes").get<int64_t>();
    o.domain = ds.at("domain") == "laptops" ? cs::AbsaDomain::Laptops : cs::AbsaDomain::Restaurants;
    auto ex = cs::load_text_examples(loc, o);
    if (semeval) cs::mark_hard_sentences(ex);
  });
  return 0;
}
