// The mandelbrot study: the escape-time image, the classic demonstration that a GPU is many times
// faster than a CPU, measured against compiled C++ rather than interpreted Python. Work per pixel
// varies from one iteration to the limit, so it is compute-bound and divergent: a warp runs as long
// as its slowest pixel (the warp_divergence counter says how much that costs here).
//   CPU: the scalar loop on one thread and on all cores (rows handed out dynamically), and SIMD
//        lanes on all cores;
//   GPU: our kernel, one pixel per thread in 16 x 16 blocks, each operation rounded on its own
//        (`kernel`, bit for bit the CPU's counts) or contracted into FMAs by nvcc (`kernel_fma`);
//        resident (the counts stay on the device: the kernel alone, as the guide timed it) and with
//        the count image copied back to ordinary host memory (transfer_pageable).
// Every image is the guide's region, x in [-2, 1] and y in [-1, 1], at another resolution: the size
// axis n is its height in pixels, its width 1.5 n (rounded), so any n is an image and the guide's
// 1536 x 1024 is n = 1024. The batch axis is the iteration limit: the guide's configuration is n = 1024
// at 20 iterations (in FP64, as the guide computed; counts as bytes, as every limit below 255 stores them).
// Entries: mandelbrot/<impl>/<device>/<mode>/<fp32|fp64>/n:<rows>/batch:<max iterations>.
#include <cmath>
#include <cstdint>
#include <functional>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/json.hpp"
#include "core/mandelbrot.hpp"
#include "core/system.hpp"
#include "harness/cpu_entry.hpp"
#include "harness/study.hpp"
#include "mandelbrot_cpu.hpp"

#if GPUBENCH_HAVE_CUDA
#include "harness/gpu_entry.hpp"
#include "mandelbrot.cuh"
#endif

