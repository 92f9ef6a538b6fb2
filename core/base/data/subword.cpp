#include "data/subword.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <regex>

#include "util/error.h"
#include "util/paths.h"

// SentencePiece is reached through libcellscope_spm.so (core/spm_shim/spm_shim.cpp), loaded
// with dlopen(RTLD_LOCAL | RTLD_DEEPBIND): Debian's libsentencepiece exports its own bundled
// protobuf-lite, which clashes with LibTorch's libprotobuf when both are linked into one
// program (a crash before main). See core/base/data/SEQ2SEQ_DATA_NOTES.md.
#ifndef CELLSCOPE_SPM_BUILD_PATH
#define CELLSCOPE_SPM_BUILD_PATH ""
#endif
#ifndef CELLSCOPE_SPM_INSTALL_PATH
#define CELLSCOPE_SPM_INSTALL_PATH ""
#endif
#ifndef CELLSCOPE_BINARY_DIR
#define CELLSCOPE_BINARY_DIR ""
#endif

namespace cs {

namespace {

struct Spm {
  int (*train)(const char* const*, const size_t*, size_t, const char* const*, size_t, unsigned, char**, size_t*,
               char**) = nullptr;
  void* (*load)(const char*, size_t, char**) = nullptr;
  void (*unload)(void*) = nullptr;
  void (*free_buf)(void*) = nullptr;
  void (*info)(void*, int*, int*, int*, int*, int*) = nullptr;
  int (*encode)(void*, const char*, size_t, int**, size_t*, char**) = nullptr;
  int (*decode)(void*, const int*, size_t, char**, size_t*, char**) = nullptr;
  const char* (*piece)(void*, int) = nullptr;
};

std::string exe_path() { return cs::executable_path(); }

// Where the module is: $CELLSCOPE_SPM_LIBRARY, else the build tree's copy for a program run
// from the build tree, else the installed one next to the program (<bin>/../lib/cellscope/,
// as the data files are found relative to it: util/paths.cpp), else the configured prefix's.
std::vector<std::string> spm_candidates() {
  std::vector<std::string> c;
  const char* env = std::getenv("CELLSCOPE_SPM_LIBRARY");
  if (env && *env) return {env};
  const std::string bin = CELLSCOPE_BINARY_DIR, exe = exe_path();
  const bool in_build = !bin.empty() && exe.compare(0, bin.size() + 1, bin + "/") == 0;
  if (in_build && *CELLSCOPE_SPM_BUILD_PATH) c.push_back(CELLSCOPE_SPM_BUILD_PATH);
  const size_t slash = exe.rfind('/');
  if (slash != std::string::npos) c.push_back(exe.substr(0, slash) + "/../lib/cellscope/libcellscope_spm.so");
  if (*CELLSCOPE_SPM_INSTALL_PATH) c.push_back(CELLSCOPE_SPM_INSTALL_PATH);
  return c;  // never a build tree's module for a program outside it
}

const Spm& spm() {
  static std::once_flag once;
  static Spm s;
  static std::string error;
  std::call_once(once, [] {
    std::string tried;
    void* h = nullptr;
    for (const auto& path : spm_candidates()) {
      if (::access(path.c_str(), R_OK) != 0) {
        tried += (tried.empty() ? "" : "; ") + path + " (missing)";
        continue;
      }
      h = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
      if (h) break;
      const char* e = ::dlerror();
      tried += (tried.empty() ? "" : "; ") + path + " (" + (e ? e : "dlopen failed") + ")";
    }
    if (!h) {
      error = "SentencePiece support module libcellscope_spm.so could not be loaded (tried: " +
              (tried.empty() ? std::string("nothing") : tried) +
              "); reinstall Cellscope or set CELLSCOPE_SPM_LIBRARY to its path";
      return;
    }
    auto sym = [&](const char* name) -> void* {
      void* p = ::dlsym(h, name);
      if (!p && error.empty()) error = std::string("libcellscope_spm.so: missing symbol ") + name;
      return p;
    };
    s.train = reinterpret_cast<decltype(s.train)>(sym("cs_spm_train"));
    s.load = reinterpret_cast<decltype(s.load)>(sym("cs_spm_load"));
    s.unload = reinterpret_cast<decltype(s.unload)>(sym("cs_spm_unload"));
    s.free_buf = reinterpret_cast<decltype(s.free_buf)>(sym("cs_spm_free"));
    s.info = reinterpret_cast<decltype(s.info)>(sym("cs_spm_info"));
    s.encode = reinterpret_cast<decltype(s.encode)>(sym("cs_spm_encode"));
    s.decode = reinterpret_cast<decltype(s.decode)>(sym("cs_spm_decode"));
    s.piece = reinterpret_cast<decltype(s.piece)>(sym("cs_spm_piece"));
  });
  if (!error.empty()) throw UserError(error);
  return s;
}

std::string take_error(char* err) {
  std::string m = err ? err : "unknown SentencePiece error";
  if (err) spm().free_buf(err);
  return m;
}

}  // namespace

struct SubwordVocab::Impl {
  void* handle = nullptr;
  std::string proto;
  int size = 0;
  ~Impl() {
    if (handle) spm().unload(handle);
  }
};

SubwordVocab::SubwordVocab(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
SubwordVocab::~SubwordVocab() = default;

namespace {

std::shared_ptr<SubwordVocab::Impl> load_proto(const std::string& proto, const std::string& what) {
  const Spm& s = spm();
  auto impl = std::make_shared<SubwordVocab::Impl>();
  char* err = nullptr;
  impl->handle = s.load(proto.data(), proto.size(), &err);
  if (!impl->handle) throw UserError(what + ": not a SentencePiece model (" + take_error(err) + ")");
  int pad = 0, unk = 0, bos = 0, eos = 0;
  s.info(impl->handle, &pad, &unk, &bos, &eos, &impl->size);
  if (pad != SubwordVocab::pad_id || unk != SubwordVocab::unk_id || bos != SubwordVocab::bos_id ||
      eos != SubwordVocab::eos_id)
    throw UserError(what + ": SentencePiece model with special ids pad=" + std::to_string(pad) +
                    " unk=" + std::to_string(unk) + " bos=" + std::to_string(bos) + " eos=" + std::to_string(eos) +
                    "; Cellscope's subword vocabularies use pad=0 unk=1 bos=2 eos=3");
  impl->proto = proto;
  return impl;
}

std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

}  // namespace

SubwordVocab SubwordVocab::train(const std::vector<std::string>& lines, const SubwordOptions& o) {
  if (o.model_type != "unigram" && o.model_type != "bpe")
    throw UserError("subword model_type '" + o.model_type + "': expected \"unigram\" or \"bpe\"");
  if (o.vocab_size < 8) throw UserError("subword vocab_size " + std::to_string(o.vocab_size) + ": must be at least 8");
  if (!(o.character_coverage > 0.0 && o.character_coverage <= 1.0))
    throw UserError("subword character_coverage " + fmt_double(o.character_coverage) + ": must be in (0, 1]");
  std::vector<const char*> ptr;
  std::vector<size_t> len;
  for (const auto& l : lines) {
    if (blank(l)) continue;
    ptr.push_back(l.data());
    len.push_back(l.size());
  }
  if (ptr.empty()) throw UserError("subword vocabulary: no training text (every line is empty)");

  // Deterministic: every sentence is used (no sampling), in the given order, on one thread
  // (the EM's sums are then added in one fixed order), with a fixed seed.
  const std::vector<std::string> kw = {
      "model_type=" + o.model_type,
      "vocab_size=" + std::to_string(o.vocab_size),
      "character_coverage=" + fmt_double(o.character_coverage),
      "pad_id=0",
      "unk_id=1",
      "bos_id=2",
      "eos_id=3",
      "input_sentence_size=0",
      "shuffle_input_sentence=false",
      "num_threads=1",
      "hard_vocab_limit=true",
      "minloglevel=2",
  };
  std::vector<const char*> kwp;
  for (const auto& k : kw) kwp.push_back(k.c_str());
  const Spm& s = spm();
  static std::mutex train_mutex;  // SentencePiece's seed and log level are process-wide
  char *proto = nullptr, *err = nullptr;
  size_t proto_len = 0;
  int rc;
  {
    std::lock_guard<std::mutex> lock(train_mutex);
    rc = s.train(ptr.data(), len.data(), ptr.size(), kwp.data(), kwp.size(), 1234u, &proto, &proto_len, &err);
  }
  if (rc != 0) {
    const std::string msg = take_error(err);
    std::smatch m;
    // unigram: "Vocabulary size too high (N). Please set it to a value <= M."
    // bpe: "Vocabulary size is too large. Please set it to a value <= M."
    static const std::regex too_large(
        "Vocabulary size[^.]*(too high|too large)[^.]*\\. Please set it to a value <= ([0-9]+)");
    if (std::regex_search(msg, m, too_large))
      throw UserError(o.option + " " + std::to_string(o.vocab_size) + " is too large for the training text: at most " +
                      m[2].str() + " pieces can be learned from it; lower the vocabulary size: set " + o.option +
                      " to " + m[2].str() + " or less (or train on more text)");
    // Every character of the training text (character_coverage is 1) is a piece of its own, and
    // so are <pad> <unk> <s> </s>: "Vocabulary size is smaller than required_chars. N vs M."
    static const std::regex too_small("smaller than required_chars\\. ([0-9]+) vs ([0-9]+)");
    if (std::regex_search(msg, m, too_small))
      throw UserError(o.option + " " + std::to_string(o.vocab_size) +
                      " is too small for the training text: its distinct characters and the 4 special pieces "
                      "(<pad> <unk> <s> </s>) need " +
                      m[2].str() + " entries; set " + o.option + " to " + m[2].str() +
                      " or more (or lower-case / clean the text to have fewer characters)");
    throw UserError("training the subword vocabulary (SentencePiece " + o.model_type + ", vocab_size " +
                    std::to_string(o.vocab_size) + ") failed: " + msg);
  }
  std::string bytes(proto, proto_len);
  s.free_buf(proto);
  return SubwordVocab(load_proto(bytes, "trained subword model"));
}

SubwordVocab SubwordVocab::from_serialized(const std::string& model_proto) {
  return SubwordVocab(load_proto(model_proto, "subword model"));
}

std::string SubwordVocab::serialized() const { return impl_->proto; }

std::vector<int32_t> SubwordVocab::encode(const std::string& text) const {
  const Spm& s = spm();
  int* ids = nullptr;
  size_t n = 0;
  char* err = nullptr;
  if (s.encode(impl_->handle, text.data(), text.size(), &ids, &n, &err) != 0)
    throw UserError("subword encode: " + take_error(err));
  std::vector<int32_t> out(ids, ids + n);
  s.free_buf(ids);
  return out;
}

std::string SubwordVocab::decode(const std::vector<int32_t>& ids) const {
  std::vector<int> keep;
  keep.reserve(ids.size());
  for (int32_t id : ids) {
    if (id == pad_id || id == bos_id || id == eos_id) continue;
    keep.push_back(id >= 0 && id < impl_->size ? id : unk_id);
  }
  const Spm& s = spm();
  char* text = nullptr;
  size_t len = 0;
  char* err = nullptr;
  if (s.decode(impl_->handle, keep.data(), keep.size(), &text, &len, &err) != 0)
    throw UserError("subword decode: " + take_error(err));
  std::string out(text, len);
  s.free_buf(text);
  return out;
}

std::vector<std::string> SubwordVocab::pieces(const std::vector<int32_t>& ids) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (int32_t id : ids) out.push_back(id_to_piece(id));
  return out;
}

std::string SubwordVocab::id_to_piece(int32_t id) const {
  if (id < 0 || id >= impl_->size) return "";
  return spm().piece(impl_->handle, id);
}

int64_t SubwordVocab::size() const { return impl_->size; }

}  // namespace cs
