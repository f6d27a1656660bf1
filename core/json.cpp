#include "core/json.hpp"

namespace gpubench {

Json availability(const std::string& unavailable_reason) {
  return {{"available", unavailable_reason.empty()}, {"reason", text_or_null(unavailable_reason)}};
}

Json text_or_null(const std::string& text) { return text.empty() ? Json(nullptr) : Json(text); }

std::string dump_json(const Json& value) { return value.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace gpubench
