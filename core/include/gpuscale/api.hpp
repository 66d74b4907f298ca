// The operations every front end offers (CLI, WASM), as JSON in → JSON out. Each throws InputError
// for bad input; the fronts turn that into exit code 2 (CLI) or {"ok":false,...} (WASM).
#pragma once
#include <cstdint>
#include <string>

#include <memory>

#include "gpuscale/json.hpp"

namespace gpuscale::api {

const char* version();
Json run(const std::string& scenario_json);
Json hpa(const std::string& document_json);
Json exercise(const std::string& definition_json, std::uint64_t seed);
Json grade(const std::string& definition_json, std::uint64_t seed, const std::string& answer_json);
Json explain(const std::string& definition_json, std::uint64_t seed);
// Teacher's view: the right answers for a variant (the CLI's `solve`; never sent to the page).
Json solve(const std::string& definition_json, std::uint64_t seed);
Json schema();
// Validates a karpenter.sh/v1 NodePool (JSON text) and lints it as a GPU pool:
// {"valid": true, "nodepool": normalised, "warnings": [...]} (docs/nodepool.md).
Json nodepool_check(const std::string& json_text);

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
