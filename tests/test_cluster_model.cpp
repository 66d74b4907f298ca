// The cluster model (core/src/cluster_model.cpp) driven directly, without the simulation loop: nodes that
// launch, register and initialize; pods bound by kube-scheduler only once GPUs are advertised; evictions
// when nodes go; the node-hour and GPU-hour accounting; spot interruptions. The node provisioner is either
// a scripted fake written here or the real Karpenter.
#include <catch2/catch.hpp>

#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "sim/cluster_model.hpp"
#include "exercises/exercise.hpp"
#include "provisioning/karpenter/karpenter.hpp"
#include "sim/provisioners.hpp"

using namespace gpuscale;

namespace {

constexpr Micros kS = kMicrosPerSecond;
constexpr Micros kH = 3600 * kS;

// A provisioner that does what the test says: one node for every pod it hears is unschedulable (the GPU
// type for pods that ask for GPUs, the CPU type otherwise), launched at the instant the pod is marked,
// and the removals it is given, at their times.
class ScriptedProvisioner : public NodeProvisioner {
 public:
  struct Removal {
    Micros at;
    NodeRemoval removal;
    bool done = false;
  };

  std::string gpu_type = "p5.48xlarge", cpu_type = "m7i.4xlarge";
  CapacityType capacity_type = CapacityType::OnDemand;
  std::vector<Taint> taints, startup_taints;
  std::vector<Removal> removals;
  std::vector<std::pair<Micros, std::uint32_t>> marked;  // (time, pod), every call

  const char* name() const override { return "scripted"; }

  void on_unschedulable(const ClusterState& /*cluster*/, std::uint32_t pod, Micros now) override {
    marked.emplace_back(now, pod);
    if (served_.insert(pod).second) {
      to_launch_.push_back(pod);
      launch_at_ = now;
    }
  }

  Micros next_wakeup() const override {
    Micros t = to_launch_.empty() ? -1 : launch_at_;
    for (const auto& r : removals) {
      if (!r.done && (t < 0 || r.at < t)) t = r.at;
    }
    return t;
  }

  void wake(const ClusterState& cluster, Micros now, ProvisionerActions& out) override {
    for (std::uint32_t pod : to_launch_) {
      const PodTemplate& t = cluster.templates[static_cast<std::size_t>(cluster.pods[pod].template_index)];
      const InstanceType* type = find_instance_type(cluster.types, t.gpus > 0 ? gpu_type : cpu_type);
      NodeLaunch l;
      l.owner = "gpu";
      l.type_index = static_cast<int>(type - cluster.types.data());
      l.capacity_type = capacity_type;
      l.taints = taints;
      l.startup_taints = startup_taints;
      out.launches.push_back(l);
      out.log.push_back(ProvisionerLog{"scripted", "launch", "Unschedulable", "a " + type->name + " for pod " + std::to_string(pod)});
    }
    to_launch_.clear();
    for (auto& r : removals) {
      if (r.done || r.at > now) continue;
      out.removals.push_back(r.removal);
      r.done = true;
    }
  }

 private:
  std::set<std::uint32_t> served_;
  std::vector<std::uint32_t> to_launch_;
  Micros launch_at_ = -1;
};

// The NodePool "gpu": p5.48xlarge on demand, no taint, WhenEmpty / 1h.
Json gpu_pool() {
  return Json::parse(R"({
    "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
    "spec": {
      "template": {"spec": {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
        "requirements": [
          {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]},
          {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]}},
      "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1h"}}
  })");
}

// A cluster-mode scenario with that pool, patched per test (arrays in the patch replace the base's).
Scenario scenario(const Json& patch = Json::object()) {
  Json doc{{"seed", 5}, {"cluster", {{"provisioner", "karpenter"}, {"nodepools", Json::array({gpu_pool()})}}}};
  merge_json(doc, patch);
  return parse_scenario(doc);
}

// The model with a clock of its own for the test: the events it files wait in a queue here, and
// advance(t) hands it everything due by t, then settles the instant, as the world's loop does. Every
// call appends what the model reported to `out`.
class Harness : public ClusterEvents {
 public:
  Harness(const Scenario& s, std::unique_ptr<NodeProvisioner> p) : m_(s, std::move(p), *this) {}
  void file(Micros time, EventClass cls, const ClusterEvent& e) override { queue_.push(time, cls, e); }

