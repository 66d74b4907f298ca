// Replica lifecycle and the ReplicaSet: a replica's cold start (node, model load, warm-up), Ready,
// its pod's termination and removal, and the pool's replica count brought to its spec (see world.hpp).
//
// One termination path, whoever deletes the pod (the ReplicaSet on a scale-down; Karpenter's or
// Cluster Autoscaler's drain and a spot interruption's, through the Eviction API):
//   1. the endpoint leaves the Service at once: the router sends it nothing new;
//   2. the preStop hook runs (`sleep N`, pod.lifecycle.preStop.sleep.seconds), bounded by the grace
//      period; the engine keeps serving what it holds;
//   3. SIGTERM, with what is left of the grace period, at least 2 s (kubernetes pkg/kubelet/
//      kuberuntime/kuberuntime_container.go killContainer: gracePeriod -= the preStop's run time,
//      then minimumGracePeriodInSeconds). Stock vLLM's OpenAI server cancels its server task on
//      SIGTERM (vllm-project/vllm vllm/entrypoints/launcher.py, serve_http's signal_handler): every
//      request still in flight fails and the process exits. With --shutdown-timeout N
//      (engine.shutdown_timeout_s; vLLM PR #36666) it takes no new requests and lets those in flight
//      finish for up to N s, then aborts them;
//   4. SIGKILL at the end of the grace period: what is left is lost;
// and a node's instance that goes (a spot instance at the end of its 2-minute notice) takes with it
// whatever is still on it. The pod keeps its node's room until its containers have stopped.
#include <algorithm>
#include <cstdio>
#include <map>

#include "k8s/replica_set.hpp"
#include "serving/engine_profiles.hpp"
#include "sim/world.hpp"

namespace gpuscale {

FailureCause failure_cause_of(RemovalReason reason) {
  switch (reason) {
    case RemovalReason::Empty:
    case RemovalReason::Underutilized: return FailureCause::Consolidation;
    case RemovalReason::ScaleDown: return FailureCause::NodeScaleDown;
    case RemovalReason::Expired: return FailureCause::Expiry;
    case RemovalReason::Drifted: return FailureCause::Drift;
    case RemovalReason::Interrupted: return FailureCause::Spot;
    case RemovalReason::Preempted: return FailureCause::Preemption;
    default: return FailureCause::NodeRemoved;
  }
}

namespace sim {

namespace {

// kubelet's minimumGracePeriodInSeconds: SIGTERM always gets at least this long before SIGKILL.
constexpr Micros kMinimumGrace = 2 * kMicrosPerSecond;

std::string fmt_seconds(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f s", s);
  return buf;
}

std::string fmt_t(Micros t) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "t = %.1f s", micros_to_seconds(t));
  return buf;
}

}  // namespace

// A LeaderWorkerSet group serves nothing until every member runs: vLLM's leader starts the engine
// once each pipeline stage's worker has joined its Ray cluster, so the model loads from the moment the
// last member's container can start. Until then the bound members hold their GPUs for nothing.
bool World::member_bound(Pool& p, Replica& r, Micros container_start) {
  close_partial(p, r);
  r.members_start = r.members_bound == 0 ? container_start : std::max(r.members_start, container_start);
  ++r.members_bound;
  if (r.members_bound >= p.config->group_size) return true;
  r.partial_since = now_;
  r.partial_gpus = r.members_bound * p.config->pod.gpus;
  partly_placed_.emplace_back(p.index, r.id);  // logged once the instant's bindings are all in (settle)
  return false;
}

void World::log_partly_placed() {
  std::sort(partly_placed_.begin(), partly_placed_.end());
  partly_placed_.erase(std::unique(partly_placed_.begin(), partly_placed_.end()), partly_placed_.end());
  for (const auto& [pool, id] : partly_placed_) {
    Pool& p = pools_[static_cast<std::size_t>(pool)];
    const Replica& r = p.replicas[id];
    // Once per group and instant, if it is still partly placed (KAI binds a whole gang at once; the
    // starting cluster's groups are placed at t = 0 as one).
    if (r.partial_since != now_ || !s_.output.decisions || now_ == 0) continue;
    log_lifecycle(p, r, "replica " + std::to_string(r.id) + ": " + std::to_string(r.members_bound) + " of its " + std::to_string(p.config->group_size) +
                            " LeaderWorkerSet pods bound; it serves nothing until all are, and their " + std::to_string(r.partial_gpus) +
                            " GPUs wait meanwhile");
  }
  partly_placed_.clear();
}

