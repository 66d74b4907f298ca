// The request stream (core/src/workload.cpp): Poisson arrivals at a piecewise-constant rate that
// repeats, seeded streams, and token-count draws that are redrawn, never clipped.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "kernel/detmath.hpp"
#include "kernel/rng.hpp"
#include "scenario/scenario.hpp"
#include "serving/workload.hpp"
#include "sim/simulation.hpp"
#include "test_support.hpp"

using namespace gpuscale;

namespace {

WorkloadConfig custom(std::vector<Phase> phases) {
  WorkloadConfig w;
  w.preset = WorkloadPreset::Custom;
  w.phases = std::move(phases);
  return w;
}

std::vector<Request> drain(const WorkloadConfig& w, std::uint64_t seed, double duration_s) {
  Workload stream(w, seed, seconds_to_micros(duration_s));
  std::vector<Request> out;
  Request r;
  while (stream.next(r)) out.push_back(r);
  Request after;
  CHECK_FALSE(stream.next(after));  // once finished, it stays finished
  return out;
}

std::int64_t count_in(const std::vector<Request>& rs, double from_s, double to_s) {
  std::int64_t n = 0;
  for (const auto& r : rs) n += (r.arrived_at >= seconds_to_micros(from_s) && r.arrived_at < seconds_to_micros(to_s));
  return n;
}

// A Poisson count with mean `mean` lies within 4 standard deviations (fails about 1 in 16,000).
void check_poisson(std::int64_t count, double mean) {
  INFO("count " << count << ", expected " << mean << " ± " << 4 * std::sqrt(mean));
  CHECK(std::abs(static_cast<double>(count) - mean) <= 4 * std::sqrt(mean));
}

}  // namespace

TEST_CASE("arrivals come in time order, inside the run, numbered from 0", "[workload]") {
  const auto rs = drain(custom({{300, 3.0}, {200, 0.5}}), 7, 900);
  REQUIRE(rs.size() > 500);
  for (std::size_t i = 0; i < rs.size(); ++i) {
    INFO("request " << i);
    CHECK(rs[i].id == i);
    CHECK(rs[i].arrived_at >= 0);
    CHECK(rs[i].arrived_at < seconds_to_micros(900));
    if (i > 0) CHECK(rs[i].arrived_at >= rs[i - 1].arrived_at);
  }
}

TEST_CASE("a steady rate gives a Poisson-plausible count", "[workload]") {
  const auto rs = drain(custom({{3600, 2.0}}), 1, 3600);
  check_poisson(static_cast<std::int64_t>(rs.size()), 7200);
  // Gaps are exponential: the share of gaps longer than the mean 0.5 s is e^-1.
  std::int64_t long_gaps = 0;
  for (std::size_t i = 1; i < rs.size(); ++i) long_gaps += (rs[i].arrived_at - rs[i - 1].arrived_at) > 500'000;
  const double share = static_cast<double>(long_gaps) / static_cast<double>(rs.size() - 1);
  CHECK(share == Approx(std::exp(-1.0)).margin(0.03));
}

TEST_CASE("each phase has its own rate", "[workload]") {
  const auto rs = drain(custom({{1000, 1.0}, {1000, 5.0}, {500, 0.2}}), 3, 2500);
  check_poisson(count_in(rs, 0, 1000), 1000);
  check_poisson(count_in(rs, 1000, 2000), 5000);
  check_poisson(count_in(rs, 2000, 2500), 100);
}

TEST_CASE("phases shorter than the run repeat to fill it", "[workload]") {
  // 100 s silent, 100 s at 10 req/s, over 1000 s: five busy windows, nothing in the silent ones.
  const auto rs = drain(custom({{100, 0.0}, {100, 10.0}}), 11, 1000);
  check_poisson(static_cast<std::int64_t>(rs.size()), 5000);
  for (int k = 0; k < 10; ++k) {
    INFO("window " << k * 100 << " … " << (k + 1) * 100 << " s");
    const std::int64_t n = count_in(rs, k * 100.0, (k + 1) * 100.0);
    if (k % 2 == 0) {
      CHECK(n == 0);
    } else {
      check_poisson(n, 1000);
    }
  }
  // The presets repeat too: lesson_burst is a 3600 s profile; over two hours its spike comes twice.
  WorkloadConfig burst;
  burst.rate_scale = 10;
  const auto two_hours = drain(burst, 5, 7200);
  check_poisson(count_in(two_hours, 600, 1800), 1200 * 4.0);
  check_poisson(count_in(two_hours, 4200, 5400), 1200 * 4.0);
  check_poisson(count_in(two_hours, 3600, 4200), 600 * 0.5);
}

