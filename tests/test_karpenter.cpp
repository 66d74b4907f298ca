// Tests of Karpenter (core/src/karpenter.cpp): batching, NodePool choice, limits, packing, liveness,
// expiration, consolidateAfter, budgets and the disruption methods, on small hand-built clusters.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "cluster/launch_failures.hpp"
#include "k8s/cron.hpp"
#include "gpuscale/errors.hpp"
#include "provisioning/karpenter/karpenter.hpp"
#include "provisioning/karpenter/nodepool.hpp"

using namespace gpuscale;

namespace {

constexpr Micros kS = kMicrosPerSecond;

// A cluster on the default catalogue with three pod templates: a TP2 vLLM replica (2 GPUs, tolerates the
// GPU taint), a 1-GPU replica, and a GPU pod that does not tolerate the taint.
struct Fixture {
  ClusterState c;
  int tp2 = 0, one_gpu = 1, untolerated = 2;

  Fixture() {
    c.types = default_instance_types();
    const Toleration gpu_toleration{"nvidia.com/gpu", TolerationOp::Exists, "", TaintEffect::NoSchedule};
    PodTemplate t;
    t.name = "vllm-tp2";
    t.gpus = 2;
    t.cpu_milli = 16000;
    t.memory_mib = 65536;
    t.tolerations = {gpu_toleration};
    c.templates.push_back(t);
    t.name = "vllm-1gpu";
    t.gpus = 1;
    t.cpu_milli = 8000;
    t.memory_mib = 32768;
    c.templates.push_back(t);
    t.name = "no-toleration";
    t.tolerations.clear();
    c.templates.push_back(t);
  }

  int type(const std::string& name) const {
    for (std::size_t i = 0; i < c.types.size(); ++i) {
      if (c.types[i].name == name) return static_cast<int>(i);
    }
    FAIL("no type " << name);
    return -1;
  }

  // A Pending pod; marked_at >= 0 also marks it Unschedulable (every batch then includes it).
  std::uint32_t pending(int tmpl, Micros marked_at = -1) {
    Pod p;
    p.id = static_cast<std::uint32_t>(c.pods.size());
    p.template_index = tmpl;
    p.unschedulable_since = marked_at;
    c.pods.push_back(p);
    return p.id;
  }

  std::uint32_t node(const std::string& type_name, const std::string& owner, NodePhase phase = NodePhase::Initialized,
                     CapacityType capacity = CapacityType::OnDemand, Micros initialized_at = 0) {
    const InstanceType& t = c.types[type(type_name)];
    Node n;
    n.id = static_cast<std::uint32_t>(c.nodes.size());
    n.type_index = type(type_name);
    n.capacity_type = capacity;
    n.zone = t.zones[0];
    n.owner = owner;
    n.labels = instance_labels(t, capacity, n.zone);
    n.labels["karpenter.sh/nodepool"] = owner;
    n.taints = {Taint{"nvidia.com/gpu", "true", TaintEffect::NoSchedule}};
    n.phase = phase;
    n.launched_at = 0;
    if (phase == NodePhase::Initialized) {
      n.registered_at = 0;
      n.initialized_at = initialized_at;
    }
    n.price_usd_per_hour = hourly_price(t, capacity);
    n.gpus_allocatable = phase == NodePhase::Initialized ? t.gpus : 0;
    n.cpu_allocatable_milli = allocatable_cpu_milli(t);
    n.memory_allocatable_mib = allocatable_memory_mib(t);
    c.nodes.push_back(n);
    return n.id;
  }

  std::uint32_t bound(int tmpl, std::uint32_t node_id, Micros at) {
    const std::uint32_t id = pending(tmpl, -1);
    Pod& p = c.pods[id];
    Node& n = c.nodes[node_id];
    const PodTemplate& t = c.templates[tmpl];
    p.phase = PodPhase::Running;
    p.node = static_cast<std::int32_t>(node_id);
    n.pods.push_back(id);
    n.gpus_requested += t.gpus;
    n.cpu_requested_milli += t.cpu_milli;
    n.memory_requested_mib += t.memory_mib;
    n.last_pod_event_at = at;
    return id;
  }
};

NodePool gpu_pool(const std::string& name = "gpu", int weight = 10, std::vector<std::string> types = {"p5.48xlarge"},
                  std::vector<std::string> capacity = {"on-demand"}) {
  NodePool p;
  p.name = name;
  p.weight = weight;
  p.requirements.push_back(Requirement{"node.kubernetes.io/instance-type", SelectorOp::In, types, 0});
  if (!capacity.empty()) p.requirements.push_back(Requirement{"karpenter.sh/capacity-type", SelectorOp::In, capacity, 0});
  p.taints = {Taint{"nvidia.com/gpu", "true", TaintEffect::NoSchedule}};
  p.consolidate_after = 0;
  return p;
}

std::vector<std::uint32_t> ids(std::initializer_list<std::uint32_t> l) { return l; }

const std::string& type_name(const Fixture& f, const NodeLaunch& l) { return f.c.types[l.type_index].name; }

}  // namespace

// ---- batching -------------------------------------------------------------------------------------------