void World::close_partial(Pool& p, Replica& r) {
  if (r.partial_since < 0) return;
  p.partial_group_gpu_micros += static_cast<double>(now_ - r.partial_since) * r.partial_gpus;
  r.partial_since = -1;
  r.partial_gpus = 0;
}

void World::on_node_ready(Pool& p, Replica& r, Micros container_start) {
  if (r.state != ReplicaState::Pending) return;
  r.state = ReplicaState::Loading;  // in cluster mode this includes the image pull, if the node needs one
  r.node_ready_at = now_;
  const Micros start = container_start > now_ ? container_start : now_;
  queue_.push(start + seconds_to_micros(p.config->model_load_s), EventClass::Completion,
              {EventKind::LoadDone, 0, static_cast<std::uint16_t>(p.index), r.id});
}

// The pod is bound: the replica runs the engine profile of the GPU it got (engine_profiles.hpp), or,
// where vLLM would exit at start-up there, it will crash-loop (on_load_done).
void World::fit_engine_to_node(Pool& p, Replica& r) {
  if (!cluster_ || r.pod < 0) return;
  const ClusterState& cs = cluster_->state();
  const Pod& pod = cs.pods[static_cast<std::size_t>(r.pod)];
  if (pod.node < 0) return;
  const Node& node = cs.nodes[static_cast<std::size_t>(pod.node)];
  const InstanceType& type = cs.types[static_cast<std::size_t>(node.type_index)];
  const ProfileOnGpu g = profile_on_gpu(p.engine, type.gpu_name, type.gpu_memory_mib);
  if (g.profile.name == p.engine.profile.name && g.loads) return;  // the calibration GPU: the engine as created
  const std::string where = "replica " + std::to_string(r.id) + " on node " + std::to_string(node.id) + " (" + type.name + ") ";
  if (!g.loads) {
    r.crash = where + g.explanation;
    return;
  }
  EngineConfig c = p.engine;
  c.profile = g.profile;
  r.engine = std::make_unique<Engine>(c);
  if (s_.output.decisions) {
    log_decision(now_, "lifecycle", p.log_name, p.live_replicas, p.spec_replicas, "EngineProfile",
                 where + "runs " + g.profile.name + " " + g.explanation);
  }
}

void World::on_load_done(Pool& p, Replica& r) {
  if (r.state != ReplicaState::Loading) return;
  if (!r.crash.empty()) {
    // The container exits with the engine's error; the kubelet restarts it with a back-off (10 s,
    // doubling to 5 min: CrashLoopBackOff) and every start fails the same way, so the pod never
    // becomes Ready and keeps its GPUs. It stays Loading here until it is deleted.
    if (s_.output.decisions) {
      log_decision(now_, "lifecycle", p.log_name, p.live_replicas, p.spec_replicas, "CrashLoopBackOff",
                   r.crash + ". The container exits at start-up; the kubelet restarts it with a back-off from 10 s doubling to 5 min, "
                             "each start fails the same way, and the pod never becomes Ready");
    }
    return;
  }
  r.state = ReplicaState::WarmingUp;
  queue_.push(now_ + seconds_to_micros(p.config->warmup_s), EventClass::Completion,
              {EventKind::WarmupDone, 0, static_cast<std::uint16_t>(p.index), r.id});
}

void World::enter_ready(Pool& p, Replica& r) {
  r.state = ReplicaState::Ready;
  ++p.ready_replicas;
  p.ready.insert(std::upper_bound(p.ready.begin(), p.ready.end(), r.id), r.id);
  if (cluster_ && r.pod >= 0) {
    for (int m = 0; m < p.config->group_size; ++m) cluster_->set_pod_ready(static_cast<std::uint32_t>(r.pod + m), true);  // what a PDB counts
  }
  set_idle(p, r, true);
}

void World::on_warmup_done(Pool& p, Replica& r) {
  if (r.state != ReplicaState::WarmingUp) return;
  r.ready_at = now_;
  if (r.created_at > 0) {
    ++p.started_replicas;
    p.start_micros += now_ - r.created_at;
    p.max_start_micros = std::max(p.max_start_micros, now_ - r.created_at);
  }
  enter_ready(p, r);
  drain_gateway(p);
}