TEST_CASE("rate 0 phases produce no arrivals", "[workload]") {
  CHECK(drain(custom({{60, 0.0}}), 1, 3600).empty());
  CHECK(drain(custom({{60, 0.0}, {30, 0.0}}), 2, 691200).empty());
  WorkloadConfig scaled_to_zero = custom({{60, 5.0}});
  scaled_to_zero.rate_scale = 0;
  CHECK(drain(scaled_to_zero, 3, 600).empty());
}

TEST_CASE("the same seed gives the same stream; another seed a different one", "[workload]") {
  const WorkloadConfig w = custom({{120, 4.0}, {60, 1.0}});
  const auto a = drain(w, 42, 600), b = drain(w, 42, 600), c = drain(w, 43, 600);
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    INFO("request " << i);
    CHECK(a[i].arrived_at == b[i].arrived_at);
    CHECK(a[i].prompt_tokens == b[i].prompt_tokens);
    CHECK(a[i].output_tokens == b[i].output_tokens);
  }
  std::size_t same_time = 0;
  for (std::size_t i = 0; i < std::min(a.size(), c.size()); ++i) same_time += a[i].arrived_at == c[i].arrived_at;
  CHECK(same_time == 0);
}

TEST_CASE("arrival times do not depend on the token distributions", "[workload]") {
  // Separate streams: changing what a request asks for must not move when requests arrive.
  WorkloadConfig a = custom({{600, 3.0}});
  WorkloadConfig b = a;
  b.prompt_tokens = {TokenDistributionKind::Uniform, 0, 0, 10, 20};
  b.output_tokens = {TokenDistributionKind::Fixed, 77, 0, 1, 100};
  const auto ra = drain(a, 9, 600), rb = drain(b, 9, 600);
  REQUIRE(ra.size() == rb.size());
  for (std::size_t i = 0; i < ra.size(); ++i) {
    CHECK(ra[i].arrived_at == rb[i].arrived_at);
    CHECK(ra[i].output_tokens != 0);
    CHECK(rb[i].output_tokens == 77);
  }
  // And the prompt stream does not shift the output stream.
  WorkloadConfig c = a;
  c.prompt_tokens = {TokenDistributionKind::Fixed, 100, 0, 1, 200};
  const auto rc = drain(c, 9, 600);
  REQUIRE(rc.size() == ra.size());
  for (std::size_t i = 0; i < ra.size(); ++i) CHECK(rc[i].output_tokens == ra[i].output_tokens);
}

