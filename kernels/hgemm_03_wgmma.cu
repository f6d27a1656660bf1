// Rung 3 of the tensor-core ladder: Hopper's own GEMM machinery (sm_90a). What changed from rung 2:
// - wgmma.mma_async: a warpgroup (4 warps) multiplies a 64x256x16 block per instruction, reading
//   both operands straight from shared memory through matrix descriptors: no ldmatrix, no operand
//   registers, and the tensor cores run asynchronously while the warps go on;
// - TMA (cp.async.bulk.tensor): one thread copies whole 2-D boxes of A and B into shared memory,
//   128-byte swizzled as wgmma reads them, bounds handled by the copy engine (zeros outside);
// - warp specialisation: a producer warpgroup issues the copies, two consumer warpgroups (64 rows of
//   the 128x256 block tile each) multiply; they hand the 4 stages of a ring to each other through
//   mbarriers (full: the copy's bytes have landed; empty: both consumers are done reading), and the
//   producer gives most of its registers to the consumers (setmaxnreg) for their 128 accumulators;
// - a persistent schedule: one block per multiprocessor walks the tiles in bands of tile rows
//   (gemm_rung_support.cuh), so the producer loads the next tile while the consumers store the last;
// - stream-K (stream_k.cuh): the whole waves of tiles go one per block in turn, the k-slices of the
//   tiles left over (a last, partial wave) are shared evenly by all blocks, so no multiprocessor idles
//   through the last wave. A consumer warpgroup whose range starts inside a tile leaves its partial
//   accumulators in a workspace in its own register order; the owner of the tile's first slice adds
//   them, block by block, into its own registers before its epilogue.
// B is row-major k x n, i.e. MN-major for wgmma: its 16-bit operand is read with the transpose flag.
// Needs compute capability 9.0 (sm_90a code runs nowhere else) and n, k multiples of 8 (TMA's global
// strides are multiples of 16 bytes); any m, and edges of any size (TMA fills zeros, stores are guarded).
// Next steps, not taken: thread-block clusters with TMA multicast of the shared operand, stores of C
// through shared memory and TMA, two consumer warpgroups on different tiles (ping-pong) so one's
// epilogue overlaps the other's products, and a deeper wgmma pipeline.
#include "gemm_ladder.cuh"

#ifdef GPUBENCH_HAVE_SM90A

#include <cuda.h>  // CUtensorMap and its enums: types only, the driver is reached through the runtime
#include <cudaTypedefs.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <string>

#include "core/cuda_check.hpp"
#include "core/gpu_runtime.hpp"
#include "gemm_rung_support.cuh"
#include "stream_k.cuh"