  void start(std::int32_t replicas, std::vector<ClusterNotice>& out) {
    m_.start({replicas});
    collect(out);
  }
  std::uint32_t add_replica_pod(std::int32_t replica, Micros now, std::vector<ClusterNotice>& out) {
    const std::uint32_t pod = m_.add_replica_pod(0, replica, now);
    collect(out);
    return pod;
  }
  void remove_pod(std::uint32_t pod, Micros now, std::vector<ClusterNotice>& out) {
    m_.remove_pod(pod, now);
    collect(out);
  }
  Micros next_event_time() const { return queue_.empty() ? -1 : queue_.top().time; }
  void advance(Micros now, std::vector<ClusterNotice>& out) {
    while (!queue_.empty() && queue_.top().time <= now) m_.on_event(queue_.pop().payload, now);
    m_.settle(now);
    collect(out);
  }
  const ClusterState& state() const { return m_.state(); }
  const ClusterTotals& totals() const { return m_.totals(); }
  void finish(Micros end) { m_.finish(end); }
  std::vector<ClusterLog> take_logs() { return m_.take_logs(); }
  std::int32_t nodes_in(NodePhase phase) const { return m_.nodes_in(phase); }
  void set_pod_ready(std::uint32_t pod, bool ready) { m_.set_pod_ready(pod, ready); }
  void set_expected_replicas(std::int32_t replicas) { m_.set_expected_replicas(0, replicas); }

 private:
  void collect(std::vector<ClusterNotice>& out) {
    for (const ClusterNotice& n : m_.take_notices()) out.push_back(n);
  }
  ClusterModel m_;
  EventQueue<ClusterEvent> queue_;
};

// Runs everything the model has due up to `end`, one event time at a time.
void run_until(Harness& m, Micros end, std::vector<ClusterNotice>& out) {
  for (Micros t = m.next_event_time(); t >= 0 && t <= end; t = m.next_event_time()) m.advance(t, out);
}

using Notice = std::tuple<int, std::int32_t, std::uint32_t, std::uint32_t, Micros, std::string>;  // kind, replica, pod, node, time, reason
std::vector<Notice> tuples(const std::vector<ClusterNotice>& ns) {
  std::vector<Notice> out;
  for (const auto& n : ns) {
    const bool evicted = n.kind == ClusterNotice::Kind::ReplicaPodEvicted;
    out.emplace_back(static_cast<int>(n.kind), n.replica, n.pod, n.node, n.time, evicted ? to_string(n.reason) : "");
  }
  return out;
}
constexpr int kBound = static_cast<int>(ClusterNotice::Kind::ReplicaPodBound), kEvicted = static_cast<int>(ClusterNotice::Kind::ReplicaPodEvicted);

using Entry = std::tuple<Micros, std::string, std::string, std::string>;  // time, controller, action, reason
std::vector<Entry> entries(const std::vector<ClusterLog>& logs) {
  std::vector<Entry> out;
  for (const auto& l : logs) out.emplace_back(l.time, l.controller, l.action, l.reason);
  return out;
}

}  // namespace

