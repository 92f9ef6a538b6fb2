// Checkpoint files: a LibTorch archive behind a small header that carries its length and
// a 64-bit FNV-1a checksum (format in docs/RELIABILITY.md, "Checkpoint checksums").
// Every checkpoint is written and read through these functions, so a flipped bit or a
// truncated file gives one clear UserError instead of silently changed weights.
#pragma once
#include <torch/serialize/input-archive.h>
#include <torch/serialize/output-archive.h>

#include <cstdint>
#include <string>

namespace cs {

// 64-bit FNV-1a of `n` bytes (any change of one byte changes the value).
uint64_t fnv1a64(const void* data, size_t n, uint64_t h = 0xcbf29ce484222325ULL);

// Serialise `ar` and commit it to `path` atomically: `path.tmp.<pid>` written and fsync'ed,
// renamed over `path`, the directory fsync'ed. A process killed at any instant leaves the
// old or the new file, never a torn one.
void write_checkpoint_file(torch::serialize::OutputArchive& ar, const std::string& path);

// Read a checkpoint written by write_checkpoint_file (checksum verified: UserError
// "checkpoint '<path>' is corrupted (checksum mismatch)"), or a bare LibTorch archive
// written before checksums existed (loaded unverified, as before). Any unreadable file
// gives UserError "checkpoint '<path>' is unreadable or corrupted: ...".
void read_checkpoint_file(const std::string& path, torch::serialize::InputArchive& ar,
                          c10::optional<torch::Device> device = c10::nullopt);

// read_checkpoint_file on the bytes of a checkpoint already read (`path` names it in messages): a
// command that needs the file for several purposes (weights, step, hash of the bytes) reads it once
// and takes all of them from that one snapshot, never from a file a training may replace between reads.
void read_checkpoint_bytes(const std::string& bytes, const std::string& path, torch::serialize::InputArchive& ar,
                           c10::optional<torch::Device> device = c10::nullopt);

// True when `path` carries a checksum header (written by this version or later).
bool checkpoint_has_checksum(const std::string& path);

// Compare every parameter and buffer of `model` with the "model" archive of the checkpoint
// `ar` (names and shapes). Throws UserError naming `path`, the first mismatching parameter
// and both shapes (or the parameter the checkpoint lacks or has in excess); `hint` is
// appended to the message. Call before Module::load, which would otherwise replace the
// tensors by ones of another shape without a word.
void check_model_matches(torch::nn::Module& model, torch::serialize::InputArchive& ar, const std::string& path,
                         const std::string& hint = "");

}  // namespace cs
