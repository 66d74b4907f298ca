// Whole runs in cluster mode (core/src/simulation.cpp with the cluster model, Karpenter and Cluster
// Autoscaler): consolidation evictions and what they cost in requests, the web tier and the GPU taint,
// Cluster Autoscaler's scale-up and its unneeded-time, node cost, determinism, step coalescing, and
// cluster input errors that name their path. Runs are hours long, not days: the suite also runs as WASM.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <regex>
#include <string>

#include "gpuscale/errors.hpp"
#include "exercises/exercise.hpp"
#include "provisioning/karpenter/nodepool.hpp"
#include "sim/simulation.hpp"
#include "test_support.hpp"

using namespace gpuscale;
using gpuscale::testing::read_text;

namespace {

// The golden Karpenter trap (WhenEmptyOrUnderutilized / 0s on the GPU pool) cut to its first 4 hours:
// the first consolidation eviction comes at about 3.4 h, and 4 h keep the runs well under a second.
Json trap_doc() {
  Json doc = Json::parse(read_text("scenarios/golden-karpenter-trap.json"));
  doc["duration_s"] = 4 * 3600;
  return doc;
}

Json& gpu_pool_spec(Json& doc) { return doc["cluster"]["nodepools"][0]["spec"]; }

RunResult run(const Json& doc) { return run_simulation(parse_scenario(doc)); }

const RunResult& trap_run() {
  static const RunResult r = run(trap_doc());
  return r;
}

// The golden Cluster Autoscaler scenario with a heavier burst (6 req/s for 30 min), so the HPA needs
// more replicas than one p5.48xlarge holds: 10 min quiet, the burst, then 50 min quiet again.
Json ca_doc() {
  Json doc = Json::parse(read_text("scenarios/golden-cluster-autoscaler.json"));
  doc["duration_s"] = 5400;
  doc["workload"]["phases"] = Json::parse(R"([{"duration_s": 600, "rate_rps": 0.6}, {"duration_s": 1800, "rate_rps": 6},
                                              {"duration_s": 3000, "rate_rps": 0.6}])");
  return doc;
}

std::int64_t count(const RunResult& r, const std::function<bool(const DecisionRecord&)>& pred) {
  std::int64_t n = 0;
  for (const auto& d : r.decisions) n += pred(d) ? 1 : 0;
  return n;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

void check_error(const Json& doc, const std::string& path) {
  try {
    run(doc);
    FAIL("accepted " << doc.at("cluster").dump());
  } catch (const InputError& e) {
    INFO(e.what());
    CHECK(e.path() == path);
    CHECK_FALSE(e.message().empty());
  }
}

}  // namespace

TEST_CASE("the Karpenter trap evicts running replicas; WhenEmpty with consolidateAfter 1h does not", "[cluster-sim]") {
  const Summary& trap = trap_run().summary;
  CHECK(trap.num_replica_evictions > 0);
  CHECK(trap.cluster.pod_evictions >= trap.num_replica_evictions);
  // The lifecycle log tells each eviction with its reason.
  CHECK(count(trap_run(), [](const DecisionRecord& d) {
          return d.controller == "lifecycle" && contains(d.explanation, "evicted (Underutilized)");
        }) == trap.num_replica_evictions);
  // Requests in flight on an evicted replica fail, and count among the drops.
  CHECK(trap.num_requests_failed_by_eviction > 0);
  CHECK(trap.num_requests_failed_by_eviction <= trap.num_dropped);
  CHECK(trap.num_completed + trap.num_dropped + trap.num_unfinished == trap.num_requests);

  Json doc = trap_doc();
  gpu_pool_spec(doc)["disruption"] = {{"consolidationPolicy", "WhenEmpty"}, {"consolidateAfter", "1h"}};
  const Summary safe = run(doc).summary;
  CHECK(safe.num_replica_evictions == 0);
  CHECK(safe.cluster.pod_evictions == 0);
  CHECK(safe.num_requests_failed_by_eviction == 0);
  CHECK(safe.num_dropped < trap.num_dropped);
  CHECK(safe.num_requests == trap.num_requests);  // the same arrivals
}

TEST_CASE("retry_evicted_requests sends an evicted replica's requests back to the gateway", "[cluster-sim]") {
  Json doc = trap_doc();
  doc["cluster"]["retry_evicted_requests"] = true;
  const Summary retry = run(doc).summary;
  const Summary& lost = trap_run().summary;
  CHECK(retry.num_replica_evictions > 0);
  CHECK(retry.num_requests_failed_by_eviction == 0);
  // What the evictions failed in the other run is what retrying saves; those requests may still time
  // out at the gateway (client_timeout), so the total dropped need not fall.
  CHECK(lost.num_requests_failed_by_eviction > 0);
  CHECK(retry.requests_failed_by_cause[static_cast<int>(FailureCause::ClientTimeout)] == retry.num_dropped);
  CHECK(retry.num_completed + retry.num_dropped + retry.num_rejected + retry.num_unfinished == retry.num_requests);
}

TEST_CASE("a CPU web tier lands on GPU nodes unless the GPU pool is tainted", "[cluster-sim]") {
  Json doc = trap_doc();
  doc["duration_s"] = 600;  // the web pods are placed in the first seconds
  CHECK(run(doc).summary.cluster.non_gpu_pods_on_gpu_nodes == 0);
  gpu_pool_spec(doc)["template"]["spec"].erase("taints");
  const RunResult open = run(doc);
  // All six web pods go to the starting p5.48xlarge.
  CHECK(open.summary.cluster.non_gpu_pods_on_gpu_nodes == 6);
  CHECK(count(open, [](const DecisionRecord& d) { return d.reason == "NonGpuPodOnGpuNode"; }) == 6);
}

