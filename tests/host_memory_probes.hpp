// What the tests ask of host memory that the studies never do: whether a range reads as zeros
// and how much of it is resident, to tell a never-written mapping from a written one.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpubench {

// Whether every byte is 0 (what a never-written mapping reads as).
bool all_zero(const std::uint8_t* data, std::size_t bytes);

// Fraction of the range's pages that are resident (mincore); -1 when it cannot be told.
double resident_fraction(const void* data, std::size_t bytes);

}  // namespace gpubench
