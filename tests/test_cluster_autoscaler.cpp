// Tests of the Cluster Autoscaler model (core/src/cluster_autoscaler.cpp): hand-built ClusterStates,
// the decisions and the timers, scan by scan, with the flag defaults of real-systems.md §4.
#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "provisioning/cluster_autoscaler/cluster_autoscaler.hpp"
#include "gpuscale/errors.hpp"

using namespace gpuscale;

namespace {

constexpr Micros kS = kMicrosPerSecond;

InstanceType make_type(const std::string& name, int gpus, int vcpu, double memory_gib, double od, double spot) {
  InstanceType t;
  t.name = name;
  t.family = name;
  t.gpus = gpus;
  t.gpu_name = gpus > 0 ? "h100" : "";
  t.gpu_manufacturer = gpus > 0 ? "nvidia" : "";
  t.vcpu = vcpu;
  t.memory_gib = memory_gib;
  t.zones = {"z1"};
  t.on_demand_usd_per_hour = od;
  t.spot_usd_per_hour = spot;
  return t;
}

PodTemplate make_template(const std::string& name, int gpus, std::int64_t cpu_milli, std::int64_t memory_mib) {
  PodTemplate t;
  t.name = name;
  t.gpus = gpus;
  t.cpu_milli = cpu_milli;
  t.memory_mib = memory_mib;
  return t;
}

enum Type { kBig = 0, kSmall = 1, kCpu = 2 };
enum Template { kVllm = 0, kWeb = 1, kPinned = 2, kWhole = 3, kCpuOnly = 4, kHeavy3 = 5, kHeavy4 = 6 };

// Types: "big" 8 GPUs / 96 vCPU / 1 TiB at 10 USD/h (allocatable 95690m CPU, 1047011 MiB),
// "small" 1 GPU / 12 vCPU / 128 GiB at 12 USD/h (11900m, 129507 MiB), "cpu" 16 vCPU / 64 GiB (15890m).
struct World {
  ClusterState c;

  World() {
    c.types = {make_type("big", 8, 96, 1024, 10, 4), make_type("small", 1, 12, 128, 12, 5),
               make_type("cpu", 0, 16, 64, 0.8, 0.3)};
    c.templates = {make_template("vllm", 1, 4000, 32768), make_template("web", 0, 1000, 2048),
                   make_template("pinned", 1, 4000, 32768), make_template("whole", 8, 8000, 65536),
                   make_template("cpu-only", 0, 1000, 2048), make_template("heavy3", 1, 29000, 32768),
                   make_template("heavy4", 1, 23000, 32768)};
    c.templates[kPinned].do_not_disrupt = true;
    c.templates[kCpuOnly].node_selector["node.kubernetes.io/instance-type"] = "cpu";
  }

  std::uint32_t node(int type, const std::string& owner, NodePhase phase = NodePhase::Initialized, Micros launched_at = 0) {
    const InstanceType& t = c.types[static_cast<std::size_t>(type)];
    Node n;
    n.id = static_cast<std::uint32_t>(c.nodes.size());
    n.type_index = type;
    n.capacity_type = CapacityType::OnDemand;
    n.zone = "z1";
    n.owner = owner;
    n.labels = instance_labels(t, CapacityType::OnDemand, "z1");
    n.labels["eks.amazonaws.com/nodegroup"] = owner;
    // The node groups of these tests carry CA's GPU label on their GPU nodes, as the AWS README asks.
    if (t.gpus > 0) n.labels["k8s.amazonaws.com/accelerator"] = "nvidia-h100";
    n.phase = phase;
    n.launched_at = launched_at;
    if (phase != NodePhase::Launched) n.registered_at = n.ready_at = launched_at;  // registered and Ready
    if (phase == NodePhase::Initialized) n.initialized_at = launched_at;
    n.gpus_allocatable = phase == NodePhase::Initialized ? t.gpus : 0;
    n.cpu_allocatable_milli = allocatable_cpu_milli(t);
    n.memory_allocatable_mib = allocatable_memory_mib(t);
    c.nodes.push_back(n);
    return n.id;
  }

  std::uint32_t pod(int tmpl, int node = -1) {
    Pod p;
    p.id = static_cast<std::uint32_t>(c.pods.size());
    p.template_index = tmpl;
    if (node >= 0) {
      Node& n = c.nodes[static_cast<std::size_t>(node)];
      const PodTemplate& t = c.templates[static_cast<std::size_t>(tmpl)];
      p.phase = PodPhase::Running;
      p.node = node;
      n.pods.push_back(p.id);
      n.gpus_requested += t.gpus;
      n.cpu_requested_milli += t.cpu_milli;
      n.memory_requested_mib += t.memory_mib;
    }
    c.pods.push_back(p);
    return p.id;
  }

