// The Dynamo-Planner-like model-level autoscaler (see dynamo_planner.hpp).
#include "autoscaling/dynamo_planner.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace gpuscale::dynamo {

namespace {

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string ms(double seconds) { return fixed(seconds * 1000.0, 1) + " ms"; }

const char* const kPrefillFeatures[] = {"prefill token"};
const char* const kDecodeFeatures[] = {"decode request", "KV token"};
const char* const kMixedFeatures[] = {"prefill token", "KV token"};

std::string model_text(const PlannerPerfModel& m) {
  std::string out;
  const WorkloadKind kinds[3] = {WorkloadKind::Prefill, WorkloadKind::Decode, WorkloadKind::Mixed};
  for (WorkloadKind k : kinds) {
    const BucketedRegression& s = m.model().store(k);
    if (s.observation_count() == 0) continue;
    const char* const* names = k == WorkloadKind::Prefill ? kPrefillFeatures : k == WorkloadKind::Decode ? kDecodeFeatures : kMixedFeatures;
    out += std::string(out.empty() ? "" : "; ") + workload_kind_name(k) + " iterations: " + std::to_string(s.observation_count()) +
           " samples, " + (s.fit() ? s.fit()->describe(names) : std::string("no fit yet"));
  }
  return out.empty() ? "no samples" : out;
}

// Python's math.ceil of a non-negative ratio, as an int32 (saturating).
std::int32_t ceil_count(double v) {
  if (!(v > 0)) return 0;
  const double c = std::ceil(v);
  return c >= 2147483647.0 ? 2147483647 : static_cast<std::int32_t>(c);
}

}  // namespace

const char* planner_mode_name(PlannerMode m) {
  switch (m) {
    case PlannerMode::Disagg: return "disagg";
    case PlannerMode::Prefill: return "prefill";
    case PlannerMode::Decode: return "decode";
    case PlannerMode::Agg: return "agg";
  }
  return "disagg";
}

const char* optimization_target_name(OptimizationTarget t) {
  switch (t) {
    case OptimizationTarget::Throughput: return "throughput";
    case OptimizationTarget::Latency: return "latency";
    case OptimizationTarget::Load: return "load";
    case OptimizationTarget::Sla: return "sla";
  }
  return "throughput";
}

int resolve_min_endpoint(const PlannerConfig& c, bool prefill) {
  const std::optional<int>& v = prefill ? c.prefill_min_endpoint : c.decode_min_endpoint;
  return v ? *v : c.min_endpoint;
}

PlannerConfig effective_planner_config(PlannerConfig c) {
  // planner_config.py _validate_config: "Easy mode: force load scaling on, throughput scaling off".
  if (c.optimization_target != OptimizationTarget::Sla) {
    c.enable_load_scaling = true;
    c.enable_throughput_scaling = false;
  }
  return c;
}

std::string planner_config_error(const PlannerConfig& raw) {
  const PlannerConfig c = effective_planner_config(raw);
  if (!(c.ttft_ms > 0)) return "ttft_ms: must be > 0";
  if (!(c.itl_ms > 0)) return "itl_ms: must be > 0";
  if (c.mode == PlannerMode::Prefill && c.decode_min_endpoint) return "decode_min_endpoint: not supported when mode is prefill";
  if (c.mode == PlannerMode::Decode && c.prefill_min_endpoint) return "prefill_min_endpoint: not supported when mode is decode";
  if (c.mode == PlannerMode::Agg && (c.prefill_min_endpoint || c.decode_min_endpoint)) {
    return "prefill_min_endpoint: prefill_min_endpoint and decode_min_endpoint are not supported when mode is agg; use min_endpoint";
  }
  if (c.min_endpoint < 0) return "min_endpoint: must be >= 0";
  const int root = static_cast<int>(std::sqrt(static_cast<double>(std::max(0, c.fpm_sample_bucket_size))));
  if (c.fpm_sample_bucket_size < 1 || root * root != c.fpm_sample_bucket_size) {
    return "fpm_sample_bucket_size: must be a perfect square, got " + std::to_string(c.fpm_sample_bucket_size);
  }
  if (c.max_num_fpm_samples < 1) return "max_num_fpm_samples: must be >= 1";
  if (c.load_min_observations < 1 || c.load_min_observations > c.max_num_fpm_samples) {
    return "load_min_observations: must be between 1 and max_num_fpm_samples";
  }
  if (c.load_scaling_down_sensitivity < 0 || c.load_scaling_down_sensitivity > 100) return "load_scaling_down_sensitivity: must be 0-100";
  if (c.optimization_target == OptimizationTarget::Load) {
    if (c.mode == PlannerMode::Disagg || c.mode == PlannerMode::Prefill) {
      if (!c.prefill_scale_up_queue_tokens || !c.prefill_scale_down_queue_tokens) {
        return "prefill_scale_up_queue_tokens: optimization_target 'load' requires prefill_scale_up_queue_tokens and prefill_scale_down_queue_tokens";
      }
      if (*c.prefill_scale_up_queue_tokens <= *c.prefill_scale_down_queue_tokens) {
        return "prefill_scale_up_queue_tokens: must be greater than prefill_scale_down_queue_tokens";
      }
    }
    if (c.mode != PlannerMode::Prefill) {
      if (!c.decode_scale_up_kv_rate || !c.decode_scale_down_kv_rate) {
        return "decode_scale_up_kv_rate: optimization_target 'load' requires decode_scale_up_kv_rate and decode_scale_down_kv_rate";
      }
      if (*c.decode_scale_up_kv_rate <= *c.decode_scale_down_kv_rate) return "decode_scale_up_kv_rate: must be greater than decode_scale_down_kv_rate";
    }
  }
  if (!c.enable_throughput_scaling && !c.enable_load_scaling) {
    return "enable_throughput_scaling: at least one scaling mode must be enabled (enable_throughput_scaling or enable_load_scaling)";
  }
  if (!(c.load_adjustment_interval_s > 0)) return "load_adjustment_interval_seconds: must be > 0";
  if (c.enable_throughput_scaling && !(c.throughput_adjustment_interval_s > 0)) {
    return "throughput_adjustment_interval_seconds: must be > 0 when throughput scaling is enabled";
  }
  if (c.enable_load_scaling && c.enable_throughput_scaling && c.load_adjustment_interval_s >= c.throughput_adjustment_interval_s) {
    return "load_adjustment_interval_seconds: must be shorter than throughput_adjustment_interval_seconds";
  }
  if (c.enable_throughput_scaling && (c.load_predictor == LoadPredictorKind::Arima || c.load_predictor == LoadPredictorKind::Prophet)) {
    return std::string("load_predictor: '") + load_predictor_name(c.load_predictor) +
           "' is not ported (its fit is a numerical optimiser's result that cannot be reproduced exactly); use 'constant' or 'kalman'";
  }
  if (c.predictor.kalman_min_points < 1) return "kalman_min_points: must be >= 1";
  return "";
}