// The AWS provider sets karpenter.k8s.aws/instance-gpu-count only on GPU types, so the golden scenario's
// "general" pool (instance-gpu-count DoesNotExist) offers the CPU types and the web tier runs there.
TEST_CASE("with the GPU taint the web tier runs on the general pool's CPU nodes", "[cluster-sim]") {
  Json doc = trap_doc();
  doc["duration_s"] = 1800;
  const RunResult r = run(doc);
  CHECK(count(r, [](const DecisionRecord& d) {
          return d.controller == "kube-scheduler" && d.reason == "Scheduled" && contains(d.explanation, "(web)") &&
                 contains(d.explanation, "(general)");
        }) == 6);
}

TEST_CASE("Cluster Autoscaler adds GPU nodes under load and removes one only after --scale-down-unneeded-time",
          "[cluster-sim]") {
  for (const char* unneeded : {"5m", "15m"}) {
    Json doc = ca_doc();
    doc["cluster"]["cluster_autoscaler"]["flags"]["--scale-down-unneeded-time"] = unneeded;
    const Micros limit = parse_duration(unneeded, "");
    const RunResult r = run(doc);
    INFO("--scale-down-unneeded-time " << unneeded);
    // Scale-up: more than one p5.48xlarge's worth of GPUs at some point (one node all along is 8 × 1.5 h).
    CHECK(count(r, [](const DecisionRecord& d) {
            return d.reason == "TriggeredScaleUp" && contains(d.explanation, "gpu-p5 (p5.48xlarge") &&
                   contains(d.explanation, "first fit: 1 new node");
          }) > 0);
    CHECK(r.summary.cluster.gpu_hours_allocatable > 8 * 1.5 + 1);
    CHECK(r.summary.peak_replicas > 4);

    // Each GPU node removed was unneeded since the last ScaleDownCandidate note about it, longer than the flag.
    std::map<std::string, double> unneeded_since;  // node → since (s)
    const std::regex since_re("^unneeded: node (\\d+) \\(p5\\.48xlarge[^)]*\\) unneeded since t=([0-9.]+) s");
    const std::regex removed_re("^scale-down: node (\\d+) \\(p5\\.48xlarge");
    int removed = 0;
    for (const auto& d : r.decisions) {
      if (d.controller != "cluster-autoscaler") continue;
      std::smatch m;
      if (std::regex_search(d.explanation, m, since_re)) unneeded_since[m[1]] = std::stod(m[2]);
      if (std::regex_search(d.explanation, m, removed_re)) {
        ++removed;
        INFO(d.explanation);
        REQUIRE(unneeded_since.count(m[1]) == 1);
        CHECK(seconds_to_micros(d.t_s - unneeded_since[m[1]]) > limit);
      }
    }
    CHECK(removed > 0);
  }
}

TEST_CASE("node cost is the sum of node-hours times each node's price", "[cluster-sim]") {
  // The CA scenario has p5.48xlarge (8 GPUs, $55.04/h) and m7i.4xlarge (no GPU, $0.8064/h) nodes, all
  // on demand: the GPU-hours tell the p5 node-hours, the rest are m7i node-hours.
  const RunResult r = run(ca_doc());
  const Summary& s = r.summary;
  const double p5_hours = s.cluster.gpu_hours_allocatable / 8;
  const double m7i_hours = s.cluster.node_hours - p5_hours;
  CHECK(p5_hours > 1.5);
  CHECK(m7i_hours > 0);
  CHECK(s.cluster.node_cost_usd == Approx(p5_hours * 55.04 + m7i_hours * 0.8064));
  CHECK(s.cost_usd == s.cluster.node_cost_usd);  // in cluster mode the bill is the nodes
  CHECK(s.cluster.gpu_hours_requested <= s.cluster.gpu_hours_allocatable);
  // The pods' GPU-hours are the replicas' (2 GPUs each) while bound.
  CHECK(s.cluster.gpu_hours_requested <= s.gpu_hours + 1e-9);

  // The trap: its GPU nodes are p5.48xlarge on demand; any other node is a CPU type of the general pool,
  // at most $0.8064/h (m7i.4xlarge on demand).
  const Summary& t = trap_run().summary;
  const double gpu_node_hours = t.cluster.gpu_hours_allocatable / 8;
  CHECK(gpu_node_hours > 4);
  CHECK(t.cluster.node_cost_usd >= Approx(gpu_node_hours * 55.04));
  CHECK(t.cluster.node_cost_usd - gpu_node_hours * 55.04 <= (t.cluster.node_hours - gpu_node_hours) * 0.8064 + 1e-6);
}

TEST_CASE("cluster runs are deterministic", "[cluster-sim]") {
  const Json a = result_to_json(trap_run(), parse_scenario(trap_doc()));
  const Json b = result_to_json(run(trap_doc()), parse_scenario(trap_doc()));
  CHECK(a.dump() == b.dump());
}

TEST_CASE("step coalescing changes only the number of events in cluster mode", "[cluster-sim]") {
  for (const Json& base : {trap_doc(), ca_doc()}) {
    Json off = base;
    off["engine"]["step_coalescing"] = false;
    const Scenario s_on = parse_scenario(base), s_off = parse_scenario(off);
    const RunResult on_run = run_simulation(s_on), off_run = run_simulation(s_off);
    CHECK(on_run.num_events < off_run.num_events);
    Json on_json = result_to_json(on_run, s_on), off_json = result_to_json(off_run, s_off);
    on_json.erase("num_events");
    off_json.erase("num_events");
    CHECK(on_json.dump() == off_json.dump());
  }
}