  // A pending pod that the scheduler marked Unschedulable, told to the autoscaler.
  std::uint32_t unschedulable(ClusterAutoscaler& ca, int tmpl, Micros now) {
    const std::uint32_t id = pod(tmpl);
    c.pods[id].unschedulable_since = now;
    ca.on_unschedulable(c, id, now);
    return id;
  }
};

ClusterAutoscalerConfig config(const std::string& json) { return parse_cluster_autoscaler(Json::parse(json), "/ca"); }

const char* kGroups = R"("nodeGroups": [
  {"name": "gpu-big", "instanceType": "big", "maxSize": 4},
  {"name": "gpu-small", "instanceType": "small", "maxSize": 4},
  {"name": "cpu", "instanceType": "cpu", "maxSize": 4}])";

ClusterAutoscalerConfig three_groups(const std::string& flags = "{}") {
  return config(std::string("{\"flags\": ") + flags + ", " + kGroups + "}");
}

ProvisionerActions scan(ClusterAutoscaler& ca, const ClusterState& c, Micros now) {
  REQUIRE(ca.next_wakeup() <= now);
  ProvisionerActions out;
  ca.wake(c, now, out);
  return out;
}

// Scans every 10 s from `from` to `to` inclusive; the removals, each with the time it was decided.
std::vector<std::pair<Micros, NodeRemoval>> scans(ClusterAutoscaler& ca, const ClusterState& c, Micros from, Micros to) {
  std::vector<std::pair<Micros, NodeRemoval>> removed;
  for (Micros t = from; t <= to; t += 10 * kS) {
    for (const auto& r : scan(ca, c, t).removals) removed.emplace_back(t, r);
  }
  return removed;
}

bool logged(const ProvisionerActions& a, const std::string& action, const std::string& reason) {
  for (const auto& l : a.log) {
    if (l.controller == "cluster-autoscaler" && l.action == action && l.reason == reason) return true;
  }
  return false;
}

std::string error_path(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const InputError& e) {
    if (message) *message = e.message();
    return e.path();
  }
  return "<no error>";
}

}  // namespace

TEST_CASE("the scan interval drives next_wakeup", "[cluster-autoscaler]") {
  World w;
  ClusterAutoscaler ca(three_groups());
  CHECK(ca.next_wakeup() == 0);  // the first loop runs at once
  scan(ca, w.c, 0);
  CHECK(ca.next_wakeup() == 10 * kS);
  w.unschedulable(ca, kWeb, 3 * kS);  // a pod does not pull the next loop forward
  CHECK(ca.next_wakeup() == 10 * kS);
  scan(ca, w.c, 10 * kS);
  CHECK(ca.next_wakeup() == 20 * kS);

  ClusterAutoscaler slow(three_groups(R"({"--scan-interval": "1m30s"})"));
  scan(slow, w.c, 0);
  CHECK(slow.next_wakeup() == 90 * kS);
}

TEST_CASE("scale-up: the expander picks the group", "[cluster-autoscaler]") {
  World w;
  SECTION("least-waste (default): a 1-GPU pod goes to the 1-GPU group") {
    ClusterAutoscaler ca(three_groups());
    w.unschedulable(ca, kVllm, 0);
    ScaleUpPlan plan = plan_scale_up(w.c, ca.config(), ca.unschedulable_pods(), 0, {-1, -1, -1}, 0);
    REQUIRE(plan.options.size() == 2);  // the cpu group has no GPU
    // CA's least-waste: CPU and memory against the template's capacity, GPUs not counted (waste.go).
    // big (96 vCPU, 1 TiB): CPU (96000−4000)/96000 + memory (1048576−32768)/1048576
    CHECK(plan.options[0].waste == Approx(92000.0 / 96000 + 1015808.0 / 1048576));
    // small (12 vCPU, 128 GiB): CPU (12000−4000)/12000 + memory (131072−32768)/131072
    CHECK(plan.options[1].waste == Approx(8000.0 / 12000 + 98304.0 / 131072));
    CHECK(plan.chosen == 1);

    ProvisionerActions a = scan(ca, w.c, 0);
    REQUIRE(a.launches.size() == 1);
    CHECK(a.launches[0].owner == "gpu-small");
    CHECK(a.launches[0].type_index == kSmall);
    CHECK(a.launches[0].labels.at("eks.amazonaws.com/nodegroup") == "gpu-small");
    CHECK(logged(a, "scale-up", "TriggeredScaleUp"));
    INFO(a.log.back().explanation);
    CHECK(a.log.back().explanation.find("waste = CPU (12000-4000)/12000 = 0.6667 + memory (131072-32768)/131072 = 0.75 = 1.417") != std::string::npos);
    CHECK(ca.last_scale_up_at() == 0);
  }
  SECTION("price: a configuration error on AWS (the expander factory exits: no cloudProvider.Pricing())") {
    for (const char* flags : {R"({"--expander": "price"})", R"({"--expander": "priority,price"})"}) {
      try {
        three_groups(flags);
        FAIL("accepted " << flags);
      } catch (const InputError& e) {
        CHECK(e.path() == "/ca/flags/--expander");
        CHECK(e.message().find("AWS provider does not implement") != std::string::npos);
        CHECK(e.message().find("exits at start") != std::string::npos);
      }
    }
  }
  SECTION("most-pods: the group that places the most pods") {
    ClusterAutoscaler ca(config(R"({"flags": {"--expander": "most-pods"}, "nodeGroups": [
        {"name": "gpu-small", "instanceType": "small", "maxSize": 1},
        {"name": "gpu-big", "instanceType": "big", "maxSize": 1}]})"));
    for (int i = 0; i < 3; ++i) w.unschedulable(ca, kVllm, 0);
    ProvisionerActions a = scan(ca, w.c, 0);
    REQUIRE(a.launches.size() == 1);
    CHECK(a.launches[0].owner == "gpu-big");
  }
  SECTION("priority, then least-waste among equals") {
    ClusterAutoscaler ca(config(R"({"flags": {"--expander": "priority,least-waste"}, "nodeGroups": [
        {"name": "gpu-small", "instanceType": "small", "maxSize": 4, "priority": 1},
        {"name": "gpu-big", "instanceType": "big", "maxSize": 4, "priority": 10}]})"));
    w.unschedulable(ca, kVllm, 0);
    ProvisionerActions a = scan(ca, w.c, 0);
    REQUIRE(a.launches.size() == 1);
    CHECK(a.launches[0].owner == "gpu-big");
  }
  SECTION("ties (and --expander=random) go round-robin by the number of scale-ups so far") {
    ClusterAutoscaler ca(config(R"({"nodeGroups": [
        {"name": "a", "instanceType": "small", "maxSize": 4}, {"name": "b", "instanceType": "small", "maxSize": 4}]})"));
    w.unschedulable(ca, kVllm, 0);
    ProvisionerActions first = scan(ca, w.c, 0);
    REQUIRE(first.launches.size() == 1);
    CHECK(first.launches[0].owner == "a");  // tie 0 mod 2
    w.node(kSmall, "a", NodePhase::Launched, 0);
    w.unschedulable(ca, kVllm, 5 * kS);
    ProvisionerActions second = scan(ca, w.c, 10 * kS);
    REQUIRE(second.launches.size() == 1);
    CHECK(second.launches[0].owner == "b");  // tie 1 mod 2
  }
  SECTION("a pod that fits an existing node triggers nothing") {
    ClusterAutoscaler ca(three_groups());
    w.node(kBig, "gpu-big");
    w.unschedulable(ca, kVllm, 0);
    ProvisionerActions a = scan(ca, w.c, 0);
    CHECK(a.launches.empty());
    CHECK(logged(a, "no-scale-up", "PodsFitExistingNodes"));
  }
}

