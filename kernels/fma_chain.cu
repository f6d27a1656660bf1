#include "fma_chain.cuh"

#include "vector_access.cuh"

namespace gpubench {
namespace {

__device__ inline float step(float y, float a, float x) { return fmaf(y, a, x); }
__device__ inline double step(double y, double a, double x) { return fma(y, a, x); }
__device__ inline __half2 step(__half2 y, __half2 a, __half2 x) { return __hfma2(y, a, x); }
__device__ inline __half step(__half y, __half a, __half x) { return __hfma(y, a, x); }

template <typename Value>
__device__ inline Value chain(Value x, Value a, int k) {
  Value y = x;
#pragma unroll 8
  for (int s = 0; s < k; ++s) y = step(y, a, x);
  return y;
}

// One element of T as the kernel computes it, and the multiplier for it: FP16 one __half.
template <typename T>
struct Element {
  using type = T;
  __device__ static T multiplier(T a) { return a; }
};
template <>
struct Element<std::uint16_t> {
  using type = __half;
  __device__ static __half multiplier(__half2 a) { return __low2half(a); }
};

template <typename T>
__global__ void fma_chains(const T* __restrict__ x, T* __restrict__ y, std::size_t n, int k,
                           typename Vector16<T>::Lane a) {
  using V = typename Vector16<T>::type;
  using E = typename Element<T>::type;
  const std::size_t vectors = n / Vector16<T>::elements;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  for (std::size_t v = first; v < vectors; v += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    V in = reinterpret_cast<const V*>(x)[v];
    V out = in;
    // The lanes' chains interleaved, step by step: independent FMAs in flight in each thread; 16
    // steps per trip keep the loop's own instructions to a few percent of those issued.
#pragma unroll 16
    for (int s = 0; s < k; ++s) {
#pragma unroll
      for (int lane = 0; lane < Vector16<T>::lanes; ++lane)
        lanes_of<T>(out)[lane] = step(lanes_of<T>(out)[lane], a, lanes_of<T>(in)[lane]);
    }
    reinterpret_cast<V*>(y)[v] = out;
  }
  const std::size_t i = vectors * Vector16<T>::elements + first;  // past the last whole vector
  if (first < Vector16<T>::elements && i < n)
    reinterpret_cast<E*>(y)[i] = chain(reinterpret_cast<const E*>(x)[i], Element<T>::multiplier(a), k);
}

template <typename T>
void launch(const T* x, T* y, std::size_t n, int k, typename Vector16<T>::Lane a) {
  if (n == 0) return;  // a grid of zero blocks is a launch error
  require_vector_alignment("fma_chain_kernel", x, y);
  const std::size_t items = n / Vector16<T>::elements + n % Vector16<T>::elements;
  fma_chains<T><<<resident_blocks<fma_chains<T>>(items), kVectorThreads>>>(x, y, n, k, a);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void fma_chain_kernel(const float* x, float* y, std::size_t n, int k, float a) { launch(x, y, n, k, a); }

void fma_chain_kernel(const double* x, double* y, std::size_t n, int k, double a) { launch(x, y, n, k, a); }

void fma_chain_kernel(const std::uint16_t* x, std::uint16_t* y, std::size_t n, int k, std::uint16_t a) {
  __half_raw raw;
  raw.x = a;
  launch(x, y, n, k, __half2half2(__half(raw)));
}

}  // namespace gpubench
