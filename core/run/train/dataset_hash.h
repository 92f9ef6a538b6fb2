// What a run's dataset was, by content: the files of its resolved dataset section with their
// SHA-256. Written as RUN_DIR/dataset.json when a run is created (train/launch.cpp), read by the
// reproducibility bundle (inspect/report), which says when a file changed since training.
#pragma once
#include <string>

#include "config/json.h"

namespace cs {

// file -> SHA-256 (hex) of `path`: the file itself, or every regular file under a directory
// (sorted). Empty when the path is neither.
json dataset_files_sha256(const std::string& path);
// {"name", "path", "files"} of a resolved "dataset" section; {"error": why} when it cannot be
// resolved (never throws).
json dataset_record(const json& dataset_section);

}  // namespace cs
