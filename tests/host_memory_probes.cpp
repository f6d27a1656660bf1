#include "host_memory_probes.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

namespace gpubench {

bool all_zero(const std::uint8_t* data, std::size_t bytes) {
  unsigned bits = 0;  // OR of every byte: no early exit, so the loop vectorizes
#pragma omp parallel for schedule(static) reduction(| : bits)
  for (std::size_t i = 0; i < bytes; ++i) bits |= data[i];
  return bits == 0;
}

double resident_fraction(const void* data, std::size_t bytes) {
  const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  const auto address = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t begin = address / page * page;
  const std::size_t pages = (address + bytes - begin + page - 1) / page;
  std::vector<unsigned char> residency(pages);
  if (mincore(reinterpret_cast<void*>(begin), pages * page, residency.data()) != 0) return -1;
  const auto resident = std::count_if(residency.begin(), residency.end(), [](unsigned char r) { return r & 1; });
  return static_cast<double>(resident) / static_cast<double>(pages);
}

}  // namespace gpubench
