// The rendezvous store of a --master run (core/run/dist/bound_store.h): the c10d::Store
// operations Gloo and NCCL use, blocking gets and waits with their timeouts, clients
// that vanish, a server that vanishes, the addresses it binds, and the parsing of
// --master / --listen / --dist-timeout. No process group here (no Gloo): these run
// under the sanitizers too.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <limits>
#include <thread>

#include "dist/bound_store.h"
#include "dist/dist.h"
#include "dist_fixture.h"
#include "harness.h"
#include "util/error.h"

namespace test_bound_store {  // this file's own names in a unity build (tests/README.md)

using namespace cs;
using std::chrono::milliseconds;

namespace {

std::vector<uint8_t> bytes(const std::string& s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& v) { return {v.begin(), v.end()}; }

int64_t ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - t0).count();
}

// The DistError message of `f`, "" when it throws nothing.
template <class F>
std::string dist_error(F&& f) {
  try {
    f();
  } catch (const DistError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(BoundStore, operationsOfTheStoreInterface) {
  auto server = std::make_shared<StoreServer>("127.0.0.1", 0);
  auto a = connect_store("127.0.0.1", server->port(), milliseconds(5000), server);
  auto b = connect_store("127.0.0.1", server->port(), milliseconds(5000));
  a->set("k", bytes("v1"));
  ASSERT_EQ(text(b->get("k")), "v1");
  b->set("k", bytes(""));  // an empty value is a value
  ASSERT_EQ(text(a->get("k")), "");
  ASSERT_EQ(a->add("n", 3), 3);
  ASSERT_EQ(b->add("n", -5), -2);
  ASSERT_EQ(text(a->get("n")), "-2");
  ASSERT_TRUE(a->check({"k", "n"}));
  ASSERT_FALSE(a->check({"k", "missing"}));
  ASSERT_EQ(a->getNumKeys(), 2);
  // compareSet: a missing key is set when the expected value is empty; otherwise the current value comes back.
  ASSERT_EQ(text(a->compareSet("c", {}, bytes("x"))), "x");
  ASSERT_EQ(text(a->compareSet("c", bytes("wrong"), bytes("y"))), "x");
  ASSERT_EQ(text(a->compareSet("c", bytes("x"), bytes("y"))), "y");
  ASSERT_EQ(text(b->get("c")), "y");
  ASSERT_EQ(text(a->compareSet("absent", bytes("e"), bytes("z"))), "e");
  ASSERT_FALSE(a->check({"absent"}));
  ASSERT_TRUE(a->deleteKey("c"));
  ASSERT_FALSE(a->deleteKey("c"));
  ASSERT_EQ(a->getNumKeys(), 2);
  a->wait({"k", "n"});                   // present: returns at once
  std::vector<uint8_t> big(3 << 20, 7);  // a few MB pass in pieces
  a->set("big", big);
  ASSERT_TRUE(b->get("big") == big);
}

TEST(BoundStore, getAndWaitBlockUntilTheKeyIsSet) {
  auto server = std::make_shared<StoreServer>("127.0.0.1", 0);
  auto a = connect_store("127.0.0.1", server->port(), milliseconds(10000), server);
  auto b = connect_store("127.0.0.1", server->port(), milliseconds(10000));
  const auto t0 = std::chrono::steady_clock::now();
  std::thread setter([&] {
    std::this_thread::sleep_for(milliseconds(300));
    b->set("late", bytes("here"));
    std::this_thread::sleep_for(milliseconds(200));
    b->set("later", bytes("too"));
  });
  ASSERT_EQ(text(a->get("late")), "here");
  ASSERT_GE(ms_since(t0), 250);
  a->wait({"late", "later"}, milliseconds(5000));
  ASSERT_GE(ms_since(t0), 450);
  setter.join();
}

TEST(BoundStore, timeoutsAreClearDistErrors) {
  auto server = std::make_shared<StoreServer>("127.0.0.1", 0);
  auto a = connect_store("127.0.0.1", server->port(), milliseconds(5000), server);
  a->setTimeout(milliseconds(300));
  auto t0 = std::chrono::steady_clock::now();
  std::string err = dist_error([&] { a->get("never"); });
  ASSERT_TRUE(cstest::contains(err, "timed out after 0.3 s (--dist-timeout)") && cstest::contains(err, "get 'never'"))
      << err;
  ASSERT_LT(ms_since(t0), 3000);
  t0 = std::chrono::steady_clock::now();
  err = dist_error([&] { a->wait({"x", "y"}, milliseconds(200)); });
  ASSERT_TRUE(cstest::contains(err, "timed out after 0.2 s") && cstest::contains(err, "'x', 'y'")) << err;
  ASSERT_LT(ms_since(t0), 3000);
  // The connection stays in step after a timeout.
  a->set("x", bytes("1"));
  ASSERT_EQ(text(a->get("x")), "1");
}

TEST(BoundStore, clientsThatVanishOrMisbehaveDoNotStopTheServer) {
  auto server = std::make_shared<StoreServer>("127.0.0.1", 0);
  const int port = server->port();
  auto raw = [&](const std::string& bytes_out) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
    if (!bytes_out.empty()) {
      EXPECT_EQ(::send(fd, bytes_out.data(), bytes_out.size(), MSG_NOSIGNAL), ssize_t(bytes_out.size()));
    }
    return fd;
  };
  // A client that sends half a frame and goes; one that announces a 4 GB frame; one that
  // sends an unknown operation (a client parked in a wait that goes: the next test).
  ::close(raw(std::string("\x00\x00\x00\x10\x01", 5)));
  const int huge = raw(std::string("\xff\xff\xff\xff", 4));
  const int unknown = raw(std::string("\x00\x00\x00\x01\x63", 5));
  std::this_thread::sleep_for(milliseconds(100));
  char c = 0;
  ASSERT_EQ(::recv(huge, &c, 1, 0), 0) << "a frame over the limit closes that connection";
  ASSERT_EQ(::recv(unknown, &c, 1, 0), 0) << "an unknown operation closes that connection";
  ::close(huge);
  ::close(unknown);
  auto ok = connect_store("127.0.0.1", port, milliseconds(5000), server);
  ok->set("still", bytes("serving"));
  ASSERT_EQ(text(ok->get("still")), "serving");
  ok->setTimeout(milliseconds(200));
  ASSERT_FALSE(dist_error([&] { ok->get("never-set"); }).empty());
}

TEST(BoundStore, aClientThatDisconnectsWhileWaiting) {
  auto server = std::make_shared<StoreServer>("127.0.0.1", 0);
  const int port = server->port();
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  // wait(["w"], no timeout), then the client goes away before "w" exists.
  const std::string req("\x00\x00\x00\x12\x08\x00\x00\x00\x01\x00\x00\x00\x01w\x00\x00\x00\x00\x00\x00\x00\x00", 22);
  ASSERT_EQ(::send(fd, req.data(), req.size(), MSG_NOSIGNAL), ssize_t(req.size()));
  std::this_thread::sleep_for(milliseconds(100));
  ::close(fd);
  std::this_thread::sleep_for(milliseconds(100));
  auto ok = connect_store("127.0.0.1", port, milliseconds(5000), server);
  ok->set("w", bytes("1"));  // answering the vanished waiter must not break anything
  ASSERT_EQ(text(ok->get("w")), "1");
  ASSERT_EQ(ok->getNumKeys(), 1);
}

TEST(BoundStore, theServerGoingAwayIsADistError) {
  auto server = std::make_shared<StoreServer>("127.0.0.1", 0);
  auto c = connect_store("127.0.0.1", server->port(), milliseconds(5000));
  c->set("a", bytes("1"));
  c->setTimeout(milliseconds(30000));
  std::thread killer([&] {
    std::this_thread::sleep_for(milliseconds(200));
    server.reset();  // rank 0 gone while a client waits
  });
  const auto t0 = std::chrono::steady_clock::now();
  const std::string err = dist_error([&] { c->get("b"); });
  killer.join();
  ASSERT_TRUE(cstest::contains(err, "closed the connection (rank 0 has probably stopped)")) << err;
  ASSERT_LT(ms_since(t0), 10000);
  ASSERT_TRUE(cstest::contains(dist_error([&] { c->get("a"); }), "was lost earlier"));
}

TEST(BoundStore, connectRetriesUntilTheServerStartsThenTimesOut) {
  int port = 0;
  {
    StoreServer probe("127.0.0.1", 0);
    port = probe.port();
  }
  std::shared_ptr<StoreServer> server;
  std::thread starter([&] {
    std::this_thread::sleep_for(milliseconds(400));
    server = std::make_shared<StoreServer>("127.0.0.1", port);
  });
  auto c = connect_store("127.0.0.1", port, milliseconds(10000));  // before the server exists
  starter.join();
  c->set("up", bytes("1"));
  ASSERT_EQ(text(c->get("up")), "1");
  c.reset();
  server.reset();
  const auto t0 = std::chrono::steady_clock::now();
  const std::string err = dist_error([&] { connect_store("127.0.0.1", port, milliseconds(500)); });
  ASSERT_TRUE(cstest::contains(
      err, "cannot connect to the rendezvous store at 127.0.0.1:" + std::to_string(port) + " within 0.5 s"))
      << err;
  ASSERT_LT(ms_since(t0), 5000);
}

TEST(BoundStore, bindsExactlyTheAddressItIsGiven) {
  StoreServer v4("127.0.0.1", 0);
  ASSERT_EQ(v4.bound(), std::vector<std::string>{"127.0.0.1:" + std::to_string(v4.port())});
  const std::string inuse = dist_error([&] { StoreServer again("127.0.0.1", v4.port()); });
  ASSERT_TRUE(cstest::contains(inuse, "cannot listen on 127.0.0.1:" + std::to_string(v4.port())) &&
              cstest::contains(inuse, "choose another --master port"))
      << inuse;
  if (!cstest::have_ipv6_loopback()) {
    // An IPv4-only machine (no ::1): the IPv6 address is refused with one message naming it.
    const std::string no6 = dist_error([&] { StoreServer v6("::1", 0); });
    ASSERT_TRUE(cstest::contains(no6, "cannot listen on [::1]:0")) << no6;
    return;
  }
  auto v6 = std::make_shared<StoreServer>("::1", 0);
  ASSERT_EQ(v6->bound(), std::vector<std::string>{"[::1]:" + std::to_string(v6->port())});
  auto c = connect_store("::1", v6->port(), milliseconds(5000), v6);
  c->set("six", bytes("6"));
  ASSERT_EQ(text(c->get("six")), "6");
}

TEST(BoundStore, masterAndListenAddressesAreParsedStrictly) {
  auto hp = parse_host_port("127.0.0.1:29500", "--master");
  ASSERT_EQ(hp.host, "127.0.0.1");
  ASSERT_EQ(hp.port, 29500);
  hp = parse_host_port("[::1]:65535", "--master");
  ASSERT_EQ(hp.host, "::1");
  ASSERT_EQ(hp.port, 65535);
  hp = parse_host_port("node-1.cluster:1", "--master");
  ASSERT_EQ(hp.host, "node-1.cluster");
  auto refused = [](const std::string& s) {
    try {
      parse_host_port(s, "--master");
    } catch (const UserError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  for (const char* bad :
       {"127.0.0.1:22x", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:+80", "127.0.0.1: 80", "127.0.0.1:", "127.0.0.1",
        ":29500", "[::1]", "[::1]29500", "[nothost]:1", "127.0.0.1:0x50", "127.0.0.1:000080"}) {
    const std::string e = refused(bad);
    ASSERT_TRUE(cstest::contains(e, "--master") && cstest::contains(e, bad)) << bad << " -> " << e;
  }
  ASSERT_TRUE(cstest::contains(refused("127.0.0.1:22x"), "'22x' is not a port"));
  ASSERT_TRUE(cstest::contains(refused("::1:29500"), "an IPv6 address goes in brackets, e.g. [::1]:29500"))
      << refused("::1:29500");
  ASSERT_EQ(parse_listen_host("0.0.0.0"), "0.0.0.0");
  ASSERT_EQ(parse_listen_host("::"), "::");
  ASSERT_EQ(parse_listen_host("[::1]"), "::1");
  for (const char* bad : {"", "127.0.0.1:29500", "[::1]:5", "a b"})
    ASSERT_THROW(parse_listen_host(bad), UserError) << bad;
}

TEST(BoundStore, distTimeoutIsFiniteFromOneSecondToSevenDays) {
  for (double ok : {1.0, 1.5, 60.0, kMaxDistTimeoutSeconds}) ASSERT_NO_THROW(check_dist_timeout(ok));
  for (double bad : {0.0, -1.0, 1e-9, 0.999, kMaxDistTimeoutSeconds + 1, 1e300, std::numeric_limits<double>::infinity(),
                     std::numeric_limits<double>::quiet_NaN()}) {
    try {
      check_dist_timeout(bad);
      FAIL() << bad;
    } catch (const UserError& e) {
      const std::string m = e.what();
      ASSERT_TRUE(cstest::contains(m, "--dist-timeout") && cstest::contains(m, "604800") &&
                  cstest::contains(m, "'" + seconds_text(bad) + "'"))
          << m;
    }
  }
  ASSERT_EQ(seconds_text(std::numeric_limits<double>::infinity()), "inf");
  ASSERT_EQ(seconds_text(60), "60");
}

}  // namespace test_bound_store
