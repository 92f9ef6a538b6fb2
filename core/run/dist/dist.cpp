#include "dist/dist.h"

// ProcessGroupGloo.hpp is compiled only under USE_C10D_GLOO (LibTorch's own build
// flag, not exported by TorchConfig.cmake). Debian's LibTorch is built with Gloo
// (libgloo-dev provides the headers, libtorch_cpu.so the symbols): enable it when
// the Gloo headers are present.
#if __has_include(<gloo/config.h>)
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#define CELLSCOPE_DEFINED_USE_C10D_GLOO
#endif
#define CELLSCOPE_HAVE_GLOO 1
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
// NCCL exists only in a CUDA LibTorch: core/CMakeLists.txt defines CELLSCOPE_WITH_NCCL
// (and USE_C10D_NCCL) when find_package(Torch) reports CUDA (CAFFE2_USE_CUDA).
#if defined(CELLSCOPE_WITH_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "dist/bound_store.h"
#include "util/error.h"
#include "util/text.h"

namespace cs {

using Clock = std::chrono::steady_clock;

bool nccl_available() {
#if defined(CELLSCOPE_WITH_NCCL)
  return true;
#else
  return false;
#endif
}

std::string seconds_text(double seconds) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", seconds);
  return buf;
}

void check_dist_timeout(double seconds, const std::string& given) {
  if (std::isfinite(seconds) && seconds >= kMinDistTimeoutSeconds && seconds <= kMaxDistTimeoutSeconds) return;
  throw UserError("--dist-timeout: expected a number of seconds from " + seconds_text(kMinDistTimeoutSeconds) +
                  " (the workers' start-up) to " + seconds_text(kMaxDistTimeoutSeconds) + " (7 days), got '" +
                  (given.empty() ? seconds_text(seconds) : given) + "'");
}

// Whether `host` names only loopback addresses here (a name in /etc/hosts such as
// Debian's "127.0.1.1 myhost" line): the store would be unreachable from other machines.
static bool dist_resolves_to_loopback_only(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return false;
  bool any = false, all_loopback = true;
  for (addrinfo* a = res; a; a = a->ai_next) {
    any = true;
    if (a->ai_family == AF_INET) {
      const auto* v4 = reinterpret_cast<const sockaddr_in*>(a->ai_addr);
      all_loopback = all_loopback && (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
    } else if (a->ai_family == AF_INET6) {
      all_loopback =
          all_loopback && IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr);
    }
  }
  ::freeaddrinfo(res);
  return any && all_loopback;
}

static bool dist_is_loopback_name(const std::string& h) {
  return h == "localhost" || h == "::1" || h.rfind("127.", 0) == 0;
}

// Run one collective; turn whatever c10d/Gloo throws into a DistError naming this rank.
template <class F>
static void collective(DistContext& d, const char* what, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    throw DistError("rank " + std::to_string(d.rank) + " of " + std::to_string(d.world) + ": " + what +
                    " failed; another worker has probably died or stopped responding (timeout " +
                    seconds_text(d.timeout_s) + " s, --dist-timeout): " + first_line(e.what()));
  }
}

