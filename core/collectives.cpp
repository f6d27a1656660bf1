#include "core/collectives.hpp"

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/collective_elements.hpp"

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

std::string CollectiveVerification::describe() const {
  std::string text = errors.describe() + "; " + std::to_string(wrong_elements) + " elements wrong";
  if (wrong_elements > 0) {
    text += " (beyond their bound, or NaN or Inf), the first at index " + std::to_string(first_wrong_element);
  }
  return text;
}

CollectiveVerification collective_verification(const CollectiveErrorSums& sums) {
  const auto relative = [](double value, double reference) {
    return reference > 0 ? value / reference : (value > 0 ? INFINITY : 0.0);
  };
  CollectiveVerification v;
  v.errors.non_finite = static_cast<std::size_t>(sums.non_finite);
  v.errors.rel_fro_error = relative(std::sqrt(sums.diff_sq), std::sqrt(sums.ref_sq));
  v.errors.max_rel_error = relative(sums.max_diff, sums.max_ref);
  v.errors.tolerance = {relative(std::sqrt(sums.bound_sq), std::sqrt(sums.ref_sq)),
                        relative(sums.max_bound, sums.max_ref)};
  v.wrong_elements = static_cast<std::size_t>(sums.wrong);
  v.first_wrong_element = sums.wrong > 0 ? static_cast<std::size_t>(sums.first_wrong) : 0;
  return v;
}

std::vector<float> seeded_input(std::uint64_t problem_seed, int rank, std::size_t count) {
  std::vector<float> values(count);
  const SeededInputs inputs{problem_seed};
  const long elements = static_cast<long>(count);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < elements; ++i) values[i] = inputs(rank, static_cast<std::size_t>(i));
  return values;
}

// Each thread's sums merged into one, in whatever grouping OpenMP chooses.
#pragma omp declare reduction(merge_sums : CollectiveErrorSums : omp_out.merge(omp_in)) \
    initializer(omp_priv = CollectiveErrorSums::none())

CollectiveVerification verify_collective(Collective collective, const float* output,
                                         const std::vector<std::vector<float>>& inputs, int rank,
                                         const CollectiveCounts& counts) {
  const int ranks = static_cast<int>(inputs.size());
  if (ranks < 1 || rank < 0 || rank >= ranks) {
    throw std::invalid_argument("verify_collective: rank outside the inputs' ranks");
  }
  const auto input = [&inputs](int r, std::size_t j) { return inputs[static_cast<std::size_t>(r)][j]; };
  CollectiveErrorSums sums = CollectiveErrorSums::none();
  const long elements = static_cast<long>(counts.recv);
#pragma omp parallel for schedule(static) reduction(merge_sums : sums)
  for (long i = 0; i < elements; ++i) {
    const auto at = static_cast<std::size_t>(i);
    sums.add(at, output[at], expected_element(collective, input, ranks, rank, counts, at));
  }
  return collective_verification(sums);
}

}  // namespace gpubench
