// The JSON the binaries print (--describe, the environment probe, the measurement and telemetry
// records) is built as nlohmann-json values; Google Benchmark writes the measurements.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace gpubench {

// Objects keep their keys in the order they were added, so a document reads in the order it is
// built. Doubles that are NaN or infinite are written as null (JSON has neither).
using Json = nlohmann::ordered_json;

// The fields `"available": bool, "reason": str|null` of something a study may lack (a GPU,
// NVML, cuDNN); `unavailable_reason` empty when it is there.
Json availability(const std::string& unavailable_reason);

// A string, or null when it is empty (an optional note, a reason).
Json text_or_null(const std::string& text);

// A JSON array of `describe(item)` for each of `items`, in their order.
template <typename Items, typename Describe>
Json array_of(const Items& items, Describe describe) {
  Json out = Json::array();
  for (const auto& item : items) out.push_back(describe(item));
  return out;
}

// A value as one line of text. Bytes that are not UTF-8 (a device or host name from a driver) are
// replaced rather than thrown on: the document must be written whatever the machine reports.
std::string dump_json(const Json& value);

}  // namespace gpubench
