// libcellscope_spm.so: a C interface over SentencePiece (Debian's libsentencepiece), loaded by
// core/base/data/subword.cpp with dlopen(RTLD_LOCAL | RTLD_DEEPBIND). Why a separate module:
// Debian's libsentencepiece.so.0 carries its own protobuf-lite 3.14 and exports its symbols,
// while LibTorch brings libprotobuf.so.32 (3.21). Linked into one executable, one copy's
// symbols interpose the other's and the program crashes before main() (libprotobuf's static
// initialisers call sentencepiece's MergeFromImpl). Loaded locally and deep-bound, this module
// and libsentencepiece resolve protobuf to sentencepiece's copy and torch keeps its own.
// Only plain C types cross the boundary; buffers are allocated here and freed with cs_spm_free.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#define CS_SPM_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

char* dup_bytes(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) return nullptr;
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

void set_error(char** err, const std::string& msg) {
  if (err) *err = dup_bytes(msg);
}

class ArrayIterator : public sentencepiece::SentenceIterator {
 public:
  ArrayIterator(const char* const* lines, const size_t* lens, size_t n) : lines_(lines), lens_(lens), n_(n) { load(); }
  bool done() const override { return i_ >= n_; }
  void Next() override {
    ++i_;
    load();
  }
  const std::string& value() const override { return cur_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void load() {
    if (i_ < n_) cur_.assign(lines_[i_], lens_[i_]);
  }
  const char* const* lines_;
  const size_t* lens_;
  size_t n_, i_ = 0;
  std::string cur_;
};

}  // namespace

// Trains on n lines with the "key=value" options in `kw` (nkw of them). 0 on success with the
// model proto in *proto / *proto_len; else -1 and *err.
CS_SPM_EXPORT int cs_spm_train(const char* const* lines, const size_t* lens, size_t n, const char* const* kw,
                               size_t nkw, unsigned seed, char** proto, size_t* proto_len, char** err) {
  try {
    std::unordered_map<std::string, std::string> args;
    for (size_t i = 0; i < nkw; ++i) {
      const std::string s = kw[i];
      const size_t eq = s.find('=');
      args[s.substr(0, eq)] = eq == std::string::npos ? "" : s.substr(eq + 1);
    }
    sentencepiece::SetRandomGeneratorSeed(seed);
    ArrayIterator it(lines, lens, n);
    std::string out;
    const auto st = sentencepiece::SentencePieceTrainer::Train(args, &it, &out);
    if (!st.ok()) {
      set_error(err, st.ToString());
      return -1;
    }
    *proto = dup_bytes(out);
    *proto_len = out.size();
    return 0;
  } catch (const std::exception& e) {
    set_error(err, e.what());
    return -1;
  }
}

// A processor from model bytes, or nullptr and *err.
CS_SPM_EXPORT void* cs_spm_load(const char* proto, size_t len, char** err) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  const auto st = sp->LoadFromSerializedProto(std::string(proto, len));
  if (!st.ok()) {
    set_error(err, st.ToString());
    delete sp;
    return nullptr;
  }
  return sp;
}

CS_SPM_EXPORT void cs_spm_unload(void* sp) { delete static_cast<sentencepiece::SentencePieceProcessor*>(sp); }

CS_SPM_EXPORT void cs_spm_free(void* p) { std::free(p); }

// pad, unk, bos, eos ids and the number of pieces.
CS_SPM_EXPORT void cs_spm_info(void* h, int* pad, int* unk, int* bos, int* eos, int* size) {
  auto* sp = static_cast<sentencepiece::SentencePieceProcessor*>(h);
  *pad = sp->pad_id();
  *unk = sp->unk_id();
  *bos = sp->bos_id();
  *eos = sp->eos_id();
  *size = sp->GetPieceSize();
}

CS_SPM_EXPORT int cs_spm_encode(void* h, const char* text, size_t len, int** ids, size_t* n, char** err) {
  std::vector<int> v;
  const auto st = static_cast<sentencepiece::SentencePieceProcessor*>(h)->Encode(std::string(text, len), &v);
  if (!st.ok()) {
    set_error(err, st.ToString());
    return -1;
  }
  *ids = static_cast<int*>(std::malloc(sizeof(int) * (v.empty() ? 1 : v.size())));
  if (!v.empty()) std::memcpy(*ids, v.data(), sizeof(int) * v.size());
  *n = v.size();
  return 0;
}

CS_SPM_EXPORT int cs_spm_decode(void* h, const int* ids, size_t n, char** text, size_t* len, char** err) {
  std::string out;
  const auto st = static_cast<sentencepiece::SentencePieceProcessor*>(h)->Decode(std::vector<int>(ids, ids + n), &out);
  if (!st.ok()) {
    set_error(err, st.ToString());
    return -1;
  }
  *text = dup_bytes(out);
  *len = out.size();
  return 0;
}

// The piece of an id in range (the pointer stays valid while the processor lives).
CS_SPM_EXPORT const char* cs_spm_piece(void* h, int id) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(h)->IdToPiece(id).c_str();
}