// core/budget.py proportional_clamp_pair.
std::pair<std::int32_t, std::int32_t> proportional_clamp_pair(std::int32_t num_p, std::int32_t num_d, int p_gpu, int d_gpu, int min_gpus,
                                                              int max_gpus, int prefill_min_endpoint, int decode_min_endpoint) {
  if (min_gpus < 0 && max_gpus < 0) return {num_p, num_d};
  if (p_gpu <= 0 || d_gpu <= 0) return {num_p, num_d};
  const std::int64_t total = std::int64_t(num_p) * p_gpu + std::int64_t(num_d) * d_gpu;
  const int tolerance = (min_gpus >= 0 && max_gpus >= 0) ? std::max(p_gpu, d_gpu) : 0;  // compute_tolerance
  // bounds_for_total: [min − tolerance, max]; a negative bound is disabled.
  const bool over = max_gpus >= 0 && total > max_gpus;
  const bool under = min_gpus >= 0 && total < min_gpus - tolerance;
  if (!over && !under) return {num_p, num_d};
  if (over) {
    const std::int64_t min_req = std::int64_t(prefill_min_endpoint) * p_gpu + std::int64_t(decode_min_endpoint) * d_gpu;
    if (max_gpus < min_req) return {0, 0};
    const double target = max_gpus;
    const double scale = target / static_cast<double>(total);
    const auto max_p = static_cast<std::int64_t>(std::floor((target - double(decode_min_endpoint) * d_gpu) / p_gpu));
    const std::int64_t new_p = std::max<std::int64_t>(prefill_min_endpoint, std::min(max_p, static_cast<std::int64_t>(std::floor(num_p * scale))));
    const double remaining = target - double(new_p) * p_gpu;
    const std::int64_t new_d = std::max<std::int64_t>(decode_min_endpoint, static_cast<std::int64_t>(std::floor(remaining / d_gpu)));
    return {static_cast<std::int32_t>(new_p), static_cast<std::int32_t>(new_d)};
  }
  // Floor path: proportional growth toward min_gpus.
  const double floor_gpus = min_gpus;
  std::int64_t new_p, new_d;
  if (total <= 0) {
    new_p = std::max<std::int64_t>(prefill_min_endpoint, static_cast<std::int64_t>(std::ceil(floor_gpus / 2 / p_gpu)));
    const double remaining = std::max(0.0, floor_gpus - double(new_p) * p_gpu);
    new_d = std::max<std::int64_t>(decode_min_endpoint, static_cast<std::int64_t>(std::ceil(remaining / d_gpu)));
  } else {
    const double scale = floor_gpus / static_cast<double>(total);
    new_p = std::max<std::int64_t>(prefill_min_endpoint, static_cast<std::int64_t>(std::ceil(num_p * scale)));
    const double remaining = std::max(0.0, floor_gpus - double(new_p) * p_gpu);
    new_d = std::max<std::int64_t>(decode_min_endpoint, static_cast<std::int64_t>(std::ceil(remaining / d_gpu)));
  }
  if (max_gpus >= 0 && new_p * p_gpu + new_d * d_gpu > max_gpus) return {num_p, num_d};  // infeasible band
  return {static_cast<std::int32_t>(new_p), static_cast<std::int32_t>(new_d)};
}

// core/budget.py proportional_clamp_single.
std::int32_t proportional_clamp_single(std::int32_t desired, int engine_gpu, int min_gpus, int max_gpus, int min_endpoint) {
  if (min_gpus < 0 && max_gpus < 0) return desired;
  if (engine_gpu <= 0) return desired;
  const std::int64_t total = std::int64_t(desired) * engine_gpu;
  const int tolerance = (min_gpus >= 0 && max_gpus >= 0) ? engine_gpu : 0;
  const bool over = max_gpus >= 0 && total > max_gpus;
  const bool under = min_gpus >= 0 && total < min_gpus - tolerance;
  if (!over && !under) return desired;
  if (over) {
    if (max_gpus < std::int64_t(min_endpoint) * engine_gpu) return 0;
    return std::max(min_endpoint, static_cast<int>(std::floor(double(max_gpus) / engine_gpu)));
  }
  return std::max(min_endpoint, static_cast<int>(std::ceil(double(min_gpus) / engine_gpu)));
}

// prometheus_traffic_provider.py collect_traffic: the averages are increase(sum) / increase(count)
// over the interval (NaN when nothing was observed); a window with no requests counts its undefined
// averages as 0 (Metrics.normalize_idle_nans); otherwise any undefined average skips the tick.
std::optional<TrafficObservation> traffic_observation(const FrontendWindow& w, double interval_s, std::string* why_not) {
  TrafficObservation t;
  t.duration_s = interval_s;
  t.num_req = w.requests_started;
  t.isl = w.isl_sum / w.isl_count;
  t.osl = w.osl_sum / w.osl_count;
  t.ttft_ms = w.ttft_sum_s / w.ttft_count * 1000;
  t.itl_ms = w.itl_sum_s / w.itl_count * 1000;
  t.request_duration_s = w.duration_sum_s / w.duration_count;
  if (t.num_req == 0) {
    for (double* v : {&t.ttft_ms, &t.itl_ms, &t.isl, &t.osl, &t.request_duration_s}) {
      if (std::isnan(*v)) *v = 0.0;
    }
  }
  const std::pair<const char*, double> required[] = {{"TTFT", t.ttft_ms}, {"ITL", t.itl_ms}, {"ISL", t.isl}, {"OSL", t.osl},
                                                     {"requests", t.num_req}, {"request duration", t.request_duration_s}};
  for (const auto& [name, v] : required) {
    if (std::isnan(v)) {
      if (why_not) *why_not = std::string("the frontend's average ") + name + " over the window is undefined (none observed)";
      return std::nullopt;
    }
  }
  return t;
}

// ------------------------------------------------------------------------------------------------

struct DynamoPlanner::Role {
  int index = -1;  // in the snapshot's pools
  std::string name;
  std::int32_t ready = 0;     // DGD status: ready (available) replicas
  std::int32_t expected = 0;  // the desired count
  bool unstable = false;      // not (desired == updated == ready)
  int gpus = 1;
  EngineLimits limits;
  const std::vector<ForwardPassMetrics>* fpm = nullptr;
  std::string text;    // this tick's arithmetic for the pool
  std::string reason;  // upstream's diagnostic reason
  Json detail = Json::object();  // the same numbers, typed (DecisionRecord::detail)
};

struct DynamoPlanner::Tick {
  Micros now = 0;
  Json detail = Json::object();  // shared numbers (traffic, prediction)
  bool has_p = false, has_d = false;
  Role p, d;  // d: the decode pool, or the aggregated pool in agg mode
  std::string text;  // shared arithmetic (traffic, prediction)
};

