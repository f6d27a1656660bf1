#include "core/pipeline.hpp"

#include <algorithm>
#include <stdexcept>

namespace gpubench {

ChunkRange chunk_range(int units, int chunks, int chunk) {
  const int base = units / chunks, larger = units % chunks;
  return {chunk * base + std::min(chunk, larger), base + (chunk < larger ? 1 : 0)};
}

std::vector<PipelineOp> pipeline_schedule(int chunks, int streams) {
  if (chunks < 1 || streams < 1) throw std::invalid_argument("pipeline_schedule: chunks and streams must be positive");
  // Why this order and not chunk by chunk (in(i), compute(i), out(i), in(i+1), ...): an
  // engine runs its operations in the order they were issued. Where one DMA queue serves
  // both directions, out(i) issued before in(i+1) waits for compute(i), and in(i+1) waits
  // behind it: copy-in never overlaps compute and the pipeline degrades to the serial sum.
  // Here in(i+1) is issued a step before out(i). Within a step the copy-out comes first:
  // with two streams, chunk t-2 shares chunk t's stream, and issuing in(t) before out(t-2)
  // would make that copy-out wait for an unrelated copy-in.
  std::vector<PipelineOp> ops;
  ops.reserve(3 * static_cast<std::size_t>(chunks));
  const auto issue = [&](Stage stage, int chunk) {
    if (chunk >= 0 && chunk < chunks) ops.push_back({stage, chunk, chunk % streams});
  };
  for (int step = 0; step < chunks + 2; ++step) {
    issue(Stage::copy_out, step - 2);
    issue(Stage::compute, step - 1);
    issue(Stage::copy_in, step);
  }
  return ops;
}

double simulate_makespan(const std::vector<PipelineOp>& ops, const StageDurations& durations, int copy_engines) {
  if (copy_engines != 1 && copy_engines != 2) throw std::invalid_argument("simulate_makespan: 1 or 2 copy engines");
  enum Engine { host_to_device, device_to_host, compute, engine_count };
  double engine_free[engine_count] = {0, 0, 0};
  std::vector<double> stream_free;
  double makespan = 0;
  for (const PipelineOp& op : ops) {
    Engine engine = compute;
    double duration = durations.compute;
    if (op.stage == Stage::copy_in) {
      engine = host_to_device;
      duration = durations.copy_in;
    } else if (op.stage == Stage::copy_out) {
      engine = copy_engines == 2 ? device_to_host : host_to_device;
      duration = durations.copy_out;
    }
    if (op.stream >= static_cast<int>(stream_free.size())) stream_free.resize(op.stream + 1, 0.0);
    const double end = std::max(stream_free[op.stream], engine_free[engine]) + duration;
    stream_free[op.stream] = engine_free[engine] = end;
    makespan = std::max(makespan, end);
  }
  return makespan;
}

}  // namespace gpubench
