// The coupled simulation loop: the only place that mutates the world. Controllers (HPA,
// provisioner) are pure functions fed with snapshots; engines advance one step per event.
#include "sim/simulation.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>

#include "cluster/cluster_model.hpp"
#include "serving/engine.hpp"
#include "serving/engine_profiles.hpp"
#include "autoscaling/hpa.hpp"
#include "autoscaling/hpa_json.hpp"
#include "kernel/kernel.hpp"
#include "provisioning/provisioner.hpp"
#include "provisioning/provisioner_factory.hpp"
#include "serving/workload.hpp"

namespace gpuscale {

namespace {

// Kubernetes' default terminationGracePeriodSeconds: a replica being removed keeps serving what it
// already holds for this long, then whatever is left is lost (SIGKILL).
constexpr Micros kTerminationGrace = 30 * kMicrosPerSecond;

enum class ReplicaState : std::uint8_t { Pending, Loading, WarmingUp, Ready, Draining, Gone };

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

struct Replica {
  std::uint32_t id = 0;
  ReplicaState state = ReplicaState::Pending;
  Micros created_at = 0;
  Micros node_ready_at = -1;  // container start
  Micros ready_at = -1;       // readiness transition
  std::unique_ptr<Engine> engine;
  bool stepping = false;
  std::uint32_t step_gen = 0;  // bumped whenever the step under way gets a new end time
  Micros step_end = 0;
  Micros busy_at_window_start = 0;  // engine busy time when the current DCGM sample window opened
  bool window_open = false;
  Micros idle_since = -1;           // Ready with nothing to do since then (-1: not idle)
  std::vector<std::uint32_t> assigned;  // requests the router gave it (to account for losses)
  std::int64_t pod = -1;                // cluster mode: its pod in the ClusterModel
};

enum class EventKind : std::uint8_t { Arrival, StepEnd, NodeReady, LoadDone, WarmupDone, DrainDeadline, ClusterWake,
                                      Timeout, DcgmWindowStart, Scrape, HpaSync, KedaPoll, End };

struct Payload {
  EventKind kind;
  std::uint32_t index;    // replica id or request id
  std::uint32_t gen = 0;  // StepEnd: the replica's step generation (a cut macro step leaves a stale event)
};

// What the last scrape saw of one replica.
struct ScrapedReplica {
  std::uint32_t replica;
  bool has_gpu_metrics;   // DCGM exports for pods that hold GPUs
  bool has_vllm_metrics;  // vLLM's /metrics answers only once the server is up (Ready)
  std::int64_t gpu_util;  // percent 0-100 (DCGM_FI_DEV_GPU_UTIL is an int64)
  double fb_used_mib;
  std::int32_t waiting, running;
  double kv_usage;
  Micros sampled_at;
};

// Nearest rank: the smallest value with at least a share p of the sample at or below it.
std::size_t nearest_rank(std::size_t n, double p) {
  std::size_t rank = static_cast<std::size_t>(p * static_cast<double>(n) + 0.999999999);
  return std::min(std::max<std::size_t>(rank, 1), n);
}

// One percentile of an unsorted sample (reorders it).
double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  auto nth = v.begin() + static_cast<std::ptrdiff_t>(nearest_rank(v.size(), p) - 1);
  std::nth_element(v.begin(), nth, v.end());
  return *nth;
}

std::string fmt(const char* format, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, a, b, c, d);
  return buf;
}

class Simulation {
 public:
  explicit Simulation(const Scenario& s)
      : s_(s),
        end_(seconds_to_micros(s.duration_s)),
        workload_(s.workload, s.seed, end_),
        fixed_nodes_(seconds_to_micros(s.cold_start.warm_nodes ? 0 : s.cold_start.node_provisioning_s)) {
    engine_config_.profile = engine_profile(s.engine.profile);
    engine_config_.max_num_seqs = static_cast<int>(s.engine.max_num_seqs);
    engine_config_.max_num_batched_tokens = static_cast<int>(s.engine.max_num_batched_tokens);
    engine_config_.gpu_memory_utilization = s.engine.gpu_memory_utilization;
    engine_config_.max_decode_substeps = s.engine.step_coalescing ? 512 : 1;  // a cut macro step wastes little; long decodes need long ones
    gpus_per_replica_ = engine_config_.profile.tensor_parallel;
    scrape_every_ = seconds_to_micros(s.metrics.scrape_interval_s);
    round_robin_ = s.router == "round_robin";
    if (s.cluster.provisioner != "fixed") cluster_ = std::make_unique<ClusterModel>(s, make_node_provisioner(s));
    dcgm_period_ = seconds_to_micros(s.metrics.dcgm_sample_period_s);
    timeout_ = seconds_to_micros(s.workload.timeout_s);
    hpa_json_ = autoscaler_hpa_spec(s.autoscaler);
    if (!hpa_json_.is_null()) {
      hpa_spec_ = hpa::parse_hpa_spec(hpa_json_, s.autoscaler.strategy == "custom" ? "/autoscaler/hpa" : "/autoscaler");
      flags_.tolerance = s.autoscaler.tolerance;
      for (const auto& m : hpa_spec_.metrics) {
        if (m.type == hpa::MetricSourceType::Pods) pod_metric_names_.push_back(m.metric.name);
      }
      flags_.downscale_stabilization_s = s.autoscaler.downscale_stabilization_s;
    }
    keda_activation_ = (s.autoscaler.strategy == "queue_depth" || s.autoscaler.strategy == "http_concurrency") &&
                       s.autoscaler.keda.set && s.autoscaler.keda.min_replica_count == 0;
    // Room for the requests a Poisson count will almost never exceed (mean + 4 σ), so the record
    // table is not copied as it grows. Speed only; bounded by the scenario's request limit.
    const double mean = expected_arrivals(s);
    result_.requests.reserve(static_cast<std::size_t>(mean + 4 * std::sqrt(mean) + 16));
  }

