// The replica-autoscaling strategies (see strategies.hpp).
#include "autoscaling/strategies.hpp"

#include <cmath>

namespace gpuscale {

namespace {

hpa::MetricSpec average_value_metric(hpa::MetricSourceType type, const char* name, double target) {
  hpa::MetricSpec m;
  m.type = type;
  m.metric.name = name;
  m.target.type = hpa::MetricTargetType::AverageValue;
  m.target.average_value_milli = static_cast<std::int64_t>(std::llround(target * 1000));  // a quantity in milli-units
  return m;
}

}  // namespace

hpa::HorizontalPodAutoscalerSpec preset_hpa_spec(ScalerStrategy strategy, const std::string& deployment, std::int32_t min_replicas,
                                                 std::int32_t max_replicas, double target,
                                                 std::optional<hpa::HorizontalPodAutoscalerBehavior> behavior) {
  using hpa::MetricSourceType;
  const auto or_default = [&](double d) { return target > 0 ? target : d; };
  hpa::MetricSpec metric;
  switch (strategy) {
    case ScalerStrategy::GpuUtil:
      // DCGM_FI_DEV_GPU_UTIL through prometheus-adapter as a Pods metric: average duty cycle, percent.
      metric = average_value_metric(MetricSourceType::Pods, "DCGM_FI_DEV_GPU_UTIL", or_default(80));
      break;
    case ScalerStrategy::GpuMemory:
      // DCGM_FI_DEV_FB_USED (MiB per GPU); 60000 MiB is about 73 % of an 80 GB H100.
      metric = average_value_metric(MetricSourceType::Pods, "DCGM_FI_DEV_FB_USED", or_default(60000));
      break;
    case ScalerStrategy::KvCache:
      // vllm:kv_cache_usage_perc is a fraction 0-1 despite its name.
      metric = average_value_metric(MetricSourceType::Pods, "vllm:kv_cache_usage_perc", or_default(0.7));
      break;
    case ScalerStrategy::TtftP99:
      // A latency: target type Value (ratio = P99 / target), not an average per pod; 2 s by default,
      // the default TTFT SLO.
      metric.type = MetricSourceType::External;
      metric.metric.name = kTtftP99Metric;
      metric.target.type = hpa::MetricTargetType::Value;
      metric.target.value_milli = static_cast<std::int64_t>(std::llround(or_default(2) * 1000));
      break;
    case ScalerStrategy::Goodput:
      // Requests that miss the SLO per second, averaged over the replicas: 0.05/s per replica by default.
      metric = average_value_metric(MetricSourceType::External, kSloViolationMetric, or_default(0.05));
      break;
    case ScalerStrategy::HttpConcurrency:
      // KEDA HTTP Add-on: its interceptor proxies every request and counts those in flight (held while
      // the app scales from zero, or forwarded and not yet answered); its external scaler gives KEDA that
      // count, and KEDA's HPA targets an average per replica (the add-on's default target is 100).
      // keda.sh/http-add-on "Scaling" (concurrency; desiredReplicas = ceil(concurrency / target)).
      metric = average_value_metric(MetricSourceType::External, "interceptor_concurrency", or_default(100));
      break;
    default:
      // KEDA ScaledObject, Prometheus trigger `sum(vllm:num_requests_waiting)`, metricType AverageValue
      // (KEDA's default): KEDA generates this External metric (it names it s0-prometheus).
      metric = average_value_metric(MetricSourceType::External, "vllm:num_requests_waiting", or_default(5));
      break;
  }
  hpa::HorizontalPodAutoscalerSpec spec;
  spec.scale_target_ref = {"apps/v1", "Deployment", deployment};
  spec.min_replicas = min_replicas;
  spec.max_replicas = max_replicas;
  spec.metrics.push_back(metric);
  spec.behavior = std::move(behavior);
  return spec;
}

}  // namespace gpuscale