TEST_CASE("no double scale-up while a launched GPU node is still coming up", "[cluster-autoscaler]") {
  World w;
  ClusterAutoscaler ca(config(R"({"nodeGroups": [{"name": "gpu-big", "instanceType": "big", "maxSize": 4}]})"));
  const std::uint32_t n = w.node(kBig, "gpu-big", NodePhase::Launched, 0);
  for (int i = 0; i < 8; ++i) w.unschedulable(ca, kVllm, 0);

  ProvisionerActions a = scan(ca, w.c, 0);  // launched, not registered: upcoming
  CHECK(a.launches.empty());
  CHECK(logged(a, "no-scale-up", "PodsFitUpcomingNodes"));

  // Registered, device plugin not up yet: GPU label, 0 allocatable GPUs → ResourceUnready, still upcoming.
  w.c.nodes[n].phase = NodePhase::Registered;
  w.c.nodes[n].registered_at = 60 * kS;
  CHECK(ca_node_state(w.c.nodes[n], ca.config().flags, 70 * kS) == CaNodeState::Upcoming);
  a = scan(ca, w.c, 70 * kS);
  CHECK(a.launches.empty());
  const ScaleUpPlan plan = plan_scale_up(w.c, ca.config(), ca.unschedulable_pods(), 70 * kS, {-1}, 0);
  CHECK(plan.fit_upcoming == 8);
  CHECK(plan.pods_to_help.empty());

  // A ninth pod does not fit the 8 GPUs on their way: one more node.
  w.unschedulable(ca, kVllm, 75 * kS);
  a = scan(ca, w.c, 80 * kS);
  REQUIRE(a.launches.size() == 1);
  CHECK(a.log.back().explanation.find("8 fit upcoming nodes") != std::string::npos);

  // Without the GPU label CA would take the registered node as ready with 0 GPUs and over-provision.
  World bare;
  ClusterAutoscaler ca2(config(R"({"nodeGroups": [{"name": "gpu-big", "instanceType": "big", "maxSize": 4}]})"));
  const std::uint32_t m = bare.node(kBig, "gpu-big", NodePhase::Registered, 0);
  bare.c.nodes[m].labels.erase("k8s.amazonaws.com/accelerator");
  bare.unschedulable(ca2, kVllm, 0);
  CHECK(scan(ca2, bare.c, 10 * kS).launches.size() == 1);

  // A registered node whose kubelet has not reported Ready (the not-ready taint) is NotStarted: upcoming,
  // whatever its labels, and unready once --max-node-provision-time is over.
  World young;
  const std::uint32_t y = young.node(kBig, "gpu-big", NodePhase::Registered, 0);
  young.c.nodes[y].ready_at = -1;
  young.c.nodes[y].labels.erase("k8s.amazonaws.com/accelerator");
  CHECK(ca_node_state(young.c.nodes[y], ca2.config().flags, 10 * kS) == CaNodeState::Upcoming);
  CHECK(ca_node_state(young.c.nodes[y], ca2.config().flags, 3600 * kS) == CaNodeState::Unready);
}