  RunResult run() {
    std::int64_t initial = s_.autoscaler.replicas;
    // An HPA needs a replica to act on; with KEDA's minReplicaCount 0 the run may start scaled to zero.
    if (!hpa_json_.is_null()) initial = std::clamp<std::int64_t>(initial, keda_activation_ ? 0 : 1, Limits::kMaxReplicas);
    spec_replicas_ = static_cast<std::int32_t>(initial);
    // The service already runs when the scenario starts: its first replicas are Ready at t = 0,
    // on nodes that have been up for an hour (so no CPU-initialization or readiness-delay rules apply).
    for (std::int32_t k = 0; k < spec_replicas_; ++k) create_ready_replica();
    if (cluster_) {
      // In cluster mode they need their pods bound first: those the starting nodes hold stay Ready;
      // the others wait for nodes like any new replica.
      for (auto& r : replicas_) {
        leave_ready(r);
        set_idle(r, false);
        r.state = ReplicaState::Pending;
        r.pod = static_cast<std::int64_t>(r.id);  // start() creates pods 0 … n-1 for replicas 0 … n-1
      }
      cluster_->set_expected_replicas(spec_replicas_);
      cluster_->start(spec_replicas_, notices_);
      handle_cluster();
    }

    Request first;
    if (workload_.next(first)) {
      pending_arrival_ = first;
      queue_.push(first.arrived_at, EventClass::kArrival, {EventKind::Arrival, first.id});
    }
    queue_.push(0, EventClass::kMeasure, {EventKind::Scrape, 0});
    if (!hpa_json_.is_null()) {
      queue_.push(seconds_to_micros(s_.autoscaler.sync_period_s), EventClass::kControl, {EventKind::HpaSync, 0});
    }
    if (keda_activation_) {
      queue_.push(seconds_to_micros(s_.autoscaler.keda.polling_interval_s), EventClass::kControl, {EventKind::KedaPoll, 0});
    }
    queue_.push(end_, EventClass::kControl, {EventKind::End, 0});

    while (!queue_.empty()) {
      auto ev = queue_.pop();
      ++result_.num_events;
      advance_clock(ev.time);
      if (ev.payload.kind == EventKind::End) break;
      dispatch(ev.payload);
    }
    finish();
    return std::move(result_);
  }

 private:
  // ---- time-weighted accumulators ------------------------------------------------------------
  void advance_clock(Micros t) {
    if (t > now_) {
      // Integer µs, so the totals do not depend on how finely events cut time.
      const Micros dt = t - now_;
      replica_micros_ += dt * live_replicas_;
      idle_replica_micros_ += dt * idle_replicas_;
      now_ = t;
    }
  }

  void set_idle(Replica& r, bool idle) {
    if (idle && r.idle_since < 0) {
      r.idle_since = now_;
      ++idle_replicas_;
    } else if (!idle && r.idle_since >= 0) {
      r.idle_since = -1;
      --idle_replicas_;
    }
  }

  // ---- events -----------------------------------------------------------------------------------
  void dispatch(const Payload& p) {
    switch (p.kind) {
      case EventKind::Arrival: on_arrival(); break;
      case EventKind::StepEnd:
        if (p.gen == replicas_[p.index].step_gen) on_step_end(replicas_[p.index]);
        break;
      case EventKind::NodeReady: on_node_ready(replicas_[p.index]); break;
      case EventKind::LoadDone: on_load_done(replicas_[p.index]); break;
      case EventKind::WarmupDone: on_warmup_done(replicas_[p.index]); break;
      case EventKind::DrainDeadline: on_drain_deadline(replicas_[p.index]); break;
      case EventKind::ClusterWake:
        if (p.gen == cluster_gen_) {
          cluster_wake_ = -1;
          cluster_->advance(now_, notices_);
          handle_cluster();
        }
        break;
      case EventKind::Timeout: on_timeout(p.index); break;
      case EventKind::DcgmWindowStart: on_dcgm_window_start(); break;
      case EventKind::Scrape: on_scrape(); break;
      case EventKind::HpaSync: on_hpa_sync(); break;
      case EventKind::KedaPoll: on_keda_poll(); break;
      case EventKind::End: break;
    }
  }

  void on_arrival() {
    const Request req = pending_arrival_;
    RequestRecord rec;
    rec.id = req.id;
    rec.arrived_at = micros_to_seconds(req.arrived_at);
    rec.prompt_tokens = req.prompt_tokens;
    rec.output_tokens = req.output_tokens;
    result_.requests.push_back(rec);
    ++arrivals_since_scrape_;
    // Arrivals come in time order and the timeout is fixed, so timeouts never go back in time.
    queue_.push_monotone(req.arrived_at + timeout_, EventClass::kTimeout, {EventKind::Timeout, req.id});
    route(req.id);
    Request next;
    if (workload_.next(next)) {
      pending_arrival_ = next;
      queue_.push(next.arrived_at, EventClass::kArrival, {EventKind::Arrival, next.id});
    }
  }

  // The gateway: least outstanding requests among Ready replicas (ties → the oldest), or round robin.
  // With no Ready replica the request waits at the gateway until one is Ready or the client gives up.
  void route(std::uint32_t request_id) {
    Replica* best = nullptr;
    if (ready_.empty()) {
      // fall through: held at the gateway
    } else if (round_robin_) {
      best = &replicas_[ready_[rr_next_++ % ready_.size()]];
    } else {
      int best_load = 0;
      for (std::uint32_t id : ready_) {  // in creation order: ties go to the oldest replica
        Replica& r = replicas_[id];
        int load = r.engine->num_requests_waiting() + r.engine->num_requests_running();
        if (!best || load < best_load) {
          best = &r;
          best_load = load;
        }
      }
    }
    if (!best) {
      gateway_queue_.push_back(request_id);
      return;
    }
    RequestRecord& rec = result_.requests[request_id];
    rec.scheduled_at = micros_to_seconds(now_);
    rec.replica = static_cast<std::int32_t>(best->id);
    best->engine->add_request(request_id, rec.prompt_tokens, rec.output_tokens, now_);
    best->assigned.push_back(request_id);
    set_idle(*best, false);
    if (best->stepping) {
      cut_step(*best);
    } else {
      start_step_if_idle(*best);
    }
  }