namespace gpubench {
namespace {

constexpr int kTileM = 128, kTileN = 256, kTileK = 64;
constexpr int kWarpgroupThreads = 128;
constexpr int kConsumers = 2;                      // warpgroups, kConsumerRows rows of the tile each
constexpr int kConsumerRows = kTileM / kConsumers;  // 64: wgmma's M
constexpr int kThreads = (kConsumers + 1) * kWarpgroupThreads;
constexpr int kWgmmaK = 16;
constexpr int kStages = 4;
constexpr int kBandRows = 8;
// A 128-byte swizzle spans rows of 128 bytes (64 halves) in atoms of 8 rows (1024 bytes): every box
// is 64 halves wide, A's box kTileM rows of k, B's kTileK rows of n, B's tile four boxes side by side.
constexpr int kSwizzleRowBytes = 128;
constexpr int kSwizzleAtomBytes = 8 * kSwizzleRowBytes;
constexpr int kBoxCols = kSwizzleRowBytes / 2;
constexpr int kATileBytes = kTileM * kTileK * 2;
constexpr int kBBoxBytes = kTileK * kBoxCols * 2;
constexpr int kBBoxes = kTileN / kBoxCols;
constexpr int kBTileBytes = kBBoxes * kBBoxBytes;
constexpr int kStageBytes = kATileBytes + kBTileBytes;
constexpr int kAccumulators = kConsumerRows * kTileN / kWarpgroupThreads;  // 128 FP32 per consumer thread
// The stages, then a full and an empty mbarrier per stage; the slack aligns the stages to 1024 bytes
// (TMA's 128-byte swizzle and wgmma's descriptors, base offset 0, assume atoms at such addresses).
constexpr std::size_t kSharedBytes = kSwizzleAtomBytes + kStages * kStageBytes + 2 * kStages * sizeof(std::uint64_t);
// Stream-K needs every block resident at once: one block a multiprocessor, as more than half of
// sm_90's 228 KiB of shared memory a multiprocessor allows no second one.
static_assert(2 * kSharedBytes > 228 * 1024, "one block a multiprocessor");
// setmaxnreg: 128 producer threads at 40 registers and 256 consumer threads at 232 use 64512 of the
// multiprocessor's 65536 (the launch gives each of the 384 threads 168).
constexpr int kProducerRegisters = 40;
constexpr int kConsumerRegisters = 232;
static_assert(kWarpgroupThreads * (kProducerRegisters + kConsumers * kConsumerRegisters) <= 65536,
              "the register file holds both roles");
static_assert(kTileK * 2 == kSwizzleRowBytes, "A's box is one swizzle row of k wide");
static_assert(kTileK % kWgmmaK == 0 && kTileN == 256 && kConsumerRows == 64, "m64n256k16 steps");

// --- mbarriers: phases complete when the expected arrivals (and transaction bytes) are in --------
__device__ void barrier_init(std::uint32_t barrier, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(barrier), "r"(arrivals) : "memory");
}

__device__ void barrier_arrive(std::uint32_t barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(barrier) : "memory");
}

// One arrival, and `bytes` more to come from copies that signal this barrier.
__device__ void barrier_arrive_expect_bytes(std::uint32_t barrier, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(barrier), "r"(bytes) : "memory");
}

// Returns once the phase of parity `parity` has completed (at once for the phase before the first).
__device__ void barrier_wait(std::uint32_t barrier, int parity) {
  std::uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n"
        ".reg .pred complete;\n"
        "mbarrier.try_wait.parity.shared::cta.b64 complete, [%1], %2;\n"
        "selp.u32 %0, 1, 0, complete;\n"
        "}\n"
        : "=r"(done)
        : "r"(barrier), "r"(parity)
        : "memory");
  }
}

// --- TMA -----------------------------------------------------------------------------------------
// The box of `map` whose first element is (column x, row y) into shared memory at `destination`;
// its bytes count towards `barrier`'s expected transaction.
__device__ void copy_box(std::uint32_t destination, const CUtensorMap& map, std::uint32_t barrier, int x, int y) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];\n" ::"r"(
          destination),
      "l"(reinterpret_cast<std::uint64_t>(&map)), "r"(barrier), "r"(x), "r"(y)
      : "memory");
}

// --- wgmma ---------------------------------------------------------------------------------------
// A shared-memory matrix descriptor with 128-byte swizzle: start address, leading and stride byte
// offsets, all in 16-byte units. K-major (A): the stride is between 8-row groups, the leading offset
// unused (1 by convention). MN-major (B): the leading offset is between 64-column blocks, the stride
// between groups of 8 k-rows.
__device__ std::uint64_t matrix_descriptor(std::uint32_t address, std::uint32_t leading_bytes,
                                           std::uint32_t stride_bytes) {
  return static_cast<std::uint64_t>((address & 0x3FFFF) >> 4) | static_cast<std::uint64_t>(leading_bytes >> 4) << 16 |
         static_cast<std::uint64_t>(stride_bytes >> 4) << 32 | 1ull << 62;
}