// Requests held at the gateway for the pool's model and role go out now, oldest first.
void World::drain_gateway(const Pool& p) {
  const int g = group_of_pool_[static_cast<std::size_t>(p.index)];
  if (g < 0) return;
  std::deque<std::uint32_t> waiting;
  waiting.swap(groups_[static_cast<std::size_t>(g)].gateway[static_cast<int>(p.config->role)]);
  for (std::uint32_t id : waiting) {
    if (!result_.requests[id].dropped_at) route(id);
  }
}

void World::leave_ready(Pool& p, const Replica& r) {
  --p.ready_replicas;
  p.ready.erase(std::find(p.ready.begin(), p.ready.end(), r.id));
  if (cluster_ && r.pod >= 0) {
    for (int m = 0; m < p.config->group_size; ++m) cluster_->set_pod_ready(static_cast<std::uint32_t>(r.pod + m), false);
  }
}

// The requests the replica still holds: being served, or (a prefill replica) handed off with their
// KV not yet read by the decode side.
std::int64_t World::held(const Pool& p, const Replica& r) const {
  std::int64_t n = 0;
  for (std::uint32_t id : r.assigned) {
    const RequestRecord& rec = result_.requests[id];
    if (rec.completed_at || rec.dropped_at) continue;
    if (rec.pool != p.index && !(rec.kv_held && rec.prefill_pool == p.index)) continue;
    ++n;
  }
  return n;
}

// The pod is deleted: steps 1 and 2 now, SIGTERM after the preStop sleep (at once without one).
// `max_grace`: the deleter's cap on the grace period (DeleteOptions.GracePeriodSeconds; -1: none).
void World::begin_termination(Pool& p, Replica& r, FailureCause cause, const std::string& by, Micros max_grace, Settle settle_now) {
  if (r.state == ReplicaState::Gone || r.state == ReplicaState::Draining) return;
  if (r.state == ReplicaState::Pending) {  // no container yet: nothing to stop
    remove_replica(p, r, by + " while Pending", cause, settle_now);
    return;
  }
  const PodTemplate& pod = p.config->pod;
  Micros grace = pod.termination_grace_period_s * kMicrosPerSecond;
  if (max_grace >= 0) grace = std::min(grace, max_grace);
  // killContainer runs the preStop hook only with a grace period left, and no longer than it.
  const Micros prestop = grace > 0 ? std::min(pod.prestop_sleep_s * kMicrosPerSecond, grace) : 0;
  const std::string was = state_name(r.state);
  if (r.state == ReplicaState::Ready) leave_ready(p, r);
  set_idle(p, r, false);
  r.state = ReplicaState::Draining;
  r.term_cause = cause;
  r.sigterm_at = now_ + prestop;
  r.sigkill_at = r.sigterm_at + std::max(grace - prestop, kMinimumGrace);
  r.held_at_deletion = held(p, r);
  if (cluster_ && r.pod >= 0) {
    // A group goes as one: the LWS controller deletes the leader, and its workers' StatefulSet with it.
    for (int m = 0; m < p.config->group_size; ++m) cluster_->mark_pod_terminating(static_cast<std::uint32_t>(r.pod + m), now_);
  }
  if (s_.output.decisions) {
    const std::string running = r.engine ? std::to_string(r.engine->num_requests_running()) : "0";
    const std::string waiting = r.engine ? std::to_string(r.engine->num_requests_waiting()) : "0";
    log_termination(p, "Terminating",
                    "replica " + std::to_string(r.id) + " (" + was + ") " + by + ": endpoint removed; " + running +
                        " running and " + waiting + " waiting; " +
                        (prestop > 0 ? "preStop sleep " + fmt_seconds(micros_to_seconds(prestop)) + " lets them go on, SIGTERM at " + fmt_t(r.sigterm_at)
                                     : std::string("no preStop hook: SIGTERM now")) +
                        ", SIGKILL at " + fmt_t(r.sigkill_at) + " (terminationGracePeriodSeconds " +
                        fmt_seconds(micros_to_seconds(grace)) + (max_grace >= 0 && max_grace < pod.termination_grace_period_s * kMicrosPerSecond ? ", capped by the drain" : "") + ")");
  }
  if (prestop > 0) {
    queue_.push(r.sigterm_at, EventClass::Completion, {EventKind::Sigterm, 0, static_cast<std::uint16_t>(p.index), r.id});
  } else {
    on_sigterm(p, r, settle_now);
  }
}