  // The batch changed during a step: the engine sees it at the next step boundary.
  void cut_step(Replica& r) {
    Micros end = r.engine->truncate_step(now_);
    if (end != r.step_end) {
      r.step_end = end;
      ++r.step_gen;
      queue_.push(end, EventClass::kCompletion, {EventKind::StepEnd, r.id, r.step_gen});
    }
  }

  void start_step_if_idle(Replica& r) {
    if (r.stepping || !r.engine->has_work()) return;
    Micros d = r.engine->begin_step(now_);
    r.stepping = true;
    r.step_end = now_ + d;
    ++r.step_gen;
    queue_.push(r.step_end, EventClass::kCompletion, {EventKind::StepEnd, r.id, r.step_gen});
  }

  void on_step_end(Replica& r) {
    r.stepping = false;
    if (r.state == ReplicaState::Gone) return;
    engine_events_.clear();
    r.engine->end_step(now_, engine_events_);
    for (const auto& e : engine_events_) {
      RequestRecord& rec = result_.requests[e.request_id];
      if (rec.dropped_at) continue;
      if (e.kind == EngineEvent::FirstToken && !rec.first_token_at) {
        rec.first_token_at = micros_to_seconds(e.time);
        ttft_window_.push_back({e.time, *rec.first_token_at - rec.arrived_at});
      } else if (e.kind == EngineEvent::Finished) {
        rec.completed_at = micros_to_seconds(e.time);
        ++num_completed_;
        if (!rec.first_token_at) rec.first_token_at = rec.completed_at;
      }
    }
    if (r.engine->has_work()) {
      start_step_if_idle(r);
    } else if (r.state == ReplicaState::Draining) {
      remove_replica(r, "drained: no requests left");
    } else if (r.state == ReplicaState::Ready) {
      set_idle(r, true);
    }
  }

  void on_timeout(std::uint32_t request_id) {
    RequestRecord& rec = result_.requests[request_id];
    if (rec.first_token_at || rec.completed_at || rec.dropped_at) return;
    drop(rec);
    if (rec.replica >= 0) {
      Replica& r = replicas_[static_cast<std::size_t>(rec.replica)];
      if (r.state != ReplicaState::Gone) {
        r.engine->abort_request(request_id);
        if (r.stepping) cut_step(r);
        after_abort(r);
      }
    }
    // A request still at the gateway is skipped when the queue is next drained.
  }

  void after_abort(Replica& r) {
    if (r.engine->has_work() || r.stepping) return;
    if (r.state == ReplicaState::Draining) {
      remove_replica(r, "drained: last request abandoned by its client");
    } else if (r.state == ReplicaState::Ready) {
      set_idle(r, true);
    }
  }

  void drop(RequestRecord& rec) {
    rec.dropped_at = micros_to_seconds(now_);
    ++num_dropped_;
  }

  // ---- replica lifecycle ------------------------------------------------------------------------
  void on_node_ready(Replica& r) {
    if (r.state != ReplicaState::Pending) return;
    r.state = ReplicaState::Loading;
    r.node_ready_at = now_;
    queue_.push(now_ + seconds_to_micros(s_.cold_start.model_load_s), EventClass::kCompletion, {EventKind::LoadDone, r.id});
  }

  void on_load_done(Replica& r) {
    if (r.state != ReplicaState::Loading) return;
    r.state = ReplicaState::WarmingUp;
    queue_.push(now_ + seconds_to_micros(s_.cold_start.warmup_s), EventClass::kCompletion, {EventKind::WarmupDone, r.id});
  }

  void on_warmup_done(Replica& r) {
    if (r.state != ReplicaState::WarmingUp) return;
    r.state = ReplicaState::Ready;
    r.ready_at = now_;
    ++ready_replicas_;
    ready_.insert(std::upper_bound(ready_.begin(), ready_.end(), r.id), r.id);
    if (cluster_ && r.pod >= 0) cluster_->set_pod_ready(static_cast<std::uint32_t>(r.pod), true);  // what a PDB counts
    set_idle(r, true);
    // Requests held at the gateway go out now, oldest first.
    std::deque<std::uint32_t> waiting;
    waiting.swap(gateway_queue_);
    for (std::uint32_t id : waiting) {
      if (!result_.requests[id].dropped_at) route(id);
    }
  }

  // ---- layer 1 -----------------------------------------------------------------------------------
  // Applies what the cluster reported (pods bound, replicas evicted), logs its decisions and re-arms
  // its wake-up. Re-entrant calls (an eviction leading to a new pod) append to the same queue.
  void handle_cluster() {
    if (handling_cluster_) return;
    handling_cluster_ = true;
    while (!notices_.empty()) {
      std::vector<ClusterNotice> batch;
      batch.swap(notices_);
      for (const ClusterNotice& n : batch) {
        Replica& r = replicas_[static_cast<std::size_t>(n.replica)];
        if (n.kind == ClusterNotice::ReplicaPodBound) {
          if (r.state != ReplicaState::Pending) continue;
          if (n.time == 0) {  // a starting replica on a starting node: already serving
            r.state = ReplicaState::Ready;
            ready_.insert(std::upper_bound(ready_.begin(), ready_.end(), r.id), r.id);
            ++ready_replicas_;
            cluster_->set_pod_ready(static_cast<std::uint32_t>(r.pod), true);
            set_idle(r, true);
          } else {
            on_node_ready(r);
          }
        } else {
          evict_replica(r, n.reason);
        }
      }
    }
    for (ClusterLog& l : cluster_->take_logs()) {
      if (!s_.output.decisions) continue;
      log_decision(l.time, std::move(l.controller), live_replicas_, spec_replicas_, std::move(l.reason),
                   l.action + ": " + l.explanation);
    }
    const Micros t = cluster_->next_event_time();
    if (t >= 0 && t != cluster_wake_) {
      cluster_wake_ = t;
      queue_.push(std::max(t, now_), EventClass::kControl, {EventKind::ClusterWake, 0, ++cluster_gen_});
    }
    handling_cluster_ = false;
  }