TEST_CASE("a pending replica pod launches a node that registers, initializes, and only then takes the pod", "[cluster-model]") {
  const Scenario s = scenario();
  auto fake = std::make_unique<ScriptedProvisioner>();
  ScriptedProvisioner* p = fake.get();
  Harness m(s, std::move(fake));
  std::vector<ClusterNotice> out;
  m.start(0, out);
  CHECK(m.state().nodes.empty());
  CHECK(m.state().pods.empty());
  CHECK(m.next_event_time() == -1);

  const Micros t0 = 100 * kS;
  const std::uint32_t pod = m.add_replica_pod(7, t0, out);
  CHECK(pod == 0);
  CHECK(out.empty());
  REQUIRE_FALSE(p->marked.empty());
  CHECK(p->marked.front() == std::make_pair(t0, pod));

  // Step by step: the pod is never bound to a node that has not advertised its GPUs.
  for (Micros t = m.next_event_time(); t >= 0 && t <= t0 + kH; t = m.next_event_time()) {
    m.advance(t, out);
    const Pod& pp = m.state().pods[pod];
    if (pp.phase == PodPhase::Running) {
      INFO("t = " << t);
      CHECK(m.state().nodes.at(static_cast<std::size_t>(pp.node)).phase == NodePhase::Initialized);
    }
  }
  REQUIRE(m.state().nodes.size() == 1);
  const Node& n = m.state().nodes[0];
  CHECK(n.phase == NodePhase::Initialized);
  CHECK(n.launched_at == t0);
  // The default startup preset, lesson_karpenter: 35–45 s to register, 10–15 s more to initialize.
  CHECK(n.registered_at - n.launched_at >= 35 * kS);
  CHECK(n.registered_at - n.launched_at <= 45 * kS);
  CHECK(n.initialized_at - n.registered_at >= 10 * kS);
  CHECK(n.initialized_at - n.registered_at <= 15 * kS);
  CHECK(n.gpus_allocatable == 8);
  CHECK(n.gpus_requested == 2);
  CHECK(n.labels.at("karpenter.sh/nodepool") == "gpu");
  CHECK(n.labels.at("node.kubernetes.io/instance-type") == "p5.48xlarge");
  CHECK(tuples(out) == std::vector<Notice>{{kBound, 7, pod, 0, n.initialized_at, ""}});
  for (const auto& [t, id] : p->marked) CHECK(t < n.initialized_at);  // no more calls once bound

  CHECK(entries(m.take_logs()) == std::vector<Entry>{{t0, "kube-scheduler", "unschedulable", "FailedScheduling"},
                                                     {t0, "scripted", "launch", "Unschedulable"},
                                                     {n.initialized_at, "cloud", "initialized", "NodeInitialized"},
                                                     {n.initialized_at, "kube-scheduler", "bind", "Scheduled"}});
  CHECK(m.take_logs().empty());
  CHECK(m.totals().nodes_launched == 1);
}

TEST_CASE("node startup times stay inside each preset's ranges", "[cluster-model]") {
  for (const char* preset : {"lesson_karpenter", "lesson_cluster_autoscaler", "real_world"}) {
    for (std::uint64_t seed = 1; seed <= 10; ++seed) {
      const Scenario s = scenario({{"seed", seed}, {"cluster", {{"node_startup", {{"preset", preset}}}}}});
      INFO(preset << ", seed " << seed);
      Harness m(s, std::make_unique<ScriptedProvisioner>());
      std::vector<ClusterNotice> out;
      m.start(0, out);
      m.add_replica_pod(0, 0, out);
      run_until(m, 2 * kH, out);
      REQUIRE(m.state().nodes.size() == 1);
      const Node& n = m.state().nodes[0];
      const NodeStartup& st = s.cluster.startup;
      CHECK(st.preset == value_of(preset, kStartupPresets));
      CHECK(n.registered_at >= seconds_to_micros(st.launch_to_registered.min_s));
      CHECK(n.registered_at <= seconds_to_micros(st.launch_to_registered.max_s));
      CHECK(n.initialized_at - n.registered_at >= seconds_to_micros(st.registered_to_initialized.min_s));
      CHECK(n.initialized_at - n.registered_at <= seconds_to_micros(st.registered_to_initialized.max_s));
      CHECK(n.ready_at - n.registered_at >= seconds_to_micros(st.registered_to_ready.min_s));
      CHECK(n.ready_at - n.registered_at <= seconds_to_micros(st.registered_to_ready.max_s));
      REQUIRE(out.size() == 1);
      CHECK(out[0].time == n.initialized_at);
    }
  }
  // The presets' numbers (docs: 45–60 s for the lesson's Karpenter, 90–120 s for its CA, minutes in the real world).
  const Scenario rw = scenario({{"cluster", {{"node_startup", {{"preset", "real_world"}}}}}});
  CHECK(rw.cluster.startup.launch_to_registered.min_s == 180);
  CHECK(rw.cluster.startup.launch_to_registered.max_s == 360);
  CHECK(rw.cluster.startup.registered_to_initialized.min_s == 60);
  CHECK(rw.cluster.startup.registered_to_initialized.max_s == 120);
}

