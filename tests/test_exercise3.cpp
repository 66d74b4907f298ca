// Exercise 3 (core/src/exercises/exercise_3.cpp, exercises/ex3-pending.json): every cause's variant
// leaves a pod Pending in the simulation, its evidence is really in the run, the grader accepts the
// right answer in several forms, refuses wrong ones with feedback, gives partial credit for evidence,
// and the learner's fix, simulated again, makes the pod schedule (or shows what still holds it).
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "gpuscale/errors.hpp"
#include "exercises/exercise.hpp"
#include "sim/simulation.hpp"
#include "test_support.hpp"

using namespace gpuscale;

namespace {

using gpuscale::testing::read_text;

const Json& definition() {
  static const Json d = Json::parse(read_text("exercises/ex3-pending.json"));
  return d;
}

// The first seed of each cause.
const std::map<std::string, std::uint64_t>& seed_of_cause() {
  static const std::map<std::string, std::uint64_t> m = [] {
    std::map<std::string, std::uint64_t> out;
    for (std::uint64_t seed = 0; seed < 200 && out.size() < definition().at("cause_order").size(); ++seed) {
      const std::string cause = exercise3::solve(definition(), seed).at("answers").at("cause").get<std::string>();
      out.emplace(cause, seed);
    }
    return out;
  }();
  return m;
}

std::uint64_t seed_for(const std::string& cause) {
  const auto it = seed_of_cause().find(cause);
  REQUIRE(it != seed_of_cause().end());
  return it->second;
}

const Json& question(const Json& grade, const std::string& id) {
  for (const auto& q : grade.at("questions")) {
    if (q.at("id") == id) return q;
  }
  FAIL("no question " << id);
  static Json none;
  return none;
}

std::string evidence_text(const Json& variant, const std::string& id) {
  for (const auto& q : variant.at("questions")) {
    if (q.at("id") != "evidence") continue;
    for (const auto& c : q.at("choices")) {
      if (c.at("id") == id) return c.at("text").get<std::string>();
    }
  }
  return "";
}

}  // namespace

TEST_CASE("every cause of the catalogue has variants, and each variant's cause is the one the run shows", "[exercise3]") {
  CHECK(seed_of_cause().size() == definition().at("cause_order").size());
  // Drawn by construction, diagnosed from the run: the two agree for many seeds.
  for (std::uint64_t seed = 0; seed < 40; ++seed) {
    const Json answers = exercise3::solve(definition(), seed).at("answers");
    const Json v = exercise3::variant(definition(), seed);
    INFO("seed " << seed);
    CHECK(answers.at("evidence").size() == 2);  // both of the cause's signals are in the run
    CHECK(!v.at("pod").get<std::string>().empty());
  }
}

TEST_CASE("each cause's evidence is what the simulation produced", "[exercise3]") {
  const std::map<std::string, std::vector<std::pair<std::string, std::string>>> expected = {
      {"nodepool_limit", {{"karpenter_event", "limits: each of"}, {"nodepool_usage", "of a limit of"}}},
      {"no_instance_type", {{"karpenter_event", "no allowed type has room for 2 GPUs"}, {"nodeclaims", "NodeClaims launched: 0"}}},
      {"capacity_unavailable", {{"karpenter_event", "InsufficientInstanceCapacity"}, {"launch_failures", "launch attempts refused"}}},
      {"untolerated_taint", {{"failed_scheduling", "untolerated taint {dedicated: llm-inference}"}, {"free_gpus", "8 of 8 free"}}},
      {"node_selector_mismatch", {{"failed_scheduling", "didn't match Pod's node affinity/selector"}, {"free_gpus", "8 of 8 free"}}},
      {"nonpreemptible_over_quota", {{"podgroup_condition", "NonPreemptibleOverQuota"}, {"kai_queue", "Queue inference: allocated"}}},
      {"queue_limit", {{"podgroup_condition", "OverLimit"}, {"kai_queue", "Queue inference: allocated"}}},
      {"fragmented_gpus", {{"failed_scheduling", "Insufficient nvidia.com/gpu"}, {"free_gpus", "1 of 8 free"}}},
      {"topology_required", {{"podgroup_condition", "requirement topology.kubernetes.io/zone couldn't be satisfied for job"},
                             {"free_gpus", "8 of 8 free"}}},
  };
  for (const auto& [cause, items] : expected) {
    INFO(cause);
    const std::uint64_t seed = seed_for(cause);
    const Json v = exercise3::variant(definition(), seed);
    const Json answers = exercise3::solve(definition(), seed).at("answers");
    CHECK(answers.at("cause") == cause);
    CHECK(answers.at("layer") == definition().at("causes").at(cause).at("layer"));
    for (const auto& [id, text] : items) {
      INFO(id);
      CHECK(evidence_text(v, id).find(text) != std::string::npos);
      CHECK(std::find(answers.at("evidence").begin(), answers.at("evidence").end(), Json(id)) != answers.at("evidence").end());
    }
    // The run itself: the variant's scenario leaves a pod Pending, and the log holds the scheduler's event.
    Scenario s = parse_scenario(v.at("scenario"));
    const RunResult r = run_simulation(s);
    REQUIRE(!r.cluster_series.pods_pending.empty());
    CHECK(r.cluster_series.pods_pending.back() > 0);
    bool failed = false;
    for (const auto& d : r.decisions) failed = failed || d.reason == "FailedScheduling";
    CHECK(failed);
    // KAI's free GPUs and Karpenter's view: in the KAI causes the node has room and Karpenter says so.
    if (answers.at("layer") == "kai-scheduler") CHECK(evidence_text(v, "karpenter_event").find("FitsExistingCapacity") == 0);
  }
}

