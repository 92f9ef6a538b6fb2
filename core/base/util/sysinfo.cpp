#include "util/cpu_cache.h"
#include "util/sysinfo.h"

#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <fstream>
#include <thread>

namespace cs {

BlasInfo detect_blas() {
  BlasInfo b;
  b.name = "unknown";
  // Which BLAS shared objects are mapped into this process? (Debian selects
  // libblas.so.3 through update-alternatives; resolve the real file.)
  std::ifstream maps("/proc/self/maps");
  std::string line;
  std::string blas_path, openblas_path, mkl_path;
  while (std::getline(maps, line)) {
    auto slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string p = line.substr(slash);
    if (p.find("libmkl") != std::string::npos) mkl_path = p;
    else if (p.find("libopenblas") != std::string::npos) openblas_path = p;
    else if (p.find("libblas.so") != std::string::npos) blas_path = p;
  }
  char real[PATH_MAX];
  std::string blas_real = blas_path;
  if (!blas_path.empty() && ::realpath(blas_path.c_str(), real)) blas_real = real;
  if (!mkl_path.empty()) {
    b.name = "MKL";
    b.path = mkl_path;
    b.fast = true;
  } else if (blas_real.find("openblas") != std::string::npos || (blas_path.empty() && !openblas_path.empty())) {
    b.name = "OpenBLAS";
    b.path = blas_real.empty() ? openblas_path : blas_real;
    if (b.path.find("openmp") != std::string::npos) b.name += " (OpenMP)";
    else if (b.path.find("pthread") != std::string::npos) b.name += " (pthreads)";
    b.fast = true;
  } else if (!blas_real.empty()) {
    b.name = "netlib (reference BLAS)";
    b.path = blas_real;
  }
  using cfg_fn = char* (*)();
  if (auto f = reinterpret_cast<cfg_fn>(::dlsym(RTLD_DEFAULT, "openblas_get_config"))) b.detail = f();
  return b;
}

std::string blas_warning(const BlasInfo& b) {
  if (b.fast) return "";
  return "WARNING: this process is not using OpenBLAS or MKL (BLAS: " + b.name + (b.path.empty() ? "" : ", " + b.path) +
         "). With Debian's default netlib BLAS, training is about 12x slower. Install libopenblas0-openmp "
         "(packaging/setup.sh does) or select it: update-alternatives --config libblas.so.3-x86_64-linux-gnu";
}

json system_info() {
  json j;
  j["cellscope_version"] = CELLSCOPE_VERSION;
  j["libtorch_version"] = TORCH_VERSION;
  BlasInfo b = detect_blas();
  j["blas"] = {{"name", b.name}, {"path", b.path}, {"config", b.detail}, {"fast", b.fast}};
  j["intra_op_threads"] = at::get_num_threads();
  j["cpu_cache"] = cpu_cache_status();
  j["inter_op_threads"] = at::get_num_interop_threads();
  j["hardware_threads"] = std::thread::hardware_concurrency();
  j["cuda_available"] = torch::cuda::is_available();
  j["cuda_devices"] = torch::cuda::is_available() ? torch::cuda::device_count() : 0;
  j["parallel_backend"] = at::get_parallel_info().find("OpenMP") != std::string::npos ? "OpenMP" : "native";
  return j;
}

}  // namespace cs
