// Vocabulary files (data/vocab.h): Vocab::load of the serialized format, and the round
// trip: what loads must serialize back to the same text and reload to the same table.
#include <string>
#include "data/vocab.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string path = csfuzz::write_file("vocab", text);
  csfuzz::expect_only_user_errors([&] {
    const cs::Vocab v = cs::Vocab::load(path);
    const std::string again = v.serialize();
    if (cs::Vocab::deserialize(again, "reserialized") != v)
      csfuzz::unexpected("invariant", "a loaded vocabulary does not survive serialize + deserialize");
    for (size_t i = 0; i < v.size(); ++i)
      if (v.id(v.symbol(static_cast<int32_t>(i))) != static_cast<int32_t>(i))
        csfuzz::unexpected("invariant", "symbol -> id -> symbol does not round-trip");
  });
  return 0;
}
