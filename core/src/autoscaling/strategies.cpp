// The replica-autoscaling strategies as the real objects they stand for: each preset expands to an
// autoscaling/v2 HorizontalPodAutoscalerSpec (for queue depth, the HPA a KEDA ScaledObject generates).
#include <cmath>

#include "sim/simulation.hpp"

namespace gpuscale {

namespace {

// A Kubernetes quantity string in milli-units ("80" stays readable, 0.7 → "700m").
std::string quantity(double value) {
  auto milli = static_cast<long long>(std::llround(value * 1000));
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  return std::to_string(milli) + "m";
}

Json pods_metric(const char* name, double target) {
  return Json{{"type", "Pods"},
              {"pods", {{"metric", {{"name", name}}}, {"target", {{"type", "AverageValue"}, {"averageValue", quantity(target)}}}}}};
}

}  // namespace

Json autoscaler_hpa_spec(const AutoscalerConfig& c) {
  if (c.strategy == "fixed") return nullptr;
  if (c.strategy == "custom") return c.hpa_spec;
  Json metric;
  if (c.strategy == "gpu_util") {
    // DCGM_FI_DEV_GPU_UTIL through prometheus-adapter as a Pods metric: average duty cycle, percent.
    metric = pods_metric("DCGM_FI_DEV_GPU_UTIL", c.target > 0 ? c.target : 80);
  } else if (c.strategy == "gpu_memory") {
    // DCGM_FI_DEV_FB_USED (MiB per GPU); 60000 MiB is about 73 % of an 80 GB H100.
    metric = pods_metric("DCGM_FI_DEV_FB_USED", c.target > 0 ? c.target : 60000);
  } else if (c.strategy == "kv_cache") {
    // vllm:kv_cache_usage_perc is a fraction 0-1 despite its name.
    metric = pods_metric("vllm:kv_cache_usage_perc", c.target > 0 ? c.target : 0.7);
  } else if (c.strategy == "http_concurrency") {
    // KEDA HTTP Add-on: its interceptor proxies every request and counts those in flight (held while
    // the app scales from zero, or forwarded and not yet answered); its external scaler gives KEDA that
    // count, and KEDA's HPA targets an average per replica (the add-on's default target is 100).
    // keda.sh/http-add-on "Scaling" (concurrency; desiredReplicas = ceil(concurrency / target)).
    metric = Json{{"type", "External"},
                  {"external",
                   {{"metric", {{"name", "interceptor_concurrency"}}},
                    {"target", {{"type", "AverageValue"}, {"averageValue", quantity(c.target > 0 ? c.target : 100)}}}}}};
  } else {
    // KEDA ScaledObject, Prometheus trigger `sum(vllm:num_requests_waiting)`, metricType AverageValue
    // (KEDA's default): KEDA generates this External metric (it names it s0-prometheus).
    metric = Json{{"type", "External"},
                  {"external",
                   {{"metric", {{"name", "vllm:num_requests_waiting"}}},
                    {"target", {{"type", "AverageValue"}, {"averageValue", quantity(c.target > 0 ? c.target : 5)}}}}}};
  }
  Json spec{{"scaleTargetRef", {{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "vllm"}}},
            {"minReplicas", c.min_replicas},
            {"maxReplicas", c.max_replicas},
            {"metrics", Json::array({metric})}};
  if (!c.behavior.is_null()) spec["behavior"] = c.behavior;
  return spec;
}

}  // namespace gpuscale
