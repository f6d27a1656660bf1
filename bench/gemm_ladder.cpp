// The gemm_ladder study: hand-written GEMM kernels, one rung per step from a naive launch to the
// library's speed, each timed and verified beside cuBLAS on the same random inputs.
//   fp32: the SGEMM ladder (kernels/sgemm_NN_*.cu) on the CUDA cores against cuBLAS SGEMM;
//   fp16: the tensor-core ladder (kernels/hgemm_NN_*.cu), FP16 in, FP32 accumulate, FP16 out, against
//         cuBLAS's FP16 GEMM with FP32 accumulation (the precision study's fp16 entry).
// Every rung reports how it launches at the entry's size (its main kernel's registers per thread,
// shared memory per block, theoretical occupancy from the occupancy API, the grid, the tiling); the
// driver sets its rate against cuBLAS's at the same size and precision. Operands resident, device time.
// Entries: gemm_ladder/<rung>/gpu/resident/<fp32|fp16>/n:<n> (C = A*B, all n x n); docs/gemm-ladder.md.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/json.hpp"
#include "core/precision.hpp"
#include "core/precision_codec.hpp"
#include "core/random.hpp"
#include "core/reference.hpp"
#include "core/verify.hpp"
#include "harness/study.hpp"

#if GPUBENCH_HAVE_CUDA
#include "core/kernel_occupancy.hpp"
#include "harness/gpu_entry.hpp"
#include "gemm_ladder.cuh"
#include "matmul_cublas_precisions.hpp"
#endif

