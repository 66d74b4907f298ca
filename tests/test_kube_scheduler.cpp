// kube-scheduler (core/src/kube_scheduler.cpp) and the predicates it shares with the provisioners
// (core/src/cluster.cpp): taints and tolerations, nodeSelector and required node affinity, resource fit,
// node phases, LeastAllocated scoring and the FailedScheduling message, on small hand-built clusters.
#include <catch2/catch.hpp>

#include <set>
#include <string>
#include <vector>

#include "cluster/cluster_state.hpp"
#include "scheduling/fit.hpp"
#include "scheduling/kube_scheduler.hpp"

using namespace gpuscale;

namespace {

const Taint kGpuTaint{"nvidia.com/gpu", "true", TaintEffect::NoSchedule};

// A cluster on the default catalogue; nodes are added by hand with the resources they would have.
struct Cluster {
  ClusterState c;

  Cluster() { c.types = default_instance_types(); }

  std::uint32_t node(const std::string& type_name, NodePhase phase = NodePhase::Initialized,
                     std::vector<Taint> taints = {}, const Labels& extra_labels = {}) {
    const InstanceType* t = find_instance_type(c.types, type_name);
    REQUIRE(t);
    Node n;
    n.id = static_cast<std::uint32_t>(c.nodes.size());
    n.type_index = static_cast<int>(t - c.types.data());
    n.capacity_type = CapacityType::OnDemand;
    n.zone = t->zones.front();
    n.labels = instance_labels(*t, n.capacity_type, n.zone);
    for (const auto& [k, v] : extra_labels) n.labels[k] = v;
    n.taints = std::move(taints);
    n.phase = phase;
    // As the cluster model does: GPUs are advertised only once the node is initialized.
    n.gpus_allocatable = phase == NodePhase::Initialized ? t->gpus : 0;
    n.cpu_allocatable_milli = allocatable_cpu_milli(*t);
    n.memory_allocatable_mib = allocatable_memory_mib(*t);
    c.nodes.push_back(n);
    return n.id;
  }
};

PodTemplate cpu_pod(std::int64_t cpu_milli = 3000, std::int64_t memory_mib = 8192) {
  PodTemplate p;
  p.name = "web";
  p.cpu_milli = cpu_milli;
  p.memory_mib = memory_mib;
  return p;
}

// A TP2 vLLM replica as the cluster model builds it, with the ExtendedResourceToleration toleration.
PodTemplate gpu_pod(int gpus = 2) {
  PodTemplate p;
  p.name = "vllm";
  p.gpus = gpus;
  p.cpu_milli = 8000 * gpus;
  p.memory_mib = 100 * 1024 * gpus;
  p.tolerations = {Toleration{"nvidia.com/gpu", TolerationOp::Exists, "", std::nullopt}};
  return p;
}

Requirement req(const std::string& key, const std::string& op, std::vector<std::string> values = {}) {
  return Requirement{key, value_of(op, kSelectorOps), std::move(values), 0};
}

}  // namespace

