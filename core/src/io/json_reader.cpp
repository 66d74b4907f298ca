// Strict JSON object reading with path-named errors (see json_reader.hpp).
#include "io/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gpuscale {

namespace {

// What an ostream with precision(12) prints (%.12g), without pulling iostreams and locales into the
// WASM module.
std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.12g", v);
  return buf;
}

std::string range_text(double lo, double hi) {
  return "between " + format_number(lo) + " and " + format_number(hi);
}

// Whole-number bounds as whole numbers: 9007199254740992, not 9.00719925474e+15.
std::string range_text(std::int64_t lo, std::int64_t hi) {
  return "between " + std::to_string(lo) + " and " + std::to_string(hi);
}

}  // namespace

std::string type_name(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::binary: return "binary data";
    case Json::value_t::discarded: return "nothing";
    default: return "a number";
  }
}

namespace {

// Builds the Json tree from nlohmann's SAX events (as its json_sax_dom_parser does) and refuses what
// the DOM parser lets through: nesting deeper than kMaxJsonDepth (copying and destroying a tree
// recurses), duplicate keys (the DOM parser keeps the last one silently), numbers beyond the double
// range (nlohmann reports those as out_of_range, not as a parse error). Every error names the JSON
// path being read, and syntax errors the line and column.
class StrictBuilder {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  explicit StrictBuilder(Json& root) : root_(root) {}

  bool null() { return add(nullptr); }
  bool boolean(bool v) { return add(v); }
  bool number_integer(number_integer_t v) { return add(v); }
  bool number_unsigned(number_unsigned_t v) { return add(v); }
  bool number_float(number_float_t v, const string_t&) { return add(v); }
  bool string(string_t& v) { return add(std::move(v)); }
  bool binary(binary_t&) { return add(nullptr); }  // JSON text never holds binary values

  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    Json& object = *stack_.back();
    keys_.back().clear();  // path() is now the object's own
    if (object.contains(k)) {
      throw InputError(path() + "/" + json_pointer_token(k),
                       "duplicate key " + quote_for_message(k) + ": a JSON object may name each field once");
    }
    keys_.back() = k;
    slot_ = &object[k];
    return true;
  }

  bool parse_error(std::size_t, const std::string& token, const Json::exception& e) {
    // nlohmann's text: "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error
    // while parsing value - invalid literal; last read: '<token>'". The last-read token can be a whole
    // (megabyte) string: keep the explanation, quote the token shortened.
    std::string what = e.what();
    const std::size_t colon = what.find(": ", what.find("] "));
    std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    const std::size_t last = detail.find("; last read:");
    if (last != std::string::npos) detail.erase(last);
    std::string where = what.substr(0, colon);
    const std::size_t at = where.find(" at line ");
    where = at == std::string::npos ? std::string() : where.substr(at + 1);
    std::string message;
    if (e.id == 406) {
      message = "the number " + quote_for_message(token) +
                " is beyond the range of a double-precision number (magnitude at most about 1.8e308)";
    } else {
      message = "malformed JSON" + (where.empty() ? std::string() : " " + where) + ": " + detail;
      if (!token.empty()) message += " (near " + quote_for_message(token) + ")";
    }
    throw InputError(path(), message);
  }

 private:
  template <typename V>
  bool add(V&& v) {
    if (stack_.empty()) {
      root_ = Json(std::forward<V>(v));
    } else if (stack_.back()->is_array()) {
      stack_.back()->emplace_back(std::forward<V>(v));
    } else {
      *slot_ = Json(std::forward<V>(v));
      keys_.back().clear();  // the value is read: an error now is about the object, not this field
    }
    return true;
  }