namespace gpubench {
namespace {

// --- the images: the size axis ----------------------------------------------------------------
constexpr double kXMin = -2.0, kXMax = 1.0, kYMin = -1.0, kYMax = 1.0;  // the guide's region
constexpr int kGuideRows = 1024;
constexpr int kGuideIterations = 20;
const char* const kGuidePrecision = "fp64";
const char* const kCountImageFile = "mandelbrot_counts.pgm";

constexpr double kAspect = (kXMax - kXMin) / (kYMax - kYMin);

// n rows of round(1.5 n) pixels: square pixels over the region.
MandelbrotImage image_of(int n, int max_iterations) {
  return {static_cast<int>(std::lround(n * kAspect)), n, kXMin, kXMax, kYMin, kYMax, max_iterations};
}

bool is_guide(const Entry& entry) {
  return entry.n == kGuideRows && entry.batch == kGuideIterations && entry.precision == kGuidePrecision;
}

// The most rows whose image's pixels (n * n * kAspect of them) an int counts: the study's largest size.
// (Its largest batch, kLargestIterationLimit, leaves the count type room for the poison.)
int largest_rows() {
  const auto fits = [](double n) { return n * n * kAspect <= INT32_MAX; };
  int n = static_cast<int>(std::sqrt(INT32_MAX / kAspect));
  while (fits(n + 1.0)) ++n;
  while (!fits(n)) --n;
  return n;
}

// --- the implementation table ------------------------------------------------------------
struct MandelbrotImplementation : Implementation {
  MandelbrotFn run;
  bool contracted = false;  // its arithmetic may fuse operations the reference rounds apart
  const char* description = "";
};

std::vector<MandelbrotImplementation> implementations() {
  const std::vector<std::string> cpu = {mode_name(Mode::host)};
  const std::vector<std::string> gpu = mode_names({Mode::resident, Mode::transfer_pageable});
  const std::vector<std::string> precisions = {"fp32", "fp64"};
  return {
      {{"loop_1thread", Device::cpu, cpu, precisions, kGuideRows,
        "one thread at 3072 x 2048 pixels and 4096 iterations takes seconds a call, at 12288 x 8192 minutes: the "
        "all-threads rows cover the larger images (--caps=loop_1thread=0 lifts it for a one-core ratio there)",
        one_thread},
       mandelbrot_loop, false, "one pixel after the other on one thread: the compiled form of the guide's Python"},
      {{"loop_all_threads", Device::cpu, cpu, precisions, 4096,
        "the SIMD loop covers the largest images on all cores; the scalar one would add seconds a call",
        openmp_threads},
       mandelbrot_loop_parallel, false,
       "the scalar loop, rows handed out one at a time to all OpenMP threads (schedule(dynamic))"},
      {{"simd_all_threads", Device::cpu, cpu, precisions, 0, "", openmp_threads}, mandelbrot_simd_parallel, false,
       "groups of 64 bytes of pixels of a row iterated together in SIMD lanes until all have escaped, rows handed "
       "out dynamically to all OpenMP threads"},
#if GPUBENCH_HAVE_CUDA
      {{"kernel", Device::gpu, gpu, precisions}, mandelbrot_kernel, false,
       "one pixel per thread, 16 x 16-thread blocks; each multiply and add rounded on its own (__fmul_rn, "
       "__fadd_rn): the CPU's counts bit for bit"},
      // Its copy back would time the same copy as kernel's: only its device time says something new.
      {{"kernel_fma", Device::gpu, mode_names({Mode::resident}), precisions}, mandelbrot_kernel_fma, true,
       "the same kernel with plain operators, which nvcc contracts into fused multiply-adds (its default)"},
#endif
  };
}

const std::vector<MandelbrotImplementation>& table() {
  static const std::vector<MandelbrotImplementation> all = implementations();
  return all;
}

// --- the reference, shared by every entry of one configuration ------------------------------------
// Computed by the fastest CPU loop, the SIMD one (tests/test_mandelbrot_cpu.cpp holds every CPU loop to
// the formula evaluated pixel by pixel): the largest images take seconds on all cores.
struct MandelbrotProblem {
  MandelbrotImage image;
  Precision precision = Precision::fp64;
  std::vector<std::uint8_t> reference;  // the counts, each image.count_bytes() wide
  double iterations = 0;                // what the formula ran over the whole image
  double divergence = 1;                // warp_divergence of the counts
};

const MandelbrotProblem& problem_for(const Entry& entry) {
  static ProblemCache<std::tuple<int, int, std::string>, MandelbrotProblem> cache;
  const MandelbrotImage image = image_of(entry.n, entry.batch);
  require_host_memory(3.0 * image.bytes());  // the reference, an entry's counts and a copy of them
  return cache.get({entry.n, entry.batch, entry.precision}, [&] {
    MandelbrotProblem problem;
    problem.image = image;
    problem.precision = precision_named(entry.precision);
    problem.reference.resize(image.bytes());
    mandelbrot_simd_parallel(problem.precision, image, problem.reference.data());
    problem.iterations = executed_iterations(image, problem.reference.data());
    problem.divergence = warp_divergence(image, problem.reference.data());
    return problem;
  });
}

std::string pixel_name(const MandelbrotImage& image, std::size_t i) {
  return "(" + std::to_string(i % image.width) + ", " + std::to_string(i / image.width) + ")";
}

// The counts against the reference: none out of range (a count never written keeps its poison), and
// none different unless the arithmetic contracts, then at most kMandelbrotContractedDifferingFraction
// of the pixels: only orbits that pass within rounding of the escape test change (docs/methodology.md).
void check(PreparedEntry& entry, const MandelbrotImplementation& impl, const void* counts,
           const MandelbrotProblem& problem) {
  const MandelbrotImage& image = problem.image;
  const CountComparison found = compare_counts(image, counts, problem.reference.data());
  entry.counters["differing_pixels"] = static_cast<double>(found.differing);
  entry.counters["max_count_difference"] = found.max_difference;
  const double allowed = impl.contracted ? std::floor(kMandelbrotContractedDifferingFraction * image.pixels()) : 0.0;
  entry.counters["allowed_differing_pixels"] = allowed;
  if (found.out_of_range > 0) {
    entry.wrong_result = std::to_string(found.out_of_range) + " counts above the iteration limit (never written)";
  } else if (static_cast<double>(found.differing) > allowed) {
    const std::size_t i = found.first_differing;
    entry.wrong_result = std::to_string(found.differing) + " of " + std::to_string(image.pixels()) +
                         " pixels differ from the CPU's counts (at most " + format_number(allowed) +
                         " may), the first " +
                         pixel_name(image, i) + ": " + std::to_string(count_at(counts, image.count_bytes(), i)) +
                         " against " + std::to_string(count_at(problem.reference.data(), image.count_bytes(), i));
  }
}

// What every entry knows of its configuration: the image, the iterations and their FLOP, the
// counts written once per call (in host memory on the CPU, device memory on the GPU).
void report(PreparedEntry& entry, const MandelbrotProblem& problem) {
  const MandelbrotImage& image = problem.image;
  entry.counters["width"] = image.width;
  entry.counters["height"] = image.height;
  entry.counters["escape_iterations"] = problem.iterations;
  entry.counters["flop"] = kFlopPerIteration * problem.iterations;
  entry.add_memory_traffic(0, static_cast<double>(image.bytes()));
}

// The call on a count image, on either side: no inputs, the counts its output.
using CountsEntryCall = std::function<void(const std::vector<const std::uint8_t*>&, std::uint8_t*)>;
const std::vector<const std::vector<std::uint8_t>*> kNoInputs;

#if GPUBENCH_HAVE_CUDA
// The report's picture: the guide's configuration as the separately rounded kernel computed it
// (resident), when the run keeps files (--artifacts-dir) and the counts passed their check.
bool writes_count_image(const Entry& entry, const MandelbrotImplementation& impl) {
  return is_guide(entry) && !impl.contracted && entry.mode == mode_name(Mode::resident) &&
         !artifact_path(kCountImageFile).empty();
}

// A picture that cannot be written is said on stderr; the entry's measurement stands.
void keep_count_image(const Entry& entry, const MandelbrotImage& image, const std::uint8_t* counts) {
  try {
    write_count_image(artifact_path(kCountImageFile), image, counts,
                      "escape counts of " + entry.name + ": x in [" + format_number(image.x_min) + ", " +
                          format_number(image.x_max) + "], y in [" + format_number(image.y_min) + ", " +
                          format_number(image.y_max) + "], top row first");
  } catch (const std::runtime_error& e) {
    std::cerr << "gpubench_mandelbrot: " << e.what() << "\n";
  }
}

// Resident: the counts stay on the device (one untimed copy back for the check). transfer_pageable:
// every call copies them back into an ordinary (written) vector, as a program that shows the image does.
std::unique_ptr<PreparedEntry> prepare_gpu(const Entry& entry, const MandelbrotImplementation& impl,
                                           const MandelbrotProblem& problem, const CountsEntryCall& call) {
  auto gpu = std::make_unique<GpuEntry<std::uint8_t>>(kNoInputs, problem.image.bytes(), entry.mode, call);
  check(*gpu, impl, gpu->output(), problem);
  report(*gpu, problem);
  gpu->counters["warp_divergence"] = problem.divergence;
  if (gpu->wrong_result.empty() && writes_count_image(entry, impl))
    keep_count_image(entry, problem.image, gpu->output());
  return gpu;
}
#endif  // GPUBENCH_HAVE_CUDA

std::unique_ptr<PreparedEntry> prepare(const Entry& entry) {
  const auto& impl = row_of<MandelbrotImplementation>(entry);
  const MandelbrotProblem& problem = problem_for(entry);
  const CountsEntryCall call = [&impl, &problem](const std::vector<const std::uint8_t*>&, std::uint8_t* counts) {
    impl.run(problem.precision, problem.image, counts);
  };
#if GPUBENCH_HAVE_CUDA
  if (impl.on_gpu()) return prepare_gpu(entry, impl, problem, call);
#endif
  // Counts of its own, first written by the threads that compute (one thread: placed by it); the
  // first call runs on counts poisoned above the limit.
  auto cpu = std::make_unique<ThreadPlacedEntry<std::uint8_t>>(kNoInputs, problem.image.bytes(), call, impl.threads());
  check(*cpu, impl, cpu->output(), problem);
  report(*cpu, problem);
  return cpu;
}

// --- description -------------------------------------------------------------------------
Json describe_study() {
  const MandelbrotImage guide = image_of(kGuideRows, kGuideIterations);
  return {{"region", {{"x", {guide.x_min, guide.x_max}}, {"y", {guide.y_min, guide.y_max}}}},
          {"image", "n rows of round(1.5 n) pixels over the region: the same picture at every n"},
          {"guide",
           {{"n", kGuideRows},
            {"max_iterations", kGuideIterations},
            {"precision", kGuidePrecision},
            {"width", guide.width},
            {"height", guide.height}}},
          {"formula",
           "z = z^2 + c from z = 0; the count is the first iteration i (from 0) after which |z|^2 >= 4, else the "
           "limit; c = (x_min + x*(x_max - x_min)/width, y_min + y*(y_max - y_min)/height)"},
          {"flop_per_iteration", kFlopPerIteration},
          {"count_bytes", "1 up to " + std::to_string(kLargestByteLimit) + " iterations, 2 up to " +
                              std::to_string(kLargestIterationLimit)},
          {"block", {kBlockSide, kBlockSide}},
          {"contracted_differing_fraction", kMandelbrotContractedDifferingFraction},
          {"count_image", kCountImageFile}};
}

Json describe_implementation(const Implementation& impl) {
  const auto& row = static_cast<const MandelbrotImplementation&>(impl);
  return {{"description", row.description}, {"contracted", row.contracted}};
}

StudyDefinition definition() {
  StudyDefinition study;
  study.name = "mandelbrot";
  study.implementations = rows(table());
  study.modes = mode_names({Mode::host, Mode::resident, Mode::transfer_pageable});
  study.default_sizes = geometric(256, 8192, 2);  // 384 x 256 to 12288 x 8192 pixels; the guide's at 1024
  study.default_batches = {kGuideIterations, 256, 512, 1024, 2048, 4096};
  study.axes = {"impl", "mode", "precision", "rows", "max_iterations"};
  study.axes.n_unit = "pixels";  // rows of the image (1.5 n columns)
  study.axes.batch_unit = "iterations";
  // The driver's default suite and --quick: the guide's configuration only (1536 x 1024, 20 iterations);
  // the heavy ones (8192 rows, 4096 iterations) take seconds a call on all cores and minutes on one,
  // which --full and --sizes/--batches/--caps reach (docs/methodology.md).
  study.quick.sizes = {kGuideRows};
  study.quick.batches = {kGuideIterations};
  study.suite = study.quick;
  study.counters = {
      {"width", "pixels", "the image's columns: round(1.5 n)"},
      {"height", "pixels", "the image's rows: n"},
      {"escape_iterations", "count", "iterations the formula ran over the whole image: count + 1 for a pixel that "
                                     "escaped, the limit for one that did not"},
      {"flop", "FLOP", "8 an iteration (flop_per_iteration) x escape_iterations"},
      {"memory_read_bytes", "bytes", "0: the image is computed from its coordinates"},
      {"memory_written_bytes", "bytes", "the counts once: width x height x count bytes (count_bytes)"},
      {"differing_pixels", "pixels", "pixels whose count differs from the CPU reference's"},
      {"max_count_difference", "iterations", "the largest difference of a pixel's count from the reference's"},
      {"allowed_differing_pixels", "pixels", "0, or for an implementation that contracts its arithmetic (FMA) "
                                             "contracted_differing_fraction of the pixels"},
      {"warp_divergence", "ratio", "the sum over 32-pixel warps of their longest lane's iterations over the sum of "
                                   "their mean lane's (GPU entries)"}};
  study.largest_size = largest_rows();
  study.largest_batch = kLargestIterationLimit;
  study.prepare = prepare;
  study.describe = describe_study;
  study.describe_implementation = describe_implementation;
  return study;
}

}  // namespace
}  // namespace gpubench

int main(int argc, char** argv) { return gpubench::run_study(argc, argv, gpubench::definition()); }
