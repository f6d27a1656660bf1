#include "batched_gemm_cublas.hpp"

#include <map>
#include <memory>
#include <tuple>

#include "core/cuda_check.hpp"
#include "cublas_handle.hpp"

namespace gpubench {
namespace {

// Row-major C = A*B is column-major C^T = B^T A^T: B goes first (as in matmul_cublas).
void enqueue_loop(const float* a, const float* b, float* c, BatchedGemmShape s, cudaStream_t stream) {
  const float alpha = 1.0f, beta = 0.0f;
  CUBLAS_CHECK(cublasSetStream(cublas_handle(), stream));
  for (int i = 0; i < s.batch; ++i) {
    const std::size_t offset = i * s.stride();
    CUBLAS_CHECK(cublasSgemm(cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.n, s.n, &alpha, b + offset, s.n,
                             a + offset, s.n, &beta, c + offset, s.n));
  }
}

struct CapturedLoop {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ~CapturedLoop() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

// Legacy-default-stream work cannot be captured, so the loop is recorded on a stream of its
// own; the graph is then launched on the default stream like every other implementation.
std::unique_ptr<CapturedLoop> capture_loop(const float* a, const float* b, float* c, BatchedGemmShape s) {
  // Creating the handle allocates its workspace, which a capturing stream forbids: a process
  // whose first cuBLAS call was this capture failed with CUBLAS_STATUS_NOT_INITIALIZED.
  cublas_handle();
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  auto captured = std::make_unique<CapturedLoop>();
  try {
    CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    enqueue_loop(a, b, c, s, stream);
    CUDA_CHECK(cudaStreamEndCapture(stream, &captured->graph));
    CUDA_CHECK(cudaGraphInstantiate(&captured->exec, captured->graph, 0));
  } catch (...) {
    cudaGraph_t abandoned = nullptr;
    cudaStreamEndCapture(stream, &abandoned);  // leave capture mode before the stream goes
    if (abandoned) cudaGraphDestroy(abandoned);
    CUBLAS_CHECK(cublasSetStream(cublas_handle(), 0));
    cudaStreamDestroy(stream);
    throw;
  }
  CUBLAS_CHECK(cublasSetStream(cublas_handle(), 0));
  CUDA_CHECK(cudaStreamDestroy(stream));
  return captured;
}

}  // namespace

void batched_gemm_cublas_strided(const float* a, const float* b, float* c, BatchedGemmShape s) {
  const float alpha = 1.0f, beta = 0.0f;
  const long long stride = static_cast<long long>(s.stride());
  CUBLAS_CHECK(cublasSetStream(cublas_handle(), 0));
  CUBLAS_CHECK(cublasSgemmStridedBatched(cublas_handle(), CUBLAS_OP_N, CUBLAS_OP_N, s.n, s.n, s.n, &alpha, b, s.n,
                                         stride, a, s.n, stride, &beta, c, s.n, stride, s.batch));
}

void batched_gemm_cublas_loop(const float* a, const float* b, float* c, BatchedGemmShape s) {
  enqueue_loop(a, b, c, s, 0);
}

void batched_gemm_cublas_graph(const float* a, const float* b, float* c, BatchedGemmShape s) {
  // A graph holds its pointers: one per operand set and shape, captured on first use (the
  // studies warm up first, so capture is never timed).
  static std::map<std::tuple<const float*, const float*, float*, int, int>, std::unique_ptr<CapturedLoop>> graphs;
  auto& captured = graphs[{a, b, c, s.n, s.batch}];
  if (!captured) captured = capture_loop(a, b, c, s);
  CUDA_CHECK(cudaGraphLaunch(captured->exec, 0));
}

}  // namespace gpubench
