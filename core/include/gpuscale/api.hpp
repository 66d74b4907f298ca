// The operations every front end offers (CLI, WASM), as JSON in → JSON out. Each throws InputError
// for bad input; the fronts turn that into exit code 2 (CLI) or {"ok":false,...} (WASM).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "gpuscale/json.hpp"

namespace gpuscale::api {

// Progress while simulating: the share done (0 … 1) and what runs ("trap week: day 3 of 7"), called
// synchronously from inside the simulation, at most about 20 times per simulated run. May be empty.
using Progress = std::function<void(double fraction, const std::string& label)>;

const char* version();
Json run(const std::string& scenario_json, const Progress& progress = {});
Json hpa(const std::string& document_json);
Json exercise(const std::string& definition_json, std::uint64_t seed);
// context_json: "" or "{}" or {"history": <attempt history or null>, "simulated": <an earlier result's
// "simulated" or null>} (docs/wasm-api.md). The result adds "revealed" (whether the exercise's policy,
// counting this attempt, now shows the explanation) and "simulated" (the figures it simulated, to be
// given back so that a later call of the same exercise, seed and lab version does not simulate again).
Json grade(const std::string& definition_json, std::uint64_t seed, const std::string& answer_json,
           const std::string& context_json = "", const Progress& progress = {});
// {"locked": true, "unlocks": sentence} while the policy keeps the explanation closed (judged from the
// context's history); otherwise the explanation, "locked": false and "simulated".
Json explain(const std::string& definition_json, std::uint64_t seed, const std::string& context_json = "",
             const Progress& progress = {});
// Re-grades every attempt of an attempt history (the CLI's `grade --history`), never trusting its
// recorded scores: per attempt its time, the recomputed score, whether it matches the recorded one,
// whether the answers had been revealed before it (as recorded) and whether the policy allowed it.
Json grade_history(const std::string& definition_json, std::uint64_t seed, const std::string& history_json);
// Teacher's view: the right answers for a variant (the CLI's `solve`; never sent to the page).
Json solve(const std::string& definition_json, std::uint64_t seed);
Json schema();
// Validates a karpenter.sh/v1 NodePool (JSON text) and lints it as a GPU pool:
// {"valid": true, "nodepool": normalised, "warnings": [...]} (docs/nodepool.md).
Json nodepool_check(const std::string& json_text);
// One scheduling cycle over a cluster snapshot (JSON text): kube-scheduler pod by pod or KAI
// Scheduler's actions; per job its status, reason and message and the node of each pod, the victims
// with the action that chose them, per queue deserved / fair share / allocated (docs/schedule.md).
Json schedule(const std::string& snapshot_json);
// The three-layer plan designer (docs/plan.md): topology, workload and SLO (JSON text) → candidate plans
// simulated on that workload, the cheapest that meets the SLO written out as the objects that deploy it.
Json plan(const std::string& input_json, const Progress& progress = {});

// Wraps an operation in the {"ok":true,"result":...} / {"ok":false,"error":{"path","message"}}
// envelope, catching every exception so no error escapes to the caller.
template <typename F>
std::string envelope(F&& operation);

// Seeds arrive as text from URLs and command lines: a whole number 0 … 2^53.
std::uint64_t parse_seed(const std::string& text);

// Benchmarks: a scenario parsed once and simulated many times, so the caller can time the simulation
// alone. The variant scenarios of an exercise come from exercise(...)["scenarios"].
struct PreparedScenario;  // opaque
std::shared_ptr<const PreparedScenario> prepare(const std::string& scenario_json);
struct RunCounts {
  std::int64_t events = 0;    // kernel events processed
  std::int64_t requests = 0;  // requests that arrived
  std::int64_t work = 0;      // work units the budget counted (docs/limits.md)
  // Its terms: sequences stepped, router visits, replica visits, pod views, decisions, detailed ones,
  // pods tried against nodes.
  std::int64_t terms[7] = {};
};
RunCounts simulate(const PreparedScenario& prepared);

}  // namespace gpuscale::api

#include <exception>
#include <new>

namespace gpuscale::api {

template <typename F>
std::string envelope(F&& operation) {
  Json out;
  try {
    // {"ok":true,"result":…} written around the result, which is not copied into a new tree.
    std::string text = "{\"ok\":true,\"result\":";
    dump_json(operation(), text);
    text += '}';
    return text;
  } catch (const InputError& e) {
    out = Json{{"ok", false}, {"error", {{"path", e.path()}, {"message", e.message()}}}};
  } catch (const std::bad_alloc&) {
    out = Json{{"ok", false}, {"error", {{"path", ""}, {"message", "out of memory"}}}};
  } catch (const std::exception& e) {
    out = Json{{"ok", false}, {"error", {{"path", ""}, {"message", std::string("internal error: ") + e.what()}}}};
  }
  return dump_json(out);
}

}  // namespace gpuscale::api