DynamoPlanner::DynamoPlanner(PlannerConfig config) : config_(effective_planner_config(std::move(config))) {
  load_interval_ = seconds_to_micros(config_.load_adjustment_interval_s);
  throughput_interval_ = seconds_to_micros(config_.throughput_adjustment_interval_s);
  // engine_adapter.py: one pipeline tick every scheduling.scale_interval_seconds, by default the gcd of
  // the enabled intervals (load always; throughput when enabled).
  period_ = config_.enable_throughput_scaling ? std::gcd(load_interval_, throughput_interval_) : load_interval_;
  if (period_ <= 0) period_ = kMicrosPerSecond;
  PerfModelOptions options;
  options.max_observations = config_.max_num_fpm_samples;
  options.min_observations = config_.load_min_observations;
  options.bucket_count = config_.fpm_sample_bucket_size;
  if (config_.optimization_target == OptimizationTarget::Sla) {  // the static-threshold targets need no perf model
    if (config_.mode == PlannerMode::Agg) {
      decode_model_ = std::make_unique<PlannerPerfModel>(WorkerType::Aggregated, options, EngineLimits{});
      // AggPlanner._bootstrap_regression fetches the DECODE component's pre-deployment data.
      if (config_.decode_profile) decode_model_->load_benchmark_fpms(decode_profile_fpms(*config_.decode_profile));
    } else {
      if (config_.mode == PlannerMode::Disagg || config_.mode == PlannerMode::Prefill) {
        prefill_model_ = std::make_unique<PlannerPerfModel>(WorkerType::Prefill, options, EngineLimits{});
        if (config_.prefill_profile) prefill_model_->load_benchmark_fpms(prefill_profile_fpms(*config_.prefill_profile));
      }
      if (config_.mode == PlannerMode::Disagg || config_.mode == PlannerMode::Decode) {
        decode_model_ = std::make_unique<PlannerPerfModel>(WorkerType::Decode, options, EngineLimits{});
        if (config_.decode_profile) decode_model_->load_benchmark_fpms(decode_profile_fpms(*config_.decode_profile));
      }
    }
  }
  num_req_predictor_ = make_load_predictor(config_.load_predictor, config_.predictor);
  isl_predictor_ = make_load_predictor(config_.load_predictor, config_.predictor);
  osl_predictor_ = make_load_predictor(config_.load_predictor, config_.predictor);
  if (!num_req_predictor_) {  // not ported; planner_config_error refuses it, this keeps the object usable
    num_req_predictor_ = std::make_unique<ConstantPredictor>();
    isl_predictor_ = std::make_unique<ConstantPredictor>();
    osl_predictor_ = std::make_unique<ConstantPredictor>();
  }
}

Micros DynamoPlanner::frontend_window() const { return config_.enable_throughput_scaling ? throughput_interval_ : 0; }

bool DynamoPlanner::scaling_in_progress(const Tick& t, bool prefill) const {
  const Role& r = prefill ? t.p : t.d;
  return r.unstable || r.expected != r.ready;  // state_machine.py _scaling_in_progress
}

std::int32_t DynamoPlanner::apply_single_budget(Tick& t, std::int32_t desired, bool prefill) {
  const Role& r = prefill ? t.p : t.d;
  const int min_endpoint = resolve_min_endpoint(config_, prefill);
  const std::int32_t in = std::max(desired, min_endpoint);
  const std::int32_t out = proportional_clamp_single(in, r.gpus, config_.min_gpu_budget, config_.max_gpu_budget, min_endpoint);
  if (out != in) {
    (prefill ? t.p : t.d).text += " GPU budget band [min " + std::to_string(config_.min_gpu_budget) + ", max " +
                                  std::to_string(config_.max_gpu_budget) + "] clamped " + std::to_string(in) + " replicas (= " +
                                  std::to_string(in * r.gpus) + " GPUs) → " + std::to_string(out) + ".";
  }
  return out;
}

std::pair<std::int32_t, std::int32_t> DynamoPlanner::apply_global_budget(Tick& t, std::int32_t p, std::int32_t d) {
  const auto out = proportional_clamp_pair(p, d, t.p.gpus, t.d.gpus, config_.min_gpu_budget, config_.max_gpu_budget,
                                           resolve_min_endpoint(config_, true), resolve_min_endpoint(config_, false));
  if (out.first != p || out.second != d) {
    t.text += " GPU budget band [min " + std::to_string(config_.min_gpu_budget) + ", max " + std::to_string(config_.max_gpu_budget) +
              "] clamped (" + std::to_string(p) + "P + " + std::to_string(d) + "D = " + std::to_string(p * t.p.gpus + d * t.d.gpus) +
              " GPUs) → (" + std::to_string(out.first) + "P + " + std::to_string(out.second) + "D = " +
              std::to_string(out.first * t.p.gpus + out.second * t.d.gpus) + " GPUs).";
  }
  return out;
}

// throughput_scaling.py _compute_prefill_replicas / _compute_decode_replicas and the agg path's
// replica step: ceil(demand_rps / engine_rps), at least min_endpoint.
std::optional<std::int32_t> DynamoPlanner::compute_replicas(Tick& t, bool prefill, double demand_rps, double isl, double osl) {
  Role& r = prefill ? t.p : t.d;
  const PlannerPerfModel* m = prefill ? prefill_model_.get() : decode_model_.get();
  const bool agg = config_.mode == PlannerMode::Agg;
  std::optional<EngineCapacity> cap;
  if (m) {
    cap = prefill ? m->find_engine_capacity_rps(isl, osl, config_.ttft_ms, std::nullopt)
          : agg   ? m->find_engine_capacity_rps(isl, osl, config_.ttft_ms, config_.itl_ms)
                  : m->find_engine_capacity_rps(isl, osl, std::nullopt, config_.itl_ms);
  }
  const double engine_rps = cap ? cap->rps : 0.0;
  if (cap) {
    r.detail["engine_rps"] = engine_rps;
    r.detail["engine_batch_size"] = cap->batch_size;
    r.detail["engine_sla_met"] = cap->eligible;
    if (cap->ttft_s) r.detail["engine_ttft_s"] = *cap->ttft_s;
    if (cap->itl_s) r.detail["engine_itl_s"] = *cap->itl_s;
  }
  if (engine_rps <= 0) {
    r.reason = "model_not_ready";
    r.text += std::string(" The ") + (agg ? "agg" : prefill ? "prefill" : "decode") +
              " perf model cannot estimate a capacity yet (" + (m ? model_text(*m) : std::string("no model")) + "): no decision.";
    return std::nullopt;
  }
  const int min_endpoint = resolve_min_endpoint(config_, prefill);
  const std::int32_t needed = ceil_count(demand_rps / engine_rps);
  const std::int32_t result = std::max<std::int32_t>(needed, min_endpoint);
  r.detail["throughput_replicas"] = result;
  std::string s = " Engine capacity (" + model_text(*m) + "): ";
  if (prefill) {
    s += "the best batch of " + std::to_string(cap->batch_size) + " prefill" + (cap->batch_size == 1 ? "" : "s") + " of ISL " +
         std::to_string(cap->isl) + " (of " + std::to_string(cap->candidates) + " batch sizes up to " + std::to_string(cap->max_batch) +
         ") takes " + ms(*cap->ttft_s) + (cap->eligible ? " ≤ " : " > ") + "the TTFT target " + fixed(config_.ttft_ms, 1) +
         " ms, " + num(engine_rps) + " requests/s per engine.";
  } else if (agg) {
    s += "batch " + std::to_string(cap->batch_size) + " at context ISL + OSL/2 = " + std::to_string(cap->context_length) +
         " with its prefill share gives TTFT " + ms(cap->ttft_s.value_or(0)) + " and ITL " + ms(cap->itl_s.value_or(0)) +
         (cap->eligible ? " (within" : " (not within") + " the " + fixed(config_.ttft_ms, 1) + " ms / " + fixed(config_.itl_ms, 1) +
         " ms targets), " + num(engine_rps) + " requests/s per engine = batch / (OSL × ITL).";
  } else {
    s += "the best batch at context ISL + OSL/2 = " + std::to_string(cap->context_length) + " is " + std::to_string(cap->batch_size) +
         " (of " + std::to_string(cap->candidates) + " sizes up to " + std::to_string(cap->max_batch) + ") with ITL " +
         ms(*cap->itl_s) + (cap->eligible ? " ≤ " : " > ") + "the ITL target " + fixed(config_.itl_ms, 1) + " ms, " +
         num(engine_rps) + " requests/s per engine = " + std::to_string(cap->batch_size) + " / (" + std::to_string(cap->osl) +
         " × ITL).";
  }
  if (!cap->eligible) s += " (SLA not met at any batch: sized for the load anyway, as upstream does.)";
  s += " Replicas: ceil(" + num(demand_rps) + " / " + num(engine_rps) + ") = " + std::to_string(needed) + ", min_endpoint " +
       std::to_string(min_endpoint) + " → " + std::to_string(result) + ".";
  r.text += s;
  return result;
}

