// Just enough JSON writing for the small documents the binaries print (--describe, the
// environment probe); Google Benchmark writes the measurements.
#pragma once

#include <string>
#include <vector>

namespace gpubench {

// A JSON string literal, quotes included, with control characters and quotes escaped.
std::string json_string(const std::string& text);

// A number with every digit it needs to read back the same double (2^-53 must not print as 0);
// null for NaN and infinities, which JSON lacks.
std::string json_number(double value);

// The fields `"available": bool, "reason": str|null` of something a study may lack (a GPU,
// NVML, cuDNN); `unavailable_reason` empty when it is there.
std::string json_availability(const std::string& unavailable_reason);

// A JSON array of `items`, each written by `write` (which returns its JSON text).
template <typename T, typename Write>
std::string json_list(const std::vector<T>& items, Write write) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + write(items[i]);
  return out + "]";
}

}  // namespace gpubench