  bool open(Json&& container) {
    if (stack_.size() >= kMaxJsonDepth) {
      throw InputError(path(), "is nested more than " + std::to_string(kMaxJsonDepth) +
                                   " levels deep; no input of the lab needs more than a few");
    }
    Json* placed;
    if (stack_.empty()) {
      root_ = std::move(container);
      placed = &root_;
    } else if (stack_.back()->is_array()) {
      stack_.back()->emplace_back(std::move(container));
      placed = &stack_.back()->back();
    } else {
      *slot_ = std::move(container);
      placed = slot_;
    }
    stack_.push_back(placed);
    keys_.emplace_back();
    return true;
  }

  bool close() {
    stack_.pop_back();
    keys_.pop_back();
    if (!keys_.empty()) keys_.back().clear();  // as add(): the field holding the container is read
    return true;
  }

  // The JSON pointer of the value being read: for an array the index of the element in progress
  // (the last one if it is an open container, else the next one).
  std::string path() const {
    std::string out;
    for (std::size_t i = 0; i < stack_.size(); ++i) {
      const Json& level = *stack_[i];
      if (level.is_array()) {
        const std::size_t n = level.size();
        out += "/" + std::to_string(i + 1 < stack_.size() && n > 0 ? n - 1 : n);
      } else if (i + 1 < stack_.size() || !keys_[i].empty()) {
        out += "/" + json_pointer_token(keys_[i]);
      }
    }
    return out;
  }

  Json& root_;
  std::vector<Json*> stack_;
  std::vector<std::string> keys_;  // per open object, the key whose value is being read
  Json* slot_ = nullptr;
};

}  // namespace

std::string json_pointer_token(const std::string& key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

Json parse_json_text(const std::string& text, std::size_t max_bytes) {
  if (text.size() > max_bytes) {
    throw InputError("", "input is " + std::to_string(text.size()) + " bytes; at most " +
                             std::to_string(max_bytes) + " bytes are accepted");
  }
  // A UTF-8 byte-order mark is allowed (RFC 8259 §8.1) and skipped here, so that positions count
  // from the first character an editor shows (nlohmann's lexer would count its three bytes).
  const std::size_t start = text.rfind("\xEF\xBB\xBF", 0) == 0 ? 3 : 0;
  if (text.rfind("\xFF\xFE", 0) == 0 || text.rfind("\xFE\xFF", 0) == 0 ||
      (text.size() >= 2 && (text[0] == '\0' || text[1] == '\0'))) {
    throw InputError("", "the text is UTF-16 (it starts with a UTF-16 byte-order mark or NUL bytes); save it as UTF-8");
  }
  if (start == 3 && text.compare(3, 3, "\xEF\xBB\xBF") == 0) {
    throw InputError("", "malformed JSON at line 1, column 1: a second byte-order mark (the file was saved twice with one?); remove it");
  }
  Json root;
  StrictBuilder builder(root);
  if (start == 0) {
    Json::sax_parse(text, &builder);
  } else {
    Json::sax_parse(text.begin() + 3, text.end(), &builder);
  }
  // A NUL byte is no JSON. Inside a string the parser refuses it (control characters are escaped);
  // outside, nlohmann's lexer takes it for the end of the input and would ignore what follows.
  if (const std::size_t nul = text.find('\0', start); nul != std::string::npos) {
    const std::size_t line_start = text.rfind('\n', nul) == std::string::npos ? start : text.rfind('\n', nul) + 1;
    const auto line = 1 + std::count(text.begin() + static_cast<std::ptrdiff_t>(start), text.begin() + static_cast<std::ptrdiff_t>(nul), '\n');
    throw InputError("", "malformed JSON at line " + std::to_string(line) + ", column " + std::to_string(nul - line_start + 1) +
                             ": a NUL byte, which JSON text cannot hold (is the file UTF-16, or two files glued together?)");
  }
  return root;
}

const Json& expect_object(const Json& value, const std::string& path) {
  if (!value.is_object()) throw InputError(path, "expected an object, found " + type_name(value));
  return value;
}

const Json& expect_array(const Json& value, const std::string& path, std::size_t max_items) {
  if (!value.is_array()) throw InputError(path, "expected an array, found " + type_name(value));
  if (value.size() > max_items) {
    throw InputError(path, "has " + std::to_string(value.size()) + " items; at most " +
                               std::to_string(max_items) + " are allowed");
  }
  return value;
}

double expect_number(const Json& value, const std::string& path, double lo, double hi) {
  if (!value.is_number()) throw InputError(path, "expected a number " + range_text(lo, hi) + ", found " + type_name(value));
  double v = value.get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) {
    throw InputError(path, "is " + format_number(v) + "; allowed: " + range_text(lo, hi));
  }
  return v;
}