  // A node removal took the replica's pod: what it held fails (or goes back to the gateway), and the
  // ReplicaSet, still wanting spec_replicas_, makes a new replica that starts from Pending.
  void evict_replica(Replica& r, const std::string& reason) {
    if (r.state == ReplicaState::Gone) return;
    std::int64_t lost = 0, retried = 0;
    if (s_.cluster.retry_evicted_requests) {
      std::vector<std::uint32_t> again;
      for (std::uint32_t id : r.assigned) {
        RequestRecord& rec = result_.requests[id];
        if (rec.completed_at || rec.dropped_at) continue;
        rec.scheduled_at.reset();
        rec.first_token_at.reset();
        rec.replica = -1;
        again.push_back(id);
      }
      r.assigned.clear();
      retried = static_cast<std::int64_t>(again.size());
      in_eviction_ = true;
      remove_replica(r, ("evicted: node removed (" + reason + ")").c_str());
      in_eviction_ = false;
      for (std::uint32_t id : again) route(id);
    } else {
      for (std::uint32_t id : r.assigned) {
        const RequestRecord& rec = result_.requests[id];
        if (!rec.completed_at && !rec.dropped_at) ++lost;
      }
      in_eviction_ = true;
      remove_replica(r, ("evicted: node removed (" + reason + ")").c_str());
      in_eviction_ = false;
    }
    ++num_replica_evictions_;
    num_requests_failed_by_eviction_ += lost;
    log_lifecycle(r, "replica " + std::to_string(r.id) + " evicted (" + reason + "): " + std::to_string(lost) +
                         " requests failed, " + std::to_string(retried) + " sent back to the gateway; a new replica pays a full cold start");
    reconcile_replicas(now_);
  }

  void leave_ready(const Replica& r) {
    --ready_replicas_;
    ready_.erase(std::find(ready_.begin(), ready_.end(), r.id));
    if (cluster_ && r.pod >= 0) cluster_->set_pod_ready(static_cast<std::uint32_t>(r.pod), false);
  }

  void on_drain_deadline(Replica& r) {
    if (r.state != ReplicaState::Draining) return;
    remove_replica(r, "termination grace period over: requests still held are lost");
  }

  // The pod is gone: anything it still holds is lost, its GPUs return to the provisioner.
  void remove_replica(Replica& r, const char* why) {
    if (r.state == ReplicaState::Gone) return;
    if (r.state == ReplicaState::Ready) leave_ready(r);
    set_idle(r, false);
    int lost = 0;
    for (std::uint32_t id : r.assigned) {
      RequestRecord& rec = result_.requests[id];
      if (!rec.completed_at && !rec.dropped_at) {
        drop(rec);
        ++lost;
      }
    }
    r.assigned.clear();
    r.assigned.shrink_to_fit();
    if (r.engine) retired_preemptions_ += r.engine->num_preemptions();
    r.state = ReplicaState::Gone;
    --live_replicas_;
    if (cluster_ && r.pod >= 0 && !in_eviction_) {
      cluster_->remove_pod(static_cast<std::uint32_t>(r.pod), now_, notices_);
      handle_cluster();
    }
    log_lifecycle(r, std::string("replica ") + std::to_string(r.id) + " gone (" + why + ")" +
                         (lost ? "; " + std::to_string(lost) + " requests lost" : ""));
    r.engine.reset();
  }

  // Bring the replica set to spec_replicas_: create Pending replicas, or delete in the ReplicaSet
  // controller's order (kubernetes/kubernetes pkg/controller/controller_utils.go ActivePodsWithRanks:
  // unscheduled before scheduled, not ready before ready, doubled-up before alone, ready for less
  // time before more, newer before older).
  void reconcile_replicas(Micros now) {
    if (cluster_) cluster_->set_expected_replicas(spec_replicas_);  // the Deployment's spec.replicas, for a PDB
    std::vector<Replica*> active;
    for (auto& r : replicas_) {
      if (r.state != ReplicaState::Draining && r.state != ReplicaState::Gone) active.push_back(&r);
    }
    std::int32_t have = static_cast<std::int32_t>(active.size());
    for (; have < spec_replicas_; ++have) create_replica(now);
    if (have > spec_replicas_) {
      auto rank = [](const Replica* r) {
        switch (r->state) {
          case ReplicaState::Pending: return 0;
          case ReplicaState::Loading: return 1;
          case ReplicaState::WarmingUp: return 1;
          default: return 2;
        }
      };
      // ActivePodsWithRanks: a pod sharing its node with more pods of the same ReplicaSet goes first
      // (so scale-down spreads over nodes), then the one Ready for less time, then the newer.
      std::vector<std::int32_t> siblings(replicas_.size(), 1);
      if (cluster_) {
        std::map<std::int32_t, std::int32_t> per_node;
        for (const Replica* r : active) {
          if (r->pod >= 0) ++per_node[cluster_->state().pods[static_cast<std::size_t>(r->pod)].node];
        }
        for (const Replica* r : active) {
          if (r->pod < 0) continue;
          const std::int32_t node = cluster_->state().pods[static_cast<std::size_t>(r->pod)].node;
          siblings[r->id] = node >= 0 ? per_node[node] : 1;
        }
      }
      std::stable_sort(active.begin(), active.end(), [&](const Replica* a, const Replica* b) {
        if (rank(a) != rank(b)) return rank(a) < rank(b);
        if (siblings[a->id] != siblings[b->id]) return siblings[a->id] > siblings[b->id];
        if (a->ready_at != b->ready_at) return a->ready_at > b->ready_at;
        return a->created_at > b->created_at || (a->created_at == b->created_at && a->id > b->id);
      });
      for (std::int32_t k = 0; k < have - spec_replicas_; ++k) delete_replica(*active[static_cast<std::size_t>(k)]);
    }
  }