std::unique_ptr<DistContext> init_dist(const DistOptions& o) {
  if (o.world < 1) throw UserError("--world-size must be >= 1 (got " + std::to_string(o.world) + ")");
  if (o.rank < 0 || o.rank >= o.world)
    throw UserError("--rank must be in [0, " + std::to_string(o.world - 1) + "] (got " + std::to_string(o.rank) + ")");
  check_dist_timeout(o.timeout_s);
  auto d = std::make_unique<DistContext>();
  d->rank = o.rank;
  d->world = o.world;
  d->timeout_s = o.timeout_s;
  d->bucket_bytes = std::max<int64_t>(o.bucket_bytes, 1024);
  d->device = o.device;
  std::string backend = o.backend;
  if (backend == "auto") backend = (o.device.is_cuda() && nccl_available()) ? "nccl" : "gloo";
  if (backend != "gloo" && backend != "nccl")
    throw UserError("--dist-backend must be gloo, nccl or auto (got '" + backend + "')");
  if (backend == "nccl" && !nccl_available())
    throw UserError("--dist-backend nccl: this LibTorch was built without NCCL (CPU build); use gloo");
  d->backend = backend;
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(o.timeout_s * 1000));
  std::string host = "127.0.0.1";
  try {
    if (!o.store_file.empty()) {
      d->store = c10::make_intrusive<c10d::FileStore>(o.store_file, o.world);
    } else if (!o.master.empty() && o.agent_store) {
      const HostPort hp = parse_host_port(o.master, o.master_from);
      host = hp.host;
      c10d::TCPStoreOptions so;
      so.port = static_cast<std::uint16_t>(hp.port);
      so.isServer = false;
      so.waitWorkers = false;
      so.timeout = timeout;
      auto tcp = c10::make_intrusive<c10d::TCPStore>(hp.host, so);
      d->store = c10::make_intrusive<c10d::PrefixStore>(o.store_prefix, tcp);
    } else if (!o.master.empty()) {
      const HostPort hp = parse_host_port(o.master, o.master_from);
      host = hp.host;
      // Rank 0 serves the store on exactly the --listen address (default: the master's
      // host, so a loopback master is reachable from this machine only); every rank,
      // rank 0 included, is a client of it.
      std::shared_ptr<StoreServer> server;
      if (o.rank == 0) {
        const std::string listen = o.listen.empty() ? hp.host : parse_listen_host(o.listen);
        if (o.listen.empty() && o.world > 1 && !dist_is_loopback_name(hp.host) &&
            dist_resolves_to_loopback_only(hp.host))
          std::cerr
              << "warning: the --master host '" << hp.host
              << "' resolves to a loopback address on this machine, so the rendezvous store listens there only and "
                 "workers on other machines cannot reach it; give --listen with this machine's address (or 0.0.0.0)\n";
        server = std::make_shared<StoreServer>(listen, hp.port);
      }
      d->store = connect_store(hp.host, hp.port, timeout, server);
    } else if (o.world > 1) {
      throw UserError("a data-parallel run needs --master HOST:PORT or a store file (or use --nproc N)");
    } else {
      return d;  // one process, no rendezvous: every collective is the identity (pg stays null)
    }
  } catch (const UserError&) {
    throw;
  } catch (const DistError& e) {
    throw DistError("rank " + std::to_string(o.rank) + ": " + e.what());
  } catch (const std::exception& e) {
    throw DistError("rank " + std::to_string(o.rank) + ": cannot reach the rendezvous store (" +
                    (o.store_file.empty() ? "--master " + o.master : "file " + o.store_file) +
                    "): " + first_line(e.what()));
  }
  d->store->setTimeout(timeout);
  try {
    if (backend == "gloo") {
#if defined(CELLSCOPE_HAVE_GLOO)
      auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
      // The address this rank's Gloo pairs listen on: GLOO_SOCKET_IFNAME (a network
      // interface) when set, loopback for a single-machine run, else this host's name.
      const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
      const bool local = !o.store_file.empty() || dist_is_loopback_name(host);
      if (ifname && *ifname) opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
      else if (local) opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
      else opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
      opts->threads = 2;
      d->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(d->store, o.rank, o.world, opts);
#else
      throw UserError("this LibTorch has no Gloo support (no gloo headers found at build time)");
#endif
    } else {
#if defined(CELLSCOPE_WITH_NCCL)
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = timeout;
      d->pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(d->store, o.rank, o.world, opts);
#endif
    }
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    // Most often a worker that never started (or was given another --world-size / store).
    throw DistError("rank " + std::to_string(o.rank) + " of " + std::to_string(o.world) +
                    ": the rendezvous of the process group failed: not every worker arrived within " +
                    seconds_text(o.timeout_s) + " s (--dist-timeout); start all " + std::to_string(o.world) +
                    " workers with the same " +
                    (o.store_file.empty() ? "--master " + o.master : "--store-file " + o.store_file) +
                    " and --world-size " + std::to_string(o.world) + " (" + first_line(e.what()) + ")");
  }
  return d;
}

// Consecutive runs of tensors with the same dtype/device, each at most `bytes` (a
// single larger tensor gets a bucket of its own).
static std::vector<std::vector<size_t>> make_buckets(const std::vector<torch::Tensor>& ts, int64_t bytes) {
  std::vector<std::vector<size_t>> out;
  int64_t cur = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const int64_t b = ts[i].numel() * static_cast<int64_t>(ts[i].element_size());
    const bool same_kind = !out.empty() && !out.back().empty() &&
                           ts[out.back().back()].scalar_type() == ts[i].scalar_type() &&
                           ts[out.back().back()].device() == ts[i].device();
    if (out.empty() || !same_kind || cur + b > bytes) {
      out.emplace_back();
      cur = 0;
    }
    out.back().push_back(i);
    cur += b;
  }
  return out;
}