TEST_CASE("startup taints disappear at initialization, the not-ready taint when the kubelet reports Ready", "[cluster-model]") {
  const Scenario s = scenario({{"cluster", {{"workloads", {{{"name", "web"}, {"replicas", 0}, {"pod", {{"cpu", "1"}, {"memory", "2Gi"}}}}}}}}});
  auto fake = std::make_unique<ScriptedProvisioner>();
  ScriptedProvisioner* p = fake.get();
  p->taints = {Taint{"dedicated", "llm", TaintEffect::PreferNoSchedule}};
  p->startup_taints = {Taint{"node.example.com/agent-not-ready", "", TaintEffect::NoExecute}};
  Harness m(s, std::move(fake));
  std::vector<ClusterNotice> out;
  m.start(0, out);
  m.add_replica_pod(0, 0, out);
  m.advance(0, out);  // the launch
  REQUIRE(m.state().nodes.size() == 1);
  const Node& n = m.state().nodes[0];
  CHECK(n.phase == NodePhase::Launched);
  CHECK(n.startup_taints == 1);
  REQUIRE(n.taints.size() == 2);
  CHECK(n.taints[1].key == "node.example.com/agent-not-ready");

  while (n.phase == NodePhase::Launched) m.advance(m.next_event_time(), out);
  CHECK(n.phase == NodePhase::Registered);
  // Registered NotReady: the not-ready taint goes in front of the startup taint, which stays last.
  REQUIRE(n.taints.size() == 3);
  CHECK(n.taints[1].key == kNotReadyTaint);
  CHECK(n.taints[2].key == "node.example.com/agent-not-ready");
  CHECK(n.gpus_allocatable == 0);
  while (n.ready_at < 0) m.advance(m.next_event_time(), out);
  CHECK(n.phase == NodePhase::Registered);
  REQUIRE(n.taints.size() == 2);  // Ready: the not-ready taint is gone, the startup taint stays
  CHECK(n.taints[1].key == "node.example.com/agent-not-ready");

  while (n.phase == NodePhase::Registered) m.advance(m.next_event_time(), out);
  CHECK(n.phase == NodePhase::Initialized);
  CHECK(n.startup_taints == 0);
  REQUIRE(n.taints.size() == 1);
  CHECK(n.taints[0].key == "dedicated");  // the node's own taints stay
  REQUIRE(out.size() == 1);
  CHECK(out[0].time == n.initialized_at);
}

TEST_CASE("a CPU pod binds to a new node once its kubelet reports Ready, before the GPUs are advertised", "[cluster-model]") {
  // One web pod and no nodes: the fake launches an m7i.4xlarge for it.
  const Scenario s = scenario({{"cluster", {{"workloads", {{{"name", "web"}, {"replicas", 1}, {"pod", {{"cpu", "1"}, {"memory", "2Gi"}}}}}}}}});
  Harness m(s, std::make_unique<ScriptedProvisioner>());
  std::vector<ClusterNotice> out;
  m.start(0, out);
  REQUIRE(m.state().pods.size() == 1);
  run_until(m, kH, out);
  const Node& n = m.state().nodes.at(0);
  CHECK(m.state().types[static_cast<std::size_t>(n.type_index)].name == "m7i.4xlarge");
  CHECK(m.state().pods[0].phase == PodPhase::Running);
  CHECK(out.empty());  // not a replica: nothing to tell the simulation
  // Registered NotReady, the pod waits (FailedScheduling names the taint); Ready, it binds.
  Micros bound_at = -1;
  for (const auto& l : m.take_logs()) {
    if (l.action == "bind") bound_at = l.time;
  }
  CHECK(bound_at == n.ready_at);
  CHECK(n.registered_at < n.ready_at);
  CHECK(n.ready_at - n.registered_at >= 5 * kS);  // lesson_karpenter: 5–10 s from registration to Ready
  CHECK(n.ready_at - n.registered_at <= 10 * kS);
  CHECK(n.ready_at <= n.initialized_at);
}