  void create_ready_replica() {
    Replica r;
    r.id = static_cast<std::uint32_t>(replicas_.size());
    r.created_at = 0;
    r.node_ready_at = -3600 * kMicrosPerSecond;
    r.ready_at = -3600 * kMicrosPerSecond;
    r.state = ReplicaState::Ready;
    r.engine = std::make_unique<Engine>(engine_config_);
    ready_.push_back(r.id);
    replicas_.push_back(std::move(r));
    ++live_replicas_;
    ++ready_replicas_;
    peak_replicas_ = std::max<std::int64_t>(peak_replicas_, live_replicas_);
    set_idle(replicas_.back(), true);
  }

  void create_replica(Micros now) {
    Replica r;
    r.id = static_cast<std::uint32_t>(replicas_.size());
    r.created_at = now;
    r.engine = std::make_unique<Engine>(engine_config_);
    replicas_.push_back(std::move(r));
    Replica& ref = replicas_.back();
    ++live_replicas_;
    peak_replicas_ = std::max<std::int64_t>(peak_replicas_, live_replicas_);
    if (cluster_) {
      ref.pod = cluster_->add_replica_pod(static_cast<std::int32_t>(ref.id), now, notices_);
      handle_cluster();
      return;
    }
    FixedDelayDecision d = fixed_nodes_.provision(ref.id, gpus_per_replica_, now);
    queue_.push(d.node_ready_at, EventClass::kCompletion, {EventKind::NodeReady, ref.id});
    if (s_.output.decisions) {
      log_decision(now, "provisioner", live_replicas_, spec_replicas_, "NodeRequested",
                   d.explanation + "; then model load " + fmt("%.0f s", s_.cold_start.model_load_s) + " and warm-up " +
                       fmt("%.0f s", s_.cold_start.warmup_s) + " before Ready");
    }
  }

  void delete_replica(Replica& r) {
    if (r.state == ReplicaState::Ready && (r.engine->has_work() || r.stepping)) {
      // Endpoint removed at once (no new requests); in-flight work gets the grace period.
      leave_ready(r);
      r.state = ReplicaState::Draining;
      set_idle(r, false);
      queue_.push(now_ + kTerminationGrace, EventClass::kCompletion, {EventKind::DrainDeadline, r.id});
      log_lifecycle(r, "replica " + std::to_string(r.id) + " draining: " +
                           std::to_string(r.engine->num_requests_running()) + " running and " +
                           std::to_string(r.engine->num_requests_waiting()) + " waiting get " +
                           fmt("%.0f s", micros_to_seconds(kTerminationGrace)) + " to finish");
      return;
    }
    remove_replica(r, (std::string("deleted while ") + state_name(r.state)).c_str());
  }

  // Appends one decision to the log (the caller checks output.decisions) and returns it for extras.
  DecisionRecord& log_decision(Micros t, std::string controller, std::int64_t current, std::int64_t desired,
                               std::string reason, std::string explanation) {
    DecisionRecord& rec = result_.decisions.emplace_back();
    rec.t_s = micros_to_seconds(t);
    rec.controller = std::move(controller);
    rec.current_replicas = static_cast<std::int32_t>(current);
    rec.desired_replicas = static_cast<std::int32_t>(desired);
    rec.reason = std::move(reason);
    rec.explanation = std::move(explanation);
    return rec;
  }

  void log_lifecycle(const Replica& r, std::string text) {
    if (s_.output.decisions) log_decision(now_, "lifecycle", live_replicas_, spec_replicas_, state_name(r.state), std::move(text));
  }

  // ---- metrics ------------------------------------------------------------------------------------
  bool holds_gpus(const Replica& r) const {
    return r.state == ReplicaState::Loading || r.state == ReplicaState::WarmingUp ||
           r.state == ReplicaState::Ready || r.state == ReplicaState::Draining;
  }

  void on_dcgm_window_start() {
    for (auto& r : replicas_) {
      if (r.state == ReplicaState::Gone) continue;
      r.busy_at_window_start = r.engine->busy_time(now_);
      r.window_open = true;
    }
  }

  void on_scrape() {
    scraped_.clear();
    std::int32_t waiting = 0, running = 0;
    double kv_sum = 0, util_sum = 0, fb_sum = 0;
    int n_ready = 0, n_gpu = 0;
    for (auto& r : replicas_) {
      if (r.state == ReplicaState::Gone || r.state == ReplicaState::Pending) continue;
      ScrapedReplica s{};
      s.replica = r.id;
      s.sampled_at = now_;
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
      }
      scraped_.push_back(s);
      if (r.state == ReplicaState::Ready) {
        waiting += s.waiting;
        running += s.running;
        kv_sum += s.kv_usage;
        ++n_ready;
      }
      if (s.has_gpu_metrics) {
        util_sum += static_cast<double>(s.gpu_util);
        fb_sum += s.fb_used_mib;
        ++n_gpu;
      }
    }
    // Windowed TTFT p99.
    const Micros window = seconds_to_micros(s_.metrics.ttft_window_s);
    while (!ttft_window_.empty() && ttft_window_.front().first <= now_ - window) ttft_window_.pop_front();
    scratch_.clear();
    for (const auto& e : ttft_window_) scratch_.push_back(e.second);

