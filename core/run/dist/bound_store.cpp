#include "dist/bound_store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <torch/version.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "dist/dist.h"
#include "util/error.h"

namespace cs {

namespace bound_store_detail {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<uint8_t>;

enum Op : uint8_t { kSet = 1, kGet, kAdd, kCompareSet, kDelete, kCheck, kNumKeys, kWait };
enum Status : uint8_t { kOk = 0, kTimedOut = 1, kRefused = 2 };
constexpr uint32_t kMaxFrame = 256u << 20;  // a store holds addresses and ids, not tensors

// ---- encoding -------------------------------------------------------------------------
void put_u32(std::string& o, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) o.push_back(static_cast<char>((v >> s) & 0xff));
}
void put_i64(std::string& o, int64_t v) {
  const uint64_t u = static_cast<uint64_t>(v);
  for (int s = 56; s >= 0; s -= 8) o.push_back(static_cast<char>((u >> s) & 0xff));
}
void put_bytes(std::string& o, const void* p, size_t n) {
  put_u32(o, static_cast<uint32_t>(n));
  o.append(static_cast<const char*>(p), n);
}
void put_str(std::string& o, const std::string& s) { put_bytes(o, s.data(), s.size()); }
void put_vec(std::string& o, const Bytes& v) { put_bytes(o, v.data(), v.size()); }

// Reads a request or response body; any read past the end marks it bad.
struct Reader {
  const uint8_t* p;
  size_t n, at = 0;
  bool bad = false;
  bool need(size_t k) {
    if (bad || n - at < k) bad = true;
    return !bad;
  }
  uint8_t u8() { return need(1) ? p[at++] : 0; }
  uint32_t u32() {
    if (!need(4)) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = (v << 8) | p[at++];
    return v;
  }
  int64_t i64() {
    if (!need(8)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | p[at++];
    return static_cast<int64_t>(v);
  }
  Bytes vec() {
    const uint32_t k = u32();
    if (!need(k)) return {};
    Bytes v(p + at, p + at + k);
    at += k;
    return v;
  }
  std::string str() {
    Bytes v = vec();
    return std::string(v.begin(), v.end());
  }
};

std::string frame(const std::string& body) {
  std::string f;
  f.reserve(body.size() + 4);
  put_u32(f, static_cast<uint32_t>(body.size()));
  return f + body;
}

std::string errno_text(int e) { return std::strerror(e); }

std::string ms_text(std::chrono::milliseconds ms) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(ms.count()) / 1000.0);
  return buf;
}

std::string sockaddr_text(const sockaddr* sa) {
  char host[INET6_ADDRSTRLEN] = {0};
  int port = 0;
  if (sa->sa_family == AF_INET) {
    auto* a = reinterpret_cast<const sockaddr_in*>(sa);
    ::inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
    port = ntohs(a->sin_port);
  } else if (sa->sa_family == AF_INET6) {
    auto* a = reinterpret_cast<const sockaddr_in6*>(sa);
    ::inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
    port = ntohs(a->sin6_port);
  }
  return format_host_port(host, port);
}

bool is_ipv6_literal(const std::string& h) {
  in6_addr a;
  return ::inet_pton(AF_INET6, h.c_str(), &a) == 1;
}

struct AddrList {
  addrinfo* head = nullptr;
  ~AddrList() {
    if (head) ::freeaddrinfo(head);
  }
};

// getaddrinfo for TCP; "" on success, else the resolver's message.
std::string resolve(const std::string& host, int port, bool passive, AddrList& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  const std::string service = std::to_string(port);
  const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &out.head);
  if (rc != 0) return rc == EAI_SYSTEM ? errno_text(errno) : ::gai_strerror(rc);
  return "";
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace bound_store_detail

// ---- addresses -------------------------------------------------------------------------