TEST_CASE("bad cluster input is an error that names its path", "[cluster-sim]") {
  Json doc = trap_doc();
  doc["duration_s"] = 60;

  Json bad = doc;
  gpu_pool_spec(bad)["disruption"]["consolidateAfter"] = "1hr";
  check_error(bad, "/cluster/nodepools/0/spec/disruption/consolidateAfter");
  bad = doc;
  gpu_pool_spec(bad)["template"]["spec"]["requirements"][0]["operator"] = "Within";
  check_error(bad, "/cluster/nodepools/0/spec/template/spec/requirements/0/operator");
  bad = doc;
  bad["cluster"]["nodepools"][1]["spec"]["weight"] = 1000;
  check_error(bad, "/cluster/nodepools/1/spec/weight");

  bad = doc;
  bad["cluster"].erase("nodepools");
  check_error(bad, "/cluster/nodepools");
  bad["cluster"]["nodepools"] = Json::array();
  check_error(bad, "/cluster/nodepools");

  bad = doc;
  bad["cluster"]["initial_nodes"] = Json::parse(R"([{"instance_type": "p9.huge", "count": 1}])");
  check_error(bad, "/cluster/initial_nodes/0/instance_type");
  bad["cluster"]["initial_nodes"] = Json::parse(R"([{"instance_type": "p5.48xlarge", "owner": "nobody"}])");
  check_error(bad, "/cluster/initial_nodes/0/owner");

  Json ca = ca_doc();
  ca["duration_s"] = 60;
  bad = ca;
  bad["cluster"]["cluster_autoscaler"]["flags"]["--bogus"] = "1";
  check_error(bad, "/cluster/cluster_autoscaler/flags/--bogus");
  bad = ca;
  bad["cluster"]["cluster_autoscaler"]["nodeGroups"][0]["instanceType"] = "p9.huge";
  check_error(bad, "/cluster/cluster_autoscaler/nodeGroups/0/instanceType");
  bad = ca;
  bad["cluster"]["nodepools"] = doc["cluster"]["nodepools"];
  check_error(bad, "/cluster/nodepools");  // only used with karpenter
  bad = ca;
  bad["cluster"]["workloads"][0]["pod"]["cpu"] = "lots";
  check_error(bad, "/cluster/workloads/0/pod/cpu");
  {
    Json doc = trap_doc();
    doc["cluster"]["spot_reclaims"] = Json::parse(R"([{"fraction": 0.5}])");
    check_error(doc, "/cluster/spot_reclaims/0/at_s");
    doc["cluster"]["spot_reclaims"] = Json::parse(R"([{"at_s": 60, "fraction": 0}])");
    check_error(doc, "/cluster/spot_reclaims/0/fraction");
    doc["cluster"]["spot_reclaims"] = Json::parse(R"([{"at_s": 60, "instance_type": "p9.huge"}])");
    check_error(doc, "/cluster/spot_reclaims/0/instance_type");
    doc["cluster"]["spot_reclaims"] = Json::parse(R"([{"at_s": 60, "nodes": 2}])");
    check_error(doc, "/cluster/spot_reclaims/0/nodes");
    doc["cluster"].erase("spot_reclaims");
    doc["cluster"]["insufficient_capacity"] = Json::parse(R"([{"instance_type": "p5.48xlarge", "probability": 1, "from_s": 600, "until_s": 600}])");
    check_error(doc, "/cluster/insufficient_capacity/0/until_s");
  }
}

TEST_CASE("cluster presets switch a scenario to a real cluster with one field", "[cluster-sim]") {
  // The playground's "Node provisioner" menu: data/cluster-presets.json. The lesson's burst at 40×
  // needs 16 replicas, so four p5.48xlarge nodes come and go.
  auto preset_run = [](const char* name) {
    Json doc = Json::parse(R"({"workload": {"rate_scale": 40}})");
    doc["cluster"]["preset"] = name;
    return run(doc);
  };
  const RunResult when_empty = preset_run("karpenter_when_empty");
  const RunResult trap = preset_run("karpenter_underutilized");
  const RunResult ca = preset_run("cluster_autoscaler");
  const RunResult fixed = preset_run("none");
  for (const RunResult* r : {&when_empty, &trap, &ca}) {
    CHECK(r->summary.cluster.nodes_launched >= 4);
    CHECK(r->summary.cluster.node_cost_usd > 0);
    CHECK(r->summary.cost_usd == r->summary.cluster.node_cost_usd);
    CHECK_FALSE(r->series.nodes.empty());
  }
  CHECK(fixed.series.nodes.empty());
  CHECK(fixed.summary.cluster.nodes_launched == 0);
  // The provisioners log their decisions under their own names.
  auto logged = [](const RunResult& r, const std::string& prefix) {
    return count(r, [&](const DecisionRecord& d) { return d.controller.rfind(prefix, 0) == 0; });
  };
  CHECK(logged(when_empty, "karpenter") > 0);
  CHECK(logged(ca, "cluster-autoscaler") > 0);
  CHECK(logged(ca, "karpenter") == 0);
  // WhenEmpty after 1h keeps its nodes through the hour; the trap consolidates under running replicas.
  CHECK(when_empty.summary.num_replica_evictions == 0);
  CHECK(trap.summary.num_replica_evictions > 0);
  CHECK(trap.summary.cluster.node_hours < when_empty.summary.cluster.node_hours);

  // The scenario's own cluster fields go on top of the preset; the provisioner comes from the preset only.
  Json doc = Json::parse(R"({"duration_s": 60, "cluster": {"preset": "karpenter_when_empty",
                             "node_startup": {"preset": "real_world"}}})");
  CHECK(parse_scenario(doc).cluster.startup.preset == StartupPreset::RealWorld);
  CHECK(parse_scenario(doc).cluster.provisioner == ProvisionerKind::Karpenter);
  doc["cluster"]["nodepools"] = Json::array();
  check_error(doc, "/cluster/nodepools");
  doc["cluster"].erase("nodepools");
  doc["cluster"]["provisioner"] = "fixed";
  check_error(doc, "/cluster/provisioner");
  doc["cluster"].erase("provisioner");
  doc["cluster"]["preset"] = "karpenter";
  check_error(doc, "/cluster/preset");
  doc["cluster"]["preset"] = 1;
  check_error(doc, "/cluster/preset");
}