std::int64_t expect_int(const Json& value, const std::string& path, std::int64_t lo, std::int64_t hi) {
  if (!value.is_number()) {
    throw InputError(path, "expected a whole number " + range_text(lo, hi) + ", found " + type_name(value));
  }
  double v = value.get<double>();
  if (value.is_number_float() && (!std::isfinite(v) || std::floor(v) != v)) {
    throw InputError(path, "is " + format_number(v) + "; expected a whole number");
  }
  // Compare integers as integers: a double cannot tell 2^53 from 2^53 + 1.
  bool in_range;
  if (value.is_number_unsigned()) {
    const std::uint64_t u = value.get<std::uint64_t>();
    in_range = hi >= 0 && u <= static_cast<std::uint64_t>(hi) && (lo <= 0 || u >= static_cast<std::uint64_t>(lo));
  } else if (value.is_number_integer()) {
    const std::int64_t i = value.get<std::int64_t>();
    in_range = i >= lo && i <= hi;
  } else {
    in_range = v >= double(lo) && v <= double(hi);
  }
  if (!in_range) {
    throw InputError(path, "is " + (value.is_number_float() ? format_number(v) : value.dump()) +
                               "; allowed: " + range_text(lo, hi));
  }
  if (value.is_number_unsigned()) return static_cast<std::int64_t>(value.get<std::uint64_t>());
  if (value.is_number_integer()) return value.get<std::int64_t>();
  return static_cast<std::int64_t>(v);
}

std::string enum_list(std::initializer_list<const char*> allowed) {
  std::string out;
  for (const char* a : allowed) out += (out.empty() ? "" : ", ") + std::string("\"") + a + "\"";
  return out;
}

std::string expect_string(const Json& v, const std::string& path, std::size_t max_length) {
  if (!v.is_string()) {
    std::string found = type_name(v);
    if (v.is_number() || v.is_boolean()) {
      found += " (" + v.dump() + "); Kubernetes declares this field a string: quote the value (in YAML, unquoted "
               "numbers and yes/no/on/off/true/false are not strings)";
    }
    throw InputError(path, "expected a string, found " + found);
  }
  std::string s = v.get<std::string>();
  if (s.size() > max_length) {
    throw InputError(path, "is " + std::to_string(s.size()) + " characters; at most " + std::to_string(max_length) +
                               " are allowed");
  }
  return s;
}

std::string expect_enum_of(const Json& v, const std::string& path, const std::vector<std::string>& allowed,
                           const std::string& hint) {
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + ("\"" + a + "\"");
  if (!v.is_string()) throw InputError(path, "expected one of " + list + ", found " + type_name(v));
  std::string s = v.get<std::string>();
  for (const auto& a : allowed) {
    if (s == a) return s;
  }
  throw InputError(path, quote_for_message(s) + " is not allowed; expected one of " + list + hint);
}

std::string expect_enum(const Json& v, const std::string& path, std::initializer_list<const char*> allowed,
                        const std::string& hint) {
  return expect_enum_of(v, path, std::vector<std::string>(allowed.begin(), allowed.end()), hint);
}

ObjectReader::ObjectReader(const Json& value, std::string path)
    : value_(expect_object(value, path)), path_(std::move(path)) {}

bool ObjectReader::has(const std::string& key) const { return value_.contains(key); }

