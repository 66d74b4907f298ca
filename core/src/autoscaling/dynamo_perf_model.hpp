// Dynamo planner's performance model: a forward-pass time model learned from ForwardPassMetrics
// (pre-deployment profile points, then live iterations), and the engine-level queries the planner
// asks of it (sustainable requests per second under a TTFT/ITL target, the next request's TTFT
// behind the queue, the next decode step's ITL).
//
// Ported as of Aug 2026 from:
//  - ai-dynamo/aiconfigurator aic-core/rust/aiconfigurator-core/src/fpm/{model.rs, regression.rs,
//    samples.rs, options.rs}: ForwardPassPerfModel in Regression mode (`from_regression`, also what
//    `best_available` falls back to when AIC cannot model the engine natively). The lab's engine has
//    no AIC perf database, so the native estimator and its correction grid are not ported.
//  - ai-dynamo/dynamo components/src/dynamo/planner/core/perf_model/engine_query.py (capacity
//    searches, queued-prefill drain, scheduled-decode ITL) and aic_adapter.py (PlannerEnginePerfModel:
//    next-request synthesis, moving averages), monitoring/perf_metrics.py (profile tables → FPMs).
// Since dynamo PR #7961 (2026-04-08) the planner no longer interpolates the profile tables (scipy
// interp1d / griddata) nor applies TTFT/ITL correction factors: the profile points become synthetic
// FPMs that train this regression, live FPMs keep training it, and capacity comes from searching
// batch sizes against its predictions.
//
// Deterministic where upstream is not: Rust's HashMap iteration order decides the order in which
// upstream sums the observations (last bits of the fit) and which of equally full buckets loses a
// sample; here buckets are kept in key order and the last fattest bucket in that order loses one.
// ln/exp of the hinge knots use det_log/det_exp (Rust's libm may differ in the last bit).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autoscaling/service_scaler.hpp"
#include "serving/engine_profiler.hpp"

namespace gpuscale::dynamo {

// ForwardPassPerfOptions as the planner fills them (aic_adapter.py _build_options).
struct PerfModelOptions {
  int max_observations = 64;  // max_num_fpm_samples
  int min_observations = 5;   // load_min_observations
  int bucket_count = 16;      // fpm_sample_bucket_size (a perfect square)
};

using Observation = std::pair<std::vector<double>, double>;  // (features, observed ms)

// samples.rs BucketedSamples with dynamic bounds: each axis split into equal-width buckets between the
// smallest and largest value seen (bucket_count for one axis, √bucket_count per axis for two); past
// max_observations the oldest sample of the fullest bucket is retired.
class BucketedSamples {
 public:
  BucketedSamples(const PerfModelOptions& options, int ndim);
  bool add(const std::vector<double>& x, double y);  // false: wrong size or not finite
  std::vector<Observation> observations() const;     // bucket by bucket in key order, oldest first
  std::size_t total() const { return total_; }

 private:
  std::vector<std::size_t> key(const std::vector<double>& x) const;
  std::map<std::vector<std::size_t>, std::vector<Observation>> buckets_;
  std::size_t total_ = 0;
  std::vector<double> min_, max_;
  std::size_t buckets_per_axis_ = 1;
  std::size_t max_observations_ = 64;
};

// regression.rs RegressionFit: a non-negative linear fit (intercept free, slopes ≥ 0) or, for the
// one-dimensional prefill store, a weighted hinge intercept + left·x + delta·max(x − knot, 0).
struct RegressionFit {
  bool hinge = false;
  double intercept = 0;
  std::vector<double> coefficients;  // linear: one slope per feature
  double left_slope = 0, right_slope_delta = 0, knot = 0;  // hinge
  double predict(const std::vector<double>& x) const;  // ms
  std::string describe(const char* const* feature_names) const;
};

// regression.rs, exposed for tests.
std::optional<std::vector<double>> solve_linear_system(std::vector<std::vector<double>> lhs, std::vector<double> rhs);
std::optional<RegressionFit> fit_linear(const std::vector<Observation>& obs, int ndim, int min_observations);
std::vector<double> hinge_candidates(const std::vector<Observation>& obs);
std::optional<RegressionFit> fit_weighted_hinge(const std::vector<Observation>& obs);
std::optional<RegressionFit> fit_regression(const std::vector<Observation>& obs, int ndim, int min_observations);

class BucketedRegression {
 public:
  BucketedRegression(const PerfModelOptions& options, int ndim);
  void add_observation(const std::vector<double>& x, double y_ms);  // refits after every accepted sample
  std::optional<double> predict(const std::vector<double>& x) const;  // ms, at least 1e-6; nullopt: no fit
  const std::optional<RegressionFit>& fit() const { return fit_; }
  std::size_t observation_count() const { return samples_.total(); }
  std::vector<Observation> observations() const { return samples_.observations(); }

