// Making user text safe to show in error messages (see gpuscale/errors.hpp).
#include "gpuscale/errors.hpp"

#include <cstdint>

namespace gpuscale {

namespace {

// Length of the valid UTF-8 sequence at s[i], or 0 if the bytes there are not one (overlong forms,
// surrogates and code points above U+10FFFF are invalid, as RFC 3629 says).
std::size_t utf8_length(const std::string& s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  std::uint32_t cp;
  if ((c & 0xE0) == 0xC0) n = 2, cp = c & 0x1F;
  else if ((c & 0xF0) == 0xE0) n = 3, cp = c & 0x0F;
  else if ((c & 0xF8) == 0xF0) n = 4, cp = c & 0x07;
  else return 0;
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  static const std::uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

const char kHex[] = "0123456789abcdef";

// Appends one character of `s` at i (escaped if needed) and returns the bytes it took.
std::size_t append_safe(const std::string& s, std::size_t i, std::string& out) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (c == '\n') out += "\\n";
  else if (c == '\t') out += "\\t";
  else if (c == '\r') out += "\\r";
  else if (c < 0x20 || c == 0x7F) out += std::string("\\u00") + kHex[c >> 4] + kHex[c & 15];
  else {
    const std::size_t n = utf8_length(s, i);
    if (n == 0) {
      out += std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
      return 1;
    }
    out.append(s, i, n);
    return n;
  }
  return 1;
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

}  // namespace

std::string sanitize_for_message(const std::string& text, std::size_t max_run, std::size_t max_total) {
  std::string out;
  std::size_t i = 0, run = 0;
  while (i < text.size()) {
    if (out.size() >= max_total) {
      out += "… (" + std::to_string(text.size() - i) + " more bytes)";
      break;
    }
    if (is_space(text[i])) {
      run = 0;
    } else if (++run > max_run) {
      // Skip to the end of this unbroken run and say how long it was.
      std::size_t end = i;
      while (end < text.size() && !is_space(text[end])) ++end;
      out += "… (" + std::to_string(end - i + max_run) + " bytes)";
      i = end;
      run = 0;
      continue;
    }
    i += append_safe(text, i, out);
  }
  return out;
}

std::string sanitize_path(const std::string& path) {
  constexpr std::size_t kMaxSegment = 100, kMaxTotal = 2000;
  std::string out;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (start > 0) out += '/';
    if (out.size() >= kMaxTotal) {
      out += "… (" + std::to_string(path.size() - start) + " more bytes)";
      break;
    }
    out += sanitize_for_message(path.substr(start, end - start), kMaxSegment, kMaxSegment * 6);
    start = end + 1;
  }
  return out;
}

std::string quote_for_message(const std::string& text, std::size_t max_chars) {
  std::string out = "\"";
  std::size_t i = 0, chars = 0;
  while (i < text.size() && chars < max_chars) {
    i += append_safe(text, i, out);
    ++chars;
  }
  out += '"';
  if (i < text.size()) {
    out.insert(out.size() - 1, "…");
    out += " (" + std::to_string(text.size()) + " bytes)";
  }
  return out;
}

}  // namespace gpuscale