// Step 3. What the preStop sleep let finish is done; stock vLLM fails the rest now.
void World::on_sigterm(Pool& p, Replica& r, Settle settle_now) {
  if (r.state != ReplicaState::Draining || r.sigterm_sent) return;
  r.sigterm_sent = true;
  const std::int64_t n = held(p, r);
  const std::int64_t done = r.held_at_deletion - n;
  const std::string id = "replica " + std::to_string(r.id);
  const std::string during = done > 0 ? "; " + std::to_string(done) + " of its " + std::to_string(r.held_at_deletion) +
                                                              " requests finished (or were abandoned) during the preStop sleep" : "";
  if (n == 0) {
    remove_replica(p, r, "SIGTERM with nothing in flight: exited" + during, r.term_cause, settle_now);
    return;
  }
  const double timeout_s = p.config->engine.shutdown_timeout_s;
  if (timeout_s <= 0) {
    kill_replica(p, r, r.term_cause, "SIGTERM",
                 "SIGTERM: vLLM cancels its server task, the requests in flight fail" + during, settle_now, false);
    return;
  }
  const Micros stop = std::min(now_ + seconds_to_micros(timeout_s), r.sigkill_at);
  queue_.push(stop, EventClass::Completion, {EventKind::StopDeadline, 0, static_cast<std::uint16_t>(p.index), r.id});
  if (s_.output.decisions) {
    log_termination(p, "SIGTERM",
                    id + " SIGTERM: vLLM --shutdown-timeout " + fmt_seconds(timeout_s) + " lets its " + std::to_string(n) +
                        " requests in flight finish until " + fmt_t(stop) + (stop == r.sigkill_at ? " (SIGKILL)" : "") + during);
  }
}

// Step 4 (or vLLM's own shutdown timeout, earlier): what is still held fails.
void World::on_stop_deadline(Pool& p, Replica& r) {
  if (r.state != ReplicaState::Draining) return;
  const bool sigkill = now_ >= r.sigkill_at;
  kill_replica(p, r, r.term_cause, sigkill ? "SIGKILL" : "ShutdownTimeout",
               sigkill ? "SIGKILL at the end of the grace period: the requests still in flight are lost"
                       : "vLLM's --shutdown-timeout is over: it aborts the requests still in flight and exits",
               Settle::Now, false);
}

// The replica's process ends with requests in flight: they fail (or, with a retrying gateway, go back
// to it), then the replica is gone.
void World::kill_replica(Pool& p, Replica& r, FailureCause cause, const char* step, const std::string& why, Settle settle_now, bool pod_gone) {
  if (r.state == ReplicaState::Gone) return;
  std::int64_t lost = 0;
  std::vector<std::uint32_t> again;
  for (std::uint32_t id : r.assigned) {
    RequestRecord& rec = result_.requests[id];
    if (rec.completed_at || rec.dropped_at) continue;
    // A request this prefill replica handed off is lost with it only while its KV is still here.
    const bool handed_off = rec.pool != p.index;
    if (handed_off && !(rec.kv_held && rec.prefill_pool == p.index)) continue;
    if (handed_off) {
      rec.kv_held = false;  // gone with the replica
      Pool& d = pools_[static_cast<std::size_t>(rec.pool)];
      if (rec.replica >= 0) {
        Replica& dr = d.replicas[static_cast<std::size_t>(rec.replica)];
        if (dr.state != ReplicaState::Gone) {
          dr.engine->abort_request(id);  // its load can never finish
          if (dr.stepping) cut_step(d, dr);
          after_abort(d, dr);
        }
      }
    } else {
      release_prefill_kv(rec, true);  // a decode replica's request: the prefill side's copy is not wanted
    }
    if (s_.cluster.retry_evicted_requests) {
      // Back to the gateway from the start: disaggregated, its prefill again.
      const ModelGroup& g = groups_[static_cast<std::size_t>(rec.model)];
      const std::vector<int>& prefill = g.pools[static_cast<int>(PoolRole::Prefill)];
      if (rec.prefill_pool >= 0 && !prefill.empty()) {
        // It leaves the decode pool unserved and is the prefill pool's again (its counts say so).
        --pools_[static_cast<std::size_t>(rec.pool)].arrivals;
        --pools_[static_cast<std::size_t>(rec.prefill_pool)].completed;
        rec.pool = prefill.front();
        rec.prefill_pool = rec.prefill_replica = -1;
        rec.prefill_done_at.reset();
        rec.decode_scheduled_at.reset();
        rec.kv_loaded_at.reset();
      }
      rec.scheduled_at.reset();
      rec.first_token_at.reset();
      rec.replica = -1;
      again.push_back(id);
    } else {
      drop(rec, cause);
      ++lost;
    }
  }
  if (!again.empty()) r.assigned.clear();
  if (s_.output.decisions) {
    log_termination(p, step,
                    "replica " + std::to_string(r.id) + " (" + to_string(cause) + ") " + why + ": " + std::to_string(lost) + " requests failed" +
                        (again.empty() ? std::string() : ", " + std::to_string(again.size()) + " sent back to the gateway"));
  }
  remove_replica(p, r, std::string(step) + " (" + to_string(cause) + ")", cause, settle_now, pod_gone);
  for (std::uint32_t id : again) route(id);
}