std::string format_host_port(const std::string& host, int port) {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

HostPort parse_host_port(const std::string& s, const std::string& flag) {
  using bound_store_detail::is_ipv6_literal;
  const std::string form = flag + " expects HOST:PORT or [IPV6]:PORT (got '" + s + "')";
  HostPort hp;
  std::string port;
  if (!s.empty() && s[0] == '[') {
    const auto close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':') throw UserError(form);
    hp.host = s.substr(1, close - 1);
    port = s.substr(close + 2);
    if (!is_ipv6_literal(hp.host))
      throw UserError(flag + ": '" + hp.host + "' in brackets is not an IPv6 address (got '" + s + "')");
  } else {
    const auto colon = s.rfind(':');
    if (colon == std::string::npos) throw UserError(form);
    hp.host = s.substr(0, colon);
    port = s.substr(colon + 1);
    if (hp.host.find(':') != std::string::npos)
      throw UserError(flag + ": an IPv6 address goes in brackets, e.g. [" + hp.host + "]:" + port + " (got '" + s +
                      "')");
  }
  if (hp.host.empty()) throw UserError(form);
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) digits = digits && c >= '0' && c <= '9';
  const long v = digits ? std::stol(port) : 0;
  if (!digits || v < 1 || v > 65535)
    throw UserError(flag + ": '" + port + "' is not a port (a number from 1 to 65535; got '" + s + "')");
  hp.port = static_cast<int>(v);
  return hp;
}

std::string parse_listen_host(const std::string& s) {
  using bound_store_detail::is_ipv6_literal;
  std::string h = s;
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty())
    throw UserError("--listen expects an address or host name (e.g. 127.0.0.1, ::1, 0.0.0.0, ::; got '" + s + "')");
  for (char c : h)
    if (static_cast<unsigned char>(c) <= ' ' || c == '[' || c == ']' || c == '/')
      throw UserError("--listen expects an address or host name without a port (got '" + s + "')");
  if (h.find(':') != std::string::npos && !is_ipv6_literal(h))
    throw UserError("--listen expects an address without a port; '" + s +
                    "' is not an IPv6 address (the port is --master's)");
  return h;
}

// ---- server ----------------------------------------------------------------------------

namespace bound_store_detail {

struct ServerImpl {
  struct Conn {
    int fd = -1;
    std::string in, out;
    // A blocking request (get, wait) parked until its keys exist or its deadline passes.
    bool parked = false;
    Op op = kGet;
    std::vector<std::string> keys;
    Clock::time_point deadline = Clock::time_point::max();
  };
  std::vector<int> listeners;
  std::vector<std::string> bound;
  int port = 0;
  int wake[2] = {-1, -1};
  std::thread thread;
  std::map<std::string, Bytes> data;
  std::map<int, Conn> conns;  // by fd

  ~ServerImpl() {
    for (auto& [fd, c] : conns) ::close(fd);
    for (int fd : listeners) ::close(fd);
    for (int fd : wake)
      if (fd >= 0) ::close(fd);
  }

  bool has_all(const std::vector<std::string>& keys) const {
    for (auto& k : keys)
      if (!data.count(k)) return false;
    return true;
  }

  static void reply(Conn& c, Status st, const std::string& payload = "") {
    std::string body(1, static_cast<char>(st));
    body += payload;
    c.out += frame(body);
  }

  // Answer a parked request whose keys now exist (or whose time is up).
  void settle(Conn& c, Clock::time_point now) {
    if (!c.parked) return;
    if (has_all(c.keys)) {
      std::string p;
      if (c.op == kGet) put_vec(p, data[c.keys[0]]);
      reply(c, kOk, p);
      c.parked = false;
    } else if (now >= c.deadline) {
      reply(c, kTimedOut);
      c.parked = false;
    }
  }

