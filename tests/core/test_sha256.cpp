// SHA-256 (core/base/util/sha256.h): FIPS 180-4's and NIST's example digests, the incremental form in
// pieces of every size against one call, the processor's SHA instructions against the portable code on
// every length around the block boundaries, and files read in pieces (a checkpoint-sized file is never
// read whole), with the refusal of a file that cannot be read. The throughput of both engines is printed
// (not asserted: a test does not time the machine).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>

#include "harness.h"
#include "util/error.h"
#include "util/sha256.h"

namespace test_sha256 {  // this file's own names in a unity build (tests/README.md)

using cs::Sha256;

std::string digest(const std::string& s, Sha256::Engine e) {
  Sha256 h(e);
  h.update(s.data(), s.size());
  return h.hex();
}

std::string random_bytes(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(g() & 0xff);
  return s;
}

TEST(Sha256, examplesOfTheStandard) {
  // FIPS 180-4's examples (NIST's "SHA256.pdf") and the million a's of FIPS 180-2 appendix B.3.
  const std::string million(1000000, 'a');
  const std::pair<std::string, const char*> cases[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
      {million, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"},
  };
  for (const auto& [text, want] : cases) {
    EXPECT_EQ(cs::sha256_hex(text), want) << text.size() << " bytes";
    EXPECT_EQ(digest(text, Sha256::Engine::kPortable), want) << text.size() << " bytes, portable";
    EXPECT_EQ(digest(text, Sha256::Engine::kBest), want) << text.size() << " bytes, best";
  }
  std::printf("SHA instructions of the processor: %s\n", Sha256::cpu_instructions() ? "used" : "absent");
}

TEST(Sha256, piecesOfEverySizeGiveTheDigestOfTheWhole) {
  const std::string data = random_bytes(3000, 7);
  for (const auto engine : {Sha256::Engine::kBest, Sha256::Engine::kPortable}) {
    const std::string whole = digest(data, engine);
    for (size_t piece : {1u, 3u, 63u, 64u, 65u, 127u, 128u, 1000u}) {
      Sha256 h(engine);
      for (size_t i = 0; i < data.size(); i += piece) h.update(data.data() + i, std::min(piece, data.size() - i));
      EXPECT_EQ(h.hex(), whole) << "pieces of " << piece;
    }
    Sha256 h(engine);
    h.update(nullptr, 0);
    h.update(data.data(), data.size());
    h.update(data.data(), 0);
    EXPECT_EQ(h.hex(), whole);
    EXPECT_THROW(h.hex(), std::logic_error);  // spent
  }
}

TEST(Sha256, theProcessorsInstructionsAgreeWithThePortableCode) {
  // every length from 0 to 300 (one, two and several blocks; each padding case), then large ones
  for (size_t n = 0; n <= 300; ++n) {
    const std::string s = random_bytes(n, static_cast<unsigned>(n) + 1);
    ASSERT_EQ(digest(s, Sha256::Engine::kBest), digest(s, Sha256::Engine::kPortable)) << n << " bytes";
  }
  const std::string big = random_bytes(32u << 20, 99);
  double secs[2] = {0, 0};
  std::string got[2];
  int i = 0;
  for (const auto engine : {Sha256::Engine::kBest, Sha256::Engine::kPortable}) {
    const auto t0 = std::chrono::steady_clock::now();
    got[i] = digest(big, engine);
    secs[i++] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  EXPECT_EQ(got[0], got[1]);
  std::printf("32 MiB: best engine %.0f MB/s, portable %.0f MB/s\n", 33.554432 / secs[0], 33.554432 / secs[1]);
}

TEST(Sha256, filesAreReadInPiecesAndUnreadableOnesNamed) {
  const std::string dir = cstest::temp_dir() + "/sha256";
  const std::string data = random_bytes((3u << 20) + 17, 5);  // three 1 MiB pieces and a tail
  cstest::write_text(dir + "/f.bin", data);
  EXPECT_EQ(cs::file_sha256(dir + "/f.bin"), cs::sha256_hex(data));
  cstest::write_text(dir + "/empty", "");
  EXPECT_EQ(cs::file_sha256(dir + "/empty"), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  for (const std::string& bad : {dir + "/missing.pt", dir}) {
    try {
      cs::file_sha256(bad);
      ADD_FAILURE() << bad << " was read";
    } catch (const cs::UserError& e) {
      EXPECT_NE(std::string(e.what()).find("cannot read '" + bad + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace test_sha256
