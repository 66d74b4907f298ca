// Tests of the model-level autoscalers: Dynamo's planner (core/src/autoscaling/dynamo_*.cpp), its
// profiler over the lab's engine (core/src/serving/engine_profiler.cpp) and llm-d's WVA
// (core/src/autoscaling/wva.cpp). Every expectation is worked by hand in the comment beside it.
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "autoscaling/dynamo_perf_model.hpp"
#include "autoscaling/dynamo_planner.hpp"
#include "autoscaling/dynamo_predictors.hpp"
#include "autoscaling/service_scalers.hpp"
#include "autoscaling/wva.hpp"
#include "serving/engine_profiler.hpp"
#include "serving/engine_profiles.hpp"

using namespace gpuscale;
using namespace gpuscale::dynamo;

namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A pool's pods: `ready` Ready, then `starting` Starting, `pending` Pending, `draining` Draining (ids 0…).
ScalerSnapshot pods(const std::string& prefix, std::int32_t spec, int ready, int starting = 0, int pending = 0, int draining = 0) {
  ScalerSnapshot s;
  s.pod_prefix = prefix;
  s.spec_replicas = spec;
  std::uint32_t id = 0;
  auto add = [&](int n, ReplicaView::State st) {
    for (int i = 0; i < n; ++i) {
      ReplicaView r;
      r.id = id++;
      r.state = st;
      r.started_at = st == ReplicaView::State::Pending ? -1 : 0;
      r.ready_at = st == ReplicaView::State::Ready ? 0 : -1;
      s.replicas.push_back(r);
    }
  };
  add(ready, ReplicaView::State::Ready);
  add(starting, ReplicaView::State::Starting);
  add(pending, ReplicaView::State::Pending);
  add(draining, ReplicaView::State::Draining);
  return s;
}

ForwardPassMetrics decode_fpm(std::uint32_t replica, std::int64_t n, std::int64_t kv, double wall_ms) {
  ForwardPassMetrics f;
  f.replica = replica;
  f.num_decode_requests = n;
  f.sum_decode_kv_tokens = kv;
  f.wall_time_s = wall_ms / 1000.0;
  return f;
}

// Prefill TTFT = 20 ms + 0.1 ms per token, at ISL 1000…5000 (5 points: a linear fit, the hinge needs 6).
PrefillProfile linear_prefill_profile() {
  PrefillProfile p;
  for (int isl = 1000; isl <= 5000; isl += 1000) {
    p.isl.push_back(isl);
    p.ttft_ms.push_back(20 + 0.1 * isl);
    p.thpt_per_gpu.push_back(isl / (20 + 0.1 * isl) / 2 * 1000);
  }
  return p;
}

// Decode ITL = 10 ms + 0.5 ms per request + 0.0002 ms per KV token, at (batch, context) (1, 1000),
// (2, 1500), (4, 1000), (8, 2000), (16, 1250) with max_kv_tokens 100000: KV usage = batch × context / 1e5.
DecodeProfile linear_decode_profile() {
  DecodeProfile d;
  d.max_kv_tokens = 100000;
  const int batch[] = {1, 2, 4, 8, 16};
  const int ctx[] = {1000, 1500, 1000, 2000, 1250};
  for (int i = 0; i < 5; ++i) {
    const double kv = static_cast<double>(batch[i]) * ctx[i];
    d.x_kv_usage.push_back(kv / 100000.0);
    d.y_context_length.push_back(ctx[i]);
    d.z_itl.push_back(10 + 0.5 * batch[i] + 0.0002 * kv);
    d.z_thpt_per_gpu.push_back(batch[i] / ((10 + 0.5 * batch[i] + 0.0002 * kv) / 1000));
    d.concurrency.push_back(batch[i]);
  }
  return d;
}

EngineLimits limits(std::int64_t mbt, std::int64_t seqs, std::int64_t kv, std::int64_t ctx = 131072) {
  EngineLimits l;
  l.max_num_batched_tokens = mbt;
  l.max_num_seqs = seqs;
  l.max_kv_tokens = kv;
  l.context_length = ctx;
  return l;
}

FrontendWindow window(double seconds, double requests, double isl, double osl) {
  FrontendWindow w;
  w.seconds = seconds;
  w.requests_started = requests;
  w.isl_sum = isl * requests;
  w.isl_count = requests;
  w.osl_sum = osl * requests;
  w.osl_count = requests;
  w.ttft_sum_s = 0.3 * requests;
  w.ttft_count = requests;
  w.itl_sum_s = 0.03 * requests;
  w.itl_count = requests;
  w.duration_sum_s = 5 * requests;
  w.duration_count = requests;
  return w;
}

ServicePool service_pool(const std::string& name, ServiceRole role, ScalerSnapshot snap, const EngineLimits& l, int gpus = 2) {
  ServicePool p;
  p.name = name;
  p.role = role;
  p.accelerator = "H100";
  p.gpus_per_replica = gpus;
  p.engine = l;
  p.snapshot = std::move(snap);
  return p;
}