// throughput_scaling.py _throughput_disagg / _throughput_single / _throughput_agg.
std::optional<DynamoPlanner::Proposal> DynamoPlanner::throughput_tick(Tick& t, const TrafficObservation& traffic, double num_req, double isl,
                                                                      double osl) {
  if (traffic.duration_s <= 0) return std::nullopt;
  const double demand_rps = num_req / traffic.duration_s;
  t.text += " Demand " + num(num_req) + " / " + num(traffic.duration_s) + " s = " + num(demand_rps) + " requests/s.";
  const bool load = config_.enable_load_scaling;
  if (config_.mode == PlannerMode::Disagg) {
    const auto p = compute_replicas(t, true, demand_rps, isl, osl);
    const auto d = compute_replicas(t, false, demand_rps, isl, osl);
    if (!p || !d) {
      t.p.reason = p ? "partner_not_ready" : "model_not_ready";
      t.d.reason = d ? "partner_not_ready" : "model_not_ready";
      return std::nullopt;
    }
    if (load) {
      lower_bound_p_ = *p;
      lower_bound_d_ = *d;
      t.p.reason = t.d.reason = "set_lower_bound";
      t.text += " Load-based scaling is on: these become its lower bounds (prefill " + std::to_string(*p) + ", decode " +
                std::to_string(*d) + ").";
      return std::nullopt;
    }
    t.p.reason = t.d.reason = "scale";
    const auto [np, nd] = apply_global_budget(t, *p, *d);
    return Proposal{np, nd};
  }
  const bool prefill = config_.mode == PlannerMode::Prefill;
  const auto desired = compute_replicas(t, prefill, demand_rps, isl, osl);
  if (!desired) return std::nullopt;
  Role& r = prefill ? t.p : t.d;
  if (load) {
    (prefill ? lower_bound_p_ : lower_bound_d_) = *desired;
    r.reason = "set_lower_bound";
    r.text += " Load-based scaling is on: " + std::to_string(*desired) + " becomes its lower bound.";
    return std::nullopt;
  }
  r.reason = "scale";
  const std::int32_t out = apply_single_budget(t, *desired, prefill);
  return prefill ? Proposal{out, std::nullopt} : Proposal{std::nullopt, out};
}

// load_scaling.py _scale_decision: up by one if every engine's estimate is above the target; down by
// one if the caller's consolidation check allows it.
std::optional<std::int32_t> DynamoPlanner::scale_decision(const std::vector<double>& est, double sla_ms, std::int32_t workers,
                                                          int min_endpoint, bool can_scale_down, std::string& reason) {
  if (est.empty()) {
    reason = "insufficient_data";
    return std::nullopt;
  }
  if (std::all_of(est.begin(), est.end(), [&](double v) { return v > sla_ms; })) return workers + 1;
  if (workers > 1 && can_scale_down) return std::max<std::int32_t>(workers - 1, min_endpoint);
  reason = "no_change";
  return std::nullopt;
}

// load_scaling.py _prefill_load_decision / _decode_load_decision (SLA target).
std::optional<std::int32_t> DynamoPlanner::load_decision(Tick& t, bool prefill, std::string& reason) {
  Role& r = prefill ? t.p : t.d;
  const PlannerPerfModel& m = prefill ? *prefill_model_ : *decode_model_;
  const std::int32_t n = r.ready;
  if (!m.has_sufficient_data()) {
    reason = "insufficient_data";
    r.text += std::string(" ") + (prefill ? "TTFT" : "ITL") + " perf model: insufficient data (" + std::to_string(m.num_observations()) +
              "/" + std::to_string(config_.load_min_observations) + ").";
    return std::nullopt;
  }
  if (n == 0 || (prefill && r.limits.max_num_batched_tokens <= 0)) {
    reason = "insufficient_data";
    return std::nullopt;
  }
  const double sensitivity = config_.load_scaling_down_sensitivity / 100.0;
  const double consolidation = n > 1 ? static_cast<double>(n) / static_cast<double>(n - 1) : 1.0;
  std::vector<double> estimates;
  bool can_scale_down = n > 1;
  bool refused = false;
  std::string per_engine;
  for (const ForwardPassMetrics& f : *r.fpm) {
    if (prefill) {
      const auto est = m.estimate_queued_prefill_time(f);
      if (est) {
        estimates.push_back(*est * 1000);
        r.detail["estimated_ttft_ms"].push_back(*est * 1000);
        per_engine += " engine " + std::to_string(f.replica) + ": TTFT " + fixed(*est * 1000, 1) + " ms (queued " +
                      std::to_string(f.queued_prefill_tokens) + " tokens + the next request's " + fixed(m.avg_isl(), 1) + ");";
      }
      if (!can_scale_down) continue;
      const auto own = m.estimate_queued_prefill_time(f, 0.0);
      if (!own) {
        can_scale_down = false;
        continue;
      }
      const double own_ms = *own * 1000;
      const double budget_ms = (config_.ttft_ms - own_ms) * sensitivity;
      if (budget_ms <= 0) {
        can_scale_down = false;
        refused = true;
        continue;
      }
      const auto post = m.estimate_queued_prefill_time(f, consolidation);
      if (!post) {
        can_scale_down = false;
      } else if (*post * 1000 - own_ms >= budget_ms) {
        can_scale_down = false;
        refused = true;
        per_engine += " with its queue × " + fixed(consolidation, 3) + " the queue's share " + fixed(*post * 1000 - own_ms, 1) +
                      " ms ≥ (" + fixed(config_.ttft_ms, 1) + " − " + fixed(own_ms, 1) + ") × " + num(sensitivity) + " = " +
                      fixed(budget_ms, 1) + " ms: no scale-down;";
      }
    } else {
      const std::int64_t sched_kv = f.sum_decode_kv_tokens, queued_kv = f.queued_decode_kv_tokens;
      const auto est = m.estimate_scheduled_decode_itl(f);
      if (est) {
        estimates.push_back(*est * 1000 / 1.0);
        r.detail["estimated_itl_ms"].push_back(*est * 1000);
        per_engine += " engine " + std::to_string(f.replica) + ": ITL " + fixed(*est * 1000, 1) + " ms (KV " + std::to_string(sched_kv) +
                      " scheduled + " + std::to_string(queued_kv) + " queued + the next request's " + fixed(m.avg_decode_length(), 1) + ");";
      }
      if (!can_scale_down) continue;
      const auto post_kv = static_cast<std::int64_t>(static_cast<double>(sched_kv + queued_kv) * consolidation);
      if (r.limits.max_kv_tokens > 0 && post_kv >= r.limits.max_kv_tokens) {
        can_scale_down = false;
        refused = true;
        per_engine += " its KV × " + fixed(consolidation, 3) + " = " + std::to_string(post_kv) + " ≥ " + std::to_string(r.limits.max_kv_tokens) +
                      " KV tokens: no scale-down;";
        continue;
      }
      const auto post = m.estimate_scheduled_decode_itl(f, consolidation);
      if (!post) {
        can_scale_down = false;
      } else if (*post * 1000 / 1.0 >= config_.itl_ms * sensitivity) {
        can_scale_down = false;
        refused = true;
        per_engine += " with its KV × " + fixed(consolidation, 3) + " ITL " + fixed(*post * 1000, 1) + " ms ≥ " + fixed(config_.itl_ms, 1) +
                      " × " + num(sensitivity) + ": no scale-down;";
      }
    }
  }
  const double sla = prefill ? config_.ttft_ms : config_.itl_ms;
  r.text += std::string(" Load (") + (prefill ? "TTFT" : "ITL") + " target " + fixed(sla, 1) + " ms, " + std::to_string(n) + " workers):" +
            per_engine;
  const auto decision = scale_decision(estimates, sla, n, resolve_min_endpoint(config_, prefill), can_scale_down, reason);
  if (!decision && refused) reason = "scale_down_refused_consolidation";
  if (decision) {
    r.text += *decision > n ? " Every engine is above the target: +1." : " Scale-down is safe for every engine: −1.";
  }
  return decision;
}

