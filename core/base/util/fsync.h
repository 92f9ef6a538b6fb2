// fsync of a directory: after a rename or a create inside it, the new entry is durable only
// once the directory itself is on disk. atomic_write (util/error.h) calls it after its rename.
#pragma once
#include <string>

namespace cs {
// Best effort, never throws (a directory that cannot be opened is skipped).
void fsync_dir(const std::string& dir);
}  // namespace cs