TEST_CASE("scale-up respects max_size", "[cluster-autoscaler]") {
  World w;
  ClusterAutoscaler ca(config(R"({"nodeGroups": [{"name": "gpu-big", "instanceType": "big", "maxSize": 2}]})"));
  const std::uint32_t full = w.node(kBig, "gpu-big");
  w.pod(kWhole, static_cast<int>(full));
  for (int i = 0; i < 3; ++i) w.unschedulable(ca, kWhole, 0);  // three 8-GPU pods, room for one more node
  ProvisionerActions a = scan(ca, w.c, 0);
  CHECK(a.launches.size() == 1);
  CHECK(a.log.back().explanation.find("(2 left: max size 2)") != std::string::npos);

  // At max size: nothing, and the reason is logged once.
  w.node(kBig, "gpu-big", NodePhase::Launched, 0);
  w.unschedulable(ca, kWhole, 5 * kS);
  a = scan(ca, w.c, 10 * kS);
  CHECK(a.launches.empty());
  CHECK(logged(a, "no-scale-up", "NotTriggerScaleUp"));
  CHECK(scan(ca, w.c, 20 * kS).log.empty());
}

TEST_CASE("GPU nodes are judged on GPU requests only", "[cluster-autoscaler]") {
  World w;
  const ClusterAutoscalerConfig cfg = three_groups();
  SECTION("3/8 GPUs = 0.375 < 0.5 is unneeded even with CPU at 91 %") {
    const std::uint32_t a = w.node(kBig, "gpu-big");
    w.node(kBig, "gpu-big");
    for (int i = 0; i < 3; ++i) w.pod(kHeavy3, static_cast<int>(a));  // 87000m of 95690m CPU
    const NodeUtilization u = node_utilization(w.c.nodes[a], cfg.flags);
    CHECK(u.gpu);
    CHECK(u.resource == "nvidia.com/gpu");
    CHECK(u.utilization == 0.375);
    CHECK(u.underutilized);
    CHECK(double(w.c.nodes[a].cpu_requested_milli) / double(w.c.nodes[a].cpu_allocatable_milli) > 0.9);
    const auto cands = find_unneeded_nodes(w.c, cfg, 0);
    REQUIRE(cands.size() == 2);
    CHECK(cands[0].unneeded);
    CHECK(!cands[0].empty);
    CHECK(cands[0].explanation.find("GPU 3/8 requested = 0.375 < --scale-down-gpu-utilization-threshold 0.5") != std::string::npos);
  }
  SECTION("4/8 GPUs = 0.5 is not below the threshold") {
    const std::uint32_t a = w.node(kBig, "gpu-big");
    w.node(kBig, "gpu-big");
    for (int i = 0; i < 4; ++i) w.pod(kHeavy4, static_cast<int>(a));
    const NodeUtilization u = node_utilization(w.c.nodes[a], cfg.flags);
    CHECK(u.utilization == 0.5);
    CHECK(!u.underutilized);
    const auto cands = find_unneeded_nodes(w.c, cfg, 0);
    CHECK(!cands[0].unneeded);
    CHECK(cands[0].reason == "NotUnderutilized");
  }
  SECTION("CPU nodes: max(cpu, memory) against --scale-down-utilization-threshold") {
    const std::uint32_t a = w.node(kCpu, "cpu");
    for (int i = 0; i < 7; ++i) w.pod(kWeb, static_cast<int>(a));  // 7000/15890 = 0.44 CPU, 14336/64071 MiB memory
    NodeUtilization u = node_utilization(w.c.nodes[a], cfg.flags);
    CHECK(!u.gpu);
    CHECK(u.resource == "cpu");
    CHECK(u.utilization == Approx(7000.0 / 15890));
    CHECK(u.underutilized);
    w.pod(kWeb, static_cast<int>(a));  // 8000/15890 = 0.503
    CHECK(!node_utilization(w.c.nodes[a], cfg.flags).underutilized);
  }
}

TEST_CASE("an unneeded node goes only after --scale-down-unneeded-time", "[cluster-autoscaler]") {
  World w;
  ClusterAutoscaler ca(three_groups());
  w.node(kBig, "gpu-big");
  auto removed = scans(ca, w.c, 0, 600 * kS);
  CHECK(removed.empty());
  CHECK(ca.unneeded_since().at(0) == 0);
  // since + 10m < now is strict (unneeded/nodes.go): 600 s is not enough, the 610 s scan removes it.
  ProvisionerActions a = scan(ca, w.c, 610 * kS);
  REQUIRE(a.removals.size() == 1);
  CHECK(a.removals[0].node == 0);
  CHECK(a.removals[0].reason == RemovalReason::ScaleDown);
  CHECK(logged(a, "scale-down", "ScaleDownEmpty"));
  CHECK(ca.last_scale_down_delete_at() == 610 * kS);

  // With --scale-down-unneeded-time 2m it is the 130 s scan.
  World w2;
  ClusterAutoscaler fast(three_groups(R"({"--scale-down-unneeded-time": "2m"})"));
  w2.node(kBig, "gpu-big");
  removed = scans(fast, w2.c, 0, 200 * kS);
  REQUIRE(removed.size() == 1);
  CHECK(removed[0].first == 130 * kS);
}

