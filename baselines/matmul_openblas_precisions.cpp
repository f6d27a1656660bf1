#include "matmul_openblas_precisions.hpp"

#include <cblas.h>
#include <dlfcn.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "core/precision_codec.hpp"

namespace gpubench {
namespace {

// cblas_sbgemm exists only in OpenBLAS builds with BUILD_BFLOAT16 (Debian 12's 0.3.21
// declares it in cblas.h but does not export it), so it is looked up at run time.
using SbgemmFn = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
                          const std::uint16_t*, blasint, const std::uint16_t*, blasint, float, float*, blasint);

SbgemmFn openblas_sbgemm() {
  static const SbgemmFn found = reinterpret_cast<SbgemmFn>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
  return found;
}

bool cpu_has_flag(const std::string& flag) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::string word;
    while (words >> word)
      if (word == flag) return true;
    return false;
  }
  return false;
}

}  // namespace

void gemm_openblas_precision(Precision precision, const void* a, const void* b, void* c, MatmulShape s,
                             const float*) {
  switch (precision) {
    case Precision::fp64:
      cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0, static_cast<const double*>(a), s.k,
                  static_cast<const double*>(b), s.n, 0.0, static_cast<double*>(c), s.n);
      return;
    case Precision::fp32:
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, static_cast<const float*>(a), s.k,
                  static_cast<const float*>(b), s.n, 0.0f, static_cast<float*>(c), s.n);
      return;
    case Precision::bf16: {
      if (!openblas_sbgemm()) throw std::runtime_error("this OpenBLAS has no cblas_sbgemm");
      // SBGEMM writes FP32; the study's bf16 output is BF16 on every device, so the result is
      // rounded once more (an O(n^2) pass beside the O(n^3) product, inside the timed call).
      static thread_local std::vector<float> product;
      product.resize(s.c_elements());
      openblas_sbgemm()(CblasRowMajor, CblasNoTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f,
                        static_cast<const std::uint16_t*>(a), s.k, static_cast<const std::uint16_t*>(b), s.n, 0.0f,
                        product.data(), s.n);
      auto* out = static_cast<std::uint16_t*>(c);
#pragma omp parallel for schedule(static)
      for (std::size_t i = 0; i < product.size(); ++i) out[i] = float_to_bf16_bits(product[i]);
      return;
    }
    default:
      throw std::logic_error("OpenBLAS has no GEMM in this precision");
  }
}

std::string openblas_precision_unsupported_reason(Precision precision) {
  switch (precision) {
    case Precision::fp64:
    case Precision::fp32:
      return "";
    case Precision::bf16:
      return openblas_sbgemm() ? "" : "this OpenBLAS build has no BF16 GEMM (cblas_sbgemm is not exported)";
    default:
      return std::string("OpenBLAS has no ") + precision_info(precision).name + " GEMM";
  }
}

std::string cpu_precision_note(Precision precision) {
  if (precision != Precision::bf16) return "";
  if (cpu_has_flag("avx512_bf16") || cpu_has_flag("amx_bf16")) return "";
  return "this CPU has no BF16 instructions (avx512_bf16 or amx_bf16): OpenBLAS converts BF16 in software";
}

}  // namespace gpubench
