#include "core/host_memory.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>

namespace gpubench {
namespace {

std::uint64_t split_mix(std::uint64_t& state) {  // SplitMix64: fast, and every word differs
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

MappedHostBuffer::MappedHostBuffer(std::size_t bytes, bool huge_page_aligned) : bytes_(bytes) {
  // Over-allocate by one huge page to find an aligned start inside the mapping.
  mapping_bytes_ = bytes + (huge_page_aligned ? kHugePageBytes : 0);
  mapping_ = mmap(nullptr, mapping_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapping_ == MAP_FAILED) {
    mapping_ = nullptr;
    throw std::bad_alloc();
  }
  auto address = reinterpret_cast<std::uintptr_t>(mapping_);
  if (huge_page_aligned) address = (address + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  data_ = reinterpret_cast<std::uint8_t*>(address);
}

MappedHostBuffer::~MappedHostBuffer() {
  if (mapping_) munmap(mapping_, mapping_bytes_);
}

std::string MappedHostBuffer::advise_huge_pages() {
  if (madvise(data_, bytes_, MADV_HUGEPAGE) == 0) return "";
  return std::string("madvise(MADV_HUGEPAGE) failed: ") + std::strerror(errno);
}

void fill_random_bytes(std::uint8_t* data, std::size_t bytes, std::uint64_t seed) {
  constexpr std::size_t kBlock = 1u << 20;  // one stream per MiB: the same bytes for any thread count
  const std::size_t blocks = (bytes + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (std::size_t block = 0; block < blocks; ++block) {
    std::uint64_t state = seed ^ (block * 0xD1B54A32D192ED03ull);
    const std::size_t begin = block * kBlock, end = std::min(bytes, begin + kBlock);
    for (std::size_t i = begin; i < end; i += sizeof(std::uint64_t)) {
      const std::uint64_t word = split_mix(state);
      std::memcpy(data + i, &word, std::min(sizeof word, end - i));
    }
  }
}

std::size_t first_difference(const std::uint8_t* a, const std::uint8_t* b, std::size_t bytes) {
  constexpr std::size_t kBlock = 1u << 20;
  const std::size_t blocks = (bytes + kBlock - 1) / kBlock;
  std::size_t first = bytes;
#pragma omp parallel for schedule(static) reduction(min : first)
  for (std::size_t block = 0; block < blocks; ++block) {
    const std::size_t begin = block * kBlock, length = std::min(kBlock, bytes - begin);
    if (std::memcmp(a + begin, b + begin, length) == 0) continue;
    for (std::size_t i = begin; i < begin + length; ++i)
      if (a[i] != b[i]) {
        first = std::min(first, i);
        break;
      }
  }
  return first;
}

double huge_page_bytes(const void* data, std::size_t bytes) {
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return -1;
  const auto begin = reinterpret_cast<std::uintptr_t>(data), end = begin + bytes;
  bool inside = false;
  double total_kib = 0;
  std::string line;
  while (std::getline(smaps, line)) {
    std::uintptr_t low = 0, high = 0;
    char dash = 0;
    std::istringstream header(line);
    if (header >> std::hex >> low >> dash >> high && dash == '-') {  // a mapping's first line
      inside = low < end && high > begin;
      continue;
    }
    if (inside && line.rfind("AnonHugePages:", 0) == 0) total_kib += std::stod(line.substr(14));
  }
  return total_kib * 1024.0;
}

std::string parse_transparent_hugepage_setting(const std::string& file_text) {
  const std::size_t open = file_text.find('['), close = file_text.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "unknown";
  return file_text.substr(open + 1, close - open - 1);
}

std::string transparent_hugepage_setting() {
  std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::stringstream text;
  text << file.rdbuf();
  return file ? parse_transparent_hugepage_setting(text.str()) : "unknown";
}

}  // namespace gpubench
