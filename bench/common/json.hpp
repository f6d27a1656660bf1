// Just enough JSON writing for the small documents the binaries print (--describe, the
// environment probe); Google Benchmark writes the measurements.
#pragma once

#include <string>
#include <vector>

namespace gpubench {

// A JSON string literal, quotes included, with control characters and quotes escaped.
std::string json_string(const std::string& text);

// A JSON array of `items`, each written by `write` (which returns its JSON text).
template <typename T, typename Write>
std::string json_list(const std::vector<T>& items, Write write) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + write(items[i]);
  return out + "]";
}

}  // namespace gpubench