TEST_CASE("removing a node evicts its pods: replicas are reported, other workloads' pods come back Pending", "[cluster-model]") {
  // One starting p5.48xlarge with two replicas and a web pod (no taint keeps it off).
  const Scenario s = scenario({{"cluster",
                                {{"initial_nodes", {{{"instance_type", "p5.48xlarge"}, {"count", 1}}}},
                                 {"workloads", {{{"name", "web"}, {"replicas", 1}, {"pod", {{"cpu", "1"}, {"memory", "2Gi"}}}}}}}}});
  auto fake = std::make_unique<ScriptedProvisioner>();
  ScriptedProvisioner* p = fake.get();
  const Micros at = 600 * kS;
  p->removals.push_back({at, NodeRemoval{0, RemovalReason::Underutilized, true}});
  Harness m(s, std::move(fake));
  std::vector<ClusterNotice> out;
  m.start(2, out);
  CHECK(tuples(out) == std::vector<Notice>{{kBound, 0, 0, 0, 0, ""}, {kBound, 1, 1, 0, 0, ""}});
  CHECK(m.state().pods[2].phase == PodPhase::Running);
  CHECK(m.totals().non_gpu_pods_on_gpu_nodes == 1);
  out.clear();

  run_until(m, at, out);
  CHECK(tuples(out) == std::vector<Notice>{{kEvicted, 0, 0, 0, at, "Underutilized"}, {kEvicted, 1, 1, 0, at, "Underutilized"}});
  const ClusterState& c = m.state();
  CHECK(c.nodes[0].phase == NodePhase::Terminating);
  // The replicas' pods are terminating, still bound (the world runs their preStop, SIGTERM and SIGKILL);
  // the web pod, with no preStop hook and no requests, stopped at once.
  CHECK(c.nodes[0].pods == std::vector<std::uint32_t>{0, 1});
  for (std::uint32_t id : {0u, 1u}) CHECK((c.pods[id].terminating() && !c.pods[id].deleted && !c.pods[id].ready));
  CHECK(c.pods[2].deleted);
  // The web pod's ReplicaSet made a new one, Pending, for which the fake launched a CPU node.
  REQUIRE(c.pods.size() == 4);
  CHECK(c.pods[3].template_index == 1);
  CHECK(c.pods[3].replica == -1);
  CHECK(c.pods[3].phase == PodPhase::Pending);
  CHECK(c.pods[3].created_at == at);
  REQUIRE(c.nodes.size() == 2);
  CHECK(c.types[static_cast<std::size_t>(c.nodes[1].type_index)].name == "m7i.4xlarge");
  CHECK(m.totals().pod_evictions == 3);
  CHECK(m.totals().replica_evictions == 2);

  // The instance goes once the last pod has stopped, not before.
  m.remove_pod(0, at + 10 * kS, out);
  run_until(m, at + 20 * kS, out);
  CHECK(c.nodes[0].phase == NodePhase::Terminating);
  m.remove_pod(1, at + 25 * kS, out);
  run_until(m, at + 25 * kS, out);
  CHECK(c.nodes[0].phase == NodePhase::Terminated);
  CHECK(c.nodes[0].terminated_at == at + 25 * kS);
  CHECK(m.totals().nodes_removed == 1);

  run_until(m, at + kH, out);
  CHECK(c.pods[3].phase == PodPhase::Running);
  CHECK(c.pods[3].node == 1);
  CHECK(out.size() == 2);  // nothing more for the simulation

  bool logged = false;
  for (const auto& l : m.take_logs()) {
    if (l.controller == "scripted" && l.action == "delete") {
      logged = true;
      CHECK(l.time == at);
      CHECK(l.reason == "Underutilized");
      CHECK_THAT(l.explanation, Catch::Contains("3 pods evicted"));
    }
  }
  CHECK(logged);
}

TEST_CASE("an empty node removed without drain goes at once", "[cluster-model]") {
  const Scenario s = scenario({{"cluster", {{"initial_nodes", {{{"instance_type", "p5.48xlarge"}, {"count", 2}}}}}}});
  auto fake = std::make_unique<ScriptedProvisioner>();
  fake->removals.push_back({300 * kS, NodeRemoval{1, RemovalReason::RegistrationTimeout, false}});
  Harness m(s, std::move(fake));
  std::vector<ClusterNotice> out;
  m.start(0, out);
  run_until(m, kH, out);
  CHECK(m.state().nodes[1].phase == NodePhase::Terminated);
  CHECK(m.state().nodes[1].terminated_at == 300 * kS);
  CHECK(m.state().nodes[0].phase == NodePhase::Initialized);
  CHECK(out.empty());
  CHECK(m.totals().pod_evictions == 0);
}

