// The run result as JSON for the CLI, the page and the determinism tests. A scenario that lists
// "pools" also gets each pool's summary, series and autoscaler, and its decisions and requests name
// their pool; a single-service scenario's result has exactly the shape it always had.
#include <algorithm>

#include "autoscaling/hpa_json.hpp"
#include "sim/simulation.hpp"

namespace gpuscale {

namespace {

Json optional_time(const std::optional<double>& t) { return t ? Json(*t) : Json(nullptr); }

Json failed_by_cause_json(const Summary& s) {
  Json out = Json::object();
  for (const auto& c : kFailureCauses) out[c.name] = s.requests_failed_by_cause[static_cast<int>(c.value)];
  return out;
}

Json evictions_by_reason_json(const Summary& s) {
  Json out = Json::object();
  for (const auto& r : kRemovalReasons) out[r.name] = s.replica_evictions_by_reason[static_cast<int>(r.value)];
  return out;
}

// The summary; `prefixes`: the workload has shared prefixes (the prefix cache's counters are shown).
Json summary_json(const Summary& s, bool prefixes) {
  Json out = {{"num_requests", s.num_requests},
          {"num_completed", s.num_completed},
          {"num_dropped", s.num_dropped},
          {"num_unfinished", s.num_unfinished},
          {"num_rejected", s.num_rejected},
          {"ttft_p50_s", s.ttft_p50_s},
          {"ttft_p90_s", s.ttft_p90_s},
          {"ttft_p99_s", s.ttft_p99_s},
          {"itl_mean_s", s.itl_mean_s},
          {"e2e_p50_s", s.e2e_p50_s},
          {"e2e_p99_s", s.e2e_p99_s},
          {"slo_attainment", s.slo_attainment},
          {"goodput_rps", s.goodput_rps},
          {"gpu_hours", s.gpu_hours},
          {"idle_gpu_minutes", s.idle_gpu_minutes},
          {"cost_usd", s.cost_usd},
          {"peak_replicas", s.peak_replicas},
          {"mean_replicas", s.mean_replicas},
          {"num_preemptions", s.num_preemptions},
          {"num_scale_events", s.num_scale_events},
          {"num_replica_evictions", s.num_replica_evictions},
          {"replica_evictions_by_reason", evictions_by_reason_json(s)},
          {"num_requests_failed_by_eviction", s.num_requests_failed_by_eviction},
          {"requests_failed_by_cause", failed_by_cause_json(s)},
          {"partial_group_gpu_hours", s.partial_group_gpu_hours},
          {"time_to_ready_mean_s", s.time_to_ready_mean_s},
          {"time_to_ready_max_s", s.time_to_ready_max_s},
          {"ttft_spike_minutes", s.ttft_spike_minutes},
          {"ttft_breach_hours", s.ttft_breach_hours}};
  if (s.handoffs.count > 0) {
    out["handoffs"] = {{"count", s.handoffs.count},
                       {"prefill_p50_s", s.handoffs.prefill_p50_s},
                       {"prefill_p99_s", s.handoffs.prefill_p99_s},
                       {"kv_wait_p50_s", s.handoffs.kv_wait_p50_s},
                       {"kv_wait_p99_s", s.handoffs.kv_wait_p99_s},
                       {"kv_transfer_mean_s", s.handoffs.kv_transfer_mean_s}};
  }
  if (prefixes) {
    out["prefix_cache"] = {{"queries", s.prefix_cache_queries},
                           {"hits", s.prefix_cache_hits},
                           {"hit_rate", s.prefix_cache_queries > 0 ? static_cast<double>(s.prefix_cache_hits) / static_cast<double>(s.prefix_cache_queries) : 0.0}};
  }
  return out;
}

Json cluster_json(const ClusterTotals& c) {
  return {{"node_hours", c.node_hours},
          {"node_cost_usd", c.node_cost_usd},
          {"gpu_hours_allocatable", c.gpu_hours_allocatable},
          {"gpu_hours_requested", c.gpu_hours_requested},
          {"nodes_launched", c.nodes_launched},
          {"pod_evictions", c.pod_evictions},
          {"spot_interruptions", c.spot_interruptions},
          {"insufficient_capacity", c.insufficient_capacity},
          {"non_gpu_pods_on_gpu_nodes", c.non_gpu_pods_on_gpu_nodes}};
}

Json series_json(const Series& ser) {
  Json out{{"t_s", ser.t_s},
           {"desired_replicas", ser.desired_replicas},
           {"ready_replicas", ser.ready_replicas},
           {"num_requests_waiting", ser.num_requests_waiting},
           {"num_requests_running", ser.num_requests_running},
           {"kv_cache_usage_perc", ser.kv_cache_usage_perc},
           {"DCGM_FI_DEV_GPU_UTIL", ser.gpu_util},
           {"DCGM_FI_DEV_FB_USED", ser.fb_used_mib},
           {"ttft_p99_s", ser.ttft_p99_s},
           {"num_dropped", ser.num_dropped},
           {"arrival_rate_rps", ser.arrival_rate_rps}};
  if (!ser.nodes.empty()) out["nodes"] = ser.nodes;
  return out;
}

// The HPA the pool's strategy expanded to (null for "fixed").
Json autoscaler_json(const AutoscalerConfig& a) {
  return {{"strategy", to_string(a.strategy)}, {"hpa", a.hpa ? hpa::hpa_spec_to_json(*a.hpa) : Json(nullptr)}};
}

}  // namespace

// The dashboards' view of the node and pod layers (output.cluster_series; docs/wasm-api.md).
static Json cluster_series_json(const ClusterSeries& c) {
  const auto gpus = [](double v) { return v < 0 ? Json(-1) : Json(v); };
  Json nodes = Json::array();
  for (const auto& n : c.nodes) {
    Json free = Json::array();
    for (std::int32_t v : n.gpus_free) free.push_back(v < 0 ? Json(nullptr) : Json(v));
    nodes.push_back({{"id", n.id}, {"name", "node-" + std::to_string(n.id)}, {"instance_type", n.instance_type},
                     {"capacity_type", n.capacity_type}, {"zone", n.zone}, {"owner", n.owner}, {"gpus", n.gpus}, {"gpus_free", free}});
  }
  Json pools = Json::array();
  for (const auto& p : c.nodepools) pools.push_back({{"name", p.name}, {"limit_gpus", p.limit_gpus < 0 ? Json(nullptr) : Json(p.limit_gpus)}, {"gpus", p.gpus}});
  Json queues = Json::array();
  for (const auto& q : c.kai_queues) {
    Json j{{"name", q.name}, {"quota", gpus(q.quota)}, {"limit", gpus(q.limit)}};
    for (const auto& [key, col] : {std::pair<const char*, const std::vector<double>*>{"deserved", &q.deserved}, {"fair_share", &q.fair_share},
                                   {"allocated", &q.allocated}, {"requested", &q.requested}}) {
      Json a = Json::array();
      for (double v : *col) a.push_back(gpus(v));
      j[key] = std::move(a);
    }
    queues.push_back(std::move(j));
  }
  return {{"nodes", nodes},
          {"pods_pending", c.pods_pending},
          {"pods_unschedulable", c.pods_unschedulable},
          {"nodeclaims_launched", c.nodeclaims_launched},
          {"nodeclaims_pending", c.nodeclaims_pending},
          {"nodepools", pools},
          {"kai_queues", queues}};
}

Json result_to_json(const RunResult& r, const Scenario& scenario) {
  const bool pools = scenario.pools_declared;
  Json out;
  const bool prefixes = scenario.workload.prefixes.count > 0;
  out["summary"] = summary_json(r.summary, prefixes);
  if (scenario.cluster.provisioner != ProvisionerKind::FixedDelay) out["summary"]["cluster"] = cluster_json(r.summary.cluster);
  out["series"] = series_json(r.series);
  // The arrival profile the run drew from (a preset's phases, scaled), for the charts' burst bands;
  // a closed loop has none.
  Json phases = Json::array();
  if (scenario.workload.concurrency == 0)
    for (const Phase& p : effective_phases(scenario.workload)) phases.push_back({{"duration_s", p.duration_s}, {"rate_rps", p.rate_rps}});
  out["workload"] = {{"phases", std::move(phases)}};
  if (scenario.output.cluster_series && scenario.cluster.provisioner != ProvisionerKind::FixedDelay) out["cluster_series"] = cluster_series_json(r.cluster_series);
  out["autoscaler"] = autoscaler_json(scenario.pools.front().autoscaler);
  if (pools) {
    Json per_pool = Json::object();
    for (std::size_t i = 0; i < r.pools.size(); ++i) {
      per_pool[r.pools[i].name] = {{"model", scenario.pools[i].model},
                                   {"summary", summary_json(r.pools[i].summary, prefixes)},
                                   {"series", series_json(r.pools[i].series)},
                                   {"autoscaler", autoscaler_json(scenario.pools[i].autoscaler)}};
    }
    out["pools"] = std::move(per_pool);
  }
  if (scenario.output.decisions) {
    Json decisions = Json::array();
    for (const auto& d : r.decisions) {
      Json j{{"t_s", d.t_s},
             {"controller", d.controller},
             {"current_replicas", d.current_replicas},
             {"desired_replicas", d.desired_replicas},
             {"reason", d.reason},
             {"explanation", d.explanation}};
      if (pools) j["pool"] = d.pool.empty() ? Json(nullptr) : Json(d.pool);
      if (!d.detail.is_null()) j["detail"] = d.detail;
      if (d.repeats > 0) {
        j["repeats"] = d.repeats;
        j["last_t_s"] = d.last_t_s;
      }
      decisions.push_back(std::move(j));
    }
    out["decisions"] = std::move(decisions);
    // Only when the log was bounded, so every other result reads as before.
    if (r.decision_log.any()) {
      out["decision_log"] = {{"recorded", r.decision_log.recorded},
                             {"kept", r.decisions.size()},
                             {"folded", r.decision_log.folded},
                             {"not_kept", r.decision_log.dropped},
                             {"fold_after", DecisionLog::kFoldAfter},
                             {"max_records", DecisionLog::kMaxRecords}};
    }
  }
  if (scenario.output.requests) {
    Json reqs = Json::array();
    std::size_t n = std::min<std::size_t>(r.requests.size(), static_cast<std::size_t>(Limits::kMaxRequestRecords));
    for (std::size_t i = 0; i < n; ++i) {
      const RequestRecord& q = r.requests[i];
      Json j{{"id", q.id},
             {"arrived_at", q.arrived_at},
             {"scheduled_at", optional_time(q.scheduled_at)},
             {"first_token_at", optional_time(q.first_token_at)},
             {"completed_at", optional_time(q.completed_at)},
             {"dropped_at", optional_time(q.dropped_at)},
             {"failed_by", q.dropped_at ? Json(to_string(q.failed_by)) : Json(nullptr)},
             {"rejected_at", optional_time(q.rejected_at)},
             {"replica", q.replica < 0 ? Json(nullptr) : Json(q.replica)},
             {"prompt_tokens", q.prompt_tokens},
             {"output_tokens", q.output_tokens}};
      if (pools) j["pool"] = scenario.pools[static_cast<std::size_t>(q.pool)].name;
      if (q.prefix_id != 0) {
        j["prefix_id"] = q.prefix_id;
        j["prefix_tokens"] = q.prefix_tokens;
      }
      if (q.prefill_pool >= 0) {
        // Disaggregated: its prefill, the hand-off and the KV's arrival at the decode replica.
        j["prefill_pool"] = scenario.pools[static_cast<std::size_t>(q.prefill_pool)].name;
        j["prefill_replica"] = q.prefill_replica;
        j["prefill_done_at"] = optional_time(q.prefill_done_at);
        j["decode_scheduled_at"] = optional_time(q.decode_scheduled_at);
        j["kv_loaded_at"] = optional_time(q.kv_loaded_at);
        j["kv_transfer_s"] = q.kv_transfer_s;
      }
      reqs.push_back(std::move(j));
    }
    out["requests"] = std::move(reqs);
    out["requests_truncated"] = r.requests.size() > n;
  }
  out["num_events"] = r.num_events;
  return out;
}

}  // namespace gpuscale
