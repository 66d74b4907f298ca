// The path a replica's metrics take to a query when metrics.pipeline is "realistic": dcgm-exporter's
// collections on its own clock, Prometheus's scrapes of each target at the target's own phase, and
// the instant query that prometheus-adapter (Pods metrics) or KEDA (External metrics) runs when the
// HPA asks. What a query returns is the last sample scraped before it, of a value collected before
// that scrape: seconds to tens of seconds old, at a phase unrelated to the HPA's 15 s sync
// (real-systems.md §11).
//
// Upstream, as ported here:
// - Prometheus scrapes every target once per scrape_interval at a fixed offset within it, a hash of the
//   target's labels and URL xor a per-server seed (prometheus/prometheus: scrape/target.go, offset()).
//   The lab draws that offset per target from the scenario seed (loop_phase).
// - dcgm-exporter collects the DCGM fields every --collect-interval (-c, default 30000 ms;
//   NVIDIA/dcgm-exporter: pkg/cmd/app.go, CLICollectInterval) and answers each scrape from what it last
//   collected, so DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_FB_USED change only at collection times. The
//   exporter runs per node, its clock started with it: the lab draws its phase per replica's exporter.
// - vLLM's /metrics gauges are read at the scrape itself (prometheus_client renders them on request).
// - prometheus-adapter runs its query at the moment the HPA asks (pmodel.Now(); its
//   --metrics-relist-interval only refreshes the list of series, not values:
//   kubernetes-sigs/prometheus-adapter: pkg/custom-provider/provider.go, buildQuery); KEDA's Prometheus
//   scaler queries with time=now (kedacore/keda: pkg/scalers/prometheus_scaler.go). An instant query
//   returns each series' newest sample within the lookback delta, 5 min by default
//   (--query.lookback-delta), and nothing for a series that went stale.
#pragma once
#include <cstdint>
#include <deque>
#include <string_view>

#include "kernel/time.hpp"
#include "metrics/scrape.hpp"

namespace gpuscale {

struct PipelineTiming {
  Micros scrape_interval = 15 * kMicrosPerSecond;   // Prometheus scrape_interval
  Micros collect_interval = 30 * kMicrosPerSecond;  // dcgm-exporter --collect-interval
  Micros query_delay = 0;                           // a scraped sample is visible to queries this much later
  Micros lookback = 300 * kMicrosPerSecond;         // Prometheus --query.lookback-delta (5m)
};

// A periodic loop's phase within `interval`, in [0, interval): drawn for `target` from `seed` (the same
// (seed, target) always gives the same phase; another target gets its own).
Micros loop_phase(std::uint64_t seed, std::string_view target, Micros interval);
// The newest instant <= t, and the first instant >= t, of the grid phase + k·interval.
Micros last_tick(Micros t, Micros phase, Micros interval);
Micros next_tick(Micros t, Micros phase, Micros interval);

// One dcgm-exporter collection of a replica's GPUs.
struct DcgmCollection {
  Micros at = 0;
  bool has_gpu_metrics = false;  // the pod held GPUs (the exporter maps GPUs to pods through the kubelet)
  std::int64_t gpu_util = 0;     // DCGM_FI_DEV_GPU_UTIL, percent
  double fb_used_mib = 0;        // DCGM_FI_DEV_FB_USED, MiB per GPU
};

// One Prometheus scrape of a replica's vLLM /metrics.
struct VllmScrape {
  Micros at = 0;
  bool up = false;  // the server answered (false: no server yet, or connection refused: no samples)
  std::int32_t waiting = 0, running = 0;
  double kv_usage = 0;
};

// What Prometheus holds of one replica's two targets (its dcgm-exporter and its vLLM server), and the
// exporter's last collections.
class TargetSeries {
 public:
  TargetSeries() = default;
  TargetSeries(Micros vllm_phase, Micros exporter_phase, Micros collect_phase)
      : vllm_phase_(vllm_phase), exporter_phase_(exporter_phase), collect_phase_(collect_phase) {}

  Micros vllm_phase() const { return vllm_phase_; }
  Micros exporter_phase() const { return exporter_phase_; }
  Micros collect_phase() const { return collect_phase_; }

  // Appended in time order; `now` is when (queries only come later, so older entries can go).
  void collect(const DcgmCollection& c, const PipelineTiming& t);
  void scrape_vllm(const VllmScrape& s, const PipelineTiming& t);

  // What an instant query at `now` returns for this replica: vLLM's gauges from the last visible
  // scrape of its server, DCGM's from the last visible scrape of its exporter, which serves the
  // exporter's last collection before that scrape. The times of each are in the result.
  ScrapedReplica query(std::uint32_t replica, Micros now, const PipelineTiming& t) const;

 private:
  void prune(Micros now, const PipelineTiming& t);
  Micros vllm_phase_ = 0, exporter_phase_ = 0, collect_phase_ = 0;
  std::deque<VllmScrape> vllm_;          // oldest first; the front is the newest a query can still need
  std::deque<DcgmCollection> collected_;  // oldest first
};

}  // namespace gpuscale