TEST_CASE("tolerations: Equal compares the value, Exists ignores it, an empty key with Exists tolerates every taint",
          "[kube-scheduler]") {
  CHECK(tolerates(Toleration{"nvidia.com/gpu", TolerationOp::Equal, "true", std::nullopt}, kGpuTaint));
  CHECK_FALSE(tolerates(Toleration{"nvidia.com/gpu", TolerationOp::Equal, "false", std::nullopt}, kGpuTaint));
  CHECK(tolerates(Toleration{"nvidia.com/gpu", TolerationOp::Exists, "", std::nullopt}, kGpuTaint));
  CHECK(tolerates(Toleration{"nvidia.com/gpu", TolerationOp::Exists, "", TaintEffect::NoSchedule}, kGpuTaint));
  CHECK_FALSE(tolerates(Toleration{"nvidia.com/gpu", TolerationOp::Exists, "", TaintEffect::NoExecute}, kGpuTaint));  // effect must match when set
  CHECK_FALSE(tolerates(Toleration{"dedicated", TolerationOp::Exists, "", std::nullopt}, kGpuTaint));
  const Toleration everything{"", TolerationOp::Exists, "", std::nullopt};
  CHECK(tolerates(everything, kGpuTaint));
  CHECK(tolerates(everything, Taint{"dedicated", "batch", TaintEffect::NoExecute}));
  CHECK_FALSE(tolerates(Toleration{"", TolerationOp::Exists, "", TaintEffect::NoSchedule}, Taint{"dedicated", "batch", TaintEffect::NoExecute}));

  // PreferNoSchedule is a preference, never a filter; NoSchedule and NoExecute both block.
  CHECK(tolerates_all({}, {Taint{"dedicated", "batch", TaintEffect::PreferNoSchedule}}));
  CHECK_FALSE(tolerates_all({}, {kGpuTaint}));
  CHECK_FALSE(tolerates_all({}, {Taint{"dedicated", "batch", TaintEffect::NoExecute}}));
  CHECK(tolerates_all({everything}, {kGpuTaint, Taint{"dedicated", "batch", TaintEffect::NoExecute}}));
  // Every blocking taint needs its own toleration.
  CHECK_FALSE(tolerates_all({Toleration{"nvidia.com/gpu", TolerationOp::Exists, "", std::nullopt}}, {kGpuTaint, Taint{"dedicated", "", TaintEffect::NoSchedule}}));
}

TEST_CASE("a NoSchedule taint keeps off a pod that does not tolerate it; PreferNoSchedule does not", "[kube-scheduler]") {
  SECTION("NoSchedule") {
    Cluster k;
    k.node("m7i.4xlarge", NodePhase::Initialized, {Taint{"dedicated", "batch", TaintEffect::NoSchedule}});
    const SchedulingResult r = schedule_pod(k.c, cpu_pod());
    CHECK_FALSE(r.node);
    CHECK(r.explanation == "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: batch}.");
    CHECK_FALSE(check_fit(cpu_pod(), k.c.nodes[0]).ok());

    PodTemplate tolerant = cpu_pod();
    tolerant.tolerations = {Toleration{"", TolerationOp::Exists, "", std::nullopt}};
    const SchedulingResult ok = schedule_pod(k.c, tolerant);
    REQUIRE(ok.node);
    CHECK(*ok.node == 0);
    CHECK(check_fit(tolerant, k.c.nodes[0]).ok());
  }
  SECTION("a taint without a value is printed without one") {
    Cluster k;
    k.node("m7i.4xlarge", NodePhase::Initialized, {Taint{"dedicated", "", TaintEffect::NoExecute}});
    CHECK(schedule_pod(k.c, cpu_pod()).explanation == "0/1 nodes are available: 1 node(s) had untolerated taint {dedicated}.");
  }
  SECTION("PreferNoSchedule") {
    Cluster k;
    k.node("m7i.4xlarge", NodePhase::Initialized, {Taint{"dedicated", "batch", TaintEffect::PreferNoSchedule}});
    const SchedulingResult r = schedule_pod(k.c, cpu_pod());
    REQUIRE(r.node);
    CHECK(*r.node == 0);
    CHECK(check_fit(cpu_pod(), k.c.nodes[0]).ok());
  }
  SECTION("GPU pods pass the GPU taint through the ExtendedResourceToleration toleration") {
    Cluster k;
    k.node("p5.48xlarge", NodePhase::Initialized, {kGpuTaint});
    CHECK(schedule_pod(k.c, gpu_pod()).node == std::optional<std::uint32_t>(0));
    CHECK(schedule_pod(k.c, cpu_pod()).explanation ==
          "0/1 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: true}.");
  }
}

