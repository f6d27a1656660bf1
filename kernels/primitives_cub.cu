#include "primitives_cub.cuh"

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_transform.cuh>

#include <climits>
#include <cstddef>
#include <string>

#include "affine.cuh"
#include "core/cuda_check.hpp"

namespace gpubench {
namespace {

constexpr std::size_t kAlignment = 256;  // what cudaMalloc guarantees; every region of the workspace starts on it

std::size_t aligned(std::size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// CUB's item counts are ints here, the offsets its fastest kernels use.
int items(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw GpuError("CUB primitives: " + std::to_string(n) + " items exceed an int");
  return static_cast<int>(n);
}

// One device buffer for every call's temporary storage, grown only when a call needs more. It is
// never null: CUB takes a null storage pointer for a size query and would not run.
class Workspace {
 public:
  char* at_least(std::size_t bytes) {
    bytes = aligned(bytes == 0 ? 1 : bytes);
    ++use_.requests;
    use_.bytes_requested += static_cast<double>(bytes);
    if (bytes <= capacity_) return data_;
    release_memory();
    void* grown = nullptr;
    CUDA_CHECK(cudaMalloc(&grown, bytes));  // out of memory: GpuOutOfMemory, a skip
    data_ = static_cast<char*>(grown);
    capacity_ = bytes;
    ++use_.device_allocations;
    return data_;
  }

  TemporaryStorageUse use() const { return use_; }

  void release() {
    release_memory();
    use_ = {};
  }

 private:
  void release_memory() {  // forgotten before it is freed: a failed cudaFree leaves nothing to free twice
    char* held = data_;
    data_ = nullptr;
    capacity_ = 0;
    if (held) CUDA_CHECK(cudaFree(held));
  }

  char* data_ = nullptr;
  std::size_t capacity_ = 0;
  TemporaryStorageUse use_;
};

Workspace& workspace() {
  static Workspace* kept = new Workspace();  // never destroyed: the runtime may be gone at exit
  return *kept;
}

// The sum is written to the workspace's first bytes, CUB's storage after them.
void reduce(const std::uint32_t* values, std::size_t n, std::uint32_t* sum) {
  std::size_t temporary = 0;
  CUDA_CHECK(cub::DeviceReduce::Sum(nullptr, temporary, values, static_cast<std::uint32_t*>(nullptr), items(n), 0));
  char* space = workspace().at_least(kAlignment + temporary);
  auto* device_sum = reinterpret_cast<std::uint32_t*>(space);
  CUDA_CHECK(cub::DeviceReduce::Sum(space + kAlignment, temporary, values, device_sum, items(n), 0));
  CUDA_CHECK(cudaMemcpyAsync(sum, device_sum, sizeof *sum, cudaMemcpyDeviceToHost, 0));
}

void inclusive_scan(const std::uint32_t* values, std::uint32_t* out, std::size_t n) {
  std::size_t temporary = 0;
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, temporary, values, out, items(n), 0));
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(workspace().at_least(temporary), temporary, values, out, items(n), 0));
}

// The keys' second buffer is the workspace's first region; the sort leaves them in whichever
// buffer its passes end in, so they are copied back when that is the second.
template <typename Key>
void sort_keys(Key* keys, std::size_t n) {
  constexpr int bits = static_cast<int>(sizeof(Key) * 8);
  cub::DoubleBuffer<Key> buffers(keys, nullptr);
  std::size_t temporary = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temporary, buffers, items(n), 0, bits, 0));
  const std::size_t second = aligned(n * sizeof(Key));
  char* space = workspace().at_least(second + temporary);
  buffers = cub::DoubleBuffer<Key>(keys, reinterpret_cast<Key*>(space));
  CUDA_CHECK(cub::DeviceRadixSort::SortKeys(space + second, temporary, buffers, items(n), 0, bits, 0));
  if (buffers.Current() != keys)
    CUDA_CHECK(cudaMemcpyAsync(keys, buffers.Current(), n * sizeof(Key), cudaMemcpyDeviceToDevice, 0));
}

void sort_u32(std::uint32_t* keys, std::size_t n) { sort_keys(keys, n); }
void sort_u64(std::uint64_t* keys, std::size_t n) { sort_keys(keys, n); }

void sort_pairs(std::uint32_t* keys, std::uint32_t* values, std::size_t n) {
  cub::DoubleBuffer<std::uint32_t> key_buffers(keys, nullptr), value_buffers(values, nullptr);
  std::size_t temporary = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temporary, key_buffers, value_buffers, items(n), 0, 32, 0));
  const std::size_t second = aligned(n * sizeof(std::uint32_t));
  char* space = workspace().at_least(2 * second + temporary);
  key_buffers = cub::DoubleBuffer<std::uint32_t>(keys, reinterpret_cast<std::uint32_t*>(space));
  value_buffers = cub::DoubleBuffer<std::uint32_t>(values, reinterpret_cast<std::uint32_t*>(space + second));
  CUDA_CHECK(
      cub::DeviceRadixSort::SortPairs(space + 2 * second, temporary, key_buffers, value_buffers, items(n), 0, 32, 0));
  const std::size_t bytes = n * sizeof(std::uint32_t);
  if (key_buffers.Current() != keys)
    CUDA_CHECK(cudaMemcpyAsync(keys, key_buffers.Current(), bytes, cudaMemcpyDeviceToDevice, 0));
  if (value_buffers.Current() != values)
    CUDA_CHECK(cudaMemcpyAsync(values, value_buffers.Current(), bytes, cudaMemcpyDeviceToDevice, 0));
}

void transform(const float* in, float* out, std::size_t n, float a, float b) {
  CUDA_CHECK(cub::DeviceTransform::Transform(in, out, items(n), Affine{a, b}, 0));
}

}  // namespace

PrimitiveFunctions cub_primitives() {
  PrimitiveFunctions f;
  f.reduce = reduce;
  f.inclusive_scan = inclusive_scan;
  f.sort_u32 = sort_u32;
  f.sort_pairs = sort_pairs;
  f.sort_u64 = sort_u64;
  f.transform = transform;
  return f;
}

TemporaryStorageUse cub_workspace_use() { return workspace().use(); }
void cub_workspace_release() { workspace().release(); }

}  // namespace gpubench