// load_scaling.py _prefill_easy_decision / _decode_easy_decision (static thresholds).
std::optional<std::int32_t> DynamoPlanner::easy_decision(Tick& t, bool prefill, std::string& reason) {
  Role& r = prefill ? t.p : t.d;
  const std::int32_t n = r.ready;
  const OptimizationTarget target = config_.optimization_target;
  const bool is_load = target == OptimizationTarget::Load, is_latency = target == OptimizationTarget::Latency;
  const int min_endpoint = resolve_min_endpoint(config_, prefill);
  std::vector<double> values;
  double up = 0, down = 0;
  std::string s;
  if (prefill) {
    if (n == 0) {
      reason = "insufficient_data";
      return std::nullopt;
    }
    if (is_load) {
      up = static_cast<double>(*config_.prefill_scale_up_queue_tokens);
      down = static_cast<double>(*config_.prefill_scale_down_queue_tokens);
      for (const ForwardPassMetrics& f : *r.fpm) values.push_back(static_cast<double>(f.queued_prefill_tokens));
      s = " queued prefill tokens per engine";
    } else {
      const std::int64_t ctx = r.limits.context_length;
      if (ctx <= 0) {
        reason = "insufficient_data";
        return std::nullopt;
      }
      up = is_latency ? 0.1 : 1.0;    // _PREFILL_LATENCY_SCALE_UP / _PREFILL_THROUGHPUT_SCALE_UP
      down = is_latency ? 0.0 : 0.1;  // _PREFILL_LATENCY_SCALE_DOWN / _PREFILL_THROUGHPUT_SCALE_DOWN
      for (const ForwardPassMetrics& f : *r.fpm) values.push_back(static_cast<double>(f.queued_prefill_tokens) / static_cast<double>(ctx));
      s = " queued prefill tokens / context length " + std::to_string(ctx) + " per engine";
    }
  } else {
    const std::int64_t max_kv = r.limits.max_kv_tokens;
    if (max_kv <= 0 || n == 0) {
      reason = "insufficient_data";
      return std::nullopt;
    }
    if (is_load) {
      up = *config_.decode_scale_up_kv_rate / 100.0;
      down = *config_.decode_scale_down_kv_rate / 100.0;
    } else {
      up = is_latency ? 0.4 : 1.0;    // _DECODE_LATENCY_SCALE_UP / _DECODE_THROUGHPUT_SCALE_UP
      down = is_latency ? 0.1 : 0.6;  // _DECODE_LATENCY_SCALE_DOWN / _DECODE_THROUGHPUT_SCALE_DOWN
    }
    const bool agg = config_.mode == PlannerMode::Agg;  // _agg_easy_decision adds the queued prefill tokens
    for (const ForwardPassMetrics& f : *r.fpm) {
      const std::int64_t used = f.sum_decode_kv_tokens + f.queued_decode_kv_tokens + (agg ? f.queued_prefill_tokens : 0);
      values.push_back(static_cast<double>(used) / static_cast<double>(max_kv));
    }
    s = agg ? " (scheduled + queued KV + queued prefill tokens) / " + std::to_string(max_kv) + " per engine"
            : " (scheduled + queued KV tokens) / " + std::to_string(max_kv) + " per engine";
  }
  if (values.empty()) {
    reason = "insufficient_data";
    return std::nullopt;
  }
  std::string list;
  for (double v : values) list += std::string(list.empty() ? "" : ", ") + num(v);
  const bool up_inclusive = prefill || is_load;
  const bool down_inclusive = is_load || (prefill && is_latency);
  r.text += " Static thresholds (" + std::string(optimization_target_name(target)) + "):" + s + " = [" + list + "]; +1 if any " +
            (up_inclusive ? "≥ " : "> ") + num(up) + ", −1 if all " + (down_inclusive ? "≤ " : "< ") + num(down) + ".";
  const bool any_up = std::any_of(values.begin(), values.end(), [&](double v) { return up_inclusive ? v >= up : v > up; });
  if (any_up) return n + 1;
  if (n > 1) {
    const bool all_down = std::all_of(values.begin(), values.end(), [&](double v) { return down_inclusive ? v <= down : v < down; });
    if (all_down) return std::max<std::int32_t>(n - 1, min_endpoint);
  }
  reason = "no_change";
  return std::nullopt;
}

namespace {

// state_machine.py _reconcile_fpm_worker_count: one FPM per ready worker.
bool fpm_matches(const std::vector<ForwardPassMetrics>& fpm, std::int32_t ready) { return static_cast<std::int32_t>(fpm.size()) == ready; }

}  // namespace

