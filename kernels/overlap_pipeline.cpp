#include "overlap_pipeline.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/cuda_check.hpp"
#include "cublas_handle.hpp"
#include "matmul_cublas.hpp"
#include "saxpy.cuh"

namespace gpubench {
namespace {

// Non-blocking: a stream created with the default flags also waits for, and holds up, the
// legacy default stream. The pipeline orders its streams itself, with events, so that
// nothing else queued on stream 0 can insert a barrier into it.
cudaStream_t new_stream() {
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return stream;
}

cudaEvent_t new_event(unsigned flags) {
  cudaEvent_t event = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&event, flags));
  return event;
}

void enqueue(const ChunkedOperation& operation, const PipelineSpec& spec, const PipelineOp& op, const Lane& lane) {
  const ChunkRange rows = chunk_range(operation.units, spec.chunks, op.chunk);
  switch (op.stage) {
    case Stage::copy_in:
      if (spec.copies) operation.copy_in(rows, lane);
      break;
    case Stage::compute:
      if (spec.compute) operation.compute(rows, lane);
      break;
    case Stage::copy_out:
      if (spec.copies) operation.copy_out(rows, lane);
      break;
  }
}

// Rows [rows.begin, rows.begin + rows.count) of an n-column row-major array.
void copy_rows(float* to, const float* from, ChunkRange rows, int n, cudaMemcpyKind kind, cudaStream_t stream) {
  const std::size_t offset = static_cast<std::size_t>(rows.begin) * n;
  const std::size_t bytes = static_cast<std::size_t>(rows.count) * n * sizeof(float);
  CUDA_CHECK(cudaMemcpyAsync(to + offset, from + offset, bytes, kind, stream));
}

void restore_default_stream() { CUBLAS_CHECK(cublasSetStream(cublas_handle(), 0)); }

void matmul_rows(const OverlapArrays& arrays, ChunkRange rows, const Lane& lane, const LaneWorkspaces& workspaces) {
  const cublasHandle_t handle = cublas_handle();
  CUBLAS_CHECK(cublasSetStream(handle, lane.stream));
  try {
    // After cublasSetStream, which puts the handle back on cuBLAS's default workspace.
    CUBLAS_CHECK(cublasSetWorkspace(handle, workspaces.get(lane.index), LaneWorkspaces::kBytes));
    const std::size_t offset = static_cast<std::size_t>(rows.begin) * arrays.n;
    matmul_cublas(arrays.device_in[0] + offset, arrays.device_in[1], arrays.device_out + offset,
                  MatmulShape{rows.count, arrays.n, arrays.n});
  } catch (...) {
    restore_default_stream();
    throw;
  }
  restore_default_stream();
}

}  // namespace

PipelineStreams::PipelineStreams(int count) {
  start_.reset(new_event(cudaEventDefault));
  stop_.reset(new_event(cudaEventDefault));
  ready_.reset(new_event(cudaEventDisableTiming));
  for (int i = 0; i < count; ++i) {
    streams_.emplace_back(new_stream());
    done_.emplace_back(new_event(cudaEventDisableTiming));
  }
}

double PipelineStreams::run(const ChunkedOperation& operation, const PipelineSpec& spec) {
  if (spec.chunks > operation.units)
    throw std::invalid_argument(std::to_string(spec.chunks) + " chunks of " + std::to_string(operation.units) +
                                " rows: some would be empty");
  if (spec.streams > count())
    throw std::invalid_argument(std::to_string(spec.streams) + " streams asked of a pipeline with " +
                                std::to_string(count()));
  const std::vector<PipelineOp> ops = pipeline_schedule(spec.chunks, spec.streams);
  const int lanes = std::min(spec.streams, spec.chunks);
  const cudaStream_t first = lane(0).stream;

  // The timed region: from the start event, recorded before anything is issued, to the
  // stop event, recorded on the first stream once it has waited for every other stream's
  // last operation. It holds the shared input's copy, every chunk's copies and compute,
  // and whatever time the GPU waits for the host to issue them (launches; copies from
  // pageable memory, which the driver stages through its own pinned buffer while the
  // host waits). Not in it: allocation, streams and events, building the schedule.
  // Events on one stream see only that stream's work, hence the fork and the join.
  CUDA_CHECK(cudaEventRecord(start_.get(), first));
  if (spec.copies && operation.shared_in) operation.shared_in(first);
  CUDA_CHECK(cudaEventRecord(ready_.get(), first));
  for (int i = 1; i < lanes; ++i) CUDA_CHECK(cudaStreamWaitEvent(lane(i).stream, ready_.get(), 0));

  for (const PipelineOp& op : ops) enqueue(operation, spec, op, lane(op.stream));

  for (int i = 1; i < lanes; ++i) {
    CUDA_CHECK(cudaEventRecord(done_[i].get(), lane(i).stream));
    CUDA_CHECK(cudaStreamWaitEvent(first, done_[i].get(), 0));
  }
  CUDA_CHECK(cudaEventRecord(stop_.get(), first));
  CUDA_CHECK(cudaEventSynchronize(stop_.get()));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start_.get(), stop_.get()));
  return ms * 1e-3;
}

LaneWorkspaces::LaneWorkspaces(int lanes) {
  for (int i = 0; i < lanes; ++i) buffers_.push_back(std::make_unique<DeviceBuffer<unsigned char>>(kBytes));
}

ChunkedOperation saxpy_operation(float a, const OverlapArrays& arrays) {
  if (arrays.device_out != arrays.device_in[1])
    throw std::invalid_argument("saxpy_operation: y is computed in place (device_out must be device_in[1])");
  ChunkedOperation op;
  op.units = arrays.n;
  op.copy_in = [arrays](ChunkRange rows, const Lane& lane) {
    for (int k = 0; k < 2; ++k)
      copy_rows(arrays.device_in[k], arrays.host_in[k], rows, arrays.n, cudaMemcpyHostToDevice, lane.stream);
  };
  op.compute = [a, arrays](ChunkRange rows, const Lane& lane) {
    const std::size_t offset = static_cast<std::size_t>(rows.begin) * arrays.n;
    saxpy_kernel(a, arrays.device_in[0] + offset, arrays.device_out + offset,
                 static_cast<std::size_t>(rows.count) * arrays.n, lane.stream);
  };
  op.copy_out = [arrays](ChunkRange rows, const Lane& lane) {
    copy_rows(arrays.host_out, arrays.device_out, rows, arrays.n, cudaMemcpyDeviceToHost, lane.stream);
  };
  return op;
}

ChunkedOperation matmul_operation(const OverlapArrays& arrays, const LaneWorkspaces& workspaces) {
  ChunkedOperation op;
  op.units = arrays.n;
  op.shared_in = [arrays](cudaStream_t stream) {
    CUDA_CHECK(cudaMemcpyAsync(arrays.device_in[1], arrays.host_in[1], arrays.elements() * sizeof(float),
                               cudaMemcpyHostToDevice, stream));
  };
  op.copy_in = [arrays](ChunkRange rows, const Lane& lane) {
    copy_rows(arrays.device_in[0], arrays.host_in[0], rows, arrays.n, cudaMemcpyHostToDevice, lane.stream);
  };
  op.compute = [arrays, &workspaces](ChunkRange rows, const Lane& lane) {
    matmul_rows(arrays, rows, lane, workspaces);
  };
  op.copy_out = [arrays](ChunkRange rows, const Lane& lane) {
    copy_rows(arrays.host_out, arrays.device_out, rows, arrays.n, cudaMemcpyDeviceToHost, lane.stream);
  };
  return op;
}

}  // namespace gpubench