TEST_CASE("the right answer is accepted in several forms, and its fix schedules the pod", "[exercise3]") {
  for (const auto& [cause, seed] : seed_of_cause()) {
    INFO(cause << " seed " << seed);
    const Json answers = exercise3::solve(definition(), seed).at("answers");
    const Json g = exercise3::grade(definition(), seed, answers);
    CHECK(g.at("score").get<double>() == Approx(1));
    CHECK(g.at("correct").get<bool>());
    CHECK(g.at("fix_run").at("scheduled").get<bool>());
    const std::string kind = cause == "topology_required" ? "LeaderWorkerSet" : "Deployment";
    CHECK(question(g, "fix").at("feedback").get<std::string>().find("every pod of the " + kind + " is bound") != std::string::npos);
  }
  // Layer and cause names as people write them; evidence by the event's own name; a fix with a value.
  const std::uint64_t limit = seed_for("nodepool_limit");
  const Json g = exercise3::grade(definition(), limit,
                                  Json::parse(R"({"layer": "Karpenter", "cause": "NodePool limits", "evidence": ["NoCompatibleNodePool", "nodepool limit usage"],
                                                 "fix": {"id": "raise_nodepool_limit", "value": 64}})"));
  CHECK(g.at("correct").get<bool>());
  const std::uint64_t quota = seed_for("nonpreemptible_over_quota");
  const Json k = exercise3::grade(definition(), quota,
                                  Json::parse(R"({"layer": "KAI", "cause": "NonPreemptibleOverQuota", "evidence": ["PodGroup", "fair share"], "fix": "make_preemptible"})"));
  CHECK(k.at("correct").get<bool>());  // preemptible pods may use over-quota capacity: another fix that works
}

TEST_CASE("wrong answers are refused with feedback that quotes the run", "[exercise3]") {
  const std::uint64_t seed = seed_for("untolerated_taint");
  const Json g = exercise3::grade(definition(), seed,
                                  Json::parse(R"({"layer": "karpenter", "cause": "nodepool_limit", "evidence": ["pending_pods"], "fix": "raise_nodepool_limit"})"));
  CHECK(g.at("score").get<double>() == 0);
  CHECK_FALSE(g.at("correct").get<bool>());
  const std::string layer = question(g, "layer").at("feedback").get<std::string>();
  CHECK(layer.find("taint dedicated=llm-inference:NoSchedule not tolerated") != std::string::npos);  // Karpenter's own words
  CHECK(question(g, "cause").contains("hint"));
  CHECK(question(g, "evidence").at("feedback").get<std::string>().find("does not single out the cause") != std::string::npos);
  const std::string fix = question(g, "fix").at("feedback").get<std::string>();
  CHECK(fix.find("still stays Pending") != std::string::npos);
  CHECK(fix.find("untolerated taint") != std::string::npos);  // the re-run says what still holds the pod
  CHECK_FALSE(g.at("fix_run").at("scheduled").get<bool>());
  // Unknown words are graded, not errors.
  const Json u = exercise3::grade(definition(), seed, Json::parse(R"({"layer": "etcd", "cause": "gremlins", "evidence": ["vibes"], "fix": "reboot"})"));
  CHECK(u.at("score").get<double>() == 0);
  CHECK(question(u, "layer").at("feedback").get<std::string>().find("not one of the layers") != std::string::npos);
}