PlannerConfig sla_disagg_config() {
  PlannerConfig c;
  c.optimization_target = OptimizationTarget::Sla;
  c.prefill_profile = linear_prefill_profile();
  c.decode_profile = linear_decode_profile();
  return c;
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Load predictors (predictors.py)
// ------------------------------------------------------------------------------------------------

TEST_CASE("constant predictor: the last value, skipping the idle zeros before the first request", "[dynamo][predictor]") {
  ConstantPredictor p;
  CHECK(p.predict_next() == 0);
  p.add_data_point(0);  // leading idle period: skipped
  p.add_data_point(std::nan(""));  // NaN counts as 0: skipped too
  CHECK(p.size() == 0);
  p.add_data_point(120);
  p.add_data_point(0);  // after traffic, a zero is data
  CHECK(p.size() == 2);
  CHECK(p.predict_next() == 0);
  p.add_data_point(300);
  CHECK(p.predict_next() == 300);
}

TEST_CASE("Kalman predictor: first step worked by hand", "[dynamo][predictor]") {
  PredictorSettings s;  // q_level 1, q_trend 0.1, r 10, min points 5
  KalmanPredictor k(s);
  k.add_data_point(10);  // sets the level: x = [10, 0], P = 1000·I
  CHECK(k.level() == 10);
  CHECK(k.trend() == 0);
  CHECK(k.predict_next() == 10);  // 1 of 5 points: the last value, the filter untouched
  k.add_data_point(12);
  // predict: x = [10, 0]; P = F·P·Fᵀ + Q = [[2000, 1000], [1000, 1000]] + diag(1, 0.1)
  // update z = 12: y = 2, S = 2001 + 10 = 2011, K = [2001, 1000] / 2011
  // x = [10 + 2·2001/2011, 2·1000/2011] = [11.990054699154649, 0.99453008453505717]
  CHECK(k.level() == Approx(10 + 4002.0 / 2011).epsilon(1e-15));
  CHECK(k.trend() == Approx(2000.0 / 2011).epsilon(1e-15));
  // P⁺ = P − K·S·Kᵀ: P00 = 2001·10/2011, P01 = 1000·10/2011, P11 = 1000.1 − 1000²/2011
  const double* P = k.covariance();
  CHECK(P[0] == Approx(20010.0 / 2011).epsilon(1e-12));
  CHECK(P[1] == Approx(10000.0 / 2011).epsilon(1e-12));
  CHECK(P[2] == Approx(10000.0 / 2011).epsilon(1e-12));
  CHECK(P[3] == Approx(1000.1 - 1e6 / 2011).epsilon(1e-12));
}

// The textbook filter (P⁺ = P − K S Kᵀ, K = P Hᵀ / S), written independently of the port's Joseph form.
struct ReferenceKalman {
  double x0, x1, p00 = 1000, p01 = 0, p11 = 1000;
  void predict() {
    x0 = x0 + x1;
    const double n00 = p00 + 2 * p01 + p11 + 1.0, n01 = p01 + p11, n11 = p11 + 0.1;
    p00 = n00;
    p01 = n01;
    p11 = n11;
  }
  void update(double z) {
    const double s = p00 + 10.0, k0 = p00 / s, k1 = p01 / s, y = z - x0;
    x0 += k0 * y;
    x1 += k1 * y;
    const double n00 = p00 - k0 * s * k0, n01 = p01 - k0 * s * k1, n11 = p11 - k1 * s * k1;
    p00 = n00;
    p01 = n01;
    p11 = n11;
  }
};

TEST_CASE("Kalman predictor: a series against the textbook filter, one forecast per interval", "[dynamo][predictor]") {
  KalmanPredictor k(PredictorSettings{});
  ReferenceKalman ref{0, 0};
  const double series[] = {100, 130, 150, 190, 210, 260, 250, 300};
  bool cached = false;
  for (std::size_t i = 0; i < 8; ++i) {
    k.add_data_point(series[i]);
    if (i == 0) {
      ref.x0 = series[0];
    } else {
      if (!cached) ref.predict();
      ref.update(series[i]);
    }
    cached = false;
    const double f = k.predict_next();
    if (i + 1 < 5) {
      CHECK(f == series[i]);  // fewer than kalman_min_points: the last value
    } else {
      ref.predict();
      cached = true;
      CHECK(f == Approx(ref.x0).epsilon(1e-10));
      CHECK(k.predict_next() == f);  // asked again in the same interval: the cached forecast
    }
  }
}

TEST_CASE("deterministic log1p/expm1 and the predictors that are not ported", "[dynamo][predictor]") {
  CHECK(det_log1p(1.0) == Approx(0.6931471805599453).epsilon(1e-15));
  CHECK(det_log1p(1e-12) == Approx(1e-12).epsilon(1e-12));
  CHECK(det_expm1(det_log1p(3.0)) == Approx(3.0).epsilon(1e-14));
  CHECK(make_load_predictor(LoadPredictorKind::Arima, {}) == nullptr);
  CHECK(make_load_predictor(LoadPredictorKind::Prophet, {}) == nullptr);
  PlannerConfig c = sla_disagg_config();
  c.load_predictor = LoadPredictorKind::Arima;
  CHECK(contains(planner_config_error(c), "load_predictor: 'arima' is not ported"));
  c.load_predictor = LoadPredictorKind::Kalman;
  CHECK(planner_config_error(c).empty());
}

// ------------------------------------------------------------------------------------------------
// The forward-pass regression (aiconfigurator-core fpm/regression.rs, samples.rs)
// ------------------------------------------------------------------------------------------------

TEST_CASE("regression: Gauss-Jordan solve and the non-negative linear fit", "[dynamo][regression]") {
  // 2a + b = 5, a + 3b = 10 → a = 1, b = 3
  const auto sol = solve_linear_system({{2, 1}, {1, 3}}, {5, 10});
  REQUIRE(sol);
  CHECK((*sol)[0] == Approx(1));
  CHECK((*sol)[1] == Approx(3));
  CHECK_FALSE(solve_linear_system({{1, 2}, {2, 4}}, {1, 2}));  // singular

  // y = 2 + 3x exactly: the all-active set fits it with zero error.
  std::vector<Observation> line;
  for (double x : {1.0, 2.0, 4.0, 7.0, 9.0}) line.push_back({{x}, 2 + 3 * x});
  const auto f = fit_linear(line, 1, 5);
  REQUIRE(f);
  CHECK(f->intercept == Approx(2).epsilon(1e-12));
  CHECK(f->coefficients[0] == Approx(3).epsilon(1e-12));
  CHECK_FALSE(fit_linear(line, 1, 6));  // fewer than min_observations

  // y = 10 − x: a negative slope is not allowed; the best face is the intercept alone, which has no
  // load signal, so the model is not ready.
  std::vector<Observation> falling;
  for (double x : {1.0, 2.0, 3.0, 4.0, 5.0}) falling.push_back({{x}, 10 - x});
  CHECK_FALSE(fit_linear(falling, 1, 5));

  // Two features: y = 10 + 0.5·n + 0.0002·kv.
  std::vector<Observation> plane;
  for (const auto& [n, kv] : std::vector<std::pair<double, double>>{{1, 1000}, {2, 3000}, {4, 4000}, {8, 16000}, {16, 20000}}) {
    plane.push_back({{n, kv}, 10 + 0.5 * n + 0.0002 * kv});
  }
  const auto g = fit_linear(plane, 2, 5);
  REQUIRE(g);
  CHECK(g->intercept == Approx(10).epsilon(1e-9));
  CHECK(g->coefficients[0] == Approx(0.5).epsilon(1e-9));
  CHECK(g->coefficients[1] == Approx(0.0002).epsilon(1e-9));
}

TEST_CASE("regression: the weighted hinge for prefill, its knot candidates", "[dynamo][regression]") {
  // x = 100…1000; y = 30 + 0.01x + 0.05·max(x − 600, 0). Candidates: the sorted x at indices
  // 1·9/5 = 1, 3, 5, 7 (200, 400, 600, 800) and 100·10^(i/9) for i = 1…8 (129.15 … 774.26).
  std::vector<Observation> obs;
  for (int x = 100; x <= 1000; x += 100) obs.push_back({{double(x)}, 30 + 0.01 * x + 0.05 * std::max(x - 600.0, 0.0)});
  const auto c = hinge_candidates(obs);
  REQUIRE(c.size() == 12);
  CHECK(c.front() == Approx(129.1549665014884).epsilon(1e-12));
  CHECK(c.back() == 800);
  CHECK(std::find(c.begin(), c.end(), 600.0) != c.end());
  const auto h = fit_regression(obs, 1, 5);  // 10 observations ≥ 6: the hinge
  REQUIRE(h);
  CHECK(h->hinge);
  CHECK(h->knot == 600);
  CHECK(h->intercept == Approx(30).epsilon(1e-9));
  CHECK(h->left_slope == Approx(0.01).epsilon(1e-9));
  CHECK(h->right_slope_delta == Approx(0.05).epsilon(1e-9));
  CHECK(h->predict({800}) == Approx(30 + 8 + 10).epsilon(1e-9));
}

TEST_CASE("regression: bucketed samples retire the oldest sample of the fullest bucket", "[dynamo][regression]") {
  PerfModelOptions o;
  o.max_observations = 4;
  o.bucket_count = 2;
  BucketedSamples s(o, 1);
  // Bounds grow to [0, 10]: bucket 0 is [0, 5), bucket 1 [5, 10]. After 0, 10, 1, 2: {0,1,2} and {10}.
  for (double x : {0.0, 10.0, 1.0, 2.0}) s.add({x}, x);
  // 9 goes to bucket 1; 5 samples > 4: bucket 0 is the fullest and loses its oldest (0).
  s.add({9.0}, 9.0);
  const auto obs = s.observations();
  REQUIRE(obs.size() == 4);
  CHECK(obs[0].first[0] == 1);
  CHECK(obs[1].first[0] == 2);
  CHECK(obs[2].first[0] == 10);
  CHECK(obs[3].first[0] == 9);
  CHECK_FALSE(s.add({std::nan("")}, 1));
}

TEST_CASE("forward-pass model: the workload kind decides the store; nothing scheduled costs 0", "[dynamo][regression]") {
  ForwardPassPerfModel m(PerfModelOptions{});
  CHECK(m.estimate_ms({0, 0, 0, 0}) == 0.0);
  CHECK_FALSE(m.estimate_ms({1, 1000, 0, 0}));  // prefill store not ready
  for (int t = 1000; t <= 5000; t += 1000) m.tune({1, t, 0, 0}, (20 + 0.1 * t) / 1000);
  m.tune({1, 1000, 0, 0}, 0.0);  // an idle heartbeat (wall time 0) is not learned
  CHECK(m.store(WorkloadKind::Prefill).observation_count() == 5);
  CHECK(m.any_ready());
  // At a profile point and between two: the fitted line.
  CHECK(*m.estimate_ms({1, 3000, 0, 0}) == Approx(320).epsilon(1e-9));
  CHECK(*m.estimate_ms({1, 2500, 0, 0}) == Approx(270).epsilon(1e-9));
  CHECK_FALSE(m.estimate_ms({0, 0, 4, 4000}));   // decode store empty
  CHECK_FALSE(m.estimate_ms({1, 100, 4, 4000}));  // mixed store empty
}

TEST_CASE("profile tables become synthetic FPMs (perf_metrics.py), rounding half to even", "[dynamo][regression]") {
  const auto p = prefill_profile_fpms(linear_prefill_profile());
  REQUIRE(p.size() == 5);
  CHECK(p[2].sum_prefill_tokens == 3000);
  CHECK(p[2].num_prefill_requests == 1);
  CHECK(p[2].wall_time_s == Approx(0.32));
  const auto d = decode_profile_fpms(linear_decode_profile());
  REQUIRE(d.size() == 5);
  CHECK(d[3].sum_decode_kv_tokens == 16000);  // round(0.16 × 100000)
  CHECK(d[3].num_decode_requests == 8);       // round(16000 / 2000)
  CHECK(d[3].wall_time_s == Approx((10 + 4 + 3.2) / 1000));
  DecodeProfile half;
  half.max_kv_tokens = 20;
  half.x_kv_usage = {0.125};        // 0.125 × 20 = 2.5 → 2 (Python's round)
  half.y_context_length = {0.8};    // 2 / 0.8 = 2.5 → 2
  half.z_itl = {5};
  const auto h = decode_profile_fpms(half);
  CHECK(h[0].sum_decode_kv_tokens == 2);
  CHECK(h[0].num_decode_requests == 2);
}

// ------------------------------------------------------------------------------------------------
// Engine capacity (engine_query.py) and the replica arithmetic (throughput_scaling.py)
// ------------------------------------------------------------------------------------------------

TEST_CASE("prefill capacity: batches of ISL against the TTFT target, chunks of max_num_batched_tokens", "[dynamo][capacity]") {
  PlannerPerfModel m(WorkerType::Prefill, PerfModelOptions{}, limits(8192, 256, 1000000));
  m.load_benchmark_fpms(prefill_profile_fpms(linear_prefill_profile()));
  // ISL 3000: max batch = min(256, 8192 / 3000) = 2. B = 1: 20 + 300 = 320 ms ≤ 500 → 3.125 req/s;
  // B = 2: 6000 tokens, 620 ms > 500 (3.23 req/s, not eligible). Best eligible: B = 1.
  const auto c = m.find_engine_capacity_rps(3000, 150, 500.0, std::nullopt);
  REQUIRE(c);
  CHECK(c->batch_size == 1);
  CHECK(c->max_batch == 2);
  CHECK(c->eligible);
  CHECK(*c->ttft_s == Approx(0.32));
  CHECK(c->rps == Approx(3.125));
  // With a 700 ms target both batches qualify and B = 2 has the higher rate: 2 / 0.62.
  const auto c2 = m.find_engine_capacity_rps(3000, 150, 700.0, std::nullopt);
  CHECK(c2->batch_size == 2);
  CHECK(c2->rps == Approx(2 / 0.62));
  // ISL 10000 > 8192: batch 1, one full chunk (20 + 819.2 ms) and the tail of 1808 (20 + 180.8 ms).
  const auto c3 = m.find_engine_capacity_rps(10000, 150, 500.0, std::nullopt);
  CHECK(c3->batch_size == 1);
  CHECK(*c3->ttft_s == Approx(1.040));
  CHECK_FALSE(c3->eligible);  // the SLA cannot be met; the rate is still returned
  CHECK(c3->rps == Approx(1 / 1.040));
}

TEST_CASE("decode capacity: the best batch at context ISL + OSL/2 within the ITL target", "[dynamo][capacity]") {
  PlannerPerfModel m(WorkerType::Decode, PerfModelOptions{}, limits(8192, 64, 100000));
  m.load_benchmark_fpms(decode_profile_fpms(linear_decode_profile()));
  // context = 3000 + 150/2 = 3075; max batch = min(64, 100000 / 3075 = 32) = 32.
  // ITL(B) = 10 + 0.5B + 0.0002·3075·B = 10 + 1.115B ms; all B ≤ 32 meet 50 ms; rps = B / (150 · ITL)
  // grows with B: B = 32, ITL 45.68 ms, 32 / (150 × 0.04568) = 4.670169… req/s.
  const auto c = m.find_engine_capacity_rps(3000, 150, std::nullopt, 50.0);
  REQUIRE(c);
  CHECK(c->context_length == 3075);
  CHECK(c->max_batch == 32);
  CHECK(c->batch_size == 32);
  CHECK(*c->itl_s == Approx(0.04568).epsilon(1e-9));
  CHECK(c->rps == Approx(4.670169293636895).epsilon(1e-9));
  // A 30 ms target: 10 + 1.115B ≤ 30 → B ≤ 17 (B = 18 gives 30.07 ms): 17 / (150 × 0.028955).
  const auto c2 = m.find_engine_capacity_rps(3000, 150, std::nullopt, 30.0);
  CHECK(c2->batch_size == 17);
  CHECK(c2->rps == Approx(3.914119610890462).epsilon(1e-9));
  // More than 128 batch sizes: 128 evenly spread ones, 1 + i·(max − 1)/127.
  const auto sizes = capacity_batch_sizes(1000);
  REQUIRE(sizes.size() == 128);
  CHECK(sizes[1] == 1 + 999 / 127);
  CHECK(sizes.back() == 1000);
}

TEST_CASE("aggregated capacity: decodes plus their share of prefill in one iteration", "[dynamo][capacity]") {
  PlannerPerfModel m(WorkerType::Aggregated, PerfModelOptions{}, limits(8192, 64, 100000));
  // Five live mixed iterations on the plane 5 + 0.05·prefill tokens + 0.0001·KV tokens (ms).
  std::vector<ForwardPassMetrics> it;
  const std::pair<int, int> pk[] = {{500, 10000}, {1000, 30000}, {2000, 20000}, {4000, 60000}, {3000, 90000}};
  for (std::uint32_t i = 0; i < 5; ++i) {
    ForwardPassMetrics f = decode_fpm(i, 10, pk[i].second, 5 + 0.05 * pk[i].first + 0.0001 * pk[i].second);
    f.num_prefill_requests = 1;
    f.sum_prefill_tokens = pk[i].first;
    it.push_back(f);
  }
  m.add_observations(it);
  REQUIRE(m.model().store(WorkloadKind::Mixed).fit());
  // ISL 1000, OSL 100: context 1050; batch cap min(64, 100000/1050, 8192 − 1) = 64. Batch B prefills
  // ceil(B·1000/100) = 10B tokens per iteration alongside B decodes of 1050B KV tokens:
  // ITL = 5 + 0.5B + 0.105B = 5 + 0.605B ms; TTFT = one chunk of 10B + 1000 tokens = 55 + 0.605B ms.
  // Both targets (500 / 50 ms) hold up to B = 64, where rps = 64 / (100 × 0.04372) = 14.6386…
  const auto c = m.find_engine_capacity_rps(1000, 100, 500.0, 50.0);
  REQUIRE(c);
  CHECK(c->batch_size == 64);
  CHECK(c->eligible);
  CHECK(*c->itl_s == Approx(0.04372).epsilon(1e-9));
  CHECK(*c->ttft_s == Approx(0.09372).epsilon(1e-9));
  CHECK(*c->e2e_s == Approx(0.09372 + 99 * 0.04372).epsilon(1e-9));
  CHECK(c->rps == Approx(64 / 4.372).epsilon(1e-9));
}

TEST_CASE("budget: proportional clamps of the GPU band (core/budget.py)", "[dynamo][budget]") {
  // 4P + 6D at 2 GPUs each = 20 > 8: scale 0.4; max_p = floor((8 − 2)/2) = 3; p = max(1, min(3, floor(1.6))) = 1;
  // 8 − 2 = 6 GPUs left: d = floor(6/2) = 3.
  CHECK(proportional_clamp_pair(4, 6, 2, 2, -1, 8, 1, 1) == std::make_pair(1, 3));
  CHECK(proportional_clamp_pair(4, 6, 2, 2, -1, 3, 1, 1) == std::make_pair(0, 0));  // even 1P + 1D = 4 > 3
  CHECK(proportional_clamp_pair(1, 1, 2, 2, -1, -1, 1, 1) == std::make_pair(1, 1));  // both bounds off
  // Floor 8, ceiling 16, tolerance max(2, 2) = 2: 4 GPUs < 8 − 2, so grow ×2: p = ceil(2) = 2, d = ceil((8 − 4)/2) = 2.
  CHECK(proportional_clamp_pair(1, 1, 2, 2, 8, 16, 1, 1) == std::make_pair(2, 2));
  CHECK(proportional_clamp_pair(3, 1, 2, 2, 8, 16, 1, 1) == std::make_pair(3, 1));  // 8 GPUs: inside the band
  CHECK(proportional_clamp_single(5, 2, -1, 8, 1) == 4);   // 10 > 8 → floor(8/2)
  CHECK(proportional_clamp_single(1, 2, 8, -1, 1) == 4);   // 2 < 8 → ceil(8/2)
  CHECK(proportional_clamp_single(1, 4, -1, 2, 1) == 0);   // the minimum does not fit
}

TEST_CASE("frontend window: averages over the interval; an idle window reads 0; an undefined one skips", "[dynamo][traffic]") {
  const auto t = traffic_observation(window(180, 1800, 3000, 150), 180);
  REQUIRE(t);
  CHECK(t->num_req == 1800);
  CHECK(t->isl == 3000);
  CHECK(t->ttft_ms == Approx(300));
  FrontendWindow idle;
  const auto i = traffic_observation(idle, 180);
  REQUIRE(i);
  CHECK(i->isl == 0);
  FrontendWindow no_completion = window(180, 10, 3000, 150);
  no_completion.osl_sum = no_completion.osl_count = 0;  // requests started, none finished yet
  std::string why;
  CHECK_FALSE(traffic_observation(no_completion, 180, &why));
  CHECK(contains(why, "OSL"));
}

// ------------------------------------------------------------------------------------------------
// The planner end to end
// ------------------------------------------------------------------------------------------------

TEST_CASE("planner, throughput-based (sla, disagg): replicas from the predicted load and the perf model", "[dynamo][planner]") {
  PlannerConfig c = sla_disagg_config();
  c.max_gpu_budget = 20;
  REQUIRE(planner_config_error(c).empty());
  DynamoPlanner planner(c);
  CHECK(planner.period() == 5 * kMicrosPerSecond);  // gcd(5 s, 180 s)
  CHECK(planner.frontend_window() == 180 * kMicrosPerSecond);
  ServiceSnapshot s;
  s.model = "llama";
  s.pools.push_back(service_pool("prefill", ServiceRole::Prefill, pods("prefill", 1, 1), limits(8192, 256, 1000000)));
  s.pools.push_back(service_pool("decode", ServiceRole::Decode, pods("decode", 1, 1), limits(8192, 64, 100000)));
  s.frontend = window(180, 1800, 3000, 150);
  // Before 180 s only the load loop is due (off here): nothing to do.
  const ServiceDecision early = planner.sync(s, 5 * kMicrosPerSecond, LogPolicy{true, false, false});
  CHECK_FALSE(early.desired[0]);
  CHECK(early.log.empty());
  // At 180 s: 1800 requests / 180 s = 10 req/s (constant predictor). Prefill: ceil(10 / 3.125) = 4;
  // decode: ceil(10 / 4.670169) = 3. 4×2 + 3×2 = 14 GPUs ≤ 20.
  const ServiceDecision d = planner.sync(s, 180 * kMicrosPerSecond, LogPolicy{});
  REQUIRE(d.desired.size() == 2);
  CHECK(d.desired[0] == 4);
  CHECK(d.desired[1] == 3);
  REQUIRE(d.log.size() == 2);
  CHECK(d.log[0].pool == "prefill");
  CHECK(d.log[0].reason == "scale");
  CHECK(d.log[0].desired_replicas == 4);
  CHECK(contains(d.log[0].explanation, "Demand 1800 / 180 s = 10 requests/s"));
  CHECK(contains(d.log[0].explanation, "takes 320.0 ms ≤ the TTFT target 500.0 ms, 3.125 requests/s per engine"));
  CHECK(contains(d.log[0].explanation, "ceil(10 / 3.125) = 4, min_endpoint 1 → 4"));
  CHECK(contains(d.log[1].explanation, "context ISL + OSL/2 = 3075 is 32"));
  CHECK(contains(d.log[1].explanation, "ceil(10 / 4.67017) = 3"));
}

TEST_CASE("planner, throughput-based: the default 8-GPU budget clamps the pair; zero demand keeps min_endpoint", "[dynamo][planner]") {
  DynamoPlanner planner(sla_disagg_config());
  ServiceSnapshot s;
  s.pools.push_back(service_pool("p", ServiceRole::Prefill, pods("p", 1, 1), limits(8192, 256, 1000000)));
  s.pools.push_back(service_pool("d", ServiceRole::Decode, pods("d", 1, 1), limits(8192, 64, 100000)));
  s.frontend = window(180, 1800, 3000, 150);
  // (4P, 3D) = 14 GPUs > 8: scale 8/14; max_p = 3; p = max(1, min(3, floor(2.29))) = 2; d = floor(4/2) = 2.
  const ServiceDecision d = planner.sync(s, 180 * kMicrosPerSecond, LogPolicy{true, true, true});
  CHECK(d.desired[0] == 2);
  CHECK(d.desired[1] == 2);
  CHECK(d.log[0].detail.at("demand_rps").get<double>() == Approx(10));
  CHECK(d.log[0].detail.at("engine_rps").get<double>() == Approx(3.125));
  CHECK(d.log[0].detail.at("throughput_replicas").get<int>() == 4);
  CHECK(d.log[1].detail.at("engine_batch_size").get<int>() == 32);
  CHECK(contains(d.log[0].explanation, "clamped (4P + 3D = 14 GPUs) → (2P + 2D = 8 GPUs)"));
  // An idle interval: 0 requests → ceil(0) = 0 → min_endpoint 1 each (ISL/OSL carried from the last
  // observed shape). Ready (2, 2) → (1, 1).
  s.pools[0].snapshot = pods("p", 2, 2);
  s.pools[1].snapshot = pods("d", 2, 2);
  s.frontend = window(180, 0, 0, 0);
  s.frontend.isl_count = s.frontend.osl_count = 0;
  const ServiceDecision idle = planner.sync(s, 360 * kMicrosPerSecond, LogPolicy{});
  CHECK(idle.desired[0] == 1);
  CHECK(idle.desired[1] == 1);
}

TEST_CASE("planner: without profile data the perf model waits for live FPMs", "[dynamo][planner]") {
  PlannerConfig c;
  c.optimization_target = OptimizationTarget::Sla;
  c.mode = PlannerMode::Decode;
  DynamoPlanner planner(c);
  ServiceSnapshot s;
  s.pools.push_back(service_pool("d", ServiceRole::Decode, pods("d", 1, 1), limits(8192, 64, 100000)));
  s.frontend = window(180, 1800, 3000, 150);
  ServiceDecision d = planner.sync(s, 180 * kMicrosPerSecond, LogPolicy{});
  CHECK_FALSE(d.desired[0]);
  REQUIRE(d.log.size() == 1);
  CHECK(d.log[0].reason == "model_not_ready");
  // Five live iterations on the plane 10 + 0.5n + 0.0002kv (one every 5 s load tick) make it ready.
  const std::pair<int, int> it[] = {{1, 1000}, {2, 3000}, {4, 4000}, {8, 16000}, {16, 20000}};
  for (int k = 0; k < 5; ++k) {
    s.pools[0].fpm = {decode_fpm(0, it[k].first, it[k].second, 10 + 0.5 * it[k].first + 0.0002 * it[k].second)};
    planner.sync(s, (185 + 5 * k) * kMicrosPerSecond, LogPolicy{});
  }
  CHECK(planner.decode_model()->has_sufficient_data());
  d = planner.sync(s, 360 * kMicrosPerSecond, LogPolicy{});
  CHECK(d.desired[0] == 3);  // ceil(10 / 4.670169)
}

TEST_CASE("planner, load-based (sla): ITL estimates per engine, +1 above target, consolidation-checked −1", "[dynamo][planner]") {
  PlannerConfig c;
  c.optimization_target = OptimizationTarget::Sla;
  c.mode = PlannerMode::Decode;
  c.enable_throughput_scaling = false;
  c.enable_load_scaling = true;
  c.decode_profile = linear_decode_profile();
  c.itl_ms = 30;
  REQUIRE(planner_config_error(c).empty());
  DynamoPlanner planner(c);
  CHECK(planner.period() == 5 * kMicrosPerSecond);
  ServiceSnapshot s;
  s.pools.push_back(service_pool("d", ServiceRole::Decode, pods("d", 2, 2), limits(8192, 64, 100000)));
  // Each engine: 30 requests, 60000 KV tokens, wall 10 + 15 + 12 = 37 ms (on the plane, so the refit
  // stays exact). Average decode length: (1000 + 1500 + 1000 + 2000 + 1250 + 2000 + 2000) / 7 = 1535.71.
  // Estimate: 31 requests, ceil(60000 + 1535.71) = 61536 KV → 10 + 15.5 + 12.3072 = 37.8072 ms > 30 on
  // both engines → 3.
  s.pools[0].fpm = {decode_fpm(0, 30, 60000, 37), decode_fpm(1, 30, 60000, 37)};
  ServiceDecision d = planner.sync(s, 5 * kMicrosPerSecond, LogPolicy{});
  CHECK(d.desired[0] == 3);
  REQUIRE(d.log.size() == 1);
  CHECK(d.log[0].reason == "scale_up");
  CHECK(contains(d.log[0].explanation, "ITL 37.8 ms"));

  // Light load: 2 requests, 2000 KV, wall 11.4 ms; the averages now include 2000, 2000, 1000, 1000.
  // Scale-down check with the load × 2/1: ITL stays well under 30 × 0.8 → 1.
  DynamoPlanner light(c);
  s.pools[0].fpm = {decode_fpm(0, 2, 2000, 11.4), decode_fpm(1, 2, 2000, 11.4)};
  d = light.sync(s, 5 * kMicrosPerSecond, LogPolicy{});
  CHECK(d.desired[0] == 1);
  CHECK(d.log[0].reason == "scale_down");

  // Heavy KV and a 50 ms target: no engine is above it (ITL about 25 ms), but after consolidation each
  // survivor would hold 50000 × 2/1 = 100000 ≥ max_kv_tokens 100000 KV tokens: the scale-down is refused.
  c.itl_ms = 50;
  DynamoPlanner roomy(c);
  s.pools[0].fpm = {decode_fpm(0, 2, 50000, 10 + 1 + 10), decode_fpm(1, 2, 50000, 10 + 1 + 10)};
  d = roomy.sync(s, 5 * kMicrosPerSecond, LogPolicy{true, false, false});
  CHECK_FALSE(d.desired[0]);
  CHECK(d.log.empty());  // no change, and the run logs only changes
  d = roomy.sync(s, 10 * kMicrosPerSecond, LogPolicy{true, true, false});
  REQUIRE(d.log.size() == 1);
  CHECK(d.log[0].reason == "scale_down_refused_consolidation");
  CHECK(contains(d.log[0].explanation, "its KV × 2.000 = 100000 ≥ 100000 KV tokens"));

  // A replica still starting: scaling in progress, observe only.
  s.pools[0].snapshot = pods("d", 3, 2, 1);
  d = roomy.sync(s, 15 * kMicrosPerSecond, LogPolicy{true, true, false});
  CHECK_FALSE(d.desired[0]);
  CHECK(d.log[0].reason == "scaling_in_progress");
}

TEST_CASE("planner, load-based (sla, prefill): the queue's TTFT per engine and the consolidation budget", "[dynamo][planner]") {
  PlannerConfig c;
  c.optimization_target = OptimizationTarget::Sla;
  c.mode = PlannerMode::Prefill;
  c.enable_throughput_scaling = false;
  c.enable_load_scaling = true;
  c.prefill_profile = linear_prefill_profile();
  DynamoPlanner planner(c);
  ServiceSnapshot s;
  s.pools.push_back(service_pool("p", ServiceRole::Prefill, pods("p", 2, 2), limits(8192, 256, 1000000)));
  // Each engine ran a 2000-token chunk (220 ms, on the line) and has 3000 tokens queued. Average ISL:
  // (1000 + … + 5000 + 2000 + 2000) / 7 = 2714.29. Next request's TTFT: ceil(3000 + 2714.29) = 5715
  // tokens in one chunk → 20 + 571.5 = 591.5 ms > 500 on both → 3.
  auto busy = [](std::uint32_t id, std::int64_t queued) {
    ForwardPassMetrics f;
    f.replica = id;
    f.num_prefill_requests = 1;
    f.sum_prefill_tokens = 2000;
    f.wall_time_s = 0.220;
    f.queued_prefill_requests = queued > 0 ? 1 : 0;
    f.queued_prefill_tokens = queued;
    return f;
  };
  s.pools[0].fpm = {busy(0, 3000), busy(1, 3000)};
  ServiceDecision d = planner.sync(s, 5 * kMicrosPerSecond, LogPolicy{});
  CHECK(d.desired[0] == 3);
  CHECK(contains(d.log[0].explanation, "engine 0: TTFT 591.5 ms (queued 3000 tokens + the next request's 2714.3)"));
  // Empty queues: TTFT = ceil(2714.29) = 2715 tokens → 291.5 ms; the queue's share after consolidation
  // (× 2/1 of nothing) is 0 < (500 − 291.5) × 0.8 = 166.8 → 1.
  DynamoPlanner idle(c);
  s.pools[0].fpm = {busy(0, 0), busy(1, 0)};
  d = idle.sync(s, 5 * kMicrosPerSecond, LogPolicy{});
  CHECK(d.desired[0] == 1);
  CHECK(d.log[0].reason == "scale_down");
}

TEST_CASE("planner, static thresholds (throughput target, upstream's default): KV utilisation of decode engines", "[dynamo][planner]") {
  PlannerConfig c;  // optimization_target throughput: load-based only, no profile needed
  c.mode = PlannerMode::Decode;
  const PlannerConfig eff = effective_planner_config(c);
  CHECK(eff.enable_load_scaling);
  CHECK_FALSE(eff.enable_throughput_scaling);
  DynamoPlanner planner(c);
  ServiceSnapshot s;
  s.pools.push_back(service_pool("d", ServiceRole::Decode, pods("d", 2, 2), limits(8192, 64, 100000)));
  // (scheduled + queued KV) / 100000: 0.65 and 0.50 → none > 1.0, not all < 0.6 → no change.
  auto f0 = decode_fpm(0, 10, 60000, 30);
  f0.queued_decode_kv_tokens = 5000;
  s.pools[0].fpm = {f0, decode_fpm(1, 10, 50000, 30)};
  CHECK_FALSE(planner.sync(s, 5 * kMicrosPerSecond, LogPolicy{}).desired[0]);
  // 0.50 and 0.55 → all < 0.6 → 2 − 1 = 1.
  s.pools[0].fpm = {decode_fpm(0, 10, 55000, 30), decode_fpm(1, 10, 50000, 30)};
  ServiceDecision d = planner.sync(s, 10 * kMicrosPerSecond, LogPolicy{});
  CHECK(d.desired[0] == 1);
  CHECK(contains(d.log[0].explanation, "= [0.55, 0.5]"));
  // 1.01 on one engine → 3.
  s.pools[0].fpm = {decode_fpm(0, 10, 101000, 30), decode_fpm(1, 10, 50000, 30)};
  CHECK(planner.sync(s, 15 * kMicrosPerSecond, LogPolicy{}).desired[0] == 3);
  // FPMs from 1 engine while 2 are ready: skipped (worker_count_mismatch).
  s.pools[0].fpm = {decode_fpm(0, 10, 101000, 30)};
  d = planner.sync(s, 20 * kMicrosPerSecond, LogPolicy{true, true, false});
  CHECK_FALSE(d.desired[0]);
  CHECK(d.log[0].reason == "worker_count_mismatch");
}

TEST_CASE("planner config: upstream's validation", "[dynamo][config]") {
  PlannerConfig c = sla_disagg_config();
  c.fpm_sample_bucket_size = 15;
  CHECK(contains(planner_config_error(c), "fpm_sample_bucket_size: must be a perfect square"));
  c = sla_disagg_config();
  c.enable_load_scaling = true;
  c.load_adjustment_interval_s = 180;
  CHECK(contains(planner_config_error(c), "must be shorter than throughput_adjustment_interval_seconds"));
  c = sla_disagg_config();
  c.enable_throughput_scaling = false;
  CHECK(contains(planner_config_error(c), "at least one scaling mode"));
  c = PlannerConfig{};
  c.optimization_target = OptimizationTarget::Load;
  CHECK(contains(planner_config_error(c), "prefill_scale_up_queue_tokens"));
  c = PlannerConfig{};
  c.mode = PlannerMode::Agg;
  c.decode_min_endpoint = 2;
  CHECK(contains(planner_config_error(c), "not supported when mode is agg"));
  CHECK(resolve_min_endpoint(sla_disagg_config(), true) == 1);
  const ServiceScalerConfig cfg = sla_disagg_config();
  CHECK(service_scaler_config_error(cfg).empty());
  CHECK(std::string(make_service_scaler(cfg)->name()) == "dynamo-planner");
}

// ------------------------------------------------------------------------------------------------
// The profiler over the lab's engine
// ------------------------------------------------------------------------------------------------

TEST_CASE("profiler: deterministic, physically sensible tables over the lab's engine", "[dynamo][profiler]") {
  EngineConfig e;
  e.profile = engine_profile(engine_profile_names().front());
  ProfilerConfig pc;
  pc.max_context_length = 32768;  // a shorter sweep than the model's 131072, same grid rules
  const PrefillProfile p = profile_prefill(e, pc);
  // ISL 100 … < 32256 in steps of (32256 − 100) / 16 = 2009: 17 points.
  REQUIRE(p.isl.size() == 17);
  CHECK(p.isl[1] == 2109);
  for (std::size_t i = 1; i < p.isl.size(); ++i) CHECK(p.ttft_ms[i] > p.ttft_ms[i - 1]);  // TTFT rises with ISL
  CHECK(p.thpt_per_gpu[0] == Approx(p.isl[0] / p.ttft_ms[0] / 2 * 1000));
  const PrefillProfile again = profile_prefill(e, pc);
  CHECK(again.ttft_ms == p.ttft_ms);

  const DecodeProfile d = profile_decode(e, pc);
  CHECK(d.max_kv_tokens == Engine::compute_num_kv_blocks(e) * 16);
  REQUIRE(!d.z_itl.empty());
  // The first ISL (100): concurrencies from decode_num_request_range; throughput per GPU rises with
  // the batch while ITL grows.
  std::size_t first_row = 0;
  while (first_row < d.y_context_length.size() && d.y_context_length[first_row] == 350) ++first_row;
  REQUIRE(first_row == 6);
  for (std::size_t i = 1; i < first_row; ++i) {
    CHECK(d.z_itl[i] > d.z_itl[i - 1]);
    CHECK(d.z_thpt_per_gpu[i] > d.z_thpt_per_gpu[i - 1]);
    CHECK(d.x_kv_usage[i] == Approx(350.0 * d.concurrency[i] / d.max_kv_tokens));
  }
  CHECK(profile_decode(e, pc).z_itl == d.z_itl);
  // get_num_request_range: fewer than the granularity → 1…N; else 6 spread values.
  CHECK(decode_num_request_range(4, 6) == std::vector<int>{1, 2, 3, 4});
  CHECK(decode_num_request_range(784, 6) == std::vector<int>{1, 157, 314, 470, 627, 784});
}

// ------------------------------------------------------------------------------------------------
// WVA (llm-d workload-variant-autoscaler, internal/saturation/analyzer.go)
// ------------------------------------------------------------------------------------------------

namespace {

wva::ReplicaMetrics rm(const std::string& pod, const std::string& variant, double kv, std::int64_t q, double cost = 10) {
  wva::ReplicaMetrics m;
  m.pod = pod;
  m.variant = variant;
  m.accelerator = "H100";
  m.kv_cache_usage = kv;
  m.queue_length = q;
  m.cost = cost;
  return m;
}

}  // namespace

TEST_CASE("WVA: saturation, spare capacity and the scale-down simulation (saturation-analyzer.md example)", "[wva]") {
  wva::WvaConfig c;
  // v1 (A100, cost 20): KV 0.70/0.75, queue 2/3; v2 (H100, cost 15): 0.60/0.65/0.55, queue 1/2/1.
  const auto a = wva::analyze_model_saturation({rm("v1-1", "variant-1", 0.70, 2, 20), rm("v1-2", "variant-1", 0.75, 3, 20),
                                                rm("v2-1", "variant-2", 0.60, 1, 15), rm("v2-2", "variant-2", 0.65, 2, 15),
                                                rm("v2-3", "variant-2", 0.55, 1, 15)},
                                               c);
  CHECK(a.total_replicas == 5);
  CHECK(a.non_saturated == 5);
  REQUIRE(a.variants.size() == 2);
  CHECK(a.variants[0].avg_spare_kv == Approx(0.075));      // (0.10 + 0.05) / 2
  CHECK(a.variants[0].avg_spare_queue == Approx(2.5));     // (3 + 2) / 2
  CHECK(a.variants[1].avg_spare_queue == Approx(11.0 / 3)); // (4 + 3 + 4) / 3
  CHECK(a.avg_spare_kv == Approx(0.15));                   // (0.075·2 + 0.2·3) / 5
  CHECK(a.avg_spare_queue == Approx(3.2));                 // (2.5·2 + 11) / 5
  CHECK_FALSE(a.should_scale_up);                          // 0.15 ≥ 0.10 and 3.2 ≥ 3
  // Scale-down: KV load 0.65 × 5/4 = 0.8125 → spare −0.0125 < 0.10: unsafe.
  CHECK(a.remaining_spare_kv == Approx(-0.0125));
  CHECK_FALSE(a.scale_down_safe);
}

TEST_CASE("WVA: the scale-up triggers, strict '<' as the code has it", "[wva]") {
  wva::WvaConfig c;
  // Spare KV (0.15 + 0.05) / 2 = 0.10000000000000003 in doubles: not < 0.10. (The config doc's example
  // calls 0.10 a trigger; the code compares strictly.)
  auto a = wva::analyze_model_saturation({rm("a", "v", 0.65, 0), rm("b", "v", 0.75, 0)}, c);
  CHECK_FALSE(a.should_scale_up);
  a = wva::analyze_model_saturation({rm("a", "v", 0.65, 0), rm("b", "v", 0.76, 0)}, c);  // (0.15 + 0.04) / 2 = 0.095
  CHECK(a.should_scale_up);
  CHECK(a.scale_up_reason == "KV spare Saturation low (0.095 < 0.100)");
  a = wva::analyze_model_saturation({rm("a", "v", 0.1, 3), rm("b", "v", 0.1, 2)}, c);  // spare queue (2 + 3) / 2
  CHECK(a.scale_up_reason == "queue spare Saturation low (2.5 < 3.0)");
  // Saturated replicas (KV ≥ 0.80 or queue ≥ 5) leave the average; all saturated: spares 0.
  a = wva::analyze_model_saturation({rm("a", "v", 0.80, 0), rm("b", "v", 0.1, 5)}, c);
  CHECK(a.non_saturated == 0);
  CHECK(a.variants[0].saturated == std::vector<std::string>{"a", "b"});
  CHECK(a.scale_up_reason == "both KV spare (0.000 < 0.100) and queue spare (0.0 < 3.0)");
  // One saturated, one not: spare 0.3, no scale-up; scale-down needs 2 non-saturated.
  a = wva::analyze_model_saturation({rm("a", "v", 0.85, 0), rm("b", "v", 0.5, 0)}, c);
  CHECK(a.non_saturated == 1);
  CHECK_FALSE(a.should_scale_up);
  CHECK_FALSE(a.scale_down_safe);
  // Three at KV 0.2, empty queues: load 0.2 × 3/2 = 0.3 → spare 0.5 ≥ 0.1, queue spare 5 ≥ 3: safe.
  a = wva::analyze_model_saturation({rm("a", "v", 0.2, 0), rm("b", "v", 0.2, 0), rm("c", "v", 0.2, 0)}, c);
  CHECK(a.scale_down_safe);
  CHECK(a.remaining_spare_kv == Approx(0.5));
}

TEST_CASE("WVA: variant choice — cheapest +1, most expensive −1, ties by name, pending skipped, floor 1", "[wva]") {
  wva::WvaConfig c;
  auto up = wva::analyze_model_saturation({rm("l4-0", "a-l4", 0.79, 0, 5), rm("a100-0", "b-a100", 0.79, 0, 20)}, c);
  REQUIRE(up.should_scale_up);
  std::vector<wva::VariantState> st = {{"a-l4", 1, 0, 0}, {"b-a100", 1, 0, 0}};
  auto t = wva::calculate_saturation_targets(up, st);
  CHECK(t["a-l4"] == 2);
  CHECK(t["b-a100"] == 1);
  // The cheapest has a pending replica (still reporting metrics, not ready): the next cheapest grows.
  st = {{"a-l4", 1, 0, 1}, {"b-a100", 1, 0, 0}};
  t = wva::calculate_saturation_targets(up, st);
  CHECK(t["a-l4"] == 1);
  CHECK(t["b-a100"] == 2);
  // Equal costs: up → the alphabetically first; down → the alphabetically last.
  auto tie = wva::analyze_model_saturation({rm("x", "alpha", 0.79, 0), rm("y", "beta", 0.79, 0)}, c);
  t = wva::calculate_saturation_targets(tie, {{"alpha", 1, 0, 0}, {"beta", 1, 0, 0}});
  CHECK(t["alpha"] == 2);
  auto down = wva::analyze_model_saturation({rm("x0", "alpha", 0.1, 0), rm("x1", "alpha", 0.1, 0), rm("y0", "beta", 0.1, 0),
                                             rm("y1", "beta", 0.1, 0)},
                                            c);
  REQUIRE(down.scale_down_safe);
  std::string why;
  t = wva::calculate_saturation_targets(down, {{"alpha", 2, 0, 0}, {"beta", 2, 0, 0}}, &why);
  CHECK(t["alpha"] == 2);
  CHECK(t["beta"] == 1);
  CHECK(contains(why, "most expensive variant above 1 replica is beta (cost 10): ready 2 − 1 = 1"));
  // A variant at 1 is never scaled down: the other one goes instead.
  auto mixed = wva::analyze_model_saturation({rm("x0", "alpha", 0.1, 0), rm("x1", "alpha", 0.1, 0), rm("y0", "beta", 0.1, 0, 50)}, c);
  t = wva::calculate_saturation_targets(mixed, {{"alpha", 2, 0, 0}, {"beta", 1, 0, 0}});
  CHECK(t["beta"] == 1);
  CHECK(t["alpha"] == 1);
  // A model in transition (desired ≠ current, or metrics ≠ current) does not scale.
  t = wva::calculate_saturation_targets(up, {{"a-l4", 1, 3, 0}, {"b-a100", 1, 0, 0}}, &why);
  CHECK(t["a-l4"] == 3);
  CHECK(t["b-a100"] == 1);
  CHECK(contains(why, "a-l4: desired(3)!=current(1)"));
  t = wva::calculate_saturation_targets(up, {{"a-l4", 2, 0, 1}, {"b-a100", 1, 0, 0}}, &why);
  CHECK(t["a-l4"] == 2);
  CHECK(contains(why, "a-l4: metrics(1)!=current(2)"));
  // Scale-to-zero off: a total of 0 keeps one replica on the cheapest variant.
  std::map<std::string, int> zero = {{"alpha", 0}, {"beta", 0}};
  CHECK(wva::ensure_minimum_replicas(zero, {}));
  CHECK(zero["alpha"] == 1);
}

TEST_CASE("WVA scaler: metrics per pod, published wva_desired_replicas for the HPA, the variant's status", "[wva]") {
  wva::WvaConfig c;
  wva::WvaScaler w(c);
  CHECK(w.period() == 30 * kMicrosPerSecond);
  ServiceSnapshot s;
  s.model = "llama";
  ServicePool cheap = service_pool("l4", ServiceRole::Aggregated, pods("l4", 2, 2), EngineLimits{});
  cheap.accelerator = "L4";
  cheap.variant_cost = 5;
  // Two ready pods at KV 0.75/0.76 (peak of the last minute), and the series of a pod deleted since.
  cheap.kv_max_1m = {{0, 0.75}, {1, 0.76}, {7, 0.99}};
  cheap.queue_max_1m = {{0, 1.9}};  // int(1.9) = 1; pod 1 has no queue series: 0
  ServicePool dear = service_pool("h100", ServiceRole::Aggregated, pods("h100", 1, 1), EngineLimits{});
  dear.variant_cost = 20;
  dear.kv_max_1m = {{0, 0.70}};
  s.pools = {cheap, dear};
  // Non-saturated: 0.75, 0.76, 0.70 → spare KV (0.05 + 0.04 + 0.10) / 3 = 0.0633 < 0.10 → scale up the
  // cheapest variant (l4, cost 5): 2 + 1 = 3.
  ServiceDecision d = w.sync(s, 30 * kMicrosPerSecond, LogPolicy{true, true, true});
  CHECK_FALSE(d.desired[0]);  // WVA publishes; the HPA scales
  REQUIRE(d.published[0].size() == 3);
  CHECK(d.published[0][0] == std::make_pair(std::string("wva_desired_replicas"), 3.0));
  CHECK(d.published[0][1] == std::make_pair(std::string("wva_current_replicas"), 2.0));
  CHECK(d.published[0][2] == std::make_pair(std::string("wva_desired_ratio"), 1.5));
  CHECK(d.published[1][0].second == 1.0);
  CHECK(w.status().at("l4").num_replicas == 3);
  REQUIRE(d.log.size() == 2);
  CHECK(d.log[0].reason == "saturation-only mode: scale-up");
  CHECK(d.log[0].detail.at("avg_spare_kv").get<double>() == Approx(0.19 / 3));
  CHECK(d.log[0].detail.at("target").get<int>() == 3);
  CHECK(contains(d.log[0].explanation, "average spare KV 0.0633 < kvSpareTrigger 0.1"));
  CHECK(contains(d.log[0].explanation, "l4-1 KV 0.760 queue 0"));
  CHECK(contains(d.log[0].explanation, "1 series of pods no longer in the API dropped"));
  CHECK(contains(d.log[0].explanation, "Published wva_desired_replicas 3"));
  // Next sync: the HPA set 3, one pod is starting: desired 3 ≠ current... the metrics count (2) ≠
  // current (3): the model is in transition; the desired 3 is kept and published again.
  s.pools[0].snapshot = pods("l4", 3, 2, 1);
  d = w.sync(s, 60 * kMicrosPerSecond, LogPolicy{true, false, false});
  CHECK(d.published[0][0].second == 3.0);
  CHECK(d.published[0][1].second == 3.0);
  CHECK(d.log.empty());  // nothing changed against the current count (every_sync off)
  // No metrics at all: no analysis; each variant republishes its last desired.
  s.pools[0].kv_max_1m.clear();
  s.pools[0].queue_max_1m.clear();
  s.pools[1].kv_max_1m.clear();
  d = w.sync(s, 90 * kMicrosPerSecond, LogPolicy{});
  CHECK(d.published[0][0].second == 3.0);
  CHECK(d.published[1][0].second == 1.0);
  // A variant never decided and without an accelerator label publishes nothing.
  wva::WvaScaler fresh(c);
  s.pools[1].accelerator = "";
  d = fresh.sync(s, 30 * kMicrosPerSecond, LogPolicy{});
  CHECK(d.published[1].empty());
}

TEST_CASE("WVA: the HPA that reads wva_desired_replicas, and config validation", "[wva]") {
  wva::WvaConfig c;
  c.hpas.push_back({"l4", 2, 6});
  const hpa::HorizontalPodAutoscalerSpec h = wva::wva_hpa_spec(c, "l4");
  CHECK(h.min_replicas == 2);
  CHECK(h.max_replicas == 6);
  REQUIRE(h.metrics.size() == 1);
  CHECK(h.metrics[0].type == hpa::MetricSourceType::External);
  CHECK(h.metrics[0].metric.name == "wva_desired_replicas");
  CHECK(h.metrics[0].metric.selector->match_labels.at("variant_name") == "l4");
  CHECK(h.metrics[0].target.type == hpa::MetricTargetType::AverageValue);
  CHECK(*h.metrics[0].target.average_value_milli == 1000);
  CHECK(h.behavior->scale_up->policies->at(0).value == 10);
  CHECK(*h.behavior->scale_down->stabilization_window_seconds == 0);
  CHECK(wva::wva_hpa_spec(c, "other").max_replicas == 10);
  c.kv_spare_trigger = 0.9;
  CHECK(contains(wva::wva_config_error(c), "kvCacheThreshold: should be >= kvSpareTrigger"));
  const ServiceScalerConfig cfg = wva::WvaConfig{};
  CHECK(std::string(make_service_scaler(cfg)->name()) == "wva");
}

TEST_CASE("pool counts: a Deployment's status as the controllers read it", "[service]") {
  const PoolCounts c = pool_counts(pods("p", 5, 2, 1, 1, 1));
  CHECK(c.spec == 5);
  CHECK(c.existing == 4);
  CHECK(c.ready == 2);
  CHECK(c.terminating == 1);
  CHECK(std::string(service_role_name(ServiceRole::Prefill)) == "prefill");
}

TEST_CASE("planner on the profiler's tables of the lab's engine: a deterministic, sensible decision", "[dynamo][planner][profiler]") {
  EngineConfig e;
  e.profile = engine_profile(engine_profile_names().front());
  ProfilerConfig pc;
  pc.max_context_length = 32768;
  PlannerConfig c;
  c.optimization_target = OptimizationTarget::Sla;
  c.max_gpu_budget = 64;
  c.prefill_profile = profile_prefill(e, pc);
  c.decode_profile = profile_decode(e, pc);
  const EngineLimits l = limits(e.max_num_batched_tokens, e.max_num_seqs, Engine::compute_num_kv_blocks(e) * e.block_size, 131072);
  auto run = [&]() {
    DynamoPlanner planner(c);
    ServiceSnapshot s;
    s.pools.push_back(service_pool("p", ServiceRole::Prefill, pods("p", 1, 1), l));
    s.pools.push_back(service_pool("d", ServiceRole::Decode, pods("d", 1, 1), l));
    s.frontend = window(180, 1800, 3000, 150);  // 10 req/s of ISL 3000, OSL 150
    return planner.sync(s, 180 * kMicrosPerSecond, LogPolicy{});
  };
  const ServiceDecision a = run(), b = run();
  REQUIRE(a.desired[0]);
  REQUIRE(a.desired[1]);
  // Prefill: 17 profile points → the weighted hinge; about 250 ms per 3000-token prompt, so a few
  // engines for 10 req/s. Decode: ITL ≤ 50 ms allows a large batch; one engine or two.
  CHECK(contains(a.log[0].explanation, "hinge fit"));
  CHECK(*a.desired[0] >= 2);
  CHECK(*a.desired[0] <= 6);
  CHECK(*a.desired[1] >= 1);
  CHECK(*a.desired[1] <= 2);
  CHECK(a.desired == b.desired);
  REQUIRE(a.log.size() == b.log.size());
  for (std::size_t i = 0; i < a.log.size(); ++i) CHECK(a.log[i].explanation == b.log[i].explanation);
}