 private:
  BucketedSamples samples_;
  int ndim_;
  int min_observations_;
  std::optional<RegressionFit> fit_;
};

// What one engine iteration schedules (ScheduledRequestMetrics) — the estimator's input.
struct ScheduledWork {
  std::int64_t num_prefill_requests = 0;
  std::int64_t sum_prefill_tokens = 0;
  std::int64_t num_decode_requests = 0;
  std::int64_t sum_decode_kv_tokens = 0;
};

// model.rs WorkloadKind: prefill [sum_prefill_tokens]; decode [num_decode_requests, sum_decode_kv_tokens];
// mixed [sum_prefill_tokens, sum_decode_kv_tokens]; nothing scheduled: estimated 0, never learned.
enum class WorkloadKind { Prefill, Decode, Mixed };
const char* workload_kind_name(WorkloadKind k);

// model.rs ForwardPassPerfModel in Regression mode: one BucketedRegression per workload kind.
class ForwardPassPerfModel {
 public:
  explicit ForwardPassPerfModel(const PerfModelOptions& options);
  std::optional<double> estimate_ms(const ScheduledWork& w) const;  // nullopt: that kind has no fit yet
  void tune(const ScheduledWork& w, double wall_time_s);            // ignored: nothing scheduled, wall_time ≤ 0
  bool any_ready() const;                                           // diagnostics().readiness == ready
  std::size_t observation_count() const;
  const BucketedRegression& store(WorkloadKind k) const;

 private:
  BucketedRegression prefill_, decode_, mixed_;
};

// engine_query.py / aic_adapter.py _MovingAverage: a window of the last max_len values, skipping
// leading non-positive ones.
class MovingAverage {
 public:
  explicit MovingAverage(int max_len) : max_len_(max_len < 1 ? 1 : max_len) {}
  void add_after_first_nonzero(double value);
  double value() const { return values_.empty() ? 0.0 : sum_ / static_cast<double>(values_.size()); }
  std::size_t size() const { return values_.size(); }

 private:
  std::vector<double> values_;
  double sum_ = 0;
  std::size_t max_len_;
  bool seen_nonzero_ = false;
};

enum class WorkerType { Prefill, Decode, Aggregated };

// engine_query.py EngineCapacity, plus the search's numbers for the decision log.
struct EngineCapacity {
  double rps = 0;                // sustainable requests per second of one engine
  std::optional<double> ttft_s;  // modelled TTFT at that batch
  std::optional<double> itl_s;   // modelled ITL at that batch
  std::optional<double> e2e_s;
  bool eligible = true;          // meets every SLA given
  std::int64_t batch_size = 0;   // the batch chosen
  std::int64_t max_batch = 0;    // the search's upper bound
  std::int64_t isl = 0, osl = 0, context_length = 0;  // the request shape searched (tokens)
  int candidates = 0;            // batch sizes tried
};

// PlannerEnginePerfModel over AicCoreEnginePerfModel, regression mode, attention DP 1.
class PlannerPerfModel {
 public:
  PlannerPerfModel(WorkerType type, const PerfModelOptions& options, const EngineLimits& limits);
  void set_limits(const EngineLimits& limits) { limits_ = limits; }
  const EngineLimits& limits() const { return limits_; }
  WorkerType worker_type() const { return type_; }

