// The replica-autoscaling strategies as the real objects they stand for: each preset is an
// autoscaling/v2 HorizontalPodAutoscalerSpec (for the KEDA ones, the HPA a ScaledObject generates).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "autoscaling/hpa.hpp"
#include "io/json_reader.hpp"

namespace gpuscale {

// TtftP99 and Goodput are HPAs on External metrics the lab's Prometheus rules compute (the pool's
// P99 time to first token over a minute; its requests that missed the SLO per second); Planner hands
// the pool to its model's Dynamo-like planner (no HPA: the planner sets the replicas); Wva gives it
// the HPA that follows its model's WVA (wva_desired_replicas).
enum class ScalerStrategy : std::uint8_t { Fixed, GpuUtil, GpuMemory, QueueDepth, KvCache, HttpConcurrency, Custom, TtftP99, Goodput, Planner, Wva };
inline constexpr Named<ScalerStrategy> kScalerStrategies[] = {
    {"fixed", ScalerStrategy::Fixed},         {"gpu_util", ScalerStrategy::GpuUtil},
    {"gpu_memory", ScalerStrategy::GpuMemory}, {"queue_depth", ScalerStrategy::QueueDepth},
    {"kv_cache", ScalerStrategy::KvCache},     {"http_concurrency", ScalerStrategy::HttpConcurrency},
    {"custom", ScalerStrategy::Custom},       {"ttft_p99", ScalerStrategy::TtftP99},
    {"goodput", ScalerStrategy::Goodput},     {"planner", ScalerStrategy::Planner},
    {"wva", ScalerStrategy::Wva}};
inline const char* to_string(ScalerStrategy s) { return name_of(s, kScalerStrategies); }
// The strategies that stand for a KEDA ScaledObject (and so may scale to zero through KEDA's operator).
inline bool is_keda(ScalerStrategy s) { return s == ScalerStrategy::QueueDepth || s == ScalerStrategy::HttpConcurrency; }

// The External metrics the lab's Prometheus rules serve per pool (prometheus-adapter): the P99 of the
// pool's servers' vllm:time_to_first_token_seconds over the last minute (seconds), and the rate at
// which the requests it served missed the TTFT or ITL SLO, or were dropped, over the last minute (per second).
inline constexpr const char* kTtftP99Metric = "vllm:time_to_first_token_seconds:p99_1m";
inline constexpr const char* kSloViolationMetric = "slo_violations:rate1m";

// The HPA a preset strategy (not Fixed, not Custom, not Planner, not Wva) stands for, scaling the Deployment `deployment`
// between min and max replicas; target 0 picks the strategy's default target.
hpa::HorizontalPodAutoscalerSpec preset_hpa_spec(ScalerStrategy strategy, const std::string& deployment, std::int32_t min_replicas,
                                                 std::int32_t max_replicas, double target,
                                                 std::optional<hpa::HorizontalPodAutoscalerBehavior> behavior);

}  // namespace gpuscale
