// The SemEval-2014 XML loader (data/text_datasets.h, load_semeval_xml; pugixml underneath).
// Input: the bytes of one XML file. Besides "UserError or nothing": every example the loader
// returns has UTF-8 text, aspect and label, and a label among the four polarities.
#include <cstdlib>
#include <string>
#include "data/text_datasets.h"
#include "data/utf8.h"
#include "fuzz_common.h"

namespace {
bool fuzz_semeval_utf8(const std::string& s) {
  return cs::utf8_validate(reinterpret_cast<const unsigned char*>(s.data()), s.size(), nullptr) == std::string::npos;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = csfuzz::write_file("x.xml", std::string(reinterpret_cast<const char*>(data), size));
  csfuzz::expect_only_user_errors([&] {
    const auto ex = cs::load_semeval_xml(path, "train");
    for (const auto& e : ex) {
      if (!fuzz_semeval_utf8(e.text) || !fuzz_semeval_utf8(e.aspect))
        csfuzz::unexpected("invalid UTF-8", "an example's text or aspect is not UTF-8");
      if (e.label != "positive" && e.label != "negative" && e.label != "neutral" && e.label != "conflict")
        csfuzz::unexpected("bad label", e.label.c_str());
    }
  });
  return 0;
}
