#include "primitives_thrust.cuh"

#include <thrust/execution_policy.h>
#include <thrust/reduce.h>
#include <thrust/scan.h>
#include <thrust/sort.h>
#include <thrust/transform.h>

#include <cstddef>
#include <map>
#include <new>
#include <utility>

#include "affine.cuh"
#include "core/cuda_check.hpp"

namespace gpubench {
namespace {

// Device blocks kept across calls, as Thrust's custom_temporary_allocation example keeps them: a
// request takes the smallest free block that holds it, else a new one from cudaMalloc; a block
// given back waits in the free list for the next request.
class CachingAllocator {
 public:
  using value_type = char;

  char* allocate(std::ptrdiff_t bytes) {
    const auto size = static_cast<std::size_t>(bytes);
    ++use_.requests;
    use_.bytes_requested += static_cast<double>(size);
    char* block = nullptr;
    const auto fits = free_.lower_bound(size);
    if (fits != free_.end()) {
      block = fits->second;
      in_use_[block] = fits->first;
      free_.erase(fits);
      return block;
    }
    CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&block), size));  // out of memory: GpuOutOfMemory, a skip
    ++use_.device_allocations;
    in_use_[block] = size;
    return block;
  }

  void deallocate(char* block, std::size_t) {
    const auto found = in_use_.find(block);
    free_.emplace(found->second, block);
    in_use_.erase(found);
  }

  TemporaryStorageUse use() const { return use_; }

  // The blocks leave the cache before they are freed: a failed cudaFree leaves none to free twice.
  void release() {
    const auto free_blocks = std::move(free_);
    const auto used_blocks = std::move(in_use_);
    free_.clear();
    in_use_.clear();
    use_ = {};
    for (const auto& [size, block] : free_blocks) CUDA_CHECK(cudaFree(block));
    for (const auto& [block, size] : used_blocks) CUDA_CHECK(cudaFree(block));
  }

 private:
  std::multimap<std::size_t, char*> free_;
  std::map<char*, std::size_t> in_use_;
  TemporaryStorageUse use_;
};

CachingAllocator& cache() {
  static CachingAllocator* allocator = new CachingAllocator();  // never destroyed: the runtime may be gone at exit
  return *allocator;
}

// Each primitive called with the execution policy Policy::get() gives.
template <typename Policy>
struct ThrustCalls {
  static void reduce(const std::uint32_t* values, std::size_t n, std::uint32_t* sum) {
    *sum = thrust::reduce(Policy::get(), values, values + n, std::uint32_t{0});
  }

  static void inclusive_scan(const std::uint32_t* values, std::uint32_t* out, std::size_t n) {
    thrust::inclusive_scan(Policy::get(), values, values + n, out);
  }

  static void sort_u32(std::uint32_t* keys, std::size_t n) { thrust::sort(Policy::get(), keys, keys + n); }

  static void sort_u64(std::uint64_t* keys, std::size_t n) { thrust::sort(Policy::get(), keys, keys + n); }

  static void sort_pairs(std::uint32_t* keys, std::uint32_t* values, std::size_t n) {
    thrust::sort_by_key(Policy::get(), keys, keys + n, values);
  }

  static void transform(const float* in, float* out, std::size_t n, float a, float b) {
    thrust::transform(Policy::get(), in, in + n, out, Affine{a, b});
  }
};

struct Default {
  static decltype(thrust::device) get() { return thrust::device; }
};

struct Cached {
  static auto get() { return thrust::cuda::par(cache()); }
};

// Thrust reports running out of device memory with std::bad_alloc, which the study's guard would take
// for the host's: as GpuOutOfMemory it is a skip ("does not fit"); any other failure is an error.
template <typename Call, typename... Args>
void out_of_memory_as_skip(Call call, Args... args) {
  try {
    call(args...);
  } catch (const std::bad_alloc&) {
    throw GpuOutOfMemory("Thrust could not allocate its temporary storage");
  }
}

template <typename Policy>
PrimitiveFunctions functions_with(bool with_transform) {
  using C = ThrustCalls<Policy>;
  PrimitiveFunctions f;
  f.reduce = [](const std::uint32_t* values, std::size_t n, std::uint32_t* sum) {
    out_of_memory_as_skip(C::reduce, values, n, sum);
  };
  f.inclusive_scan = [](const std::uint32_t* values, std::uint32_t* out, std::size_t n) {
    out_of_memory_as_skip(C::inclusive_scan, values, out, n);
  };
  f.sort_u32 = [](std::uint32_t* keys, std::size_t n) { out_of_memory_as_skip(C::sort_u32, keys, n); };
  f.sort_pairs = [](std::uint32_t* keys, std::uint32_t* values, std::size_t n) {
    out_of_memory_as_skip(C::sort_pairs, keys, values, n);
  };
  f.sort_u64 = [](std::uint64_t* keys, std::size_t n) { out_of_memory_as_skip(C::sort_u64, keys, n); };
  if (with_transform)
    f.transform = [](const float* in, float* out, std::size_t n, float a, float b) {
      out_of_memory_as_skip(C::transform, in, out, n, a, b);
    };
  return f;
}

}  // namespace

PrimitiveFunctions thrust_primitives() { return functions_with<Default>(true); }
PrimitiveFunctions thrust_cached_primitives() { return functions_with<Cached>(false); }
TemporaryStorageUse thrust_cache_use() { return cache().use(); }
void thrust_cache_release() { cache().release(); }

}  // namespace gpubench