// The Eviction API deleted the replica's pod (a drain): the one path, and the ReplicaSet, still
// wanting spec_replicas, makes a new replica that starts from Pending (and pays a full cold start).
void World::evict_replica(Pool& p, Replica& r, RemovalReason reason, Micros max_grace) {
  if (r.state == ReplicaState::Gone || r.state == ReplicaState::Draining) return;
  ++p.num_replica_evictions;
  ++p.evictions_by_reason[static_cast<int>(reason)];
  begin_termination(p, r, failure_cause_of(reason), std::string("evicted (") + to_string(reason) + ")", max_grace, Settle::ByCaller);
  reconcile_replicas(p, now_, Settle::ByCaller);
}

// Its instance went away under it (a spot instance at the end of its notice): nothing is graceful.
void World::kill_with_instance(Pool& p, Replica& r, RemovalReason reason) {
  if (r.state == ReplicaState::Gone) return;
  const bool was_terminating = r.state == ReplicaState::Draining;
  if (!was_terminating) {
    ++p.num_replica_evictions;
    ++p.evictions_by_reason[static_cast<int>(reason)];
  }
  const FailureCause cause = was_terminating ? r.term_cause : failure_cause_of(reason);
  // The requests die with the instance; a spot reclaim names spot whoever was draining the node.
  kill_replica(p, r, reason == RemovalReason::Interrupted ? FailureCause::Spot : cause, "InstanceTerminated",
               "the instance terminated under it", Settle::ByCaller, true);
  reconcile_replicas(p, now_, Settle::ByCaller);
}

// The pod is gone: anything it still holds is lost (to `cause`), its GPUs return to the provisioner.
// `pod_gone`: the cluster already removed the pod (its instance went), so there is nothing to delete there.
void World::remove_replica(Pool& p, Replica& r, const std::string& why, FailureCause cause, Settle settle_now, bool pod_gone) {
  if (r.state == ReplicaState::Gone) return;
  if (r.state == ReplicaState::Ready) leave_ready(p, r);
  set_idle(p, r, false);
  int lost = 0;
  for (std::uint32_t id : r.assigned) {
    RequestRecord& rec = result_.requests[id];
    if (!rec.completed_at && !rec.dropped_at) {
      drop(rec, cause);
      ++lost;
    }
  }
  r.assigned.clear();
  r.assigned.shrink_to_fit();
  if (r.engine) {
    p.retired_preemptions += r.engine->num_preemptions();
    p.retired_prefix_queries += r.engine->num_prefix_cache_queries();
    p.retired_prefix_hits += r.engine->num_prefix_cache_hits();
  }
  r.state = ReplicaState::Gone;
  close_partial(p, r);
  --p.live_replicas;
  --live_replicas_;
  // The members still in the cluster go too (a member whose instance went is gone already).
  if (cluster_ && r.pod >= 0 && (!pod_gone || p.config->group_size > 1)) {
    for (int m = 0; m < p.config->group_size; ++m) cluster_->remove_pod(static_cast<std::uint32_t>(r.pod + m), now_);
    if (settle_now == Settle::Now) settle();
  }
  log_lifecycle(p, r, "replica " + std::to_string(r.id) + " gone (" + why + ")" + (lost ? "; " + std::to_string(lost) + " requests lost" : ""));
  r.engine.reset();
}