TEST_CASE("token counts respect [min, max]; fixed gives exactly the mean", "[workload]") {
  SECTION("fixed") {
    Rng rng(1);
    for (int i = 0; i < 100; ++i) CHECK(draw_tokens({TokenDistributionKind::Fixed, 1000, 0.5, 1, 8192}, rng) == 1000);
    CHECK(draw_tokens({TokenDistributionKind::Fixed, 1000.4, 0, 1, 8192}, rng) == 1000);
    CHECK(draw_tokens({TokenDistributionKind::Fixed, 1000.5, 0, 1, 8192}, rng) == 1001);
  }
  SECTION("uniform reaches both ends of an inclusive range") {
    Rng rng(2);
    std::vector<int> seen(5, 0);
    for (int i = 0; i < 2000; ++i) {
      const auto n = draw_tokens({TokenDistributionKind::Uniform, 1, 0, 1, 4}, rng);
      REQUIRE(n >= 1);
      REQUIRE(n <= 4);
      ++seen[static_cast<std::size_t>(n)];
    }
    for (int v = 1; v <= 4; ++v) check_poisson(seen[static_cast<std::size_t>(v)], 500);
  }
  SECTION("lognormal has the configured mean when the bounds are wide") {
    Rng rng(3);
    const TokenDistribution d{TokenDistributionKind::Lognormal, 1000, 0.5, 1, 131072};
    double sum = 0, sum2 = 0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
      const double v = draw_tokens(d, rng);
      sum += v;
      sum2 += v * v;
    }
    const double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
    CHECK(mean == Approx(1000).margin(4 * 500 / std::sqrt(double(n))));
    CHECK(sd / mean == Approx(0.5).margin(0.03));
  }
  SECTION("lognormal draws outside the bounds are redrawn, not clipped") {
    Rng rng(4);
    const TokenDistribution d{TokenDistributionKind::Lognormal, 1000, 0.5, 900, 1100};
    int at_bounds = 0;
    const int n = 5000;
    for (int i = 0; i < n; ++i) {
      const auto v = draw_tokens(d, rng);
      REQUIRE(v >= 900);
      REQUIRE(v <= 1100);
      at_bounds += (v == 900 || v == 1100);
    }
    // Clipping would put most draws (about 84 %) on the two bounds; redrawing leaves about 1 %.
    CHECK(at_bounds < n / 20);
  }
  SECTION("exponential has the configured mean, a cv of 1, and its inverse CDF's quantiles") {
    Rng rng(6);
    const TokenDistribution d{TokenDistributionKind::Exponential, 1000, 0, 1, 131072};
    double sum = 0, sum2 = 0;
    int below_median = 0;
    const int n = 20000;
    for (int i = 0; i < n; ++i) {
      const double v = draw_tokens(d, rng);
      sum += v;
      sum2 += v * v;
      below_median += v < 1000 * std::log(2.0);  // the median of an exponential: mean × ln 2
    }
    const double mean = sum / n, sd = std::sqrt(sum2 / n - mean * mean);
    CHECK(mean == Approx(1000).margin(4 * 1000 / std::sqrt(double(n))));
    CHECK(sd / mean == Approx(1.0).margin(0.05));
    check_poisson(below_median, n / 2.0);
    // The draw is x = -mean ln(1 - u) for the generator's next uniform u (det_log, rounded to a token).
    Rng a(7), b(7);
    for (int i = 0; i < 100; ++i) {
      const double u = b.uniform();
      const double x = -1000 * det_log(1.0 - u);
      const auto expected = static_cast<std::int64_t>(x + 0.5);
      if (expected < 1) continue;  // would be redrawn; the streams part ways
      REQUIRE(draw_tokens(d, a) == expected);
    }
  }
  SECTION("exponential draws outside the bounds are redrawn") {
    Rng rng(8);
    const TokenDistribution d{TokenDistributionKind::Exponential, 300, 0, 200, 400};
    for (int i = 0; i < 2000; ++i) {
      const auto v = draw_tokens(d, rng);
      REQUIRE(v >= 200);
      REQUIRE(v <= 400);
    }
  }
  SECTION("a workload's requests stay inside both distributions' bounds") {
    WorkloadConfig w = custom({{600, 5.0}});
    w.prompt_tokens = {TokenDistributionKind::Lognormal, 2000, 1.5, 500, 3000};
    w.output_tokens = {TokenDistributionKind::Uniform, 0, 0, 8, 16};
    const auto rs = drain(w, 5, 600);
    REQUIRE(rs.size() > 1000);
    for (const auto& r : rs) {
      CHECK(r.prompt_tokens >= 500);
      CHECK(r.prompt_tokens <= 3000);
      CHECK(r.output_tokens >= 8);
      CHECK(r.output_tokens <= 16);
    }
  }
}

// ---- closed loop (workload.concurrency) ----------------------------------------------------------

namespace {

// A closed-loop scenario on one fixed replica: `clients` clients of 2000-in / 100-out requests.
Scenario closed_loop(std::int64_t clients, double duration_s, double timeout_s = 30) {
  Json doc = {{"duration_s", duration_s},
              {"autoscaler", {{"strategy", "fixed"}, {"replicas", 1}}},
              {"workload",
               {{"concurrency", clients},
                {"timeout_s", timeout_s},
                {"prompt_tokens", {{"kind", "fixed"}, {"mean", 2000}}},
                {"output_tokens", {{"kind", "fixed"}, {"mean", 100}}}}}};
  return parse_scenario(doc);
}

// When each request's client had its answer: completion or drop (-1: still outstanding at the end).
double answered_at(const RequestRecord& r) {
  if (r.completed_at) return *r.completed_at;
  if (r.dropped_at) return *r.dropped_at;
  return -1;
}

// Every request after the first `clients` is sent at the instant an earlier one was answered, one
// new request per answer, and never more than `clients` are outstanding.
void check_closed_loop(const std::vector<RequestRecord>& rs, std::int64_t clients, double end_s) {
  std::multiset<double> answers;  // answer times not yet matched to a new request
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const RequestRecord& r = rs[i];
    INFO("request " << i << " arrived at " << r.arrived_at);
    if (i < static_cast<std::size_t>(clients)) {
      CHECK(r.arrived_at == 0);  // start_spread_s 0: every client at t = 0
    } else {
      auto it = answers.find(r.arrived_at);
      REQUIRE(it != answers.end());
      answers.erase(it);
    }
    if (answered_at(r) >= 0) answers.insert(answered_at(r));
    std::int64_t outstanding = 0;
    for (std::size_t k = 0; k <= i; ++k) outstanding += answered_at(rs[k]) < 0 || answered_at(rs[k]) > r.arrived_at;
    CHECK(outstanding <= clients);
  }
  // An answer with no successor only at the run's end.
  for (double t : answers) CHECK(t >= end_s - 1e-6);
}

}  // namespace

