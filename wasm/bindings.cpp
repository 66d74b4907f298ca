// The WASM module's API: a handful of JSON-text functions (docs/wasm-api.md). Every call is
// wrapped so that no exception reaches JavaScript and the module stays usable after an error.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include <cstdlib>

#include "gpuscale/api.hpp"
#include "gpuscale/errors.hpp"

using namespace gpuscale;
using emscripten::val;

namespace {

// The envelope's text as a JS string, decoded by the host's TextDecoder straight from the module's
// memory. (Embind's own std::string return scans the bytes in JavaScript first: for a run result of
// a few hundred KB that scan cost as much as the JSON.parse after it.)
template <typename F>
val envelope(F&& operation) {
  const std::string text = api::envelope(std::forward<F>(operation));
  static const val decoder = val::global("TextDecoder").new_();
  return decoder.call<val>("decode", val(emscripten::typed_memory_view(
                                         text.size(), reinterpret_cast<const unsigned char*>(text.data()))));
}

// The optional last argument of run, grade and explain: a JS function (fraction, label), called
// synchronously while the core simulates. Anything that is not a function reports nothing. An
// exception the function throws propagates to the caller, as from any JS callback.
api::Progress progress_of(const val& fn) {
  if (fn.typeOf().as<std::string>() != "function") return {};
  return [fn](double fraction, const std::string& label) { fn(val(fraction), val(label)); };
}

val version_json() { return envelope([] { return Json{{"version", api::version()}}; }); }
val run(const std::string& scenario) { return envelope([&] { return api::run(scenario); }); }
val run_p(const std::string& scenario, val progress) { return envelope([&] { return api::run(scenario, progress_of(progress)); }); }
val hpa(const std::string& doc) { return envelope([&] { return api::hpa(doc); }); }
val exercise(const std::string& def, const std::string& seed) {
  return envelope([&] { return api::exercise(def, api::parse_seed(seed)); });
}
val grade(const std::string& def, const std::string& seed, const std::string& answer) {
  return envelope([&] { return api::grade(def, api::parse_seed(seed), answer); });
}
val grade_c(const std::string& def, const std::string& seed, const std::string& answer, const std::string& context) {
  return envelope([&] { return api::grade(def, api::parse_seed(seed), answer, context); });
}
val grade_cp(const std::string& def, const std::string& seed, const std::string& answer, const std::string& context, val progress) {
  return envelope([&] { return api::grade(def, api::parse_seed(seed), answer, context, progress_of(progress)); });
}
val explain(const std::string& def, const std::string& seed) {
  return envelope([&] { return api::explain(def, api::parse_seed(seed)); });
}
val explain_c(const std::string& def, const std::string& seed, const std::string& context) {
  return envelope([&] { return api::explain(def, api::parse_seed(seed), context); });
}
val explain_cp(const std::string& def, const std::string& seed, const std::string& context, val progress) {
  return envelope([&] { return api::explain(def, api::parse_seed(seed), context, progress_of(progress)); });
}
val schema() { return envelope([] { return api::schema(); }); }
val nodepool_check(const std::string& doc) { return envelope([&] { return api::nodepool_check(doc); }); }

// Test hook: fails the way a bug in the core would, so the tests can check that the page's worker
// recovers. Only the worker's debug mode (worker.js?debug=1) lets a call reach it.
volatile unsigned debug_sink = 0;

[[gnu::noinline]] unsigned debug_recurse(unsigned depth) {
  if (depth == ~0u) return depth;
  const unsigned deeper = debug_recurse(depth + 1);
  debug_sink = deeper;  // work after the call: it is no tail call, so the optimizer cannot make it a loop
  return deeper;
}

// kind "unreachable": a wasm trap (WebAssembly.RuntimeError: unreachable); "stack_overflow": the
// engine's call stack runs out (RangeError: Maximum call stack size exceeded; the recursion keeps
// no locals in linear memory, so it is the engine's stack, not the module's, that overflows);
// "abort": Emscripten's abort() (RuntimeError: Aborted(...)). Any other kind is an error at /kind.
val debug_trap(const std::string& kind) {
  if (kind == "unreachable") __builtin_trap();
  if (kind == "stack_overflow") debug_recurse(0);
  if (kind == "abort") std::abort();
  return envelope([&]() -> Json {
    throw InputError("/kind", "\"" + kind + "\" is not allowed; allowed: unreachable, stack_overflow, abort");
  });
}

}  // namespace

EMSCRIPTEN_BINDINGS(gpuscale) {
  emscripten::function("version", &version_json);
  // Embind overloads by the number of arguments: the context and the progress function are optional.
  emscripten::function("run", &run);
  emscripten::function("run", &run_p);
  emscripten::function("hpa", &hpa);
  emscripten::function("exercise", &exercise);
  emscripten::function("grade", &grade);
  emscripten::function("grade", &grade_c);
  emscripten::function("grade", &grade_cp);
  emscripten::function("explain", &explain);
  emscripten::function("explain", &explain_c);
  emscripten::function("explain", &explain_cp);
  emscripten::function("schema", &schema);
  emscripten::function("nodepool_check", &nodepool_check);
  emscripten::function("debug_trap", &debug_trap);
}