TEST_CASE("no scale-down within --scale-down-delay-after-add of a scale-up", "[cluster-autoscaler]") {
  World w;
  ClusterAutoscaler ca(three_groups());
  w.node(kBig, "gpu-big");  // empty: unneeded from t = 0
  CHECK(scans(ca, w.c, 0, 290 * kS).empty());
  const std::uint32_t p = w.unschedulable(ca, kCpuOnly, 295 * kS);  // only the cpu group can take it
  ProvisionerActions a = scan(ca, w.c, 300 * kS);
  REQUIRE(a.launches.size() == 1);
  CHECK(a.launches[0].owner == "cpu");
  CHECK(ca.unneeded_since().at(0) == 0);  // a loop that scaled up leaves the unneeded timers alone
  w.c.pods[p].phase = PodPhase::Running;    // it landed somewhere

  // Unneeded for 10 min at 610 s, but in cooldown until 300 s + 10 min = 900 s (last + d > now).
  auto removed = scans(ca, w.c, 310 * kS, 890 * kS);
  CHECK(removed.empty());
  a = scan(ca, w.c, 900 * kS);
  REQUIRE(a.removals.size() == 1);
  CHECK(a.removals[0].node == 0);
}

TEST_CASE("scale-down keeps node groups at min_size", "[cluster-autoscaler]") {
  World w;
  ClusterAutoscaler ca(config(R"({"nodeGroups": [{"name": "gpu-big", "instanceType": "big", "minSize": 1, "maxSize": 4}]})"));
  w.node(kBig, "gpu-big");
  w.node(kBig, "gpu-big");
  CHECK(scans(ca, w.c, 0, 600 * kS).empty());
  ProvisionerActions a = scan(ca, w.c, 610 * kS);
  REQUIRE(a.removals.size() == 1);  // two nodes, minSize 1: one may go
  CHECK(a.removals[0].node == 0);
  CHECK(logged(a, "blocked", "NodeGroupMinSizeReached"));
  w.c.nodes[0].phase = NodePhase::Terminating;
  CHECK(scans(ca, w.c, 620 * kS, 1800 * kS).empty());
}

TEST_CASE("do-not-disrupt pods block removal", "[cluster-autoscaler]") {
  World w;
  ClusterAutoscaler ca(three_groups());
  const std::uint32_t a = w.node(kBig, "gpu-big");
  const std::uint32_t b = w.node(kBig, "gpu-big");
  const std::uint32_t pinned = w.pod(kPinned, static_cast<int>(a));
  for (int i = 0; i < 4; ++i) w.pod(kVllm, static_cast<int>(b));  // b: 4/8, needed, room for a's pod
  auto cands = find_unneeded_nodes(w.c, ca.config(), 0);
  CHECK(!cands[0].unneeded);
  CHECK(cands[0].reason == "NotSafeToEvictAnnotation");
  CHECK(scans(ca, w.c, 0, 1800 * kS).empty());

  // The same pod without the annotation: node a is drained after 10 min.
  w.c.pods[pinned].template_index = kVllm;
  ClusterAutoscaler ca2(three_groups());
  auto removed = scans(ca2, w.c, 0, 610 * kS);
  REQUIRE(removed.size() == 1);
  CHECK(removed[0].first == 610 * kS);
  CHECK(removed[0].second.node == a);
  CHECK(removed[0].second.drain);
}

TEST_CASE("empty nodes go in bulk, nodes with pods one at a time", "[cluster-autoscaler]") {
  World w;
  for (int i = 0; i < 3; ++i) w.node(kBig, "gpu-big");          // 0–2: empty
  for (int i = 0; i < 2; ++i) w.pod(kVllm, static_cast<int>(w.node(kBig, "gpu-big")));  // 3, 4: 1/8
  const std::uint32_t busy = w.node(kBig, "gpu-big");           // 5: 4/8, needed
  for (int i = 0; i < 4; ++i) w.pod(kVllm, static_cast<int>(busy));

  SECTION("defaults: --max-scale-down-parallelism 10, --max-drain-parallelism 1") {
    ClusterAutoscaler ca(three_groups());
    scans(ca, w.c, 0, 600 * kS);
    ProvisionerActions a = scan(ca, w.c, 610 * kS);
    REQUIRE(a.removals.size() == 4);
    CHECK(a.removals[0].node == 0);
    CHECK(a.removals[1].node == 1);
    CHECK(a.removals[2].node == 2);
    CHECK(a.removals[3].node == 3);
    CHECK(logged(a, "scale-down", "ScaleDown"));
  }
  SECTION("--max-scale-down-parallelism 2 caps the whole batch") {
    ClusterAutoscaler ca(three_groups(R"({"--max-scale-down-parallelism": 2})"));
    scans(ca, w.c, 0, 600 * kS);
    ProvisionerActions a = scan(ca, w.c, 610 * kS);
    REQUIRE(a.removals.size() == 2);
    CHECK(a.removals[0].node == 0);
    CHECK(a.removals[1].node == 1);
  }
  SECTION("a drain in progress uses the drain budget") {
    ClusterAutoscaler ca(three_groups());
    w.c.nodes[4].phase = NodePhase::Terminating;  // being drained, its pod still there
    scans(ca, w.c, 0, 600 * kS);
    ProvisionerActions a = scan(ca, w.c, 610 * kS);
    REQUIRE(a.removals.size() == 3);  // the three empty nodes; node 3 waits
    CHECK(a.removals[2].node == 2);
  }
}