// Bring the pool's replica set to its spec: the ReplicaSet controller's plan (k8s/replica_set.hpp),
// applied. Ranking needs each replica's pod's node (doubled-up pods go first) only when it deletes.
void World::reconcile_replicas(Pool& p, Micros now, Settle settle_now) {
  if (cluster_) cluster_->set_expected_replicas(p.index, p.spec_replicas);  // the Deployment's spec.replicas, for a PDB
  std::vector<ActivePod> active;
  for (const auto& r : p.replicas) {
    if (r.state == ReplicaState::Draining || r.state == ReplicaState::Gone) continue;
    const int readiness = r.state == ReplicaState::Pending ? 0 : r.state == ReplicaState::Ready ? 2 : 1;
    active.push_back(ActivePod{r.id, readiness, 1, r.ready_at, r.created_at});
  }
  if (cluster_ && static_cast<std::int32_t>(active.size()) > p.spec_replicas) {
    const auto node_of = [&](const ActivePod& a) {
      const std::int64_t pod = p.replicas[a.id].pod;
      return pod >= 0 ? cluster_->state().pods[static_cast<std::size_t>(pod)].node : -1;
    };
    std::map<std::int32_t, std::int32_t> per_node;
    for (const ActivePod& a : active) {
      if (p.replicas[a.id].pod >= 0) ++per_node[node_of(a)];
    }
    for (ActivePod& a : active) {
      const std::int32_t node = node_of(a);
      if (p.replicas[a.id].pod >= 0 && node >= 0) a.siblings = per_node[node];
    }
  }
  const ReplicaSetPlan plan = plan_replica_set(std::move(active), p.spec_replicas);
  for (std::int32_t k = 0; k < plan.create; ++k) create_replica(p, now, settle_now);
  for (std::uint32_t id : plan.remove) delete_replica(p, p.replicas[id], settle_now);
}

void World::create_ready_replica(Pool& p) {
  Replica r;
  r.id = static_cast<std::uint32_t>(p.replicas.size());
  r.created_at = 0;
  r.node_ready_at = -3600 * kMicrosPerSecond;
  r.ready_at = -3600 * kMicrosPerSecond;
  r.state = ReplicaState::Ready;
  r.engine = std::make_unique<Engine>(p.engine);
  p.ready.push_back(r.id);
  p.replicas.push_back(std::move(r));
  ++p.live_replicas;
  ++live_replicas_;
  ++p.ready_replicas;
  p.peak_replicas = std::max(p.peak_replicas, p.live_replicas);
  peak_replicas_ = std::max(peak_replicas_, live_replicas_);
  set_idle(p, p.replicas.back(), true);
  if (realistic_metrics_) start_metric_targets(p, p.replicas.back());
}

void World::create_replica(Pool& p, Micros now, Settle settle_now) {
  Replica r;
  r.id = static_cast<std::uint32_t>(p.replicas.size());
  r.created_at = now;
  r.engine = std::make_unique<Engine>(p.engine);
  p.replicas.push_back(std::move(r));
  Replica& ref = p.replicas.back();
  ++p.live_replicas;
  ++live_replicas_;
  p.peak_replicas = std::max(p.peak_replicas, p.live_replicas);
  peak_replicas_ = std::max(peak_replicas_, live_replicas_);
  if (realistic_metrics_) start_metric_targets(p, ref);
  if (cluster_) {
    ref.pod = cluster_->add_replica_pod(p.index, static_cast<std::int32_t>(ref.id), now);
    if (settle_now == Settle::Now) settle();
    return;
  }
  FixedDelayDecision d = fixed_nodes_.provision(ref.id, p.gpus_per_replica, now);
  queue_.push(d.node_ready_at, EventClass::Completion, {EventKind::NodeReady, 0, static_cast<std::uint16_t>(p.index), ref.id});
  if (s_.output.decisions) {
    log_decision(now, "provisioner", p.log_name, p.live_replicas, p.spec_replicas, "NodeRequested",
                 d.explanation + "; then model load " + fmt_seconds(p.config->model_load_s) + " and warm-up " +
                     fmt_seconds(p.config->warmup_s) + " before Ready");
  }
}

void World::delete_replica(Pool& p, Replica& r, Settle settle_now) {
  begin_termination(p, r, FailureCause::ScaleDown, "deleted by the ReplicaSet (scale-down)", -1, settle_now);
}

}  // namespace sim
}  // namespace gpuscale