namespace gpubench {
namespace {

#if GPUBENCH_HAVE_CUDA
struct LadderRow : Implementation {
  GemmRung (*rung)();
  const char* description;
};

// cuBLAS as a rung without a kernel of its own to describe: the yardstick of each ladder.
template <Precision P>
GemmRung cublas_rung() {
  GemmRung rung;
  rung.run = [](const void* a, const void* b, void* c, MatmulShape shape) {
    gemm_cublas_precision(P, a, b, c, shape, nullptr);
  };
  return rung;
}

LadderRow row(const char* id, const char* precision, GemmRung (*rung)(), const char* description, int max_size = 0,
              const char* cap_reason = "") {
  return {{id, Device::gpu, {mode_name(Mode::resident)}, {precision}, max_size, cap_reason}, rung, description};
}

std::vector<LadderRow> implementations() {
  constexpr const char* kSlowCap = "a call at 8192 takes seconds at this rung's rate and shows nothing new";
  return {
      row("cublas", "fp32", cublas_rung<Precision::fp32>,
          "cuBLAS SGEMM (through cuBLASLt, FP32 compute, no TF32)"),
      row("sgemm_01_naive_16x128", "fp32", sgemm_01_naive_16x128,
          "the walk-through's launch: 16 blocks of 128 threads, a grid-stride loop over C, operands from global memory",
          1024, "16 blocks of 128 threads take tenths of a second at 1024; a call at 4096 takes many seconds"),
      row("sgemm_02_naive_full_grid", "fp32", sgemm_02_naive_full_grid,
          "one thread per element of C on a full grid, a warp along a column of C (uncoalesced)", 4096, kSlowCap),
      row("sgemm_03_coalesced", "fp32", sgemm_03_coalesced,
          "one thread per element of C, a warp along a row of C: B's loads and C's stores coalesced", 4096, kSlowCap),
      row("sgemm_04_shared_tiles", "fp32", sgemm_04_shared_tiles, "32 x 32 tiles of A and B staged in shared memory"),
      row("sgemm_05_blocktile_1d", "fp32", sgemm_05_blocktile_1d, "each thread computes a column of outputs"),
      row("sgemm_06_blocktile_2d", "fp32", sgemm_06_blocktile_2d, "each thread computes a 2-D block of outputs"),
      row("sgemm_07_vectorized", "fp32", sgemm_07_vectorized, "16-byte loads from global and shared memory"),
      row("sgemm_08_cp_async", "fp32", sgemm_08_cp_async, "tiles copied asynchronously (cp.async) in a three-stage pipeline"),
      row("sgemm_09_warptile", "fp32", sgemm_09_warptile, "block tile, warp tile, thread tile"),
      row("sgemm_10_autotuned", "fp32", sgemm_10_autotuned,
          "the warp-tiled kernel with the tile shape timed fastest on this GPU at this size"),
      row("cublas", "fp16", cublas_rung<Precision::fp16>,
          "cuBLAS FP16 GEMM (through cuBLASLt, FP16 in and out, FP32 accumulation)"),
      row("hgemm_01_wmma", "fp16", hgemm_01_wmma, "WMMA fragments, cp.async double buffering"),
      row("hgemm_02_mma_sync", "fp16", hgemm_02_mma_sync, "mma.sync with ldmatrix, a multi-stage cp.async pipeline"),
      row("hgemm_03_wgmma", "fp16", hgemm_03_wgmma,
          "Hopper: wgmma fed by TMA, producer and consumer warpgroups, a persistent stream-K schedule"),
  };
}
#else
struct LadderRow : Implementation {};
std::vector<LadderRow> implementations() { return {}; }
#endif

const std::vector<LadderRow>& table() {
  static const std::vector<LadderRow> all = implementations();
  return all;
}

// Uniform random operands of one size and their FP64 product, shared by both ladders.
const MatmulProblem& problem_for(int n) {
  static ProblemCache<int, MatmulProblem> cache;
  require_host_memory(48.0 * n * n);  // operands, their FP16 encoding, the reference, an output decoded
  return cache.get(n, [n] { return random_matmul_problem({n, n, n}, n); });
}

// The operands in one ladder's format, kept while that ladder's entries run.
const EncodedOperands& encoded_for(const MatmulProblem& problem, Precision precision) {
  static ProblemCache<std::pair<int, Precision>, EncodedOperands> cache;
  return cache.get({problem.shape.n, precision},
                   [&] { return encode_operands(precision, problem.a, problem.b, problem.shape); });
}

#if GPUBENCH_HAVE_CUDA
// How the rung launches here, as counters (what the occupancy API says of its main kernel) and the
// label (its tiling and what limits its occupancy).
void report_launch(PreparedEntry& entry, const GemmLaunch& launch) {
  const KernelOccupancy o = kernel_occupancy(launch.kernel, launch.threads_per_block, launch.dynamic_shared_bytes);
  entry.counters["threads_per_block"] = launch.threads_per_block;
  entry.counters["grid_blocks"] = static_cast<double>(launch.blocks);
  entry.counters["registers_per_thread"] = o.registers_per_thread;
  entry.counters["shared_bytes_per_block"] = static_cast<double>(o.shared_bytes_per_block);
  entry.counters["blocks_per_multiprocessor"] = o.blocks_per_multiprocessor;
  entry.counters["theoretical_occupancy"] = o.occupancy();
  std::string limits;
  for (const std::string& limit : o.limited_by) limits += (limits.empty() ? "" : ", ") + limit;
  entry.label = launch.tile + (limits.empty() ? "" : "; occupancy limited by " + limits);
}

// Operands copied to the device once; the first call on a NaN-poisoned C, checked against the FP64
// product within the precision's tolerance (the FP16 ladder's includes rounding the inputs).
std::unique_ptr<PreparedEntry> ladder_entry(const GemmRung& rung, const std::string& mode, Precision precision,
                                            const MatmulProblem& problem) {
  const MatmulShape shape = problem.shape;
  const GemmOperandBytes bytes = gemm_operand_bytes(precision, shape);
  require_device_memory(bytes.total());  // before the encoding: an entry that cannot fit skips at once
  const EncodedOperands& encoded = encoded_for(problem, precision);
  auto entry = std::make_unique<GpuEntry<std::uint8_t>>(
      std::vector{&encoded.a, &encoded.b}, bytes.output, mode,
      [run = rung.run, shape](const std::vector<const std::uint8_t*>& in, std::uint8_t* c) {
        run(in[0], in[1], c, shape);
      });
  const Tolerance tolerance = precision_tolerance(precision, shape.k);
  entry->set_verdict(verify_encoded_output(precision, entry->output(), encoded, problem.reference, tolerance));
  entry->counters["tolerance"] = tolerance.rel_fro;
  entry->counters["flop"] = shape.flop();
  entry->add_memory_traffic(static_cast<double>(encoded.a.size() + encoded.b.size()),
                            static_cast<double>(bytes.output));
  if (rung.launch) report_launch(*entry, rung.launch(shape));
  return entry;
}

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<LadderRow>(entry);
  const GemmRung rung = impl.rung();
  const MatmulShape shape{entry.n, entry.n, entry.n};
  if (rung.unsupported) {
    const std::string reason = rung.unsupported(shape);
    if (!reason.empty()) throw EntrySkipped(reason);
  }
  return ladder_entry(rung, entry.mode, precision_named(entry.precision), problem_for(entry.n));
}

Json describe_rung(const Implementation& impl) {
  return {{"description", static_cast<const LadderRow&>(impl).description}};
}
#else
std::unique_ptr<PreparedEntry> prepare(const Entry&) { throw EntrySkipped("built without CUDA"); }
Json describe_rung(const Implementation&) { return {{"description", nullptr}}; }
#endif  // GPUBENCH_HAVE_CUDA

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "gemm_ladder";
  study.implementations = rows(table());
  study.modes = {mode_name(Mode::resident)};
  // The 1024, 4096 and 8192, and 1000: a size no rung's tile divides, so every rung's edge
  // handling is checked on each run (rungs that need multiples of their vector width say so).
  study.default_sizes = {1000, 1024, 4096, 8192};
  study.axes.impl = "rung";
  // The driver's default suite: every rung of both ladders and cuBLAS at 4096, where the targets are
  // judged (8192, the other target size, and 1000 and 1024: --full or --sizes): 15 entries, the slow rungs
  // (the naive kernels) at most a few tenths of a second a call there. --quick: 1024.
  study.quick.sizes = {1024};
  study.suite.sizes = {4096};
  study.counters = {
      {"flop", "FLOP", "2 n^3 a call"},
      {"memory_read_bytes", "bytes", "A and B once, in the ladder's input format"},
      {"memory_written_bytes", "bytes", "C once, in its output format"},
      kRelFroErrorCounter,
      kMaxRelErrorCounter,
      {"tolerance", "ratio", "the rel_fro_error the entry is held to: " + tolerance_rule()},
      {"threads_per_block", "threads", "the rung's launch (rungs of our own kernels)"},
      {"grid_blocks", "blocks", "the rung's launch"},
      {"registers_per_thread", "count", "the rung's kernel"},
      {"shared_bytes_per_block", "bytes", "static and dynamic shared memory of a block"},
      {"blocks_per_multiprocessor", "count", "the kernel's resident blocks at its block size"},
      {"theoretical_occupancy", "fraction", "resident warps of a multiprocessor over the most it holds"}};
  study.prepare = prepare;
  study.describe = [] {
    return Json{{"ladders",
                 {{"fp32", "SGEMM on the CUDA cores"},
                  {"fp16", "FP16 in, FP32 accumulate, FP16 out, on the tensor cores"}}}};
  };
  study.describe_implementation = describe_rung;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
