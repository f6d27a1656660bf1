// Rung 2 of the tensor-core ladder: the warp-level tensor-core instruction itself, below the WMMA API.
// Each 256-thread block computes a 128x256 tile of C; each of its 8 warps (2 x 4) a 64x64 piece, as
// 4 x 8 mma.sync.m16n8k16 products per 16-deep step (FP16 in, FP32 accumulators in registers).
// What changed from rung 1:
// - ldmatrix loads the operands' register fragments from shared memory, four 8x8 matrices per
//   instruction (.trans for B, which is row-major k x n while the instruction takes it column-major),
//   in exactly the layout mma.sync wants, where WMMA's fragment loads hide the layout;
// - a 64x64 warp tile (twice rung 1's) does 32 mma.sync per 8 ldmatrix: more tensor-core work per
//   shared-memory read;
// - a 4-stage cp.async pipeline in dynamic shared memory keeps three 32-deep slices of A and B in
//   flight while the warps compute on the fourth;
// - rows of the shared tiles are padded by 16 bytes so the 8 rows an 8x8 ldmatrix reads fall in 8
//   different 16-byte bank groups (A rows are 80 bytes apart, B rows 528: 5 and 33 groups, both odd);
// - blocks walk C in bands of tile rows (gemm_rung_support.cuh) so the resident ones share panels in L2.
// Needs sm_80 (cp.async, ldmatrix, m16n8k16) and n, k multiples of 8 (16-byte copies of rows); any m.
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "async_copy.cuh"
#include "core/cuda_check.hpp"
#include "gemm_ladder.cuh"
#include "gemm_rung_support.cuh"

namespace gpubench {
namespace {

constexpr int kTileM = 128, kTileN = 256, kTileK = 32;
constexpr int kWarpsM = 2, kWarpsN = 4;
constexpr int kThreads = 32 * kWarpsM * kWarpsN;
constexpr int kWarpTileM = kTileM / kWarpsM;  // 64
constexpr int kWarpTileN = kTileN / kWarpsN;  // 64
constexpr int kMmaM = 16, kMmaN = 8, kMmaK = 16;
constexpr int kFragmentsM = kWarpTileM / kMmaM;  // 4
constexpr int kFragmentsN = kWarpTileN / kMmaN;  // 8
constexpr int kStages = 4;
constexpr int kChunk = 8;  // halves per 16-byte copy
constexpr int kAPitch = kTileK + kChunk;  // halves per shared row of A: 80 bytes
constexpr int kBPitch = kTileN + kChunk;  // of B: 528 bytes
constexpr int kAStageHalves = kTileM * kAPitch;
constexpr int kBStageHalves = kTileK * kBPitch;
constexpr std::size_t kSharedBytes = kStages * (kAStageHalves + kBStageHalves) * sizeof(__half);
constexpr int kBandRows = 8;  // tile rows per band of the block order
static_assert((kTileM * kTileK / kChunk) % kThreads == 0 && (kTileK * kTileN / kChunk) % kThreads == 0,
              "every thread copies the same number of chunks");
static_assert(kFragmentsN % 2 == 0, "one ldmatrix.x4.trans loads two n8 fragments of B");

// Four 8x8 matrices of 16-bit elements: lanes 8i..8i+7 give the row addresses of matrix i, and each
// lane receives its elements of matrix i in fragment[i] (transposed with kTranspose). The clobber
// keeps the reads between the barriers that guard the stage.
template <bool kTranspose>
__device__ void load_matrices(std::uint32_t (&fragment)[4], const __half* row) {
  if constexpr (kTranspose) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(fragment[0]), "=r"(fragment[1]), "=r"(fragment[2]), "=r"(fragment[3])
                 : "r"(shared_address(row))
                 : "memory");
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(fragment[0]), "=r"(fragment[1]), "=r"(fragment[2]), "=r"(fragment[3])
                 : "r"(shared_address(row))
                 : "memory");
  }
}