TEST_CASE("a scheduled budget blocks consolidation only while its window is open", "[cluster-sim]") {
  // The trap's first eviction comes at about 3.4 h. A budget of 0 nodes from midnight for 8 h (UTC)
  // holds it back when the run starts at midnight, and not when it starts at noon.
  Json doc = trap_doc();
  Json& budgets = gpu_pool_spec(doc)["disruption"]["budgets"];
  budgets.push_back(Json::parse(R"({"nodes": "0", "reasons": ["Underutilized"], "schedule": "@daily", "duration": "8h"})"));
  doc["cluster"]["start_time"] = "2026-01-05T00:00:00Z";
  const RunResult night = run(doc);
  doc["cluster"]["start_time"] = "2026-01-05T12:00:00Z";
  const RunResult noon = run(doc);
  CHECK(trap_run().summary.num_replica_evictions > 0);
  CHECK(night.summary.num_replica_evictions == 0);
  CHECK(noon.summary.num_replica_evictions == trap_run().summary.num_replica_evictions);
  CHECK(count(night, [](const DecisionRecord& d) { return contains(d.explanation, "(active now)"); }) > 0);
  CHECK(count(noon, [](const DecisionRecord& d) { return contains(d.explanation, "(not active now)"); }) > 0);

  doc["cluster"]["start_time"] = "2026-02-30T00:00:00Z";
  check_error(doc, "/cluster/start_time");
  doc["cluster"]["start_time"] = "2026-01-05 00:00";
  check_error(doc, "/cluster/start_time");
}

TEST_CASE("a NodePool's terminationGracePeriod ends a drain that a PodDisruptionBudget holds up", "[cluster-sim][termination]") {
  // The reference pool (WhenEmpty / 1h) with expireAfter 1h and a PDB that never allows an eviction:
  // expiry drains the starting node at 1 h and waits on the PDB for ever, unless terminationGracePeriod
  // (10m) bounds it. Then, 30 s (the pods' grace period) before the 10 minutes end, what is left is
  // deleted, PDB or not, and the instance goes at 1 h 10 m.
  Json doc = trap_doc();
  gpu_pool_spec(doc)["disruption"] = Json::parse(R"({"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1h"})");
  gpu_pool_spec(doc)["template"]["spec"]["expireAfter"] = "1h";
  doc["cluster"]["inference_pdb"] = Json::parse(R"({"minAvailable": "100%"})");
  const RunResult forever = run(doc);
  gpu_pool_spec(doc)["template"]["spec"]["terminationGracePeriod"] = "10m";
  const RunResult bounded = run(doc);
  const auto expired = [](const RunResult& r) {
    return r.summary.replica_evictions_by_reason[static_cast<int>(RemovalReason::Expired)];
  };
  CHECK(expired(forever) == 0);  // the PDB refuses every eviction; the node stays Terminating
  CHECK(count(forever, [](const DecisionRecord& d) { return contains(d.explanation, "the NodePool's terminationGracePeriod runs out"); }) == 0);
  REQUIRE(expired(bounded) > 0);
  const auto deadline = std::find_if(bounded.decisions.begin(), bounded.decisions.end(), [](const DecisionRecord& d) {
    return contains(d.explanation, "the NodePool's terminationGracePeriod runs out at t = 4200.0 s");
  });
  REQUIRE(deadline != bounded.decisions.end());
  CHECK(deadline->t_s == Approx(3600 + 600 - 30));
  CHECK(contains(deadline->explanation, "PodDisruptionBudget or not"));
  CHECK(count(bounded, [](const DecisionRecord& d) {
          return contains(d.explanation, "terminationGracePeriod 600.0 s: what is left is deleted from t = 4170.0 s and the instance goes at t = 4200.0 s");
        }) > 0);
}