// Orders the compiler's accesses to the accumulators around asynchronous wgmma (no instruction).
__device__ void pin_accumulators(float (&d)[kAccumulators]) {
#pragma unroll
  for (int i = 0; i < kAccumulators; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

__device__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int kPending>
__device__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// d (+)= A (64x16, K-major) * B (16x256, MN-major: transpose flag 1); d = A*B when !accumulate.
__device__ void wgmma_64x256x16(float (&d)[kAccumulators], std::uint64_t a, std::uint64_t b, bool accumulate) {
  asm volatile(
      "{\n"
      ".reg .pred accumulate;\n"
      "setp.ne.b32 accumulate, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {"
      "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
      "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
      "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
      "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
      "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
      "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
      "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
      "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
      "%128, %129, accumulate, 1, 1, 0, 1;\n"
      "}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
        "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
        "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
        "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
        "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
        "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
        "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
        "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
        "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
        "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
        "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
        "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
        "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
        "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]),
        "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]),
        "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]),
        "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(a), "l"(b), "r"(static_cast<int>(accumulate)));
}

// --- the kernel ----------------------------------------------------------------------------------
// Shared-memory addresses: stage s of A's tiles at a + s * kATileBytes, of B's at b + s * kBTileBytes,
// its barriers at full + 8 * s and empty + 8 * s.
struct Ring {
  std::uint32_t a, b;
  std::uint32_t full, empty;
};

// Which stage the `iteration`-th k-tile of this block uses, and the parity of that use's phase.
struct Slot {
  int stage, parity;
};
__device__ Slot slot_of(int iteration) { return {iteration % kStages, iteration / kStages % 2}; }

// The tiles of C in bands, and which k-tiles of which tiles each block multiplies (stream_k.cuh).
struct Schedule {
  MatmulShape shape;
  int tile_rows, tile_cols;
  stream_k::Plan plan;
  __device__ GemmTile tile(int index) const { return banded_tile(index, tile_rows, tile_cols, kBandRows); }
};

// One thread copies the k-tiles of every unit of this block into the ring, a stage once both
// consumers have released it (parity ^ 1: the first round finds every stage free). A box counts
// whole, zeros outside the matrix included; B's boxes wholly right of n are not copied (what the
// stage holds there only reaches columns of C that are not stored).
__device__ void produce(const Ring& ring, const Schedule& schedule, const CUtensorMap& a_map,
                        const CUtensorMap& b_map) {
  int iteration = 0;
  stream_k::Units units(schedule.plan, blockIdx.x);
  for (stream_k::Unit unit; units.next(unit);) {
    const GemmTile tile = schedule.tile(unit.tile);
    const int col0 = tile.col * kTileN;
    const int b_boxes = min(kBBoxes, (schedule.shape.n - col0 + kBoxCols - 1) / kBoxCols);
    for (int kt = unit.first; kt < unit.last; ++kt, ++iteration) {
      const Slot slot = slot_of(iteration);
      const std::uint32_t full = ring.full + 8 * slot.stage;
      barrier_wait(ring.empty + 8 * slot.stage, slot.parity ^ 1);
      barrier_arrive_expect_bytes(full, kATileBytes + b_boxes * kBBoxBytes);
      copy_box(ring.a + slot.stage * kATileBytes, a_map, full, kt * kTileK, tile.row * kTileM);
      for (int box = 0; box < b_boxes; ++box)
        copy_box(ring.b + slot.stage * kBTileBytes + box * kBBoxBytes, b_map, full, col0 + box * kBoxCols,
                 kt * kTileK);
    }
  }
}

// Accumulator 4j + 2h + e of thread t sits at row 16 * (t / 32) + t % 32 / 4 + 8h, column 8j + t % 4 * 2 + e
// of the warpgroup's 64x256 block: pairs of adjacent columns, stored as one __half2 (n is even, so a
// pair is all inside C or all outside).
__device__ void store_tile(const float (&d)[kAccumulators], __half* c, MatmulShape s, int row0, int col0, int thread) {
  const int row = row0 + thread / 32 * 16 + thread % 32 / 4;
  const int col = col0 + thread % 4 * 2;
#pragma unroll
  for (int j = 0; j < kTileN / 8; ++j) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = row + 8 * h, cc = col + 8 * j;
      if (r < s.m && cc < s.n)
        *reinterpret_cast<__half2*>(c + static_cast<std::size_t>(r) * s.n + cc) =
            __floats2half2_rn(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
    }
  }
}

// Synchronises the 128 threads of consumer warpgroup `consumer` (named barrier 1 + consumer; 0 is
// __syncthreads'): the producer warpgroup does not take part.
__device__ void consumer_barrier(int consumer) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(1 + consumer), "n"(kWarpgroupThreads) : "memory");
}