// d += a * b for a 16x16 A fragment, a 16x8 B fragment and a 16x8 FP32 accumulator.
__device__ void mma_16x8x16(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0, std::uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

struct StageTiles {
  __half* a;  // kTileM rows of kAPitch halves
  __half* b;  // kTileK rows of kBPitch halves
};

__device__ StageTiles stage_tiles(__half* shared, int stage) {
  return {shared + stage * kAStageHalves, shared + kStages * kAStageHalves + stage * kBStageHalves};
}

// Starts the copies of the k0 slice of A (kTileM x kTileK) and B (kTileK x kTileN) into `tiles`;
// elements outside the matrices become zeros (k % 8 == 0 and n % 8 == 0: a chunk is all in or all out).
__device__ void load_slice(StageTiles tiles, const __half* a, const __half* b, MatmulShape s, int row0, int col0,
                           int k0) {
#pragma unroll
  for (int i = 0; i < kTileM * kTileK / kChunk / kThreads; ++i) {
    const int chunk = threadIdx.x + i * kThreads;
    const int r = chunk / (kTileK / kChunk), c = chunk % (kTileK / kChunk) * kChunk;
    const bool inside = row0 + r < s.m && k0 + c < s.k;
    async_copy_16(tiles.a + r * kAPitch + c, inside ? a + static_cast<std::size_t>(row0 + r) * s.k + k0 + c : a,
                        inside);
  }
#pragma unroll
  for (int i = 0; i < kTileK * kTileN / kChunk / kThreads; ++i) {
    const int chunk = threadIdx.x + i * kThreads;
    const int r = chunk / (kTileN / kChunk), c = chunk % (kTileN / kChunk) * kChunk;
    const bool inside = k0 + r < s.k && col0 + c < s.n;
    async_copy_16(tiles.b + r * kBPitch + c, inside ? b + static_cast<std::size_t>(k0 + r) * s.n + col0 + c : b,
                        inside);
  }
}

// One kTileK slice of the warp's 64x64 product. For a 16x16 block at (r, c), lane l points ldmatrix
// at row r + l % 16, column c + l / 16 * 8: matrices 0..3 are then its top-left, bottom-left,
// top-right and bottom-right 8x8 quarters. For A (row-major) those are mma's a0..a3; for B (k x n,
// loaded transposed) they are b0, b1 of the left n8 fragment and b0, b1 of the right one.
__device__ void multiply_slice(float (&acc)[kFragmentsM][kFragmentsN][4], StageTiles tiles, int warp_row,
                               int warp_col, int lane) {
  const int lane_row = lane % 16, lane_col = lane / 16 * 8;
#pragma unroll
  for (int kk = 0; kk < kTileK; kk += kMmaK) {
    std::uint32_t a_frag[kFragmentsM][4];
    std::uint32_t b_frag[kFragmentsN / 2][4];
#pragma unroll
    for (int i = 0; i < kFragmentsM; ++i)
      load_matrices<false>(a_frag[i], tiles.a + (warp_row + i * kMmaM + lane_row) * kAPitch + kk + lane_col);
#pragma unroll
    for (int j = 0; j < kFragmentsN / 2; ++j)
      load_matrices<true>(b_frag[j], tiles.b + (kk + lane_row) * kBPitch + warp_col + j * 2 * kMmaN + lane_col);
#pragma unroll
    for (int i = 0; i < kFragmentsM; ++i)
#pragma unroll
      for (int j = 0; j < kFragmentsN; ++j)
        mma_16x8x16(acc[i][j], a_frag[i], b_frag[j / 2][j % 2 * 2], b_frag[j / 2][j % 2 * 2 + 1]);
  }
}

// Accumulator element e of fragment (i, j) sits at row lane / 4 (+8 for e >= 2), column
// lane % 4 * 2 + e % 2 of its 16x8 block: pairs of adjacent columns, stored as one __half2.
// n is even, so a pair is all inside C or all outside.
__device__ void store_tile(const float (&acc)[kFragmentsM][kFragmentsN][4], __half* c, MatmulShape s, int row0,
                           int col0, int lane) {
#pragma unroll
  for (int i = 0; i < kFragmentsM; ++i) {
#pragma unroll
    for (int j = 0; j < kFragmentsN; ++j) {
      const int col = col0 + j * kMmaN + lane % 4 * 2;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = row0 + i * kMmaM + lane / 4 + half * 8;
        if (row < s.m && col < s.n)
          *reinterpret_cast<__half2*>(c + static_cast<std::size_t>(row) * s.n + col) =
              __floats2half2_rn(acc[i][j][2 * half], acc[i][j][2 * half + 1]);
      }
    }
  }
}

