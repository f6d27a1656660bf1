// Host memory of the kinds the transfer study copies from and to, as far as plain Linux
// provides them (pinned, registered and write-combined memory come from CUDA, in the
// study). Portable, so the CPU tests check what each kind really is: which pages are
// mapped (with tests/host_memory_probes), whether huge pages back them, what the system's
// THP setting is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpubench {

// An anonymous private mapping (mmap), released with munmap. A fresh one maps no page:
// reading it maps the kernel's shared zero page, writing it takes a page fault per page.
class MappedHostBuffer {
 public:
  // `huge_page_aligned`: the mapping starts on a 2 MiB boundary, so that transparent huge
  // pages can back all of it (a THP must be naturally aligned).
  explicit MappedHostBuffer(std::size_t bytes, bool huge_page_aligned = false);
  ~MappedHostBuffer();
  MappedHostBuffer(const MappedHostBuffer&) = delete;
  MappedHostBuffer& operator=(const MappedHostBuffer&) = delete;

  std::uint8_t* get() const { return data_; }
  std::size_t bytes() const { return bytes_; }

  // madvise(MADV_HUGEPAGE): asks for transparent huge pages where the system setting is
  // "madvise" (or "always"). Empty on success, otherwise why not.
  std::string advise_huge_pages();

 private:
  void* mapping_ = nullptr;  // what munmap gets back
  std::size_t mapping_bytes_ = 0;
  std::uint8_t* data_ = nullptr;
  std::size_t bytes_ = 0;
};

inline constexpr std::size_t kHugePageBytes = 2u << 20;

// Fills with pseudo-random bytes from `seed` (all threads): copies of random data move what
// real data moves, and a wrong offset shows when checked.
void fill_random_bytes(std::uint8_t* data, std::size_t bytes, std::uint64_t seed);

// Index of the first byte where a and b differ, or `bytes` when none does.
std::size_t first_difference(const std::uint8_t* a, const std::uint8_t* b, std::size_t bytes);

// Bytes of the range backed by transparent huge pages (AnonHugePages of the mappings that
// overlap it in /proc/self/smaps); -1 when it cannot be told.
double huge_page_bytes(const void* data, std::size_t bytes);

// The bracketed choice of /sys/kernel/mm/transparent_hugepage/enabled ("always",
// "madvise" or "never"), or "unknown" when the file is absent or unreadable.
std::string transparent_hugepage_setting();
std::string parse_transparent_hugepage_setting(const std::string& file_text);

}  // namespace gpubench