const Json* ObjectReader::raw(const std::string& key) {
  // Every key asked about is a known key, present or not: finish() lists them for the learner.
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.push_back(key);
  auto it = value_.find(key);
  if (it == value_.end()) return nullptr;
  return &*it;
}

double ObjectReader::get_number(const std::string& key, double fallback, double lo, double hi) {
  auto v = get_optional_number(key, lo, hi);
  return v ? *v : fallback;
}

std::optional<double> ObjectReader::get_optional_number(const std::string& key, double lo, double hi) {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  return expect_number(*v, child_path(key), lo, hi);
}

std::int64_t ObjectReader::get_int(const std::string& key, std::int64_t fallback, std::int64_t lo,
                                   std::int64_t hi) {
  auto v = get_optional_int(key, lo, hi);
  return v ? *v : fallback;
}

std::optional<std::int64_t> ObjectReader::get_optional_int(const std::string& key, std::int64_t lo,
                                                           std::int64_t hi) {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  return expect_int(*v, child_path(key), lo, hi);
}

bool ObjectReader::get_bool(const std::string& key, bool fallback) {
  const Json* v = raw(key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw InputError(child_path(key), "expected true or false, found " + type_name(*v));
  return v->get<bool>();
}

std::string ObjectReader::get_string(const std::string& key, const std::string& fallback,
                                     std::size_t max_length) {
  const Json* v = raw(key);
  if (!v) return fallback;
  if (!v->is_string()) throw InputError(child_path(key), "expected a string, found " + type_name(*v));
  std::string s = v->get<std::string>();
  if (s.size() > max_length) {
    throw InputError(child_path(key), "is " + std::to_string(s.size()) + " characters; at most " +
                                          std::to_string(max_length) + " are allowed");
  }
  return s;
}


std::optional<std::string> ObjectReader::get_optional_enum(const std::string& key,
                                                           std::initializer_list<const char*> allowed) {
  const Json* v = raw(key);
  if (!v) return std::nullopt;
  return expect_enum(*v, child_path(key), allowed);
}

std::string ObjectReader::get_enum(const std::string& key, const std::string& fallback,
                                   std::initializer_list<const char*> allowed) {
  auto v = get_optional_enum(key, allowed);
  return v ? *v : fallback;
}

const Json& ObjectReader::require(const std::string& key, const std::string& what) {
  const Json* v = raw(key);
  if (!v || v->is_null()) throw InputError(child_path(key), "is required (" + what + ")");
  return *v;
}

std::string ObjectReader::require_string(const std::string& key, const std::string& what, std::size_t max_length) {
  std::string s = expect_string(require(key, what), child_path(key), max_length);
  if (s.empty()) throw InputError(child_path(key), "must not be empty (" + what + ")");
  return s;
}

std::int64_t ObjectReader::require_int(const std::string& key, std::int64_t lo, std::int64_t hi) {
  return expect_int(require(key, "a whole number between " + std::to_string(lo) + " and " + std::to_string(hi)),
                    child_path(key), lo, hi);
}

std::string ObjectReader::require_enum(const std::string& key, std::initializer_list<const char*> allowed,
                                       const std::string& hint) {
  return expect_enum(require(key, "one of " + enum_list(allowed)), child_path(key), allowed, hint);
}

void ObjectReader::only_keys(std::initializer_list<const char*> keys) {
  for (const char* k : keys) raw(k);
  finish();
}

void ObjectReader::finish() const {
  for (auto it = value_.begin(); it != value_.end(); ++it) {
    if (std::find(known_.begin(), known_.end(), it.key()) != known_.end()) continue;
    std::vector<std::string> sorted = known_;
    std::sort(sorted.begin(), sorted.end());
    std::string list;
    for (const auto& k : sorted) list += (list.empty() ? "" : ", ") + k;
    throw InputError(child_path(it.key()),
                     "unknown field " + quote_for_message(it.key()) +
                         (list.empty() ? std::string("; this object takes no fields") : "; allowed fields: " + list));
  }
}

}  // namespace gpuscale