TEST_CASE("partial credit: the layer alone, one signal of two, a signal too many, a fix too small", "[exercise3]") {
  const std::uint64_t seed = seed_for("nodepool_limit");
  const Json one = exercise3::grade(definition(), seed, Json::parse(R"({"layer": "karpenter", "evidence": ["karpenter_event"]})"));
  CHECK(question(one, "layer").at("correct").get<bool>());
  CHECK(question(one, "evidence").at("points").get<double>() == Approx(1));  // 2 points × 1 of 2
  CHECK(question(one, "cause").at("feedback") == "No answer yet.");
  CHECK(one.at("score").get<double>() == Approx(2.0 / 6));
  const Json extra = exercise3::grade(definition(), seed, Json::parse(R"({"evidence": ["karpenter_event", "nodepool_usage", "pending_pods"]})"));
  CHECK(question(extra, "evidence").at("points").get<double>() == Approx(2 * 0.75));
  // 8 more GPUs than the limit is one node; a limit raised by 4 lets Karpenter launch nothing.
  const Json small = exercise3::grade(definition(), seed, Json::parse(R"({"fix": {"id": "raise_nodepool_limit", "value": 4}})"));
  CHECK_FALSE(question(small, "fix").at("correct").get<bool>());
  CHECK(question(small, "fix").at("feedback").get<std::string>().find("limits") != std::string::npos);
}

TEST_CASE("the grade reuses what it simulated, and everything is deterministic", "[exercise3]") {
  const std::uint64_t seed = seed_for("queue_limit");
  const Json answer = exercise3::solve(definition(), seed).at("answers");
  const Json first = exercise3::grade(definition(), seed, answer);
  const Json again = exercise3::grade(definition(), seed, answer);
  CHECK(first.dump() == again.dump());
  GradeContext context;
  const Json data = first.at("simulated");
  context.simulated = &data;
  CHECK(exercise3::grade(definition(), seed, answer, context).dump() == first.dump());
  CHECK(exercise3::variant(definition(), seed).dump() == exercise3::variant(definition(), seed).dump());
  // A tampered figure of the right key is an error at its path.
  Json bad = data;
  bad["observation"]["pod"] = "four";
  context.simulated = &bad;
  CHECK_THROWS_AS(exercise3::grade(definition(), seed, answer, context), InputError);
}

TEST_CASE("malformed answers are InputErrors with the path; the variant never carries the answer", "[exercise3]") {
  CHECK_THROWS_WITH(exercise3::parse_answer(Json::parse(R"({"evidence": "free_gpus"})")), Catch::Contains("/evidence"));
  CHECK_THROWS_WITH(exercise3::parse_answer(Json::parse(R"({"fix": 3})")), Catch::Contains("/fix"));
  CHECK_THROWS_WITH(exercise3::parse_answer(Json::parse(R"({"fix": {"id": "add_toleration", "colour": 1}})")), Catch::Contains("/fix"));
  CHECK_THROWS_WITH(exercise3::parse_answer(Json::parse(R"({"why": "dunno"})")), Catch::Contains("why"));
  for (const auto& [cause, seed] : seed_of_cause()) {
    INFO(cause);
    const std::string v = exercise3::variant(definition(), seed).dump();
    CHECK(v.find("cause_id") == std::string::npos);
  }
}

