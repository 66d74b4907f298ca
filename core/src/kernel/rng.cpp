// xoshiro256** with splitmix64 seeding (Blackman & Vigna, public domain algorithm) and own distributions.
#include "kernel/rng.hpp"

#include <cmath>

#include "kernel/detmath.hpp"

namespace gpuscale {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

Rng::Rng(std::uint64_t seed) {
  std::uint64_t state = seed;
  for (auto& s : s_) s = splitmix64(state);
}

Rng Rng::stream(std::uint64_t seed, std::string_view component) {
  std::uint64_t mixed = seed;
  std::uint64_t a = splitmix64(mixed);
  return Rng(a ^ fnv1a64(component));
}

static inline std::uint64_t rotl(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

std::uint64_t Rng::next() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }

double Rng::uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }

std::uint64_t Rng::uniform_int(std::uint64_t n) {
  if (n <= 1) return 0;
  // Reject the low values that would bias r % n.
  const std::uint64_t threshold = (0 - n) % n;
  for (;;) {
    std::uint64_t r = next();
    if (r >= threshold) return r % n;
  }
}

std::int64_t Rng::uniform_int(std::int64_t lo, std::int64_t hi) {
  if (hi <= lo) return lo;
  std::uint64_t span = static_cast<std::uint64_t>(hi - lo) + 1;
  return lo + static_cast<std::int64_t>(uniform_int(span));
}

double Rng::exponential(double rate) {
  // 1 - u is in (0, 1], so the log is finite: no gap is clipped.
  return -det_log(1.0 - uniform()) / rate;
}

double Rng::normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  for (;;) {
    double u = 2.0 * uniform() - 1.0;
    double v = 2.0 * uniform() - 1.0;
    double s = u * u + v * v;
    if (s >= 1.0 || s == 0.0) continue;
    double f = std::sqrt(-2.0 * det_log(s) / s);  // sqrt is correctly rounded everywhere
    spare_normal_ = v * f;
    has_spare_normal_ = true;
    return u * f;
  }
}

double Rng::lognormal(double mu, double sigma) { return det_exp(mu + sigma * normal()); }

}  // namespace gpuscale
