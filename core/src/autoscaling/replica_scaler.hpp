// Replica autoscaling behind one interface. A ReplicaScaler decides a pool's replica count: woken at its
// own period, it reads a snapshot of the pool (its pods as the API shows them, what the last scrape saw)
// and returns the count it wants plus the decision records that explain it. It never touches the
// pool; the simulation applies the count through the pool's ReplicaSet. Implementations: the HPA
// (autoscaling/v2, also the HPA a KEDA ScaledObject generates) and KEDA's operator loop that scales
// 0 ↔ 1 (below); "fixed" pools have none. The registry that builds a pool's scalers from its
// configuration is sim/scalers.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoscaling/hpa.hpp"
#include "kernel/decision.hpp"
#include "kernel/time.hpp"
#include "metrics/scrape.hpp"

namespace gpuscale {

// A replica as its pod looks through the API at a sync.
struct ReplicaView {
  enum class State : std::uint8_t {
    Pending,   // unscheduled: no container yet (only PodScheduled=False)
    Starting,  // running, not Ready (loading weights, warming up)
    Ready,     // serving
    Draining,  // being deleted (deletionTimestamp set), still finishing what it holds
  };
  std::uint32_t id = 0;
  State state = State::Pending;
  Micros started_at = -1;  // container start (-1: Pending)
  Micros ready_at = -1;    // when it turned Ready (-1: never)
};

struct ScalerSnapshot {
  std::string pod_prefix;              // the pool's pods are named <prefix>-<id>
  std::int32_t spec_replicas = 0;      // the Deployment's spec.replicas (scale.spec.replicas)
  std::vector<ReplicaView> replicas;   // not yet gone, in creation order (ids ascending)
  const std::vector<ScrapedReplica>* scraped = nullptr;  // what the last scrape saw of the pool's replicas
  std::int64_t in_flight = 0;          // the pool's requests that arrived and are neither answered nor abandoned
  std::int64_t cpu_request_milli = 0;  // the replicas' cpu request
  double scrape_interval_s = 15;       // seconds a scraped sample covers
  bool metric_ages = false;            // the values came through a lagging pipeline: log their ages
  // External metrics published for the pool now: the lab's rules (P99 TTFT, SLO violations) and a
  // model-level autoscaler's (WVA's wva_desired_replicas). No value: the query returned nothing.
  struct External {
    std::string name;
    std::optional<double> value;
    std::string why;  // without a value
  };
  std::vector<External> external;
  // The replica with this id, or nullptr if it is gone.
  const ReplicaView* find(std::uint32_t id) const;
};

// What the run's output asks to be logged.
struct LogPolicy {
  bool decisions = true;   // output.decisions
  bool every_sync = true;  // output.hpa_syncs "all"; false: only syncs that change the replica count
  bool detail = false;     // output.decision_detail: each HPA sync's full structured decision
};

struct ScalerDecision {
  std::optional<std::int32_t> desired;  // set the replica count to this (nullopt: leave it)
  std::vector<DecisionRecord> log;
};

class ReplicaScaler {
 public:
  virtual ~ReplicaScaler() = default;
  virtual const char* name() const = 0;
  virtual Micros period() const = 0;  // between syncs; the first sync is one period after the start
  virtual ScalerDecision sync(const ScalerSnapshot& snapshot, Micros now, const LogPolicy& log) = 0;
};

// The metrics the simulated cluster serves an HPA: Pods metrics through prometheus-adapter (DCGM
// exporter and vLLM series per pod) and External metrics through KEDA (Prometheus sums and the HTTP
// Add-on's interceptor count). No CPU/memory usage (Resource), no Object metrics.
extern const char* const kServedPodsMetrics[5];
extern const char* const kServedExternalMetrics[6];
// "" if the simulation can serve the metric `m` asks for; else why not and what it serves. An HPA
// reading any other metric could only report FailedGet…Metric at every sync.
std::string unserved_metric(const hpa::MetricSpec& m);
// "DCGM_FI_DEV_GPU_UTIL, ...": the Pods metrics served, for messages.
std::string served_pods_metrics_text();

// The Kubernetes HPA controller for one HPA object: its spec, the controller flags, its memory.
class HpaScaler : public ReplicaScaler {
 public:
  HpaScaler(hpa::HorizontalPodAutoscalerSpec spec, hpa::ControllerFlags flags, Micros period);
  const char* name() const override { return "hpa"; }
  Micros period() const override { return period_; }
  ScalerDecision sync(const ScalerSnapshot& snapshot, Micros now, const LogPolicy& log) override;

 private:
  hpa::Observed observe(const ScalerSnapshot& snapshot, Micros now) const;
  hpa::HorizontalPodAutoscalerSpec spec_;
  hpa::ControllerFlags flags_;
  Micros period_;
  hpa::Memory memory_;
  std::vector<std::string> pod_metric_names_;  // the Pods metrics the HPA reads
};

// KEDA's operator for a ScaledObject with minReplicaCount 0: the 0 ↔ 1 phase (real-systems.md §2).
struct KedaSettings {
  bool http_trigger = false;        // the KEDA HTTP Add-on's interceptor count, else sum(vllm:num_requests_waiting)
  double activation_threshold = 0;  // activationThreshold
  Micros polling_interval = 30 * kMicrosPerSecond;
  Micros cooldown_period = 300 * kMicrosPerSecond;
};

class KedaOperator : public ReplicaScaler {
 public:
  explicit KedaOperator(KedaSettings settings) : settings_(settings) {}
  const char* name() const override { return "keda"; }
  Micros period() const override { return settings_.polling_interval; }
  ScalerDecision sync(const ScalerSnapshot& snapshot, Micros now, const LogPolicy& log) override;

 private:
  KedaSettings settings_;
  // The ScaledObject's status.lastActiveTime. Lab choice: it was last active when the run starts (the
  // service was serving).
  Micros last_active_ = 0;
};

}  // namespace gpuscale