TEST_CASE("a closed loop: each client sends its next request when its previous one completes", "[workload]") {
  const Scenario s = closed_loop(3, 120);
  const RunResult r = run_simulation(s);
  REQUIRE(r.requests.size() > 30);
  CHECK(r.summary.num_dropped == 0);
  check_closed_loop(r.requests, 3, 120);
  // Three requests are outstanding at every moment: the three unfinished at the end.
  CHECK(r.summary.num_unfinished == 3);
  // A request's id is its arrival order, and the token counts come from the workload's streams.
  for (std::size_t i = 0; i < r.requests.size(); ++i) {
    CHECK(r.requests[i].id == i);
    CHECK(r.requests[i].prompt_tokens == 2000);
  }
}

TEST_CASE("a closed loop: a dropped request frees its client at once", "[workload]") {
  // Prompts longer than the client waits for a first token: every request times out at 0.1 s and
  // its client sends the next one at that instant.
  Json doc = {{"duration_s", 10},
              {"autoscaler", {{"strategy", "fixed"}, {"replicas", 1}}},
              {"workload", {{"concurrency", 2}, {"timeout_s", 0.1}, {"prompt_tokens", {{"kind", "fixed"}, {"mean", 16000}}}}}};
  const RunResult r = run_simulation(parse_scenario(doc));
  REQUIRE(r.requests.size() >= 2 * 99);
  CHECK(r.summary.num_completed == 0);
  check_closed_loop(r.requests, 2, 10);
  for (const RequestRecord& q : r.requests) {
    if (q.dropped_at) CHECK(*q.dropped_at == Approx(q.arrived_at + 0.1).margin(1e-6));
  }
}

TEST_CASE("a closed loop's clients start over start_spread_s, from their own stream", "[workload]") {
  Scenario s = closed_loop(8, 60);
  s.workload.start_spread_s = 5;
  const RunResult a = run_simulation(s);
  std::vector<double> starts;
  for (std::size_t i = 0; i < 8; ++i) starts.push_back(a.requests[i].arrived_at);
  CHECK(std::is_sorted(starts.begin(), starts.end()));
  CHECK(starts.front() >= 0);
  CHECK(starts.back() < 5);
  CHECK(starts.back() - starts.front() > 1);  // spread, not together
  // The same seed, the same run; the token streams are the open loop's (a request's tokens do not
  // depend on which client sent it).
  const RunResult b = run_simulation(s);
  REQUIRE(a.requests.size() == b.requests.size());
  for (std::size_t i = 0; i < a.requests.size(); ++i) CHECK(a.requests[i].arrived_at == b.requests[i].arrived_at);
}

TEST_CASE("closed-loop settings are validated", "[workload]") {
  using testing::input_error;
  auto error = [](const Json& workload) { return input_error([&] { parse_scenario(Json{{"workload", workload}}); }); };
  for (const char* field : {"preset", "rate_scale", "phases"}) {
    Json w = {{"concurrency", 4}};
    w[field] = std::string(field) == "preset" ? Json("steady") : std::string(field) == "rate_scale" ? Json(2) : Json::array();
    const InputError e = error(w);
    CHECK(e.path() == std::string("/workload/") + field);
    CHECK_THAT(e.message(), Catch::Contains("open-loop arrival rate") && Catch::Contains("concurrency 4"));
  }
  CHECK(error({{"start_spread_s", 10}}).path() == "/workload/start_spread_s");
  CHECK(error({{"concurrency", -1}}).path() == "/workload/concurrency");
  CHECK(error({{"concurrency", 1.5}}).path() == "/workload/concurrency");
  CHECK(error({{"concurrency", 10001}}).path() == "/workload/concurrency");
  CHECK_NOTHROW(parse_scenario(Json{{"workload", {{"concurrency", 4}, {"start_spread_s", 10}}}}));
}

