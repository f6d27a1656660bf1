// The number formats the precision study compares: what each stores and accumulates in,
// how accurate it can be expected to be, and whether a given GPU can run it.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "core/operations.hpp"
#include "core/verify.hpp"

namespace gpubench {

enum class Precision { fp64, fp32, tf32, fp16, fp16_acc16, bf16, fp8_e4m3, int8 };

struct PrecisionInfo {
  Precision id;
  const char* name;        // as in entry names: precision/<impl>/<device>/<mode>/<name>/n:<n>
  const char* inputs;      // storage format of A and B
  const char* accumulate;  // what the dot products are summed in
  const char* output;      // storage format of C
  bool tensor_cores;       // on the GPU
  // Relative rounding of one input element (0: the FP32 inputs are kept exactly), unit
  // roundoff of the accumulation, and of storing the output (0: exact, INT32).
  double input_roundoff;
  double accumulate_roundoff;
  double output_roundoff;
  int input_bytes;
  int output_bytes;
};

const std::vector<PrecisionInfo>& all_precisions();
const PrecisionInfo& precision_info(Precision precision);
// The Precision an entry's precision slot names ("fp16", ...); throws std::invalid_argument.
Precision precision_named(const std::string& name);

// One GEMM's operands in `precision`'s formats: A and B in its input format, C in its output format.
struct GemmOperandBytes {
  double inputs = 0;
  std::size_t output = 0;
  double total() const { return inputs + static_cast<double>(output); }
};
GemmOperandBytes gemm_operand_bytes(Precision precision, const MatmulShape& shape);

// Relative error bound (both on the Frobenius and on the largest element error) for a
// product with accumulation length k: 4 u_in + 2 u_out + 16 u_acc sqrt(k), at most 0.5.
// Rounding each input by u_in perturbs every product term by about u_in; storing the output
// rounds each element once more by u_out; summing k terms of random sign grows accumulation
// error like u_acc sqrt(k). The factors leave room for blocked summation orders and for
// scaled formats' range use; the cap keeps a wrong result (errors of order 1) failing where
// a 16-bit accumulator's bound would exceed it.
Tolerance precision_tolerance(Precision precision, int k);
std::string tolerance_rule();

// One GEMM signature for every implementation of the precision study, CPU or GPU: A, B
// and C in `precision`'s storage formats (as encode_operands lays them out), host memory
// for a CPU implementation, device memory for a GPU one. `dequant` points to the two
// per-tensor factors of the scaled formats (in the same memory as the operands): A's at
// dequant[0], B's at dequant[kDequantStride], 16 bytes apart because cuBLASLt rejects scale
// pointers that are not 16-byte aligned.
inline constexpr int kDequantStride = 4;
using PrecisionGemmFn = void (*)(Precision precision, const void* a, const void* b, void* c, MatmulShape shape,
                                 const float* dequant);

// What a GPU offers, as far as the precision study cares; faked in tests.
struct GpuCapability {
  int major = 0;  // compute capability
  int minor = 0;
};

// Empty when the GPU can run the precision through cuBLAS; otherwise why not.
std::string gpu_precision_unsupported_reason(Precision precision, GpuCapability capability);

}  // namespace gpubench
