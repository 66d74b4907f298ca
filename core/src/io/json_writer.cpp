// Compact JSON writer (json_writer.hpp). Numbers use nlohmann's own formatting (Grisu2 for doubles,
// NaN and infinities as null), so the text is the same as Json::dump(-1, ' ', true)'s.
#include "gpuscale/json.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace gpuscale {

namespace {

const char kHex[] = "0123456789abcdef";

// \u and four lowercase hex digits, as nlohmann writes an escaped code unit.
void write_u(unsigned code_unit, std::string& out) {
  const char u[6] = {'\\', 'u', kHex[(code_unit >> 12) & 0xF], kHex[(code_unit >> 8) & 0xF],
                     kHex[(code_unit >> 4) & 0xF], kHex[code_unit & 0xF]};
  out.append(u, 6);
}

// Bytes of the UTF-8 sequence that starts at s[i] if it is well formed (no overlong forms, no
// surrogates, at most U+10FFFF), else 0.
std::size_t utf8_sequence(const std::string& s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  const std::size_t n = s.size() - i;
  auto cont = [&](std::size_t k) { return (b(i + k) & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return n >= 2 && cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (n < 3 || !cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(i + 1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(i + 1) >= 0xA0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (n < 4 || !cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(i + 1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(i + 1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

void write_string(const std::string& s, std::string& out) {
  out += '"';
  std::size_t run = 0;  // start of the bytes not yet copied
  for (std::size_t i = 0; i < s.size();) {
    // Skip 8 plain bytes at a time: none is a control character, '"', '\\', DEL or non-ASCII.
    while (i + 8 <= s.size()) {
      std::uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      constexpr std::uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
      auto has_byte_below = [&](std::uint64_t x, unsigned n) { return (x - ones * n) & ~x & highs; };
      const std::uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
      if (((w | (w + ones)) & highs) | has_byte_below(w, 0x20) | has_byte_below(quote, 1) | has_byte_below(backslash, 1)) break;
      i += 8;
    }
    if (i >= s.size()) break;
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x7F) {  // (nlohmann escapes DEL too)
      ++i;
      continue;
    }
    out.append(s, run, i - run);
    if (c >= 0x80) {
      // Non-ASCII as \u escapes (UTF-16 surrogate pairs above U+FFFF), invalid bytes as U+FFFD.
      const std::size_t len = utf8_sequence(s, i);
      if (len == 0) {
        write_u(0xFFFD, out);
        run = ++i;
        continue;
      }
      unsigned cp = c & (0x7F >> len);
      for (std::size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
      if (cp <= 0xFFFF) {
        write_u(cp, out);
      } else {
        write_u(0xD800 + ((cp - 0x10000) >> 10), out);
        write_u(0xDC00 + ((cp - 0x10000) & 0x3FF), out);
      }
      run = i += len;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default: write_u(c, out);
    }
    run = ++i;
  }
  out.append(s, run, std::string::npos);
  out += '"';
}

template <typename Int>
void write_integer(Int v, std::string& out) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void write_float(double v, std::string& out) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[64];
  char* end = nlohmann::detail::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, end);
}

}  // namespace

void dump_json(const Json& value, std::string& out) {
  switch (value.type()) {
    case Json::value_t::null:
      out += "null";
      return;
    case Json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    case Json::value_t::number_integer:
      write_integer(value.get<std::int64_t>(), out);
      return;
    case Json::value_t::number_unsigned:
      write_integer(value.get<std::uint64_t>(), out);
      return;
    case Json::value_t::number_float:
      write_float(value.get<double>(), out);
      return;
    case Json::value_t::string:
      write_string(value.get_ref<const std::string&>(), out);
      return;
    case Json::value_t::array: {
      out += '[';
      bool first = true;
      for (const Json& v : value) {
        if (!first) out += ',';
        first = false;
        dump_json(v, out);
      }
      out += ']';
      return;
    }
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = value.begin(); it != value.end(); ++it) {
        if (!first) out += ',';
        first = false;
        write_string(it.key(), out);
        out += ':';
        dump_json(it.value(), out);
      }
      out += '}';
      return;
    }
    default:  // binary and discarded values: never in the lab's documents
      out += value.dump(-1, ' ', true, Json::error_handler_t::replace);
      return;
  }
}

std::string dump_json(const Json& value) {
  std::string out;
  dump_json(value, out);
  return out;
}

}  // namespace gpuscale