TEST_CASE("cost accounting: node-hours by capacity-type price, GPU-hours allocatable and requested", "[cluster-model]") {
  // t = 0: a p5.48xlarge on demand ($55.04/h, 8 GPUs) with two TP2 replicas, and an m7i.4xlarge on spot
  // ($0.3226/h). t = 1 h: one replica goes. t = 2 h: the m7i is removed (empty: at once). The run ends at 4 h.
  const Scenario s = scenario({{"cluster",
                                {{"initial_nodes",
                                  {{{"instance_type", "p5.48xlarge"}, {"count", 1}},
                                   {{"instance_type", "m7i.4xlarge"}, {"capacity_type", "spot"}, {"count", 1}}}}}}});
  auto fake = std::make_unique<ScriptedProvisioner>();
  fake->removals.push_back({2 * kH, NodeRemoval{1, RemovalReason::Empty, true}});
  Harness m(s, std::move(fake));
  std::vector<ClusterNotice> out;
  m.start(2, out);
  REQUIRE(out.size() == 2);
  const ClusterState& c = m.state();
  CHECK(c.nodes[0].price_usd_per_hour == 55.04);
  CHECK(c.nodes[1].price_usd_per_hour == 0.3226);
  CHECK(c.nodes[1].labels.at("karpenter.sh/capacity-type") == "spot");
  CHECK(c.nodes[0].gpus_requested == 4);

  run_until(m, kH, out);
  m.remove_pod(1, kH, out);
  CHECK(c.nodes[0].gpus_requested == 2);
  run_until(m, 4 * kH, out);
  CHECK(c.nodes[1].terminated_at == 2 * kH);
  m.finish(4 * kH);

  const ClusterTotals& t = m.totals();
  CHECK(t.node_hours == Approx(4 + 2));
  CHECK(t.node_cost_usd == Approx(4 * 55.04 + 2 * 0.3226));
  CHECK(t.gpu_hours_allocatable == Approx(8 * 4));
  CHECK(t.gpu_hours_requested == Approx(4 * 1 + 2 * 3));
  CHECK(t.nodes_launched == 2);
  CHECK(t.nodes_removed == 1);
  CHECK(t.pod_evictions == 0);
  // finish() is idempotent: the clock does not run twice.
  m.finish(4 * kH);
  CHECK(m.totals().node_hours == Approx(6));
}

