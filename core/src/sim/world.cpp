// The world's loop: the one event queue, arrivals, the router, engine steps, client timeouts, and
// what the cluster reports (see world.hpp).
#include "sim/world.hpp"

#include <algorithm>
#include <cmath>

#include "sim/provisioners.hpp"
#include "serving/engine_profiles.hpp"
#include "sim/scalers.hpp"

namespace gpuscale {

namespace sim {

const char* state_name(ReplicaState s) {
  switch (s) {
    case ReplicaState::Pending: return "Pending";
    case ReplicaState::Loading: return "Loading";
    case ReplicaState::WarmingUp: return "WarmingUp";
    case ReplicaState::Ready: return "Ready";
    case ReplicaState::Draining: return "Draining";
    case ReplicaState::Gone: return "Gone";
  }
  return "?";
}

World::World(const Scenario& s, const WorkLimits& limits)
    : s_(s),
      end_(seconds_to_micros(s.duration_s)),
      workload_(s.workload, s.seed, end_),
      fixed_nodes_(seconds_to_micros(s.cold_start.warm_nodes ? 0 : s.cold_start.node_provisioning_s)),
      pools_(s.pools.size()),
      epp_ties_(Rng::stream(s.seed, "router.epp")),
      meter_(s, limits) {
  if (WindowedQuantile::sorted_pays(s.metrics.ttft_window_s, s.metrics.scrape_interval_s)) ttft_window_.keep_sorted();
  for (std::size_t i = 0; i < s.pools.size(); ++i) {
    const PoolConfig& c = s.pools[i];
    Pool& p = pools_[i];
    p.config = &c;
    p.index = static_cast<int>(i);
    p.log_name = s.pools_declared ? c.name : "";
    if (WindowedQuantile::sorted_pays(s.metrics.ttft_window_s, s.metrics.scrape_interval_s)) p.ttft_window.keep_sorted();
    p.engine.profile = engine_profile(c.engine.profile);
    p.engine.max_num_seqs = static_cast<int>(c.engine.max_num_seqs);
    p.engine.max_num_batched_tokens = static_cast<int>(c.engine.max_num_batched_tokens);
    p.engine.gpu_memory_utilization = c.engine.gpu_memory_utilization;
    p.engine.max_decode_substeps = c.engine.step_coalescing ? 512 : 1;  // a cut macro step wastes little; long decodes need long ones
    p.engine.lazy_decode = c.engine.step_coalescing;  // off: the plain request-by-request engine, to compare against
    p.gpus_per_replica = p.engine.profile.gpus();
    p.scalers = make_replica_scalers(c);
  }
  // Each request names a model (the workload's model index, 0 with one model); the pools serving it,
  // by role, take it.
  groups_.resize(std::max<std::size_t>(1, s.workload.models.size()));
  group_of_pool_.assign(s.pools.size(), -1);
  for (std::size_t i = 0; i < s.pools.size(); ++i) {
    int m = -1;
    if (s.workload.models.empty()) {
      m = s.pools[i].model == s.pools.front().model ? 0 : -1;
    } else {
      for (std::size_t k = 0; k < s.workload.models.size() && m < 0; ++k)
        if (s.workload.models[k].model == s.pools[i].model) m = static_cast<int>(k);
    }
    if (m < 0) continue;  // a pool no request asks for
    group_of_pool_[i] = m;
    groups_[static_cast<std::size_t>(m)].pools[static_cast<int>(s.pools[i].role)].push_back(static_cast<int>(i));
  }
  frontend_.resize(groups_.size());
  // The Prometheus rules a pool's HPA reads are kept for it (and only then: they cost every request).
  for (Pool& p : pools_) {
    const AutoscalerConfig& a = p.config->autoscaler;
    for (const hpa::MetricSpec& m : a.hpa ? a.hpa->metrics : std::vector<hpa::MetricSpec>{}) {
      if (m.type != hpa::MetricSourceType::External) continue;
      p.rule_ttft = p.rule_ttft || m.metric.name == kTtftP99Metric;
      p.rule_slo = p.rule_slo || m.metric.name == kSloViolationMetric;
    }
  }
  for (const ServiceGroupConfig& g : s.service_groups) {
    ServiceRun run;
    run.config = &g;
    run.scaler = make_service_scaler(g.config);
    const int first = g.pools.front();
    run.model = group_of_pool_[static_cast<std::size_t>(first)];
    keep_vllm_history_ = keep_vllm_history_ || std::holds_alternative<wva::WvaConfig>(g.config);
    // A planner reads its workers' ForwardPassMetrics: their engines keep them.
    if (std::holds_alternative<dynamo::PlannerConfig>(g.config))
      for (const int i : g.pools) pools_[static_cast<std::size_t>(i)].engine.record_forward_passes = true;
    services_.push_back(std::move(run));
  }
  scrape_every_ = seconds_to_micros(s.metrics.scrape_interval_s);
  if (s.cluster.provisioner != ProvisionerKind::FixedDelay) cluster_ = std::make_unique<ClusterModel>(s, make_node_provisioner(s), *this);
  dcgm_period_ = seconds_to_micros(s.metrics.dcgm_sample_period_s);
  realistic_metrics_ = s.metrics.pipeline == MetricsPipeline::Realistic;
  pipeline_.scrape_interval = scrape_every_;
  pipeline_.collect_interval = seconds_to_micros(s.metrics.dcgm_collect_interval_s);
  pipeline_.query_delay = seconds_to_micros(s.metrics.query_delay_s);
  timeout_ = seconds_to_micros(s.workload.timeout_s);
  log_policy_ = LogPolicy{s.output.decisions, s.output.hpa_syncs == HpaSyncLog::All, s.output.decision_detail};
  // Room for the requests a Poisson count will almost never exceed (mean + 4 σ), so the record
  // table is not copied as it grows. Speed only; bounded by the scenario's request limit.
  const double mean = expected_arrivals(s);
  result_.requests.reserve(static_cast<std::size_t>(mean + 4 * std::sqrt(mean) + 16));
}

RunResult World::run() {
  std::vector<std::int32_t> starting;
  for (Pool& p : pools_) {
    std::int64_t initial = p.config->autoscaler.replicas;
    // An HPA needs a replica to act on; with KEDA's minReplicaCount 0 the run may start scaled to zero.
    const AutoscalerConfig& a = p.config->autoscaler;
    if (a.hpa) initial = std::clamp<std::int64_t>(initial, is_keda(a.strategy) && a.keda.scales_to_zero() ? 0 : 1, Limits::kMaxReplicas);
    p.spec_replicas = static_cast<std::int32_t>(initial);
    starting.push_back(p.spec_replicas);
    // The service already runs when the scenario starts: its first replicas are Ready at t = 0,
    // on nodes that have been up for an hour (so no CPU-initialization or readiness-delay rules apply).
    for (std::int32_t k = 0; k < p.spec_replicas; ++k) create_ready_replica(p);
  }
  if (cluster_) {
    // In cluster mode they need their pods bound first: those the starting nodes hold stay Ready;
    // the others wait for nodes like any new replica. start() creates the pools' pods in order.
    std::int64_t pod = 0;
    for (Pool& p : pools_) {
      for (auto& r : p.replicas) {
        leave_ready(p, r);
        set_idle(p, r, false);
        r.state = ReplicaState::Pending;
        r.pod = pod;
        pod += p.config->group_size;
      }
    }
    cluster_->start(starting);
    settle();
  }

  if (s_.workload.closed_loop()) {
    // Closed loop: each client's first request; the next one follows its completion or drop.
    for (std::int64_t c = 0; c < s_.workload.concurrency; ++c) {
      const Micros start = workload_.client_start();
      if (start < end_) queue_.push(start, EventClass::Arrival, {EventKind::Arrival, 0, 0, static_cast<std::uint32_t>(c)});
    }
  } else {
    Request first;
    if (workload_.next(first)) {
      pending_arrival_ = first;
      queue_.push(first.arrived_at, EventClass::Arrival, {EventKind::Arrival, 0, 0, first.id});
    }
  }
  queue_.push(0, EventClass::Measure, {EventKind::Scrape});
  for (Pool& p : pools_) {
    for (std::size_t k = 0; k < p.scalers.size(); ++k) {
      queue_.push(p.scalers[k]->period(), EventClass::Control,
                  {EventKind::ScalerSync, static_cast<std::uint8_t>(k), static_cast<std::uint16_t>(p.index)});
    }
  }
  for (std::size_t k = 0; k < services_.size(); ++k)
    queue_.push(services_[k].scaler->period(), EventClass::Control, {EventKind::ServiceSync, 0, 0, static_cast<std::uint32_t>(k)});
  queue_.push(end_, EventClass::Control, {EventKind::End});

  // The next simulated time to report progress at (never, without a reporter).
  Micros report_every = 0, next_report = -1;
  if (progress_ && progress_->at && progress_->every_s > 0) {
    report_every = std::max(seconds_to_micros(progress_->every_s), std::max<Micros>(1, end_ / 1000));
    next_report = report_every;
  }
  while (!queue_.empty()) {
    auto ev = queue_.pop();
    ++result_.num_events;
    while (next_report > 0 && next_report <= std::min(ev.time, end_)) {
      progress_->at(micros_to_seconds(next_report));
      next_report += report_every;
    }
    meter_.event(meter_kind(ev.payload.kind), ev.time);
    advance_clock(ev.time);
    if (ev.payload.kind == EventKind::End) break;
    dispatch(ev.payload);
  }
  finish();
  return std::move(result_);
}

WorkMeter::Kind World::meter_kind(EventKind k) {
  switch (k) {
    case EventKind::Arrival: return WorkMeter::Arrival;
    case EventKind::StepEnd:
    case EventKind::KvLoaded: return WorkMeter::EngineStep;
    case EventKind::Timeout: return WorkMeter::Timeout;
    case EventKind::DcgmWindowStart:
    case EventKind::Scrape:
    case EventKind::VllmScrape:
    case EventKind::DcgmSampleStart:
    case EventKind::DcgmCollect: return WorkMeter::Measure;
    case EventKind::ScalerSync:
    case EventKind::ServiceSync: return WorkMeter::ScalerSync;
    case EventKind::Cluster:
    case EventKind::ClusterSettle: return WorkMeter::Cluster;
    default: return WorkMeter::Other;
  }
}

void World::file(Micros time, EventClass cls, const ClusterEvent& e) {
  queue_.push(std::max(time, now_), cls, {EventKind::Cluster, static_cast<std::uint8_t>(e.kind), 0, e.index, e.gen});
}

// ---- time-weighted accumulators ----------------------------------------------------------------

void World::advance_clock(Micros t) {
  if (t > now_) {
    // Integer µs, so the totals do not depend on how finely events cut time.
    const Micros dt = t - now_;
    for (Pool& p : pools_) {
      p.replica_micros += dt * p.live_replicas;
      p.idle_replica_micros += dt * p.idle_replicas;
    }
    now_ = t;
  }
}

void World::set_idle(Pool& p, Replica& r, bool idle) {
  if (idle && r.idle_since < 0) {
    r.idle_since = now_;
    ++p.idle_replicas;
  } else if (!idle && r.idle_since >= 0) {
    r.idle_since = -1;
    --p.idle_replicas;
  }
}

// ---- events -------------------------------------------------------------------------------------

void World::dispatch(const Payload& e) {
  Pool& p = pools_[e.pool];
  switch (e.kind) {
    case EventKind::Arrival: on_arrival(e.index); break;
    case EventKind::StepEnd:
      if (e.gen == p.replicas[e.index].step_gen) on_step_end(p, p.replicas[e.index]);
      break;
    case EventKind::NodeReady: on_node_ready(p, p.replicas[e.index]); break;
    case EventKind::LoadDone: on_load_done(p, p.replicas[e.index]); break;
    case EventKind::WarmupDone: on_warmup_done(p, p.replicas[e.index]); break;
    case EventKind::Sigterm: on_sigterm(p, p.replicas[e.index], Settle::Now); break;
    case EventKind::StopDeadline: on_stop_deadline(p, p.replicas[e.index]); break;
    case EventKind::Timeout: on_timeout(e.index); break;
    case EventKind::DcgmWindowStart: on_dcgm_window_start(); break;
    case EventKind::Scrape: on_scrape(); break;
    case EventKind::VllmScrape: on_vllm_scrape(p, p.replicas[e.index]); break;
    case EventKind::DcgmSampleStart: on_dcgm_sample_start(p, p.replicas[e.index]); break;
    case EventKind::DcgmCollect: on_dcgm_collect(p, p.replicas[e.index]); break;
    case EventKind::ScalerSync: on_scaler_sync(p, e.sub); break;
    case EventKind::ServiceSync: on_service_sync(e.index); break;
    case EventKind::KvLoaded: on_kv_loaded(e.index); break;
    case EventKind::Cluster:
      cluster_->on_event(ClusterEvent{static_cast<ClusterEvent::Kind>(e.sub), e.index, e.gen}, now_);
      // The instant's cluster events are followed by one settlement, after all of them.
      if (settle_at_ != now_) {
        settle_at_ = now_;
        queue_.push(now_, EventClass::Settle, {EventKind::ClusterSettle});
      }
      break;
    case EventKind::ClusterSettle:
      cluster_->settle(now_);
      settle();
      break;
    case EventKind::End: break;
  }
}

// An arrival: the open loop's next Poisson arrival, or a closed-loop client's request (`client`).
void World::on_arrival(std::uint32_t client) {
  Request req = pending_arrival_;
  if (s_.workload.closed_loop()) {
    if (!workload_.request_at(now_, req)) return;
    client_of_.push_back(client);
  }
  RequestRecord rec;
  rec.id = req.id;
  rec.arrived_at = micros_to_seconds(req.arrived_at);
  rec.model = req.model;
  // The first pool of its first role holds it until the router places it (on a variant, maybe).
  const ModelGroup& g = groups_[static_cast<std::size_t>(req.model)];
  rec.pool = !g.pools[static_cast<int>(PoolRole::Prefill)].empty() ? g.pools[static_cast<int>(PoolRole::Prefill)].front()
                                                                     : g.pools[static_cast<int>(PoolRole::Aggregated)].front();
  rec.prompt_tokens = req.prompt_tokens;
  rec.output_tokens = req.output_tokens;
  rec.prefix_id = req.prefix_id;
  rec.prefix_tokens = req.prefix_tokens;
  result_.requests.push_back(rec);
  Pool& p = pools_[static_cast<std::size_t>(rec.pool)];
  FrontendCounters& f = frontend_[static_cast<std::size_t>(rec.model)];
  ++f.started;  // the frontend observes the input length when the request starts
  f.isl_sum += rec.prompt_tokens;
  ++f.isl_count;
  ++arrivals_since_scrape_;
  ++p.arrivals_since_scrape;
  ++p.arrivals;
  // Arrivals come in time order and the timeout is fixed, so timeouts never go back in time.
  queue_.push_monotone(req.arrived_at + timeout_, EventClass::Timeout, {EventKind::Timeout, 0, 0, req.id});
  route(req.id);
  Request next;
  if (!s_.workload.closed_loop() && workload_.next(next)) {
    pending_arrival_ = next;
    queue_.push(next.arrived_at, EventClass::Arrival, {EventKind::Arrival, 0, 0, next.id});
  }
}

// The gateway's choice among the Ready replicas of the pools serving the request's model in `role`
// (its variants, in the scenario's order; each pool's replicas in creation order): least outstanding
// requests (ties → the first, the oldest), round robin, or the endpoint picker. Null when none is Ready.
Replica* World::pick_replica(const RequestRecord& rec, PoolRole role, int& pool) {
  ModelGroup& g = groups_[static_cast<std::size_t>(rec.model)];
  const std::vector<int>& pools = g.pools[static_cast<int>(role)];
  std::size_t ready = 0;
  for (const int i : pools) ready += pools_[static_cast<std::size_t>(i)].ready.size();
  if (ready == 0) return nullptr;
  meter_.counts().router_visits += static_cast<std::int64_t>(s_.router == Router::RoundRobin ? 1 : ready);
  if (s_.router == Router::RoundRobin) {
    std::size_t k = g.rr_next[static_cast<int>(role)]++ % ready;
    for (const int i : pools) {
      Pool& p = pools_[static_cast<std::size_t>(i)];
      if (k < p.ready.size()) {
        pool = i;
        return &p.replicas[p.ready[k]];
      }
      k -= p.ready.size();
    }
  }
  if (s_.router == Router::Epp) {
    std::vector<Endpoint> candidates;
    std::vector<std::pair<int, std::uint32_t>> where;
    candidates.reserve(ready);
    for (const int i : pools) {
      Pool& p = pools_[static_cast<std::size_t>(i)];
      for (const std::uint32_t id : p.ready) {
        const Engine& e = *p.replicas[id].engine;
        Endpoint c;
        c.server = (static_cast<std::uint64_t>(i) << 32) | id;
        c.waiting = e.num_requests_waiting();
        c.running = e.num_requests_running();
        c.kv_usage = e.kv_cache_usage(now_);
        c.cache_block_size = e.config().block_size;
        c.cache_num_blocks = e.total_kv_blocks();
        candidates.push_back(c);
        where.push_back({i, id});
      }
    }
    const char* profile = role == PoolRole::Prefill ? "prefill" : role == PoolRole::Decode ? "decode" : "default";
    const std::size_t k = epp_pick(s_.epp, s_.epp.profile_for(profile), candidates, rec.prefix_id, rec.prefix_tokens, rec.prompt_tokens, epp_index_,
                                   epp_ties_, nullptr);
    pool = where[k].first;
    return &pools_[static_cast<std::size_t>(pool)].replicas[where[k].second];
  }
  Replica* best = nullptr;
  int best_load = 0;
  for (const int i : pools) {
    Pool& p = pools_[static_cast<std::size_t>(i)];
    for (std::uint32_t id : p.ready) {  // in creation order: ties go to the oldest replica
      Replica& r = p.replicas[id];
      const int load = r.engine->num_requests_waiting() + r.engine->num_requests_running();
      if (!best || load < best_load) {
        best = &r;
        best_load = load;
        pool = i;
      }
    }
  }
  return best;
}

// The gateway: the request's model and role pick the pools, the router a Ready replica among theirs;
// with none Ready the request waits at the gateway until one is Ready or the client gives up.
void World::route(std::uint32_t request_id) {
  RequestRecord& rec = result_.requests[request_id];
  const PoolRole role = pools_[static_cast<std::size_t>(rec.pool)].config->role;
  int chosen = rec.pool;
  Replica* best = pick_replica(rec, role, chosen);
  if (!best) {
    groups_[static_cast<std::size_t>(rec.model)].gateway[static_cast<int>(role)].push_back(request_id);
    return;
  }
  if (chosen != rec.pool) {
    // Placed on another variant: it is that pool's arrival now (an arrival still to be scraped moves along).
    Pool& from = pools_[static_cast<std::size_t>(rec.pool)];
    Pool& to = pools_[static_cast<std::size_t>(chosen)];
    --from.arrivals;
    ++to.arrivals;
    if (from.arrivals_since_scrape > 0) {
      --from.arrivals_since_scrape;
      ++to.arrivals_since_scrape;
    }
    rec.pool = chosen;
  }
  Pool& p = pools_[static_cast<std::size_t>(chosen)];
  if (role == PoolRole::Decode) rec.decode_scheduled_at = micros_to_seconds(now_);
  else rec.scheduled_at = micros_to_seconds(now_);
  rec.replica = static_cast<std::int32_t>(best->id);
  // Disaggregated, vLLM's proxy sends the prefill engine max_tokens=1 with do_remote_decode and the
  // decode engine the request with do_remote_prefill (the NIXL connector's kv_transfer_params).
  RequestOptions options;
  options.prefix_id = rec.prefix_id;
  options.prefix_tokens = rec.prefix_tokens;
  options.role = role == PoolRole::Prefill ? RequestRole::PrefillOnly : role == PoolRole::Decode ? RequestRole::DecodeOnly : RequestRole::Whole;
  if (!best->engine->add_request(request_id, rec.prompt_tokens, rec.output_tokens, now_, options)) {
    // vLLM's server validates the length before the engine sees the request: prompt + max_tokens
    // over max_model_len is answered at once with HTTP 400 (vllm/v1/engine/processor.py,
    // _validate_model_input; vllm/entrypoints/openai/serving_engine.py, _validate_input: "This
    // model's maximum context length is ... tokens"). The client has its answer: no timeout follows.
    rec.rejected_at = micros_to_seconds(now_);
    ++p.rejected;
    release_prefill_kv(rec, true);  // a decode engine with a smaller max_model_len than its prefill's
    client_done(rec);  // a closed-loop client sends its next request on the 400
    return;
  }
  best->assigned.push_back(request_id);
  set_idle(p, *best, false);
  if (best->stepping) {
    cut_step(p, *best);
  } else {
    start_step_if_idle(p, *best);
  }
}

// The batch changed during a step: the engine sees it at the next step boundary.
void World::cut_step(Pool& p, Replica& r) {
  Micros end = r.engine->truncate_step(now_);
  if (end != r.step_end) {
    r.step_end = end;
    ++r.step_gen;
    queue_.push(end, EventClass::Completion, {EventKind::StepEnd, 0, static_cast<std::uint16_t>(p.index), r.id, r.step_gen});
  }
}

void World::start_step_if_idle(Pool& p, Replica& r) {
  if (r.stepping) return;
  // A decode engine's scheduler allocates blocks for remote KV even with nothing to run (vLLM's engine
  // core keeps scheduling while requests wait for it), and its step's scheduler may start more loads.
  const bool decode = p.config->role == PoolRole::Decode;
  if (decode) {
    kv_events_.clear();
    r.engine->start_kv_loads(now_, kv_events_);
    on_kv_loads(p, r, kv_events_);
  }
  if (r.stepping || !r.engine->has_work()) return;
  Micros d;
  if (decode) {
    kv_events_.clear();
    d = r.engine->begin_step(now_, kv_events_);
  } else {
    d = r.engine->begin_step(now_);
  }
  r.stepping = true;
  r.step_end = now_ + d;
  ++r.step_gen;
  queue_.push(r.step_end, EventClass::Completion, {EventKind::StepEnd, 0, static_cast<std::uint16_t>(p.index), r.id, r.step_gen});
  if (decode) on_kv_loads(p, r, kv_events_);
}

void World::on_step_end(Pool& p, Replica& r) {
  r.stepping = false;
  if (r.state == ReplicaState::Gone) return;
  engine_events_.clear();
  r.engine->end_step(now_, engine_events_);
  meter_.counts().sequences += r.engine->num_requests_running();
  for (const auto& e : engine_events_) {
    RequestRecord& rec = result_.requests[e.request_id];
    if (rec.dropped_at) continue;
    if (e.kind == EngineEvent::PrefillDone) {
      hand_off(p, r, rec, e.time);
    } else if (e.kind == EngineEvent::KvLoadStarted) {
      kv_events_.assign(1, e);
      on_kv_loads(p, r, kv_events_);
    } else if (e.kind == EngineEvent::FirstToken && !rec.first_token_at) {
      rec.first_token_at = micros_to_seconds(e.time);
      const double ttft = *rec.first_token_at - rec.arrived_at;
      ttft_window_.push(e.time, ttft);
      // A pool's series shows its servers' TTFT: a decode pool's from the hand-off (the request's
      // own TTFT is the run's series).
      if (s_.pools_declared) p.ttft_window.push(e.time, rec.decode_scheduled_at ? *rec.first_token_at - *rec.decode_scheduled_at : ttft);
      FrontendCounters& f = frontend_[static_cast<std::size_t>(rec.model)];
      f.ttft_sum += ttft;
      ++f.ttft_count;
      // vLLM's own histogram: from the request reaching this server to its first token.
      if (p.rule_ttft) p.server_ttft_1m.push(e.time, *rec.first_token_at - (rec.decode_scheduled_at ? *rec.decode_scheduled_at : *rec.scheduled_at));
    } else if (e.kind == EngineEvent::Finished) {
      rec.completed_at = micros_to_seconds(e.time);
      ++p.completed;
      if (!rec.first_token_at) rec.first_token_at = rec.completed_at;
      FrontendCounters& f = frontend_[static_cast<std::size_t>(rec.model)];
      f.osl_sum += rec.output_tokens;
      ++f.osl_count;
      f.duration_sum += *rec.completed_at - rec.arrived_at;
      ++f.duration_count;
      if (rec.output_tokens > 1) {
        f.itl_sum += *rec.completed_at - *rec.first_token_at;  // the gaps between its tokens
        f.itl_count += rec.output_tokens - 1;
      }
      const double itl = rec.output_tokens > 1 ? (*rec.completed_at - *rec.first_token_at) / (rec.output_tokens - 1) : 0.0;
      if (*rec.first_token_at - rec.arrived_at > s_.slo.ttft_s || itl > s_.slo.itl_s) note_slo_miss(rec);
      client_done(rec);
    }
  }
  if (r.engine->has_work()) {
    start_step_if_idle(p, r);
  } else if (r.state == ReplicaState::Draining) {
    // After SIGTERM (vLLM's --shutdown-timeout) it exits with nothing left; during the preStop
    // sleep the hook still runs, and the pod with it.
    if (r.sigterm_sent) remove_replica(p, r, "exited after SIGTERM: every request in flight finished", r.term_cause);
  } else if (r.state == ReplicaState::Ready) {
    set_idle(p, r, true);
  }
}

void World::on_timeout(std::uint32_t request_id) {
  RequestRecord& rec = result_.requests[request_id];
  if (rec.first_token_at || rec.completed_at || rec.dropped_at || rec.rejected_at) return;
  drop(rec, FailureCause::ClientTimeout);
  release_prefill_kv(rec, true);  // handed off, its KV still held by the prefill replica
  if (rec.replica >= 0) {
    Pool& p = pools_[static_cast<std::size_t>(rec.pool)];
    Replica& r = p.replicas[static_cast<std::size_t>(rec.replica)];
    if (r.state != ReplicaState::Gone) {
      r.engine->abort_request(request_id);
      if (r.stepping) cut_step(p, r);
      after_abort(p, r);
    }
  }
  // A request still at the gateway is skipped when the queue is next drained.
}

void World::after_abort(Pool& p, Replica& r) {
  if (r.engine->has_work() || r.stepping) return;
  if (r.state == ReplicaState::Draining) {
    if (r.sigterm_sent) remove_replica(p, r, "exited after SIGTERM: its last request was abandoned by its client", r.term_cause);
  } else if (r.state == ReplicaState::Ready) {
    set_idle(p, r, true);
  }
}

void World::drop(RequestRecord& rec, FailureCause cause) {
  rec.dropped_at = micros_to_seconds(now_);
  rec.failed_by = cause;
  ++num_dropped_;
  ++pools_[static_cast<std::size_t>(rec.pool)].dropped;
  note_slo_miss(rec);
  client_done(rec);
}

// Closed loop: the request's client has its answer (or gave up, or lost it) and sends its next one
// now. As an Arrival event it comes after the instant's engine steps (kernel.hpp), so a step that
// began at this instant runs without it, as a real client's round trip makes it wait.
void World::client_done(const RequestRecord& rec) {
  if (!s_.workload.closed_loop()) return;
  queue_.push(now_, EventClass::Arrival, {EventKind::Arrival, 0, 0, client_of_[rec.id]});
}

// ---- disaggregated serving: prefill → KV transfer → decode ---------------------------------------

// The prefill engine sampled the request's one token and keeps its KV: the request goes to its model's
// decode pools (as the disaggregated proxy then sends it to a decode engine), arriving there now.
void World::hand_off(Pool& p, Replica& r, RequestRecord& rec, Micros at) {
  rec.prefill_done_at = micros_to_seconds(at);
  // The prefill server's own TTFT (its one token), in its pool's series and its P99 TTFT rule.
  p.ttft_window.push(at, *rec.prefill_done_at - *rec.scheduled_at);
  if (p.rule_ttft) p.server_ttft_1m.push(at, *rec.prefill_done_at - *rec.scheduled_at);
  rec.prefill_pool = p.index;
  rec.prefill_replica = static_cast<std::int32_t>(r.id);
  rec.kv_held = true;
  ++p.completed;  // its part of the request is done
  const ModelGroup& g = groups_[static_cast<std::size_t>(rec.model)];
  rec.pool = g.pools[static_cast<int>(PoolRole::Decode)].front();
  rec.replica = -1;
  Pool& d = pools_[static_cast<std::size_t>(rec.pool)];
  ++d.arrivals;
  ++d.arrivals_since_scrape;
  route(rec.id);
}

// KV transfers start (KvLoadStarted): each arrives after its link's time; with nothing to load (the
// decode engine's own prefix cache held it all) the prefill's KV is released at once.
void World::on_kv_loads(Pool& p, Replica& r, const std::vector<EngineEvent>& events) {
  for (const EngineEvent& e : events) {
    if (e.kind != EngineEvent::KvLoadStarted) continue;
    RequestRecord& rec = result_.requests[e.request_id];
    if (rec.dropped_at) continue;
    if (e.tokens == 0) {
      rec.kv_loaded_at = micros_to_seconds(e.time);
      release_prefill_kv(rec, false);
      continue;
    }
    double seconds = s_.kv_transfer.latency_s;
    if (rec.prefill_pool >= 0) {
      const Pool& from = pools_[static_cast<std::size_t>(rec.prefill_pool)];
      seconds = kv_transfer_seconds(from, from.replicas[static_cast<std::size_t>(rec.prefill_replica)], p, r, e.tokens);
    }
    rec.kv_transfer_s = seconds;
    queue_.push(std::max(now_, e.time + seconds_to_micros(seconds)), EventClass::Completion, {EventKind::KvLoaded, 0, static_cast<std::uint16_t>(p.index), e.request_id});
  }
}

// NIXL's read: the decode engine has the KV, the prefill engine frees it (request_finished's delayed free).
void World::on_kv_loaded(std::uint32_t request_id) {
  RequestRecord& rec = result_.requests[request_id];
  if (rec.dropped_at || rec.replica < 0) return;
  Pool& p = pools_[static_cast<std::size_t>(rec.pool)];
  Replica& r = p.replicas[static_cast<std::size_t>(rec.replica)];
  if (r.state == ReplicaState::Gone) return;
  rec.kv_loaded_at = micros_to_seconds(now_);
  r.engine->kv_loaded(request_id, now_);
  if (r.stepping) cut_step(p, r);
  else start_step_if_idle(p, r);
  release_prefill_kv(rec, false);
}

// The prefill replica lets go of the request's KV: read by the decode side, or (abort) not wanted
// any more (the request failed or was dropped).
void World::release_prefill_kv(RequestRecord& rec, bool abort) {
  if (!rec.kv_held) return;
  rec.kv_held = false;
  Pool& p = pools_[static_cast<std::size_t>(rec.prefill_pool)];
  Replica& r = p.replicas[static_cast<std::size_t>(rec.prefill_replica)];
  if (r.state == ReplicaState::Gone) return;
  if (abort) r.engine->abort_request(rec.id);
  else r.engine->release_kv(rec.id);
  if (r.stepping) cut_step(p, r);
  else start_step_if_idle(p, r);
  after_abort(p, r);
}

// Bytes over the link: each of the sender's GPUs sends its shard of the KV (TP shards the KV heads,
// PP the layers) over its own link at once: NVLink inside a node, the node's network share across
// nodes (RDMA; EFA on AWS); plus the fixed latency of the transfer's request and notification.
double World::kv_transfer_seconds(const Pool& from, const Replica& sender, const Pool& to, const Replica& receiver, int tokens) const {
  const double bytes = static_cast<double>(tokens) * to.engine.profile.kv_bytes_per_token;
  const KvTransferConfig& k = s_.kv_transfer;
  double per_gpu = k.network_gb_per_s > 0 ? k.network_gb_per_s : 50.0;  // 50: a p5.48xlarge's 3,200 Gbps EFA over 8 GPUs
  if (cluster_ && sender.pod >= 0 && receiver.pod >= 0) {
    const ClusterState& cs = cluster_->state();
    const std::int32_t a = cs.pods[static_cast<std::size_t>(sender.pod)].node, b = cs.pods[static_cast<std::size_t>(receiver.pod)].node;
    if (a >= 0 && a == b) {
      per_gpu = k.nvlink_gb_per_s;
    } else if (a >= 0 && k.network_gb_per_s <= 0) {
      const InstanceType& t = cs.types[static_cast<std::size_t>(cs.nodes[static_cast<std::size_t>(a)].type_index)];
      if (t.network_bandwidth_mbps > 0 && t.gpus > 0) per_gpu = static_cast<double>(t.network_bandwidth_mbps) / 8e3 / t.gpus;
    }
  }
  const double lanes = static_cast<double>(std::max(1, from.gpus_per_replica));
  return k.latency_s + bytes / (per_gpu * 1e9 * lanes);
}

// ---- what the cluster reported ------------------------------------------------------------------

// Applies the cluster's notices (pods bound, replicas evicted) until it has none left, then logs its
// decisions. The handlers may call into the cluster again (an eviction makes the ReplicaSet create a
// pod); what those calls report is settled here too (Settle::ByCaller), in the order it happened.
void World::settle() {
  for (std::vector<ClusterNotice> batch = cluster_->take_notices(); !batch.empty(); batch = cluster_->take_notices()) {
    for (const ClusterNotice& n : batch) {
      Pool& p = pools_[static_cast<std::size_t>(n.pool)];
      Replica& r = p.replicas[static_cast<std::size_t>(n.replica)];
      if (n.kind == ClusterNotice::Kind::ReplicaPodEvicted) {
        evict_replica(p, r, n.reason, n.max_grace);
      } else if (n.kind == ClusterNotice::Kind::ReplicaPodKilled) {
        kill_with_instance(p, r, n.reason);
      } else if (r.state != ReplicaState::Pending || !member_bound(p, r, n.container_start)) {
        continue;
      } else {
        fit_engine_to_node(p, r);  // the engine of the GPU it got
        if (n.time == 0 && r.crash.empty()) {
          enter_ready(p, r);  // a starting replica on a starting node: already serving
        } else {
          on_node_ready(p, r, r.members_start);
        }
      }
    }
  }
  log_partly_placed();
  std::int64_t spec = 0;
  for (const Pool& p : pools_) spec += p.spec_replicas;
  std::vector<ClusterLog> logs = cluster_->take_logs();
  meter_.counts().decisions += static_cast<std::int64_t>(logs.size());
  for (ClusterLog& l : logs) {
    if (!s_.output.decisions) continue;
    log_decision(l.time, std::move(l.controller), "", live_replicas_, spec, std::move(l.reason), l.action + ": " + l.explanation);
  }
}

// Appends one decision to the log (the caller checks output.decisions).
void World::log_decision(Micros t, std::string controller, const std::string& pool, std::int64_t current, std::int64_t desired,
                         std::string reason, std::string explanation) {
  DecisionRecord rec;
  rec.t_s = micros_to_seconds(t);
  rec.controller = std::move(controller);
  rec.pool = pool;
  rec.current_replicas = static_cast<std::int32_t>(current);
  rec.desired_replicas = static_cast<std::int32_t>(desired);
  rec.reason = std::move(reason);
  rec.explanation = std::move(explanation);
  ++meter_.counts().decisions;
  log_.add(std::move(rec));
}

void World::log_lifecycle(const Pool& p, const Replica& r, std::string text) {
  if (s_.output.decisions) log_decision(now_, "lifecycle", p.log_name, p.live_replicas, p.spec_replicas, state_name(r.state), std::move(text));
}

// A step of a pod's termination (Terminating, SIGTERM, SIGKILL, ShutdownTimeout, InstanceTerminated).
void World::log_termination(const Pool& p, const char* step, std::string text) {
  if (s_.output.decisions) log_decision(now_, "lifecycle", p.log_name, p.live_replicas, p.spec_replicas, step, std::move(text));
}

}  // namespace sim

RunResult run_simulation(const Scenario& scenario, const WorkLimits& limits, const ProgressReport& progress) {
  check_work_budget(scenario, limits);
  sim::World world(scenario, limits);
  world.report_progress(progress);
  return world.run();
}

}  // namespace gpuscale
