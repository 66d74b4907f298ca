// The JSON operations shared by the CLI and the WASM module.
#include "gpuscale/api.hpp"

#include <cmath>
#include <optional>

#include "exercises/exercise.hpp"
#include "autoscaling/hpa_json.hpp"
#include "plan/plan.hpp"
#include "provisioning/karpenter/nodepool.hpp"
#include "scheduling/snapshot_schedule.hpp"
#include "sim/simulation.hpp"

namespace gpuscale::api {

const char* version() { return "0.1.0"; }

Json run(const std::string& scenario_json, const Progress& progress) {
  Scenario s = parse_scenario_text(scenario_json);
  const ProgressReport report = progress_share(progress, 0, 1, s.duration_s, s.duration_s / 20,
                                               [d = s.duration_s](double t) { return "simulating: " + clock_text(t, d); });
  return result_to_json(run_simulation(s, {}, report), s);
}

Json hpa(const std::string& document_json) { return Json::parse(hpa::evaluate_hpa_document(document_json)); }

Json schema() { return scenario_schema(); }

Json nodepool_check(const std::string& json_text) { return check_nodepool_document(parse_json_text(json_text)); }

Json schedule(const std::string& snapshot_json) {
  const Snapshot snapshot = parse_snapshot(parse_json_text(snapshot_json));
  return schedule_outcome_json(snapshot, schedule_snapshot(snapshot));
}

Json plan(const std::string& input_json, const Progress& progress) {
  return plan::make_plan(plan::parse_plan_input(parse_json_text(input_json)), progress);
}

struct PreparedScenario {
  Scenario scenario;
};

std::shared_ptr<const PreparedScenario> prepare(const std::string& scenario_json) {
  return std::make_shared<const PreparedScenario>(PreparedScenario{parse_scenario_text(scenario_json)});
}

RunCounts simulate(const PreparedScenario& prepared) {
  const RunResult r = run_simulation(prepared.scenario);
  const WorkCounts& w = r.work;
  return RunCounts{r.num_events, r.summary.num_requests, w.units(),
                   {w.sequences, w.router_visits, w.replica_visits, w.pod_views, w.decisions, w.detailed, w.fits}};
}

std::uint64_t parse_seed(const std::string& text) {
  if (text.empty() || text.size() > 16) throw InputError("/seed", "expected a whole number from 0 to 9007199254740992");
  std::uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') throw InputError("/seed", "\"" + text + "\" is not a whole number from 0 to 9007199254740992");
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v > (std::uint64_t(1) << 53)) throw InputError("/seed", "is above 9007199254740992");
  return v;
}

namespace {

struct Loaded {
  Json definition;
  std::string id;
  const ExerciseOps* ops = nullptr;
};

Loaded load(const std::string& definition_json) {
  Loaded l;
  l.definition = parse_json_text(definition_json);
  expect_object(l.definition, "");
  const Json* id = l.definition.contains("id") ? &l.definition["id"] : nullptr;
  if (!id || !id->is_string()) throw InputError("/id", "the exercise definition needs a string id");
  l.id = id->get<std::string>();
  l.ops = find_exercise(l.id);
  if (!l.ops) throw InputError("/id", "no grader for exercise \"" + l.id.substr(0, 32) + "\"; known: " + known_exercise_ids());
  check_definition(l.definition, *l.ops);
  return l;
}

}  // namespace

// A definition missing what its grader reads (a key, a type) is the author's input error.
template <typename F>
Json guarded(F&& f) {
  try {
    return f();
  } catch (const Json::exception& e) {
    std::string what = e.what();
    auto pos = what.find("] ");
    throw InputError("", "the exercise definition does not fit its grader: " + (pos == std::string::npos ? what : what.substr(pos + 2)));
  }
}

Json exercise(const std::string& definition_json, std::uint64_t seed) {
  Loaded l = load(definition_json);
  return guarded([&] { return l.ops->variant(l.definition, seed); });
}