TEST_CASE("spot interruptions evict at the notice and terminate the node 2 minutes later", "[cluster-model]") {
  auto run = [](double rate, CapacityType capacity, std::vector<ClusterNotice>& out, std::vector<ClusterLog>& logs) {
    const Scenario s = scenario({{"cluster", {{"spot_interruptions_per_node_hour", rate}}}});
    auto fake = std::make_unique<ScriptedProvisioner>();
    fake->capacity_type = capacity;
    Harness m(s, std::move(fake));
    m.start(0, out);
    m.add_replica_pod(3, 0, out);
    run_until(m, 24 * kH, out);
    m.finish(24 * kH);
    logs = m.take_logs();
    return std::make_pair(m.state().nodes, m.totals());
  };

  std::vector<ClusterNotice> out;
  std::vector<ClusterLog> logs;
  const auto [nodes, totals] = run(2.0, CapacityType::Spot, out, logs);
  REQUIRE(nodes.size() == 1);
  const Node& n = nodes[0];
  CHECK(n.price_usd_per_hour == 22.02);
  // Evicted at the notice; the pod (which nobody stops here) dies with the instance 2 minutes later.
  REQUIRE(out.size() == 3);
  CHECK(out[0].kind == ClusterNotice::Kind::ReplicaPodBound);
  const ClusterNotice& ev = out[1];
  CHECK(ev.kind == ClusterNotice::Kind::ReplicaPodEvicted);
  CHECK(ev.replica == 3);
  CHECK(ev.reason == RemovalReason::Interrupted);
  CHECK(ev.time > n.initialized_at);
  CHECK(out[2].kind == ClusterNotice::Kind::ReplicaPodKilled);
  CHECK(out[2].replica == 3);
  CHECK(out[2].time == ev.time + 120 * kS);
  CHECK(n.phase == NodePhase::Terminated);
  CHECK(n.terminated_at == ev.time + 120 * kS);
  CHECK(totals.spot_interruptions == 1);
  CHECK(totals.pod_evictions == 1);
  CHECK(totals.replica_evictions == 1);
  CHECK(totals.node_hours == Approx(micros_to_seconds(n.terminated_at) / 3600.0));
  bool logged = false;
  for (const auto& l : logs) {
    if (l.reason != "Interrupted" || l.action != "delete") continue;
    logged = true;
    CHECK(l.controller == "cloud");
    CHECK(l.time == ev.time);
  }
  CHECK(logged);

  // No interruptions at rate 0, and none for on-demand nodes at any rate.
  for (const auto& [rate, capacity] : {std::make_pair(0.0, CapacityType::Spot), std::make_pair(10.0, CapacityType::OnDemand)}) {
    INFO(to_string(capacity) << " at " << rate << "/h");
    std::vector<ClusterNotice> o;
    std::vector<ClusterLog> l;
    const auto [ns, tot] = run(rate, capacity, o, l);
    CHECK(ns.at(0).phase == NodePhase::Initialized);
    CHECK(tot.spot_interruptions == 0);
    CHECK(o.size() == 1);
  }
}

TEST_CASE("with Karpenter: a batch window, a NodeClaim from the pool, the bind, and an empty node gone after consolidateAfter",
          "[cluster-model]") {
  Json pool = gpu_pool();
  pool["spec"]["template"]["spec"]["taints"] = Json::parse(R"([{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}])");
  const Scenario s = scenario({{"cluster", {{"nodepools", Json::array({pool})}}}});
  Harness m(s, make_node_provisioner(s));
  std::vector<ClusterNotice> out;
  m.start(0, out);
  m.add_replica_pod(0, 0, out);

  // Karpenter's batch closes BATCH_IDLE_DURATION (1 s) after the last new pod: the launch is at 1 s.
  run_until(m, 1 * kS, out);
  REQUIRE(m.state().nodes.size() == 1);
  const Node& n = m.state().nodes[0];
  CHECK(n.launched_at == 1 * kS);
  CHECK(n.owner == "gpu");
  CHECK(n.capacity_type == CapacityType::OnDemand);
  CHECK(m.state().types[static_cast<std::size_t>(n.type_index)].name == "p5.48xlarge");
  REQUIRE(n.taints.size() == 1);
  CHECK(n.taints[0].key == "nvidia.com/gpu");

  run_until(m, 10 * 60 * kS, out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == ClusterNotice::Kind::ReplicaPodBound);
  CHECK(out[0].time == n.initialized_at);
  CHECK(n.gpus_requested == 2);

  // The replica goes at 10 min; WhenEmpty / 1h decides to delete the node an hour later, at the next
  // 10 s poll, and does so once the command has waited its 15 s validation.
  const Micros gone = 10 * 60 * kS;
  m.remove_pod(0, gone, out);
  run_until(m, gone + kH + 15 * kS - 1, out);
  CHECK(n.phase == NodePhase::Initialized);
  run_until(m, gone + kH + 40 * kS, out);
  CHECK(n.phase == NodePhase::Terminated);
  CHECK(n.terminated_at >= gone + kH + 15 * kS);
  CHECK(n.terminated_at <= gone + kH + 25 * kS);
  CHECK(m.totals().pod_evictions == 0);
  CHECK(out.size() == 1);

  std::vector<std::string> actions;
  for (const auto& l : m.take_logs()) {
    if (l.action != "none") actions.push_back(l.controller + " " + l.action + " " + l.reason);
  }
  CHECK(actions == std::vector<std::string>{"kube-scheduler unschedulable FailedScheduling", "karpenter.provisioner launch Unschedulable",
                                            "cloud initialized NodeInitialized", "kube-scheduler bind Scheduled",
                                            "karpenter.disruption delete Empty", "karpenter delete Empty"});
}

