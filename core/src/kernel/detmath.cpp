// Deterministic log/exp from exactly-rounded IEEE operations (see detmath.hpp).
#include "kernel/detmath.hpp"

#include <cmath>
#include <limits>

namespace gpuscale {

namespace {
// ln 2 split so that k * kLn2Hi is exact for |k| < 2^11 (fdlibm's constants).
constexpr double kLn2Hi = 6.93147180369123816490e-01;
constexpr double kLn2Lo = 1.90821492927058770002e-10;
constexpr double kInvLn2 = 1.44269504088896338700e+00;
constexpr double kSqrtHalf = 0.70710678118654752440;
}  // namespace

double det_log(double x) {
  if (std::isnan(x) || x < 0) return std::numeric_limits<double>::quiet_NaN();
  if (x == 0) return -std::numeric_limits<double>::infinity();
  if (std::isinf(x)) return x;
  int e = 0;
  double m = std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1): exact
  if (m < kSqrtHalf) {
    m *= 2;  // exact
    e -= 1;
  }
  // log(m) = 2 atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), s = (m-1)/(m+1), |s| <= 0.1716.
  double f = m - 1.0;
  double s = f / (m + 1.0);
  double z = s * s;
  // 12 odd terms: the first omitted term is below 1e-19 relative.
  double poly = 1.0 / 25;
  poly = poly * z + 1.0 / 23;
  poly = poly * z + 1.0 / 21;
  poly = poly * z + 1.0 / 19;
  poly = poly * z + 1.0 / 17;
  poly = poly * z + 1.0 / 15;
  poly = poly * z + 1.0 / 13;
  poly = poly * z + 1.0 / 11;
  poly = poly * z + 1.0 / 9;
  poly = poly * z + 1.0 / 7;
  poly = poly * z + 1.0 / 5;
  poly = poly * z + 1.0 / 3;
  // log(m) = f - s*(f - 2*z*poly*s/s...) written as f - s*(f - R) keeps the leading term exact-ish:
  // 2s = f - s f, so 2s + 2s*z*poly = f - s*f + 2*s*z*poly.
  double log_m = f - (s * f - 2.0 * s * z * poly);
  double k = static_cast<double>(e);
  return k * kLn2Hi + (log_m + k * kLn2Lo);
}

double det_exp(double x) {
  if (std::isnan(x)) return x;
  if (x > 709.782712893384) return std::numeric_limits<double>::infinity();
  if (x < -745.1332191019411) return 0.0;
  double kd = std::floor(x * kInvLn2 + 0.5);
  int k = static_cast<int>(kd);
  double r = (x - kd * kLn2Hi) - kd * kLn2Lo;  // |r| <= ~0.347
  // Taylor series to degree 14: the remainder is below 1e-17 relative.
  double p = 1.0 / 87178291200.0;  // 1/14!
  p = p * r + 1.0 / 6227020800.0;
  p = p * r + 1.0 / 479001600.0;
  p = p * r + 1.0 / 39916800.0;
  p = p * r + 1.0 / 3628800.0;
  p = p * r + 1.0 / 362880.0;
  p = p * r + 1.0 / 40320.0;
  p = p * r + 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  // ldexp in two steps so subnormal results and k = 1024 do not overflow the intermediate.
  if (k > 1000) return std::ldexp(std::ldexp(p, k - 1000), 1000);
  if (k < -1000) return std::ldexp(std::ldexp(p, k + 1000), -1000);
  return std::ldexp(p, k);
}

double det_pow(double x, double y) { return det_exp(y * det_log(x)); }

}  // namespace gpuscale
