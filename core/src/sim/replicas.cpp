// Replica lifecycle and the ReplicaSet: a replica's cold start (node, model load, warm-up), Ready,
// draining, eviction and removal, and the pool's replica count brought to its spec (see world.hpp).
#include <algorithm>
#include <cstdio>
#include <map>

#include "k8s/replica_set.hpp"
#include "sim/world.hpp"

namespace gpuscale::sim {

namespace {

// Kubernetes' default terminationGracePeriodSeconds: a replica being removed keeps serving what it
// already holds for this long, then whatever is left is lost (SIGKILL).
constexpr Micros kTerminationGrace = 30 * kMicrosPerSecond;

std::string fmt_seconds(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.0f s", s);
  return buf;
}

}  // namespace

void World::on_node_ready(Pool& p, Replica& r, Micros container_start) {
  if (r.state != ReplicaState::Pending) return;
  r.state = ReplicaState::Loading;  // in cluster mode this includes the image pull, if the node needs one
  r.node_ready_at = now_;
  const Micros start = container_start > now_ ? container_start : now_;
  queue_.push(start + seconds_to_micros(p.config->model_load_s), EventClass::Completion,
              {EventKind::LoadDone, 0, static_cast<std::uint16_t>(p.index), r.id});
}

void World::on_load_done(Pool& p, Replica& r) {
  if (r.state != ReplicaState::Loading) return;
  r.state = ReplicaState::WarmingUp;
  queue_.push(now_ + seconds_to_micros(p.config->warmup_s), EventClass::Completion,
              {EventKind::WarmupDone, 0, static_cast<std::uint16_t>(p.index), r.id});
}

void World::enter_ready(Pool& p, Replica& r) {
  r.state = ReplicaState::Ready;
  ++p.ready_replicas;
  p.ready.insert(std::upper_bound(p.ready.begin(), p.ready.end(), r.id), r.id);
  if (cluster_ && r.pod >= 0) cluster_->set_pod_ready(static_cast<std::uint32_t>(r.pod), true);  // what a PDB counts
  set_idle(p, r, true);
}

void World::on_warmup_done(Pool& p, Replica& r) {
  if (r.state != ReplicaState::WarmingUp) return;
  r.ready_at = now_;
  enter_ready(p, r);
  // Requests held at the gateway go out now, oldest first.
  std::deque<std::uint32_t> waiting;
  waiting.swap(p.gateway);
  for (std::uint32_t id : waiting) {
    if (!result_.requests[id].dropped_at) route(id);
  }
}

void World::leave_ready(Pool& p, const Replica& r) {
  --p.ready_replicas;
  p.ready.erase(std::find(p.ready.begin(), p.ready.end(), r.id));
  if (cluster_ && r.pod >= 0) cluster_->set_pod_ready(static_cast<std::uint32_t>(r.pod), false);
}

// A node removal took the replica's pod: what it held fails (or goes back to the gateway), and the
// ReplicaSet, still wanting spec_replicas, makes a new replica that starts from Pending.
void World::evict_replica(Pool& p, Replica& r, RemovalReason reason) {
  if (r.state == ReplicaState::Gone) return;
  std::int64_t lost = 0, retried = 0;
  const std::string why = std::string("evicted: node removed (") + to_string(reason) + ")";
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
    remove_replica(p, r, why, Settle::ByCaller, true);
    for (std::uint32_t id : again) route(id);
  } else {
    for (std::uint32_t id : r.assigned) {
      const RequestRecord& rec = result_.requests[id];
      if (!rec.completed_at && !rec.dropped_at) ++lost;
    }
    remove_replica(p, r, why, Settle::ByCaller, true);
  }
  ++p.num_replica_evictions;
  p.num_failed_by_eviction += lost;
  log_lifecycle(p, r, "replica " + std::to_string(r.id) + " evicted (" + to_string(reason) + "): " + std::to_string(lost) +
                          " requests failed, " + std::to_string(retried) + " sent back to the gateway; a new replica pays a full cold start");
  reconcile_replicas(p, now_, Settle::ByCaller);
}

void World::on_drain_deadline(Pool& p, Replica& r) {
  if (r.state != ReplicaState::Draining) return;
  remove_replica(p, r, "termination grace period over: requests still held are lost");
}

// The pod is gone: anything it still holds is lost, its GPUs return to the provisioner. `pod_gone`:
// the cluster already removed the pod (an eviction), so there is nothing to delete there.
void World::remove_replica(Pool& p, Replica& r, const std::string& why, Settle settle_now, bool pod_gone) {
  if (r.state == ReplicaState::Gone) return;
  if (r.state == ReplicaState::Ready) leave_ready(p, r);
  set_idle(p, r, false);
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
  if (r.engine) p.retired_preemptions += r.engine->num_preemptions();
  r.state = ReplicaState::Gone;
  --p.live_replicas;
  --live_replicas_;
  if (cluster_ && r.pod >= 0 && !pod_gone) {
    cluster_->remove_pod(static_cast<std::uint32_t>(r.pod), now_);
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
  if (r.state == ReplicaState::Ready && (r.engine->has_work() || r.stepping)) {
    // Endpoint removed at once (no new requests); in-flight work gets the grace period.
    leave_ready(p, r);
    r.state = ReplicaState::Draining;
    set_idle(p, r, false);
    if (cluster_ && r.pod >= 0) cluster_->mark_pod_terminating(static_cast<std::uint32_t>(r.pod), now_);
    queue_.push(now_ + kTerminationGrace, EventClass::Completion, {EventKind::DrainDeadline, 0, static_cast<std::uint16_t>(p.index), r.id});
    log_lifecycle(p, r, "replica " + std::to_string(r.id) + " draining: " + std::to_string(r.engine->num_requests_running()) +
                            " running and " + std::to_string(r.engine->num_requests_waiting()) + " waiting get " +
                            fmt_seconds(micros_to_seconds(kTerminationGrace)) + " to finish");
    return;
  }
  remove_replica(p, r, std::string("deleted while ") + state_name(r.state), settle_now);
}

}  // namespace gpuscale::sim
