// The JSON operations shared by the CLI and the WASM module.
#include "gpuscale/api.hpp"

#include "exercises/exercise.hpp"
#include "autoscaling/hpa_json.hpp"
#include "provisioning/karpenter/nodepool.hpp"
#include "sim/simulation.hpp"

namespace gpuscale::api {

const char* version() { return "0.1.0"; }

Json run(const std::string& scenario_json) {
  Scenario s = parse_scenario_text(scenario_json);
  return result_to_json(run_simulation(s), s);
}

Json hpa(const std::string& document_json) { return Json::parse(hpa::evaluate_hpa_document(document_json)); }

Json schema() { return scenario_schema(); }

Json nodepool_check(const std::string& json_text) { return check_nodepool_document(parse_json_text(json_text)); }

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

Json grade(const std::string& definition_json, std::uint64_t seed, const std::string& answer_json) {
  Loaded l = load(definition_json);
  Json answer = parse_json_text(answer_json, 64 * 1024);
  return guarded([&] { return l.ops->grade(l.definition, seed, answer); });
}

Json explain(const std::string& definition_json, std::uint64_t seed) {
  Loaded l = load(definition_json);
  return guarded([&] { return l.ops->explain(l.definition, seed); });
}

Json solve(const std::string& definition_json, std::uint64_t seed) {
  Loaded l = load(definition_json);
  return guarded([&] { return l.ops->solve(l.definition, seed); });
}

}  // namespace gpuscale::api