  // One request; false: a malformed request (the connection is closed).
  bool handle(Conn& c, const std::string& body) {
    Reader r{reinterpret_cast<const uint8_t*>(body.data()), body.size()};
    const Op op = static_cast<Op>(r.u8());
    std::string p;
    switch (op) {
      case kSet: {
        const std::string k = r.str();
        Bytes v = r.vec();
        if (r.bad) return false;
        data[k] = std::move(v);
        reply(c, kOk);
        return true;
      }
      case kGet:
      case kWait: {
        std::vector<std::string> keys;
        const uint32_t n = op == kGet ? 1 : r.u32();
        for (uint32_t i = 0; i < n && !r.bad; ++i) keys.push_back(r.str());
        const int64_t ms = r.i64();
        if (r.bad || ms < 0) return false;
        c.parked = true;
        c.op = op;
        c.keys = std::move(keys);
        c.deadline = ms == 0 ? Clock::time_point::max() : Clock::now() + std::chrono::milliseconds(ms);
        settle(c, Clock::now());
        return true;
      }
      case kAdd: {
        const std::string k = r.str();
        const int64_t d = r.i64();
        if (r.bad) return false;
        int64_t v = 0;
        auto it = data.find(k);
        if (it != data.end()) {
          try {
            v = std::stoll(std::string(it->second.begin(), it->second.end()));
          } catch (...) {
            reply(c, kRefused, "the value of '" + k + "' is not a number");
            return true;
          }
        }
        v += d;
        const std::string text = std::to_string(v);
        data[k] = Bytes(text.begin(), text.end());
        put_i64(p, v);
        reply(c, kOk, p);
        return true;
      }
      case kCompareSet: {
        const std::string k = r.str();
        Bytes expected = r.vec(), desired = r.vec();
        if (r.bad) return false;
        auto it = data.find(k);
        if (it == data.end()) {
          if (expected.empty()) {
            data[k] = desired;
            put_vec(p, desired);
          } else {
            put_vec(p, expected);
          }
        } else if (it->second == expected) {
          it->second = desired;
          put_vec(p, desired);
        } else {
          put_vec(p, it->second);
        }
        reply(c, kOk, p);
        return true;
      }
      case kDelete: {
        const std::string k = r.str();
        if (r.bad) return false;
        p.push_back(data.erase(k) ? 1 : 0);
        reply(c, kOk, p);
        return true;
      }
      case kCheck: {
        const uint32_t n = r.u32();
        std::vector<std::string> keys;
        for (uint32_t i = 0; i < n && !r.bad; ++i) keys.push_back(r.str());
        if (r.bad) return false;
        p.push_back(has_all(keys) ? 1 : 0);
        reply(c, kOk, p);
        return true;
      }
      case kNumKeys:
        put_i64(p, static_cast<int64_t>(data.size()));
        reply(c, kOk, p);
        return true;
    }
    return false;
  }

  // Parse and handle the complete frames of `c` (one at a time: a parked request holds the rest).
  bool consume(Conn& c) {
    while (!c.parked && c.in.size() >= 4) {
      Reader r{reinterpret_cast<const uint8_t*>(c.in.data()), 4};
      const uint32_t n = r.u32();
      if (n == 0 || n > kMaxFrame) return false;
      if (c.in.size() < 4 + static_cast<size_t>(n)) break;
      const std::string body = c.in.substr(4, n);
      c.in.erase(0, 4 + static_cast<size_t>(n));
      if (!handle(c, body)) return false;
    }
    return true;
  }

  void loop() {
    std::vector<pollfd> fds;
    char buf[65536];
    for (;;) {
      fds.clear();
      fds.push_back({wake[0], POLLIN, 0});
      for (int fd : listeners) fds.push_back({fd, POLLIN, 0});
      Clock::time_point next = Clock::time_point::max();
      for (auto& [fd, c] : conns) {
        fds.push_back({fd, static_cast<short>(POLLIN | (c.out.empty() ? 0 : POLLOUT)), 0});
        if (c.parked) next = std::min(next, c.deadline);
      }
      int wait_ms = -1;
      if (next != Clock::time_point::max()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count() + 1;
        wait_ms = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left, 60000)));
      }
      const int rc = ::poll(fds.data(), fds.size(), wait_ms);
      if (rc < 0 && errno != EINTR) return;
      if (fds[0].revents) return;  // the destructor asked us to stop
      std::vector<int> dead;
      for (size_t i = 1; i < fds.size(); ++i) {
        if (!fds[i].revents) continue;
        const int fd = fds[i].fd;
        if (i <= listeners.size()) {
          const int cfd = ::accept4(fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
          if (cfd >= 0) {
            set_nodelay(cfd);
            conns[cfd].fd = cfd;
          }
          continue;
        }
        Conn& c = conns[fd];
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
          const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
          if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            dead.push_back(fd);  // the client went away: its parked request goes with it
            continue;
          }
          if (n > 0) {
            c.in.append(buf, static_cast<size_t>(n));
            if (!consume(c)) {
              dead.push_back(fd);
              continue;
            }
          }
        }
      }
      const auto now = Clock::now();
      // A set/add/compare-set may have completed parked requests; deadlines may have passed.
      for (auto& [fd, c] : conns) {
        settle(c, now);
        if (!c.parked && !consume(c)) dead.push_back(fd);
        if (!c.parked) settle(c, now);
      }
      for (auto& [fd, c] : conns) {
        while (!c.out.empty()) {
          const ssize_t n = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
          if (n > 0) {
            c.out.erase(0, static_cast<size_t>(n));
            continue;
          }
          if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
          dead.push_back(fd);
          break;
        }
      }
      for (int fd : dead) {
        if (!conns.count(fd)) continue;
        ::close(fd);
        conns.erase(fd);
      }
    }
  }
};

}  // namespace bound_store_detail