// A consumer warpgroup's partial accumulators, group v of four of thread t at slot[v * 128 + t] (each
// store of a warp 512 consecutive bytes); then the slot's flag rises.
__device__ void publish_partial(float4* slot, unsigned* flag, const float (&d)[kAccumulators], int consumer,
                                int thread) {
#pragma unroll
  for (int v = 0; v < kAccumulators / 4; ++v)
    __stcg(slot + v * kWarpgroupThreads + thread, make_float4(d[4 * v], d[4 * v + 1], d[4 * v + 2], d[4 * v + 3]));
  __threadfence();
  consumer_barrier(consumer);  // every thread's sums are out before the flag rises
  if (thread == 0) stream_k::store_release(flag, 1);
}

// d += the partial accumulators in `slot` (the same warpgroup's of another block, same register order)
// once its flag has risen; lowers the flag for the next call.
__device__ void add_partial(const float4* slot, unsigned* flag, float (&d)[kAccumulators], int consumer, int thread) {
  if (thread == 0) {
    while (stream_k::load_acquire(flag) == 0) __nanosleep(100);
    *flag = 0;
  }
  consumer_barrier(consumer);
#pragma unroll
  for (int v = 0; v < kAccumulators / 4; ++v) {
    const float4 p = __ldcg(slot + v * kWarpgroupThreads + thread);
    d[4 * v] += p.x;
    d[4 * v + 1] += p.y;
    d[4 * v + 2] += p.z;
    d[4 * v + 3] += p.w;
  }
}

// A consumer warpgroup: its 64 rows of every unit of this block. The wgmma group of a k-tile stays
// in flight while the next one is issued; a stage is released once the group that read it is done.
// A contributor's unit ends in the workspace (slot 2 * worker + consumer), an owner's adds its
// contributors' slots in block order and stores its tile of C.
__device__ void consume(const Ring& ring, const Schedule& schedule, __half* c, stream_k::Workspace workspace,
                        int consumer, int thread) {
  constexpr int kSlotVectors = kAccumulators * kWarpgroupThreads / 4;
  float d[kAccumulators] = {};
  int iteration = 0;
  stream_k::Units units(schedule.plan, blockIdx.x);
  for (stream_k::Unit unit; units.next(unit);) {
    const GemmTile tile = schedule.tile(unit.tile);
    int previous_stage = -1;
    for (int kt = unit.first; kt < unit.last; ++kt, ++iteration) {
      const Slot slot = slot_of(iteration);
      barrier_wait(ring.full + 8 * slot.stage, slot.parity);
      __syncwarp();  // the warp leaves the wait loop together: the wgmma instructions are .aligned
      const std::uint32_t a = ring.a + slot.stage * kATileBytes + consumer * kConsumerRows * kSwizzleRowBytes;
      const std::uint32_t b = ring.b + slot.stage * kBTileBytes;
      pin_accumulators(d);
      wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kTileK / kWgmmaK; ++kk) {
        // A: 16 halves further along each 128-byte row (the swizzle applies to the absolute address).
        // B: 16 k-rows further down, two whole atoms.
        wgmma_64x256x16(d, matrix_descriptor(a + kk * kWgmmaK * 2, 16, kSwizzleAtomBytes),
                        matrix_descriptor(b + kk * kWgmmaK * kSwizzleRowBytes, kBBoxBytes, kSwizzleAtomBytes),
                        kt > unit.first || kk > 0);
      }
      wgmma_commit();
      wgmma_wait<1>();
      pin_accumulators(d);
      if (previous_stage >= 0) barrier_arrive(ring.empty + 8 * previous_stage);
      previous_stage = slot.stage;
    }
    wgmma_wait<0>();
    pin_accumulators(d);
    barrier_arrive(ring.empty + 8 * previous_stage);  // every unit has a k-tile at least
    if (unit.contributes()) {
      const int slot = kConsumers * unit.worker + consumer;
      publish_partial(workspace.partials + static_cast<std::size_t>(slot) * kSlotVectors, workspace.flags + slot, d,
                      consumer, thread);
      continue;
    }
    const int contributors_end = schedule.plan.contributors_end(unit);
    for (int next = unit.worker + 1; next < contributors_end; ++next) {
      const int slot = kConsumers * next + consumer;
      add_partial(workspace.partials + static_cast<std::size_t>(slot) * kSlotVectors, workspace.flags + slot, d,
                  consumer, thread);
    }
    store_tile(d, c, schedule.shape, tile.row * kTileM + consumer * kConsumerRows, tile.col * kTileN, thread);
  }
}