TEST_CASE("a PodDisruptionBudget paces the trap's drains and, at 100 %, keeps Karpenter away", "[cluster-sim]") {
  // The trap over 6 h: without a PDB every consolidation evicts at once. maxUnavailable 1 lets Karpenter
  // pick a node only while one replica may go, and its drain evicts the next replica only when the
  // evicted one's successor is Ready; minAvailable 100% never allows a disruption.
  Json doc = trap_doc();
  doc["duration_s"] = 6 * 3600;
  const RunResult none = run(doc);
  doc["cluster"]["inference_pdb"] = Json::parse(R"({"maxUnavailable": 1})");
  const RunResult one = run(doc);
  doc["cluster"]["inference_pdb"] = Json::parse(R"({"minAvailable": "100%"})");
  const RunResult all = run(doc);
  CHECK(none.summary.num_replica_evictions > 0);
  CHECK(one.summary.num_replica_evictions > 0);
  // No ordering of the eviction counts is asserted: with v1.14's savings-ratio order Karpenter picks the
  // busier nodes the PDB then drains one replica at a time (6 h: 16 evictions with maxUnavailable 1, 13
  // without; ≤ v1.13's fewest-pods-first order gave 7 and 14).
  // Paced: without a budget a node's replicas are evicted together; with maxUnavailable 1 never two at once.
  const auto most_evicted_at_once = [](const RunResult& r) {
    std::map<double, int> at;
    int most = 0;
    for (const auto& d : r.decisions) {
      if (d.controller == "lifecycle" && d.reason == "Terminating" && contains(d.explanation, "evicted (")) most = std::max(most, ++at[d.t_s]);
    }
    return most;
  };
  CHECK(most_evicted_at_once(none) > 1);
  CHECK(most_evicted_at_once(one) == 1);
  CHECK(count(one, [](const DecisionRecord& d) { return contains(d.explanation, "wait (PodDisruptionBudget maxUnavailable 1"); }) > 0);
  CHECK(count(one, [](const DecisionRecord& d) { return contains(d.explanation, "the drain evicted 1 more pods"); }) > 0);
  CHECK(all.summary.num_replica_evictions == 0);
  CHECK(count(all, [](const DecisionRecord& d) {
          return contains(d.explanation, "is protected by PodDisruptionBudget minAvailable 100%");
        }) > 0);
  doc["cluster"]["inference_pdb"] = Json::parse(R"({"minAvailable": 1, "maxUnavailable": 1})");
  check_error(doc, "/cluster/inference_pdb");

  // Cluster Autoscaler's scale-down skips a node whose pods the budget protects (NotEnoughPdb).
  Json ca = ca_doc();
  ca["cluster"]["inference_pdb"] = Json::parse(R"({"minAvailable": "100%"})");
  const RunResult ca_run = run(ca);
  CHECK(count(ca_run, [](const DecisionRecord& d) { return d.reason == "NotEnoughPdb"; }) > 0);
  CHECK(ca_run.summary.num_replica_evictions == 0);
}