TEST_CASE("the work budget's closed-loop arrivals bound what a run sends, and not by far", "[workload]") {
  // One client: its requests come back no sooner than the batch-1 roofline says (about 2.0 s each
  // for 2000 / 100 tokens); many clients: the replica's compute and batch bound them.
  for (std::int64_t clients : {1, 4, 64, 400}) {
    const Scenario s = closed_loop(clients, 600, 3600);
    const RunResult r = run_simulation(s);
    const double expected = expected_arrivals(s), sent = static_cast<double>(r.requests.size());
    INFO(clients << " clients: " << sent << " sent, " << expected << " estimated");
    CHECK(sent <= expected + static_cast<double>(clients));  // the requests still outstanding at the end
    CHECK(expected <= 4 * sent);
    CHECK(estimate_work(s).requests == expected);
  }
}

TEST_CASE("shared prefixes: a request opens with one, its tokens counted in the prompt, from streams of their own", "[workload]") {
  WorkloadConfig w = custom({{3600, 2.0}});
  w.prompt_tokens = {TokenDistributionKind::Fixed, 300, 0, 1, 8192};
  const std::vector<Request> plain = drain(w, 7, 3600);
  w.prefixes = {3, {TokenDistributionKind::Fixed, 1500, 0, 1, 65536}, 1.0, 0};
  const std::vector<Request> with = drain(w, 7, 3600);
  REQUIRE(with.size() == plain.size());
  std::vector<int> per(4, 0);
  for (std::size_t i = 0; i < with.size(); ++i) {
    // The same arrivals and own tokens; each request opens with one of the three 1,500-token prefixes.
    CHECK(with[i].arrived_at == plain[i].arrived_at);
    CHECK(with[i].output_tokens == plain[i].output_tokens);
    REQUIRE(with[i].prefix_id >= 1);
    REQUIRE(with[i].prefix_id <= 3);
    CHECK(with[i].prefix_tokens == 1500);
    CHECK(with[i].prompt_tokens == 1800);
    ++per[with[i].prefix_id];
    CHECK(plain[i].prefix_id == 0);
  }
  // Uniform picks: each near a third of about 7,200 requests.
  for (int k = 1; k <= 3; ++k) CHECK(std::abs(per[k] - static_cast<int>(with.size()) / 3) < 300);
  // A share below 1 leaves the rest without; a Zipf skew makes prefix 1 the most asked for.
  w.prefixes.share = 0.5;
  w.prefixes.zipf_s = 1.5;
  w.prefixes.count = 10;
  std::vector<int> skew(11, 0);
  for (const Request& r : drain(w, 7, 3600)) ++skew[r.prefix_id];
  CHECK(std::abs(skew[0] - static_cast<int>(with.size()) / 2) < 300);
  // weights k^-1.5: prefix 1 holds 1 / Σ_{k≤10} k^-1.5 ≈ 0.5012 of the carriers, prefix 2 ≈ 0.1772.
  const int carriers = static_cast<int>(with.size()) - skew[0];
  CHECK(std::abs(skew[1] - 0.5012 * carriers) < 0.05 * carriers);
  CHECK(std::abs(skew[2] - 0.1772 * carriers) < 0.03 * carriers);
  CHECK(skew[1] > skew[2]);
  CHECK(skew[2] > skew[10]);
}

TEST_CASE("the shape presets set tokens and prefixes unless the scenario gives them", "[workload][scenario]") {
  const Scenario rag = parse_scenario(Json{{"workload", {{"preset", "rag_burst"}}}});
  CHECK(rag.workload.prefixes.count == 20);
  CHECK(rag.workload.prompt_tokens.mean == 1500);
  CHECK(rag.workload.output_tokens.mean == 200);
  const Scenario own = parse_scenario(Json{{"workload", {{"preset", "rag_burst"}, {"output_tokens", {{"mean", 500}}}, {"prefixes", {{"count", 4}}}}}});
  CHECK(own.workload.output_tokens.mean == 500);
  CHECK(own.workload.output_tokens.cv == 0.5);  // the rest of the preset's distribution stays
  CHECK(own.workload.prefixes.count == 4);
  CHECK(own.workload.prefixes.tokens.mean == 4000);
  const Scenario reasoning = parse_scenario(Json{{"workload", {{"preset", "reasoning"}}}});
  CHECK(reasoning.workload.output_tokens.mean == 2500);
  CHECK(reasoning.workload.prefixes.count == 0);
  CHECK(effective_phases(reasoning.workload).size() == 3);
  const Scenario chat = parse_scenario(Json{{"workload", {{"preset", "chat_system_prompt"}}}});
  CHECK(chat.workload.prefixes.count == 3);
  CHECK(chat.workload.prefixes.tokens.kind == TokenDistributionKind::Fixed);
  CHECK(testing::input_error([] { parse_scenario(Json{{"workload", {{"prefixes", {{"share", 1.5}}}}}}); }).path() == "/workload/prefixes/share");
}
