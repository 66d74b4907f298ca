// Strict reading of JSON objects into plain structs: unknown keys rejected, types and ranges
// checked, and every error names the JSON path and what is allowed.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "gpuscale/json.hpp"

namespace gpuscale {

// A view of one JSON object at a known path. Each get_* marks the key as known; finish()
// rejects any key that was never asked about (unknown keys are errors, not silently ignored).
class ObjectReader {
 public:
  ObjectReader(const Json& value, std::string path);

  bool has(const std::string& key) const;
  const Json* raw(const std::string& key);  // nullptr if absent; marks the key as read
  std::string child_path(const std::string& key) const { return path_ + "/" + key; }
  const std::string& path() const { return path_; }

  // Numbers: must be finite and in [lo, hi]; integers must be whole.
  double get_number(const std::string& key, double fallback, double lo, double hi);
  std::optional<double> get_optional_number(const std::string& key, double lo, double hi);
  std::int64_t get_int(const std::string& key, std::int64_t fallback, std::int64_t lo, std::int64_t hi);
  std::optional<std::int64_t> get_optional_int(const std::string& key, std::int64_t lo, std::int64_t hi);
  bool get_bool(const std::string& key, bool fallback);
  std::string get_string(const std::string& key, const std::string& fallback,
                         std::size_t max_length = 256);
  // One of `allowed`; the error lists them.
  std::string get_enum(const std::string& key, const std::string& fallback,
                       std::initializer_list<const char*> allowed);
  std::optional<std::string> get_optional_enum(const std::string& key,
                                               std::initializer_list<const char*> allowed);

  // Throws for the first key that was not read, listing the keys this object accepts.
  void finish() const;

 private:
  const Json& value_;
  std::string path_;
  std::vector<std::string> known_;  // keys asked about, in order
};

// Checks a value is an object / array and returns it; errors name the path.
const Json& expect_object(const Json& value, const std::string& path);
const Json& expect_array(const Json& value, const std::string& path, std::size_t max_items);
double expect_number(const Json& value, const std::string& path, double lo, double hi);
std::int64_t expect_int(const Json& value, const std::string& path, std::int64_t lo, std::int64_t hi);
std::string type_name(const Json& value);

}  // namespace gpuscale
