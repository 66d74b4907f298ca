// The generator, its streams and the hand-written distributions and math.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernel/detmath.hpp"
#include "kernel/rng.hpp"

using namespace gpuscale;

TEST_CASE("xoshiro256** matches its reference sequence for a splitmix64 seed", "[rng]") {
  // splitmix64 from state 0 gives the well-known first output 0xe220a8397b1dcdaf.
  std::uint64_t state = 0;
  CHECK(splitmix64(state) == 0xe220a8397b1dcdafULL);
  Rng a(42), b(42), c(43);
  for (int i = 0; i < 100; ++i) {
    auto x = a.next();
    REQUIRE(x == b.next());
    (void)c;
  }
  CHECK(Rng(42).next() != Rng(43).next());
}

TEST_CASE("streams are independent of each other and of creation order", "[rng]") {
  Rng w1 = Rng::stream(7, "workload.arrivals");
  Rng other = Rng::stream(7, "engine");
  Rng w2 = Rng::stream(7, "workload.arrivals");
  (void)other;
  for (int i = 0; i < 10; ++i) REQUIRE(w1.next() == w2.next());
  CHECK(Rng::stream(7, "a").next() != Rng::stream(7, "b").next());
  CHECK(Rng::stream(7, "a").next() != Rng::stream(8, "a").next());
}

namespace {
struct Moments {
  double mean = 0, var = 0;
};
template <typename F>
Moments moments(int n, F draw) {
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    double x = draw();
    sum += x;
    sum2 += x * x;
  }
  Moments m;
  m.mean = sum / n;
  m.var = sum2 / n - m.mean * m.mean;
  return m;
}
}  // namespace

TEST_CASE("distribution moments", "[rng]") {
  const int n = 200000;
  Rng r(2024);
  auto u = moments(n, [&] { return r.uniform(); });
  CHECK(u.mean == Approx(0.5).margin(0.005));
  CHECK(u.var == Approx(1.0 / 12).margin(0.002));

  auto e = moments(n, [&] { return r.exponential(4.0); });
  CHECK(e.mean == Approx(0.25).epsilon(0.01));
  CHECK(e.var == Approx(0.0625).epsilon(0.03));

  auto z = moments(n, [&] { return r.normal(); });
  CHECK(z.mean == Approx(0).margin(0.01));
  CHECK(z.var == Approx(1).epsilon(0.02));

  // Lognormal(mu, sigma): mean exp(mu + sigma^2/2), variance (exp(sigma^2) - 1) exp(2 mu + sigma^2).
  const double mu = 1.0, sigma = 0.5;
  auto l = moments(n, [&] { return r.lognormal(mu, sigma); });
  CHECK(l.mean == Approx(std::exp(mu + sigma * sigma / 2)).epsilon(0.01));
  CHECK(l.var == Approx((std::exp(sigma * sigma) - 1) * std::exp(2 * mu + sigma * sigma)).epsilon(0.05));

  std::vector<int> counts(6, 0);
  for (int i = 0; i < 60000; ++i) counts[r.uniform_int(6)]++;
  for (int c : counts) CHECK(c == Approx(10000).epsilon(0.05));
  for (int i = 0; i < 1000; ++i) {
    auto v = r.uniform_int(std::int64_t(-3), std::int64_t(3));
    REQUIRE(v >= -3);
    REQUIRE(v <= 3);
  }
}

TEST_CASE("det_log and det_exp agree with the platform's to within 2 ulp", "[rng][detmath]") {
  Rng r(99);
  for (int i = 0; i < 100000; ++i) {
    double x = std::ldexp(r.uniform() + 0.5, static_cast<int>(r.uniform_int(std::int64_t(-60), std::int64_t(60))));
    double ours = det_log(x), ref = std::log(x);
    REQUIRE(std::fabs(ours - ref) <= 2 * std::fabs(std::nextafter(ref, 2 * ref) - ref) + 1e-300);
    double y = (r.uniform() - 0.5) * 1400;
    double e = det_exp(y), eref = std::exp(y);
    REQUIRE(std::fabs(e - eref) <= 2 * std::fabs(std::nextafter(eref, 2 * eref) - eref) + 1e-300);
  }
  CHECK(det_log(1.0) == 0.0);
  CHECK(det_exp(0.0) == 1.0);
  CHECK(std::isinf(det_exp(1000)));
  CHECK(det_exp(-1000) == 0.0);
  CHECK(std::isnan(det_log(-1)));
  CHECK(std::isinf(det_log(0)));
}