struct StoreServer::Impl : bound_store_detail::ServerImpl {};

StoreServer::StoreServer(const std::string& listen_host, int port) : impl_(std::make_unique<Impl>()) {
  using namespace bound_store_detail;
  const std::string where = format_host_port(listen_host, port);
  AddrList addrs;
  const std::string err = resolve(listen_host, port, true, addrs);
  if (!err.empty()) throw DistError("cannot listen on " + where + " for the rendezvous store: " + err + " (--listen)");
  std::vector<std::string> seen;
  std::string failure;
  int bound_port = port;
  for (addrinfo* a = addrs.head; a; a = a->ai_next) {
    if (a->ai_family != AF_INET && a->ai_family != AF_INET6) continue;
    std::string key(reinterpret_cast<const char*>(a->ai_addr), a->ai_addrlen);
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    sockaddr_storage ss{};
    std::memcpy(&ss, a->ai_addr, a->ai_addrlen);
    if (bound_port != port) {  // port 0: every address gets the port the first one was given
      if (ss.ss_family == AF_INET)
        reinterpret_cast<sockaddr_in*>(&ss)->sin_port = htons(static_cast<uint16_t>(bound_port));
      else reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port = htons(static_cast<uint16_t>(bound_port));
    }
    const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      failure = errno_text(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (a->ai_family == AF_INET6) {
      // A specific IPv6 address is IPv6 only; the unspecified "::" keeps the system's
      // dual-stack default (IPv4 too, as "everywhere" suggests).
      const auto* a6 = reinterpret_cast<const sockaddr_in6*>(a->ai_addr);
      if (!IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr)) ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&ss), a->ai_addrlen) != 0 || ::listen(fd, 128) != 0) {
      const int e = errno;
      ::close(fd);
      // An address family this machine lacks (a name that also resolves to ::1 without IPv6)
      // is skipped; any other failure (the port in use, ...) is fatal.
      if (e == EADDRNOTAVAIL || e == EAFNOSUPPORT) {
        if (failure.empty()) failure = sockaddr_text(reinterpret_cast<sockaddr*>(&ss)) + ": " + errno_text(e);
        continue;
      }
      throw DistError("cannot listen on " + sockaddr_text(reinterpret_cast<sockaddr*>(&ss)) +
                      " for the rendezvous store: " + errno_text(e) +
                      (e == EADDRINUSE
                           ? " (another program, or an earlier run, uses this port: choose another --master port)"
                           : ""));
    }
    sockaddr_storage got{};
    socklen_t len = sizeof got;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&got), &len);
    bound_port = ntohs(got.ss_family == AF_INET ? reinterpret_cast<sockaddr_in*>(&got)->sin_port
                                                : reinterpret_cast<sockaddr_in6*>(&got)->sin6_port);
    impl_->listeners.push_back(fd);
    impl_->bound.push_back(sockaddr_text(reinterpret_cast<sockaddr*>(&got)));
  }
  if (impl_->listeners.empty())
    throw DistError("cannot listen on " + where + " for the rendezvous store: " +
                    (failure.empty() ? std::string("no IPv4 or IPv6 address") : failure) + " (--listen)");
  impl_->port = bound_port;
  if (::pipe2(impl_->wake, O_CLOEXEC | O_NONBLOCK) != 0)
    throw DistError("cannot start the rendezvous store: " + errno_text(errno));
  impl_->thread = std::thread([this] { impl_->loop(); });
}