TEST_CASE("Cluster Autoscaler gives up a drain the PodDisruptionBudget holds up past --max-pod-eviction-time",
          "[cluster-sim]") {
  // Two nodes, three fixed replicas: one node holds two (4/8 GPUs, under a 0.6 threshold), the other
  // one. kube-scheduler breaks the ties between the equally empty nodes at random, so which node CA
  // drains first depends on the seed: the seeds where it is the node with two replicas are the case.
  // The budget (maxUnavailable 1) lets one replica go, and its successor needs more than 2 minutes
  // (300 s of weights) to be Ready, so the drain fails, the node goes back into service and scale-down
  // pauses; once the successor is Ready the next attempt succeeds.
  Json doc = Json::parse(R"({"duration_s": 1800, "cold_start": {"model_load_s": 300},
    "workload": {"preset": "steady", "rate_scale": 0.5},
    "autoscaler": {"strategy": "fixed", "replicas": 3},
    "cluster": {"provisioner": "cluster_autoscaler",
      "cluster_autoscaler": {"flags": {"--scale-down-unneeded-time": "1m", "--scale-down-gpu-utilization-threshold": 0.6},
        "nodeGroups": [{"name": "gpu-p5", "instanceType": "p5.48xlarge", "minSize": 0, "maxSize": 4,
                        "labels": {"k8s.amazonaws.com/accelerator": "nvidia-h100"},
                        "taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]}]},
      "initial_nodes": [{"instance_type": "p5.48xlarge", "count": 2}],
      "inference_pdb": {"maxUnavailable": 1}}})");
  RunResult r;
  int held_up = 0, not_held_up = 0;
  for (int seed = 1; seed <= 12; ++seed) {
    doc["seed"] = seed;
    RunResult one = run(doc);
    const auto first = std::find_if(one.decisions.begin(), one.decisions.end(), [](const DecisionRecord& d) {
      return d.controller == "cluster-autoscaler" && contains(d.explanation, "delete: node ");
    });
    REQUIRE(first != one.decisions.end());
    if (!contains(first->explanation, "wait (")) {
      ++not_held_up;  // it drained the node with one replica: nothing for the budget to hold up
    } else if (held_up++ == 0) {
      r = std::move(one);
    }
  }
  CHECK(not_held_up > 0);  // both layouts occur
  REQUIRE(held_up > 0);
  std::vector<const DecisionRecord*> failed, removed;
  std::string drained;  // "delete: node N " of the first removal
  for (const auto& d : r.decisions) {
    if (d.reason == "ScaleDownFailed") failed.push_back(&d);
    if (d.controller != "cluster-autoscaler" || !contains(d.explanation, "delete: node ") || !contains(d.explanation, "removed")) continue;
    if (drained.empty()) drained = d.explanation.substr(0, d.explanation.find(" (") + 1);
    if (contains(d.explanation, drained)) removed.push_back(&d);
  }
  REQUIRE(failed.size() == 1);
  REQUIRE(removed.size() == 2);
  CHECK(contains(removed[0]->explanation, "for at most 120.0 s"));
  CHECK(failed[0]->t_s == removed[0]->t_s + 120);  // --max-pod-eviction-time 2m
  CHECK(removed[1]->t_s > failed[0]->t_s + 180);    // after --scale-down-delay-after-failure 3m
  CHECK(contains(removed[1]->explanation, "the instance goes once its pods have stopped"));
  CHECK(r.summary.num_replica_evictions == 2);
}

// ---- one termination path: whoever deletes the pod ----------------------------------------------

TEST_CASE("a scale-down and a consolidation eviction take the same termination path", "[cluster-sim][termination]") {
  Json doc = trap_doc();
  doc["cluster"]["inference_pod"] = Json::parse(R"({"lifecycle": {"preStop": {"sleep": {"seconds": 20}}}})");
  const RunResult r = run(doc);
  const Summary& s = r.summary;
  int scale_downs = 0, evictions = 0;
  for (const auto& d : r.decisions) {
    if (d.controller != "lifecycle" || d.reason != "Terminating" || contains(d.explanation, "while Pending")) continue;
    INFO(d.explanation);
    const bool evicted = contains(d.explanation, "evicted (Underutilized)");
    scale_downs += contains(d.explanation, "deleted by the ReplicaSet (scale-down)") ? 1 : 0;
    evictions += evicted ? 1 : 0;
    // Both: the endpoint goes now, SIGTERM after the 20 s sleep, SIGKILL at the 30 s grace period.
    char sigterm[64], sigkill[64];
    std::snprintf(sigterm, sizeof sigterm, "SIGTERM at t = %.1f s", d.t_s + 20);
    std::snprintf(sigkill, sizeof sigkill, "SIGKILL at t = %.1f s", d.t_s + 30);
    CHECK(contains(d.explanation, "endpoint removed"));
    CHECK(contains(d.explanation, "preStop sleep 20 s"));
    CHECK(contains(d.explanation, sigterm));
    CHECK(contains(d.explanation, sigkill));
  }
  CHECK(scale_downs > 0);
  CHECK(evictions == s.num_replica_evictions);
  CHECK(evictions > 0);
  // What failed, by cause: the consolidation's failures are the run's eviction failures.
  std::int64_t sum = 0;
  for (std::int64_t n : s.requests_failed_by_cause) sum += n;
  CHECK(sum == s.num_dropped);
  CHECK(s.num_requests_failed_by_eviction == s.requests_failed_by_cause[static_cast<int>(FailureCause::Consolidation)]);
  // Same deleter, same arithmetic: without the hook both kinds fail more at SIGTERM.
  const Summary& stock = trap_run().summary;
  CHECK(stock.requests_failed_by_cause[static_cast<int>(FailureCause::ScaleDown)] >
        s.requests_failed_by_cause[static_cast<int>(FailureCause::ScaleDown)]);
  // Per eviction (the two runs consolidate different nodes, as their replicas differ).
  REQUIRE(stock.num_replica_evictions > 0);
  const auto per_eviction = [](const Summary& x) {
    return static_cast<double>(x.requests_failed_by_cause[static_cast<int>(FailureCause::Consolidation)]) /
           static_cast<double>(x.num_replica_evictions);
  };
  CHECK(per_eviction(stock) > per_eviction(s));
}

TEST_CASE("a spot instance goes at the end of its 2-minute notice whatever the grace period", "[cluster-sim][termination]") {
  Json doc = trap_doc();
  // Spot GPU nodes, interrupted often; a 10-minute preStop sleep the notice cannot honour.
  for (auto& req : gpu_pool_spec(doc)["template"]["spec"]["requirements"]) {
    if (req["key"] == "karpenter.sh/capacity-type") req["values"] = {"spot"};
  }
  doc["cluster"]["spot_interruptions_per_node_hour"] = 4;
  doc["cluster"]["initial_nodes"] = Json::parse(R"([{"instance_type": "p5.48xlarge", "capacity_type": "spot", "owner": "gpu-h100"},
                                                     {"instance_type": "m7i.4xlarge", "owner": "general"}])");
  doc["cluster"]["inference_pod"] = Json::parse(R"({"terminationGracePeriodSeconds": 900, "lifecycle": {"preStop": {"sleep": {"seconds": 600}}}})");
  const RunResult r = run(doc);
  REQUIRE(r.summary.cluster.spot_interruptions > 0);
  std::map<std::string, double> noticed;  // replica → when its eviction (the notice) came
  int killed = 0;
  for (const auto& d : r.decisions) {
    if (d.controller != "lifecycle") continue;
    const std::string replica = d.explanation.substr(0, d.explanation.find(' ', 8));
    if (d.reason == "Terminating" && contains(d.explanation, "evicted (Interrupted)")) noticed[replica] = d.t_s;
    if (d.reason == "InstanceTerminated" && noticed.count(replica)) {
      INFO(d.explanation);
      CHECK(d.t_s == Approx(noticed[replica] + 120));
      CHECK(contains(d.explanation, "(spot)"));
      ++killed;
    }
  }
  CHECK(killed > 0);
  // The sleep let what they held finish within the notice; without it stock vLLM fails it at the notice.
  doc["cluster"].erase("inference_pod");
  const RunResult stock = run(doc);
  REQUIRE(stock.summary.cluster.spot_interruptions > 0);
  CHECK(stock.summary.requests_failed_by_cause[static_cast<int>(FailureCause::Spot)] > 0);
  CHECK(stock.summary.num_requests_failed_by_eviction >= stock.summary.requests_failed_by_cause[static_cast<int>(FailureCause::Spot)]);
}

namespace {

// The trap's first 4 hours on spot GPU nodes (two at the start) with `values` as the pool's capacity
// types, and a reclaim of `fraction` of the spot p5.48xlarge instances at 1 h.
Json reclaim_doc(const Json& values, double fraction) {
  Json doc = trap_doc();
  for (auto& req : gpu_pool_spec(doc)["template"]["spec"]["requirements"]) {
    if (req["key"] == "karpenter.sh/capacity-type") req["values"] = values;
  }
  doc["cluster"]["initial_nodes"] = Json::parse(R"([{"instance_type": "p5.48xlarge", "capacity_type": "spot", "count": 2, "owner": "gpu-h100"},
                                                     {"instance_type": "m7i.4xlarge", "owner": "general"}])");
  doc["cluster"]["spot_reclaims"] = Json::array({{{"at_s", 3600}, {"instance_type", "p5.48xlarge"}, {"fraction", fraction}}});
  gpu_pool_spec(doc)["disruption"] = Json::parse(R"({"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1h"})");
  return doc;
}

}  // namespace

