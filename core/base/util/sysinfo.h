// What the process runs on: LibTorch version, the BLAS actually loaded, threads, CUDA.
#pragma once
#include <string>

#include "config/json.h"

namespace cs {

struct BlasInfo {
  std::string name;    // "OpenBLAS", "MKL", "netlib (reference BLAS)", "unknown"
  std::string path;    // the shared object mapped into this process
  std::string detail;  // e.g. openblas_get_config()
  bool fast = false;   // OpenBLAS or MKL
};

BlasInfo detect_blas();
json system_info();                           // torch, blas, threads, cuda, cpus, version
std::string blas_warning(const BlasInfo& b);  // empty when fine

}  // namespace cs
