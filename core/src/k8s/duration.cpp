// Go durations (see duration.hpp).
#include "k8s/duration.hpp"

#include <limits>
#include <string_view>

#include "gpuscale/errors.hpp"
#include "k8s/names.hpp"

namespace gpuscale {

const char* const kGoDurationHelp =
    "a Go duration is one or more numbers, each with a unit (ns, us, µs, ms, s, m, h), written without "
    "spaces: \"90s\", \"1.5h\", \"1h30m\"";

std::optional<std::int64_t> go_duration_ns(const std::string& orig, std::string& why) {
  constexpr std::uint64_t kLimit = std::uint64_t(1) << 63;
  std::string_view s = orig;
  bool neg = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return 0;  // Go's special case: a bare 0 needs no unit
  if (s.empty()) {
    why = "it is empty";
    return std::nullopt;
  }
  std::uint64_t d = 0;
  while (!s.empty()) {
    if (!(s[0] == '.' || is_digit(s[0]))) {
      why = "expected a number at " + shown(std::string(s));
      return std::nullopt;
    }
    // leadingInt
    std::uint64_t v = 0;
    const std::size_t pl = s.size();
    std::size_t i = 0;
    for (; i < s.size() && is_digit(s[i]); ++i) {
      if (v > kLimit / 10) {
        why = "it is too large";
        return std::nullopt;
      }
      v = v * 10 + std::uint64_t(s[i] - '0');
      if (v > kLimit) {
        why = "it is too large";
        return std::nullopt;
      }
    }
    s.remove_prefix(i);
    const bool pre = pl != s.size();
    // leadingFraction: digits past the int64 range are dropped, as in Go.
    bool post = false;
    std::uint64_t f = 0;
    double scale = 1;
    if (!s.empty() && s[0] == '.') {
      s.remove_prefix(1);
      const std::size_t pl2 = s.size();
      bool overflow = false;
      std::size_t j = 0;
      for (; j < s.size() && is_digit(s[j]); ++j) {
        if (overflow) continue;
        if (f > (kLimit - 1) / 10) {
          overflow = true;
          continue;
        }
        std::uint64_t y = f * 10 + std::uint64_t(s[j] - '0');
        if (y > kLimit) {
          overflow = true;
          continue;
        }
        f = y;
        scale *= 10;
      }
      s.remove_prefix(j);
      post = pl2 != s.size();
    }
    if (!pre && !post) {
      why = "a '.' has no digits around it";
      return std::nullopt;
    }
    std::size_t k = 0;
    for (; k < s.size(); ++k) {
      if (s[k] == '.' || is_digit(s[k])) break;
    }
    if (k == 0) {
      why = "a number has no unit";
      return std::nullopt;
    }
    const std::string u(s.substr(0, k));
    s.remove_prefix(k);
    std::uint64_t unit = 0;
    if (u == "ns") unit = 1;
    else if (u == "us" || u == "\xC2\xB5s" || u == "\xCE\xBCs") unit = 1000;  // U+00B5 and U+03BC, as Go
    else if (u == "ms") unit = 1000000;
    else if (u == "s") unit = 1000000000;
    else if (u == "m") unit = 60ULL * 1000000000;
    else if (u == "h") unit = 3600ULL * 1000000000;
    if (unit == 0) {
      why = "unknown unit " + shown(u);
      if (u.find(' ') != std::string::npos) why += " (spaces are not allowed)";
      return std::nullopt;
    }
    if (v > kLimit / unit) {
      why = "it is too large";
      return std::nullopt;
    }
    v *= unit;
    if (f > 0) {
      // float64 arithmetic, exactly as Go does it.
      v += std::uint64_t(double(f) * (double(unit) / scale));
      if (v > kLimit) {
        why = "it is too large";
        return std::nullopt;
      }
    }
    d += v;
    if (d > kLimit) {
      why = "it is too large";
      return std::nullopt;
    }
  }
  if (neg) return d == kLimit ? std::numeric_limits<std::int64_t>::min() : -std::int64_t(d);
  if (d > kLimit - 1) {
    why = "it is too large";
    return std::nullopt;
  }
  return std::int64_t(d);
}

Micros ns_to_micros(std::int64_t ns) { return ns / 1000 + (ns % 1000 >= 500 ? 1 : 0); }


Micros parse_duration(const std::string& text, const std::string& path) {
  std::string why;
  auto ns = go_duration_ns(text, why);
  if (!ns) throw InputError(path, shown(text) + " is not a valid duration: " + why + "; " + kGoDurationHelp);
  if (*ns < 0) throw InputError(path, shown(text) + " is negative; durations here must be 0 or more");
  return ns_to_micros(*ns);
}

std::string format_duration(Micros d) {
  if (d == 0) return "0s";
  std::string out;
  if (d < 0) {
    out = "-";
    d = -d;
  }
  constexpr Micros kHour = 3600 * kMicrosPerSecond;
  const Micros h = d / kHour, m = d % kHour / (60 * kMicrosPerSecond), s = d % (60 * kMicrosPerSecond) / kMicrosPerSecond;
  const Micros ms = d % kMicrosPerSecond / 1000, us = d % 1000;
  if (h) out += std::to_string(h) + "h";
  if (m) out += std::to_string(m) + "m";
  if (s) out += std::to_string(s) + "s";
  if (ms) out += std::to_string(ms) + "ms";
  if (us) out += std::to_string(us) + "us";
  return out;
}

}  // namespace gpuscale