TEST_CASE("a node not registered within --max-node-provision-time is removed and its group backs off", "[cluster-autoscaler]") {
  World w;
  ClusterAutoscaler ca(config(R"({"nodeGroups": [
      {"name": "gpu-big", "instanceType": "big", "maxSize": 4},
      {"name": "gpu-small", "instanceType": "small", "maxSize": 4}]})"));
  w.node(kBig, "gpu-big", NodePhase::Launched, 0);
  CHECK(scan(ca, w.c, 900 * kS).removals.empty());  // 0 + 15m < 900 s is false
  ProvisionerActions a = scan(ca, w.c, 910 * kS);
  REQUIRE(a.removals.size() == 1);
  CHECK(a.removals[0].node == 0);
  CHECK(a.removals[0].reason == RemovalReason::RegistrationTimeout);
  CHECK(!a.removals[0].drain);
  CHECK(logged(a, "backoff", "ScaleUpTimedOut"));
  CHECK(ca.backoff_until(0) == 910 * kS + 300 * kS);
  CHECK(scan(ca, w.c, 920 * kS).removals.empty());  // once

  // While gpu-big is backed off, a pod that either group could take goes to gpu-small.
  w.unschedulable(ca, kVllm, 925 * kS);
  a = scan(ca, w.c, 930 * kS);
  REQUIRE(a.launches.size() == 1);
  CHECK(a.launches[0].owner == "gpu-small");
}

TEST_CASE("CA halts when too many nodes are unready", "[cluster-autoscaler]") {
  World w;
  ClusterAutoscaler ca(three_groups());
  w.pod(kWhole, static_cast<int>(w.node(kBig, "other")));  // full: the pending pod needs a new node
  for (int i = 0; i < 4; ++i) w.node(kBig, "gpu-big", NodePhase::Registered, 0);  // never got their GPUs
  w.unschedulable(ca, kVllm, 0);
  // At 20 min they are past --max-node-provision-time: 4 unready of 5 > max(3, 45 % × 5 = 2.25).
  ProvisionerActions a = scan(ca, w.c, 1200 * kS);
  CHECK(logged(a, "halt", "ClusterUnhealthy"));
  CHECK(a.launches.empty());
  CHECK(a.removals.empty());

  World ok;
  ClusterAutoscaler ca2(three_groups());
  ok.pod(kWhole, static_cast<int>(ok.node(kBig, "other")));
  for (int i = 0; i < 3; ++i) ok.node(kBig, "gpu-big", NodePhase::Registered, 0);  // 3 is --ok-total-unready-count
  ok.unschedulable(ca2, kVllm, 0);
  a = scan(ca2, ok.c, 1200 * kS);
  CHECK(!logged(a, "halt", "ClusterUnhealthy"));
  CHECK(a.launches.size() == 1);
}

