// A minimal JSON reader for test fixtures shared with the Python tests (no JSON library is among
// the project's C++ dependencies, and the fixtures are small and trusted): objects, arrays,
// numbers, strings without escapes beyond \" and \\, true, false, null.
#pragma once

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpubench::test {

struct JsonValue {
  enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;

  const JsonValue& operator[](const std::string& key) const {
    const auto found = object.find(key);
    if (found == object.end()) throw std::runtime_error("fixture: no key '" + key + "'");
    return found->second;
  }
};

class JsonReader {
 public:
  explicit JsonReader(std::string text) : text_(std::move(text)) {}
  JsonValue parse() {
    JsonValue value = read();
    skip_space();
    if (position_ != text_.size()) fail("trailing text");
    return value;
  }

 private:
  void fail(const std::string& why) const {
    throw std::runtime_error("fixture JSON at " + std::to_string(position_) + ": " + why);
  }
  void skip_space() {
    while (position_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[position_]))) ++position_;
  }
  bool take(char c) {
    skip_space();
    if (position_ < text_.size() && text_[position_] == c) return ++position_, true;
    return false;
  }
  void expect(char c) {
    if (!take(c)) fail(std::string("expected '") + c + "'");
  }
  std::string read_string() {
    expect('"');
    std::string out;
    while (position_ < text_.size() && text_[position_] != '"') {
      if (text_[position_] == '\\') ++position_;
      out += text_[position_++];
    }
    expect('"');
    return out;
  }
  JsonValue read() {
    JsonValue value;
    skip_space();
    if (position_ >= text_.size()) fail("unexpected end");
    const char c = text_[position_];
    if (c == '{') {
      value.kind = JsonValue::Kind::object;
      ++position_;
      if (take('}')) return value;
      do {
        std::string key = read_string();
        expect(':');
        value.object[key] = read();
      } while (take(','));
      expect('}');
    } else if (c == '[') {
      value.kind = JsonValue::Kind::array;
      ++position_;
      if (take(']')) return value;
      do value.array.push_back(read());
      while (take(','));
      expect(']');
    } else if (c == '"') {
      value.kind = JsonValue::Kind::string;
      value.string = read_string();
    } else if (text_.compare(position_, 4, "true") == 0 || text_.compare(position_, 5, "false") == 0) {
      value.kind = JsonValue::Kind::boolean;
      value.boolean = text_[position_] == 't';
      position_ += value.boolean ? 4 : 5;
    } else if (text_.compare(position_, 4, "null") == 0) {
      position_ += 4;
    } else {
      char* end = nullptr;
      value.kind = JsonValue::Kind::number;
      value.number = std::strtod(text_.c_str() + position_, &end);
      if (end == text_.c_str() + position_) fail("not a value");
      position_ = static_cast<std::size_t>(end - text_.c_str());
    }
    return value;
  }

  std::string text_;
  std::size_t position_ = 0;
};

inline JsonValue read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return JsonReader(text.str()).parse();
}

}  // namespace gpubench::test