TEST_CASE("a spot reclaim gives ceil(fraction × n) of the running spot instances, oldest first, their notice", "[cluster-sim][spot]") {
  const RunResult r = run(reclaim_doc({"spot"}, 0.5));
  // Half of the two spot nodes: one, node 0, at 1 h; the log says which and why.
  CHECK(r.summary.cluster.spot_interruptions == 1);
  const auto reclaim = std::find_if(r.decisions.begin(), r.decisions.end(), [](const DecisionRecord& d) { return contains(d.explanation, "spot-reclaim: "); });
  REQUIRE(reclaim != r.decisions.end());
  CHECK(reclaim->t_s == 3600);
  CHECK(reclaim->controller == "cloud");
  CHECK(contains(reclaim->explanation, "reclaims 1 of the 2 running spot p5.48xlarge instances (ceil(0.5 × 2)): nodes 0 get"));
  // Its replicas are counted by the removal's reason, and what they held failed as spot.
  const std::int64_t interrupted = r.summary.replica_evictions_by_reason[static_cast<int>(RemovalReason::Interrupted)];
  CHECK(interrupted > 0);
  CHECK(interrupted <= r.summary.num_replica_evictions);
  std::int64_t by_reason = 0;
  for (std::int64_t n : r.summary.replica_evictions_by_reason) by_reason += n;
  CHECK(by_reason == r.summary.num_replica_evictions);
  // Every one of them, at fraction 1.
  CHECK(run(reclaim_doc({"spot"}, 1.0)).summary.cluster.spot_interruptions == 2);
  // An on-demand pool has no spot instance to give back.
  Json od = reclaim_doc({"on-demand"}, 1.0);
  od["cluster"].erase("initial_nodes");
  CHECK(run(od).summary.cluster.spot_interruptions == 0);
}

TEST_CASE("a spot shortage after a reclaim: a spot-only pool waits, one that allows on-demand falls back", "[cluster-sim][spot]") {
  const auto shortage = [](Json doc) {
    doc["cluster"]["spot_reclaims"][0]["fraction"] = 1.0;
    doc["cluster"]["insufficient_capacity"] = Json::parse(
        R"([{"instance_type": "p5.48xlarge", "capacity_type": "spot", "probability": 1, "from_s": 3600, "until_s": 10800}])");
    return run(doc);
  };
  const RunResult spot_only = shortage(reclaim_doc({"spot"}, 1.0));
  const RunResult both = shortage(reclaim_doc({"spot", "on-demand"}, 1.0));
  // Both lose their spot nodes; the spot-only pool's replacements are refused until the shortage ends,
  // and Karpenter says why the pods wait.
  CHECK(spot_only.summary.cluster.insufficient_capacity > 0);
  CHECK(count(spot_only, [](const DecisionRecord& d) {
          return d.reason == "NoCompatibleNodePool" && contains(d.explanation, "refused by the cloud (InsufficientInstanceCapacity) and is cached as unavailable");
        }) > 0);
  CHECK(count(both, [](const DecisionRecord& d) {
          return d.controller == "kube-scheduler" && d.reason == "Scheduled" && contains(d.explanation, "(vllm)") && d.t_s > 3600 && d.t_s < 10800;
        }) > 0);
  CHECK(both.summary.slo_attainment > spot_only.summary.slo_attainment);
  // Outside the window the same entry refuses nothing: the reclaim alone.
  Json doc = reclaim_doc({"spot"}, 1.0);
  doc["cluster"]["insufficient_capacity"] = Json::parse(
      R"([{"instance_type": "p5.48xlarge", "capacity_type": "spot", "probability": 1, "from_s": 20000, "until_s": 30000}])");
  CHECK(run(doc).summary.cluster.insufficient_capacity == 0);
}

namespace {

// One Karpenter NodePool that allows both the A100 (p4d, the cheapest GPU type) and the H100 (p5) nodes,
// two fixed replicas of the 70B FP8 model, and `selector` as the pool pod's nodeSelector.
Json gpu_choice_doc(const Json& selector) {
  Json doc = Json::parse(R"({"duration_s": 900, "seed": 3,
    "workload": {"preset": "steady", "rate_scale": 0.2},
    "autoscaler": {"strategy": "fixed", "replicas": 1},
    "cluster": {"provisioner": "karpenter",
      "initial_nodes": [{"instance_type": "m7i.4xlarge", "count": 1, "owner": "gpu"}],
      "nodepools": [{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu"},
        "spec": {"template": {"spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
          "requirements": [{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p4d.24xlarge", "p5.48xlarge", "m7i.4xlarge"]},
                           {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]}]}},
          "disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1h"}}}]}})");
  Json pod = Json::object();
  if (!selector.empty()) pod["nodeSelector"] = selector;
  doc["cluster"]["inference_pod"] = pod;
  return doc;
}

std::string launched_type(const RunResult& r) {
  for (const auto& d : r.decisions) {
    if (d.controller == "kube-scheduler" && d.reason == "Scheduled" && contains(d.explanation, "(vllm)")) {
      for (const char* t : {"p4d.24xlarge", "p5.48xlarge"}) {
        if (contains(d.explanation, t)) return t;
      }
    }
  }
  return "";
}

}  // namespace

