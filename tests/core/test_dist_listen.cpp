// Where a --master run listens, and its option checks, with real cellscope-cli workers:
// rank 0's rendezvous store on a loopback master is bound to loopback only (checked with
// `ss -ltn`, or /proc/net/tcp{,6} without iproute2), --listen 0.0.0.0 opens it on purpose,
// a bracketed IPv6 master trains to the end, bad --dist-timeout and --master values are
// refused with exit 2, and a kill -9 of rank 0 leaves the run "failed", not "running".
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "corpus_fixture.h"
#include "dist_fixture.h"

namespace test_dist_listen {  // this file's own names in a unity build (tests/README.md)

using namespace cs;

namespace {

// A port for this test process's rendezvous (distinct per test function and from test_dist_cluster's).
std::string port(int k) { return std::to_string(20000 + (::getpid() * 13 + k * 211 + 7919) % 40000); }

std::vector<std::string> worker(const std::string& cfg, const std::string& dir, int rank, const std::string& master,
                                const std::string& timeout, const std::vector<std::string>& extra = {}) {
  std::vector<std::string> a = {"train",        cfg, "--run-dir", dir,    "--rank",         std::to_string(rank),
                                "--world-size", "2", "--master",  master, "--dist-timeout", timeout,
                                "--threads",    "1", "--quiet"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

int64_t elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
}

std::string command_output(const std::string& cmd) {
  std::string out;
  if (FILE* f = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    ::pclose(f);
  }
  return out;
}

// The local addresses ("127.0.0.1", "0.0.0.0", "::", "::1", "*", ...) listening on TCP `p`,
// from `ss -ltn` when iproute2 is installed, else from /proc/net/tcp and /proc/net/tcp6.
// `shown` receives what was read (for the failure message).
std::vector<std::string> listeners(int p, std::string* shown) {
  std::vector<std::string> out;
  const std::string suffix = ":" + std::to_string(p);
  if (std::system("command -v ss >/dev/null 2>&1") == 0) {
    const std::string text = command_output("ss -ltn 'sport = :" + std::to_string(p) + "'");
    *shown = "ss -ltn 'sport = :" + std::to_string(p) + "':\n" + text;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream f(line);
      std::string state, recvq, sendq, local;
      if (!(f >> state >> recvq >> sendq >> local) || state != "LISTEN") continue;
      if (local.size() <= suffix.size() || local.compare(local.size() - suffix.size(), suffix.size(), suffix) != 0)
        continue;
      std::string host = local.substr(0, local.size() - suffix.size());
      if (host.size() >= 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
      out.push_back(host);
    }
    return out;
  }
  *shown = "/proc/net/tcp and /proc/net/tcp6:\n";
  char hexport[8];
  std::snprintf(hexport, sizeof hexport, "%04X", p);
  for (const char* file : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream f(file);
    std::string line;
    std::getline(f, line);  // header
    while (std::getline(f, line)) {
      std::istringstream s(line);
      std::string sl, local, remote, st;
      s >> sl >> local >> remote >> st;
      if (st != "0A" || local.substr(local.find(':') + 1) != hexport) continue;  // 0A: LISTEN
      *shown += line + "\n";
      const std::string addr = local.substr(0, local.find(':'));
      if (addr == "0100007F") out.push_back("127.0.0.1");
      else if (addr == "00000000") out.push_back("0.0.0.0");
      else if (addr == "00000000000000000000000000000000") out.push_back("::");
      else if (addr == "00000000000000000000000001000000") out.push_back("::1");
      else out.push_back(addr);
    }
  }
  return out;
}

// Wait (up to 20 s) until something listens on `p`.
std::vector<std::string> wait_for_listener(int p, std::string* shown) {
  const auto t0 = std::chrono::steady_clock::now();
  for (;;) {
    auto l = listeners(p, shown);
    if (!l.empty() || elapsed_ms(t0) > 20000) return l;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace

class DistListen : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(std::filesystem::exists(cstest::default_corpus_path()))
        << "the default corpus is missing: " << cstest::default_corpus_path();
  }
};

// Rank 0 alone (rank 1 never comes): while it waits in the rendezvous its store listens
// on 127.0.0.1:P and nowhere else (not 0.0.0.0, not ::, not *).
TEST_F(DistListen, loopbackMasterListensOnLoopbackOnly) {
  const std::string cfg = cstest::write_json_file("listen_lo.json", cstest::tiny_config("char_lm", 6));
  const std::string p = port(1);
  cstest::Process r0;
  ASSERT_TRUE(r0.start(worker(cfg, cstest::temp_dir() + "/listen_lo", 0, "127.0.0.1:" + p, "30"))) << r0.err();
  std::string shown;
  const auto l = wait_for_listener(std::stoi(p), &shown);
  std::cout << shown;
  r0.signal(SIGKILL);
  r0.wait(10000);
  ASSERT_FALSE(l.empty()) << "nothing listens on port " << p << "\n" << shown << r0.err();
  for (auto& a : l) ASSERT_EQ(a, "127.0.0.1") << "rank 0's store listens beyond loopback:\n" << shown;
}

TEST_F(DistListen, listenEverywhereOnlyWhenAsked) {
  const std::string cfg = cstest::write_json_file("listen_any.json", cstest::tiny_config("char_lm", 6));
  const std::string p = port(2);
  cstest::Process r0;
  ASSERT_TRUE(
      r0.start(worker(cfg, cstest::temp_dir() + "/listen_any", 0, "127.0.0.1:" + p, "30", {"--listen", "0.0.0.0"})))
      << r0.err();
  std::string shown;
  const auto l = wait_for_listener(std::stoi(p), &shown);
  r0.signal(SIGKILL);
  r0.wait(10000);
  ASSERT_EQ(l, std::vector<std::string>{"0.0.0.0"}) << shown << r0.err();
}

// A bracketed IPv6 master: both ranks rendezvous over [::1] and train to the end. On a machine
// without the IPv6 loopback (/proc/net/if_inet6), rank 0 stops at once with exit 1, naming the
// address it cannot listen on, and leaves no run directory.
TEST_F(DistListen, bracketedIpv6MasterTrainsToTheEnd) {
  const std::string cfg = cstest::write_json_file("listen_v6.json", cstest::tiny_config("char_lm", 6));
  const std::string dir = cstest::temp_dir() + "/listen_v6", master = "[::1]:" + port(3);
  cstest::Process r0, r1;
  if (!cstest::have_ipv6_loopback()) {
    ASSERT_TRUE(r0.start(worker(cfg, dir, 0, master, "30"))) << r0.err();
    ASSERT_TRUE(r0.wait(60000)) << "rank 0 did not stop";
    ASSERT_EQ(r0.exit_code(), 1) << r0.err();
    ASSERT_TRUE(cstest::contains(r0.err(), "cannot listen on " + master)) << r0.err();
    ASSERT_FALSE(std::filesystem::exists(dir)) << "a run directory was left at " << dir;
    return;
  }
  ASSERT_TRUE(r0.start(worker(cfg, dir, 0, master, "30"))) << r0.err();
  ASSERT_TRUE(r1.start(worker(cfg, dir, 1, master, "30"))) << r1.err();
  ASSERT_TRUE(r0.wait(90000)) << "rank 0 did not finish";
  ASSERT_TRUE(r1.wait(90000)) << "rank 1 did not finish";
  ASSERT_EQ(r0.exit_code(), 0) << r0.err();
  ASSERT_EQ(r1.exit_code(), 0) << r1.err();
  auto s = RunStore(dir).read_summary();
  ASSERT_EQ(s.status, std::string("finished"));
  ASSERT_EQ(s.step, int64_t(6));
}

// --dist-timeout must be finite, at least 1 s (the workers' start-up) and at most 7 days: exit 2
// naming the flag and the value, before any rendezvous, for a worker and for the --nproc launcher
// (1e-9 passed the launcher and then pointed at a run directory no worker had made, #52).
TEST_F(DistListen, badDistTimeoutsAreRefused) {
  const std::string cfg = cstest::write_json_file("listen_timeout.json", cstest::tiny_config("char_lm", 6));
  for (const std::string bad : {"inf", "1e300", "nan", "0", "-5", "604801", "60x", "1e-9", "0.5"}) {
    std::string out, err;
    const int rc = cstest::run_cli(worker(cfg, cstest::temp_dir() + "/listen_timeout", 0, "127.0.0.1:" + port(4), bad),
                                   &out, &err, 30000);
    ASSERT_EQ(rc, 2) << bad << ": " << err;
    ASSERT_TRUE(cstest::contains(err, "--dist-timeout") && cstest::contains(err, "'" + bad + "'")) << err;
    ASSERT_FALSE(cstest::contains(err, "-2147483648")) << err;
    const int rc2 = cstest::run_cli({"train", cfg, "--nproc", "2", "--run-dir",
                                     cstest::temp_dir() + "/listen_timeout_n", "--dist-timeout", bad, "--quiet"},
                                    &out, &err, 30000);
    ASSERT_EQ(rc2, 2) << bad << ": " << err;
    ASSERT_TRUE(cstest::contains(err, "--dist-timeout") && cstest::contains(err, "'" + bad + "'")) << err;
    ASSERT_FALSE(std::filesystem::exists(cstest::temp_dir() + "/listen_timeout_n")) << bad;
  }
}

// A port is 1..65535 in digits only; an IPv6 master needs brackets. Rank 1 (a client that
// would otherwise wait for a server on the wrong port) is refused at once with exit 2.
TEST_F(DistListen, badMastersAreRefused) {
  const std::string cfg = cstest::write_json_file("listen_master.json", cstest::tiny_config("char_lm", 6));
  const std::vector<std::pair<std::string, std::string>> cases = {{"127.0.0.1:22x", "'22x' is not a port"},
                                                                  {"127.0.0.1:0", "'0' is not a port"},
                                                                  {"127.0.0.1:65536", "'65536' is not a port"},
                                                                  {"::1:29500", "an IPv6 address goes in brackets"},
                                                                  {"[::1]", "expects HOST:PORT or [IPV6]:PORT"}};
  for (auto& [bad, why] : cases) {
    std::string out, err;
    const auto t = std::chrono::steady_clock::now();
    const int rc = cstest::run_cli(worker(cfg, cstest::temp_dir() + "/listen_master", 1, bad, "5"), &out, &err, 30000);
    ASSERT_EQ(rc, 2) << bad << ": " << err;
    ASSERT_TRUE(cstest::contains(err, "--master") && cstest::contains(err, why)) << bad << ": " << err;
    ASSERT_LT(elapsed_ms(t), 4000) << bad << ": refused only after the rendezvous timeout";
  }
  std::string out, err;
  ASSERT_EQ(cstest::run_cli({"train", cfg, "--nproc", "2", "--listen", "0.0.0.0", "--quiet"}, &out, &err, 30000), 2)
      << err;
  ASSERT_TRUE(cstest::contains(err, "give no --listen")) << err;
}

// kill -9 of rank 0 mid-run: rank 1's next collective fails, it finds rank 0's lock free
// and summary.json still "running", and records the run as failed with the reason.
TEST_F(DistListen, killedRankZeroLeavesTheRunFailed) {
  json raw = cstest::tiny_config("char_lm", 1000000);
  raw["training"]["eval_every"] = 0;
  raw["training"]["checkpoint_every"] = 3;
  const std::string cfg = cstest::write_json_file("listen_kill0.json", raw);
  const std::string dir = cstest::temp_dir() + "/listen_kill0", master = "127.0.0.1:" + port(5);
  cstest::Process r0, r1;
  ASSERT_TRUE(r0.start(worker(cfg, dir, 0, master, "10"))) << r0.err();
  ASSERT_TRUE(r1.start(worker(cfg, dir, 1, master, "10"))) << r1.err();
  const auto t = std::chrono::steady_clock::now();
  // Until a checkpoint is complete: last.pt and its step_N.pt (written one after the other; a kill
  // between the two left no step_N.pt, and .back() of the empty list below read before the vector).
  auto checkpointed = [&] {
    return std::filesystem::exists(dir + "/checkpoints/last.pt") && !RunStore(dir).checkpoint_steps().empty();
  };
  while (elapsed_ms(t) < 60000 && r0.running() && !checkpointed()) r0.wait(50);
  ASSERT_TRUE(checkpointed()) << r0.err();
  ASSERT_EQ(RunStore(dir).read_summary().status, std::string("running"));
  ::kill(r0.pid(), SIGKILL);
  r0.wait(5000);
  ASSERT_TRUE(r1.wait(40000)) << "rank 1 kept waiting for the killed rank 0";
  ASSERT_EQ(r1.exit_code(), 1) << r1.err();
  const auto s = RunStore(dir).read_summary();
  ASSERT_EQ(s.status, std::string("failed")) << r1.err();
  ASSERT_TRUE(cstest::contains(s.reason, "rank 0 ended without recording the end of the run") &&
              cstest::contains(s.reason, "rank 1 of 2"))
      << s.reason;
  ASSERT_TRUE(cstest::contains(cstest::read_text(dir + "/log.txt"), "rank 0 ended without recording"));
  // The run resumes as before (one process).
  std::string out, err;
  const std::vector<int64_t> steps = RunStore(dir).checkpoint_steps();
  ASSERT_FALSE(steps.empty());
  const int64_t last = steps.back();
  ASSERT_EQ(
      cstest::run_cli({"train", "--resume", dir, "--steps", std::to_string(last + 2), "--quiet"}, &out, &err, 120000),
      0)
      << err;
  ASSERT_EQ(RunStore(dir).read_summary().status, std::string("finished"));
}

}  // namespace test_dist_listen
