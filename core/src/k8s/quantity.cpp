// Kubernetes quantities (see quantity.hpp): exact decimal and binary suffixes, MilliValue's rounding.
#include "k8s/quantity.hpp"

#include <cmath>
#include <limits>

#include "io/json_reader.hpp"

namespace gpuscale {

namespace {

using Wide = __int128;
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();
const char* kQuantityHelp =
    "expected a Kubernetes quantity: a number with an optional suffix (n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, "
    "Pi, Ei) or exponent, e.g. \"500m\", \"2\", \"1.5\", \"10Gi\", \"1e3\"";

// A quantity as mantissa × 10^exp10 × 2^exp2.
struct Quantity {
  bool negative = false;
  std::uint64_t mantissa = 0;
  int exp10 = 0;
  int exp2 = 0;
};

Quantity parse_quantity(const std::string& text, const std::string& path) {
  auto bad = [&](const std::string& why) -> InputError {
    std::string shown = text.size() > 64 ? text.substr(0, 64) + "..." : text;
    return InputError(path, "\"" + shown + "\" is not a valid quantity (" + why + "); " + kQuantityHelp);
  };
  if (text.empty()) throw bad("empty");
  if (text.size() > 64) throw bad("longer than 64 characters");
  Quantity q;
  std::size_t i = 0;
  if (text[i] == '+' || text[i] == '-') {
    q.negative = text[i] == '-';
    ++i;
  }
  std::string digits;
  int frac_digits = 0;
  bool any_digit = false, seen_point = false;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') {
      digits += c;
      any_digit = true;
      if (seen_point) ++frac_digits;
    } else if (c == '.' && !seen_point) {
      seen_point = true;
    } else {
      break;
    }
  }
  if (!any_digit) throw bad("no digits");
  q.exp10 = -frac_digits;
  std::string suffix = text.substr(i);
  if (suffix.empty()) {
  } else if (suffix.size() == 2 && suffix[1] == 'i' && std::string("KMGTPE").find(suffix[0]) != std::string::npos) {
    q.exp2 = 10 * int(std::string("KMGTPE").find(suffix[0]) + 1);
  } else if (suffix.size() == 1 && std::string("numkMGTPE").find(suffix[0]) != std::string::npos) {
    static const int kExp[] = {-9, -6, -3, 3, 6, 9, 12, 15, 18};
    q.exp10 += kExp[std::string("numkMGTPE").find(suffix[0])];
  } else if ((suffix[0] == 'e' || suffix[0] == 'E') && suffix.size() > 1) {
    std::size_t j = 1;
    bool neg = false;
    if (suffix[j] == '+' || suffix[j] == '-') {
      neg = suffix[j] == '-';
      ++j;
    }
    if (j >= suffix.size()) throw bad("exponent without digits");
    int e = 0;
    for (; j < suffix.size(); ++j) {
      char c = suffix[j];
      if (c < '0' || c > '9') throw bad("unknown suffix \"" + suffix + "\"");
      if (e > 1000) throw bad("exponent out of range");
      e = e * 10 + (c - '0');
    }
    q.exp10 += neg ? -e : e;
  } else {
    throw bad("unknown suffix \"" + suffix + "\"");
  }
  // Canonical mantissa: no leading zeros, trailing zeros moved into the exponent.
  std::size_t start = digits.find_first_not_of('0');
  if (start == std::string::npos) {
    q.mantissa = 0;
    q.exp10 = 0;
    q.exp2 = 0;
    return q;
  }
  digits = digits.substr(start);
  while (digits.size() > 1 && digits.back() == '0') {
    digits.pop_back();
    ++q.exp10;
  }
  if (digits.size() > 18) throw bad("more than 18 significant digits");
  q.mantissa = std::stoull(digits);
  return q;
}

std::int64_t to_milli(const Quantity& q, const std::string& text, const std::string& path) {
  auto range = [&]() {
    return InputError(path, "\"" + text + "\" is out of range: at most about 9.2e15 in magnitude (int64 milli-units)");
  };
  if (q.mantissa == 0) return 0;
  const Wide limit = Wide(kInt64Max) + 1;
  Wide num = Wide(q.mantissa) << q.exp2;  // < 2^60 × 2^60
  int e = q.exp10 + 3;
  Wide magnitude;
  bool inexact = false;
  if (e >= 0) {
    for (int k = 0; k < e; ++k) {
      if (num > limit / 10) throw range();
      num *= 10;
    }
    magnitude = num;
  } else if (-e > 38) {
    magnitude = 0;
    inexact = true;
  } else {
    Wide den = 1;
    for (int k = 0; k < -e; ++k) den *= 10;
    magnitude = num / den;
    inexact = num % den != 0;
  }
  // MilliValue rounds up (ceil): positive values away from zero, negative values toward zero.
  if (!q.negative) {
    if (inexact) magnitude += 1;
    if (magnitude > Wide(kInt64Max)) throw range();
    return static_cast<std::int64_t>(magnitude);
  }
  if (magnitude > limit) throw range();
  return static_cast<std::int64_t>(-magnitude);
}

std::string number_text(const Json& value) {
  // nlohmann prints the shortest text that round-trips: 0.1 → "0.1", 1e3 → "1000.0".
  return value.dump();
}

}  // namespace

std::int64_t parse_quantity_milli(const std::string& text, const std::string& path) {
  return to_milli(parse_quantity(text, path), text, path);
}

double parse_quantity_double(const std::string& text, const std::string& path) {
  Quantity q = parse_quantity(text, path);
  if (q.mantissa == 0) return 0.0;
  // One correctly rounded multiply or divide by an exact power of ten where possible.
  double m = double(q.mantissa);
  int e = q.exp10;
  double v = m;
  if (e >= 0) {
    for (; e > 22; e -= 22) v *= 1e22;
    double p = 1;
    for (int k = 0; k < e; ++k) p *= 10;
    v *= p;
  } else {
    e = -e;
    for (; e > 22; e -= 22) v /= 1e22;
    double p = 1;
    for (int k = 0; k < e; ++k) p *= 10;
    v /= p;
  }
  v = std::ldexp(v, q.exp2);  // exact
  if (!std::isfinite(v)) throw InputError(path, "\"" + text + "\" is out of range");
  return q.negative ? -v : v;
}

std::int64_t quantity_milli(const Json& value, const std::string& path) {
  if (value.is_string()) return parse_quantity_milli(value.get<std::string>(), path);
  if (value.is_number()) {
    if (value.is_number_float() && !std::isfinite(value.get<double>())) throw InputError(path, "must be finite");
    return parse_quantity_milli(number_text(value), path);
  }
  throw InputError(path, std::string("expected a quantity (a number or a string), found ") + type_name(value) + "; " +
                             kQuantityHelp);
}

std::int64_t quantity_mib(const Json& value, const std::string& path) {
  // Quantities are bytes: "200Gi" → 200 × 1024 MiB.
  return quantity_milli(value, path) / 1000 / (1024 * 1024);
}

std::string format_quantity_milli(std::int64_t milli) {
  if (milli % 1000 != 0) return std::to_string(milli) + "m";
  std::int64_t v = milli / 1000;
  static const char* kSuffix[] = {"", "k", "M", "G", "T", "P", "E"};
  int idx = 0;
  while (v != 0 && v % 1000 == 0 && idx < 6) {
    v /= 1000;
    ++idx;
  }
  return std::to_string(v) + kSuffix[idx];
}

}  // namespace gpuscale