__global__ void __launch_bounds__(kThreads, 1)
    hgemm_wgmma(const __grid_constant__ CUtensorMap a_map, const __grid_constant__ CUtensorMap b_map, __half* c,
                MatmulShape s, stream_k::Plan plan, stream_k::Workspace workspace) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char shared[];
  const std::uint32_t base = (shared_address(shared) + kSwizzleAtomBytes - 1) / kSwizzleAtomBytes * kSwizzleAtomBytes;
  Ring ring;
  ring.a = base;
  ring.b = base + kStages * kATileBytes;
  ring.full = base + kStages * kStageBytes;
  ring.empty = ring.full + 8 * kStages;
  const Schedule schedule{s, (s.m + kTileM - 1) / kTileM, (s.n + kTileN - 1) / kTileN, plan};

  if (threadIdx.x == 0) {
    for (int stage = 0; stage < kStages; ++stage) {
      barrier_init(ring.full + 8 * stage, 1);                                // the producer's arrival
      barrier_init(ring.empty + 8 * stage, kConsumers * kWarpgroupThreads);  // every consumer thread's
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");  // visible to the copy engine
  }
  __syncthreads();

  const int warpgroup = threadIdx.x / kWarpgroupThreads;
  if (warpgroup == 0) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kProducerRegisters));
    if (threadIdx.x == 0) produce(ring, schedule, a_map, b_map);
  } else {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kConsumerRegisters));
    consume(ring, schedule, c, workspace, warpgroup - 1, threadIdx.x % kWarpgroupThreads);
  }
#endif
}

const void* kernel_address() { return reinterpret_cast<const void*>(&hgemm_wgmma); }

// Once per process (a throw leaves it to the next call).
void allow_shared_memory_once() {
  static const bool allowed = (allow_dynamic_shared_memory(kernel_address(), kSharedBytes), true);
  (void)allowed;
}

PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 encode = [] {
    void* function = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &function, 12000, cudaEnableDefault, &found));
    if (found != cudaDriverEntryPointSuccess || function == nullptr)
      throw GpuError("the CUDA driver has no cuTensorMapEncodeTiled (TMA needs driver 12.0 or newer)");
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(function);
  }();
  return encode;
}

// A row-major FP16 matrix read in boxes of box_rows x kBoxCols, swizzled as the descriptors say;
// elements outside the matrix arrive as zeros.
CUtensorMap tensor_map(const void* matrix, int rows, int cols, int box_rows) {
  CUtensorMap map;
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(cols), static_cast<cuuint64_t>(rows)};
  const cuuint64_t row_bytes[1] = {static_cast<cuuint64_t>(cols) * sizeof(__half)};
  const cuuint32_t box[2] = {kBoxCols, static_cast<cuuint32_t>(box_rows)};
  const cuuint32_t element_strides[2] = {1, 1};
  const CUresult status = tensor_map_encoder()(
      &map, CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, const_cast<void*>(matrix), dims, row_bytes, box, element_strides,
      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (status != CUDA_SUCCESS)
    throw GpuError("cuTensorMapEncodeTiled failed (CUresult " + std::to_string(static_cast<int>(status)) + ")");
  return map;
}

int tiles_of(MatmulShape s) { return ((s.m + kTileM - 1) / kTileM) * ((s.n + kTileN - 1) / kTileN); }

