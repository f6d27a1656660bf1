#include "stream_thrust.cuh"

#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/inner_product.h>
#include <thrust/transform.h>

#include <new>

#include "core/cuda_check.hpp"

namespace gpubench {
namespace {

template <typename T>
struct Identity {
  __host__ __device__ T operator()(T x) const { return x; }
};

template <typename T>
struct Scale {
  T scalar;
  __host__ __device__ T operator()(T x) const { return scalar * x; }
};

template <typename T>
struct Add {
  __host__ __device__ T operator()(T x, T y) const { return x + y; }
};

template <typename T>
struct Triad {
  T scalar;
  __host__ __device__ T operator()(T x, T y) const { return fma(scalar, y, x); }
};

template <typename T>
void run(StreamOp op, const T* x, const T* y, T* z, std::size_t n, T scalar) {
  if (n == 0) return;
  const auto in = thrust::device_pointer_cast(x), other = thrust::device_pointer_cast(y);
  const auto out = thrust::device_pointer_cast(z);
  const auto enqueued = thrust::cuda::par_nosync.on(0);
  try {
    switch (op) {
      case StreamOp::copy: thrust::transform(enqueued, in, in + n, out, Identity<T>{}); return;
      case StreamOp::scale: thrust::transform(enqueued, in, in + n, out, Scale<T>{scalar}); return;
      case StreamOp::add: thrust::transform(enqueued, in, in + n, other, out, Add<T>{}); return;
      case StreamOp::triad: thrust::transform(enqueued, in, in + n, other, out, Triad<T>{scalar}); return;
      case StreamOp::dot: {
        const T sum = thrust::inner_product(thrust::cuda::par.on(0), in, in + n, other, T(0));
        CUDA_CHECK(cudaMemcpy(z, &sum, sizeof sum, cudaMemcpyHostToDevice));
        return;
      }
    }
  } catch (const std::bad_alloc&) {  // Thrust's temporary storage: device memory, not the host's
    throw GpuOutOfMemory("Thrust could not allocate its temporary storage");
  }
}

}  // namespace

void stream_thrust(StreamOp op, const float* x, const float* y, float* z, std::size_t n, float scalar) {
  run(op, x, y, z, n, scalar);
}

void stream_thrust(StreamOp op, const double* x, const double* y, double* z, std::size_t n, double scalar) {
  run(op, x, y, z, n, scalar);
}

}  // namespace gpubench