    Series& ser = result_.series;
    ser.t_s.push_back(micros_to_seconds(now_));
    ser.desired_replicas.push_back(spec_replicas_);
    ser.ready_replicas.push_back(ready_replicas_);
    ser.num_requests_waiting.push_back(waiting);
    ser.num_requests_running.push_back(running);
    ser.kv_cache_usage_perc.push_back(n_ready ? kv_sum / n_ready : 0.0);
    ser.gpu_util.push_back(n_gpu ? util_sum / n_gpu : 0.0);
    ser.fb_used_mib.push_back(n_gpu ? fb_sum / n_gpu : 0.0);
    ser.ttft_p99_s.push_back(percentile(scratch_, 0.99));
    if (cluster_) ser.nodes.push_back(static_cast<std::int32_t>(cluster_->state().nodes.size()) - cluster_->nodes_in(NodePhase::Terminated));
    // A TTFT spike: the windowed P99 above 10 s (the SLA line of the lesson's consolidation trap).
    if (ser.ttft_p99_s.back() > 10.0) ttft_spike_micros_ += scrape_every_;
    ser.num_dropped.push_back(num_dropped_);
    const double interval = ser.t_s.size() > 1 ? s_.metrics.scrape_interval_s : 0;
    ser.arrival_rate_rps.push_back(interval > 0 ? static_cast<double>(arrivals_since_scrape_) / interval : 0.0);
    arrivals_since_scrape_ = 0;