TEST_CASE("batch window: 1 s idle extends, 10 s max caps, re-marks are deduplicated", "[karpenter]") {
  Fixture f;
  KarpenterSettings s;
  s.disruption_poll = 60 * kS;  // keep the poll out of the way of the window arithmetic
  Karpenter k({gpu_pool()}, s);
  CHECK(k.next_wakeup() == 60 * kS);
  CHECK(k.batch_start() == -1);

  const auto p0 = f.pending(f.tp2), p1 = f.pending(f.tp2);
  k.on_unschedulable(f.c, p0, 1 * kS);
  CHECK(k.batch_start() == 1 * kS);
  CHECK(k.next_wakeup() == 2 * kS);  // idle: 1 s after the first pod
  k.on_unschedulable(f.c, p1, 1 * kS + 500'000);
  CHECK(k.next_wakeup() == 2 * kS + 500'000);  // extended by a new pod
  k.on_unschedulable(f.c, p0, 2 * kS);         // same pod again: no extension, no duplicate
  CHECK(k.next_wakeup() == 2 * kS + 500'000);
  CHECK(k.batch_pods() == ids({p0, p1}));

  // New pods every 0.9 s keep extending it, up to 10 s after the first pod.
  Micros t = 1 * kS + 500'000;
  for (int i = 0; i < 12; ++i) {
    t += 900'000;
    k.on_unschedulable(f.c, f.pending(f.tp2), t);
  }
  CHECK(k.next_wakeup() == 11 * kS);

  ProvisionerActions out;
  k.wake(f.c, 11 * kS, out);
  CHECK(k.batch_start() == -1);
  CHECK(k.batch_pods().empty());
  REQUIRE(out.launches.size() == 4);  // 14 TP2 pods: 4 + 4 + 4 + 2
  CHECK(out.log.size() == 4);
  CHECK(out.log[0].controller == "karpenter.provisioner");
  CHECK(out.log[0].action == "launch");
}

TEST_CASE("next_wakeup is the earlier of the window end and the disruption poll", "[karpenter]") {
  Fixture f;
  Karpenter k({gpu_pool()});
  CHECK(k.next_wakeup() == 10 * kS);
  k.on_unschedulable(f.c, f.pending(f.tp2), 9 * kS + 500'000);
  CHECK(k.next_wakeup() == 10 * kS);  // poll at 10 s comes before the window end at 10.5 s
  ProvisionerActions out;
  k.wake(f.c, 10 * kS, out);  // the poll: the batch stays open
  CHECK(out.launches.empty());
  CHECK(k.next_wakeup() == 10 * kS + 500'000);
  k.wake(f.c, 10 * kS + 500'000, out);
  CHECK(out.launches.size() == 1);
  CHECK(k.next_wakeup() == 20 * kS + 500'000);  // the poll slept while the pools owned no node; re-armed by the launch
}

// ---- NodePools, limits, prices, packing -------------------------------------------------------------------

TEST_CASE("NodePools are tried by weight, falling back to the next pool", "[karpenter]") {
  Fixture f;
  const auto pod = f.pending(f.tp2);
  // The heavier pool wins even though its H200 type costs more.
  std::vector<NodePool> pools = {gpu_pool("h100", 10, {"p5.48xlarge"}), gpu_pool("h200", 80, {"p5en.48xlarge"})};
  ProvisioningPlan plan = plan_provisioning(f.c, pools, {pod}, {}, 0, 1 * kS);
  REQUIRE(plan.launches.size() == 1);
  CHECK(plan.launches[0].owner == "h200");
  CHECK(type_name(f, plan.launches[0]) == "p5en.48xlarge");
  CHECK(plan.launches[0].labels.at("karpenter.sh/nodepool") == "h200");

  // The same pod asking for H100s: h200 is rejected (its offerings do not match the selector), h100 is used.
  f.c.templates[f.tp2].node_selector["karpenter.k8s.aws/instance-gpu-name"] = "h100";
  plan = plan_provisioning(f.c, pools, {pod}, {}, 0, 1 * kS);
  REQUIRE(plan.launches.size() == 1);
  CHECK(plan.launches[0].owner == "h100");
  const std::string& why = plan.log[0].explanation;
  CHECK(why.find("h200 (weight 80): pod's nodeSelector/affinity matches none") != std::string::npos);
  CHECK(why.find("h100 (weight 10): 3 offerings fit") != std::string::npos);
  CHECK(why.find("chose p5.48xlarge on-demand us-east-1a at $55.04/h") != std::string::npos);

  // Equal weights: by name.
  pools = {gpu_pool("b", 5), gpu_pool("a", 5)};
  f.c.templates[f.tp2].node_selector.clear();
  plan = plan_provisioning(f.c, pools, {pod}, {}, 0, 1 * kS);
  CHECK(plan.launches.at(0).owner == "a");
}

TEST_CASE("limits filter instance types and refuse a pool already over its limit", "[karpenter]") {
  Fixture f;
  NodePool pool = gpu_pool("gpu", 10, {"p5.48xlarge", "p5.4xlarge"});
  pool.limit_gpus = 10;
  f.node("p5.48xlarge", "gpu");  // 8 GPUs of the limit used: 2 left
  f.c.nodes[0].gpus_requested = 8;  // and the node is full
  const auto big = f.pending(f.tp2), small = f.pending(f.one_gpu);

  // The 1-GPU pod still fits the remaining limit on a p5.4xlarge.
  ProvisioningPlan plan = plan_provisioning(f.c, {pool}, {small}, {}, 0, 0);
  REQUIRE(plan.launches.size() == 1);
  CHECK(type_name(f, plan.launches[0]) == "p5.4xlarge");

  // The TP2 pod needs a p5.48xlarge: 8 more GPUs would exceed the limit. It stays pending, with the reason.
  plan = plan_provisioning(f.c, {pool}, {big}, {}, 0, 0);
  CHECK(plan.launches.empty());
  REQUIRE(plan.unplaced == ids({big}));
  CHECK(plan.log.at(0).action == "none");
  CHECK(plan.log.at(0).explanation.find("limits: each of 3 fitting offerings would exceed what is left (nvidia.com/gpu 2)") !=
        std::string::npos);

  // Two p5.4xlarge claims in one batch use up the remaining 2 GPUs; a third 1-GPU pod is refused.
  const auto s2 = f.pending(f.one_gpu), s3 = f.pending(f.one_gpu);
  f.c.pods[big].deleted = true;
  plan = plan_provisioning(f.c, {pool}, {small, s2, s3}, {}, 0, 0);
  CHECK(plan.launches.size() == 2);
  CHECK(plan.unplaced.size() == 1);

  // Usage above the limit (limit lowered to 4 with 8 in use): the pool is skipped outright.
  pool.limit_gpus = 4;
  plan = plan_provisioning(f.c, {pool}, {small}, {}, 0, 0);
  CHECK(plan.launches.empty());
  CHECK(plan.log.at(0).explanation.find("limits exceeded (nvidia.com/gpu: 8 in use > limit 4)") != std::string::npos);

  // A nodes limit.
  pool.limit_gpus.reset();
  pool.limit_nodes = 1;
  plan = plan_provisioning(f.c, {pool}, {small}, {}, 0, 0);
  CHECK(plan.launches.empty());
}

TEST_CASE("the cheapest fitting offering is chosen, spot when allowed and cheaper", "[karpenter]") {
  Fixture f;
  const auto pod = f.pending(f.one_gpu);
  NodePool pool;
  pool.name = "gpu";
  pool.requirements = {Requirement{"karpenter.k8s.aws/instance-gpu-count", SelectorOp::Gt, {"0"}, 0}};
  pool.taints = {Taint{"nvidia.com/gpu", "true", TaintEffect::NoSchedule}};

  // No capacity-type requirement: on-demand only; p5.4xlarge ($6.88) beats p4d ($21.96) and the 8-GPU types.
  ProvisioningPlan plan = plan_provisioning(f.c, {pool}, {pod}, {}, 0, 0);
  REQUIRE(plan.launches.size() == 1);
  CHECK(type_name(f, plan.launches[0]) == "p5.4xlarge");
  CHECK(plan.launches[0].capacity_type == CapacityType::OnDemand);
  CHECK(plan.launches[0].zone == "us-east-1a");

  // Spot allowed: spot p5.4xlarge at $2.75.
  pool.requirements.push_back(Requirement{"karpenter.sh/capacity-type", SelectorOp::In, {"on-demand", "spot"}, 0});
  plan = plan_provisioning(f.c, {pool}, {pod}, {}, 0, 0);
  REQUIRE(plan.launches.size() == 1);
  CHECK(type_name(f, plan.launches[0]) == "p5.4xlarge");
  CHECK(plan.launches[0].capacity_type == CapacityType::Spot);
  CHECK(plan.log[0].explanation.find("at $2.75/h") != std::string::npos);

  // A TP2 pod does not fit a 1-GPU type: the cheapest 8-GPU offering is p4d spot ($8.78).
  plan = plan_provisioning(f.c, {pool}, {f.pending(f.tp2)}, {}, 0, 0);
  REQUIRE(plan.launches.size() == 1);
  CHECK(type_name(f, plan.launches[0]) == "p4d.24xlarge");
  CHECK(plan.launches[0].capacity_type == CapacityType::Spot);

  // A zone requirement picks the zone.
  pool.requirements.push_back(Requirement{"topology.kubernetes.io/zone", SelectorOp::In, {"us-east-1b"}, 0});
  plan = plan_provisioning(f.c, {pool}, {pod}, {}, 0, 0);
  CHECK(plan.launches.at(0).zone == "us-east-1b");
}

TEST_CASE("every instance type carries the AWS provider's well-known labels, derived from the catalogue", "[karpenter]") {
  Fixture f;
  const Labels p5 = instance_labels(f.c.types[f.type("p5.48xlarge")], CapacityType::Spot, "us-east-1b");
  CHECK(p5.at("node.kubernetes.io/instance-type") == "p5.48xlarge");
  CHECK(p5.at("karpenter.k8s.aws/instance-category") == "p");
  CHECK(p5.at("karpenter.k8s.aws/instance-family") == "p5");
  CHECK(p5.at("karpenter.k8s.aws/instance-generation") == "5");
  CHECK(p5.at("karpenter.k8s.aws/instance-size") == "48xlarge");
  CHECK(p5.at("karpenter.k8s.aws/instance-capability-flex") == "false");
  CHECK(p5.at("karpenter.k8s.aws/instance-cpu") == "192");
  CHECK(p5.at("karpenter.k8s.aws/instance-memory") == "2097152");  // MiB, as DescribeInstanceTypes
  CHECK(p5.at("karpenter.k8s.aws/instance-cpu-manufacturer") == "amd");
  CHECK(p5.at("karpenter.k8s.aws/instance-hypervisor") == "nitro");
  CHECK(p5.at("karpenter.k8s.aws/instance-local-nvme") == "30400");
  CHECK(p5.at("karpenter.k8s.aws/instance-network-bandwidth") == "3200000");
  CHECK(p5.at("karpenter.k8s.aws/instance-gpu-name") == "h100");
  CHECK(p5.at("karpenter.k8s.aws/instance-gpu-count") == "8");
  CHECK(p5.at("karpenter.k8s.aws/instance-gpu-memory") == "81920");
  CHECK(p5.at("karpenter.k8s.aws/instance-gpu-manufacturer") == "nvidia");
  CHECK(p5.at("kubernetes.io/arch") == "amd64");
  CHECK(p5.at("kubernetes.io/os") == "linux");
  CHECK(p5.at("karpenter.sh/capacity-type") == "spot");
  CHECK(p5.at("topology.kubernetes.io/zone") == "us-east-1b");
  CHECK(p5.at("topology.kubernetes.io/region") == "us-east-1");
  // "p5en": category p, generation 5; CPU types have no GPU labels and no instance store.
  const Labels en = instance_labels(f.c.types[f.type("p5en.48xlarge")], CapacityType::OnDemand, "us-east-1a");
  CHECK(en.at("karpenter.k8s.aws/instance-category") == "p");
  CHECK(en.at("karpenter.k8s.aws/instance-generation") == "5");
  CHECK(en.at("karpenter.k8s.aws/instance-family") == "p5en");
  const Labels m7i = instance_labels(f.c.types[f.type("m7i.4xlarge")], CapacityType::OnDemand, "us-east-1a");
  CHECK(m7i.at("karpenter.k8s.aws/instance-category") == "m");
  CHECK(m7i.at("karpenter.k8s.aws/instance-generation") == "7");
  CHECK(m7i.count("karpenter.k8s.aws/instance-gpu-count") == 0);
  CHECK(m7i.count("karpenter.k8s.aws/instance-local-nvme") == 0);
  // Every key is one Karpenter knows, so a requirement on it never turns into a custom node label.
  for (const auto& kv : p5) CHECK(is_well_known_label(kv.first));
  CHECK(p5.count("k8s.amazonaws.com/accelerator") == 0);  // Cluster Autoscaler's label is the node group's to set
}

TEST_CASE("a pool limited to categories m and c never offers or launches a p4d.24xlarge", "[karpenter]") {
  Fixture f;
  PodTemplate cpu;
  cpu.name = "cpu-20";
  cpu.cpu_milli = 20000;  // more than any m/c type of the catalogue holds (m7i.4xlarge: 16 vCPUs)
  cpu.memory_mib = 8192;
  f.c.templates.push_back(cpu);
  const int big_cpu = static_cast<int>(f.c.templates.size()) - 1;
  NodePool pool;
  pool.name = "cpu";
  pool.requirements = {Requirement{"karpenter.k8s.aws/instance-category", SelectorOp::In, {"m", "c"}, 0},
                       Requirement{"karpenter.sh/capacity-type", SelectorOp::In, {"on-demand", "spot"}, 0}};
  pool.consolidate_after = 0;
  pool.budgets = {DisruptionBudget{"100%", {}, "", std::nullopt, std::nullopt}};

  std::set<std::string> offered;
  for (const Offering& o : pool_offerings(pool, f.c.types)) {
    offered.insert(f.c.types[o.type_index].name);
    CHECK(o.labels->count("karpenter.k8s.aws/instance-category") == 1);
  }
  CHECK(offered == std::set<std::string>{"c7i.2xlarge", "m7i.4xlarge"});
  // NodeClaim labels: the requirement did not become a label of its own (it used to, with value "m").
  CHECK(pool_node_labels(pool, {}).count("karpenter.k8s.aws/instance-category") == 0);

  // A GPU pod finds nothing in the pool (it used to get the cheapest GPU type, a p4d.24xlarge spot).
  ProvisioningPlan plan = plan_provisioning(f.c, {pool}, {f.pending(f.one_gpu)}, {}, 0, 0);
  CHECK(plan.launches.empty());
  CHECK(plan.unplaced.size() == 1);

  // Consolidation of a p5.48xlarge the pool owns (launched before its requirements changed) running a
  // 20-CPU pod: no m/c type holds the pod, so there is no replacement; the p4d.24xlarge spot at $8.78/h
  // that used to replace it is not the pool's.
  const auto n = f.node("p5.48xlarge", "cpu");
  f.c.nodes[n].taints.clear();
  f.bound(big_cpu, n, 0);
  const DisruptionDecision d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  CHECK(d.action == DisruptionAction::None);
  CHECK_FALSE(d.replacement);
}

TEST_CASE("InsufficientInstanceCapacity: the shared failure model draws per offering from its own stream", "[karpenter]") {
  LaunchFailures none;
  CHECK_FALSE(none.insufficient_capacity("p5.48xlarge", CapacityType::OnDemand, "us-east-1a", 0));
  LaunchFailures f({InsufficientCapacityRate{"p5.48xlarge", CapacityType::OnDemand, "us-east-1a", 1.0},
                    InsufficientCapacityRate{"p5.48xlarge", std::nullopt, "", 0.25}},
                   7);
  CHECK(f.probability("p5.48xlarge", CapacityType::OnDemand, "us-east-1a", 0) == 1.0);  // the first matching entry
  CHECK(f.probability("p5.48xlarge", CapacityType::Spot, "us-east-1a", 0) == 0.25);
  CHECK(f.probability("p5en.48xlarge", CapacityType::OnDemand, "us-east-1a", 0) == 0);
  CHECK(f.insufficient_capacity("p5.48xlarge", CapacityType::OnDemand, "us-east-1a", 0));
  int refused = 0;
  LaunchFailures g({InsufficientCapacityRate{"p5.48xlarge", std::nullopt, "", 0.25}}, 7);
  for (int i = 0; i < 4000; ++i) refused += g.insufficient_capacity("p5.48xlarge", CapacityType::Spot, "us-east-1b", 0) ? 1 : 0;
  CHECK(refused > 900);
  CHECK(refused < 1100);
  LaunchFailures h({InsufficientCapacityRate{"p5.48xlarge", std::nullopt, "", 0.25}}, 7);
  int again = 0;
  for (int i = 0; i < 4000; ++i) again += h.insufficient_capacity("p5.48xlarge", CapacityType::Spot, "us-east-1b", 0) ? 1 : 0;
  CHECK(again == refused);  // same seed, same draws
  // An entry with a window holds only inside it (a spot reclaim's shortage: from its time, for a while).
  InsufficientCapacityRate window{"p5.48xlarge", CapacityType::Spot, "", 1.0};
  window.from = 100 * kS;
  window.until = 400 * kS;
  LaunchFailures w({window}, 7);
  CHECK(w.probability("p5.48xlarge", CapacityType::Spot, "us-east-1a", 99 * kS) == 0);
  CHECK(w.insufficient_capacity("p5.48xlarge", CapacityType::Spot, "us-east-1a", 100 * kS));
  CHECK(w.probability("p5.48xlarge", CapacityType::Spot, "us-east-1a", 400 * kS) == 0);
  CHECK(w.probability("p5.48xlarge", CapacityType::OnDemand, "us-east-1a", 200 * kS) == 0);
}

TEST_CASE("a refused offering falls back to the next and stays unavailable for 3 min", "[karpenter]") {
  Fixture f;
  Karpenter k({gpu_pool("gpu", 10, {"p5.48xlarge", "p5en.48xlarge"})});
  const auto pod = f.pending(f.tp2, 0);
  k.on_unschedulable(f.c, pod, 0);
  ProvisionerActions out;
  k.wake(f.c, 1 * kS, out);
  REQUIRE(out.launches.size() == 1);
  const NodeLaunch first = out.launches[0];
  CHECK(type_name(f, first) == "p5.48xlarge");
  CHECK(first.zone == "us-east-1a");
  // CreateFleet's other overrides, cheapest first, same capacity type: p5 in 1b and 1c, then p5en.
  REQUIRE(first.fallbacks.size() == 4);
  CHECK(first.fallbacks[0].zone == "us-east-1b");
  CHECK(first.fallbacks[1].zone == "us-east-1c");
  CHECK(f.c.types[first.fallbacks[2].type_index].name == "p5en.48xlarge");

  // The cloud refuses every p5.48xlarge offering and launches nothing.
  LaunchOutcome outcome{first, {LaunchOption{first.type_index, CapacityType::OnDemand, "us-east-1a"}}, -1};
  for (int i = 0; i < 2; ++i) outcome.refused.push_back(first.fallbacks[static_cast<std::size_t>(i)]);
  k.on_insufficient_capacity(outcome, 1 * kS);
  CHECK(k.unavailable_offerings().size() == 3);
  CHECK(k.unavailable_offerings().begin()->second == 181 * kS);

  // The pod is marked again: the next NodeClaim leaves the cached offerings out.
  k.on_unschedulable(f.c, pod, 2 * kS);
  out = {};
  k.wake(f.c, 3 * kS, out);
  REQUIRE(out.launches.size() == 1);
  CHECK(type_name(f, out.launches[0]) == "p5en.48xlarge");
  CHECK(out.log[0].explanation.find("p5.48xlarge") == std::string::npos);

  // After the TTL the p5.48xlarge offerings are back.
  k.on_unschedulable(f.c, pod, 200 * kS);
  out = {};
  k.wake(f.c, 201 * kS, out);
  REQUIRE(out.launches.size() == 1);
  CHECK(type_name(f, out.launches[0]) == "p5.48xlarge");
  CHECK(k.unavailable_offerings().empty());
}

TEST_CASE("4 TP2 pods pack onto one p5.48xlarge, 5 need two", "[karpenter]") {
  Fixture f;
  std::vector<std::uint32_t> pods;
  for (int i = 0; i < 4; ++i) pods.push_back(f.pending(f.tp2));
  ProvisioningPlan plan = plan_provisioning(f.c, {gpu_pool()}, pods, {}, 0, 0);
  REQUIRE(plan.launches.size() == 1);
  CHECK(type_name(f, plan.launches[0]) == "p5.48xlarge");
  CHECK(plan.launch_pods[0] == pods);

  pods.push_back(f.pending(f.tp2));
  plan = plan_provisioning(f.c, {gpu_pool()}, pods, {}, 0, 0);
  REQUIRE(plan.launches.size() == 2);
  CHECK(plan.launch_pods[0].size() == 4);
  CHECK(plan.launch_pods[1].size() == 1);
}

TEST_CASE("in-flight capacity: pods already covered by a launching node do not launch again", "[karpenter]") {
  Fixture f;
  Karpenter k({gpu_pool()});
  std::vector<std::uint32_t> pods;
  for (int i = 0; i < 4; ++i) pods.push_back(f.pending(f.tp2));
  for (auto p : pods) k.on_unschedulable(f.c, p, 0);
  ProvisionerActions out;
  k.wake(f.c, 1 * kS, out);
  REQUIRE(out.launches.size() == 1);

  // The loop applies the launch: a Launched node (GPUs not advertised, startup taint on).
  const auto n = f.node("p5.48xlarge", "gpu", NodePhase::Launched);
  f.c.nodes[n].launched_at = 1 * kS;
  f.c.nodes[n].taints.push_back(Taint{"node.kubernetes.io/not-ready", "", TaintEffect::NoSchedule});
  // The pods are marked again, plus one new pod: only the new one needs a node.
  const auto extra = f.pending(f.tp2);
  for (auto p : pods) k.on_unschedulable(f.c, p, 30 * kS);
  k.on_unschedulable(f.c, extra, 30 * kS);
  ProvisionerActions out2;
  k.wake(f.c, 31 * kS, out2);
  REQUIRE(out2.launches.size() == 1);
  CHECK(out2.log.at(0).explanation.find("4 fit existing capacity: node 0 (in flight) ← pods [0, 1, 2, 3]") != std::string::npos);
  CHECK(out2.log.at(0).explanation.find("for pods [4]") != std::string::npos);
}

TEST_CASE("a pod that does not tolerate a pool's taint is not placed on it", "[karpenter]") {
  Fixture f;
  const auto pod = f.pending(f.untolerated);
  ProvisioningPlan plan = plan_provisioning(f.c, {gpu_pool()}, {pod}, {}, 0, 0);
  CHECK(plan.launches.empty());
  REQUIRE(plan.unplaced == ids({pod}));
  CHECK(plan.log.at(0).reason == "NoCompatibleNodePool");
  CHECK(plan.log.at(0).explanation.find("gpu (weight 10): taint nvidia.com/gpu=true:NoSchedule not tolerated") != std::string::npos);

  // An untainted pool further down the weight order takes it.
  NodePool open = gpu_pool("open", 1);
  open.taints.clear();
  plan = plan_provisioning(f.c, {gpu_pool(), open}, {pod}, {}, 0, 0);
  REQUIRE(plan.launches.size() == 1);
  CHECK(plan.launches[0].owner == "open");

  // Startup taints are not part of the fit, and are handed to the launch.
  NodePool with_startup = gpu_pool();
  with_startup.startup_taints = {Taint{"example.com/agent-not-ready", "", TaintEffect::NoSchedule}};
  plan = plan_provisioning(f.c, {with_startup}, {f.pending(f.tp2)}, {}, 0, 0);
  REQUIRE(plan.launches.size() == 1);
  CHECK(plan.launches[0].startup_taints.size() == 1);
  CHECK(plan.launches[0].expire_after == 720LL * 3600 * kS);
}

// ---- liveness and expiration ------------------------------------------------------------------------------

TEST_CASE("registration timeout: a node still Launched 15 min after launch is deleted without drain", "[karpenter]") {
  Fixture f;
  Karpenter k({gpu_pool()});
  const auto n = f.node("p5.48xlarge", "gpu", NodePhase::Launched);
  ProvisionerActions out;
  k.wake(f.c, 10 * kS, out);
  CHECK(out.removals.empty());
  CHECK(k.next_wakeup() == 20 * kS);
  k.wake(f.c, 15 * 60 * kS - 1, out);
  CHECK(out.removals.empty());
  CHECK(k.next_wakeup() == 15 * 60 * kS);  // the deadline itself, not the next poll
  k.wake(f.c, 15 * 60 * kS, out);
  REQUIRE(out.removals.size() == 1);
  CHECK(out.removals[0].node == n);
  CHECK(out.removals[0].reason == RemovalReason::RegistrationTimeout);
  CHECK_FALSE(out.removals[0].drain);
  ProvisionerActions again;
  k.wake(f.c, 15 * 60 * kS + 10 * kS, again);  // not repeated while the loop terminates it
  CHECK(again.removals.empty());
}

TEST_CASE("expireAfter removes the node with drain, ignoring budgets and do-not-disrupt", "[karpenter]") {
  Fixture f;
  NodePool pool = gpu_pool();
  pool.budgets = {DisruptionBudget{"0", {}, "", std::nullopt, std::nullopt}};
  Karpenter k({pool});
  const auto n = f.node("p5.48xlarge", "gpu");
  f.c.nodes[n].expires_at = 100 * kS;
  f.c.nodes[n].do_not_disrupt = true;
  f.bound(f.tp2, n, 0);
  ProvisionerActions out;
  k.wake(f.c, 90 * kS, out);
  CHECK(out.removals.empty());
  CHECK(k.next_wakeup() == 100 * kS);
  k.wake(f.c, 100 * kS, out);
  REQUIRE(out.removals.size() == 1);
  CHECK(out.removals[0].reason == RemovalReason::Expired);
  CHECK(out.removals[0].drain);
  CHECK(out.launches.empty());  // no replacement first
}

// ---- consolidateAfter, candidates, budgets ---------------------------------------------------------------

TEST_CASE("consolidateAfter counts from the last pod event, else from initialization", "[karpenter]") {
  Fixture f;
  NodePool pool = gpu_pool();
  pool.consolidate_after = 60 * kS;
  const auto n = f.node("p5.48xlarge", "gpu", NodePhase::Initialized, CapacityType::OnDemand, 100 * kS);
  CHECK(consolidatable_at(f.c.nodes[n], pool) == 160 * kS);
  CHECK(disruption_candidates(f.c, {pool}, {}, {}, 159 * kS).candidates.empty());
  CHECK(disruption_candidates(f.c, {pool}, {}, {}, 160 * kS).candidates.size() == 1);

  f.bound(f.tp2, n, 200 * kS);  // a pod event resets the clock
  CHECK(consolidatable_at(f.c.nodes[n], pool) == 260 * kS);
  const CandidateScan before = disruption_candidates(f.c, {pool}, {}, {}, 259 * kS);
  CHECK(before.candidates.empty());
  REQUIRE(before.skipped.size() == 1);
  CHECK(before.skipped[0] == "node 0: not consolidatable until t=260 s (consolidateAfter 60 s after the last pod event)");
  CHECK(disruption_candidates(f.c, {pool}, {}, {}, 260 * kS).candidates.size() == 1);

  pool.consolidate_after.reset();  // Never
  CHECK(consolidatable_at(f.c.nodes[n], pool) == -1);
  CHECK(disruption_candidates(f.c, {pool}, {}, {}, 10'000 * kS).candidates.empty());
}

TEST_CASE("budgets round up, subtract disrupting nodes, take the minimum, filter by reason", "[karpenter]") {
  CHECK(allowed_disruptions("20%", 19, 0) == 4);  // the docs' example
  CHECK(allowed_disruptions("10%", 3, 0) == 1);
  CHECK(allowed_disruptions("10%", 0, 0) == 0);
  CHECK(allowed_disruptions("20%", 19, 3) == 1);
  CHECK(allowed_disruptions("20%", 19, 6) == 0);  // never negative
  CHECK(allowed_disruptions("5", 100, 2) == 3);
  CHECK(allowed_disruptions("0", 100, 0) == 0);
  CHECK(allowed_disruptions("x%", 100, 0) == 0);

  NodePool pool = gpu_pool();
  // The third budget holds drift back during business hours (09:00-17:00 UTC, Monday to Friday).
  pool.budgets = {DisruptionBudget{"10%", {}, "", std::nullopt, std::nullopt}, DisruptionBudget{"2", {DisruptionReason::Underutilized}, "", std::nullopt, std::nullopt},
                  DisruptionBudget{"0", {DisruptionReason::Drifted}, "0 9 * * mon-fri", 8 * 3600 * kS, std::nullopt}};
  pool.budgets[2].cron = parse_cron("0 9 * * mon-fri", "/schedule");
  const std::int64_t monday = 1767571200LL * kS;  // 2026-01-05T00:00:00Z
  const std::int64_t monday_10h = monday + 10 * 3600 * kS, monday_18h = monday + 18 * 3600 * kS;
  CHECK(pool_allowed_disruptions(pool, DisruptionReason::Empty, 30, 0, monday_10h) == 3);
  CHECK(pool_allowed_disruptions(pool, DisruptionReason::Underutilized, 30, 0, monday_10h) == 2);
  CHECK(pool_allowed_disruptions(pool, DisruptionReason::Underutilized, 30, 1, monday_10h) == 1);
  CHECK(pool_allowed_disruptions(pool, DisruptionReason::Drifted, 30, 0, monday_10h) == 0);
  CHECK(pool_allowed_disruptions(pool, DisruptionReason::Drifted, 30, 0, monday_18h) == 3);  // outside the window: 10 % of 30
  CHECK(pool_allowed_disruptions(pool, DisruptionReason::Drifted, 30, 0, monday + 6 * 86400 * kS + 10 * 3600 * kS) == 3);  // Sunday
  pool.budgets = {DisruptionBudget{"1", {DisruptionReason::Drifted}, "", std::nullopt, std::nullopt}};
  CHECK(pool_allowed_disruptions(pool, DisruptionReason::Empty, 30, 0, monday) == INT32_MAX);  // no budget applies

  // Counting: initialized nodes of the pool; Terminating and marked ones are disrupting; Launched ones don't count.
  Fixture f;
  pool.budgets = {DisruptionBudget{}};  // 10%
  for (int i = 0; i < 19; ++i) f.node("p5.4xlarge", "gpu");
  f.node("p5.4xlarge", "gpu", NodePhase::Launched);
  f.node("p5.4xlarge", "other");
  f.c.nodes[0].phase = NodePhase::Terminating;
  BudgetCount b = pool_budget(f.c, pool, DisruptionReason::Empty, {1}, 0);
  CHECK(b.total == 19);
  CHECK(b.disrupting == 2);
  CHECK(b.allowed == 0);  // roundup(1.9) = 2, minus 2
}

TEST_CASE("budget schedules: robfig/cron's next firing and Budget.IsActive's window", "[karpenter]") {
  const std::int64_t monday = 1767571200LL * kS;  // 2026-01-05T00:00:00Z, a Monday
  const std::int64_t H = 3600 * kS, D = 24 * H, M = 60 * kS;
  std::int64_t y;
  int mo, d;
  civil_from_days(monday / D, y, mo, d);
  CHECK((y == 2026 && mo == 1 && d == 5));
  CHECK(days_from_civil(2026, 1, 5) * D == monday);
  CHECK(days_from_civil(1970, 1, 1) == 0);
  CHECK(days_from_civil(2028, 2, 29) + 1 == days_from_civil(2028, 3, 1));

  const CronSchedule business = parse_cron("0 9 * * mon-fri", "/s");
  CHECK(cron_next(business, monday) == monday + 9 * H);
  CHECK(cron_next(business, monday + 4 * D + 9 * H) == monday + 7 * D + 9 * H);  // strictly after Friday 09:00
  CHECK(cron_next(parse_cron("*/15 * * * *", "/s"), monday + 10 * H + 7 * M) == monday + 10 * H + 15 * M);
  CHECK(cron_next(parse_cron("5/20 * * * *", "/s"), monday + 26 * M) == monday + 45 * M);  // 5, 25, 45
  // Both day fields restricted: either matches (Friday the 9th comes before the 13th) ...
  CHECK(cron_next(parse_cron("0 0 13 * 5", "/s"), monday) == monday + 4 * D);
  // ... one starred: both must (the 13th, whatever the weekday).
  CHECK(cron_next(parse_cron("0 0 13 * *", "/s"), monday) == monday + 8 * D);
  CHECK(cron_next(parse_cron("@weekly", "/s"), monday) == monday + 6 * D);  // Sunday 00:00
  CHECK(cron_next(parse_cron("@daily", "/s"), monday) == monday + D);
  CHECK(cron_next(parse_cron("0 0 29 feb *", "/s"), days_from_civil(2026, 3, 1) * D) == days_from_civil(2028, 2, 29) * D);
  CHECK(cron_next(parse_cron("0 0 31 2 *", "/s"), monday) == -1);  // never: robfig gives up after five years

  // Active for `duration` after each firing: [09:00, 17:00) on weekdays.
  const Micros eight_hours = 8 * H;
  CHECK_FALSE(cron_window_active(business, eight_hours, monday + 9 * H - 1));
  CHECK(cron_window_active(business, eight_hours, monday + 9 * H));
  CHECK(cron_window_active(business, eight_hours, monday + 17 * H - 1));
  CHECK_FALSE(cron_window_active(business, eight_hours, monday + 17 * H));
  CHECK_FALSE(cron_window_active(business, eight_hours, monday + 5 * D + 10 * H));  // Saturday

  CHECK_THROWS_AS(parse_cron("0 9 * *", "/s"), InputError);
  CHECK_THROWS_AS(parse_cron("@every 1h", "/s"), InputError);
}

// ---- disruption methods -----------------------------------------------------------------------------------

TEST_CASE("emptiness deletes empty nodes after consolidateAfter, within budgets", "[karpenter]") {
  Fixture f;
  NodePool pool = gpu_pool();
  pool.consolidation_policy = ConsolidationPolicy::WhenEmpty;
  pool.consolidate_after = 300 * kS;
  f.node("p5.48xlarge", "gpu");
  f.node("p5.48xlarge", "gpu");
  const auto busy = f.node("p5.48xlarge", "gpu");
  f.bound(f.tp2, busy, 0);

  DisruptionDecision d = decide_disruption(f.c, {pool}, {}, {}, {}, 299 * kS);
  CHECK(d.action == DisruptionAction::None);
  d = decide_disruption(f.c, {pool}, {}, {}, {}, 300 * kS);
  CHECK(d.method == DisruptionMethod::Emptiness);
  CHECK(d.action == DisruptionAction::Delete);
  CHECK(d.reason == DisruptionReason::Empty);
  CHECK(d.nodes == ids({0}));  // 10% of 3 nodes → 1 allowed
  CHECK(d.log.explanation.find("budget gpu/Empty: {nodes 10%} over 3 nodes, 0 disrupting → 1 allowed") != std::string::npos);

  pool.budgets = {DisruptionBudget{"100%", {}, "", std::nullopt, std::nullopt}};
  d = decide_disruption(f.c, {pool}, {}, {}, {}, 300 * kS);
  CHECK(d.nodes == ids({0, 1}));  // both in one command

  pool.budgets = {DisruptionBudget{"0", {DisruptionReason::Empty}, "", std::nullopt, std::nullopt}};
  d = decide_disruption(f.c, {pool}, {}, {}, {}, 300 * kS);
  CHECK(d.action == DisruptionAction::None);
  CHECK(d.had_candidates);
  CHECK(d.log.explanation.find("held back by budgets") != std::string::npos);

  // Through the controller: the command waits 15 s for validation, then one removal per empty node,
  // drained, reason Empty.
  pool.budgets = {DisruptionBudget{"100%", {}, "", std::nullopt, std::nullopt}};
  Karpenter k({pool});
  ProvisionerActions out;
  k.wake(f.c, 300 * kS, out);
  CHECK(out.removals.empty());
  CHECK(k.next_wakeup() == 315 * kS);
  k.wake(f.c, 315 * kS, out);
  REQUIRE(out.removals.size() == 2);
  CHECK(out.removals[0].reason == RemovalReason::Empty);
  CHECK(out.removals[0].drain);
  CHECK(out.log.back().explanation.rfind("validated after 15 s: ", 0) == 0);

  // A pod that lands on one of the nodes during the validation period takes that node out of the
  // command; the other still goes (validation.go EmptinessValidator keeps the valid candidates).
  Karpenter k2({pool});
  ProvisionerActions out2;
  k2.wake(f.c, 300 * kS, out2);
  f.bound(f.tp2, 1, 305 * kS);
  k2.wake(f.c, 315 * kS, out2);
  REQUIRE(out2.removals.size() == 1);
  CHECK(out2.removals[0].node == 0);
  CHECK(out2.log.back().explanation.find("still valid: nodes [0], no longer: node 1: not consolidatable until t=605 s") !=
        std::string::npos);

  // Pods on both: nothing is left, the command is abandoned.
  Fixture f3;
  for (int i = 0; i < 3; ++i) f3.node("p5.48xlarge", "gpu");
  f3.bound(f3.tp2, 2, 0);
  Karpenter k3({pool});
  ProvisionerActions out3;
  k3.wake(f3.c, 300 * kS, out3);
  f3.bound(f3.tp2, 0, 305 * kS);
  f3.bound(f3.tp2, 1, 305 * kS);
  k3.wake(f3.c, 315 * kS, out3);
  CHECK(out3.removals.empty());
  REQUIRE(out3.log.size() == 1);
  CHECK(out3.log[0].action == "abandon");
  CHECK(out3.log[0].explanation.find("decided 15 s ago is no longer valid") != std::string::npos);
}

TEST_CASE("a terminating pod does not keep its node non-empty; the pod-event clock moves, deduplicated over 10 s",
          "[karpenter]") {
  Fixture f;
  NodePool pool = gpu_pool();
  pool.consolidation_policy = ConsolidationPolicy::WhenEmpty;
  pool.consolidate_after = 60 * kS;
  pool.budgets = {DisruptionBudget{"100%", {}, "", std::nullopt, std::nullopt}};
  const auto n = f.node("p5.48xlarge", "gpu");
  const auto other = f.node("p5.48xlarge", "gpu");
  const auto pod = f.bound(f.tp2, n, 0);
  f.bound(f.tp2, other, 0);

  // The podevents controller: a pod event sets lastPodEventTime unless it was set less than 10 s ago.
  note_pod_event(f.c.nodes[n], 5 * kS);
  CHECK(f.c.nodes[n].last_pod_event_at == 0);
  note_pod_event(f.c.nodes[n], 10 * kS);
  CHECK(f.c.nodes[n].last_pod_event_at == 10 * kS);

  // The replica starts terminating at 100 s (its drain): the clock moves, and the node counts as empty
  // although the pod is still bound while its grace period runs.
  f.c.pods[pod].deletion_timestamp = 100 * kS;
  note_pod_event(f.c.nodes[n], 100 * kS);
  CHECK(consolidatable_at(f.c.nodes[n], pool) == 160 * kS);
  const CandidateScan scan = disruption_candidates(f.c, {pool}, {}, {}, 160 * kS);
  REQUIRE(scan.candidates.size() == 2);
  CHECK(scan.candidates[0].pods.empty());
  CHECK(scan.candidates[0].empty());
  CHECK_FALSE(scan.candidates[1].empty());
  CHECK(decide_disruption(f.c, {pool}, {}, {}, {}, 159 * kS).action == DisruptionAction::None);
  DisruptionDecision d = decide_disruption(f.c, {pool}, {}, {}, {}, 160 * kS);
  CHECK(d.method == DisruptionMethod::Emptiness);
  CHECK(d.nodes == ids({n}));
}

TEST_CASE("WhenEmpty never consolidates a non-empty node; WhenEmptyOrUnderutilized deletes one whose pods fit elsewhere",
          "[karpenter]") {
  Fixture f;
  NodePool pool = gpu_pool();
  pool.consolidation_policy = ConsolidationPolicy::WhenEmpty;
  pool.budgets = {DisruptionBudget{"100%", {}, "", std::nullopt, std::nullopt}};
  const auto a = f.node("p5.48xlarge", "gpu");
  const auto b = f.node("p5.48xlarge", "gpu");
  f.bound(f.tp2, a, 0);  // a: 2 of 8 GPUs
  f.bound(f.tp2, b, 0);
  f.bound(f.tp2, b, 0);  // b: 4 of 8 GPUs

  DisruptionDecision d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  CHECK(d.action == DisruptionAction::None);
  CHECK(d.log.explanation.find("not empty under consolidationPolicy WhenEmpty: nodes 0, 1") != std::string::npos);

  pool.consolidation_policy = ConsolidationPolicy::WhenEmptyOrUnderutilized;
  d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  // Multi-node: both nodes' 3 pods onto one new p5.48xlarge is filtered out (same type, not cheaper than
  // either), so single-node: a (fewest pods) goes, its pod fits on b.
  CHECK(d.method == DisruptionMethod::SingleNodeConsolidation);
  CHECK(d.action == DisruptionAction::Delete);
  CHECK(d.reason == DisruptionReason::Underutilized);
  CHECK(d.nodes == ids({a}));
  CHECK(d.log.explanation.find("every pod fits on other nodes (0→node 1)") != std::string::npos);

  // Balanced scores the same move: savings 55.04 / 110.08 = 50 %, disruption (1 + 1) / (2 + 3) = 40 %.
  pool.consolidation_policy = ConsolidationPolicy::Balanced;
  d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  CHECK(d.nodes == ids({a}));
  CHECK(d.log.explanation.find("Balanced: score 1.25 >= threshold 0.50 (consolidationThreshold: 2.0, savings 50.0%, "
                               "disruption 40.0%)") != std::string::npos);

  // Budget 0 for Underutilized blocks it.
  pool.budgets = {DisruptionBudget{"0", {DisruptionReason::Underutilized}, "", std::nullopt, std::nullopt}};
  CHECK(decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS).action == DisruptionAction::None);
}

TEST_CASE("v1.14 candidate order: savings ratio price / (1 + sum of pod eviction costs), highest first", "[karpenter]") {
  // x: a p4d.24xlarge ($21.96/h) with one TP2 replica: 21.96 / (1 + 1) = $10.98/h per unit.
  // y, z: p5.48xlarge ($55.04/h) with two TP2 replicas each: 55.04 / (1 + 2) = $18.35/h per unit.
  Fixture f;
  NodePool pool = gpu_pool("gpu", 10, {"p5.48xlarge", "p4d.24xlarge"});
  pool.budgets = {DisruptionBudget{"1", {}, "", std::nullopt, std::nullopt}};  // one at a time: no multi-node
  const auto x = f.node("p4d.24xlarge", "gpu");
  const auto y = f.node("p5.48xlarge", "gpu");
  const auto z = f.node("p5.48xlarge", "gpu");
  f.bound(f.tp2, x, 0);
  for (int i = 0; i < 2; ++i) f.bound(f.tp2, y, 0);
  for (int i = 0; i < 2; ++i) f.bound(f.tp2, z, 0);

  const CandidateScan scan = disruption_candidates(f.c, {pool}, {}, {}, 60 * kS);
  REQUIRE(scan.candidates.size() == 3);
  CHECK(scan.candidates[x].reschedule_cost == 2 * kEvictionCostUnit);
  CHECK(scan.candidates[y].reschedule_cost == 3 * kEvictionCostUnit);
  std::vector<std::uint32_t> order;
  for (const auto& c : sort_candidates(scan.candidates)) order.push_back(c.node);
  CHECK(order == ids({y, z, x}));  // ≤ v1.13 (disruption cost ascending) put x, with one pod, first

  // SingleNodeConsolidation tries y first: its two replicas fit on z, so y ($55.04/h) goes, not x.
  DisruptionDecision d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  CHECK(d.method == DisruptionMethod::SingleNodeConsolidation);
  CHECK(d.action == DisruptionAction::Delete);
  CHECK(d.nodes == ids({y}));
  CHECK(d.log.explanation.find("1 (gpu, 2 pods, $55.04/h, savings ratio $18.346666/h / 3)") != std::string::npos);

  // Priority raises a pod's eviction cost (1 + priority / 2^25, clamped to 10): y's replicas at
  // 2^25 × 4 count 5 each, y's ratio falls to 55.04 / 11 = $5.00/h and x goes first.
  PodTemplate high = f.c.templates[f.tp2];
  high.priority = 4 * 33554432;
  f.c.templates.push_back(high);
  for (std::uint32_t pid : f.c.nodes[y].pods) f.c.pods[pid].template_index = static_cast<int>(f.c.templates.size()) - 1;
  order.clear();
  for (const auto& c : sort_candidates(disruption_candidates(f.c, {pool}, {}, {}, 60 * kS).candidates)) order.push_back(c.node);
  CHECK(order == ids({z, x, y}));
}

TEST_CASE("multi-node consolidation deletes several nodes at once when all pods fit elsewhere", "[karpenter]") {
  Fixture f;
  NodePool pool = gpu_pool();
  pool.budgets = {DisruptionBudget{"100%", {}, "", std::nullopt, std::nullopt}};
  const auto a = f.node("p5.48xlarge", "gpu");
  const auto b = f.node("p5.48xlarge", "gpu");
  const auto big = f.node("p5.48xlarge", "gpu");
  f.bound(f.tp2, a, 0);
  f.bound(f.tp2, b, 0);
  f.bound(f.tp2, big, 0);
  f.bound(f.tp2, big, 0);
  DisruptionDecision d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  CHECK(d.method == DisruptionMethod::MultiNodeConsolidation);
  CHECK(d.action == DisruptionAction::Delete);
  CHECK(d.nodes == ids({a, b}));
}

TEST_CASE("replace only when strictly cheaper; the old node goes once the replacement is Initialized", "[karpenter]") {
  Fixture f;
  NodePool pool = gpu_pool("gpu", 10, {"p5.48xlarge"});
  const auto n = f.node("p5.48xlarge", "gpu");
  f.bound(f.one_gpu, n, 0);

  // Only p5.48xlarge allowed: the replacement would cost the same → no action.
  DisruptionDecision d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  CHECK(d.action == DisruptionAction::None);
  CHECK(d.log.explanation.find("is not strictly cheaper than $55.04/h") != std::string::npos);

  // p5.4xlarge allowed: replace.
  pool = gpu_pool("gpu", 10, {"p5.48xlarge", "p5.4xlarge"});
  d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  CHECK(d.method == DisruptionMethod::SingleNodeConsolidation);
  CHECK(d.action == DisruptionAction::Replace);
  REQUIRE(d.replacement);
  CHECK(type_name(f, *d.replacement) == "p5.4xlarge");
  CHECK(d.replacement->replaces == static_cast<std::int32_t>(n));
  CHECK(d.log.explanation.find("saves $48.16/h") != std::string::npos);

  // Through the controller: decided at 10 s, validated and started at 25 s.
  Karpenter k({pool});
  ProvisionerActions out;
  k.wake(f.c, 10 * kS, out);
  CHECK(out.launches.empty());
  k.wake(f.c, 25 * kS, out);
  REQUIRE(out.launches.size() == 1);
  CHECK(out.removals.empty());
  CHECK(out.cordons == std::vector<std::uint32_t>{n});  // tainted karpenter.sh/disrupted:NoSchedule while it waits
  CHECK(k.replacements_in_flight() == 1);
  CHECK(k.marked_nodes() == std::set<std::uint32_t>{n});

  const auto r = f.node("p5.4xlarge", "gpu", NodePhase::Launched);  // the loop launches it
  f.c.nodes[r].launched_at = 25 * kS;
  ProvisionerActions out2;
  k.wake(f.c, 35 * kS, out2);
  CHECK(out2.removals.empty());  // not Initialized yet
  CHECK(out2.launches.empty());  // the old node is not a candidate again

  f.c.nodes[r].phase = NodePhase::Initialized;
  f.c.nodes[r].initialized_at = 200 * kS;
  f.c.nodes[r].gpus_allocatable = 1;
  ProvisionerActions out3;
  k.wake(f.c, 200 * kS, out3);
  REQUIRE(out3.removals.size() == 1);
  CHECK(out3.removals[0].node == n);
  CHECK(out3.removals[0].reason == RemovalReason::Underutilized);
  CHECK(out3.removals[0].drain);
  CHECK(k.replacements_in_flight() == 0);
}

TEST_CASE("Balanced approves a move whose savings justify its disruption and rejects one whose do not",
          "[karpenter]") {
  // Node a runs two 1-GPU replicas; a p4d.24xlarge ($21.96/h) could take them instead of a p5.48xlarge
  // ($55.04/h). Node b is full (four TP2 replicas) and do-not-disrupt, so never a candidate itself, but it
  // counts in the pool's totals: cost $110.08/h, savings $33.08/h = 30.05 %.
  Fixture f;
  NodePool pool = gpu_pool("gpu", 10, {"p5.48xlarge", "p4d.24xlarge"});
  pool.consolidation_policy = ConsolidationPolicy::Balanced;
  const auto a = f.node("p5.48xlarge", "gpu");
  const auto b = f.node("p5.48xlarge", "gpu");
  f.c.nodes[b].do_not_disrupt = true;
  f.bound(f.one_gpu, a, 0);
  f.bound(f.one_gpu, a, 0);
  for (int i = 0; i < 4; ++i) f.bound(f.tp2, b, 0);

  // Default priority: disruption (1 + 2) / (3 + 5) = 37.5 %, score 0.3005 / 0.375 = 0.80.
  DisruptionDecision d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  CHECK(d.action == DisruptionAction::Replace);
  CHECK(d.nodes == ids({a}));
  REQUIRE(d.replacement);
  CHECK(type_name(f, *d.replacement) == "p4d.24xlarge");
  CHECK(d.log.explanation.find("score 0.80 >= threshold 0.50") != std::string::npos);

  // The same replicas at system-critical priority (EvictionCost clamps at 10 each): disruption 21 / 26.
  PodTemplate critical = f.c.templates[f.one_gpu];
  critical.priority = 2000000000;
  f.c.templates.push_back(critical);
  for (std::uint32_t pid : f.c.nodes[a].pods) f.c.pods[pid].template_index = static_cast<int>(f.c.templates.size()) - 1;
  d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  CHECK(d.action == DisruptionAction::None);
  CHECK(d.log.explanation.find("rejected by Balanced: score 0.37 < threshold 0.50 (consolidationThreshold: 2.0, savings "
                               "30.1%, disruption 80.8%)") != std::string::npos);
  // WhenEmptyOrUnderutilized takes any strict saving.
  pool.consolidation_policy = ConsolidationPolicy::WhenEmptyOrUnderutilized;
  d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  CHECK(d.action == DisruptionAction::Replace);
  CHECK(d.log.explanation.find("Balanced") == std::string::npos);
}

TEST_CASE("a replacement that dies before initializing abandons the command", "[karpenter]") {
  Fixture f;
  NodePool pool = gpu_pool("gpu", 10, {"p5.48xlarge", "p5.4xlarge"});
  const auto n = f.node("p5.48xlarge", "gpu");
  f.bound(f.one_gpu, n, 0);
  Karpenter k({pool});
  ProvisionerActions out;
  k.wake(f.c, 10 * kS, out);
  k.wake(f.c, 25 * kS, out);  // validated
  REQUIRE(out.launches.size() == 1);
  const auto r = f.node("p5.4xlarge", "gpu", NodePhase::Launched);
  f.c.nodes[r].launched_at = 25 * kS;
  f.c.nodes[r].phase = NodePhase::Terminated;
  ProvisionerActions out2;
  k.wake(f.c, 35 * kS, out2);
  CHECK(out2.removals.empty());  // the old node stays
  CHECK(out2.uncordons == std::vector<std::uint32_t>{n});  // and is schedulable again
  REQUIRE(out2.log.size() == 1);
  CHECK(out2.log[0].action == "abandon");
  CHECK(k.replacements_in_flight() == 0);
  // Released, it is a candidate again: the same pass decides a fresh replace, started once validated.
  k.wake(f.c, 50 * kS, out2);
  REQUIRE(out2.log.size() == 2);
  CHECK(out2.log[1].action == "replace");
  CHECK(out2.launches.size() == 1);
  CHECK(k.replacements_in_flight() == 1);
}

TEST_CASE("spot-to-spot replacement needs the feature gate", "[karpenter]") {
  Fixture f;
  NodePool pool = gpu_pool("gpu", 10, {"p5.48xlarge", "p5.4xlarge"}, {"spot"});
  const auto n = f.node("p5.48xlarge", "gpu", NodePhase::Initialized, CapacityType::Spot);
  f.bound(f.one_gpu, n, 0);
  DisruptionDecision d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  CHECK(d.action == DisruptionAction::None);
  CHECK(d.log.explanation.find("SpotToSpotConsolidation is disabled") != std::string::npos);

  KarpenterSettings s;
  s.spot_to_spot_consolidation = true;
  d = decide_disruption(f.c, {pool}, s, {}, {}, 60 * kS);
  CHECK(d.action == DisruptionAction::None);  // 1 cheaper type < 15
  CHECK(d.log.explanation.find("spot-to-spot needs 15 cheaper instance types, found 1") != std::string::npos);

  s.min_spot_to_spot_options = 1;
  d = decide_disruption(f.c, {pool}, s, {}, {}, 60 * kS);
  CHECK(d.action == DisruptionAction::Replace);
}

TEST_CASE("do-not-disrupt on a pod or the node blocks consolidation", "[karpenter]") {
  Fixture f;
  NodePool pool = gpu_pool();
  pool.budgets = {DisruptionBudget{"100%", {}, "", std::nullopt, std::nullopt}};
  const auto a = f.node("p5.48xlarge", "gpu");
  const auto b = f.node("p5.48xlarge", "gpu");
  f.bound(f.tp2, a, 0);
  f.bound(f.tp2, b, 0);
  f.bound(f.tp2, b, 0);
  f.c.templates[f.tp2].do_not_disrupt = true;
  DisruptionDecision d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  CHECK(d.action == DisruptionAction::None);
  CHECK(d.log.explanation.find("node 0: do-not-disrupt pod 0") != std::string::npos);

  f.c.templates[f.tp2].do_not_disrupt = false;
  f.c.nodes[a].do_not_disrupt = true;
  d = decide_disruption(f.c, {pool}, {}, {}, {}, 60 * kS);
  CHECK(d.action == DisruptionAction::Delete);
  CHECK(d.nodes == ids({b}));  // a is protected; b's pods fit on a

  // The annotation also protects an empty node from emptiness.
  Fixture g;
  const auto e = g.node("p5.48xlarge", "gpu");
  g.c.nodes[e].do_not_disrupt = true;
  CHECK(decide_disruption(g.c, {pool}, {}, {}, {}, 60 * kS).action == DisruptionAction::None);
}

TEST_CASE("a node nominated for pending pods is not disrupted", "[karpenter]") {
  Fixture f;
  Karpenter k({gpu_pool()});
  f.node("p5.48xlarge", "gpu");  // Initialized, empty: a candidate for emptiness
  const auto p = f.pending(f.tp2);
  k.on_unschedulable(f.c, p, 9 * kS);
  ProvisionerActions out;
  k.wake(f.c, 10 * kS, out);  // batch end and poll together: the batch nominates node 0 first
  CHECK(out.launches.empty());
  CHECK(out.removals.empty());
  REQUIRE(out.log.size() == 2);
  CHECK(out.log[0].reason == "FitsExistingCapacity");
  CHECK(out.log[1].explanation.find("node 0: nominated for pending pods") != std::string::npos);
}

TEST_CASE("identical no-action passes are logged once", "[karpenter]") {
  Fixture f;
  NodePool pool = gpu_pool();
  const auto n = f.node("p5.48xlarge", "gpu");
  f.bound(f.tp2, n, 0);
  Karpenter k({pool});
  ProvisionerActions out;
  k.wake(f.c, 10 * kS, out);
  k.wake(f.c, 20 * kS, out);
  k.wake(f.c, 30 * kS, out);
  REQUIRE(out.log.size() == 1);
  CHECK(out.log[0].action == "none");
  CHECK(out.log[0].explanation.find("cheapest replacement p5.48xlarge on-demand us-east-1a at $55.04/h is not strictly cheaper") !=
        std::string::npos);
}
