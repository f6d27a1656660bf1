// Just enough JSON writing for the small documents the binaries print (--describe, the
// environment probe); Google Benchmark writes the measurements.
#pragma once

#include <string>

namespace gpubench {

// A JSON string literal, quotes included, with control characters and quotes escaped.
std::string json_string(const std::string& text);

}  // namespace gpubench