TEST_CASE("a replica runs the engine of the GPU it got: the FP8 70B on an A100 crash-loops, never Ready", "[cluster-sim]") {
  // No nodeSelector: Karpenter launches the cheapest type that fits the pod's requests, a p4d.24xlarge
  // (A100 40 GB), and vLLM cannot start there.
  const RunResult bare = run(gpu_choice_doc(Json::object()));
  REQUIRE(launched_type(bare) == "p4d.24xlarge");
  const auto crash = std::find_if(bare.decisions.begin(), bare.decisions.end(), [](const DecisionRecord& d) { return d.reason == "CrashLoopBackOff"; });
  REQUIRE(crash != bare.decisions.end());
  CHECK(contains(crash->explanation, "p4d.24xlarge"));
  CHECK(contains(crash->explanation, "FlashAttention does not support fp8 kv-cache on this device"));
  CHECK(contains(crash->explanation, "never becomes Ready"));
  CHECK(bare.summary.num_completed == 0);
  for (std::int32_t ready : bare.series.ready_replicas) CHECK(ready == 0);

  // The chart's nodeSelector on the GPU label Karpenter knows: kube-scheduler and Karpenter's launch
  // both honour it, the replica gets H100s and serves.
  const RunResult pinned = run(gpu_choice_doc(Json{{"karpenter.k8s.aws/instance-gpu-name", "h100"}}));
  CHECK(launched_type(pinned) == "p5.48xlarge");
  CHECK(std::none_of(pinned.decisions.begin(), pinned.decisions.end(), [](const DecisionRecord& d) { return d.reason == "CrashLoopBackOff"; }));
  CHECK(pinned.summary.num_completed > 0);
}

TEST_CASE("on an H200 node the replica runs the profile moved onto the H200, and says so", "[cluster-sim]") {
  Json doc = gpu_choice_doc(Json{{"karpenter.k8s.aws/instance-gpu-name", "h200"}});
  doc["cluster"]["nodepools"][0]["spec"]["template"]["spec"]["requirements"][0]["values"] = Json::array({"p5en.48xlarge", "m7i.4xlarge"});
  const RunResult r = run(doc);
  const auto moved = std::find_if(r.decisions.begin(), r.decisions.end(), [](const DecisionRecord& d) { return d.reason == "EngineProfile"; });
  REQUIRE(moved != r.decisions.end());
  CHECK(contains(moved->explanation, "p5en.48xlarge"));
  CHECK(contains(moved->explanation, "on h200"));
  CHECK(contains(moved->explanation, "HBM 3.35 / 4.8 TB/s"));
  CHECK(r.summary.num_completed > 0);
}

TEST_CASE("a request longer than max_model_len is rejected at once (HTTP 400), not left to time out", "[cluster-sim]") {
  // Prompts of 126,000–131,072 tokens and 4,000 output tokens against the profile's 131,072: those
  // with a prompt above 127,072 are over the limit.
  Json doc = Json::parse(R"({"duration_s": 300, "seed": 4, "cold_start": {"warm_nodes": true},
    "autoscaler": {"strategy": "fixed", "replicas": 1},
    "workload": {"preset": "custom", "phases": [{"duration_s": 300, "rate_rps": 0.05}], "timeout_s": 60,
      "prompt_tokens": {"kind": "uniform", "min": 126000, "max": 131072},
      "output_tokens": {"kind": "fixed", "mean": 4000, "min": 1, "max": 4000}},
    "output": {"requests": true}})");
  const Scenario s = parse_scenario(doc);
  const RunResult r = run_simulation(s);
  std::int64_t over = 0;
  for (const auto& q : r.requests) {
    const bool too_long = q.prompt_tokens + q.output_tokens > 131072;
    over += too_long ? 1 : 0;
    INFO("request " << q.id << ": " << q.prompt_tokens << " + " << q.output_tokens);
    CHECK(q.rejected_at.has_value() == too_long);
    if (too_long) {
      CHECK(*q.rejected_at == q.arrived_at);  // a Ready replica answers at once
      CHECK_FALSE(q.dropped_at);
      CHECK_FALSE(q.first_token_at);
    }
  }
  CHECK(over > 0);
  CHECK(over < static_cast<std::int64_t>(r.requests.size()));
  CHECK(r.summary.num_rejected == over);
  CHECK(r.summary.num_requests == r.summary.num_completed + r.summary.num_dropped + r.summary.num_rejected + r.summary.num_unfinished);
  const Json j = result_to_json(r, s);
  CHECK(j.at("summary").at("num_rejected") == over);
}

TEST_CASE("image pull: a fresh node pulls the image once, a node that has it starts the next replica at once",
          "[cluster-sim]") {
  Json doc = trap_doc();
  doc["cold_start"]["image_pull_s"] = 120;
  const RunResult r = run(doc);
  std::map<std::string, int> pulls_per_node;
  int waits = 0, present = 0;
  for (const auto& d : r.decisions) {
    if (d.controller != "kubelet") continue;
    const std::smatch m = [&] {
      std::smatch x;
      std::regex_search(d.explanation, x, std::regex("on node ([0-9]+)"));
      return x;
    }();
    if (contains(d.explanation, "pulling the image")) {
      ++pulls_per_node[m[1]];
      CHECK(contains(d.explanation, "cold_start.image_pull_s 120.0 s"));
    }
    if (contains(d.explanation, "is being pulled")) ++waits;  // a second pod while the first pull runs
    if (contains(d.explanation, "already present: no pull")) ++present;
  }
  CHECK_FALSE(pulls_per_node.empty());
  for (const auto& [node, n] : pulls_per_node) {
    INFO("node " << node);
    CHECK(n == 1);  // the node keeps the image
  }
  CHECK(waits > 0);
  CHECK(present > 0);
  // Without a pull time nothing is logged and nothing waits.
  const RunResult none = run(trap_doc());
  CHECK(count(none, [](const DecisionRecord& d) { return d.controller == "kubelet"; }) == 0);
}
