// Exercise 4 (core/src/exercises/exercise_4.cpp, exercises/ex4-disagg.json): the grid of signal pairs
// on a disaggregated server, its per-role verdicts recomputed from the grid, the variant space (a
// prefill-heavy and a decode-heavy workload do not share their answers), the simulated figures given
// back, and malformed answers.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "exercises/exercise.hpp"
#include "gpuscale/api.hpp"
#include "gpuscale/errors.hpp"
#include "scenario/scenario.hpp"
#include "test_support.hpp"

using namespace gpuscale;
using gpuscale::testing::check_filled;
using gpuscale::testing::read_text;

namespace {

const Json& definition() {
  static const Json d = Json::parse(read_text("exercises/ex4-disagg.json"));
  return d;
}

std::vector<std::string> signal_ids() {
  std::vector<std::string> ids;
  for (const Json& s : definition().at("signals")) ids.push_back(s.at("id"));
  return ids;
}

// The first seeds of each shape.
std::uint64_t seed_of_shape(const std::string& shape) {
  for (std::uint64_t seed = 0; seed < 64; ++seed)
    if (exercise4::variant(definition(), seed).at("params").at("shape_id") == shape) return seed;
  FAIL("no seed below 64 draws " << shape);
  return 0;
}

// Each role's best goodput per dollar per signal, recomputed from the grid: the best of its pairs.
std::map<std::string, double> role_scores(const Json& cells, const char* role) {
  std::map<std::string, double> best;
  for (const Json& c : cells) {
    const std::string s = c.at(role);
    best[s] = std::max(best.count(s) ? best[s] : 0.0, c.at("goodput_per_usd").get<double>());
  }
  return best;
}

struct Graded {
  std::uint64_t seed;
  Json simulated;  // solve()'s grid
  Json accepted;
};

const Graded& graded(const std::string& shape) {
  static std::map<std::string, Graded> cache;
  auto it = cache.find(shape);
  if (it == cache.end()) {
    const std::uint64_t seed = seed_of_shape(shape);
    const Json solved = exercise4::solve(definition(), seed);
    it = cache.emplace(shape, Graded{seed, solved.at("simulated"), solved.at("accepted")}).first;
  }
  return it->second;
}

}  // namespace

TEST_CASE("exercise 4: the variant's 36 pairs are one workload with each pool's signal", "[exercise4]") {
  const Json v = exercise4::variant(definition(), 5);
  check_filled(v.at("text"));
  REQUIRE(v.at("cells").size() == 36);
  const std::vector<std::string> ids = signal_ids();
  Json first_workload;
  for (std::size_t i = 0; i < 36; ++i) {
    const Json& cell = v.at("cells")[i];
    CHECK(cell.at("prefill") == ids[i / 6]);
    CHECK(cell.at("decode") == ids[i % 6]);
    const Scenario s = parse_scenario(cell.at("scenario"));
    REQUIRE(s.pools.size() == 2);
    CHECK(s.pools[0].role == PoolRole::Prefill);
    CHECK(s.pools[1].role == PoolRole::Decode);
    // Only the pools' autoscalers differ: the same requests in every run.
    if (i == 0) first_workload = cell.at("scenario").at("workload");
    CHECK(cell.at("scenario").at("workload") == first_workload);
    CHECK(cell.at("scenario").at("seed") == 5);
    CHECK(cell.at("scenario").at("pools")[0].at("autoscaler").at("strategy") ==
          definition().at("signals")[i / 6].at("autoscaler").at("strategy"));
    CHECK(cell.at("scenario").at("pools")[1].at("autoscaler").at("strategy") ==
          definition().at("signals")[i % 6].at("autoscaler").at("strategy"));
  }
  // Both shapes occur among the seeds.
  std::set<std::string> shapes;
  for (std::uint64_t seed = 0; seed < 16; ++seed) shapes.insert(exercise4::variant(definition(), seed).at("params").at("shape_id").get<std::string>());
  CHECK(shapes == std::set<std::string>{"prefill_heavy", "decode_heavy"});
}

TEST_CASE("exercise 4: a grid cell is the run of its scenario", "[exercise4]") {
  const Graded& g = graded("decode_heavy");
  const Json v = exercise4::variant(definition(), g.seed);
  for (std::size_t i : {std::size_t{3}, std::size_t{20}}) {
    const Json out = api::run(dump_json(v.at("cells")[i].at("scenario")));
    const Json& cell = g.simulated.at("cells")[i];
    const Json& s = out.at("summary");
    CHECK(cell.at("goodput_rps").get<double>() == s.at("goodput_rps").get<double>());
    CHECK(cell.at("cost_usd").get<double>() == s.at("cost_usd").get<double>());
    CHECK(cell.at("goodput_per_usd").get<double>() ==
          Approx(s.at("goodput_rps").get<double>() * 1800 / s.at("cost_usd").get<double>()).epsilon(1e-12));
    CHECK(cell.at("pools").at("decode").at("peak_replicas") == out.at("pools").at("decode").at("summary").at("peak_replicas"));
  }
}

