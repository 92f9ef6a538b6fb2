// The rendezvous store of a `--master HOST:PORT` run: a small key-value server that
// listens on exactly the address it is given (rank 0 runs it), and a c10d::Store
// client of it (every rank, rank 0 too) for ProcessGroupGloo / ProcessGroupNCCL.
//
// LibTorch's own c10d::TCPStore cannot be told where to listen (TCPStoreOptions has
// no bind address: its server always listens on every interface), which exposes an
// unauthenticated store to the network even for a loopback master. This store binds
// only the addresses of `listen_host` (a loopback master: loopback only).
//
// Protocol (TCP, both directions): a frame is a 4-byte big-endian length followed by
// that many bytes. Request: one op byte, then its arguments; strings and values are a
// 4-byte length and the bytes, integers 8 bytes big-endian. Response: one status byte
// (0 ok, 1 timed out, 2 refused) and the result. Blocking requests (get, wait) carry
// their timeout in milliseconds; the server answers "timed out" when it passes, so a
// connection never gets out of step. Only this file's client speaks it.
//
// Included by dist.cpp and the tests only (it pulls in c10d's Store.hpp).
#pragma once
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace cs {

// "HOST:PORT" or "[IPV6]:PORT" as given to --master. Throws cs::UserError naming
// `flag` for anything else (a missing or non-numeric port, a port outside 1..65535,
// an IPv6 address without brackets).
struct HostPort {
  std::string host;  // without brackets
  int port = 0;
};
HostPort parse_host_port(const std::string& s, const std::string& flag);
// A --listen address: a host name, an IPv4 address or an IPv6 address (brackets optional).
std::string parse_listen_host(const std::string& s);
// "host:port", with brackets around an IPv6 host.
std::string format_host_port(const std::string& host, int port);

// The server: a thread that polls its listening sockets and clients. The constructor
// binds every address `listen_host` resolves to (numeric addresses as they are; "::"
// also accepts IPv4 unless the system says otherwise; "0.0.0.0" is IPv4 only) and
// throws cs::DistError when none can be bound. `port` 0 picks a free port (tests).
class StoreServer {
 public:
  StoreServer(const std::string& listen_host, int port);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;
  int port() const;
  // The addresses actually bound, as "addr:port" ("[addr]:port" for IPv6).
  std::vector<std::string> bound() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A client of a StoreServer at host:port. Connecting retries until `timeout` (the
// server may start after the client); every operation then waits at most the store's
// timeout (setTimeout). Failures throw cs::DistError. `server` (rank 0) is kept alive
// as long as this client and its clones.
c10::intrusive_ptr<c10d::Store> connect_store(const std::string& host, int port, std::chrono::milliseconds timeout,
                                              std::shared_ptr<StoreServer> server = nullptr);

}  // namespace cs
