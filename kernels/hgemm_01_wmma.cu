// Rung 1 of the tensor-core ladder: the suite's WMMA kernel (kernels/matmul_wmma.cu), as the precision
// study runs it. Warps load 16x16 fragments of A and B from shared memory through the WMMA API and
// multiply them on the tensor cores; cp.async double-buffers 128x128x32 block tiles.
#include <string>

#include "gemm_ladder.cuh"
#include "gemm_rung_support.cuh"
#include "matmul_wmma.cuh"

namespace gpubench {

GemmRung hgemm_01_wmma() {
  GemmRung rung;
  rung.run = matmul_wmma_fp16;
  rung.launch = matmul_wmma_fp16_launch;
  // Any shape (n or k not a multiple of 8 takes element-wise loads): only the GPU can refuse it.
  rung.unsupported = [](MatmulShape shape) { return kernel_image_missing(matmul_wmma_fp16_launch(shape).kernel); };
  return rung;
}

}  // namespace gpubench
