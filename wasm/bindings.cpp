// The WASM module's API: a handful of JSON-text functions (docs/wasm-api.md), exported as plain C
// functions (no embind, which cost the module about 20 KB of code and the glue 30 KB of JavaScript).
// sim_api.js (linked in with --post-js) gives them their JavaScript names and optional arguments.
// Every call is wrapped so that no exception reaches JavaScript and the module stays usable after an
// error.
//
// Calling convention: every text argument arrives as (pointer, byte length) of UTF-8 in the module's
// memory; a call returns a pointer to its envelope's text, whose length gs_reply_size() then gives.
// The text stays valid until the next call.
#include <emscripten/emscripten.h>

#include <cstddef>
#include <cstdlib>
#include <functional>
#include <string>

#include "gpuscale/api.hpp"
#include "gpuscale/errors.hpp"

using namespace gpuscale;

// Reports progress to the running call's progress function (sim_api.js keeps it).
EM_JS(void, gs_progress, (double fraction, const char* label, std::size_t length),
      { simProgress(fraction, UTF8ToString(label, length)); });

namespace {

std::string reply;  // the last call's envelope

// One envelope for every operation (a template per call site would repeat api::envelope's ~6 KB).
const char* respond(const std::function<Json()>& operation) {
  reply = api::envelope(operation);
  return reply.data();
}

std::string text(const char* data, std::size_t length) { return std::string(data, length); }

// The optional progress function of run, grade and explain: the JS side says whether one was given
// and calls it (synchronously, while the core simulates). An exception the function throws propagates
// to the caller, as from any JS callback.
api::Progress progress_of(int given) {
  if (!given) return {};
  return [](double fraction, const std::string& label) { gs_progress(fraction, label.data(), label.size()); };
}

// Test hook: fails the way a bug in the core would, so the tests can check that the page's worker
// recovers. Only the worker's debug mode (worker.js?debug=1) lets a call reach it.
volatile unsigned debug_sink = 0;

[[gnu::noinline]] unsigned debug_recurse(unsigned depth) {
  if (depth == ~0u) return depth;
  const unsigned deeper = debug_recurse(depth + 1);
  debug_sink = deeper;  // work after the call: it is no tail call, so the optimizer cannot make it a loop
  return deeper;
}

}  // namespace

#define TEXT(name) const char *name, std::size_t name##_n
#define ARG(name) text(name, name##_n)

extern "C" {

EMSCRIPTEN_KEEPALIVE std::size_t gs_reply_size() { return reply.size(); }

EMSCRIPTEN_KEEPALIVE const char* gs_version() { return respond([] { return Json{{"version", api::version()}}; }); }

EMSCRIPTEN_KEEPALIVE const char* gs_run(TEXT(scenario), int progress) {
  return respond([&] { return api::run(ARG(scenario), progress_of(progress)); });
}

EMSCRIPTEN_KEEPALIVE const char* gs_hpa(TEXT(doc)) { return respond([&] { return api::hpa(ARG(doc)); }); }

EMSCRIPTEN_KEEPALIVE const char* gs_exercise(TEXT(def), TEXT(seed)) {
  return respond([&] { return api::exercise(ARG(def), api::parse_seed(ARG(seed))); });
}

EMSCRIPTEN_KEEPALIVE const char* gs_grade(TEXT(def), TEXT(seed), TEXT(answer), TEXT(context), int progress) {
  return respond([&] {
    return api::grade(ARG(def), api::parse_seed(ARG(seed)), ARG(answer), ARG(context), progress_of(progress));
  });
}

EMSCRIPTEN_KEEPALIVE const char* gs_explain(TEXT(def), TEXT(seed), TEXT(context), int progress) {
  return respond([&] { return api::explain(ARG(def), api::parse_seed(ARG(seed)), ARG(context), progress_of(progress)); });
}

EMSCRIPTEN_KEEPALIVE const char* gs_schema() { return respond([] { return api::schema(); }); }

EMSCRIPTEN_KEEPALIVE const char* gs_nodepool_check(TEXT(doc)) {
  return respond([&] { return api::nodepool_check(ARG(doc)); });
}

EMSCRIPTEN_KEEPALIVE const char* gs_schedule(TEXT(doc)) {
  return respond([&] { return api::schedule(ARG(doc)); });
}

EMSCRIPTEN_KEEPALIVE const char* gs_plan(TEXT(input), int progress) {
  return respond([&] { return api::plan(ARG(input), progress_of(progress)); });
}

// kind "unreachable": a wasm trap (WebAssembly.RuntimeError: unreachable); "stack_overflow": the
// engine's call stack runs out (RangeError: Maximum call stack size exceeded; the recursion keeps
// no locals in linear memory, so it is the engine's stack, not the module's, that overflows);
// "abort": Emscripten's abort() (RuntimeError: Aborted(...)). Any other kind is an error at /kind.
EMSCRIPTEN_KEEPALIVE const char* gs_debug_trap(TEXT(kind_text)) {
  const std::string kind = ARG(kind_text);
  if (kind == "unreachable") __builtin_trap();
  if (kind == "stack_overflow") debug_recurse(0);
  if (kind == "abort") std::abort();
  return respond([&]() -> Json {
    throw InputError("/kind", "\"" + kind + "\" is not allowed; allowed: unreachable, stack_overflow, abort");
  });
}

}  // extern "C"
