#include "core/json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace gpubench {

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (const unsigned char ch : text) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (ch < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", ch);
          out += escaped;
        } else {
          out += static_cast<char>(ch);
        }
    }
  }
  return out + "\"";
}

std::string json_number(double value) {
  if (!std::isfinite(value)) return "null";
  char text[32];
  const auto written = std::to_chars(text, text + sizeof text, value);  // shortest round trip
  return std::string(text, written.ptr);
}

std::string json_availability(const std::string& unavailable_reason) {
  return std::string("\"available\": ") + (unavailable_reason.empty() ? "true" : "false") +
         ", \"reason\": " + (unavailable_reason.empty() ? "null" : json_string(unavailable_reason));
}

}  // namespace gpubench
