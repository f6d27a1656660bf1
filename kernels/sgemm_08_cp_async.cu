// Rung 8: a pipeline of asynchronous copies. Rung 7's tiling, its shared memory a ring of three stages
// filled by cp.async: the copies of the next two slices of A and B run while the block multiplies the
// current one, without passing through registers, and one barrier a slice replaces two. A's elements
// are copied one by one (a copy cannot transpose a vector), so k may be anything; n % 4 == 0 (float4
// rows of B and C).
#include "gemm_ladder.cuh"
#include "sgemm_blocktile.cuh"
#include "sgemm_rung.cuh"
#include "vector_access.cuh"

namespace gpubench {
namespace {

using Tile = sgemm_blocked::BlockTile<128, 128, 8, 8, 8, 256, 3>;
using Sgemm = sgemm_blocked::PipelinedSgemm<Tile, sgemm_blocked::PatchLayout<Tile>>;

void run(const void* a, const void* b, void* c, MatmulShape s) {
  require_vector_alignment("sgemm_08_cp_async", a, b, c);
  Sgemm::run(static_cast<const float*>(a), static_cast<const float*>(b), static_cast<float*>(c), s);
}

GemmLaunch launch(MatmulShape s) { return Sgemm::launch(s); }

std::string unsupported(MatmulShape s) { return float4_rows_unsupported(s, false); }

}  // namespace

GemmRung sgemm_08_cp_async() { return {run, launch, unsupported}; }

}  // namespace gpubench
