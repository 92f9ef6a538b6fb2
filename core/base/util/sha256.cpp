#include "util/sha256.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define CS_SHA256_X86 1
#endif

#include "util/error.h"

namespace cs {

namespace {

alignas(16) constexpr uint32_t kRound[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

inline uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

// FIPS 180-4 section 6.2.2, one 64-byte block at a time.
void compress_portable(uint32_t* h, const unsigned char* p, size_t nblocks) {
  for (; nblocks > 0; --nblocks, p += 64) {
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = (uint32_t(p[4 * i]) << 24) | (uint32_t(p[4 * i + 1]) << 16) | (uint32_t(p[4 * i + 2]) << 8) |
             uint32_t(p[4 * i + 3]);
    for (int i = 16; i < 64; ++i) {
      const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; ++i) {
      const uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
      const uint32_t ch = (e & f) ^ (~e & g);
      const uint32_t t1 = k + S1 + ch + kRound[i] + w[i];
      const uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
      const uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
      const uint32_t t2 = S0 + maj;
      k = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = b;
      b = a;
      a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
  }
}

#ifdef CS_SHA256_X86
bool cpu_has_shani() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool ssse3 = (c >> 9) & 1u, sse41 = (c >> 19) & 1u;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  return ssse3 && sse41 && ((b >> 29) & 1u);  // CPUID.(EAX=7,ECX=0):EBX.SHA[bit 29]
}

// The same compression with the SHA extensions: the state kept as ABEF / CDGH, sha256rnds2 doing two
// rounds, sha256msg1/msg2 the message schedule (Intel's "Intel SHA Extensions" paper, 2013).
__attribute__((target("sha,sse4.1,ssse3"))) void compress_shani(uint32_t* h, const unsigned char* p, size_t nblocks) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  // (lanes named from the highest to the lowest, as in Intel's paper)
  __m128i tmp = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h));
  __m128i st1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(h + 4));
  tmp = _mm_shuffle_epi32(tmp, 0xB1);          // CDAB
  st1 = _mm_shuffle_epi32(st1, 0x1B);          // EFGH
  __m128i st0 = _mm_alignr_epi8(tmp, st1, 8);  // ABEF
  st1 = _mm_blend_epi16(st1, tmp, 0xF0);       // CDGH
  for (; nblocks > 0; --nblocks, p += 64) {
    const __m128i abef = st0, cdgh = st1;
    __m128i m[4];
    for (int i = 0; i < 4; ++i)
      m[i] = _mm_shuffle_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i)), bswap);
    for (int g = 0; g < 16; ++g) {  // rounds 4g .. 4g+3; m[g % 4] holds W[4g .. 4g+3]
      __m128i msg = _mm_add_epi32(m[g & 3], _mm_load_si128(reinterpret_cast<const __m128i*>(kRound + 4 * g)));
      st1 = _mm_sha256rnds2_epu32(st1, st0, msg);
      if (g >= 3 && g <= 14) {  // W[4g+4 .. 4g+7] = msg2(msg1(...) + W[4g-3 .. 4g], W[4g .. 4g+3])
        const __m128i t = _mm_alignr_epi8(m[g & 3], m[(g + 3) & 3], 4);
        m[(g + 1) & 3] = _mm_sha256msg2_epu32(_mm_add_epi32(m[(g + 1) & 3], t), m[g & 3]);
      }
      msg = _mm_shuffle_epi32(msg, 0x0E);
      st0 = _mm_sha256rnds2_epu32(st0, st1, msg);
      if (g >= 1 && g <= 12) m[(g + 3) & 3] = _mm_sha256msg1_epu32(m[(g + 3) & 3], m[g & 3]);
    }
    st0 = _mm_add_epi32(st0, abef);
    st1 = _mm_add_epi32(st1, cdgh);
  }
  tmp = _mm_shuffle_epi32(st0, 0x1B);     // FEBA
  st1 = _mm_shuffle_epi32(st1, 0xB1);     // DCHG
  st0 = _mm_blend_epi16(tmp, st1, 0xF0);  // DCBA: A, B, C, D in memory
  st1 = _mm_alignr_epi8(st1, tmp, 8);     // HGFE: E, F, G, H in memory
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h), st0);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(h + 4), st1);
}
#endif

}  // namespace

bool Sha256::cpu_instructions() {
#ifdef CS_SHA256_X86
  static const bool has = cpu_has_shani();
  return has;
#else
  return false;
#endif
}

Sha256::Sha256(Engine engine)
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19},
      shani_(engine == Engine::kBest && cpu_instructions()) {}

void Sha256::blocks(const unsigned char* p, size_t n) {
#ifdef CS_SHA256_X86
  if (shani_) {
    compress_shani(h_.data(), p, n);
    return;
  }
#endif
  compress_portable(h_.data(), p, n);
}

void Sha256::update(const void* data, size_t n) {
  if (done_) throw std::logic_error("Sha256::update after hex()");
  const auto* p = static_cast<const unsigned char*>(data);
  total_ += n;
  if (buffered_ > 0) {
    const size_t take = std::min(n, sizeof buf_ - buffered_);
    std::memcpy(buf_ + buffered_, p, take);
    buffered_ += take, p += take, n -= take;
    if (buffered_ < sizeof buf_) return;
    blocks(buf_, 1);
    buffered_ = 0;
  }
  if (n >= 64) {
    blocks(p, n / 64);
    p += n / 64 * 64;
    n %= 64;
  }
  if (n > 0) std::memcpy(buf_, p, n);
  buffered_ = n;
}

std::string Sha256::hex() {
  if (done_) throw std::logic_error("Sha256::hex called twice");
  done_ = true;
  // the padding: a 1 bit, zeros, and the length in bits (big-endian) ending a block
  unsigned char last[128] = {};
  std::memcpy(last, buf_, buffered_);
  last[buffered_] = 0x80;
  const size_t nb = buffered_ + 1 + 8 <= 64 ? 1 : 2;
  const uint64_t bits = total_ * 8;
  for (int j = 0; j < 8; ++j) last[nb * 64 - 1 - static_cast<size_t>(j)] = static_cast<unsigned char>(bits >> (8 * j));
  blocks(last, nb);
  std::string out;
  char buf[9];
  for (uint32_t v : h_) {
    std::snprintf(buf, sizeof buf, "%08x", v);
    out += buf;
  }
  return out;
}

std::string sha256_hex(const std::string& bytes) {
  Sha256 s;
  s.update(bytes.data(), bytes.size());
  return s.hex();
}

std::string file_sha256(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) throw UserError("cannot read '" + path + "': " + std::strerror(errno));
  Sha256 s;
  std::unique_ptr<unsigned char[]> buf(new unsigned char[1 << 20]);
  for (;;) {
    const size_t n = std::fread(buf.get(), 1, 1 << 20, f.get());
    if (n > 0) s.update(buf.get(), n);
    if (n < (1u << 20)) {
      if (std::ferror(f.get())) throw UserError("cannot read '" + path + "': " + std::strerror(errno));
      break;
    }
  }
  return s.hex();
}

}  // namespace cs

// A unity batch's next files do not see this file's macros (tests/check_unity.py).
#undef CS_SHA256_X86
