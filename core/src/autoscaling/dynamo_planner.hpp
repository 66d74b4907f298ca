// A Dynamo-Planner-like model-level autoscaler: NVIDIA Dynamo's planner for one DynamoGraphDeployment
// (a prefill and a decode pool, one of them alone, or an aggregated pool), as it works in Aug 2026.
//
// Ported from ai-dynamo/dynamo components/src/dynamo/planner/ (a snapshot of 2026-08-21):
//  - config/defaults.py, config/planner_config.py (PlannerConfig, its validator, resolve_min_endpoint)
//  - core/state_machine.py (PlannerScalingState: worker inventory, budgets, throughput floors)
//  - core/throughput_scaling.py (throughput-based scaling), core/load_scaling.py (load-based scaling,
//    SLA and the static-threshold "throughput"/"latency" targets)
//  - core/budget.py (proportional_clamp_pair / proportional_clamp_single)
//  - plugins/builtins/local_planner.py (BuiltinLoadPredict: the traffic predictors' inputs)
//  - plugins/orchestrator/engine_adapter.py (cadence: one tick every gcd of the intervals; the
//    projection of a proposal onto replica targets and the final GPU-budget clamp, power-awareness off)
//  - environment/metrics_provider/prometheus_traffic_provider.py, monitoring/traffic_metrics.py (what
//    the traffic observation is and when it is valid)
// and its performance model (dynamo_perf_model.hpp) and predictors (dynamo_predictors.hpp).
//
// Not modelled: the plugin pipeline's external plugins (only the builtin ones run, so its merge
// reduces to "the one proposal of the tick"), power-aware budgets, the KV-router's hit-rate discount
// and speculative-decoding accept length (the lab has neither: no discount, accept length 1), AIC's
// native estimator ("rapid" sweeps: the lab's engine is not in AIC's database), the global planner,
// the virtual connector's acknowledgement protocol, and predictor warm-up traces.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autoscaling/dynamo_perf_model.hpp"
#include "autoscaling/dynamo_predictors.hpp"
#include "autoscaling/service_scaler.hpp"

namespace gpuscale::dynamo {

enum class PlannerMode { Disagg, Prefill, Decode, Agg };
enum class OptimizationTarget { Throughput, Latency, Load, Sla };
const char* planner_mode_name(PlannerMode m);
const char* optimization_target_name(OptimizationTarget t);

// PlannerConfig with upstream's defaults (config/defaults.py SLAPlannerDefaults, planner_config.py).
struct PlannerConfig {
  PlannerMode mode = PlannerMode::Disagg;  // mode
  // optimization_target: "throughput" (upstream's default) and "latency" scale on static thresholds of
  // queued prefill tokens and KV usage, "load" on the thresholds below (load-based only); "sla" targets
  // ttft/itl with the perf model.
  OptimizationTarget optimization_target = OptimizationTarget::Throughput;
  bool enable_throughput_scaling = true;  // the validator turns it off unless the target is sla
  bool enable_load_scaling = false;       // the validator turns it on unless the target is sla
  double throughput_adjustment_interval_s = 180;  // seconds: throughput_adjustment_interval_seconds
  double load_adjustment_interval_s = 5;          // seconds: load_adjustment_interval_seconds (also live FPM tuning)
  double ttft_ms = 500;  // ms: TTFT target (sla)
  double itl_ms = 50;    // ms: ITL target (sla)
  int max_gpu_budget = 8;   // GPUs over the deployment's pools; -1 disables
  int min_gpu_budget = -1;  // GPUs; -1 disables
  int min_endpoint = 1;     // replicas per worker type
  std::optional<int> prefill_min_endpoint;  // overrides min_endpoint for prefill
  std::optional<int> decode_min_endpoint;   // overrides min_endpoint for decode (and agg)
  // Upstream's default is "arima", which is not ported (dynamo_predictors.hpp); the lab defaults to
  // "constant" and refuses arima and prophet.
  LoadPredictorKind load_predictor = LoadPredictorKind::Constant;
  PredictorSettings predictor;  // load_predictor_log1p, kalman_q_level, kalman_q_trend, kalman_r, kalman_min_points
  int max_num_fpm_samples = 64;             // FPM observations the perf model keeps
  int fpm_sample_bucket_size = 16;          // buckets across the input axes (a perfect square)
  int load_min_observations = 5;            // FPMs before the perf model is ready
  int load_scaling_down_sensitivity = 80;   // percent (0-100)
  // optimization_target "load" only (required there): queued prefill tokens per worker and decode KV
  // utilisation, percent, that trigger a scale-up / allow a scale-down.
  std::optional<std::int64_t> prefill_scale_up_queue_tokens, prefill_scale_down_queue_tokens;  // tokens
  std::optional<double> decode_scale_up_kv_rate, decode_scale_down_kv_rate;                    // percent 0-100
  // profile_results_dir (thorough mode): the profiler's tables (serving/engine_profiler.hpp) for the
  // prefill and decode workers (agg: the decode table). Absent: the model waits for live FPMs.
  std::optional<PrefillProfile> prefill_profile;
  std::optional<DecodeProfile> decode_profile;
};

// "" if valid, else "<field>: <why>" (planner_config.py _validate_config, and the predictors not ported).
std::string planner_config_error(const PlannerConfig& c);
// The configuration the planner runs with: upstream's validator turns load scaling on and throughput
// scaling off for the static-threshold targets.
PlannerConfig effective_planner_config(PlannerConfig c);
int resolve_min_endpoint(const PlannerConfig& c, bool prefill);

// core/budget.py, exposed for tests. -1 disables a bound.
std::pair<std::int32_t, std::int32_t> proportional_clamp_pair(std::int32_t num_p, std::int32_t num_d, int p_gpu, int d_gpu, int min_gpus,
                                                              int max_gpus, int prefill_min_endpoint, int decode_min_endpoint);
std::int32_t proportional_clamp_single(std::int32_t desired, int engine_gpu, int min_gpus, int max_gpus, int min_endpoint);

// One tick's traffic observation (TrafficObservation) from the frontend window; nullopt when a
// required average is undefined (Metrics.is_valid after normalize_idle_nans).
struct TrafficObservation {
  double duration_s = 0;
  double num_req = 0, isl = 0, osl = 0;
  double ttft_ms = 0, itl_ms = 0, request_duration_s = 0;
};
std::optional<TrafficObservation> traffic_observation(const FrontendWindow& w, double interval_s, std::string* why_not = nullptr);

class DynamoPlanner : public ServiceScaler {
 public:
  explicit DynamoPlanner(PlannerConfig config);  // precondition: planner_config_error(config) == ""
  const char* name() const override { return "dynamo-planner"; }
  Micros period() const override { return period_; }
  Micros frontend_window() const override;
  ServiceDecision sync(const ServiceSnapshot& snapshot, Micros now, const LogPolicy& log) override;