    Micros next = now_ + scrape_every_;
    if (next <= end_) {
      queue_.push(next, EventClass::kMeasure, {EventKind::Scrape, 0});
      Micros window_start = next - dcgm_period_;
      queue_.push(std::max(window_start, now_), EventClass::kMeasure, {EventKind::DcgmWindowStart, 0});
    }
  }

  // ---- the replica autoscaler ----------------------------------------------------------------------
  hpa::Observed observe() const {
    hpa::Observed o;
    o.spec_replicas = spec_replicas_;
    std::int32_t status = 0;
    double waiting_total = 0, running_total = 0;
    for (const auto& r : replicas_) {
      if (r.state == ReplicaState::Gone) continue;
      hpa::PodSnapshot pod;
      pod.name = "vllm-" + std::to_string(r.id);
      pod.deleting = r.state == ReplicaState::Draining;
      pod.phase = r.state == ReplicaState::Pending ? hpa::PodPhase::Pending : hpa::PodPhase::Running;
      if (r.state == ReplicaState::Pending) {
        pod.ready_condition = std::nullopt;  // unscheduled: only PodScheduled=False so far
        pod.start_age_s = std::nullopt;
      } else {
        pod.ready_condition = r.state == ReplicaState::Ready ? hpa::ConditionStatus::True : hpa::ConditionStatus::False;
        pod.start_age_s = micros_to_seconds(now_ - r.node_ready_at);
        Micros transition = r.ready_at >= 0 ? r.ready_at : r.node_ready_at;
        pod.readiness_transition_age_s = micros_to_seconds(now_ - transition);
      }
      pod.requests_milli["cpu"] = 16000;  // 16 vCPU per TP2 replica; only CPU metrics would use it
      for (const auto& s : scraped_) {
        if (s.replica != r.id) continue;
        pod.metric_sample_age_s = micros_to_seconds(now_ - s.sampled_at);
        pod.metric_window_s = s_.metrics.scrape_interval_s;
        // Only the Pods metrics the HPA asks for (prometheus-adapter serves quantities in milli-units:
        // a kv_cache_usage_perc of 0.734 arrives as 734m).
        for (const std::string& name : pod_metric_names_) {
          if (s.has_gpu_metrics && name == "DCGM_FI_DEV_GPU_UTIL") {
            pod.metrics_milli[name] = s.gpu_util * 1000;
          } else if (s.has_gpu_metrics && name == "DCGM_FI_DEV_FB_USED") {
            pod.metrics_milli[name] = static_cast<std::int64_t>(s.fb_used_mib * 1000 + 0.5);
          } else if (s.has_vllm_metrics && name == "vllm:num_requests_waiting") {
            pod.metrics_milli[name] = std::int64_t(s.waiting) * 1000;
          } else if (s.has_vllm_metrics && name == "vllm:num_requests_running") {
            pod.metrics_milli[name] = std::int64_t(s.running) * 1000;
          } else if (s.has_vllm_metrics && name == "vllm:kv_cache_usage_perc") {
            pod.metrics_milli[name] = static_cast<std::int64_t>(s.kv_usage * 1000 + 0.5);
          }
        }
        if (s.has_vllm_metrics) {
          if (!pod.deleting) {
            waiting_total += s.waiting;
            running_total += s.running;
          }
        }
      }
      if (!pod.deleting) ++status;
      o.pods.push_back(std::move(pod));
    }
    o.status_replicas = status;
    // KEDA's Prometheus scaler: sum(vllm:num_requests_waiting) over what Prometheus last scraped.
    o.external_metrics["vllm:num_requests_waiting"] = hpa::MetricValue{true, static_cast<std::int64_t>(waiting_total * 1000), ""};
    o.external_metrics["vllm:num_requests_running"] = hpa::MetricValue{true, static_cast<std::int64_t>(running_total * 1000), ""};
    // The KEDA HTTP Add-on's interceptor counts live, not through Prometheus: every request that
    // arrived and is neither answered nor abandoned, whether held at the gateway or at a replica.
    o.external_metrics["interceptor_concurrency"] = hpa::MetricValue{true, in_flight() * 1000, ""};
    return o;
  }

  // Requests that arrived and are neither answered nor abandoned: at the gateway or at a replica.
  std::int64_t in_flight() const {
    return static_cast<std::int64_t>(result_.requests.size()) - num_completed_ - num_dropped_;
  }

  // ---- KEDA's operator: the 0 ↔ 1 phase (real-systems.md §2) --------------------------------------
  // Every pollingInterval the operator asks the trigger whether the workload is active: the value
  // strictly above activationThreshold. Active at 0 replicas → scale to 1 (the HPA takes it from there);
  // inactive for longer than cooldownPeriod since it was last active → scale to 0 (scaleToZeroOrIdle).
  // queue_depth's trigger is the Prometheus query sum(vllm:num_requests_waiting), read from what was
  // last scraped: at zero replicas no pod exports it, so it reads 0, whatever waits at the gateway.
  // http_concurrency's is the HTTP Add-on interceptor's in-flight count, which includes the requests
  // it holds while the app is at zero: that one wakes it.
  // Lab choice: the ScaledObject was last active when the run starts (the service was serving).
  void on_keda_poll() {
    const auto& k = s_.autoscaler.keda;
    const bool http = s_.autoscaler.strategy == "http_concurrency";
    double value_now = 0;
    if (http) {
      value_now = static_cast<double>(in_flight());
    } else {
      for (const auto& sc : scraped_) {
        if (sc.has_vllm_metrics && replicas_[sc.replica].state == ReplicaState::Ready) value_now += sc.waiting;
      }
    }
    const bool active = value_now > k.activation_threshold;
    if (active) keda_last_active_ = now_;
    const std::string value = std::string(http ? "interceptor concurrency" : "sum(vllm:num_requests_waiting)") + " = " +
                              fmt("%g", value_now) + (active ? " > " : " ≤ ") + "activationThreshold " +
                              fmt("%g", k.activation_threshold) + (active ? " → active" : " → not active");
    std::string text;
    std::int32_t target = spec_replicas_;
    if (spec_replicas_ == 0 && active) {
      target = 1;
      text = value + "; replicas 0 → scale to 1 (the HPA scales from 1 to N)";
    } else if (spec_replicas_ > 0 && !active && now_ - keda_last_active_ > seconds_to_micros(k.cooldown_period_s)) {
      target = 0;
      text = value + " since t = " + fmt("%.0f s", micros_to_seconds(keda_last_active_)) + ", longer than cooldownPeriod " +
             fmt("%.0f s", k.cooldown_period_s) + " → scale to minReplicaCount 0";
    } else if (spec_replicas_ == 0 && !http && in_flight() > 0) {
      text = value + " (at zero replicas no pod exports it); " + std::to_string(in_flight()) +
             " requests wait at the gateway, which this trigger does not read → stay at 0";
    }
    // Polls that change nothing are logged like HPA syncs that change nothing: only with hpa_syncs "all".
    const bool logged = s_.output.decisions && (target != spec_replicas_ || s_.output.hpa_syncs == "all");
    if (!text.empty() && logged) {
      log_decision(now_, "keda", spec_replicas_, target,
                   target > spec_replicas_ ? "ScaledFromZero" : target < spec_replicas_ ? "ScaledToZero" : "NotActive",
                   "KEDA operator (pollingInterval " + fmt("%.0f s", k.polling_interval_s) + "): " + text);
    }
    if (target != spec_replicas_) {
      spec_replicas_ = target;
      ++num_scale_events_;
      reconcile_replicas(now_);
    }
    queue_.push(now_ + seconds_to_micros(k.polling_interval_s), EventClass::kControl, {EventKind::KedaPoll, 0});
  }

  void on_hpa_sync() {
    hpa::Observed o = observe();
    // The arithmetic as text costs more than the arithmetic. When only the syncs that change the
    // replica count are logged, a sync runs without it, and one that turns out to change the count
    // runs again from the same memory, with it: the same decision, now explained.
    const bool log_all = s_.output.decisions && s_.output.hpa_syncs == "all";
    const bool log_changes = s_.output.decisions && !log_all;
    hpa::Memory before;
    if (log_changes) before = hpa_memory_;
    flags_.explain = log_all;
    hpa::Decision d = hpa::reconcile(hpa_spec_, o, hpa_memory_, now_, flags_);
    if (log_changes && d.desired_replicas != d.current_replicas) {
      hpa_memory_ = std::move(before);
      flags_.explain = true;
      d = hpa::reconcile(hpa_spec_, o, hpa_memory_, now_, flags_);
    }
    if (log_all || (log_changes && d.desired_replicas != d.current_replicas)) {
      DecisionRecord& rec = log_decision(now_, "hpa", d.current_replicas, d.desired_replicas,
                                         d.conditions.empty() ? "" : d.conditions.back().reason, d.explanation);
      if (s_.output.decision_detail) {
        rec.detail = hpa::decision_to_json(d);
        rec.detail.erase("explanation");  // already the record's own explanation
        for (auto& p : rec.detail["proposals"]) p.erase("explanation");  // part of it, too
      }
      for (const auto& prop : d.proposals) {
        // The metric that won: Decision::metric_name is the controller's description of it.
        if (!prop.ok || (prop.description != d.metric_name && !d.metric_name.empty())) continue;
        rec.metric_value = static_cast<double>(prop.current_milli) / 1000.0;
        rec.ratio = prop.ratio;
        rec.rebalanced_ratio = prop.rebalanced_ratio;
        rec.metric_proposal = prop.replicas;
        rec.ready_pods = prop.ready_pods;
        rec.unready_pods = prop.unready_pods;
        rec.missing_pods = prop.missing_pods;
        break;
      }
    }
    if (d.desired_replicas != spec_replicas_) {
      spec_replicas_ = d.desired_replicas;
      ++num_scale_events_;
      reconcile_replicas(now_);
    }
    queue_.push(now_ + seconds_to_micros(s_.autoscaler.sync_period_s), EventClass::kControl, {EventKind::HpaSync, 0});
  }

  // ---- the end ----------------------------------------------------------------------------------
  // Clock hours whose P99 TTFT is above 10 s (the SLA line of the lesson's consolidation trap).
  std::int64_t breach_hours() const {
    const auto hours = static_cast<std::size_t>((end_ + 3600 * kMicrosPerSecond - 1) / (3600 * kMicrosPerSecond));
    std::vector<std::vector<double>> per_hour(hours);
    for (const auto& q : result_.requests) {
      if (!q.first_token_at) continue;
      const auto h = static_cast<std::size_t>(q.arrived_at / 3600.0);
      if (h < hours) per_hour[h].push_back(*q.first_token_at - q.arrived_at);
    }
    std::int64_t n = 0;
    for (auto& v : per_hour) {
      if (!v.empty() && percentile(v, 0.99) > 10.0) ++n;
    }
    return n;
  }

  void finish() {
    Summary& sum = result_.summary;
    sum.num_requests = static_cast<std::int64_t>(result_.requests.size());
    std::vector<double> ttft, e2e;
    double itl_sum = 0;
    std::int64_t itl_n = 0, good = 0;
    for (const auto& rec : result_.requests) {
      if (rec.first_token_at) ttft.push_back(*rec.first_token_at - rec.arrived_at);
      if (rec.completed_at) {
        ++sum.num_completed;
        e2e.push_back(*rec.completed_at - rec.arrived_at);
        double itl = rec.output_tokens > 1 ? (*rec.completed_at - *rec.first_token_at) / (rec.output_tokens - 1) : 0.0;
        itl_sum += itl;
        ++itl_n;
        if (*rec.first_token_at - rec.arrived_at <= s_.slo.ttft_s && itl <= s_.slo.itl_s) ++good;
      } else if (rec.dropped_at) {
        ++sum.num_dropped;
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
    const double replica_seconds = micros_to_seconds(replica_micros_);
    sum.gpu_hours = replica_seconds * gpus_per_replica_ / 3600.0;
    sum.idle_gpu_minutes = micros_to_seconds(idle_replica_micros_) * gpus_per_replica_ / 60.0;
    sum.cost_usd = sum.gpu_hours * s_.cost.gpu_hour_usd;
    sum.peak_replicas = peak_replicas_;
    sum.mean_replicas = replica_seconds / s_.duration_s;
    for (const auto& r : replicas_) {
      if (r.engine) sum.num_preemptions += r.engine->num_preemptions();
    }
    sum.num_preemptions += retired_preemptions_;  // from replicas already gone
    sum.num_scale_events = num_scale_events_;
    sum.num_replica_evictions = num_replica_evictions_;
    sum.ttft_spike_minutes = micros_to_seconds(ttft_spike_micros_) / 60.0;
    sum.ttft_breach_hours = breach_hours();
    sum.num_requests_failed_by_eviction = num_requests_failed_by_eviction_;
    if (cluster_) {
      // Layer 1 decides what is paid: nodes from launch to termination, at their capacity type's price.
      cluster_->finish(end_);
      const ClusterTotals& c = cluster_->totals();
      sum.node_hours = c.node_hours;
      sum.node_cost_usd = c.node_cost_usd;
      sum.gpu_hours_allocatable = c.gpu_hours_allocatable;
      sum.gpu_hours_requested = c.gpu_hours_requested;
      sum.nodes_launched = c.nodes_launched;
      sum.pod_evictions = c.evictions;
      sum.spot_interruptions = c.spot_interruptions;
      sum.non_gpu_pods_on_gpu_nodes = c.non_gpu_pods_on_gpu_nodes;
      sum.cost_usd = c.node_cost_usd;
    }
    result_.autoscaler_spec = hpa_json_;
  }

  const Scenario& s_;
  Micros end_;
  Workload workload_;
  FixedDelayNodes fixed_nodes_;
  std::unique_ptr<ClusterModel> cluster_;  // null: fixed-delay nodes, no cluster model
  std::vector<ClusterNotice> notices_;
  Micros cluster_wake_ = -1;
  std::uint32_t cluster_gen_ = 0;
  bool handling_cluster_ = false, in_eviction_ = false;
  std::int64_t num_replica_evictions_ = 0, num_requests_failed_by_eviction_ = 0;
  Micros ttft_spike_micros_ = 0;
  EngineConfig engine_config_;
  int gpus_per_replica_ = 1;
  Micros scrape_every_ = 0, dcgm_period_ = 0, timeout_ = 0;
  Json hpa_json_;
  hpa::HorizontalPodAutoscalerSpec hpa_spec_;
  hpa::Memory hpa_memory_;
  hpa::ControllerFlags flags_;
  std::vector<std::string> pod_metric_names_;  // the Pods metrics the HPA reads

  EventQueue<Payload> queue_;
  Micros now_ = 0;
  Request pending_arrival_;
  std::deque<Replica> replicas_;  // a deque: references stay valid as replicas are added
  std::vector<std::uint32_t> ready_;  // ids of Ready replicas, ascending (the router's candidates)
  bool round_robin_ = false;
  std::deque<std::uint32_t> gateway_queue_;
  bool keda_activation_ = false;  // a KEDA strategy with minReplicaCount 0: the operator's 0 ↔ 1 loop runs
  Micros keda_last_active_ = 0;   // the ScaledObject's status.lastActiveTime
  std::vector<ScrapedReplica> scraped_;
  std::vector<EngineEvent> engine_events_;
  std::deque<std::pair<Micros, double>> ttft_window_;
  std::vector<double> scratch_;
  std::int32_t spec_replicas_ = 0;
  std::int32_t ready_replicas_ = 0;
  std::int64_t live_replicas_ = 0, idle_replicas_ = 0, peak_replicas_ = 0;
  std::int64_t num_dropped_ = 0, num_completed_ = 0, num_scale_events_ = 0, arrivals_since_scrape_ = 0, retired_preemptions_ = 0;
  std::size_t rr_next_ = 0;
  Micros replica_micros_ = 0, idle_replica_micros_ = 0;  // replica-µs existing / Ready and idle
  RunResult result_;
};

}  // namespace

RunResult run_simulation(const Scenario& scenario) { return Simulation(scenario).run(); }

}  // namespace gpuscale