TEST_CASE("node selector requirements: In, NotIn, Exists, DoesNotExist, Gt, Lt", "[kube-scheduler]") {
  const InstanceType* p5 = find_instance_type(default_instance_types(), "p5.48xlarge");
  REQUIRE(p5);
  Labels l = instance_labels(*p5, CapacityType::OnDemand, "us-east-1a");
  l["workload"] = "llm-inference";

  CHECK(matches(req("node.kubernetes.io/instance-type", "In", {"p4d.24xlarge", "p5.48xlarge"}), l));
  CHECK_FALSE(matches(req("node.kubernetes.io/instance-type", "In", {"m7i.4xlarge"}), l));
  CHECK_FALSE(matches(req("absent", "In", {"x"}), l));
  CHECK(matches(req("karpenter.sh/capacity-type", "NotIn", {"spot"}), l));
  CHECK_FALSE(matches(req("karpenter.sh/capacity-type", "NotIn", {"on-demand"}), l));
  CHECK(matches(req("absent", "NotIn", {"x"}), l));  // an absent label satisfies NotIn
  CHECK(matches(req("karpenter.k8s.aws/instance-gpu-name", "Exists"), l));
  CHECK_FALSE(matches(req("absent", "Exists"), l));
  CHECK(matches(req("absent", "DoesNotExist"), l));
  CHECK_FALSE(matches(req("workload", "DoesNotExist"), l));
  CHECK(matches(req("karpenter.k8s.aws/instance-gpu-count", "Gt", {"0"}), l));
  CHECK_FALSE(matches(req("karpenter.k8s.aws/instance-gpu-count", "Gt", {"8"}), l));
  CHECK(matches(req("karpenter.k8s.aws/instance-gpu-count", "Lt", {"9"}), l));
  CHECK_FALSE(matches(req("karpenter.k8s.aws/instance-gpu-count", "Lt", {"8"}), l));
  CHECK_FALSE(matches(req("node.kubernetes.io/instance-type", "Gt", {"0"}), l));  // not an integer label
  CHECK_FALSE(matches(req("absent", "Lt", {"100"}), l));

  CHECK(matches_all({}, l));
  CHECK(matches_all({req("workload", "In", {"llm-inference"}), req("karpenter.k8s.aws/instance-gpu-count", "Gt", {"4"})}, l));
  CHECK_FALSE(matches_all({req("workload", "In", {"llm-inference"}), req("karpenter.k8s.aws/instance-gpu-count", "Lt", {"4"})}, l));
}

TEST_CASE("nodeSelector and required affinity pick the nodes a pod may use", "[kube-scheduler]") {
  Cluster k;
  k.node("m7i.4xlarge");                                             // node 0: CPU only
  k.node("p5.48xlarge", NodePhase::Initialized, {}, {{"workload", "llm-inference"}});  // node 1
  k.node("p4d.24xlarge");                                            // node 2: GPUs, no workload label

  PodTemplate selected = cpu_pod();
  selected.node_selector = {{"workload", "llm-inference"}};
  SchedulingResult r = schedule_pod(k.c, selected);
  REQUIRE(r.node);
  CHECK(*r.node == 1);
  CHECK_THAT(r.explanation, Catch::Contains("1/3 nodes feasible"));

  PodTemplate affine = cpu_pod();
  affine.required_affinity = {req("karpenter.k8s.aws/instance-gpu-count", "Gt", {"0"}), req("workload", "DoesNotExist")};
  r = schedule_pod(k.c, affine);
  REQUIRE(r.node);
  CHECK(*r.node == 2);

  affine.required_affinity = {req("node.kubernetes.io/instance-type", "NotIn", {"p5.48xlarge", "p4d.24xlarge"})};
  r = schedule_pod(k.c, affine);
  REQUIRE(r.node);
  CHECK(*r.node == 0);

  PodTemplate nowhere = cpu_pod();
  nowhere.node_selector = {{"workload", "batch"}};
  r = schedule_pod(k.c, nowhere);
  CHECK_FALSE(r.node);
  CHECK(r.explanation == "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.");
}

