#include "core/collectives.hpp"

#include <cmath>
#include <stdexcept>

namespace gpubench {

const char* collective_name(Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return "all_reduce";
    case Collective::all_gather: return "all_gather";
    case Collective::reduce_scatter: return "reduce_scatter";
    case Collective::broadcast: return "broadcast";
    case Collective::all_to_all: return "all_to_all";
  }
  throw std::invalid_argument("unknown collective");
}

bool sums(Collective collective) {
  return collective == Collective::all_reduce || collective == Collective::reduce_scatter;
}

CollectiveCounts collective_counts(Collective collective, std::size_t bytes, int ranks) {
  const std::size_t elements = bytes / 4, part = elements / static_cast<std::size_t>(ranks);
  const std::size_t parts = part * static_cast<std::size_t>(ranks);
  switch (collective) {
    case Collective::all_reduce:
    case Collective::broadcast: return {elements, elements};
    case Collective::all_gather: return {part, parts};
    case Collective::reduce_scatter: return {parts, part};
    case Collective::all_to_all: return {parts, parts};
  }
  throw std::invalid_argument("unknown collective");
}

double bus_bandwidth_factor(Collective collective, int ranks) {
  const double n = ranks;
  switch (collective) {
    case Collective::all_reduce: return 2 * (n - 1) / n;
    case Collective::broadcast: return 1;
    case Collective::all_gather:
    case Collective::reduce_scatter:
    case Collective::all_to_all: return (n - 1) / n;
  }
  throw std::invalid_argument("unknown collective");
}

namespace {

// Output element i of `rank` in a copying collective: which rank's input it is, and where in it.
struct Source {
  std::size_t rank;
  std::size_t index;
};

Source copied_from(Collective collective, int rank, std::size_t ranks, std::size_t i, const CollectiveCounts& counts) {
  switch (collective) {
    case Collective::all_gather: return {i / counts.send, i % counts.send};
    case Collective::broadcast: return {0, i};
    case Collective::all_to_all: {
      // Chunk q of this rank's output is chunk `rank` of rank q's input.
      const std::size_t chunk = counts.recv / ranks;
      return {i / chunk, static_cast<std::size_t>(rank) * chunk + i % chunk};
    }
    default: throw std::invalid_argument(std::string(collective_name(collective)) + " does not copy");
  }
}

Verification verify_copy(Collective collective, const float* output, const std::vector<std::vector<float>>& inputs,
                         int rank, const CollectiveCounts& counts) {
  std::vector<float> expected(counts.recv);
  const long elements = static_cast<long>(counts.recv);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < elements; ++i) {
    const Source source = copied_from(collective, rank, inputs.size(), static_cast<std::size_t>(i), counts);
    expected[i] = inputs[source.rank][source.index];
  }
  return verify_exact(output, expected.data(), counts.recv);
}

Verification verify_sum(Collective collective, const float* output, const std::vector<std::vector<float>>& inputs,
                        int rank, const CollectiveCounts& counts) {
  // reduce-scatter's output is slice `rank` of the sum; all-reduce's the whole of it.
  const std::size_t offset = collective == Collective::reduce_scatter ? static_cast<std::size_t>(rank) * counts.recv : 0;
  const double bound = 2.0 * static_cast<double>(inputs.size() - 1) * kFp32UnitRoundoff;
  double diff_sq = 0, ref_sq = 0, bound_sq = 0, max_diff = 0, max_ref = 0, max_bound = 0;
  std::size_t non_finite = 0;
  const long elements = static_cast<long>(counts.recv);
#pragma omp parallel for schedule(static) reduction(+ : diff_sq, ref_sq, bound_sq, non_finite) \
    reduction(max : max_diff, max_ref, max_bound)
  for (long i = 0; i < elements; ++i) {
    double sum = 0, magnitude = 0;
    for (const std::vector<float>& input : inputs) {
      sum += input[offset + i];
      magnitude += std::fabs(static_cast<double>(input[offset + i]));
    }
    if (!std::isfinite(output[i])) {
      ++non_finite;
      continue;
    }
    const double diff = std::fabs(static_cast<double>(output[i]) - sum);
    diff_sq += diff * diff;
    ref_sq += sum * sum;
    bound_sq += bound * magnitude * bound * magnitude;
    max_diff = std::fmax(max_diff, diff);
    max_ref = std::fmax(max_ref, std::fabs(sum));
    max_bound = std::fmax(max_bound, bound * magnitude);
  }
  // Errors relative to the reference, as every check reports them; the element bound, summed and
  // maximised the same way, relative to the same reference, is the tolerance.
  const auto relative = [](double value, double reference) {
    return reference > 0 ? value / reference : (value > 0 ? INFINITY : 0.0);
  };
  Verification v;
  v.non_finite = non_finite;
  v.rel_fro_error = relative(std::sqrt(diff_sq), std::sqrt(ref_sq));
  v.max_rel_error = relative(max_diff, max_ref);
  v.tolerance = {relative(std::sqrt(bound_sq), std::sqrt(ref_sq)), relative(max_bound, max_ref)};
  return v;
}

}  // namespace

Verification verify_collective(Collective collective, const float* output, const std::vector<std::vector<float>>& inputs,
                               int rank, const CollectiveCounts& counts) {
  return sums(collective) ? verify_sum(collective, output, inputs, rank, counts)
                          : verify_copy(collective, output, inputs, rank, counts);
}

}  // namespace gpubench