// load_scaling.py _advance_load_single / _advance_load_disagg.
std::optional<DynamoPlanner::Proposal> DynamoPlanner::load_tick(Tick& t) {
  const bool easy = config_.optimization_target != OptimizationTarget::Sla;
  auto decide = [&](bool prefill, std::string& reason) {
    return easy ? easy_decision(t, prefill, reason) : load_decision(t, prefill, reason);
  };
  if (config_.mode == PlannerMode::Prefill || config_.mode == PlannerMode::Decode) {
    const bool prefill = config_.mode == PlannerMode::Prefill;
    Role& r = prefill ? t.p : t.d;
    if (scaling_in_progress(t, prefill)) {
      r.reason = "scaling_in_progress";
      r.text += " Load: scaling in progress (" + std::to_string(r.ready) + " ready of " + std::to_string(r.expected) + "), observing only.";
      return std::nullopt;
    }
    if (r.fpm->empty()) {
      r.reason = "no_fpm_data";
      return std::nullopt;
    }
    if (!fpm_matches(*r.fpm, r.ready)) {
      r.reason = "worker_count_mismatch";
      r.text += " Load: " + std::to_string(r.fpm->size()) + " engines report FPMs but " + std::to_string(r.ready) + " are ready: skipped.";
      return std::nullopt;
    }
    std::string reason;
    auto desired = decide(prefill, reason);
    if (!desired) {
      r.reason = reason;
      return std::nullopt;
    }
    const std::int32_t original = *desired;
    if (config_.enable_throughput_scaling) desired = std::max(*desired, prefill ? lower_bound_p_ : lower_bound_d_);
    const std::int32_t out = apply_single_budget(t, *desired, prefill);
    r.reason = out < r.ready ? (out > original ? "scale_down_capped_by_throughput" : "scale_down") : out > r.ready ? "scale_up" : "no_change";
    return prefill ? Proposal{out, std::nullopt} : Proposal{std::nullopt, out};
  }
  // Disaggregated.
  const bool have_p = !t.p.fpm->empty(), have_d = !t.d.fpm->empty();
  if (!have_p && !have_d) {
    t.p.reason = t.d.reason = "no_fpm_data";
    return std::nullopt;
  }
  if (scaling_in_progress(t, true) || scaling_in_progress(t, false)) {
    t.p.reason = t.d.reason = "scaling_in_progress";
    t.text += " Load: scaling in progress (prefill " + std::to_string(t.p.ready) + " ready of " + std::to_string(t.p.expected) + ", decode " +
              std::to_string(t.d.ready) + " of " + std::to_string(t.d.expected) + "), observing only.";
    return std::nullopt;
  }
  if ((have_p && !fpm_matches(*t.p.fpm, t.p.ready)) || (have_d && !fpm_matches(*t.d.fpm, t.d.ready))) {
    t.p.reason = t.d.reason = "worker_count_mismatch";
    return std::nullopt;
  }
  std::string p_reason, d_reason;
  std::optional<std::int32_t> p_desired, d_desired;
  if (have_p) p_desired = decide(true, p_reason);
  if (have_d) d_desired = decide(false, d_reason);
  std::int32_t final_p = p_desired.value_or(t.p.ready), final_d = d_desired.value_or(t.d.ready);
  const std::int32_t original_p = final_p, original_d = final_d;
  if (config_.enable_throughput_scaling) {
    final_p = std::max(final_p, lower_bound_p_);
    final_d = std::max(final_d, lower_bound_d_);
  }
  const std::int32_t post_floor_p = final_p, post_floor_d = final_d;
  final_p = std::max<std::int32_t>(final_p, resolve_min_endpoint(config_, true));
  final_d = std::max<std::int32_t>(final_d, resolve_min_endpoint(config_, false));
  std::tie(final_p, final_d) = apply_global_budget(t, final_p, final_d);
  auto reason_of = [](std::int32_t fin, std::int32_t orig, std::int32_t post_floor, std::int32_t current) -> std::string {
    const bool floor_capped = post_floor > orig && orig < current;
    if (fin > current) return "scale_up";
    if (fin < current) return floor_capped ? "scale_down_capped_by_throughput" : "scale_down";
    return floor_capped ? "scale_down_capped_by_throughput" : "no_change";
  };
  t.p.reason = reason_of(final_p, original_p, post_floor_p, t.p.ready);
  t.d.reason = reason_of(final_d, original_d, post_floor_d, t.d.ready);
  if (final_p == t.p.ready && final_d == t.d.ready) {
    if (!p_reason.empty() && p_reason != "no_change") t.p.reason = p_reason;
    if (!d_reason.empty() && d_reason != "no_change") t.d.reason = d_reason;
    return std::nullopt;
  }
  return Proposal{final_p, final_d};
}

// load_scaling.py _agg_prefill_scaling.
std::optional<std::int32_t> DynamoPlanner::agg_prefill_scaling(Tick& t, std::string& reason) {
  Role& r = t.d;
  const PlannerPerfModel& m = *decode_model_;
  const std::int32_t n = r.ready;
  const double sensitivity = config_.load_scaling_down_sensitivity / 100.0;
  const double consolidation = n > 1 ? static_cast<double>(n) / static_cast<double>(n - 1) : 1.0;
  std::vector<double> estimates;
  bool can_scale_down = n > 1, refused = false;
  for (const ForwardPassMetrics& f : *r.fpm) {
    const auto est = m.estimate_queued_prefill_time(f);
    if (est) estimates.push_back(*est * 1000);
    if (!can_scale_down) continue;
    const auto own = m.estimate_queued_prefill_time(f, 0.0, consolidation, true);
    const auto post = m.estimate_queued_prefill_time(f, consolidation, consolidation, true);
    if (!own || !post) {
      can_scale_down = false;
      continue;
    }
    const double own_ms = *own * 1000;
    const double budget_ms = (config_.ttft_ms - own_ms) * sensitivity;
    const double induced_ms = *post * 1000 - own_ms;
    if (budget_ms <= 0 || induced_ms >= budget_ms) {
      can_scale_down = false;
      refused = true;
    }
  }
  std::string list;
  for (double v : estimates) list += std::string(list.empty() ? "" : ", ") + fixed(v, 1);
  r.text += " Agg TTFT estimates [" + list + "] ms against " + fixed(config_.ttft_ms, 1) + " ms.";
  const auto decision = scale_decision(estimates, config_.ttft_ms, n, resolve_min_endpoint(config_, false), can_scale_down, reason);
  if (!decision && refused) {
    reason = "scale_down_refused_consolidation";
    return n;  // a refusal, not a missing signal
  }
  return decision;
}

// load_scaling.py _agg_decode_scaling.
std::optional<std::int32_t> DynamoPlanner::agg_decode_scaling(Tick& t, std::string& reason) {
  Role& r = t.d;
  const PlannerPerfModel& m = *decode_model_;
  const std::int32_t n = r.ready;
  const double sensitivity = config_.load_scaling_down_sensitivity / 100.0;
  const double consolidation = n > 1 ? static_cast<double>(n) / static_cast<double>(n - 1) : 1.0;
  std::vector<double> estimates;
  bool can_scale_down = n > 1, refused = false;
  for (const ForwardPassMetrics& f : *r.fpm) {
    const auto est = m.estimate_scheduled_decode_itl(f);
    if (est) estimates.push_back(*est * 1000 / 1.0);
    if (!can_scale_down) continue;
    const auto post_kv = static_cast<std::int64_t>(
        static_cast<double>(f.sum_decode_kv_tokens + f.queued_decode_kv_tokens + f.queued_prefill_tokens) * consolidation);
    if (r.limits.max_kv_tokens > 0 && post_kv >= r.limits.max_kv_tokens) {
      can_scale_down = false;
      refused = true;
      continue;
    }
    const auto post = m.estimate_scheduled_decode_itl(f, consolidation, true, true);
    if (!post) {
      can_scale_down = false;
    } else if (*post * 1000 / 1.0 >= config_.itl_ms * sensitivity) {
      can_scale_down = false;
      refused = true;
    }
  }
  std::string list;
  for (double v : estimates) list += std::string(list.empty() ? "" : ", ") + fixed(v, 1);
  r.text += " Agg ITL estimates [" + list + "] ms against " + fixed(config_.itl_ms, 1) + " ms.";
  const auto decision = scale_decision(estimates, config_.itl_ms, n, resolve_min_endpoint(config_, false), can_scale_down, reason);
  if (!decision && refused) {
    reason = "scale_down_refused_consolidation";
    return n;
  }
  return decision;
}

