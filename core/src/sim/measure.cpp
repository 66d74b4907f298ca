// Measurement and the replica scalers: DCGM's sample windows, the Prometheus scrape that feeds the
// series and the scalers, and each scaler's sync (see world.hpp).
#include <algorithm>

#include "metrics/percentile.hpp"
#include "sim/world.hpp"

namespace gpuscale::sim {

namespace {

// What one scrape summed over a set of replicas, for a series row.
struct ScrapeTotals {
  std::int32_t waiting = 0, running = 0;
  double kv_sum = 0, util_sum = 0, fb_sum = 0;
  int n_ready = 0, n_gpu = 0;
};

void push_row(Series& ser, double t_s, std::int32_t desired, std::int32_t ready, const ScrapeTotals& s, double ttft_p99,
              std::int64_t dropped, double arrival_rate) {
  ser.t_s.push_back(t_s);
  ser.desired_replicas.push_back(desired);
  ser.ready_replicas.push_back(ready);
  ser.num_requests_waiting.push_back(s.waiting);
  ser.num_requests_running.push_back(s.running);
  ser.kv_cache_usage_perc.push_back(s.n_ready ? s.kv_sum / s.n_ready : 0.0);
  ser.gpu_util.push_back(s.n_gpu ? s.util_sum / s.n_gpu : 0.0);
  ser.fb_used_mib.push_back(s.n_gpu ? s.fb_sum / s.n_gpu : 0.0);
  ser.ttft_p99_s.push_back(ttft_p99);
  ser.num_dropped.push_back(dropped);
  ser.arrival_rate_rps.push_back(arrival_rate);
}

}  // namespace

bool World::holds_gpus(const Replica& r) const {
  return r.state == ReplicaState::Loading || r.state == ReplicaState::WarmingUp || r.state == ReplicaState::Ready ||
         r.state == ReplicaState::Draining;
}

void World::on_dcgm_window_start() {
  for (Pool& p : pools_) {
    meter_.counts().replica_visits += static_cast<std::int64_t>(p.replicas.size());
    for (auto& r : p.replicas) {
      if (r.state == ReplicaState::Gone) continue;
      r.busy_at_window_start = r.engine->busy_time(now_);
      r.window_open = true;
    }
  }
}

void World::on_scrape() {
  meter_.counts().rows += 1 + (s_.pools_declared ? static_cast<std::int64_t>(pools_.size()) : 0);
  ScrapeTotals all;
  const bool per_pool = s_.pools_declared;
  const double interval = result_.series.t_s.empty() ? 0 : s_.metrics.scrape_interval_s;
  const Micros window = seconds_to_micros(s_.metrics.ttft_window_s);
  for (Pool& p : pools_) {
    meter_.counts().replica_visits += static_cast<std::int64_t>(p.replicas.size());
    p.scraped.clear();
    ScrapeTotals mine;
    // The pool's row: vLLM's gauges over the Ready replicas that have them, DCGM's over the GPUs.
    const auto tally = [&](const ScrapedReplica& s) {
      if (p.replicas[s.replica].state == ReplicaState::Ready && s.has_vllm_metrics) {
        mine.waiting += s.waiting;
        mine.running += s.running;
        mine.kv_sum += s.kv_usage;
        ++mine.n_ready;
      }
      if (s.has_gpu_metrics) {
        mine.util_sum += static_cast<double>(s.gpu_util);
        mine.fb_sum += s.fb_used_mib;
        ++mine.n_gpu;
      }
    };
    if (realistic_metrics_) {
      // The series show what Prometheus returns now, as the dashboards and the scalers see it.
      query_metrics(p);
      for (const ScrapedReplica& s : p.scraped) tally(s);
    } else {
      // metrics.pipeline "ideal": every replica read at this scrape (the sample windows opened before it).
      for (auto& r : p.replicas) {
        if (r.state == ReplicaState::Gone || r.state == ReplicaState::Pending) continue;
        ScrapedReplica s{};
        s.replica = r.id;
        s.sampled_at = now_;
        s.vllm_scraped_at = s.dcgm_scraped_at = s.dcgm_collected_at = now_;
        s.has_gpu_metrics = holds_gpus(r);
        // DCGM_FI_DEV_GPU_UTIL: percent of the sample period with a kernel running. A loading replica
        // runs no kernels (0 %); warm-up runs profiling/CUDA-graph passes back to back (100 %).
        if (r.state == ReplicaState::Loading) {
          s.gpu_util = 0;
          s.fb_used_mib = 0;
        } else if (r.state == ReplicaState::WarmingUp) {
          s.gpu_util = 100;
          s.fb_used_mib = r.engine->fb_used_mib_per_gpu();
        } else {
          Micros busy_now = r.engine->busy_time(now_);
          Micros start = r.window_open ? r.busy_at_window_start : busy_now;
          Micros period = r.window_open ? dcgm_period_ : 0;
          // An int64 percent, truncated as NVML reports it.
          s.gpu_util = period > 0 ? std::min<std::int64_t>(100, (busy_now - start) * 100 / period) : 0;
          s.fb_used_mib = r.engine->fb_used_mib_per_gpu();
        }
        r.window_open = false;
        if (r.state == ReplicaState::Ready || r.state == ReplicaState::Draining) {
          s.has_vllm_metrics = true;
          s.waiting = r.engine->num_requests_waiting();
          s.running = r.engine->num_requests_running();
          s.kv_usage = r.engine->kv_cache_usage(now_);
          note_vllm_sample(r, now_, s.kv_usage, s.waiting);
        }
        p.scraped.push_back(s);
        tally(s);
      }
    }
    all.waiting += mine.waiting;
    all.running += mine.running;
    all.kv_sum += mine.kv_sum;
    all.util_sum += mine.util_sum;
    all.fb_sum += mine.fb_sum;
    all.n_ready += mine.n_ready;
    all.n_gpu += mine.n_gpu;
    if (per_pool) {
      p.ttft_window.expire(now_ - window);
      const double p99 = p.ttft_window.percentile(0.99);
      if (p99 > 10.0) p.ttft_spike_micros += scrape_every_;
      push_row(p.series, micros_to_seconds(now_), p.spec_replicas, p.ready_replicas, mine, p99, p.dropped,
               interval > 0 ? static_cast<double>(p.arrivals_since_scrape) / interval : 0.0);
    }
    p.arrivals_since_scrape = 0;
  }
  // Windowed TTFT p99.
  ttft_window_.expire(now_ - window);

  Series& ser = result_.series;
  std::int32_t desired = 0, ready = 0;
  for (const Pool& p : pools_) {
    desired += p.spec_replicas;
    ready += p.ready_replicas;
  }
  push_row(ser, micros_to_seconds(now_), desired, ready, all, ttft_window_.percentile(0.99), num_dropped_,
           interval > 0 ? static_cast<double>(arrivals_since_scrape_) / interval : 0.0);
  if (cluster_) ser.nodes.push_back(static_cast<std::int32_t>(cluster_->state().nodes.size()) - cluster_->nodes_in(NodePhase::Terminated));
  if (cluster_ && s_.output.cluster_series) cluster_->sample(result_.cluster_series);
  // A TTFT spike: the windowed P99 above 10 s (the SLA line of the lesson's consolidation trap).
  if (ser.ttft_p99_s.back() > 10.0) ttft_spike_micros_ += scrape_every_;
  arrivals_since_scrape_ = 0;

  Micros next = now_ + scrape_every_;
  if (next <= end_) {
    queue_.push(next, EventClass::Measure, {EventKind::Scrape});
    Micros window_start = next - dcgm_period_;
    if (!realistic_metrics_) queue_.push(std::max(window_start, now_), EventClass::Measure, {EventKind::DcgmWindowStart});
  }
}

// ---- the realistic pipeline (metrics/pipeline.hpp) --------------------------------------------------

// A new replica's pod becomes two scrape targets (its vLLM server, its node's dcgm-exporter) and a
// collection loop of that exporter, each at its own phase: seeded per target (Prometheus hashes the
// target's labels, scrape/target.go offset()) unless the scenario fixes the offsets.
void World::start_metric_targets(Pool& p, Replica& r) {
  const MetricsConfig& m = s_.metrics;
  const std::string pod = p.config->name + "-" + std::to_string(r.id);
  const auto phase = [&](const std::optional<double>& fixed, const std::string& target, Micros interval) {
    return fixed ? seconds_to_micros(*fixed) % interval : loop_phase(s_.seed, target, interval);
  };
  r.metrics = TargetSeries(phase(m.scrape_offset_s, "metrics.scrape/" + pod + "/vllm", pipeline_.scrape_interval),
                           phase(m.scrape_offset_s, "metrics.scrape/" + pod + "/dcgm-exporter", pipeline_.scrape_interval),
                           phase(m.dcgm_collect_offset_s, "metrics.collect/" + pod + "/dcgm-exporter", pipeline_.collect_interval));
  if (r.state == ReplicaState::Ready && r.ready_at < 0) {
    // A replica the run starts with has served (idle) for an hour: Prometheus and the exporter have its
    // samples from before t = 0, the last of them at each loop's tick before the start.
    r.metrics.collect({last_tick(now_ - 1, r.metrics.collect_phase(), pipeline_.collect_interval), true, 0, r.engine->fb_used_mib_per_gpu()},
                      pipeline_);
    r.metrics.scrape_vllm({last_tick(now_ - 1, r.metrics.vllm_phase(), pipeline_.scrape_interval), true, r.engine->num_requests_waiting(),
                           r.engine->num_requests_running(), r.engine->kv_cache_usage(now_)},
                          pipeline_);
  }
  const auto pool = static_cast<std::uint16_t>(p.index);
  const Micros scrape = next_tick(now_, r.metrics.vllm_phase(), pipeline_.scrape_interval);
  if (scrape <= end_) queue_.push(scrape, EventClass::Measure, {EventKind::VllmScrape, 0, pool, r.id});
  const Micros collect = next_tick(now_, r.metrics.collect_phase(), pipeline_.collect_interval);
  if (collect <= end_) {
    queue_.push(std::max(collect - dcgm_period_, now_), EventClass::Measure, {EventKind::DcgmSampleStart, 0, pool, r.id});
    queue_.push(collect, EventClass::Measure, {EventKind::DcgmCollect, 0, pool, r.id});
  }
}

// Prometheus scrapes the replica's /metrics: vLLM renders its gauges now; before the server is up (and
// once the pod is gone) the scrape fails and the series have no sample.
void World::on_vllm_scrape(Pool& p, Replica& r) {
  if (r.state == ReplicaState::Gone) return;  // the target left service discovery
  ++meter_.counts().replica_visits;
  VllmScrape v;
  v.at = now_;
  if (r.state == ReplicaState::Ready || r.state == ReplicaState::Draining) {
    v.up = true;
    v.waiting = r.engine->num_requests_waiting();
    v.running = r.engine->num_requests_running();
    v.kv_usage = r.engine->kv_cache_usage(now_);
    note_vllm_sample(r, now_, v.kv_usage, v.waiting);
  }
  r.metrics.scrape_vllm(v, pipeline_);
  const Micros next = now_ + pipeline_.scrape_interval;
  if (next <= end_) queue_.push(next, EventClass::Measure, {EventKind::VllmScrape, 0, static_cast<std::uint16_t>(p.index), r.id});
}

void World::on_dcgm_sample_start(Pool&, Replica& r) {
  if (r.state == ReplicaState::Gone) return;
  ++meter_.counts().replica_visits;
  r.busy_at_window_start = r.engine->busy_time(now_);
  r.window_open = true;
  r.window_opened_at = now_;
}

// dcgm-exporter collects: the utilization NVML reports over the sample period that ends now, and the
// frame buffer in use; every scrape until the next collection serves these values.
void World::on_dcgm_collect(Pool& p, Replica& r) {
  if (r.state == ReplicaState::Gone) return;
  ++meter_.counts().replica_visits;
  DcgmCollection c;
  c.at = now_;
  c.has_gpu_metrics = holds_gpus(r);
  // The same readings as the ideal scrape's: a loading replica runs no kernels (0 %), warm-up runs
  // profiling/CUDA-graph passes back to back (100 %).
  if (r.state == ReplicaState::WarmingUp) {
    c.gpu_util = 100;
    c.fb_used_mib = r.engine->fb_used_mib_per_gpu();
  } else if (r.state == ReplicaState::Ready || r.state == ReplicaState::Draining) {
    const Micros busy_now = r.engine->busy_time(now_);
    const Micros period = r.window_open ? now_ - r.window_opened_at : 0;
    // An int64 percent, truncated as NVML reports it.
    c.gpu_util = period > 0 ? std::min<std::int64_t>(100, (busy_now - r.busy_at_window_start) * 100 / period) : 0;
    c.fb_used_mib = r.engine->fb_used_mib_per_gpu();
  }
  r.window_open = false;
  r.metrics.collect(c, pipeline_);
  const Micros next = now_ + pipeline_.collect_interval;
  if (next <= end_) {
    const auto pool = static_cast<std::uint16_t>(p.index);
    queue_.push(std::max(next - dcgm_period_, now_), EventClass::Measure, {EventKind::DcgmSampleStart, 0, pool, r.id});
    queue_.push(next, EventClass::Measure, {EventKind::DcgmCollect, 0, pool, r.id});
  }
}

void World::query_metrics(Pool& p) {
  p.scraped.clear();
  for (const Replica& r : p.replicas) {
    if (r.state == ReplicaState::Gone || r.state == ReplicaState::Pending) continue;
    p.scraped.push_back(r.metrics.query(r.id, now_, pipeline_));
  }
}

ScalerSnapshot World::snapshot(Pool& p) {
  if (realistic_metrics_) {
    meter_.counts().replica_visits += static_cast<std::int64_t>(p.replicas.size());
    query_metrics(p);  // prometheus-adapter and KEDA query Prometheus when the HPA asks
  }
  ScalerSnapshot snap;
  snap.metric_ages = realistic_metrics_;
  snap.pod_prefix = p.config->name;
  snap.spec_replicas = p.spec_replicas;
  snap.scraped = &p.scraped;
  snap.in_flight = p.in_flight();
  snap.cpu_request_milli = p.config->pod.cpu_milli;
  snap.scrape_interval_s = s_.metrics.scrape_interval_s;
  for (const Replica& r : p.replicas) {
    if (r.state == ReplicaState::Gone) continue;
    ReplicaView v;
    v.id = r.id;
    v.state = r.state == ReplicaState::Pending    ? ReplicaView::State::Pending
              : r.state == ReplicaState::Ready    ? ReplicaView::State::Ready
              : r.state == ReplicaState::Draining ? ReplicaView::State::Draining
                                                  : ReplicaView::State::Starting;
    v.started_at = r.node_ready_at;
    v.ready_at = r.ready_at;
    snap.replicas.push_back(v);
  }
  // The lab's Prometheus rules over the last minute, for the HPAs that read them.
  const Micros minute = 60 * kMicrosPerSecond;
  if (p.rule_ttft) {
    p.server_ttft_1m.expire(now_ - minute);
    ScalerSnapshot::External e{kTtftP99Metric, std::nullopt, "no request reached its first token on the pool's servers in the last minute"};
    if (p.server_ttft_1m.size() > 0) e.value = p.server_ttft_1m.percentile(0.99);
    snap.external.push_back(std::move(e));
  }
  if (p.rule_slo) {
    while (!p.slo_misses.empty() && p.slo_misses.front() <= now_ - minute) p.slo_misses.pop_front();
    snap.external.push_back({kSloViolationMetric, static_cast<double>(p.slo_misses.size()) / 60.0, ""});
  }
  for (const auto& [name, value] : p.published) snap.external.push_back({name, value, ""});
  return snap;
}

// A request that missed its SLO (or was dropped) counts for the pool that served it and, in a
// disaggregated pair, for the prefill pool that computed its prompt: each role's goodput rule sees it.
void World::note_slo_miss(const RequestRecord& rec) {
  const auto note = [&](std::int32_t pool) {
    Pool& p = pools_[static_cast<std::size_t>(pool)];
    if (p.rule_slo) p.slo_misses.push_back(now_);
  };
  note(rec.pool);
  if (rec.prefill_pool >= 0 && rec.prefill_pool != rec.pool) note(rec.prefill_pool);
}

// A vLLM scrape a WVA's max_over_time(...[1m]) may read: the last minute's (and the query delay's).
void World::note_vllm_sample(Replica& r, Micros at, double kv_usage, std::int32_t waiting) {
  if (!keep_vllm_history_) return;
  r.vllm_history.push_back({at, kv_usage, waiting});
  while (!r.vllm_history.empty() && r.vllm_history.front().at <= at - 60 * kMicrosPerSecond - pipeline_.query_delay) r.vllm_history.pop_front();
}

// What a model-level autoscaler sees of its pools now: each pool as an HPA sees it, the engine limits,
// the last minute's vLLM maxima (WVA) and the frontend's counters over its window (the planner).
ServiceSnapshot World::service_snapshot(ServiceRun& run) {
  ServiceSnapshot snap;
  snap.model = run.config->model;
  const Micros minute = 60 * kMicrosPerSecond;
  for (const int i : run.config->pools) {
    Pool& p = pools_[static_cast<std::size_t>(i)];
    meter_.counts().pod_views += static_cast<std::int64_t>(p.replicas.size());
    ServicePool sp;
    sp.name = p.config->name;
    sp.role = p.config->role == PoolRole::Prefill ? ServiceRole::Prefill : p.config->role == PoolRole::Decode ? ServiceRole::Decode : ServiceRole::Aggregated;
    sp.accelerator = p.engine.profile.gpu_name;
    sp.gpus_per_replica = p.gpus_per_replica;
    sp.engine.max_num_batched_tokens = p.engine.max_num_batched_tokens;
    sp.engine.max_num_seqs = p.engine.max_num_seqs;
    sp.snapshot = snapshot(p);
    for (const Replica& r : p.replicas) {
      if (r.state == ReplicaState::Gone) continue;
      if (sp.engine.max_kv_tokens == 0 && r.engine) {
        sp.engine.max_kv_tokens = static_cast<std::int64_t>(r.engine->total_kv_blocks()) * r.engine->config().block_size;
        sp.engine.context_length = r.engine->max_model_len();
      }
      double kv = -1;
      std::int32_t queue = -1;
      for (const Replica::VllmSample& v : r.vllm_history) {
        if (v.at <= now_ - minute - pipeline_.query_delay || v.at > now_ - pipeline_.query_delay) continue;
        kv = std::max(kv, v.kv_usage);
        queue = std::max(queue, v.waiting);
      }
      if (kv >= 0) {
        sp.kv_max_1m.push_back({r.id, kv});
        sp.queue_max_1m.push_back({r.id, static_cast<double>(queue)});
      }
      // The newest iteration each serving worker published (FpmEventSubscriber.get_recent_stats).
      ForwardPass f;
      if (r.state == ReplicaState::Ready && r.engine && r.engine->forward_pass(now_, f)) {
        ForwardPassMetrics m;
        m.replica = r.id;
        m.wall_time_s = micros_to_seconds(f.wall);
        m.num_prefill_requests = f.prefill_requests;
        m.sum_prefill_tokens = f.prefill_tokens;
        m.num_decode_requests = f.decode_requests;
        m.sum_decode_kv_tokens = f.decode_kv_tokens;
        m.queued_prefill_requests = f.queued_prefill_requests;
        m.queued_prefill_tokens = f.queued_prefill_tokens;
        m.queued_decode_requests = f.queued_decode_requests;
        m.queued_decode_kv_tokens = f.queued_decode_kv_tokens;
        sp.fpm.push_back(m);
      }
    }
    std::sort(sp.fpm.begin(), sp.fpm.end(), [](const ForwardPassMetrics& a, const ForwardPassMetrics& b) { return a.replica < b.replica; });
    snap.pools.push_back(std::move(sp));
  }
  // increase() of the frontend's counters over the window: now against the newest sample at or
  // before its start (the run's start when none is that old).
  const Micros window = run.scaler->frontend_window();
  if (window > 0 && run.model >= 0) {
    const FrontendCounters& now = frontend_[static_cast<std::size_t>(run.model)];
    FrontendCounters then;
    for (const FrontendCounters& h : run.history)
      if (h.at <= now_ - window) then = h;
    FrontendWindow& w = snap.frontend;
    w.seconds = micros_to_seconds(window);
    w.requests_started = now.started - then.started;
    w.isl_sum = now.isl_sum - then.isl_sum;
    w.isl_count = now.isl_count - then.isl_count;
    w.osl_sum = now.osl_sum - then.osl_sum;
    w.osl_count = now.osl_count - then.osl_count;
    w.ttft_sum_s = now.ttft_sum - then.ttft_sum;
    w.ttft_count = now.ttft_count - then.ttft_count;
    w.itl_sum_s = now.itl_sum - then.itl_sum;
    w.itl_count = now.itl_count - then.itl_count;
    w.duration_sum_s = now.duration_sum - then.duration_sum;
    w.duration_count = now.duration_count - then.duration_count;
    FrontendCounters at = now;
    at.at = now_;
    run.history.push_back(at);
    while (run.history.size() > 1 && run.history[1].at <= now_ - window) run.history.pop_front();
  }
  return snap;
}

void World::on_service_sync(std::size_t k) {
  ServiceRun& run = services_[k];
  ServiceDecision d = run.scaler->sync(service_snapshot(run), now_, log_policy_);
  meter_.counts().decisions += static_cast<std::int64_t>(d.log.size());
  meter_.counts().scaler_decisions += static_cast<std::int64_t>(d.log.size());
  for (DecisionRecord& rec : d.log) {
    if (!rec.detail.is_null()) ++meter_.counts().detailed;
    if (rec.pool.empty() && s_.pools_declared) rec.pool = run.config->model;
    log_.add(std::move(rec));
  }
  for (std::size_t i = 0; i < run.config->pools.size(); ++i) {
    Pool& p = pools_[static_cast<std::size_t>(run.config->pools[i])];
    if (i < d.published.size()) p.published = d.published[i];
    if (i < d.desired.size() && d.desired[i] && *d.desired[i] != p.spec_replicas) {
      p.spec_replicas = *d.desired[i];
      ++p.num_scale_events;
      reconcile_replicas(p, now_, Settle::Now);
    }
  }
  queue_.push(now_ + run.scaler->period(), EventClass::Control, {EventKind::ServiceSync, 0, 0, static_cast<std::uint32_t>(k)});
}

void World::on_scaler_sync(Pool& p, std::size_t k) {
  meter_.counts().pod_views += static_cast<std::int64_t>(p.replicas.size());
  ScalerDecision d = p.scalers[k]->sync(snapshot(p), now_, log_policy_);
  meter_.counts().decisions += static_cast<std::int64_t>(d.log.size());
  meter_.counts().scaler_decisions += static_cast<std::int64_t>(d.log.size());
  for (DecisionRecord& rec : d.log) {
    if (!rec.detail.is_null()) ++meter_.counts().detailed;
    rec.pool = p.log_name;
    log_.add(std::move(rec));
  }
  if (d.desired && *d.desired != p.spec_replicas) {
    p.spec_replicas = *d.desired;
    ++p.num_scale_events;
    reconcile_replicas(p, now_, Settle::Now);
  }
  queue_.push(now_ + p.scalers[k]->period(), EventClass::Control,
              {EventKind::ScalerSync, static_cast<std::uint8_t>(k), static_cast<std::uint16_t>(p.index)});
}

}  // namespace gpuscale::sim
