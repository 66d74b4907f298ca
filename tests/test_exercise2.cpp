// Exercise 2 (core/src/exercise_2.cpp, exercises/ex2-nodepool.json): the reference NodePool passes every
// criterion; Karpenter's defaults, a mis-keyed taint and an invalid pool fail the right ones with feedback
// that names the mechanism; spot is accepted for a batch SLO; malformed answers are InputErrors.
#include <catch2/catch.hpp>

#include <regex>
#include <string>
#include <vector>

#include "gpuscale/errors.hpp"
#include "exercises/exercise.hpp"
#include "test_support.hpp"

using namespace gpuscale;

using gpuscale::testing::check_filled;

namespace {

using gpuscale::testing::read_text;

const Json& definition() {
  static const Json d = Json::parse(read_text("exercises/ex2-nodepool.json"));
  return d;
}

// The exercise's day cut to its first 6 hours (the night: 0.17 → 0.06 req/s and back up) so that each
// grade's two simulations stay fast; Karpenter's default consolidation still evicts replicas in them.
const Json& short_definition() {
  static const Json d = [] {
    Json def = definition();
    def["base_scenario"]["duration_s"] = 6 * 3600;
    return def;
  }();
  return d;
}

// The short day with the spot reclaim moved into it (at 02:00).
Json reclaim_definition() {
  Json def = short_definition();
  def["variant"]["spot_reclaim_hour"] = {{"min", 2}, {"max", 2}, {"step", 1}};
  return def;
}

// The first seed whose variant is (or is not) the batch pipeline.
std::uint64_t seed_where_batch_is(bool batch) {
  for (std::uint64_t seed = 1; seed < 200; ++seed) {
    if (exercise2::variant(short_definition(), seed).at("params").at("batch").get<bool>() == batch) return seed;
  }
  FAIL("no seed with batch = " << batch);
  return 0;
}

Json reference_pool() { return definition().at("reference_nodepool"); }

// What a NodePool gets when only the instance type is written down: no disruption block
// (WhenEmptyOrUnderutilized, consolidateAfter 0s), no taint, and spot allowed next to on-demand.
Json karpenter_defaults_pool() {
  return Json::parse(R"({
    "apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "gpu-h100"},
    "spec": {"template": {"spec": {
      "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "gpu"},
      "requirements": [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["p5.48xlarge"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand", "spot"]}]}}}
  })");
}

Json grade(std::uint64_t seed, const Json& pool) { return exercise2::grade(short_definition(), seed, {{"nodepool", pool}}); }

const Json& criterion(const Json& graded, const std::string& id) {
  for (const auto& c : graded.at("criteria")) {
    if (c.at("id") == id) return c;
  }
  FAIL("no criterion " << id << " in " << graded.at("criteria").dump());
  static const Json none;
  return none;
}

std::string feedback(const Json& graded, const std::string& id) { return criterion(graded, id).at("feedback").get<std::string>(); }
bool ok(const Json& graded, const std::string& id) { return criterion(graded, id).at("ok").get<bool>(); }

// The message of the exercise file, filled with the variant's parameters, starts the same way.
std::string message_start(const char* key) {
  const std::string m = definition().at("messages").at(key).get<std::string>();
  return m.substr(0, m.find('{'));
}

void check_grade_error(const Json& answer, const std::string& path) {
  testing::check_grade_error(exercise2::grade, definition(), answer, path);
}

}  // namespace

TEST_CASE("the reference NodePool from solve() scores 1 on every criterion", "[exercise2]") {
  const std::uint64_t seed = seed_where_batch_is(false);
  const Json answers = exercise2::solve(short_definition(), seed).at("answers");
  CHECK(answers.at("nodepool") == reference_pool());
  const Json g = exercise2::grade(short_definition(), seed, answers);
  CHECK(g.at("score").get<double>() == 1.0);
  CHECK(g.at("correct").get<bool>());
  std::vector<std::string> ids;
  for (const auto& c : g.at("criteria")) {
    ids.push_back(c.at("id").get<std::string>());
    INFO(c.dump());
    CHECK(c.at("ok").get<bool>());
    CHECK(c.at("points") == c.at("max_points"));
    check_filled(c.at("feedback").get<std::string>());
  }
  CHECK(ids == std::vector<std::string>{"valid", "capacity", "disruption", "instances", "taint", "no_evictions", "slo", "cost"});
  CHECK(g.at("run").at("num_replica_evictions") == 0);
  CHECK(g.at("run").at("non_gpu_pods_on_gpu_nodes") == 0);
  // The same pool as the reference: the same day, the same bill.
  CHECK(g.at("run").at("node_cost_usd") == g.at("reference").at("node_cost_usd"));
}

TEST_CASE("Karpenter's defaults fail capacity, disruption, taint and no_evictions, naming the mechanism", "[exercise2]") {
  const std::uint64_t seed = seed_where_batch_is(false);  // an interactive SLO: spot is not defensible
  const Json g = exercise2::grade(reclaim_definition(), seed, {{"nodepool", karpenter_defaults_pool()}});
  CHECK_FALSE(g.at("correct").get<bool>());
  CHECK(g.at("score").get<double>() < 1.0);
  CHECK(ok(g, "valid"));

  CHECK_FALSE(ok(g, "capacity"));
  CHECK(criterion(g, "capacity").at("points") == 0.0);
  CHECK_THAT(feedback(g, "capacity"), Catch::StartsWith(message_start("capacity_spot_interactive")));
  CHECK_THAT(feedback(g, "capacity"), Catch::Contains("2 minutes of notice"));

  CHECK_FALSE(ok(g, "disruption"));
  CHECK_THAT(feedback(g, "disruption"), Catch::Contains("the field that made Karpenter do it: spec.disruption.consolidationPolicy (WhenEmptyOrUnderutilized)"));

  const std::int64_t on_gpu = g.at("run").at("non_gpu_pods_on_gpu_nodes").get<std::int64_t>();
  CHECK(on_gpu > 0);
  CHECK_FALSE(ok(g, "taint"));
  CHECK(feedback(g, "taint") == "No NoSchedule or NoExecute taint: in the simulated day " + std::to_string(on_gpu) +
                                    " web-tier pods were bound to GPU nodes.");

  CHECK(g.at("run").at("num_replica_evictions").get<std::int64_t>() > 0);
  CHECK_FALSE(ok(g, "no_evictions"));
  // The pool's own disruption, by reason; the spot reclaim's interruptions are judged under capacity.
  CHECK(std::regex_search(feedback(g, "no_evictions"),
                          std::regex("^[1-9][0-9]* running replicas were evicted by this NodePool's disruption in the simulated day \\([1-9][0-9]* Underutilized")));
  for (const auto& c : g.at("criteria")) check_filled(c.at("feedback").get<std::string>());
}

TEST_CASE("a taint keyed other than nvidia.com/gpu keeps the replicas off too", "[exercise2]") {
  Json pool = reference_pool();
  pool["spec"]["template"]["spec"]["taints"][0]["key"] = "gpu";
  const Json g = grade(seed_where_batch_is(false), pool);
  CHECK_FALSE(ok(g, "taint"));
  CHECK_THAT(feedback(g, "taint"), Catch::StartsWith(message_start("taint_blocks_replicas")));
  CHECK_THAT(feedback(g, "taint"), Catch::Contains("Key the taint nvidia.com/gpu"));
  // Nothing was served, so neither the SLO nor the cost can pass.
  CHECK_FALSE(ok(g, "slo"));
  CHECK_FALSE(ok(g, "cost"));
  CHECK(g.at("run").at("num_dropped").get<std::int64_t>() > 0);
  // The criteria read from the YAML alone still pass.
  CHECK(ok(g, "capacity"));
  CHECK(ok(g, "disruption"));
}

TEST_CASE("a PreferNoSchedule taint is leaky; missing capacity type and consolidateAfter 0s get half points", "[exercise2]") {
  Json pool = reference_pool();
  pool["spec"]["template"]["spec"]["taints"][0]["effect"] = "PreferNoSchedule";
  auto& reqs = pool["spec"]["template"]["spec"]["requirements"];
  reqs.erase(1);  // the capacity-type requirement
  pool["spec"]["disruption"]["consolidateAfter"] = "0s";
  const Json g = grade(seed_where_batch_is(false), pool);
  CHECK_FALSE(ok(g, "capacity"));
  CHECK(criterion(g, "capacity").at("points") == 0.5);
  CHECK(feedback(g, "capacity") == definition().at("messages").at("capacity_missing"));
  CHECK_FALSE(ok(g, "disruption"));
  CHECK(criterion(g, "disruption").at("points") == 0.5);
  CHECK_THAT(feedback(g, "disruption"), Catch::StartsWith(message_start("disruption_zero")));
  // No NoSchedule taint: the web tier lands on the GPU nodes.
  CHECK_FALSE(ok(g, "taint"));
  CHECK(g.at("run").at("non_gpu_pods_on_gpu_nodes").get<std::int64_t>() > 0);
}

TEST_CASE("an invalid NodePool gets only the valid criterion, with the path of the error", "[exercise2]") {
  Json pool = reference_pool();
  pool["spec"]["disruption"]["consolidateAfter"] = "1hr";
  const Json g = exercise2::grade(definition(), 1, {{"nodepool", pool}});  // no simulation runs
  REQUIRE(g.at("criteria").size() == 1);
  const Json& c = g.at("criteria")[0];
  CHECK(c.at("id") == "valid");
  CHECK_FALSE(c.at("ok").get<bool>());
  CHECK_THAT(c.at("feedback").get<std::string>(), Catch::StartsWith("The NodePool is not valid: /nodepool/spec/disruption/consolidateAfter"));
  CHECK(g.at("score").get<double>() == 0.0);
  CHECK_FALSE(g.at("correct").get<bool>());

  pool = reference_pool();
  pool["metadata"]["name"] = "general";  // the cluster's CPU pool
  const Json named = exercise2::grade(definition(), 1, {{"nodepool", pool}});
  REQUIRE(named.at("criteria").size() == 1);
  CHECK_THAT(named.at("criteria")[0].at("feedback").get<std::string>(), Catch::Contains("/nodepool/metadata/name"));
}

TEST_CASE("answers that are not an object holding a NodePool are InputErrors", "[exercise2]") {
  check_grade_error(Json(5), "");
  check_grade_error(Json("nodepool"), "");
  check_grade_error(Json::array({reference_pool()}), "");
  check_grade_error(Json::object(), "/nodepool");
  check_grade_error({{"nodepool", reference_pool()}, {"extra", 1}}, "/extra");
}

TEST_CASE("a batch variant accepts spot", "[exercise2]") {
  const std::uint64_t seed = seed_where_batch_is(true);
  const Json v = exercise2::variant(short_definition(), seed);
  CHECK(v.at("params").at("batch").get<bool>());
  // A batch SLO is minutes: the drawn target (8–15 s) times 6.
  const double ttft = v.at("params").at("ttft_target_s").get<double>();
  CHECK(ttft >= 48);
  CHECK(ttft <= 90);
  CHECK_THAT(v.at("text").get<std::string>(), Catch::Contains("batch summarization pipeline"));
  check_filled(v.at("text").get<std::string>());

  Json pool = reference_pool();
  pool["spec"]["template"]["spec"]["requirements"][1]["values"] = {"on-demand", "spot"};
  const Json g = grade(seed, pool);
  CHECK(ok(g, "capacity"));
  CHECK_THAT(feedback(g, "capacity"), Catch::StartsWith(message_start("capacity_spot_batch")));
  check_filled(feedback(g, "capacity"));

  // The same pool on an interactive variant is refused.
  const Json interactive = grade(seed_where_batch_is(false), pool);
  CHECK_FALSE(ok(interactive, "capacity"));
}

// NotIn ["spot"] is an on-demand-only pool, not a spot one.
TEST_CASE("disruption is judged by its effect: expireAfter 2h evicts replicas and names the field", "[exercise2]") {
  Json pool = reference_pool();
  pool["spec"]["template"]["spec"]["expireAfter"] = "2h";
  const Json g = grade(1, pool);
  CHECK_FALSE(ok(g, "disruption"));
  CHECK_FALSE(ok(g, "no_evictions"));
  const std::string f = feedback(g, "disruption");
  CHECK_THAT(f, Catch::Contains("Expired"));
  CHECK_THAT(f, Catch::Contains("spec.template.spec.expireAfter (2h)"));
  CHECK_THAT(f, !Catch::Contains("only empty nodes go"));
}

TEST_CASE("disruption is judged by its effect: a budget that blocks Underutilized disrupts nothing", "[exercise2]") {
  Json pool = reference_pool();
  pool["spec"]["disruption"] = Json::parse(R"({"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1h",
      "budgets": [{"nodes": "0", "reasons": ["Underutilized"]}, {"nodes": "10%"}]})");
  const Json g = grade(1, pool);
  CHECK(ok(g, "no_evictions"));
  CHECK(ok(g, "disruption"));
  CHECK_THAT(feedback(g, "disruption"), Catch::Contains("no running replica was evicted"));
  // Without the budget the same policy evicts, and the feedback names consolidationPolicy.
  pool["spec"]["disruption"] = Json::parse(R"({"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "0s"})");
  const Json free = grade(1, pool);
  if (!ok(free, "no_evictions")) {
    CHECK_FALSE(ok(free, "disruption"));
    CHECK_THAT(feedback(free, "disruption"), Catch::Contains("spec.disruption.consolidationPolicy (WhenEmptyOrUnderutilized)"));
  } else {
    CHECK_FALSE(ok(free, "disruption"));  // consolidateAfter 0s still costs half
  }
}

TEST_CASE("a capacity-type value that is not well-known (ondemand) is invalid, not graded on-demand only", "[exercise2]") {
  Json pool = reference_pool();
  pool["spec"]["template"]["spec"]["requirements"][1]["values"] = Json::array({"ondemand"});
  const Json g = exercise2::grade(definition(), 1, {{"nodepool", pool}});  // refused before any simulation
  REQUIRE(g.at("criteria").size() == 1);
  const std::string f = g.at("criteria")[0].at("feedback").get<std::string>();
  CHECK_FALSE(g.at("criteria")[0].at("ok").get<bool>());
  CHECK_THAT(f, Catch::Contains("/nodepool/spec/template/spec/requirements/1/values"));
  CHECK_THAT(f, Catch::Contains("\"on-demand\", \"spot\", \"reserved\""));
  CHECK(g.at("score").get<double>() == 0.0);
}

TEST_CASE("capacity-type NotIn [spot] is on-demand only", "[exercise2]") {
  Json pool = reference_pool();
  pool["spec"]["template"]["spec"]["requirements"][1] =
      Json::parse(R"({"key": "karpenter.sh/capacity-type", "operator": "NotIn", "values": ["spot"]})");
  const Json g = grade(seed_where_batch_is(false), pool);
  CHECK(ok(g, "capacity"));
  CHECK(feedback(g, "capacity") == definition().at("messages").at("capacity_ok_interactive"));
}

namespace {
Json pool_with_types(std::initializer_list<const char*> types) {
  Json pool = reference_pool();
  Json values = Json::array();
  for (const char* t : types) values.push_back(t);
  pool["spec"]["template"]["spec"]["requirements"][0]["values"] = values;
  return pool;
}
}  // namespace

TEST_CASE("a CPU-only pool cannot launch the replicas: the run fails with Karpenter's own event", "[exercise2]") {
  const Json g = grade(1, pool_with_types({"m5.large"}));
  CHECK(g.at("score").get<double>() < 1.0);
  CHECK_FALSE(g.at("correct").get<bool>());
  CHECK_FALSE(ok(g, "instances"));
  CHECK_THAT(feedback(g, "instances"), Catch::StartsWith("Karpenter could not launch a node for the replicas"));
  CHECK_THAT(feedback(g, "instances"), Catch::Contains("fits no NodePool"));
  CHECK_FALSE(ok(g, "slo"));
  CHECK_FALSE(ok(g, "cost"));
  CHECK(g.at("run").at("slo_attainment").get<double>() == 0.0);
  CHECK_THAT(g.at("run").at("karpenter_event").get<std::string>(), Catch::Contains("gpu-h100 (weight"));
}

TEST_CASE("the day starts on nodes from the learner's own pool, not a default p5.48xlarge", "[exercise2]") {
  // A spot-only pool starts on spot p5.48xlarge nodes (Karpenter's cheapest offering of the pool), so its
  // night costs less than the reference's on-demand one.
  Json spot = reference_pool();
  spot["spec"]["template"]["spec"]["requirements"][1]["values"] = Json::array({"spot"});
  const Json g = grade(1, spot);
  const Json ref = grade(1, reference_pool());
  CHECK(g.at("run").at("node_cost_usd").get<double>() < ref.at("run").at("node_cost_usd").get<double>());
}

TEST_CASE("an A100 pool cannot give the replicas the H100s their nodeSelector asks for: Karpenter's event says so", "[exercise2]") {
  const Json g = grade(1, pool_with_types({"p4d.24xlarge"}));
  CHECK_FALSE(ok(g, "instances"));
  CHECK_THAT(feedback(g, "instances"), Catch::StartsWith(message_start("pool_cannot_launch")));
  CHECK_THAT(feedback(g, "instances"), Catch::Contains("gpu-h100 (weight 50): pod's nodeSelector/affinity matches none of"));
  // The taint is still right, judged on the pool alone; nothing ran, so no eviction and no cost earn points.
  CHECK(ok(g, "taint"));
  CHECK_THAT(feedback(g, "taint"), Catch::Contains("checked on the pool alone"));
  CHECK_FALSE(ok(g, "no_evictions"));
  CHECK_FALSE(ok(g, "cost"));
  CHECK(g.at("run").at("nodes_launched").get<double>() >= 0);
  CHECK(g.at("run").at("slo_attainment").get<double>() == 0.0);
}

TEST_CASE("a spot verdict rests on the spot reclaim of the variant's day", "[exercise2][spot]") {
  const Json def = reclaim_definition();
  Json pool = reference_pool();
  pool["spec"]["template"]["spec"]["requirements"][1]["values"] = {"spot", "on-demand"};
  const std::uint64_t interactive = seed_where_batch_is(false);
  const Json v = exercise2::variant(def, interactive);
  CHECK_THAT(v.at("text").get<std::string>(), Catch::Contains("at 02:00 EC2 reclaims half of the running spot p5.48xlarge instances"));
  const Json g = exercise2::grade(def, interactive, {{"nodepool", pool}});
  REQUIRE(g.at("run").at("spot_interruptions").get<std::int64_t>() > 0);
  CHECK_FALSE(ok(g, "capacity"));
  const std::string f = feedback(g, "capacity");
  INFO(f);
  CHECK_THAT(f, Catch::StartsWith(message_start("capacity_spot_interactive")));
  CHECK_THAT(f, Catch::Contains("EC2 reclaimed " + std::to_string(g.at("run").at("spot_interruptions").get<std::int64_t>()) + " spot instances at 02:00"));
  check_filled(f);
  // The interruptions are the cloud's, not the pool's disruption: they do not cost no_evictions.
  CHECK(ok(g, "no_evictions"));
  // On a batch variant the same pool and the same reclaim pass, with the day's numbers.
  const Json batch = exercise2::grade(def, seed_where_batch_is(true), {{"nodepool", pool}});
  CHECK(ok(batch, "capacity"));
  CHECK_THAT(feedback(batch, "capacity"), Catch::Contains("spot instances at 02:00"));
  // A reclaim that finds no spot node (an on-demand pool) leaves the reference untouched.
  const Json ref = exercise2::grade(def, interactive, {{"nodepool", reference_pool()}});
  CHECK(ref.at("run").at("spot_interruptions") == 0);
  CHECK(ok(ref, "capacity"));
}

TEST_CASE("the day needs scale-out: a pool limited to 8 GPUs (one node) misses the SLO and Karpenter says why", "[exercise2]") {
  Json pool = reference_pool();
  pool["spec"]["limits"] = {{"nvidia.com/gpu", "8"}};
  // The whole day: the afternoon peak is what one node cannot serve.
  const Json g = exercise2::grade(definition(), 1, {{"nodepool", pool}});
  CHECK(ok(g, "instances"));
  CHECK_FALSE(ok(g, "slo"));
  CHECK_THAT(feedback(g, "slo"), Catch::Contains("limits: each of"));
  // 32 GPUs (four nodes) would do; the reference's 64 do.
  CHECK(ok(exercise2::grade(definition(), 1, {{"nodepool", reference_pool()}}), "slo"));
}

TEST_CASE("the reference pool's day is simulated once per variant: given back, the grade is the same", "[exercise2]") {
  Json pool = reference_pool();
  pool["spec"]["disruption"]["consolidateAfter"] = "0s";
  const Json first = grade(2, pool);
  REQUIRE(first.contains("simulated"));
  CHECK(first.at("simulated").at("reference").at("node_cost_usd") == first.at("reference").at("node_cost_usd"));
  GradeContext context;
  const Json data = first.at("simulated");
  context.simulated = &data;
  int progressed = 0;
  context.progress = [&](double, const std::string& label) {
    ++progressed;
    CHECK(label.rfind("the reference pool's day", 0) == std::string::npos);  // only the learner's day runs
  };
  const Json again = exercise2::grade(short_definition(), 2, {{"nodepool", pool}}, context);
  CHECK(progressed > 0);
  CHECK(again.at("criteria") == first.at("criteria"));
  CHECK(again.at("reference") == first.at("reference"));
  // Malformed figures are errors at their path, never a silent re-simulation.
  const Json bad = Json::parse(R"({"reference": {"node_cost_usd": -1, "slo_attainment": 0.9}})");
  context.simulated = &bad;
  try {
    exercise2::grade(short_definition(), 2, {{"nodepool", pool}}, context);
    FAIL("accepted a negative reference cost");
  } catch (const InputError& e) {
    CHECK(e.path() == "/context/simulated/data/reference/node_cost_usd");
  }
  const Json other = Json::parse(R"({"trap": {}})");
  context.simulated = &other;
  CHECK_THROWS_AS(exercise2::grade(short_definition(), 2, {{"nodepool", pool}}, context), InputError);
  // Nothing given ({}): both days are simulated.
  const Json nothing = Json::object();
  context.simulated = &nothing;
  progressed = 0;
  bool reference_ran = false;
  context.progress = [&](double, const std::string& label) { reference_ran = reference_ran || label.rfind("the reference pool's day", 0) == 0; };
  CHECK(exercise2::grade(short_definition(), 2, {{"nodepool", pool}}, context).at("criteria") == first.at("criteria"));
  CHECK(reference_ran);
}