// load_scaling.py _advance_load_agg.
std::optional<DynamoPlanner::Proposal> DynamoPlanner::load_tick_agg(Tick& t) {
  Role& r = t.d;
  const std::int32_t n = r.ready;
  if (r.fpm->empty()) {
    r.reason = "no_fpm_data";
    return std::nullopt;
  }
  if (scaling_in_progress(t, false)) {
    r.reason = "scaling_in_progress";
    r.text += " Load: scaling in progress (" + std::to_string(n) + " ready of " + std::to_string(r.expected) + "), observing only.";
    return std::nullopt;
  }
  if (!fpm_matches(*r.fpm, n)) {
    r.reason = "worker_count_mismatch";
    return std::nullopt;
  }
  const int min_endpoint = resolve_min_endpoint(config_, false);
  if (config_.optimization_target != OptimizationTarget::Sla) {
    std::string reason;
    auto desired = easy_decision(t, false, reason);
    if (!desired) {
      r.reason = reason;
      return std::nullopt;
    }
    const std::int32_t original = *desired;
    std::int32_t d = std::max<std::int32_t>(*desired, min_endpoint);
    if (config_.enable_throughput_scaling) d = std::max(d, lower_bound_d_);
    d = apply_single_budget(t, d, false);
    r.reason = d < n ? (d > original ? "scale_down_capped_by_throughput" : "scale_down") : d > n ? "scale_up" : "no_change";
    return Proposal{std::nullopt, d};
  }
  if (!decode_model_->has_sufficient_data()) {
    r.reason = "insufficient_data";
    r.text += " Agg perf model: insufficient data (" + std::to_string(decode_model_->num_observations()) + "/" +
              std::to_string(config_.load_min_observations) + ").";
    return std::nullopt;
  }
  std::string p_reason, d_reason;
  std::optional<std::int32_t> p_desired;
  if (r.limits.max_num_batched_tokens > 0) p_desired = agg_prefill_scaling(t, p_reason);
  const bool p_refused = p_reason == "scale_down_refused_consolidation";
  const auto d_desired = agg_decode_scaling(t, d_reason);
  const bool d_refused = d_reason == "scale_down_refused_consolidation";
  std::int32_t desired;
  if (p_desired && *p_desired > n) {
    desired = *p_desired;
  } else if (d_desired && *d_desired > n) {
    desired = *d_desired;
  } else if (!p_desired && d_desired && *d_desired < n) {
    desired = *d_desired;
  } else if (p_desired && *p_desired < n && d_desired && *d_desired < n) {
    desired = std::max(*p_desired, *d_desired);
  } else {
    desired = n;
  }
  const std::int32_t original = desired;
  desired = std::max<std::int32_t>(desired, min_endpoint);
  if (config_.enable_throughput_scaling) desired = std::max(desired, lower_bound_d_);
  desired = apply_single_budget(t, desired, false);
  const bool floor_capped = desired > original && original < n;
  if (desired == n) {
    r.reason = (p_refused || d_refused) && !floor_capped ? "scale_down_refused_consolidation"
               : floor_capped                             ? "scale_down_capped_by_throughput"
                                                          : "no_change";
    return std::nullopt;
  }
  r.reason = desired < n ? (floor_capped ? "scale_down_capped_by_throughput" : "scale_down") : "scale_up";
  return Proposal{std::nullopt, desired};
}