StoreServer::~StoreServer() {
  if (impl_->thread.joinable()) {
    const char b = 1;
    ssize_t n = ::write(impl_->wake[1], &b, 1);
    (void)n;
    impl_->thread.join();
  }
}

int StoreServer::port() const { return impl_->port; }
std::vector<std::string> StoreServer::bound() const { return impl_->bound; }

// ---- client ----------------------------------------------------------------------------

namespace bound_store_detail {

class BoundStoreClient : public c10d::Store {
 public:
  BoundStoreClient(std::string host, int port, std::chrono::milliseconds timeout, std::shared_ptr<StoreServer> server)
      : Store(timeout), host_(std::move(host)), port_(port), server_(std::move(server)) {
    where_ = format_host_port(host_, port_);
    connect(timeout);
  }
  ~BoundStoreClient() override {
    if (fd_ >= 0) ::close(fd_);
  }

#if TORCH_VERSION_MAJOR >= 2
  // A second connection to the same server (LibTorch 2.x asks for one per thread that
  // uses the store; the method is pure virtual from 2.5 on, absent before).
#if defined(__clang__)
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Winconsistent-missing-override"
#endif
  c10::intrusive_ptr<c10d::Store> clone() {
    return c10::make_intrusive<BoundStoreClient>(host_, port_, timeout_, server_);
  }
#if defined(__clang__)
#pragma clang diagnostic pop
#endif
#endif

  void set(const std::string& key, const Bytes& value) override {
    std::string b(1, static_cast<char>(kSet));
    put_str(b, key);
    put_vec(b, value);
    call(b, "set '" + key + "'", timeout_);
  }

  Bytes get(const std::string& key) override {
    std::string b(1, static_cast<char>(kGet));
    put_str(b, key);
    put_i64(b, timeout_.count());
    return read(call(b, "get '" + key + "'", timeout_, true)).vec();
  }

  int64_t add(const std::string& key, int64_t value) override {
    std::string b(1, static_cast<char>(kAdd));
    put_str(b, key);
    put_i64(b, value);
    return read(call(b, "add to '" + key + "'", timeout_)).i64();
  }

  Bytes compareSet(const std::string& key, const Bytes& expected, const Bytes& desired) override {
    std::string b(1, static_cast<char>(kCompareSet));
    put_str(b, key);
    put_vec(b, expected);
    put_vec(b, desired);
    return read(call(b, "compare-set '" + key + "'", timeout_)).vec();
  }

  bool deleteKey(const std::string& key) override {
    std::string b(1, static_cast<char>(kDelete));
    put_str(b, key);
    return read(call(b, "delete '" + key + "'", timeout_)).u8() != 0;
  }

  bool check(const std::vector<std::string>& keys) override {
    std::string b(1, static_cast<char>(kCheck));
    put_u32(b, static_cast<uint32_t>(keys.size()));
    for (auto& k : keys) put_str(b, k);
    return read(call(b, "check", timeout_)).u8() != 0;
  }

