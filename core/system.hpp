// What the host can give a configuration, and whether a GPU can be used at all.
#pragma once

#include <cstddef>
#include <string>

namespace gpubench {

// MemAvailable from /proc/meminfo; 0 when it cannot be read.
std::size_t host_memory_available_bytes();

// Empty when a CUDA GPU can be used; otherwise why not (built without CUDA, no device,
// driver missing or too old, ...).
std::string gpu_unavailable_reason();

std::string format_bytes(double bytes);
// A number for a message, in the fewest digits that read back the same double (75, 0.1, -2.25).
std::string format_number(double value);

}  // namespace gpubench
