#include "stream_kernels.cuh"

#include "vector_access.cuh"

namespace gpubench {
namespace {

constexpr int kWarp = 32;
constexpr int kDotThreads = 1024;  // the grid-stride dot's block, the largest block_sum takes

__host__ __device__ constexpr bool reads_y(StreamOp op) {
  return op == StreamOp::add || op == StreamOp::triad || op == StreamOp::dot;
}

__device__ inline float fused(float a, float b, float c) { return fmaf(a, b, c); }
__device__ inline double fused(double a, double b, double c) { return fma(a, b, c); }

template <StreamOp Op, typename T>
__device__ inline T element(T x, T y, T scalar) {
  if constexpr (Op == StreamOp::copy) {
    return x;
  } else if constexpr (Op == StreamOp::scale) {
    return scalar * x;
  } else if constexpr (Op == StreamOp::add) {
    return x + y;
  } else {
    return fused(scalar, y, x);  // triad
  }
}

// Vector v of x and y (y only where the operation reads it).
template <StreamOp Op, typename T>
struct Operands {
  using V = typename Vector16<T>::type;
  V x, y;
  __device__ Operands(const T* __restrict__ xs, const T* __restrict__ ys, std::size_t v)
      : x(reinterpret_cast<const V*>(xs)[v]), y(reads_y(Op) ? reinterpret_cast<const V*>(ys)[v] : V{}) {}
};

template <StreamOp Op, typename T>
__device__ inline void vector_element(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ z,
                                      std::size_t v, T scalar) {
  using V = typename Vector16<T>::type;
  Operands<Op, T> in(x, y, v);
  V out;
#pragma unroll
  for (int lane = 0; lane < Vector16<T>::lanes; ++lane)
    lanes_of<T>(out)[lane] = element<Op>(lanes_of<T>(in.x)[lane], lanes_of<T>(in.y)[lane], scalar);
  reinterpret_cast<V*>(z)[v] = out;
}

// Streaming loads (evict first): the arrays are read once; on an H100 this measured slightly faster.
template <typename T>
__device__ inline T vector_product_sum(const T* __restrict__ x, const T* __restrict__ y, std::size_t v) {
  using V = typename Vector16<T>::type;
  V xv = __ldcs(reinterpret_cast<const V*>(x) + v), yv = __ldcs(reinterpret_cast<const V*>(y) + v);
  T sum = 0;
#pragma unroll
  for (int lane = 0; lane < Vector16<T>::lanes; ++lane) sum += lanes_of<T>(xv)[lane] * lanes_of<T>(yv)[lane];
  return sum;
}

// The element `tail` past the last whole vector (tail < the vector's lanes), if it exists.
template <StreamOp Op, typename T>
__device__ inline void tail_element(const T* x, const T* y, T* z, std::size_t n, std::size_t tail, T scalar) {
  const std::size_t i = n / Vector16<T>::lanes * Vector16<T>::lanes + tail;
  if (tail < Vector16<T>::lanes && i < n) z[i] = element<Op>(x[i], reads_y(Op) ? y[i] : T(0), scalar);
}

template <typename T>
__device__ inline T tail_product(const T* x, const T* y, std::size_t n, std::size_t tail) {
  const std::size_t i = n / Vector16<T>::lanes * Vector16<T>::lanes + tail;
  return tail < Vector16<T>::lanes && i < n ? x[i] * y[i] : T(0);
}

// The block's sum of `value`, in thread 0.
template <typename T>
__device__ T block_sum(T value) {
  __shared__ T warp_sums[kDotThreads / kWarp];
  for (int offset = kWarp / 2; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
  if (lane == 0) warp_sums[warp] = value;
  __syncthreads();
  if (warp != 0) return value;
  value = lane < blockDim.x / kWarp ? warp_sums[lane] : T(0);
  for (int offset = kWarp / 2; offset > 0; offset /= 2) value += __shfl_down_sync(0xffffffffu, value, offset);
  return value;
}

__device__ inline std::size_t thread_index() { return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ inline std::size_t grid_threads() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

// Blocks of the dot that have written their sum; the last one resets it. One dot at a time per
// device: the kernels run on the default stream.
__device__ unsigned int dot_blocks_done = 0;

// z[0] = the sum of every block's `block_total` (in thread 0), in one pass: each block writes its sum
// to z[1 + block], and the block that finishes last adds them (no second kernel to launch).
template <typename T>
__device__ void finish_dot(T block_total, T* z) {
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) z[0] = block_total;
    return;
  }
  __shared__ bool last;
  if (threadIdx.x == 0) {
    z[1 + blockIdx.x] = block_total;
    __threadfence();  // the sum is visible to every block before the count says it is there
    last = atomicAdd(&dot_blocks_done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  // Eight loads in flight a thread: the one-vector-per-thread dot leaves a block sum per 256 vectors,
  // and one load at a time would leave the GPU waiting on this block. From L2, never a stale L1.
  constexpr int kInFlight = 8;
  T parts[kInFlight] = {};
  for (unsigned first = threadIdx.x; first < gridDim.x; first += kInFlight * blockDim.x) {
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      const unsigned b = first + u * blockDim.x;
      if (b < gridDim.x) parts[u] += __ldcg(z + 1 + b);
    }
  }
  T sum = 0;
#pragma unroll
  for (int u = 0; u < kInFlight; ++u) sum += parts[u];
  sum = block_sum(sum);
  if (threadIdx.x == 0) {
    z[0] = sum;
    dot_blocks_done = 0;
  }
}

template <StreamOp Op, typename T>
__global__ void grid_stride(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ z, std::size_t n,
                            T scalar) {
  const std::size_t vectors = n / Vector16<T>::lanes;
  for (std::size_t v = thread_index(); v < vectors; v += grid_threads()) vector_element<Op>(x, y, z, v, scalar);
  tail_element<Op>(x, y, z, n, thread_index(), scalar);
}

// Two vectors of each array in flight per thread, in blocks of 1024 threads: on an H100 both measured
// faster than one vector in blocks of kVectorThreads.
template <typename T>
__global__ void __launch_bounds__(kDotThreads)
    grid_stride_dot(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ z, std::size_t n) {
  const std::size_t vectors = n / Vector16<T>::lanes, stride = grid_threads();
  T sum = tail_product(x, y, n, thread_index()), other = 0;
  std::size_t v = thread_index();
  for (; v + stride < vectors; v += 2 * stride) {
    sum += vector_product_sum(x, y, v);
    other += vector_product_sum(x, y, v + stride);
  }
  if (v < vectors) sum += vector_product_sum(x, y, v);
  finish_dot(block_sum(sum + other), z);
}

template <StreamOp Op, typename T>
__global__ void one_per_thread(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ z, std::size_t n,
                               T scalar) {
  const std::size_t vectors = n / Vector16<T>::lanes, v = thread_index();
  if (v < vectors) {
    vector_element<Op>(x, y, z, v, scalar);
  } else {
    tail_element<Op>(x, y, z, n, v - vectors, scalar);
  }
}

template <typename T>
__global__ void one_per_thread_dot(const T* __restrict__ x, const T* __restrict__ y, T* __restrict__ z, std::size_t n) {
  const std::size_t vectors = n / Vector16<T>::lanes, v = thread_index();
  const T sum = v < vectors ? vector_product_sum(x, y, v) : tail_product(x, y, n, v - vectors);
  finish_dot(block_sum(sum), z);
}

// Items of one thread's work: the whole vectors and, past them, one thread per leftover element.
template <typename T>
std::size_t items(std::size_t n) {
  return n / Vector16<T>::lanes + n % Vector16<T>::lanes;
}

// z holds the block sums past z[0].
void require_room_for_block_sums(std::size_t n, unsigned blocks) {
  if (blocks > 1 && blocks + 1 > n)
    throw GpuError("stream dot: no room in z for " + std::to_string(blocks) + " block sums");
}

template <StreamOp Op, typename T>
void launch_grid_stride(const T* x, const T* y, T* z, std::size_t n, T scalar) {
  if constexpr (Op == StreamOp::dot) {
    const unsigned blocks = resident_blocks<grid_stride_dot<T>, kDotThreads>(items<T>(n));
    require_room_for_block_sums(n, blocks);
    grid_stride_dot<<<blocks, kDotThreads>>>(x, y, z, n);
    CUDA_CHECK_LAUNCH();
  } else {
    grid_stride<Op><<<resident_blocks<grid_stride<Op, T>>(items<T>(n)), kVectorThreads>>>(x, y, z, n, scalar);
    CUDA_CHECK_LAUNCH();
  }
}

template <StreamOp Op, typename T>
void launch_one_per_thread(const T* x, const T* y, T* z, std::size_t n, T scalar) {
  const unsigned blocks = blocks_for(items<T>(n), "stream_one_per_thread");
  if constexpr (Op == StreamOp::dot) {
    require_room_for_block_sums(n, blocks);
    one_per_thread_dot<<<blocks, kVectorThreads>>>(x, y, z, n);
    CUDA_CHECK_LAUNCH();
  } else {
    one_per_thread<Op><<<blocks, kVectorThreads>>>(x, y, z, n, scalar);
    CUDA_CHECK_LAUNCH();
  }
}

// The launch of `op` by one of the two families above.
template <template <StreamOp, typename> class Family, typename T>
void dispatch(StreamOp op, const T* x, const T* y, T* z, std::size_t n, T scalar) {
  if (n == 0) return;  // a grid of zero blocks is a launch error
  require_vector_alignment("stream kernels", x, y, z);
  switch (op) {
    case StreamOp::copy: return Family<StreamOp::copy, T>::run(x, y, z, n, scalar);
    case StreamOp::scale: return Family<StreamOp::scale, T>::run(x, y, z, n, scalar);
    case StreamOp::add: return Family<StreamOp::add, T>::run(x, y, z, n, scalar);
    case StreamOp::triad: return Family<StreamOp::triad, T>::run(x, y, z, n, scalar);
    case StreamOp::dot: return Family<StreamOp::dot, T>::run(x, y, z, n, scalar);
  }
}

template <StreamOp Op, typename T>
struct GridStride {
  static void run(const T* x, const T* y, T* z, std::size_t n, T scalar) { launch_grid_stride<Op>(x, y, z, n, scalar); }
};

template <StreamOp Op, typename T>
struct OnePerThread {
  static void run(const T* x, const T* y, T* z, std::size_t n, T scalar) {
    launch_one_per_thread<Op>(x, y, z, n, scalar);
  }
};

}  // namespace

void stream_grid_stride(StreamOp op, const float* x, const float* y, float* z, std::size_t n, float scalar) {
  dispatch<GridStride>(op, x, y, z, n, scalar);
}
void stream_grid_stride(StreamOp op, const double* x, const double* y, double* z, std::size_t n, double scalar) {
  dispatch<GridStride>(op, x, y, z, n, scalar);
}
void stream_one_per_thread(StreamOp op, const float* x, const float* y, float* z, std::size_t n, float scalar) {
  dispatch<OnePerThread>(op, x, y, z, n, scalar);
}
void stream_one_per_thread(StreamOp op, const double* x, const double* y, double* z, std::size_t n, double scalar) {
  dispatch<OnePerThread>(op, x, y, z, n, scalar);
}

}  // namespace gpubench