TEST_CASE("the topology cause: a gang whose required zone no domain holds; quota is not it, and relaxing the placement schedules it", "[exercise3]") {
  const std::uint64_t seed = seed_for("topology_required");
  const Json v = exercise3::variant(definition(), seed);
  // The scenario the learner reads carries the LeaderWorkerSet's annotations and the Topology.
  const Json& sc = v.at("scenario");
  CHECK(sc.at("leaderWorkerSet").at("metadata").at("annotations").at("kai.scheduler/topology-required-placement") == "topology.kubernetes.io/zone");
  CHECK(sc.at("cluster").at("kai").at("topologies").size() == 1);
  // Karpenter sees room on the free nodes, so nothing is launched.
  CHECK(evidence_text(v, "nodeclaims").find("NodeClaims launched: 0") == 0);
  // A learner who blames the queue's quota: the queue deserves more than it holds, and raising it changes nothing.
  const Json g = exercise3::grade(definition(), seed, Json::parse(R"({"layer": "KAI", "cause": "quota", "evidence": ["kai_queue"], "fix": {"id": "raise_queue_quota", "value": 64}})"));
  CHECK(question(g, "layer").at("correct").get<bool>());
  CHECK_FALSE(question(g, "cause").at("correct").get<bool>());
  CHECK(question(g, "cause").at("feedback").get<std::string>().find("Queue inference: allocated 16 GPUs, deserved 32") != std::string::npos);
  CHECK(question(g, "evidence").at("points").get<double>() == 0);
  const std::string fix = question(g, "fix").at("feedback").get<std::string>();
  CHECK(fix.find("still stays Pending") != std::string::npos);
  CHECK(fix.find("requirement topology.kubernetes.io/zone couldn't be satisfied for job") != std::string::npos);
  // The right cause by another name; the fix by its annotation.
  const Json r = exercise3::grade(definition(), seed, Json::parse(R"({"layer": "kai scheduler", "cause": "required topology", "evidence": ["PodGroup", "free gpus"], "fix": "relax_topology"})"));
  CHECK(r.at("correct").get<bool>());
  CHECK(question(r, "fix").at("feedback").get<std::string>().find("topology-preferred-placement: topology.kubernetes.io/zone") != std::string::npos);
}

TEST_CASE("the fragmentation cause: free GPUs one per node; the NodePool limit earns half, bin-packing schedules the pods", "[exercise3]") {
  const std::uint64_t seed = seed_for("fragmented_gpus");
  const Json v = exercise3::variant(definition(), seed);
  // The free GPUs add up to more than a replica's 2, but no node has 2.
  const std::string free = evidence_text(v, "free_gpus");
  CHECK(free.find("2 of 8 free") == std::string::npos);
  CHECK(free.find("1 of 8 free") != std::string::npos);
  // The learner who stops at Karpenter's limit: half of the layer and half of the cause, with why.
  const Json g = exercise3::grade(definition(), seed, Json::parse(R"({"layer": "karpenter", "cause": "nodepool_limit", "evidence": ["nodepool_usage"], "fix": "raise_nodepool_limit"})"));
  CHECK(question(g, "layer").at("points").get<double>() == Approx(0.5));
  CHECK(question(g, "cause").at("points").get<double>() == Approx(1));  // 2 points × ½
  CHECK(question(g, "cause").at("feedback").get<std::string>().find("they are one per node") != std::string::npos);
  CHECK(question(g, "evidence").at("points").get<double>() == 0);
  // Raising the limit does schedule the pod (a new node): any fix that works scores.
  CHECK(question(g, "fix").at("correct").get<bool>());
  // The diagnosis and the bin-packing fix.
  const Json r = exercise3::grade(definition(), seed, Json::parse(R"({"layer": "kube-scheduler", "cause": "fragmentation", "evidence": ["FailedScheduling", "free gpus"], "fix": "bin_pack_scheduler"})"));
  CHECK(r.at("correct").get<bool>());
  CHECK(r.at("fix_run").at("scheduled").get<bool>());
  // Packing needs no new node: the fix's scenario launches nothing.
  Scenario packed = parse_scenario(r.at("fix_scenario"));
  const RunResult run = run_simulation(packed);
  CHECK(run.summary.cluster.nodes_launched == static_cast<std::int64_t>(packed.cluster.initial_nodes[0].count));
  bool most = false;
  for (const auto& d : run.decisions) most = most || (d.controller == "kube-scheduler" && d.explanation.find("MostAllocated score") != std::string::npos);
  CHECK(most);
}