  const PlannerConfig& config() const { return config_; }
  std::int32_t throughput_lower_bound_prefill() const { return lower_bound_p_; }
  std::int32_t throughput_lower_bound_decode() const { return lower_bound_d_; }
  // nullptr where the mode has none (and in the static-threshold targets, which need no perf model).
  const PlannerPerfModel* prefill_model() const { return prefill_model_.get(); }
  const PlannerPerfModel* decode_model() const { return decode_model_.get(); }  // agg: the aggregated model

 private:
  struct Role;
  struct Tick;
  struct Proposal {
    std::optional<std::int32_t> p, d;
  };
  std::optional<Proposal> throughput_tick(Tick& t, const TrafficObservation& traffic, double num_req, double isl, double osl);
  std::optional<std::int32_t> compute_replicas(Tick& t, bool prefill, double demand_rps, double isl, double osl);
  std::optional<Proposal> load_tick(Tick& t);
  std::optional<std::int32_t> load_decision(Tick& t, bool prefill, std::string& reason);
  std::optional<std::int32_t> easy_decision(Tick& t, bool prefill, std::string& reason);
  std::optional<Proposal> load_tick_agg(Tick& t);
  std::optional<std::int32_t> agg_prefill_scaling(Tick& t, std::string& reason);
  std::optional<std::int32_t> agg_decode_scaling(Tick& t, std::string& reason);
  static std::optional<std::int32_t> scale_decision(const std::vector<double>& estimates_ms, double sla_ms, std::int32_t workers,
                                                    int min_endpoint, bool can_scale_down, std::string& reason);
  std::int32_t apply_single_budget(Tick& t, std::int32_t desired, bool prefill);
  std::pair<std::int32_t, std::int32_t> apply_global_budget(Tick& t, std::int32_t p, std::int32_t d);
  bool scaling_in_progress(const Tick& t, bool prefill) const;

  PlannerConfig config_;
  Micros period_;
  Micros load_interval_, throughput_interval_;
  Micros last_load_ = 0, last_throughput_ = 0;
  std::unique_ptr<PlannerPerfModel> prefill_model_, decode_model_;
  std::unique_ptr<LoadPredictor> num_req_predictor_, isl_predictor_, osl_predictor_;
  std::optional<double> last_observed_isl_, last_observed_osl_;
  bool seen_live_traffic_ = false;
  std::int32_t lower_bound_p_ = 1, lower_bound_d_ = 1;
};

}  // namespace gpuscale::dynamo
