// SHA-256 (FIPS 180-4) of a byte string or a file, as lower-case hex. Used to record which
// TorchScript cell a run was trained with (cells/SCRIPT_CELL_NOTES.md). No torch here.
#pragma once
#include <string>

namespace cs {

std::string sha256_hex(const std::string& bytes);
// The file's SHA-256; throws UserError naming the file when it cannot be read.
std::string file_sha256(const std::string& path);

}  // namespace cs