TEST_CASE("PodDisruptionBudget arithmetic: expected, desired and current healthy, disruptions allowed", "[cluster]") {
  ClusterState s;
  PodTemplate replica, web_pod;
  replica.owner = PodOwner{PodOwner::Kind::Pool, 0, "vllm", 1, {}};
  web_pod.owner = PodOwner{PodOwner::Kind::Workload, 0, "web", 1, {}};
  s.templates = {replica, web_pod};
  s.pools = {PoolBudget{}};
  auto add = [&](bool ready, PodPhase phase = PodPhase::Running, std::int32_t owner = 0) {
    Pod p;
    p.id = static_cast<std::uint32_t>(s.pods.size());
    p.template_index = owner < 0 ? 1 : 0;
    p.replica = owner < 0 ? -1 : static_cast<std::int32_t>(p.id);
    p.phase = phase;
    p.ready = ready;
    s.pods.push_back(p);
    return p.id;
  };
  for (int i = 0; i < 4; ++i) add(true);
  const auto loading = add(false);              // bound, not Ready yet
  add(false, PodPhase::Pending);                // counted as a pod, not healthy
  const auto web = add(true, PodPhase::Running, -1);  // another workload: not covered
  s.pools[0].expected_replicas = 6;

  CHECK(eviction_allowed(s, s.pods[0]));  // no PDB: always
  s.pools[0].pdb = PdbSpec{false, "1", false};  // maxUnavailable 1: desired = 6 − 1 = 5 > 4 healthy
  PdbStatus st = pool_pdb_status(s, 0);
  CHECK(st.expected == 6);
  CHECK(st.desired_healthy == 5);
  CHECK(st.current_healthy == 4);
  CHECK(st.disruptions_allowed == 0);
  std::string why;
  CHECK_FALSE(eviction_allowed(s, s.pods[0], &why));
  CHECK(why == "PodDisruptionBudget maxUnavailable 1: 4 healthy, 5 desired → disruptionsAllowed 0");
  CHECK_FALSE(eviction_allowed(s, s.pods[loading]));  // IfHealthyBudget: the budget is not met
  CHECK(eviction_allowed(s, s.pods[web]));
  s.pools[0].pdb->always_allow_unhealthy = true;
  CHECK(eviction_allowed(s, s.pods[loading]));

  s.pools[0].pdb = PdbSpec{false, "50%", false};  // maxUnavailable 50% of 6 = 3 (rounded up) → desired 3
  CHECK(pool_pdb_status(s, 0).disruptions_allowed == 1);
  CHECK(eviction_allowed(s, s.pods[0]));
  s.pools[0].pdb = PdbSpec{true, "3", false};  // minAvailable 3 → 4 − 3 = 1
  CHECK(pool_pdb_status(s, 0).disruptions_allowed == 1);
  CHECK(pool_pdb_status(s, 0).expected == 6);           // integer minAvailable: expected = the pods (6 with owners)
  s.pools[0].pdb = PdbSpec{true, "100%", false};  // minAvailable 100% of 6 → 6 desired
  CHECK(pool_pdb_status(s, 0).desired_healthy == 6);
  CHECK(pool_pdb_status(s, 0).disruptions_allowed == 0);
  s.pools[0].pdb = PdbSpec{true, "25%", false};  // ceil(1.5) = 2 → 4 − 2 = 2
  CHECK(pool_pdb_status(s, 0).disruptions_allowed == 2);

  CHECK(parse_pdb(Json::parse(R"({"maxUnavailable": "25%", "unhealthyPodEvictionPolicy": "AlwaysAllow"})"), "/p").always_allow_unhealthy);
  for (const char* bad : {R"({})", R"({"minAvailable": 1, "maxUnavailable": 1})", R"({"minAvailable": "150%"})",
                          R"({"minAvailable": -1})", R"({"maxUnavailable": "1"})", R"({"minAvailable": 1, "unhealthyPodEvictionPolicy": "Never"})"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_pdb(Json::parse(bad), "/p"), InputError);
  }
}
