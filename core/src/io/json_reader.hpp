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
  std::string child_path(const std::string& key) const { return path_ + "/" + json_pointer_token(key); }
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

  // Required fields. require: present and not null, else "is required (what)". The others also check the
  // value: a non-empty string, a whole number in [lo, hi], one of `allowed`.
  const Json& require(const std::string& key, const std::string& what);
  std::string require_string(const std::string& key, const std::string& what = "a non-empty string",
                             std::size_t max_length = 253);
  std::int64_t require_int(const std::string& key, std::int64_t lo, std::int64_t hi);
  std::string require_enum(const std::string& key, std::initializer_list<const char*> allowed, const std::string& hint = "");

  // Declares every key the object takes and rejects the others before anything else is read, so an
  // unknown (misspelled) field is reported rather than the required field it was meant to be.
  void only_keys(std::initializer_list<const char*> keys);

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
// A string value. Numbers and booleans get a hint: in YAML, 64, true and yes are not strings.
std::string expect_string(const Json& value, const std::string& path, std::size_t max_length = 256);
// One of `allowed` (the error lists them, then `hint`).
std::string expect_enum(const Json& value, const std::string& path, std::initializer_list<const char*> allowed,
                        const std::string& hint = "");
// expect_enum over a list of names.
std::string expect_enum_of(const Json& value, const std::string& path, const std::vector<std::string>& allowed,
                           const std::string& hint = "");
// "\"a\", \"b\", \"c\"": allowed values as messages list them.
std::string enum_list(std::initializer_list<const char*> allowed);

// Domain enums read from their API names: a table of {name, value} per enum, next to the enum.
template <typename E>
struct Named {
  const char* name;
  E value;
};
// The API name of `value` in `names` ("?" if absent).
template <typename E, std::size_t N>
const char* name_of(E value, const Named<E> (&names)[N]) {
  for (const auto& n : names) {
    if (n.value == value) return n.name;
  }
  return "?";
}
// The value named `text` (which expect_enum / get_enum has already checked is one of the names).
template <typename E, std::size_t N>
E value_of(const std::string& text, const Named<E> (&names)[N]) {
  for (const auto& n : names) {
    if (text == n.name) return n.value;
  }
  return names[0].value;
}
// Reads an enum field by the names of its table.
template <typename E, std::size_t N>
E get_enum(ObjectReader& r, const std::string& key, E fallback, const Named<E> (&names)[N]) {
  const Json* v = r.raw(key);
  if (!v) return fallback;
  std::vector<std::string> list;
  for (const auto& n : names) list.push_back(n.name);
  return value_of(expect_enum_of(*v, r.child_path(key), list), names);
}

}  // namespace gpuscale
