// An llm-d-WVA-like model-level autoscaler: the Workload Variant Autoscaler's saturation engine (the V1
// percentage-based analyzer, its default) for the variants (Deployments) of one model.
//
// Ported from llm-d/llm-d-workload-variant-autoscaler (main, 2026-02-19):
//  - internal/saturation/analyzer.go (AnalyzeModelSaturation, analyzeVariant, shouldScaleUp,
//    isScaleDownSafe, CalculateSaturationTargets) and internal/saturation/constants.go
//  - internal/interfaces/saturation_scaling.go (SaturationScalingConfig, defaults in
//    docs/saturation-scaling-config.md and config/manager/configmap-saturation-scaling.yaml)
//  - internal/engines/saturation/engine.go (optimizeV1 for one model: prepareModelData,
//    BuildVariantStates, convertSaturationTargetsToDecisions, applySaturationDecisions; the polling
//    executor's 30 s interval)
//  - internal/engines/pipeline/enforcer.go (ensureMinimumReplicas, scale-to-zero off)
//  - internal/collector/replica_metrics.go and registration/saturation.go (max_over_time[1m] per pod;
//    a missing series reads 0; pods the API cannot find are dropped)
//  - internal/actuator/actuator.go, internal/metrics/metrics.go, internal/constants/metrics.go (the
//    metrics it emits for the variant's HPA: wva_desired_replicas, wva_current_replicas,
//    wva_desired_ratio, labels variant_name, namespace, accelerator_type)
//  - docs/integrations/hpa-integration.md, config/samples/hpa-integration.yaml (the HPA that reads them)
// WVA does not set replicas itself: it publishes wva_desired_replicas and the variant's HPA (External
// metric, AverageValue target 1) scales the Deployment, with the HPA's minReplicas/maxReplicas as the
// variant's min/max. WVA's own floors: a variant at 1 is not scaled down, and with scale-to-zero off
// the model keeps at least one replica (on its cheapest variant).
//
// Not ported: the V2 token-based analyzer (analyzerName "saturation", opt-in), the GPU limiter
// (enableLimiter, off by default), scale-to-zero (off by default; it needs the model's request count
// over a retention period), the queueing-model optimizer (commented out upstream). Upstream's Go maps
// make the variant order (and so the order of a floating-point sum) random; here variants are in name
// order and replicas in id order.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autoscaling/hpa.hpp"
#include "autoscaling/service_scaler.hpp"

namespace gpuscale::wva {

// saturation.DefaultVariantCost: the cost of a variant whose VariantAutoscaling sets none.
constexpr double kDefaultVariantCost = 10.0;
// saturation.MinNonSaturatedReplicasForScaleDown.
constexpr int kMinNonSaturatedReplicasForScaleDown = 2;

// A variant's HPA (docs/integrations/hpa-integration.md): the variant's min/max.
struct WvaVariantHpa {
  std::string pool;              // the Deployment (variant) it scales
  std::int32_t min_replicas = 1;  // minReplicas (unset in the sample: the API default 1)
  std::int32_t max_replicas = 10; // maxReplicas (the sample's 10)
};

// SaturationScalingConfig "default" entry, with upstream's defaults.
struct WvaConfig {
  double kv_cache_threshold = 0.80;  // kvCacheThreshold: a replica is saturated at KV usage ≥ this (fraction)
  double queue_length_threshold = 5; // queueLengthThreshold: … or at a waiting queue ≥ this (requests)
  double kv_spare_trigger = 0.10;    // kvSpareTrigger: scale up when the average spare KV < this
  double queue_spare_trigger = 3;    // queueSpareTrigger: … or the average spare queue < this (requests)
  // The saturation engine's polling interval: engine.go hard-codes 30 s (it reads GLOBAL_OPT_INTERVAL,
  // default 60 s, but does not apply it).
  double interval_s = 30;  // seconds
  std::vector<WvaVariantHpa> hpas;  // per variant; a pool without an entry gets the defaults
};

// "" if valid, else "<field>: <why>" (SaturationScalingConfig.Validate).
std::string wva_config_error(const WvaConfig& c);

// The HPA that reads wva_desired_replicas for one variant, as config/samples/hpa-integration.yaml
// writes it: External metric wva_desired_replicas{variant_name=<pool>}, target AverageValue 1,
// behavior scaleUp/scaleDown stabilizationWindowSeconds 0 and a Pods 10 / 15 s policy.
hpa::HorizontalPodAutoscalerSpec wva_hpa_spec(const WvaConfig& c, const std::string& pool);

// interfaces.ReplicaMetrics: what the collector returns for one pod.
struct ReplicaMetrics {
  std::string pod;
  std::string variant;
  std::string accelerator;
  double kv_cache_usage = 0;     // max_over_time[1m] of vllm:kv_cache_usage_perc (0 if the series is missing)
  std::int64_t queue_length = 0; // int(max_over_time[1m] of vllm:num_requests_waiting)
  double cost = kDefaultVariantCost;
};

struct VariantAnalysis {
  std::string variant, accelerator;
  double cost = kDefaultVariantCost;
  int replica_count = 0;  // replicas reporting metrics
  int non_saturated = 0;
  double avg_spare_kv = 0, avg_spare_queue = 0;
  double max_kv = 0;
  std::int64_t max_queue = 0;
  std::vector<std::string> saturated;  // pod names
};

struct ModelAnalysis {
  int total_replicas = 0;
  int non_saturated = 0;
  double avg_spare_kv = 0, avg_spare_queue = 0;
  bool should_scale_up = false;
  std::string scale_up_reason;
  bool scale_down_safe = false;
  double remaining_spare_kv = 0, remaining_spare_queue = 0;  // after spreading the load over N−1 (when N ≥ 2)
  std::vector<VariantAnalysis> variants;                    // in variant name order
};

// analyzer.go AnalyzeModelSaturation.
ModelAnalysis analyze_model_saturation(const std::vector<ReplicaMetrics>& metrics, const WvaConfig& c);

// interfaces.VariantReplicaState.
struct VariantState {
  std::string variant;
  int current = 0;  // Deployment status.replicas (spec.replicas if 0)
  int desired = 0;  // the VariantAutoscaling's status.desiredOptimizedAlloc.numReplicas (WVA's last output)
  int pending = 0;  // current − readyReplicas
};

// analyzer.go CalculateSaturationTargets: per variant in the analysis, its target. `why` (optional)
// receives the steps in words.
std::map<std::string, int> calculate_saturation_targets(const ModelAnalysis& a, const std::vector<VariantState>& states, std::string* why = nullptr);

// enforcer.go ensureMinimumReplicas (scale-to-zero off): a total of 0 keeps 1 on the cheapest variant
// (ties: the name first alphabetically). Returns true if it changed the targets.
bool ensure_minimum_replicas(std::map<std::string, int>& targets, const std::vector<VariantAnalysis>& variants);

class WvaScaler : public ServiceScaler {
 public:
  explicit WvaScaler(WvaConfig config);
  const char* name() const override { return "wva"; }
  Micros period() const override { return period_; }
  ServiceDecision sync(const ServiceSnapshot& snapshot, Micros now, const LogPolicy& log) override;

  // The VariantAutoscaling status WVA keeps per variant (desiredOptimizedAlloc).
  struct Alloc {
    int num_replicas = 0;
    std::string accelerator;  // "" = never set
  };
  const std::map<std::string, Alloc>& status() const { return status_; }

 private:
  WvaConfig config_;
  Micros period_;
  std::map<std::string, Alloc> status_;  // by variant (pool) name
};

}  // namespace gpuscale::wva
