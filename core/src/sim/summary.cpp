// The end of a run: the summary in total and per pool (every quantity as Summary defines it).
#include "metrics/percentile.hpp"
#include "sim/world.hpp"

namespace gpuscale::sim {

// Clock hours whose P99 TTFT is above 10 s (the SLA line of the lesson's consolidation trap), over the
// requests of one pool (only_pool >= 0) or all.
std::int64_t World::breach_hours(int only_pool) const {
  const auto hours = static_cast<std::size_t>((end_ + 3600 * kMicrosPerSecond - 1) / (3600 * kMicrosPerSecond));
  std::vector<std::vector<double>> per_hour(hours);
  for (const auto& q : result_.requests) {
    if (!q.first_token_at || (only_pool >= 0 && q.pool != only_pool && q.prefill_pool != only_pool)) continue;
    const auto h = static_cast<std::size_t>(q.arrived_at / 3600.0);
    if (h < hours) per_hour[h].push_back(*q.first_token_at - q.arrived_at);
  }
  std::int64_t n = 0;
  for (auto& v : per_hour) {
    if (!v.empty() && percentile(v, 0.99) > 10.0) ++n;
  }
  return n;
}

// The summary of `pools`' requests (only_pool >= 0: that pool's; -1: every request) and replicas.
void World::summarize(Summary& sum, const std::vector<const Pool*>& pools, int only_pool) const {
  // A disaggregated pool's TTFT is its servers' own (vllm:time_to_first_token_seconds on its pods):
  // a prefill pool's from the request reaching it to its one token, a decode pool's from the
  // hand-off to the first token. A prefill pool decodes nothing: no ITL. The run's summary keeps the
  // request's TTFT, from its arrival at the gateway.
  const PoolRole role = only_pool >= 0 ? pools_[static_cast<std::size_t>(only_pool)].config->role : PoolRole::Aggregated;
  std::vector<double> ttft, e2e, prefill, kv_wait;
  double transfer_sum = 0;
  double itl_sum = 0;
  std::int64_t itl_n = 0, good = 0;
  for (const auto& rec : result_.requests) {
    // A pool's requests: those it serves, and (a prefill pool) those whose prompts it computed.
    if (only_pool >= 0 && rec.pool != only_pool && rec.prefill_pool != only_pool) continue;
    ++sum.num_requests;
    if (role == PoolRole::Prefill) {
      if (rec.prefill_done_at) ttft.push_back(*rec.prefill_done_at - *rec.scheduled_at);
    } else if (role == PoolRole::Decode && rec.decode_scheduled_at) {
      if (rec.first_token_at) ttft.push_back(*rec.first_token_at - *rec.decode_scheduled_at);
    } else if (rec.first_token_at) {
      ttft.push_back(*rec.first_token_at - rec.arrived_at);
    }
    if (rec.prefill_done_at) {
      prefill.push_back(*rec.prefill_done_at - rec.arrived_at);
      if (rec.kv_loaded_at) {
        kv_wait.push_back(*rec.kv_loaded_at - *rec.prefill_done_at);
        transfer_sum += rec.kv_transfer_s;
      }
    }
    if (rec.completed_at) {
      ++sum.num_completed;
      e2e.push_back(*rec.completed_at - rec.arrived_at);
      double itl = rec.output_tokens > 1 ? (*rec.completed_at - *rec.first_token_at) / (rec.output_tokens - 1) : 0.0;
      if (role != PoolRole::Prefill) {
        itl_sum += itl;
        ++itl_n;
      }
      if (*rec.first_token_at - rec.arrived_at <= s_.slo.ttft_s && itl <= s_.slo.itl_s) ++good;
    } else if (rec.dropped_at) {
      ++sum.num_dropped;
      ++sum.requests_failed_by_cause[static_cast<int>(rec.failed_by)];
      if (is_node_cause(rec.failed_by)) ++sum.num_requests_failed_by_eviction;
    } else if (rec.rejected_at) {
      ++sum.num_rejected;
    } else {
      ++sum.num_unfinished;
    }
  }
  sum.ttft_p50_s = percentile(ttft, 0.50);
  sum.ttft_p90_s = percentile(ttft, 0.90);
  sum.ttft_p99_s = percentile(ttft, 0.99);
  sum.e2e_p50_s = percentile(e2e, 0.50);
  sum.e2e_p99_s = percentile(e2e, 0.99);
  sum.itl_mean_s = itl_n ? itl_sum / static_cast<double>(itl_n) : 0.0;
  sum.slo_attainment = sum.num_requests ? static_cast<double>(good) / static_cast<double>(sum.num_requests) : 1.0;
  sum.goodput_rps = static_cast<double>(good) / s_.duration_s;
  sum.handoffs.count = static_cast<std::int64_t>(prefill.size());
  sum.handoffs.prefill_p50_s = percentile(prefill, 0.50);
  sum.handoffs.prefill_p99_s = percentile(prefill, 0.99);
  sum.handoffs.kv_wait_p50_s = percentile(kv_wait, 0.50);
  sum.handoffs.kv_wait_p99_s = percentile(kv_wait, 0.99);
  sum.handoffs.kv_transfer_mean_s = kv_wait.empty() ? 0.0 : transfer_sum / static_cast<double>(kv_wait.size());
  double replica_seconds = 0;
  std::int64_t started = 0;
  Micros start_micros = 0, max_start = 0;
  for (std::size_t i = 0; i < pools.size(); ++i) {
    const Pool& p = *pools[i];
    const double seconds = micros_to_seconds(p.replica_micros);
    const double gpu_hours = seconds * p.gpus_per_replica / 3600.0;
    const double idle = micros_to_seconds(p.idle_replica_micros) * p.gpus_per_replica / 60.0;
    replica_seconds = i == 0 ? seconds : replica_seconds + seconds;
    sum.gpu_hours = i == 0 ? gpu_hours : sum.gpu_hours + gpu_hours;
    sum.idle_gpu_minutes = i == 0 ? idle : sum.idle_gpu_minutes + idle;
    for (const auto& r : p.replicas) {
      if (!r.engine || r.state == ReplicaState::Gone) continue;
      sum.num_preemptions += r.engine->num_preemptions();
      sum.prefix_cache_queries += r.engine->num_prefix_cache_queries();
      sum.prefix_cache_hits += r.engine->num_prefix_cache_hits();
    }
    sum.num_preemptions += p.retired_preemptions;  // from replicas already gone
    sum.prefix_cache_queries += p.retired_prefix_queries;
    sum.prefix_cache_hits += p.retired_prefix_hits;
    sum.num_scale_events += p.num_scale_events;
    sum.num_replica_evictions += p.num_replica_evictions;
    sum.partial_group_gpu_hours += p.partial_group_gpu_micros / (3600.0 * kMicrosPerSecond);
    started += p.started_replicas;
    start_micros += p.start_micros;
    max_start = std::max(max_start, p.max_start_micros);
    for (int k = 0; k < kNumRemovalReasons; ++k) sum.replica_evictions_by_reason[k] += p.evictions_by_reason[k];
  }
  sum.time_to_ready_mean_s = started ? micros_to_seconds(start_micros) / static_cast<double>(started) : 0.0;
  sum.time_to_ready_max_s = micros_to_seconds(max_start);
  sum.cost_usd = sum.gpu_hours * s_.cost.gpu_hour_usd;
  sum.mean_replicas = replica_seconds / s_.duration_s;
  sum.ttft_breach_hours = breach_hours(only_pool);
}

void World::finish() {
  now_ = std::max(now_, end_);
  for (Pool& p : pools_) {
    for (Replica& r : p.replicas) close_partial(p, r);  // groups still partly placed at the end
  }
  result_.work = meter_.totals();
  result_.decision_log = log_.stats();
  result_.decisions = std::move(log_.records());
  std::vector<const Pool*> all;
  for (const Pool& p : pools_) all.push_back(&p);
  Summary& sum = result_.summary;
  summarize(sum, all, -1);
  sum.peak_replicas = peak_replicas_;
  sum.ttft_spike_minutes = micros_to_seconds(ttft_spike_micros_) / 60.0;
  if (cluster_) {
    // Layer 1 decides what is paid: nodes from launch to termination, at their capacity type's price.
    cluster_->finish(end_);
    sum.cluster = cluster_->totals();
    sum.cost_usd = sum.cluster.node_cost_usd;
  }
  if (!s_.pools_declared) return;
  for (Pool& p : pools_) {
    PoolResult& pr = result_.pools.emplace_back();
    pr.name = p.config->name;
    summarize(pr.summary, {&p}, p.index);
    pr.summary.peak_replicas = p.peak_replicas;
    pr.summary.ttft_spike_minutes = micros_to_seconds(p.ttft_spike_micros) / 60.0;
    pr.series = std::move(p.series);
  }
}

}  // namespace gpuscale::sim
