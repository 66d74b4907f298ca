// The replica-autoscaling strategies as the real objects they stand for: each preset is an
// autoscaling/v2 HorizontalPodAutoscalerSpec (for the KEDA ones, the HPA a ScaledObject generates).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "autoscaling/hpa.hpp"
#include "io/json_reader.hpp"

namespace gpuscale {

enum class ScalerStrategy : std::uint8_t { Fixed, GpuUtil, GpuMemory, QueueDepth, KvCache, HttpConcurrency, Custom };
inline constexpr Named<ScalerStrategy> kScalerStrategies[] = {
    {"fixed", ScalerStrategy::Fixed},         {"gpu_util", ScalerStrategy::GpuUtil},
    {"gpu_memory", ScalerStrategy::GpuMemory}, {"queue_depth", ScalerStrategy::QueueDepth},
    {"kv_cache", ScalerStrategy::KvCache},     {"http_concurrency", ScalerStrategy::HttpConcurrency},
    {"custom", ScalerStrategy::Custom}};
inline const char* to_string(ScalerStrategy s) { return name_of(s, kScalerStrategies); }
// The strategies that stand for a KEDA ScaledObject (and so may scale to zero through KEDA's operator).
inline bool is_keda(ScalerStrategy s) { return s == ScalerStrategy::QueueDepth || s == ScalerStrategy::HttpConcurrency; }

// The HPA a preset strategy (not Fixed, not Custom) stands for, scaling the Deployment `deployment`
// between min and max replicas; target 0 picks the strategy's default target.
hpa::HorizontalPodAutoscalerSpec preset_hpa_spec(ScalerStrategy strategy, const std::string& deployment, std::int32_t min_replicas,
                                                 std::int32_t max_replicas, double target,
                                                 std::optional<hpa::HorizontalPodAutoscalerBehavior> behavior);

}  // namespace gpuscale