  // Pre-deployment FPMs (profile points). Live FPMs of one tick, ascending replica id.
  void load_benchmark_fpms(const std::vector<ForwardPassMetrics>& fpms);
  void add_observations(const std::vector<ForwardPassMetrics>& fpms);

  bool has_sufficient_data() const { return model_.any_ready(); }
  std::size_t num_observations() const { return model_.observation_count(); }
  const ForwardPassPerfModel& model() const { return model_; }
  double avg_isl() const { return avg_isl_.value(); }
  double avg_decode_length() const { return avg_decode_length_.value(); }

  // find_engine_capacity_rps(isl, osl, ttft_sla_ms, itl_sla_ms); nullopt: not ready or no batch fits.
  // (No KV hit-rate discount and accept length 1: the lab has no prefix sharing or speculative decoding.)
  std::optional<EngineCapacity> find_engine_capacity_rps(double isl, double osl, std::optional<double> ttft_sla_ms,
                                                         std::optional<double> itl_sla_ms) const;
  // estimate_queued_prefill_time: seconds to drain the worker's queued prefill (scaled) plus the next
  // request (the average ISL), in max_num_batched_tokens chunks. nullopt: not estimable.
  std::optional<double> estimate_queued_prefill_time(const ForwardPassMetrics& fpm, double queue_scale = 1.0,
                                                     double decode_scale = 1.0, bool include_queued_decode = false,
                                                     bool add_next_request = true) const;
  // estimate_scheduled_decode_itl: seconds of the next decode iteration with the scheduled (and queued)
  // decode work scaled, plus the next request (the average decode length).
  std::optional<double> estimate_scheduled_decode_itl(const ForwardPassMetrics& fpm, double decode_scale = 1.0,
                                                      bool include_queued_decode = true,
                                                      bool include_queued_prefill_as_kv = false,
                                                      bool add_next_request = true) const;

  // The forward-pass estimate in seconds (engine_query.py _estimate_forward_pass_seconds).
  std::optional<double> forward_pass_s(const ScheduledWork& w) const;
  // _prefill_chunk_time: full max_num_batched_tokens chunks and the tail, each estimated once.
  std::optional<double> prefill_time_for_tokens(std::int64_t tokens) const;

 private:
  void observe_for_next_request(const ForwardPassMetrics& f);
  void tune(const ForwardPassMetrics& f);
  std::optional<double> mixed_chunk_time(std::int64_t tokens, std::int64_t decode_requests, std::int64_t decode_kv) const;
  std::optional<EngineCapacity> find_prefill_capacity(std::int64_t isl, std::optional<double> ttft_sla_s) const;
  std::optional<EngineCapacity> find_decode_capacity(std::int64_t isl, std::int64_t osl, std::optional<double> itl_sla_s) const;
  std::optional<EngineCapacity> find_aggregated_capacity(std::int64_t isl, std::int64_t osl, std::optional<double> ttft_sla_s,
                                                         std::optional<double> itl_sla_s) const;

  WorkerType type_;
  EngineLimits limits_;
  ForwardPassPerfModel model_;
  MovingAverage avg_isl_, avg_decode_length_;          // aic_adapter.py next-request synthesis
  MovingAverage agg_num_prefill_, agg_prefill_tokens_;  // engine_query.py _AggLoadAverages
};

// engine_query.py _capacity_batch_sizes: 1..max_batch, or 128 evenly spread sizes.
std::vector<std::int64_t> capacity_batch_sizes(std::int64_t max_batch);

// monitoring/perf_metrics.py _convert_prefill_profiling / _convert_decode_profiling: each profile point
// as a synthetic FPM (prefill: 1 request of isl tokens, wall time = TTFT; decode: batch
// max(1, round(kv_usage × max_kv_tokens / context)), sum_decode_kv = round(kv_usage × max_kv_tokens),
// wall time = ITL; Python's round: half to even).
std::vector<ForwardPassMetrics> prefill_profile_fpms(const PrefillProfile& p);
std::vector<ForwardPassMetrics> decode_profile_fpms(const DecodeProfile& d);

}  // namespace gpuscale::dynamo