TEST_CASE("exercise 4: each role passes within the margin of the grid's best, with half the score each", "[exercise4]") {
  for (const char* shape : {"prefill_heavy", "decode_heavy"}) {
    const Graded& g = graded(shape);
    const Json& cells = g.simulated.at("cells");
    double best = 0;
    for (const Json& c : cells) best = std::max(best, c.at("goodput_per_usd").get<double>());
    const double margin = definition().at("margin");
    const GradeContext from_grid{&g.simulated, {}};
    for (const char* role : {"prefill", "decode"}) {
      const std::map<std::string, double> scores = role_scores(cells, role);
      std::set<std::string> passing;
      for (const auto& [id, score] : scores)
        if (score >= (1 - margin) * best) passing.insert(id);
      INFO(shape << " " << role);
      CHECK(std::set<std::string>(g.accepted.at(role).begin(), g.accepted.at(role).end()) == passing);
      CHECK_FALSE(passing.empty());
      CHECK(passing.size() < 6);  // the grid separates the signals
    }
    // Every answer's score is the share of roles whose pick passes.
    for (const std::string& p : signal_ids()) {
      for (const std::string& d : signal_ids()) {
        const Json out = exercise4::grade(definition(), g.seed, {{"prefill", p}, {"decode", d}}, from_grid);
        const auto in = [&](const char* role, const std::string& id) {
          const Json& a = g.accepted.at(role);
          return std::find(a.begin(), a.end(), id) != a.end();
        };
        const double expected = ((in("prefill", p) ? 1 : 0) + (in("decode", d) ? 1 : 0)) / 2.0;
        CHECK(out.at("score").get<double>() == expected);
        CHECK(out.at("questions")[0].at("correct") == in("prefill", p));
        CHECK(out.at("questions")[1].at("correct") == in("decode", d));
        for (const Json& q : out.at("questions")) check_filled(q.at("feedback"));
      }
    }
  }
}

TEST_CASE("exercise 4: a prefill-heavy and a decode-heavy variant want different signals", "[exercise4]") {
  const Graded& pre = graded("prefill_heavy");
  const Graded& dec = graded("decode_heavy");
  // For at least one role, a signal that passes in one variant fails in the other.
  bool differs = false;
  for (const char* role : {"prefill", "decode"}) {
    const std::set<std::string> a(pre.accepted.at(role).begin(), pre.accepted.at(role).end());
    const std::set<std::string> b(dec.accepted.at(role).begin(), dec.accepted.at(role).end());
    differs = differs || a != b;
  }
  CHECK(differs);
  // The decode pool matters only where decoding is the work: there its best signal's pairs beat the
  // others by more than the margin, while in the prefill-heavy variant several decode signals pass.
  CHECK(dec.accepted.at("decode").size() < pre.accepted.at("decode").size());
}

TEST_CASE("exercise 4: feedback quotes what the learner's own run showed", "[exercise4]") {
  const Graded& g = graded("prefill_heavy");
  const GradeContext from_grid{&g.simulated, {}};
  const Json out = exercise4::grade(definition(), g.seed, {{"prefill", "gpu_memory"}, {"decode", "kv_cache"}, {"justification", "memory tracks load"}}, from_grid);
  const std::string fb = out.at("questions")[0].at("feedback");
  // The pair prefill gpu_memory / decode kv_cache is cell 1 × 6 + 3.
  const Json& pool = g.simulated.at("cells")[9].at("pools").at("prefill");
  char median[96];
  std::snprintf(median, sizeof median, "read %.0f %% of each GPU at the median scrape", pool.at("fb_used_median_pct").get<double>());
  CHECK(fb.find(median) != std::string::npos);
  CHECK(out.at("justification") == "memory tracks load");
  CHECK(out.at("pair").at("cell") == 9);
}