  int64_t getNumKeys() override {
    std::string b(1, static_cast<char>(kNumKeys));
    return read(call(b, "count the keys", timeout_)).i64();
  }

  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }

  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    std::string b(1, static_cast<char>(kWait));
    put_u32(b, static_cast<uint32_t>(keys.size()));
    for (auto& k : keys) put_str(b, k);
    put_i64(b, std::max<int64_t>(0, timeout.count()));
    std::string names;
    for (auto& k : keys) names += (names.empty() ? "'" : ", '") + k + "'";
    call(b, "wait for " + names, timeout, true);
  }

 private:
  std::string host_, where_;
  int port_;
  std::shared_ptr<StoreServer> server_;
  std::mutex mu_;
  int fd_ = -1;
  std::string in_;

  // A reader of a response payload; it owns its bytes.
  struct Payload {
    Bytes bytes;
    Reader r;
    explicit Payload(Bytes b) : bytes(std::move(b)), r{bytes.data(), bytes.size()} {}
    Payload(const Payload&) = delete;  // `r` points into `bytes`
    Bytes vec() { return r.vec(); }
    int64_t i64() { return r.i64(); }
    uint8_t u8() { return r.u8(); }
  };
  static Payload read(Bytes b) { return Payload(std::move(b)); }

  [[noreturn]] void fail(const std::string& what) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    throw DistError(what);
  }

  // Connect, retrying until `timeout` (rank 0's server may not be up yet).
  void connect(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    std::string last = "no address";
    for (;;) {
      AddrList addrs;
      const std::string err = resolve(host_, port_, false, addrs);
      if (!err.empty()) last = "cannot resolve '" + host_ + "': " + err;
      for (addrinfo* a = addrs.head; a; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
          set_nodelay(fd);
          fd_ = fd;
          return;
        }
        last = errno_text(errno);
        ::close(fd);
      }
      if (Clock::now() >= deadline)
        throw DistError("cannot connect to the rendezvous store at " + where_ + " within " + ms_text(timeout) +
                        " s (--dist-timeout): " + last + "; is rank 0 running, with the same --master?");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // retry interval while rank 0 starts
    }
  }

  // Send one request and read its response; `blocking` requests carry their own
  // timeout, which the server enforces (the client allows a few seconds more).
  Bytes call(const std::string& body, const std::string& what, std::chrono::milliseconds timeout,
             bool blocking = false) {
    std::lock_guard<std::mutex> g(mu_);
    if (fd_ < 0)
      throw DistError("the connection to the rendezvous store at " + where_ + " was lost earlier; cannot " + what);
    const std::string f = frame(body);
    size_t sent = 0;
    while (sent < f.size()) {
      const ssize_t n = ::send(fd_, f.data() + sent, f.size() - sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        fail("the rendezvous store at " + where_ + " closed the connection (rank 0 has probably stopped): cannot " +
             what + ": " + errno_text(errno));
      sent += static_cast<size_t>(n);
    }
    const bool forever = timeout.count() <= 0;
    const auto deadline = forever
                              ? Clock::time_point::max()
                              : Clock::now() + timeout + (blocking ? std::chrono::seconds(5) : std::chrono::seconds(0));
    char buf[65536];
    for (;;) {
      if (in_.size() >= 4) {
        Reader h{reinterpret_cast<const uint8_t*>(in_.data()), 4};
        const uint32_t n = h.u32();
        if (n == 0 || n > kMaxFrame)
          fail("the rendezvous store at " + where_ + " sent a malformed response to " + what);
        if (in_.size() >= 4 + static_cast<size_t>(n)) {
          Bytes resp(in_.begin() + 4, in_.begin() + 4 + n);
          in_.erase(0, 4 + static_cast<size_t>(n));
          Reader r{resp.data(), resp.size()};
          const uint8_t st = r.u8();
          if (st == kTimedOut)
            throw DistError("timed out after " + ms_text(timeout) + " s (--dist-timeout) in the rendezvous store at " +
                            where_ + ": " + what + " (another worker has not arrived or has stopped)");
          if (st != kOk) throw DistError("the rendezvous store at " + where_ + " refused to " + what + ": " + r.str());
          return Bytes(resp.begin() + 1, resp.end());
        }
      }
      int wait_ms = -1;
      if (!forever) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0)
          fail("no answer from the rendezvous store at " + where_ + " within " + ms_text(timeout) +
               " s (--dist-timeout): cannot " + what);
        wait_ms = static_cast<int>(std::min<int64_t>(left, 60000));
      }
      pollfd p{fd_, POLLIN, 0};
      const int rc = ::poll(&p, 1, wait_ms);
      if (rc < 0 && errno != EINTR)
        fail("cannot read from the rendezvous store at " + where_ + ": " + errno_text(errno));
      if (rc <= 0) continue;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0)
        fail("the rendezvous store at " + where_ + " closed the connection (rank 0 has probably stopped): cannot " +
             what + (n < 0 ? ": " + errno_text(errno) : std::string()));
      in_.append(buf, static_cast<size_t>(n));
    }
  }
};

}  // namespace bound_store_detail

c10::intrusive_ptr<c10d::Store> connect_store(const std::string& host, int port, std::chrono::milliseconds timeout,
                                              std::shared_ptr<StoreServer> server) {
  return c10::make_intrusive<bound_store_detail::BoundStoreClient>(host, port, timeout, std::move(server));
}

}  // namespace cs
