// A chunked copy/compute pipeline as data: which operations the host enqueues, on which
// stream, in which order; and a model of the GPU's engines that says how long a given
// order takes. Portable C++ (no CUDA), so the scheduling logic is tested in CI against
// the model's clock; the GPU side (kernels/overlap_pipeline) enqueues the same list with
// cudaMemcpyAsync and kernels on real streams.
#pragma once

#include <vector>

namespace gpubench {

// The units (rows) of one chunk: chunks differ by at most one unit, the first ones larger,
// so any chunk count up to `units` covers the work exactly once.
struct ChunkRange {
  int begin = 0;
  int count = 0;
};
ChunkRange chunk_range(int units, int chunks, int chunk);

enum class Stage { copy_in, compute, copy_out };

struct PipelineOp {
  Stage stage;
  int chunk;
  int stream;  // chunk % streams
};

// Every chunk's copy-in, compute and copy-out, chunk i on stream i % streams, in the order
// the host issues them: chunk i's copy-in, chunk i-1's compute and chunk i-2's copy-out in
// one step (copy-out first). Throws std::invalid_argument unless both counts are positive.
std::vector<PipelineOp> pipeline_schedule(int chunks, int streams);

// How long each stage of one chunk takes on its engine.
struct StageDurations {
  double copy_in = 0;
  double compute = 0;
  double copy_out = 0;
};

// The model: an operation starts when the previous operation on its stream has finished
// and its engine is free; each engine runs its operations one at a time in issue order.
// Engines: one compute engine, and two copy engines (host->device and device->host, as
// on current GPUs) or one copy engine shared by both directions (copy_engines == 1, as on
// GPUs whose cudaDevAttrAsyncEngineCount is 1). Returns the time the last one finishes.
double simulate_makespan(const std::vector<PipelineOp>& ops, const StageDurations& durations, int copy_engines = 2);

}  // namespace gpubench
