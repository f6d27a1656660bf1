// The chunked copy/compute pipeline on real streams: the schedule of common/pipeline
// enqueued with cudaMemcpyAsync, kernels and cuBLAS calls, timed with CUDA events, for the
// overlap study's two workloads (SAXPY and the transfer-inclusive matmul).
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <memory>
#include <vector>

#include "core/gpu_runtime.hpp"
#include "core/pipeline.hpp"

namespace gpubench {

// One run of a pipeline. The study's copy_only and compute_only schedules are this
// pipeline with the other kind of operation left out, in the same order on the same streams.
struct PipelineSpec {
  int chunks = 1;
  int streams = 1;  // chunk i runs on stream i % streams
  bool copies = true;
  bool compute = true;
};

// A stream of a pipeline, and which of its streams it is.
struct Lane {
  cudaStream_t stream;
  int index;
};

// A chunked operation: `units` rows split into chunks, and what each stage enqueues for the
// rows of one chunk on a lane.
struct ChunkedOperation {
  int units = 0;
  std::function<void(cudaStream_t)> shared_in;  // an input every chunk needs (matmul's B), copied first; may be empty
  std::function<void(ChunkRange rows, const Lane& lane)> copy_in, compute, copy_out;
};

struct StreamDestroyer {
  void operator()(cudaStream_t stream) const { cudaStreamDestroy(stream); }
};
struct EventDestroyer {
  void operator()(cudaEvent_t event) const { cudaEventDestroy(event); }
};

// The streams and events of a pipeline, created once per configuration: creating them is
// not part of what the study times.
class PipelineStreams {
 public:
  explicit PipelineStreams(int count);

  int count() const { return static_cast<int>(streams_.size()); }
  Lane lane(int index) const { return {streams_.at(index).get(), index}; }

  // Enqueues `operation` as `spec` says, waits for it and returns its duration in seconds.
  // Throws std::invalid_argument for more chunks than rows or more streams than it has.
  double run(const ChunkedOperation& operation, const PipelineSpec& spec);

 private:
  std::vector<std::unique_ptr<CUstream_st, StreamDestroyer>> streams_;
  std::unique_ptr<CUevent_st, EventDestroyer> start_, stop_, ready_;
  std::vector<std::unique_ptr<CUevent_st, EventDestroyer>> done_;  // one per stream
};

// One cuBLAS workspace per lane: GEMMs running at once on different streams must not
// share one, and a workspace given up front keeps cuBLAS from allocating in a timed run.
class LaneWorkspaces {
 public:
  static constexpr std::size_t kBytes = 32u << 20;  // as the shared handle's (cublas_handle)
  explicit LaneWorkspaces(int lanes);
  void* get(int lane) const { return buffers_.at(lane)->get(); }

 private:
  std::vector<std::unique_ptr<DeviceBuffer<unsigned char>>> buffers_;
};

// The arrays of a workload: two inputs and one output, each n x n floats, row-major, on the
// host (pinned or pageable) and on the device. Chunks are ranges of rows.
struct OverlapArrays {
  int n = 0;
  const float* host_in[2] = {nullptr, nullptr};
  float* host_out = nullptr;
  float* device_in[2] = {nullptr, nullptr};
  float* device_out = nullptr;

  std::size_t elements() const { return static_cast<std::size_t>(n) * n; }
};

// y = a*x + y over n*n elements: in[0] = x, in[1] = y, both copied in per chunk; the result
// overwrites y on the device (device_out must be device_in[1]) and goes to host_out.
ChunkedOperation saxpy_operation(float a, const OverlapArrays& arrays);

// C = A*B: in[0] = A, copied in by chunks of rows; in[1] = B, copied once before the chunks
// (every chunk needs all of it); out = C, the same rows as the chunk of A. cuBLAS SGEMM on
// the shared handle, set to the chunk's stream and that lane's workspace for the call and
// set back to the default stream after it. `workspaces` must outlive the operation.
ChunkedOperation matmul_operation(const OverlapArrays& arrays, const LaneWorkspaces& workspaces);

}  // namespace gpubench
