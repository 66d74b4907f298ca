// The one random generator: xoshiro256** seeded through splitmix64, with a derived stream per
// component and hand-written distributions (std:: distributions differ between standard libraries).
#pragma once
#include <cstdint>
#include <string_view>

namespace gpuscale {

class Rng {
 public:
  explicit Rng(std::uint64_t seed);
  // A stream for one component: the same (seed, name) always gives the same stream, and adding a
  // component never shifts another's draws.
  static Rng stream(std::uint64_t seed, std::string_view component);

  std::uint64_t next();
  double uniform();                                // [0, 1), 53 random bits
  double uniform(double lo, double hi);            // [lo, hi)
  std::uint64_t uniform_int(std::uint64_t n);      // [0, n), unbiased (rejection)
  std::int64_t uniform_int(std::int64_t lo, std::int64_t hi);  // [lo, hi] inclusive
  double exponential(double rate);                 // mean 1/rate
  double normal();                                 // standard normal (Marsaglia polar method)
  double lognormal(double mu, double sigma);       // exp(mu + sigma * normal())

 private:
  std::uint64_t s_[4];
  bool has_spare_normal_ = false;
  double spare_normal_ = 0;
};

std::uint64_t splitmix64(std::uint64_t& state);
std::uint64_t fnv1a64(std::string_view text);

}  // namespace gpuscale