TEST_CASE("resource fit counts what the bound pods already request", "[kube-scheduler]") {
  Cluster k;
  const std::uint32_t gpu = k.node("p5.48xlarge");
  k.c.nodes[gpu].gpus_requested = 6;
  CHECK(schedule_pod(k.c, gpu_pod(2)).node == std::optional<std::uint32_t>(gpu));
  CHECK(schedule_pod(k.c, gpu_pod(4)).explanation == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");

  Cluster m;
  m.node("m7i.4xlarge");
  const Node& n = m.c.nodes[0];
  // Exactly the allocatable fits; a millicore or a MiB more does not.
  CHECK(schedule_pod(m.c, cpu_pod(n.cpu_allocatable_milli, n.memory_allocatable_mib)).node);
  CHECK(schedule_pod(m.c, cpu_pod(n.cpu_allocatable_milli + 1, 1024)).explanation ==
        "0/1 nodes are available: 1 Insufficient cpu.");
  CHECK(schedule_pod(m.c, cpu_pod(1000, n.memory_allocatable_mib + 1)).explanation ==
        "0/1 nodes are available: 1 Insufficient memory.");
  // A GPU pod on a node without GPUs.
  CHECK(schedule_pod(m.c, gpu_pod(1)).explanation == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
}

TEST_CASE("GPU pods need an Initialized node; CPU pods may use a Registered one once it is Ready", "[kube-scheduler]") {
  Cluster k;
  k.node("p5.48xlarge", NodePhase::Registered);
  // Registered: joined, but the device plugin has not advertised nvidia.com/gpu yet.
  CHECK(schedule_pod(k.c, gpu_pod()).explanation == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
  CHECK_FALSE(check_fit(gpu_pod(), k.c.nodes[0]).ok());
  CHECK(schedule_pod(k.c, cpu_pod()).node == std::optional<std::uint32_t>(0));
  CHECK(check_fit(cpu_pod(), k.c.nodes[0]).ok());

  k.c.nodes[0].phase = NodePhase::Initialized;
  k.c.nodes[0].gpus_allocatable = 8;
  CHECK(schedule_pod(k.c, gpu_pod()).node == std::optional<std::uint32_t>(0));

  Cluster launched;
  launched.node("p5.48xlarge", NodePhase::Launched);
  CHECK(schedule_pod(launched.c, cpu_pod()).explanation == "0/1 nodes are available: 1 node(s) had not joined the cluster yet.");
  CHECK_FALSE(check_fit(cpu_pod(), launched.c.nodes[0]).ok());

  // Draining nodes are unschedulable; terminated ones are not nodes any more.
  Cluster going;
  going.node("m7i.4xlarge", NodePhase::Terminating);
  going.node("m7i.4xlarge");
  going.c.nodes[1].disrupted = true;  // karpenter.sh/disrupted:NoSchedule
  going.node("m7i.4xlarge", NodePhase::Terminated);
  CHECK(schedule_pod(going.c, cpu_pod()).explanation == "0/2 nodes are available: 2 node(s) were unschedulable.");
  CHECK_FALSE(check_fit(cpu_pod(), going.c.nodes[1]).ok());
}

TEST_CASE("a Registered node that is not Ready keeps pods off with node.kubernetes.io/not-ready:NoSchedule", "[kube-scheduler]") {
  Cluster k;
  const Taint not_ready{kNotReadyTaint, "", TaintEffect::NoSchedule};
  k.node("m7i.4xlarge", NodePhase::Registered, {not_ready});
  const SchedulingResult r = schedule_pod(k.c, cpu_pod());
  CHECK_FALSE(r.node);
  CHECK(r.explanation == "0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready}.");
  // The taint, not the phase, keeps it off: a pod that tolerates it (as DaemonSet pods do) may land.
  PodTemplate tolerant = cpu_pod();
  tolerant.tolerations = {Toleration{kNotReadyTaint, TolerationOp::Exists, "", TaintEffect::NoSchedule}};
  CHECK(schedule_pod(k.c, tolerant).node == std::optional<std::uint32_t>(0));
  // The kubelet reports Ready: the taint is gone, the pod fits.
  k.c.nodes[0].taints.clear();
  CHECK(schedule_pod(k.c, cpu_pod()).node == std::optional<std::uint32_t>(0));
  // A GPU pod still waits for the device plugin.
  CHECK(schedule_pod(k.c, gpu_pod()).explanation == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.");
}

TEST_CASE("ties among the top scores go to a node drawn at random (selectHost's reservoir sampling), seeded", "[kube-scheduler]") {
  Cluster k;
  for (int i = 0; i < 4; ++i) k.node("m7i.4xlarge");
  k.c.nodes[3].cpu_requested_milli = 4000;  // a lower score: never chosen
  // Without a generator, the lowest id of the tied ones.
  CHECK(schedule_pod(k.c, cpu_pod()).node == std::optional<std::uint32_t>(0));
  // With one, each of the three tied nodes about a third of the time.
  Rng rng = Rng::stream(7, "kube-scheduler");
  int chosen[4] = {0, 0, 0, 0};
  const int n = 3000;
  for (int i = 0; i < n; ++i) {
    const SchedulingResult r = schedule_pod(k.c, cpu_pod(), {}, &rng);
    REQUIRE(r.node);
    ++chosen[*r.node];
    if (i == 0) CHECK(r.explanation.find("picked at random among 3 with that score") != std::string::npos);
  }
  CHECK(chosen[3] == 0);
  for (int i = 0; i < 3; ++i) {
    INFO("node " << i << ": " << chosen[i]);
    CHECK(chosen[i] > n / 3 - 150);
    CHECK(chosen[i] < n / 3 + 150);
  }
  // The same seed, the same choices; the scheduler draws from its own stream of the scenario seed.
  KubeScheduler a(11), b(11);
  std::vector<std::uint32_t> pending;
  for (std::uint32_t id = 0; id < 6; ++id) {
    Pod p;
    p.id = id;
    k.c.pods.push_back(p);
    pending.push_back(id);
  }
  k.c.templates = {cpu_pod(1000, 1024)};
  const SchedulingCycle ca = a.schedule(k.c, pending, 0), cb = b.schedule(k.c, pending, 0);
  REQUIRE(ca.outcomes.size() == 6);
  std::set<std::uint32_t> used;
  for (std::size_t i = 0; i < 6; ++i) {
    CHECK(ca.outcomes[i].node == cb.outcomes[i].node);
    used.insert(*ca.outcomes[i].node);
  }
  CHECK(used.count(3) == 0);
  CHECK(used.size() == 3);  // a pod bound takes room, so the next one goes to another of the tied nodes
}

TEST_CASE("LeastAllocated picks the emptier node and breaks ties by the lowest id", "[kube-scheduler]") {
  Cluster k;
  k.node("m7i.4xlarge");
  k.node("m7i.4xlarge");
  k.c.nodes[0].cpu_requested_milli = 8000;
  // 3 CPU and 8 GiB on an empty m7i.4xlarge (15890m, 63971 MiB allocatable):
  // cpu (15890 − 3000) × 100 / 15890 = 81, memory (63971 − 8192) × 100 / 63971 = 87, mean 84.
  SchedulingResult r = schedule_pod(k.c, cpu_pod());
  REQUIRE(r.node);
  CHECK(*r.node == 1);
  CHECK(r.explanation == "bound to node 1 (LeastAllocated score 84 of 100; 2/2 nodes feasible)");

  k.c.nodes[0].cpu_requested_milli = 0;
  r = schedule_pod(k.c, cpu_pod());
  REQUIRE(r.node);
  CHECK(*r.node == 0);

  // Only cpu and memory are scored: GPUs in use do not make a node less attractive.
  Cluster g;
  g.node("p5.48xlarge");
  g.node("p5.48xlarge");
  g.c.nodes[0].gpus_requested = 6;
  r = schedule_pod(g.c, gpu_pod());
  REQUIRE(r.node);
  CHECK(*r.node == 0);
}

TEST_CASE("NodeResourcesFit MostAllocated bin-packs, over the resources and weights the profile lists", "[kube-scheduler]") {
  NodeResourcesFitScoring most;
  most.type = NodeResourcesFitScoring::Type::MostAllocated;
  Cluster k;
  k.node("m7i.4xlarge");
  k.node("m7i.4xlarge");
  k.c.nodes[0].cpu_requested_milli = 8000;
  // The fuller node wins: cpu (8000 + 3000) × 100 / 15890 = 69, memory 8192 × 100 / 63971 = 12, mean 40.
  SchedulingResult r = schedule_pod(k.c, cpu_pod(), {}, nullptr, most);
  REQUIRE(r.node);
  CHECK(*r.node == 0);
  CHECK(r.explanation == "bound to node 0 (MostAllocated score 40 of 100; 2/2 nodes feasible)");

  // With nvidia.com/gpu among the resources, the node with GPUs in use draws the next GPU pod; the
  // default resources (cpu and memory) would not see them.
  Cluster g;
  g.node("p5.48xlarge");
  g.node("p5.48xlarge");
  g.c.nodes[1].gpus_requested = 6;
  most.resources = {{"nvidia.com/gpu", 1}};
  r = schedule_pod(g.c, gpu_pod(), {}, nullptr, most);
  REQUIRE(r.node);
  CHECK(*r.node == 1);
  CHECK(r.explanation.find("MostAllocated score 100 of 100") != std::string::npos);  // (6 + 2) × 100 / 8
  // A pod requesting no GPUs skips the GPU term (resource_allocation.go): with only that term, every node scores 0.
  r = schedule_pod(g.c, cpu_pod(), {}, nullptr, most);
  REQUIRE(r.node);
  CHECK(r.explanation.find("MostAllocated score 0 of 100") != std::string::npos);
  // Weights: a weighted mean in integer arithmetic. GPU weight 3 at 100, cpu weight 1 at 20 → (300 + 20) / 4 = 80.
  most.resources = {{"cpu", 1}, {"nvidia.com/gpu", 3}};
  const std::int64_t cpu_alloc = g.c.nodes[1].cpu_allocatable_milli;
  g.c.nodes[1].cpu_requested_milli = cpu_alloc / 5 - gpu_pod().cpu_milli;
  r = schedule_pod(g.c, gpu_pod(), {}, nullptr, most);
  REQUIRE(r.node);
  CHECK(*r.node == 1);
  const std::int64_t cpu_part = (g.c.nodes[1].cpu_requested_milli + gpu_pod().cpu_milli) * 100 / cpu_alloc;
  CHECK(r.explanation.find("MostAllocated score " + std::to_string((cpu_part + 300) / 4) + " of 100") != std::string::npos);
}

TEST_CASE("the FailedScheduling message counts the nodes per reason, sorted", "[kube-scheduler]") {
  Cluster k;
  k.node("m7i.4xlarge");
  k.node("p5.48xlarge", NodePhase::Initialized, {kGpuTaint});
  k.node("p5.48xlarge", NodePhase::Initialized, {kGpuTaint});
  k.c.nodes[2].gpus_requested = 8;  // full as well, but the taint filter runs first
  PodTemplate untolerating = gpu_pod(1);
  untolerating.tolerations.clear();
  const SchedulingResult r = schedule_pod(k.c, untolerating);
  CHECK_FALSE(r.node);
  CHECK(r.explanation ==
        "0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) had untolerated taint {nvidia.com/gpu: true}.");

  // An empty cluster.
  Cluster none;
  CHECK(schedule_pod(none.c, cpu_pod()).explanation == "0/0 nodes are available.");
}
