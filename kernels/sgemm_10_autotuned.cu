// Rung 10: tile shapes tuned on the GPU at hand. Twelve instantiations of rung 9's warp-tiled pipeline,
// from 64 x 64 block tiles (many blocks for mid-sized matrices) to 128 x 256 and 256 x 128 ones with
// 16 x 8 outputs a thread (fewest shared-memory reads per product), 8 or 16 deep, in 3 or 4 stages,
// walking the tiles in raster order or in bands of tile rows; and four run stream-K (the tiles past the
// last whole wave shared evenly by all multiprocessors, sgemm_stream_k.cuh). The first call at a
// (device, shape) times each a few times with CUDA events and keeps the fastest. n % 4 == 0.
#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "core/gpu_runtime.hpp"
#include "gemm_ladder.cuh"
#include "sgemm_10_candidates.cuh"
#include "sgemm_blocktile.cuh"
#include "sgemm_rung.cuh"
#include "sgemm_stream_k.cuh"
#include "vector_access.cuh"

namespace gpubench {
namespace {

using sgemm_blocked::StreamK;
using sgemm_blocked::WarpTiled;

struct Candidate {
  void (*run)(const float* a, const float* b, float* c, MatmulShape s);
  GemmLaunch (*launch)(MatmulShape s);
};

template <class Config>
constexpr Candidate candidate() {
  return {&Config::Sgemm::run, &Config::Sgemm::launch};
}

// Block BM x BN x BK, warp WM x WN, thread TM x TN, stages, and the bands of tile rows blocks walk
// (0: raster order). The large tiles with 16-deep slices take half the barriers per product of their
// 8-deep versions; bands keep the panels of A and B that the resident blocks share in L2. Stream-K
// (the last ones): at 4096 the 512 tiles of 128 x 256 are 3.9 waves on 132 multiprocessors, whose last
// leaves an eighth of them idle; stream-K splits that wave's k-slices over all of them.
const std::array<Candidate, 16> kCandidates = {
    candidate<WarpTiled<128, 128, 16, 64, 32, 8, 8, 3>>(),   // rung 9's
    candidate<WarpTiled<128, 128, 8, 32, 64, 8, 8, 4>>(),
    candidate<WarpTiled<128, 256, 8, 64, 64, 16, 8, 3>>(),
    candidate<WarpTiled<256, 128, 8, 64, 64, 8, 16, 3>>(),
    candidate<WarpTiled<128, 64, 16, 64, 32, 8, 8, 3>>(),    // 128 threads: twice rung 9's blocks
    candidate<WarpTiled<64, 64, 16, 32, 32, 8, 4, 3>>(),     // 128 threads: four times rung 9's blocks
    candidate<WarpTiled<128, 256, 16, 64, 64, 16, 8, 3>>(),
    candidate<WarpTiled<256, 128, 16, 64, 64, 8, 16, 3>>(),
    candidate<WarpTiled<128, 256, 8, 64, 64, 16, 8, 3, 8>>(),
    candidate<WarpTiled<128, 256, 16, 64, 64, 16, 8, 3, 8>>(),
    candidate<WarpTiled<128, 256, 8, 64, 64, 16, 8, 4>>(),
    candidate<WarpTiled<256, 128, 8, 64, 64, 8, 16, 4>>(),
    candidate<StreamK<WarpTiled<128, 256, 8, 64, 64, 16, 8, 3>>>(),
    candidate<StreamK<WarpTiled<256, 128, 8, 64, 64, 8, 16, 3>>>(),
    candidate<StreamK<WarpTiled<128, 256, 16, 64, 64, 16, 8, 3>>>(),
    candidate<StreamK<WarpTiled<128, 128, 16, 64, 32, 8, 8, 3>>>(),  // two blocks a multiprocessor
};

// Two rounds over the candidates, each keeping its fastest timing, so that a drift in clocks during the
// first round does not decide.
constexpr int kRounds = 2;
constexpr int kCallsPerTiming = 2;

// Times every candidate at `s` on these operands and returns the fastest's index.
std::size_t fastest_candidate(const float* a, const float* b, float* c, MatmulShape s) {
  std::array<double, kCandidates.size()> best;
  best.fill(std::numeric_limits<double>::infinity());
  EventTimer timer;
  for (int round = 0; round < kRounds; ++round) {
    for (std::size_t i = 0; i < kCandidates.size(); ++i) {
      kCandidates[i].run(a, b, c, s);  // warm: caches, clocks, and the module's first launch
      timer.start();
      for (int call = 0; call < kCallsPerTiming; ++call) kCandidates[i].run(a, b, c, s);
      best[i] = std::min(best[i], timer.stop_seconds());
    }
  }
  return std::min_element(best.begin(), best.end()) - best.begin();
}

// The choice per (device, m, n, k). Tuning on the caller's operands where it has them (run), on
// scratch operands of the shape otherwise (launch): any finite values serve for timing.
std::size_t chosen_candidate(MatmulShape s, const float* a, const float* b, float* c) {
  static std::mutex mutex;
  static std::map<std::tuple<int, int, int, int>, std::size_t> choices;
  int device = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_tuple(device, s.m, s.n, s.k);
  if (const auto found = choices.find(key); found != choices.end()) return found->second;
  std::size_t choice = 0;
  if (a != nullptr) {
    choice = fastest_candidate(a, b, c, s);
  } else {
    DeviceBuffer<float> scratch_a(s.a_elements()), scratch_b(s.b_elements()), scratch_c(s.c_elements());
    CUDA_CHECK(cudaMemset(scratch_a.get(), 0x3F, scratch_a.bytes()));  // 0x3F3F3F3F: about 0.75
    CUDA_CHECK(cudaMemset(scratch_b.get(), 0x3F, scratch_b.bytes()));
    choice = fastest_candidate(scratch_a.get(), scratch_b.get(), scratch_c.get(), s);
  }
  choices.emplace(key, choice);
  return choice;
}

void run(const void* a, const void* b, void* c, MatmulShape s) {
  require_vector_alignment("sgemm_10_autotuned", a, b, c);
  const auto* a_f = static_cast<const float*>(a);
  const auto* b_f = static_cast<const float*>(b);
  auto* c_f = static_cast<float*>(c);
  kCandidates[chosen_candidate(s, a_f, b_f, c_f)].run(a_f, b_f, c_f, s);
}

GemmLaunch launch(MatmulShape s) {
  const std::size_t choice = chosen_candidate(s, nullptr, nullptr, nullptr);
  GemmLaunch chosen = kCandidates[choice].launch(s);
  chosen.tile += "; candidate " + std::to_string(choice + 1) + " of " + std::to_string(kCandidates.size()) +
                 ", the fastest here";
  return chosen;
}

std::string unsupported(MatmulShape s) { return float4_rows_unsupported(s, false); }

}  // namespace

GemmRung sgemm_10_autotuned() { return {run, launch, unsupported}; }

int sgemm_10_candidates() { return static_cast<int>(kCandidates.size()); }

GemmLaunch sgemm_10_candidate_launch(int index, MatmulShape s) { return kCandidates.at(index).launch(s); }

void sgemm_10_run_candidate(int index, const float* a, const float* b, float* c, MatmulShape s) {
  kCandidates.at(index).run(a, b, c, s);
}

}  // namespace gpubench