TEST_CASE("flags parse with their real names and values", "[cluster-autoscaler]") {
  SECTION("defaults") {
    const ClusterAutoscalerConfig c = three_groups();
    const ClusterAutoscalerFlags& f = c.flags;
    CHECK(f.scan_interval == 10 * kS);
    CHECK(f.expanders == std::vector<Expander>{Expander::LeastWaste});
    CHECK(f.scale_down_enabled);
    CHECK(f.scale_down_utilization_threshold == 0.5);
    CHECK(f.scale_down_gpu_utilization_threshold == 0.5);
    CHECK(f.scale_down_unneeded_time == 600 * kS);
    CHECK(f.scale_down_delay_after_add == 600 * kS);
    CHECK(f.scale_down_delay_after_delete == 0);
    CHECK(f.scale_down_delay_after_failure == 180 * kS);
    CHECK(f.scale_down_unready_time == 1200 * kS);
    CHECK(f.max_node_provision_time == 900 * kS);
    CHECK(f.max_scale_down_parallelism == 10);
    CHECK(f.max_drain_parallelism == 1);
    CHECK(f.max_total_unready_percentage == 45);
    CHECK(f.ok_total_unready_count == 3);
    CHECK(f.max_graceful_termination_sec == 600);
    CHECK(c.node_groups.size() == 3);
    CHECK(c.node_groups[0].capacity_type == CapacityType::OnDemand);
  }
  SECTION("every flag, as JSON values or command-line text") {
    const ClusterAutoscalerConfig c = config(R"({"flags": {
        "--scan-interval": "1m30s", "--expander": "priority,least-waste", "--scale-down-enabled": "false",
        "--scale-down-utilization-threshold": "0.6", "--scale-down-gpu-utilization-threshold": 0.25,
        "--scale-down-unneeded-time": "5m", "--scale-down-delay-after-add": "0", "--scale-down-delay-after-delete": "10s",
        "--scale-down-delay-after-failure": "1m", "--scale-down-unready-time": "1h", "--max-node-provision-time": "20m",
        "--max-scale-down-parallelism": "5", "--max-drain-parallelism": 2, "--max-total-unready-percentage": 30,
        "--ok-total-unready-count": 1, "--max-graceful-termination-sec": 120},
      "nodeGroups": [{"name": "g", "instanceType": "big", "capacityType": "spot", "zone": "z1", "minSize": 1, "maxSize": 3,
                      "labels": {"pool": "gpu"}, "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}], "priority": 5}]})");
    const ClusterAutoscalerFlags& f = c.flags;
    CHECK(f.scan_interval == 90 * kS);
    CHECK(f.expanders == std::vector<Expander>{Expander::Priority, Expander::LeastWaste});
    CHECK(!f.scale_down_enabled);
    CHECK(f.scale_down_utilization_threshold == 0.6);
    CHECK(f.scale_down_gpu_utilization_threshold == 0.25);
    CHECK(f.scale_down_unneeded_time == 300 * kS);
    CHECK(f.scale_down_delay_after_add == 0);
    CHECK(f.scale_down_delay_after_delete == 10 * kS);
    CHECK(f.scale_down_delay_after_failure == 60 * kS);
    CHECK(f.scale_down_unready_time == 3600 * kS);
    CHECK(f.max_node_provision_time == 1200 * kS);
    CHECK(f.max_scale_down_parallelism == 5);
    CHECK(f.max_drain_parallelism == 2);
    CHECK(f.max_total_unready_percentage == 30);
    CHECK(f.ok_total_unready_count == 1);
    CHECK(f.max_graceful_termination_sec == 120);
    const NodeGroup& g = c.node_groups[0];
    CHECK(g.capacity_type == CapacityType::Spot);
    CHECK(g.min_size == 1);
    CHECK(g.max_size == 3);
    CHECK(g.labels.at("pool") == "gpu");
    REQUIRE(g.taints.size() == 1);
    CHECK(g.taints[0].key == "nvidia.com/gpu");
    CHECK(g.priority == 5);
  }
  SECTION("errors name the JSON path") {
    std::string msg;
    CHECK(error_path([] { three_groups(R"({"--scan-intervall": "10s"})"); }, &msg) == "/ca/flags/--scan-intervall");
    CHECK(msg.find("--scan-interval") != std::string::npos);
    CHECK(msg.find("--max-node-provision-time") != std::string::npos);
    CHECK(error_path([] { three_groups(R"({"scan-interval": "10s"})"); }) == "/ca/flags/scan-interval");
    CHECK(error_path([] { three_groups(R"({"--scale-down-unneeded-time": "10 minutes"})"); }) ==
          "/ca/flags/--scale-down-unneeded-time");
    CHECK(error_path([] { three_groups(R"({"--scale-down-unneeded-time": 600})"); }) == "/ca/flags/--scale-down-unneeded-time");
    CHECK(error_path([] { three_groups(R"({"--scale-down-gpu-utilization-threshold": 1.5})"); }) ==
          "/ca/flags/--scale-down-gpu-utilization-threshold");
    CHECK(error_path([] { three_groups(R"({"--max-drain-parallelism": "one"})"); }) == "/ca/flags/--max-drain-parallelism");
    CHECK(error_path([] { three_groups(R"({"--expander": "fastest"})"); }) == "/ca/flags/--expander");
    CHECK(error_path([] { three_groups(R"({"--expander": "grpc"})"); }) == "/ca/flags/--expander");
    CHECK(error_path([] { three_groups(R"({"--scan-interval": "0s"})"); }) == "/ca/flags/--scan-interval");
    CHECK(error_path([] { config(R"({"flags": {}})"); }) == "/ca/nodeGroups");
    CHECK(error_path([] { config(R"({"nodeGroups": [{"name": "g", "instance_type": "big"}]})"); }) ==
          "/ca/nodeGroups/0/instance_type");
    CHECK(error_path([] { config(R"({"nodeGroups": [{"name": "g", "instanceType": "big", "minSize": 3, "maxSize": 2}]})"); }) ==
          "/ca/nodeGroups/0/minSize");
    CHECK(error_path([] { config(R"({"nodeGroups": [{"name": "g", "instanceType": "big"}, {"name": "g", "instanceType": "big"}]})"); }) ==
          "/ca/nodeGroups/1/name");
    World w;
    CHECK(error_path([&] { check_node_groups(config(R"({"nodeGroups": [{"name": "g", "instanceType": "p9"}]})"), w.c.types, "/ca"); }) ==
          "/ca/nodeGroups/0/instanceType");
    CHECK(error_path([&] { check_node_groups(config(R"({"nodeGroups": [{"name": "g", "instanceType": "big", "zone": "z9"}]})"), w.c.types, "/ca"); }) ==
          "/ca/nodeGroups/0/zone");
    CHECK(error_path([&] { check_node_groups(three_groups(), w.c.types, "/ca"); }) == "<no error>");
  }
}

TEST_CASE("without the GPU label on the node group a fresh GPU node looks ready and empty, and CA over-provisions",
          "[cluster-autoscaler]") {
  // cloudprovider/aws/README.md: the user labels GPU node groups k8s.amazonaws.com/accelerator; the
  // provider does not. A registered node whose device plugin has not advertised nvidia.com/gpu yet is then
  // an Upcoming (ResourceUnready) node with the label, and a Ready node with 0 GPUs without it.
  for (const bool labelled : {true, false}) {
    World w;
    const std::string labels = labelled ? R"(, "labels": {"k8s.amazonaws.com/accelerator": "nvidia-h100"})" : "";
    ClusterAutoscaler ca(config(R"({"nodeGroups": [{"name": "gpu-big", "instanceType": "big", "maxSize": 4)" + labels + "}]}"));
    // The node as the cluster model makes it: the type's well-known labels plus the group's.
    const std::uint32_t fresh = w.node(kBig, "gpu-big", NodePhase::Registered, 0);
    w.c.nodes[fresh].labels = instance_labels(w.c.types[kBig], CapacityType::OnDemand, "z1");
    for (const auto& kv : ca.config().node_groups[0].labels) w.c.nodes[fresh].labels[kv.first] = kv.second;
    for (int i = 0; i < 4; ++i) w.unschedulable(ca, kVllm, 5 * kS);
    CHECK(ca_node_state(w.c.nodes[fresh], ca.config().flags, 10 * kS) == (labelled ? CaNodeState::Upcoming : CaNodeState::Ready));
    const ProvisionerActions a = scan(ca, w.c, 10 * kS);
    INFO("labelled " << labelled);
    if (labelled) {
      CHECK(a.launches.empty());  // the 4 pods wait for the 8 GPUs on their way
      CHECK(logged(a, "no-scale-up", "PodsFitUpcomingNodes"));
    } else {
      CHECK(a.launches.size() == 1);  // a second 8-GPU node for pods the first will hold in a minute
      CHECK(logged(a, "scale-up", "TriggeredScaleUp"));
    }
  }
}

TEST_CASE("a launch the cloud refuses backs the node group off: 5 min, doubling to 30 min", "[cluster-autoscaler]") {
  // utils/backoff/exponential_backoff.go with --initial-node-group-backoff-duration 5m and
  // --max-node-group-backoff-duration 30m; a failure while backed off does not double it. CA sees the
  // failure at its next scan.
  World w;
  ClusterAutoscaler ca(config(R"({"flags": {"--expander": "priority"}, "nodeGroups": [
      {"name": "gpu-big", "instanceType": "big", "maxSize": 4, "priority": 10},
      {"name": "gpu-small", "instanceType": "small", "maxSize": 4, "priority": 1}]})"));
  w.unschedulable(ca, kVllm, 0);
  ProvisionerActions a = scan(ca, w.c, 0);
  REQUIRE(a.launches.size() == 1);
  CHECK(a.launches[0].owner == "gpu-big");
  const LaunchOutcome refused{a.launches[0], {LaunchOption{kBig, CapacityType::OnDemand, "z1"}}, -1};
  ca.on_insufficient_capacity(refused, 0);
  ca.on_insufficient_capacity(refused, 0);  // two nodes of one scale-up: one backoff
  a = scan(ca, w.c, 10 * kS);
  CHECK(ca.backoff_until(0) == 310 * kS);
  CHECK(logged(a, "backoff", "FailedScaleUp"));
  // The same scan skips the backed-off group: the pod goes to gpu-small.
  REQUIRE(a.launches.size() == 1);
  CHECK(a.launches[0].owner == "gpu-small");

  // Each later failure, seen once the last backoff is over, doubles it up to 30 min.
  Micros t = 310 * kS;
  const auto fail_seen_at = [&](Micros seen) {
    while (ca.next_wakeup() < seen) scan(ca, w.c, ca.next_wakeup());
    ca.on_insufficient_capacity(refused, seen - kS);
    scan(ca, w.c, seen);
  };
  for (Micros d : {600, 1200, 1800, 1800}) {
    fail_seen_at(t + 10 * kS);
    CHECK(ca.backoff_until(0) == t + 10 * kS + d * kS);
    t = ca.backoff_until(0);
  }
  // A failure while backed off keeps the duration (from now).
  fail_seen_at(t - 90 * kS);
  CHECK(ca.backoff_until(0) == t - 90 * kS + 1800 * kS);
}
