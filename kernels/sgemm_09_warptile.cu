// Rung 9: warp tiling. Rung 8's pipeline, the block tile split into warp tiles and those into thread
// tiles whose 4 x 4 groups interleave: at each k a warp's float4 reads of A and of B are each 128
// consecutive bytes, one shared-memory wavefront broadcast to the threads that share them (rung 8's
// patches read B with 4-way bank conflicts), and slices of 16 k halve the barriers. n % 4 == 0.
#include "gemm_ladder.cuh"
#include "sgemm_blocktile.cuh"
#include "sgemm_rung.cuh"
#include "vector_access.cuh"

namespace gpubench {
namespace {

using Sgemm = sgemm_blocked::WarpTiled<128, 128, 16, 64, 32, 8, 8, 3>::Sgemm;

void run(const void* a, const void* b, void* c, MatmulShape s) {
  require_vector_alignment("sgemm_09_warptile", a, b, c);
  Sgemm::run(static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(c), s);
}

GemmLaunch launch(MatmulShape s) { return Sgemm::launch(s); }

std::string unsupported(MatmulShape s) { return float4_rows_unsupported(s, false); }

}  // namespace

GemmRung sgemm_09_warptile() { return {run, launch, unsupported}; }

}  // namespace gpubench