TEST_CASE("exercise 4: the grid given back is not simulated again, and is read strictly", "[exercise4]") {
  const Graded& g = graded("prefill_heavy");
  int reports = 0;
  const GradeContext from_grid{&g.simulated, [&](double, const std::string&) { ++reports; }};
  const Json a = exercise4::grade(definition(), g.seed, {{"prefill", "queue_depth"}}, from_grid);
  CHECK(reports == 0);
  CHECK(a.at("simulated") == g.simulated);
  // One role answered: half the credit at most, the other "no answer yet".
  CHECK(a.at("questions")[1].at("correct") == false);
  Json broken = g.simulated;
  broken["cells"][4]["decode"] = "gpu_util";
  CHECK(testing::input_error([&] { exercise4::grade(definition(), g.seed, Json::object(), GradeContext{&broken, {}}); }).path() ==
        "/context/simulated/data/cells/4");
  broken = g.simulated;
  broken["cells"].erase(broken["cells"].begin());
  CHECK(testing::input_error([&] { exercise4::grade(definition(), g.seed, Json::object(), GradeContext{&broken, {}}); }).path() ==
        "/context/simulated/data/cells");
  broken = g.simulated;
  broken["cells"][0]["pools"]["decode"]["kv_cache_max"] = 2;
  CHECK(testing::input_error([&] { exercise4::grade(definition(), g.seed, Json::object(), GradeContext{&broken, {}}); }).path() ==
        "/context/simulated/data/cells/0/pools/decode/kv_cache_max");
}

TEST_CASE("exercise 4: malformed answers name the field and what is allowed", "[exercise4]") {
  const Json& def = definition();
  const InputError unknown = testing::input_error([&] { exercise4::parse_answer(def, {{"prefill", "cpu"}}); });
  CHECK(unknown.path() == "/prefill");
  CHECK(std::string(unknown.what()).find("\"queue_depth\"") != std::string::npos);
  CHECK(testing::input_error([&] { exercise4::parse_answer(def, {{"decode", 3}}); }).path() == "/decode");
  CHECK(testing::input_error([&] { exercise4::parse_answer(def, {{"justification", std::string(4001, 'x')}}); }).path() == "/justification");
  // Characters, not bytes: 4,000 two-byte letters are allowed.
  std::string accents;
  for (int i = 0; i < 4000; ++i) accents += "\xc3\xa9";
  CHECK(exercise4::parse_answer(def, {{"justification", accents}}).justification->size() == 8000);
  CHECK(testing::input_error([&] { exercise4::parse_answer(def, {{"justification", accents + "x"}}); }).path() == "/justification");
  CHECK(testing::input_error([&] { exercise4::parse_answer(def, {{"justification", 12}}); }).path() == "/justification");
  CHECK(testing::input_error([&] { exercise4::parse_answer(def, {{"prefil", "gpu_util"}}); }).path() == "/prefil");
  CHECK_NOTHROW(exercise4::parse_answer(def, Json::object()));
}

TEST_CASE("exercise 4: the grid is the same twice, through the API as through the grader", "[exercise4]") {
  const std::uint64_t seed = seed_of_shape("decode_heavy");
  const std::string answer = R"({"prefill": "queue_depth", "decode": "kv_cache"})";
  const std::string def = read_text("exercises/ex4-disagg.json");
  const Json a = api::grade(def, seed, answer, "");
  const Json b = api::grade(def, seed, answer, "");
  CHECK(dump_json(a) == dump_json(b));
  CHECK(a.at("simulated").at("data") == graded("decode_heavy").simulated);
}

TEST_CASE("exercise 4: the explanation opens by the policy and names what passed for each role", "[exercise4]") {
  const Graded& g = graded("decode_heavy");
  const std::string def = read_text("exercises/ex4-disagg.json");
  Json context = {{"history", nullptr}, {"simulated", {{"exercise", "4"}, {"seed", g.seed}, {"lab_version", api::version()}, {"data", g.simulated}}}};
  CHECK(api::explain(def, g.seed, dump_json(context)).at("locked") == true);
  Json attempts = Json::array();
  for (int i = 0; i < 3; ++i) attempts.push_back({{"at", "2026-12-06T00:00:00Z"}, {"answer", Json::object()}, {"score", 0}, {"revealed_before", false}});
  context["history"] = {{"format", "gpuscale-attempts/1"}, {"exercise", "4"}, {"seed", g.seed}, {"lab_version", api::version()}, {"attempts", attempts}};
  const Json e = api::explain(def, g.seed, dump_json(context));
  REQUIRE(e.at("locked") == false);
  const std::string text = e.at("text");
  check_filled(text);
  CHECK(text.find("Your variant is decode-heavy") != std::string::npos);
  CHECK(e.at("accepted") == g.accepted);
  // The lesson's pair is judged against the grid, either way.
  CHECK((text.find("The lesson's rule, queue depth for prefill and KV-cache use for decode, holds") != std::string::npos ||
         text.find("The lesson's rule is a starting point") != std::string::npos));
}