__global__ void __launch_bounds__(kThreads, 1)
    hgemm_mma_sync(const __half* a, const __half* b, __half* c, MatmulShape s, int tile_rows, int tile_cols) {
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  __half* shared = reinterpret_cast<__half*>(shared_bytes);
  const GemmTile tile = banded_tile(blockIdx.x, tile_rows, tile_cols, kBandRows);
  const int row0 = tile.row * kTileM, col0 = tile.col * kTileN;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int warp_row = warp / kWarpsN * kWarpTileM, warp_col = warp % kWarpsN * kWarpTileN;

  float acc[kFragmentsM][kFragmentsN][4] = {};
  const int slices = (s.k + kTileK - 1) / kTileK;
  // Prologue: the first kStages - 1 slices in flight, one copy group each (empty past the end, so
  // the count of groups to wait for stays the same).
#pragma unroll
  for (int slice = 0; slice < kStages - 1; ++slice) {
    if (slice < slices) load_slice(stage_tiles(shared, slice), a, b, s, row0, col0, slice * kTileK);
    async_copy_commit();
  }
  for (int slice = 0; slice < slices; ++slice) {
    async_copy_wait<kStages - 2>();  // this thread's copies of `slice` have landed
    __syncthreads();  // everyone's have; and everyone is done with slice - 1, whose stage is refilled next
    const int next = slice + kStages - 1;
    if (next < slices) load_slice(stage_tiles(shared, next % kStages), a, b, s, row0, col0, next * kTileK);
    async_copy_commit();
    multiply_slice(acc, stage_tiles(shared, slice % kStages), warp_row, warp_col, lane);
  }
  store_tile(acc, c, s, row0 + warp_row, col0 + warp_col, lane);
}

struct Grid {
  int tile_rows, tile_cols;
  unsigned long long blocks() const { return static_cast<unsigned long long>(tile_rows) * tile_cols; }
};

Grid grid_of(MatmulShape s) { return {(s.m + kTileM - 1) / kTileM, (s.n + kTileN - 1) / kTileN}; }

const void* kernel_address() { return reinterpret_cast<const void*>(&hgemm_mma_sync); }

// Once per process (a throw leaves it to the next call).
void allow_shared_memory_once() {
  static const bool allowed = (allow_dynamic_shared_memory(kernel_address(), kSharedBytes), true);
  (void)allowed;
}

void run(const void* a, const void* b, void* c, MatmulShape s) {
  allow_shared_memory_once();
  const Grid grid = grid_of(s);
  hgemm_mma_sync<<<static_cast<unsigned>(grid.blocks()), kThreads, kSharedBytes>>>(
      static_cast<const __half*>(a), static_cast<const __half*>(b), static_cast<__half*>(c), s, grid.tile_rows,
      grid.tile_cols);
  CUDA_CHECK_LAUNCH();
}

GemmLaunch launch(MatmulShape s) {
  // The occupancy query needs the kernel's shared-memory allowance; a GPU without its code cannot run it anyway.
  if (kernel_image_missing(kernel_address()).empty()) allow_shared_memory_once();
  GemmLaunch launch;
  launch.kernel = kernel_address();
  launch.threads_per_block = kThreads;
  launch.dynamic_shared_bytes = kSharedBytes;
  launch.blocks = grid_of(s).blocks();
  launch.tile = "block " + std::to_string(kTileM) + "x" + std::to_string(kTileN) + "x" + std::to_string(kTileK) +
                ", warp " + std::to_string(kWarpTileM) + "x" + std::to_string(kWarpTileN) +
                " (mma.sync m16n8k16, ldmatrix), " + std::to_string(kStages) + " stages (cp.async), bands of " +
                std::to_string(kBandRows) + " tile rows";
  return launch;
}

std::string unsupported(MatmulShape s) {
  const std::string unaligned = fp16_rows_unaligned(s);
  if (!unaligned.empty()) return unaligned;
  return kernel_image_missing(kernel_address());
}

}  // namespace

GemmRung hgemm_02_mma_sync() { return {run, launch, unsupported}; }

}  // namespace gpubench
