// The dataset manifest (data/manifest.h): load_manifest, then what `datasets`, the GUI's
// picker and resolve_dataset read of every entry.
#include <string>
#include "data/manifest.h"
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = csfuzz::write_file("manifest.json", std::string(reinterpret_cast<const char*>(data), size));
  csfuzz::expect_only_user_errors([&] {
    const cs::json m = cs::load_manifest(path);
    for (const auto& name : cs::manifest_names(m)) {
      const cs::json* e = cs::find_manifest_entry(m, name);
      if (!e) csfuzz::unexpected("invariant", "a listed manifest name is not found");
      std::string missing;
      (void)cs::dataset_fetched(*e, &missing);
    }
  });
  return 0;
}
