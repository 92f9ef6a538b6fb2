// The word-level corpus loader (data/word_corpus.h): PTB word format and tokenised text.
// Input: byte 0 picks the format and options; the rest is an archive (fuzz_common.h)
// written into "data": ptb_word reads the directory (ptb.{train,valid,test}.txt), text the
// first file.
#include <string>
#include "config/json.h"
#include "data/word_corpus.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // The resolved dataset section of a word_lm config (the schema's defaults; written out
  // here so this target needs only cellscope_base).
  static const cs::json base = {{"dataset", cs::json::parse(R"({"name": "moby-dick", "path": "x",
      "format": "auto", "valid_fraction": 0.05, "test_fraction": 0.05, "max_chars": 0, "vocab_size": 0,
      "min_count": 1, "lowercase": true, "eos": "paragraph", "tokenizer": "icu"})")}};
  const uint8_t sel = data[0];
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  csfuzz::clear_scratch();
  const auto files = csfuzz::write_archive("data", rest, 4);
  if (files.empty()) return 0;
  cs::json ds = base.at("dataset");
  static const char* formats[] = {"ptb_word", "text", "auto", "ptb_word"};
  ds["format"] = formats[sel % 4];
  ds["path"] = ds["format"] == "text" ? files[0] : csfuzz::scratch_dir() + "/data";
  if (sel & 0x04) ds["max_chars"] = 64;
  if (sel & 0x08) ds["vocab_size"] = 5;
  if (sel & 0x10) ds["min_count"] = 2;
  ds["lowercase"] = (sel & 0x20) != 0;
  static const char* eos[] = {"paragraph", "line", "none", "paragraph"};
  ds["eos"] = eos[sel >> 6];
  ds["tokenizer"] = (sel >> 6) == 3 ? "legacy" : "icu";  // the second "paragraph" slot: the legacy rules
  csfuzz::expect_only_user_errors([&] {
    const cs::DatasetOptions dso = cs::read_dataset_options(ds);
    cs::WordCorpusOptions wo;
    wo.vocab_size = ds["vocab_size"].get<int64_t>();
    wo.min_count = ds["min_count"].get<int64_t>();
    wo.lowercase = ds["lowercase"].get<bool>();
    wo.eos = cs::enum_from_json<cs::WordEos>(ds["eos"], "dataset.eos");
    wo.tokenizer = cs::enum_from_json<cs::Tokenizer>(ds["tokenizer"], "dataset.tokenizer");
    auto c = cs::load_word_corpus(dso, wo);
    auto again = cs::load_word_corpus(dso, wo, &c.vocab);
    if (again.train != c.train)
      csfuzz::unexpected("invariant", "reloading with the corpus' own vocabulary changed the ids");
  });
  return 0;
}