// Flatten each bucket, run `op` (all-reduce or broadcast) on all buckets
// asynchronously, wait, then `finish` each flat buffer and copy it back.
template <class Op, class Finish>
static void bucketed(DistContext& d, const char* what, const std::vector<torch::Tensor>& ts, Op op, Finish finish) {
  if (ts.empty()) return;
  auto buckets = make_buckets(ts, d.bucket_bytes);
  std::vector<std::vector<at::Tensor>> flats(buckets.size());
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  torch::NoGradGuard ng;
  collective(d, what, [&] {
    for (size_t k = 0; k < buckets.size(); ++k) {
      std::vector<torch::Tensor> parts;
      for (size_t i : buckets[k]) parts.push_back(ts[i].reshape({-1}));
      flats[k] = {torch::cat(parts)};
      works.push_back(op(flats[k]));
    }
    for (auto& w : works) w->wait();
  });
  for (size_t k = 0; k < buckets.size(); ++k) {
    finish(flats[k][0]);
    int64_t off = 0;
    for (size_t i : buckets[k]) {
      const int64_t n = ts[i].numel();
      ts[i].copy_(flats[k][0].narrow(0, off, n).view_as(ts[i]));
      off += n;
    }
  }
}

void allreduce_gradients(DistContext& d, const std::vector<torch::Tensor>& params) {
  if (d.world <= 1 || !d.pg) return;
  const auto t0 = Clock::now();
  std::vector<torch::Tensor> grads;
  grads.reserve(params.size());
  for (auto p : params) {
    if (!p.requires_grad()) continue;
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);  // unused this step: contributes 0
    grads.push_back(p.grad());
  }
  const double inv = 1.0 / d.world;
  bucketed(
      d, "the all-reduce of the gradients", grads,
      [&](std::vector<at::Tensor>& v) {
        c10d::AllreduceOptions ao;
        ao.reduceOp = c10d::ReduceOp::SUM;
        return d.pg->allreduce(v, ao);
      },
      [&](torch::Tensor& flat) { flat.mul_(inv); });  // mean over ranks = gradient of the global mean loss
  d.allreduce_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
  ++d.allreduce_calls;
}

void broadcast_parameters(DistContext& d, const std::vector<torch::Tensor>& tensors) {
  if (d.world <= 1 || !d.pg) return;
  bucketed(
      d, "the broadcast of the parameters", tensors,
      [&](std::vector<at::Tensor>& v) {
        c10d::BroadcastOptions bo;
        bo.rootRank = 0;
        return d.pg->broadcast(v, bo);
      },
      [](torch::Tensor&) {});
}

torch::Tensor allreduce_sum(DistContext& d, torch::Tensor t) {
  if (d.world <= 1 || !d.pg) return t;
  // NCCL reduces device tensors only: small CPU statistics travel to the rank's GPU.
  std::vector<at::Tensor> v{(d.backend == "nccl" ? t.to(d.device) : t).contiguous()};
  collective(d, "an all-reduce of the step statistics", [&] {
    c10d::AllreduceOptions ao;
    ao.reduceOp = c10d::ReduceOp::SUM;
    d.pg->allreduce(v, ao)->wait();
  });
  return v[0];
}

std::vector<torch::Tensor> allgather_rows(DistContext& d, const std::vector<torch::Tensor>& local) {
  if (d.world <= 1 || !d.pg) return local;
  std::vector<torch::Tensor> out;
  for (auto& t : local) {
    std::vector<at::Tensor> in{t.contiguous()};
    std::vector<std::vector<at::Tensor>> outs(1);
    for (int r = 0; r < d.world; ++r) outs[0].push_back(torch::empty_like(in[0]));
    collective(d, "an all-gather of the task state", [&] { d.pg->allgather(outs, in)->wait(); });
    out.push_back(torch::cat(outs[0], 0));
  }
  return out;
}

void barrier(DistContext& d) {
  if (d.world <= 1 || !d.pg) return;
  collective(d, "a barrier", [&] { d.pg->barrier()->wait(); });
}

std::map<int, double> rank_throughputs(const std::map<std::string, double>& values) {
  std::map<int, double> out;
  const std::string pre = "throughput_rank";
  for (auto& [k, v] : values)
    if (k.rfind(pre, 0) == 0 && k.size() > pre.size()) {
      try {
        out[std::stoi(k.substr(pre.size()))] = v;
      } catch (...) {
      }
    }
  return out;
}

}  // namespace cs

// A unity batch's next files do not see this file's macros (tests/check_unity.py).
#undef CELLSCOPE_HAVE_GLOO
#ifdef CELLSCOPE_DEFINED_USE_C10D_GLOO  // only where this file defined it (not a build's own -D)
#undef USE_C10D_GLOO
#undef CELLSCOPE_DEFINED_USE_C10D_GLOO
#endif