namespace {

// The context of a grade or explanation, read strictly (errors at /context/...).
struct Context {
  std::optional<AttemptHistory> history;
  Json simulated;  // the "data" of a matching "simulated" object, or null
};

// The key a "simulated" object carries: figures are reused only for the same exercise, seed and
// lab version (another version may simulate differently).
Json simulated_key(const Loaded& l, std::uint64_t seed) { return {{"exercise", l.id}, {"seed", seed}, {"lab_version", version()}}; }

Context read_context(const std::string& context_json, const Loaded& l, std::uint64_t seed) {
  Context c;
  if (context_json.empty()) return c;
  // A history of 1,000 attempts and an exercise's figures fit in well under 4 MB.
  const Json j = parse_json_text(context_json, 4 << 20);
  ObjectReader r(j, "/context");
  if (const Json* h = r.raw("history"); h && !h->is_null()) {
    c.history = parse_history(*h, "/context/history");
    if (c.history->exercise != l.id) {
      throw InputError("/context/history/exercise", "is \"" + c.history->exercise + "\", but this is exercise \"" + l.id + "\"");
    }
    if (c.history->seed != seed) {
      throw InputError("/context/history/seed", "is " + std::to_string(c.history->seed) + ", but this variant's seed is " + std::to_string(seed));
    }
  }
  if (const Json* s = r.raw("simulated"); s && !s->is_null()) {
    ObjectReader sr(*s, "/context/simulated");
    sr.only_keys({"exercise", "seed", "lab_version", "data"});
    const Json key{{"exercise", sr.require_string("exercise", "the exercise id", 32)},
                   {"seed", sr.require_int("seed", 0, std::int64_t(1) << 53)},
                   {"lab_version", sr.require_string("lab_version", "the lab version", 32)}};
    const Json& data = sr.require("data", "the simulated figures");
    sr.finish();
    // Figures of another variant or lab version are not an error: they are set aside and simulated anew.
    if (key == simulated_key(l, seed)) c.simulated = data;
  }
  r.finish();
  return c;
}

std::vector<double> scores_of(const std::optional<AttemptHistory>& h) {
  std::vector<double> out;
  if (h) {
    for (const Attempt& a : h->attempts) out.push_back(a.score);
  }
  return out;
}

GradeContext grade_context(const Context& c, const Progress& progress) {
  GradeContext g;
  g.simulated = c.simulated.is_null() ? nullptr : &c.simulated;
  g.progress = progress;
  return g;
}

// Wraps the exercise's figures in their key. A call that simulated nothing (exercise 2's explain)
// hands back the figures it was given, so a page that keeps the newest "simulated" keeps them; with
// none given either, the result has no "simulated".
void key_simulated(Json& out, const Loaded& l, std::uint64_t seed, const Context& given) {
  if (!out.contains("simulated")) {
    if (given.simulated.is_null()) return;
    out["simulated"] = given.simulated;
  }
  Json data = std::move(out["simulated"]);
  Json keyed = simulated_key(l, seed);
  keyed["data"] = std::move(data);
  out["simulated"] = std::move(keyed);
}

}  // namespace

Json grade(const std::string& definition_json, std::uint64_t seed, const std::string& answer_json, const std::string& context_json,
           const Progress& progress) {
  Loaded l = load(definition_json);
  Json answer = parse_json_text(answer_json, 64 * 1024);
  const Context c = read_context(context_json, l, seed);
  Json out = guarded([&] { return l.ops->grade(l.definition, seed, answer, grade_context(c, progress)); });
  std::vector<double> scores = scores_of(c.history);
  scores.push_back(out.at("score").get<double>());
  out["revealed"] = policy_reveals(parse_policy(l.definition), scores);
  key_simulated(out, l, seed, c);
  return out;
}

Json explain(const std::string& definition_json, std::uint64_t seed, const std::string& context_json, const Progress& progress) {
  Loaded l = load(definition_json);
  const Context c = read_context(context_json, l, seed);
  const RevealPolicy policy = parse_policy(l.definition);
  const std::vector<double> scores = scores_of(c.history);
  if (!policy_reveals(policy, scores)) return Json{{"locked", true}, {"unlocks", unlock_sentence(policy, scores)}};
  Json out = guarded([&] { return l.ops->explain(l.definition, seed, grade_context(c, progress)); });
  out["locked"] = false;
  key_simulated(out, l, seed, c);
  return out;
}

Json grade_history(const std::string& definition_json, std::uint64_t seed, const std::string& history_json) {
  Loaded l = load(definition_json);
  const AttemptHistory h = parse_history(parse_json_text(history_json, 4 << 20), "");
  if (h.exercise != l.id) throw InputError("/exercise", "is \"" + h.exercise + "\", but this is exercise \"" + l.id + "\"");
  if (h.seed != seed) throw InputError("/seed", "is " + std::to_string(h.seed) + ", but --seed is " + std::to_string(seed));
  const RevealPolicy policy = parse_policy(l.definition);
  Json rows = Json::array();
  std::vector<double> scores;
  Json simulated;  // simulated by the first re-grade, reused by the others (never the file's)
  bool all_match = true;
  for (std::size_t i = 0; i < h.attempts.size(); ++i) {
    const Attempt& a = h.attempts[i];
    GradeContext g;
    g.simulated = simulated.is_null() ? nullptr : &simulated;
    Json graded;
    try {
      graded = guarded([&] { return l.ops->grade(l.definition, seed, a.answer, g); });
    } catch (const InputError& e) {
      throw InputError("/attempts/" + std::to_string(i) + "/answer" + e.path(), e.message());
    }
    if (simulated.is_null() && graded.contains("simulated")) simulated = graded["simulated"];
    const double score = graded.at("score").get<double>();
    const bool matches = std::fabs(score - a.score) <= 1e-9;
    all_match = all_match && matches;
    rows.push_back({{"at", a.at},
                    {"score", score},
                    {"recorded_score", a.score},
                    {"matches", matches},
                    {"revealed_before", a.revealed_before},
                    {"policy_revealed_before", policy_reveals(policy, scores)},
                    {"credit", a.revealed_before ? 0.0 : score}});
    scores.push_back(score);
  }
  return {{"exercise", l.id},
          {"seed", seed},
          {"lab_version", version()},
          {"recorded_lab_version", h.lab_version},
          {"attempts", rows},
          {"all_match", all_match},
          {"revealed", policy_reveals(policy, scores)}};
}

Json solve(const std::string& definition_json, std::uint64_t seed) {
  Loaded l = load(definition_json);
  return guarded([&] { return l.ops->solve(l.definition, seed); });
}

}  // namespace gpuscale::api