// At most one block per multiprocessor (all resident at once, as stream-K's waits need). The last wave is
// shared only after a whole wave and when at most three quarters full: on an H100 sharing measured faster
// at 8192 (68 of 132 tiles in the last wave) and slower at 4096 (116 of 132) and 1024 (32 tiles, no whole
// wave; run issue17-streamk-h100-20261124, committed in 20aa2b5).
constexpr stream_k::TailRule kTailRule{1, 0.75};

stream_k::Plan plan_of(MatmulShape s) {
  return stream_k::plan(tiles_of(s), (s.k + kTileK - 1) / kTileK, device_attribute(cudaDevAttrMultiProcessorCount),
                        kTailRule);
}

void run(const void* a, const void* b, void* c, MatmulShape s) {
  allow_shared_memory_once();
  const CUtensorMap a_map = tensor_map(a, s.m, s.k, kTileM);
  const CUtensorMap b_map = tensor_map(b, s.k, s.n, kTileK);
  const stream_k::Plan plan = plan_of(s);
  const stream_k::Workspace workspace =
      plan.stream_k_blocks > 0 ? stream_k::workspace(kConsumers * plan.stream_k_blocks, kTileM * kTileN / kConsumers)
                               : stream_k::Workspace{};
  hgemm_wgmma<<<plan.blocks, kThreads, kSharedBytes>>>(a_map, b_map, static_cast<__half*>(c), s, plan, workspace);
  CUDA_CHECK_LAUNCH();
}

GemmLaunch launch(MatmulShape s) {
  // The occupancy query needs the kernel's shared-memory allowance; a GPU without its code cannot run it anyway.
  if (kernel_image_missing(kernel_address()).empty()) allow_shared_memory_once();
  GemmLaunch launch;
  launch.kernel = kernel_address();
  launch.threads_per_block = kThreads;
  launch.dynamic_shared_bytes = kSharedBytes;
  const stream_k::Plan plan = plan_of(s);
  launch.blocks = plan.blocks;
  launch.tile = "block " + std::to_string(kTileM) + "x" + std::to_string(kTileN) + "x" + std::to_string(kTileK) +
                ", 2 consumer warpgroups of wgmma m64n256k16 and a TMA producer warpgroup, " +
                std::to_string(kStages) + " stages (mbarriers), persistent over " + std::to_string(tiles_of(s)) +
                " tiles in bands of " + std::to_string(kBandRows) + " tile rows";
  if (plan.stream_k_blocks > 0)
    launch.tile += ", stream-K: the last " + std::to_string(plan.stream_k_tiles()) + " tiles shared by " +
                   std::to_string(plan.stream_k_blocks) + " blocks";
  return launch;
}

std::string unsupported(MatmulShape s) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return "needs a non-empty product (TMA boxes of an empty matrix)";
  const std::string unaligned = fp16_rows_unaligned(s);
  if (!unaligned.empty()) return unaligned;
  const int major = device_attribute(cudaDevAttrComputeCapabilityMajor);
  const int minor = device_attribute(cudaDevAttrComputeCapabilityMinor);
  if (major != 9 || minor != 0)
    return "wgmma, TMA and setmaxnreg are built for sm_90a, which runs on compute capability 9.0 only; this GPU is " +
           std::to_string(major) + "." + std::to_string(minor);
  return kernel_image_missing(kernel_address());
}

}  // namespace

GemmRung hgemm_03_wgmma() { return {run, launch, unsupported}; }

}  // namespace gpubench

#else  // a CUDA compiler too old for sm_90a and the versioned driver entry points (kernels/CMakeLists.txt)

#include <stdexcept>
#include <string>

namespace gpubench {

GemmRung hgemm_03_wgmma() {
  static const char* const kReason = "this build has no sm_90a code (it needs nvcc 12.5 or newer)";
  GemmRung rung;
  rung.run = [](const void*, const void*, void*, MatmulShape) { throw std::logic_error(kReason); };
  rung.launch = [](MatmulShape) { return GemmLaunch{}; };
  rung.unsupported = [](MatmulShape) { return std::string(kReason); };
  return rung;
}

}  // namespace gpubench

#endif
