#pragma once
#include <string>

#include "core/precision.hpp"

namespace gpubench {
// OpenBLAS DGEMM (fp64), SGEMM (fp32) and SBGEMM (bf16 inputs, FP32 accumulate, output
// rounded to BF16 as every bf16 implementation of the study writes it).
void gemm_openblas_precision(Precision precision, const void* a, const void* b, void* c, MatmulShape shape,
                             const float* dequant);

// Empty when this OpenBLAS and this CPU can run the precision at all; otherwise why not.
std::string openblas_precision_unsupported_reason(Precision precision);
// A note for precisions that run without a native instruction path (e.g. BF16 on a CPU
// without AVX512_BF16 or AMX); empty when native.
std::string cpu_precision_note(Precision precision);
}  // namespace gpubench
