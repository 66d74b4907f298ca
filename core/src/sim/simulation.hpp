// One run of the coupled system: workload → router → replica engines, metrics scrape, the replica
// autoscaler and the node provisioner, on one event queue. Returns everything the caller may want.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/json_reader.hpp"
#include "scenario/scenario.hpp"
#include "kernel/time.hpp"

namespace gpuscale {

// One request's lifecycle (times in seconds since the start; absent = never happened).
struct RequestRecord {
  std::uint32_t id = 0;
  double arrived_at = 0;
  std::optional<double> scheduled_at;    // handed by the router to a replica's engine
  std::optional<double> first_token_at;
  std::optional<double> completed_at;
  std::optional<double> dropped_at;      // the client gave up (no first token within timeout_s) or its replica went away
  std::int32_t replica = -1;
  std::int32_t prompt_tokens = 0;
  std::int32_t output_tokens = 0;
};

// Every reported quantity is defined once, here.
struct Summary {
  std::int64_t num_requests = 0;     // arrivals within the run
  std::int64_t num_completed = 0;    // last token produced
  std::int64_t num_dropped = 0;      // given up by the client, or lost with a replica
  std::int64_t num_unfinished = 0;   // still in flight when the run ended
  double ttft_p50_s = 0, ttft_p90_s = 0, ttft_p99_s = 0;  // over requests that got a first token (nearest rank)
  double itl_mean_s = 0;             // mean over completed requests of (completed - first token) / (output - 1)
  double e2e_p50_s = 0, e2e_p99_s = 0;  // arrival → last token, completed requests
  double slo_attainment = 0;         // completed within the TTFT and ITL SLO / all requests
  double goodput_rps = 0;            // completed within the SLO per second of run
  double gpu_hours = 0;              // GPUs held by replicas (created → gone), in hours
  double idle_gpu_minutes = 0;       // GPUs of Ready replicas with nothing waiting or running, in minutes
  double cost_usd = 0;               // gpu_hours × gpu_hour_usd
  std::int64_t peak_replicas = 0;    // most replicas existing at once (any state but gone)
  double mean_replicas = 0;          // time-weighted mean of the same
  std::int64_t num_preemptions = 0;  // vllm:num_preemptions summed over replicas
  std::int64_t num_scale_events = 0; // times the autoscaler changed the replica count
  std::int64_t num_replica_evictions = 0;            // replicas lost to node removals (each pays a full cold start)
  std::int64_t num_requests_failed_by_eviction = 0;  // requests in flight on them that failed
  double ttft_spike_minutes = 0;     // scrape intervals whose windowed P99 TTFT was above 10 s, in minutes
  std::int64_t ttft_breach_hours = 0;  // clock hours whose P99 TTFT (requests arriving in the hour that got a first token, nearest rank) > 10 s
  // Layer 1 (cluster mode only; 0 with fixed-delay nodes). cost_usd is then node_cost_usd.
  double node_hours = 0;             // hours nodes existed, launch → termination
  double node_cost_usd = 0;          // Σ node-hours × price of the node's capacity type
  double gpu_hours_allocatable = 0;  // GPUs on existing nodes × hours (paid for)
  double gpu_hours_requested = 0;    // GPUs requested by bound pods × hours (used)
  std::int64_t nodes_launched = 0;
  std::int64_t pod_evictions = 0;    // pods evicted by node removals and interruptions
  std::int64_t spot_interruptions = 0;
  std::int64_t non_gpu_pods_on_gpu_nodes = 0;  // times a pod without GPUs was bound to a GPU node
};

// Columns sampled at every scrape.
struct Series {
  std::vector<double> t_s;
  std::vector<std::int32_t> desired_replicas, ready_replicas;
  std::vector<std::int32_t> num_requests_waiting, num_requests_running;  // summed over ready replicas
  std::vector<double> kv_cache_usage_perc;   // mean over ready replicas (fraction 0-1)
  std::vector<double> gpu_util;              // DCGM_FI_DEV_GPU_UTIL mean over replicas with GPUs (percent)
  std::vector<double> fb_used_mib;           // DCGM_FI_DEV_FB_USED mean over replicas with GPUs (MiB per GPU)
  std::vector<double> ttft_p99_s;            // p99 TTFT of first tokens in the last ttft_window_s
  std::vector<std::int64_t> num_dropped;     // cumulative drops
  std::vector<double> arrival_rate_rps;      // arrivals since the previous scrape / interval
  std::vector<std::int32_t> nodes;           // cluster mode: nodes not yet terminated (empty otherwise)
};

struct DecisionRecord {
  double t_s = 0;
  std::string controller;  // "hpa", "provisioner", "lifecycle"
  std::int32_t current_replicas = 0;
  std::int32_t desired_replicas = 0;
  std::string reason;
  std::string explanation;
  Json detail;  // the controller's full arithmetic (proposals, stabilization, limits)
  // HPA syncs only: the winning metric's numbers, typed, for graders.
  double metric_value = 0;                // the metric's current value (average or total), metric units
  double ratio = 0;                       // usage ratio of the first pass
  std::optional<double> rebalanced_ratio; // after filling missing / unready pods with 0 or target
  std::int32_t metric_proposal = -1;      // that metric's proposal, before stabilization and limits
  std::int32_t ready_pods = 0, unready_pods = 0, missing_pods = 0;
};

struct RunResult {
  Summary summary;
  Series series;
  std::vector<DecisionRecord> decisions;
  std::vector<RequestRecord> requests;  // always kept; exported only if output.requests
  Json autoscaler_spec;                 // the HPA spec the strategy expanded to (null for fixed)
  std::int64_t num_events = 0;          // events processed (for benchmarks)
};

RunResult run_simulation(const Scenario& scenario);
Json result_to_json(const RunResult& result, const Scenario& scenario);

// The autoscaling/v2 HorizontalPodAutoscalerSpec a strategy preset stands for (null for "fixed").
Json autoscaler_hpa_spec(const AutoscalerConfig& config);

}  // namespace gpuscale