ServiceDecision DynamoPlanner::sync(const ServiceSnapshot& snap, Micros now, const LogPolicy& log) {
  ServiceDecision out;
  out.desired.assign(snap.pools.size(), std::nullopt);
  out.published.assign(snap.pools.size(), {});
  Tick t;
  t.now = now;
  const PlannerMode mode = config_.mode;
  t.has_p = mode == PlannerMode::Disagg || mode == PlannerMode::Prefill;
  t.has_d = mode != PlannerMode::Prefill;
  const ServiceRole d_role = mode == PlannerMode::Agg ? ServiceRole::Aggregated : ServiceRole::Decode;
  for (std::size_t i = 0; i < snap.pools.size(); ++i) {
    const ServicePool& pool = snap.pools[i];
    Role* r = nullptr;
    if (t.has_p && pool.role == ServiceRole::Prefill && t.p.index < 0) r = &t.p;
    if (t.has_d && pool.role == d_role && t.d.index < 0) r = &t.d;
    if (!r) continue;
    r->index = static_cast<int>(i);
    r->name = pool.name;
    const PoolCounts c = pool_counts(pool.snapshot);
    r->ready = c.ready;
    r->expected = c.spec;
    // get_service_replica_status: stable means desired == updated == ready (updated: the pods of the
    // current template, here every pod not being deleted).
    r->unstable = !(c.spec == c.existing && c.existing == c.ready);
    r->gpus = std::max(1, pool.gpus_per_replica);
    r->limits = pool.engine;
    r->fpm = &pool.fpm;
  }
  auto record = [&](const Role& r, std::int32_t desired, const std::string& reason, const std::string& text) {
    if (!log.decisions || r.index < 0) return;
    DecisionRecord rec;
    rec.t_s = micros_to_seconds(now);
    rec.controller = name();
    rec.pool = r.name;
    rec.current_replicas = r.ready;
    rec.desired_replicas = desired;
    rec.reason = reason;
    rec.explanation = text;
    if (log.detail) {
      Json d = t.detail;
      for (const auto& [k, v] : r.detail.items()) d[k] = v;
      d["ready"] = r.ready;
      d["expected"] = r.expected;
      d["lower_bound"] = &r == &t.p ? lower_bound_p_ : lower_bound_d_;
      rec.detail = std::move(d);
    }
    out.log.push_back(std::move(rec));
  };
  if ((t.has_p && t.p.index < 0) || (t.has_d && t.d.index < 0)) {
    const std::string missing = t.has_p && t.p.index < 0 ? "prefill" : (mode == PlannerMode::Agg ? "aggregated" : "decode");
    if (log.decisions && log.every_sync) {
      DecisionRecord rec;
      rec.t_s = micros_to_seconds(now);
      rec.controller = name();
      rec.reason = "no_" + missing + "_pool";
      rec.explanation = std::string("mode ") + planner_mode_name(mode) + " needs a " + missing + " pool in the service; none found, nothing done.";
      out.log.push_back(std::move(rec));
    }
    return out;
  }
  if (prefill_model_ && t.has_p) prefill_model_->set_limits(t.p.limits);
  if (decode_model_ && t.has_d) decode_model_->set_limits(t.d.limits);

  const bool load_due = now - last_load_ >= load_interval_;
  const bool throughput_due = config_.enable_throughput_scaling && now - last_throughput_ >= throughput_interval_;
  if (load_due) last_load_ = now;
  if (throughput_due) last_throughput_ = now;

  // engine_adapter.py: with the sla target the FPMs of every load tick train the perf model, whether or
  // not load-based scaling is on.
  if (config_.optimization_target == OptimizationTarget::Sla && load_due) {
    if (mode == PlannerMode::Agg) {
      decode_model_->add_observations(*t.d.fpm);
    } else {
      if (t.has_p && prefill_model_) prefill_model_->add_observations(*t.p.fpm);
      if (t.has_d && decode_model_) decode_model_->add_observations(*t.d.fpm);
    }
  }

  std::optional<Proposal> proposal;
  bool throughput_ran = false;
  if (throughput_due) {
    throughput_ran = true;
    std::string why;
    const auto traffic = traffic_observation(snap.frontend, micros_to_seconds(throughput_interval_), &why);
    if (!traffic) {
      t.p.reason = t.d.reason = "no_traffic_data";
      t.text += " Throughput tick: " + why + "; no prediction.";
    } else {
      // BuiltinLoadPredict._observe_load: an idle window carries the last observed request shape forward.
      num_req_predictor_->add_data_point(traffic->num_req);
      if (traffic->num_req > 0) {
        seen_live_traffic_ = true;
        if (std::isfinite(traffic->isl)) last_observed_isl_ = traffic->isl;
        if (std::isfinite(traffic->osl)) last_observed_osl_ = traffic->osl;
      }
      double isl = traffic->isl, osl = traffic->osl;
      if (traffic->num_req == 0 && seen_live_traffic_) {
        isl = last_observed_isl_.value_or(0);
        osl = last_observed_osl_.value_or(0);
      }
      if (std::isfinite(isl)) isl_predictor_->add_data_point(isl);
      if (std::isfinite(osl)) osl_predictor_->add_data_point(osl);
      const double next_num_req = num_req_predictor_->predict_next();
      const double next_isl = isl_predictor_->predict_next();
      const double next_osl = osl_predictor_->predict_next();
      t.text += " Throughput tick: the frontend saw " + num(traffic->num_req) + " requests in " + num(traffic->duration_s) +
                " s (ISL " + num(traffic->isl) + ", OSL " + num(traffic->osl) + ", TTFT " + fixed(traffic->ttft_ms, 1) + " ms, ITL " +
                fixed(traffic->itl_ms, 1) + " ms). Predicted next interval (" + load_predictor_name(config_.load_predictor) +
                "): " + num(next_num_req) + " requests [" + num_req_predictor_->explain() + "], ISL " + num(next_isl) + " [" +
                isl_predictor_->explain() + "], OSL " + num(next_osl) + " [" + osl_predictor_->explain() + "].";
      t.detail["observed_num_req"] = traffic->num_req;
      t.detail["observed_isl"] = traffic->isl;
      t.detail["observed_osl"] = traffic->osl;
      t.detail["predicted_num_req"] = next_num_req;
      t.detail["predicted_isl"] = next_isl;
      t.detail["predicted_osl"] = next_osl;
      t.detail["demand_rps"] = next_num_req / traffic->duration_s;
      proposal = throughput_tick(t, *traffic, next_num_req, next_isl, next_osl);
    }
  }
  bool load_ran = false;
  if (load_due && config_.enable_load_scaling) {
    load_ran = true;
    const auto load = mode == PlannerMode::Agg ? load_tick_agg(t) : load_tick(t);
    if (load) proposal = load;  // with load scaling on, throughput only set the floors
  }

  // engine_adapter.py _project_scale_to (power-awareness off): the proposal over the ready counts, the
  // min_endpoint floor when a role is below it and nothing is rolling out, no action when nothing
  // changes, then the final GPU-budget clamp.
  std::optional<std::int32_t> num_p, num_d;
  if (t.has_p) num_p = proposal && proposal->p ? *proposal->p : t.p.ready;
  if (t.has_d) num_d = proposal && proposal->d ? *proposal->d : t.d.ready;
  const bool deployment_scaling = (t.has_p && (t.p.unstable || t.p.ready != t.p.expected)) || (t.has_d && (t.d.unstable || t.d.ready != t.d.expected));
  const int min_p = resolve_min_endpoint(config_, true), min_d = resolve_min_endpoint(config_, false);
  const bool p_floor = t.has_p && !deployment_scaling && t.p.ready < min_p;
  const bool d_floor = t.has_d && !deployment_scaling && t.d.ready < min_d;
  if (p_floor) num_p = std::max<std::int32_t>(num_p.value_or(0), min_p);
  if (d_floor) num_d = std::max<std::int32_t>(num_d.value_or(0), min_d);
  auto unchanged = [&]() { return (!num_p || *num_p == t.p.ready) && (!num_d || *num_d == t.d.ready); };
  bool act = !unchanged();
  if (act) {
    if (mode == PlannerMode::Prefill) {
      num_p = proportional_clamp_single(std::max(*num_p, min_p), t.p.gpus, config_.min_gpu_budget, config_.max_gpu_budget, min_p);
    } else if (mode == PlannerMode::Decode || mode == PlannerMode::Agg) {
      num_d = proportional_clamp_single(std::max(*num_d, min_d), t.d.gpus, config_.min_gpu_budget, config_.max_gpu_budget, min_d);
    } else {
      std::tie(*num_p, *num_d) = proportional_clamp_pair(std::max(*num_p, min_p), std::max(*num_d, min_d), t.p.gpus, t.d.gpus,
                                                         config_.min_gpu_budget, config_.max_gpu_budget, min_p, min_d);
    }
    act = !unchanged();
  }
  if (act) {
    if (num_p) out.desired[static_cast<std::size_t>(t.p.index)] = *num_p;
    if (num_d) out.desired[static_cast<std::size_t>(t.d.index)] = *num_d;
  }

  // One record per pool for every throughput tick, for load ticks that act, and for every tick when
  // the run logs every sync.
  if (throughput_ran || act || (log.every_sync && load_ran)) {
    for (Role* r : {&t.p, &t.d}) {
      if (r->index < 0) continue;
      const bool is_p = r == &t.p;
      const std::optional<std::int32_t>& target = is_p ? num_p : num_d;
      const std::int32_t desired = act && target ? *target : r->ready;
      std::string text = std::string("Dynamo planner (") + planner_mode_name(mode) + ", target " +
                         optimization_target_name(config_.optimization_target) + ") for the " +
                         (mode == PlannerMode::Agg ? "aggregated" : is_p ? "prefill" : "decode") + " pool " + r->name + ": " +
                         std::to_string(r->ready) + " ready of " + std::to_string(r->expected) + " desired." + t.text + r->text;
      if (act && target) {
        text += " Set replicas " + std::to_string(r->expected) + " → " + std::to_string(*target) + ".";
      } else {
        text += " No change.";
      }
      const std::string reason = r->reason.empty() ? (throughput_ran ? "throughput" : "load") : r->reason;
      record(*r, desired, reason, text);
    }
  }
  return out;
}

}  // namespace gpuscale::dynamo
