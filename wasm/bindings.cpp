// The WASM module's API: a handful of JSON-text functions (docs/wasm-api.md). Every call is
// wrapped so that no exception reaches JavaScript and the module stays usable after an error.
#include <emscripten/bind.h>
#include <emscripten/val.h>

#include "gpuscale/api.hpp"

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

val version_json() { return envelope([] { return Json{{"version", api::version()}}; }); }
val run(const std::string& scenario) { return envelope([&] { return api::run(scenario); }); }
val hpa(const std::string& doc) { return envelope([&] { return api::hpa(doc); }); }
val exercise(const std::string& def, const std::string& seed) {
  return envelope([&] { return api::exercise(def, api::parse_seed(seed)); });
}
val grade(const std::string& def, const std::string& seed, const std::string& answer) {
  return envelope([&] { return api::grade(def, api::parse_seed(seed), answer); });
}
val explain(const std::string& def, const std::string& seed) {
  return envelope([&] { return api::explain(def, api::parse_seed(seed)); });
}
val schema() { return envelope([] { return api::schema(); }); }
val nodepool_check(const std::string& doc) { return envelope([&] { return api::nodepool_check(doc); }); }

}  // namespace

EMSCRIPTEN_BINDINGS(gpuscale) {
  emscripten::function("version", &version_json);
  emscripten::function("run", &run);
  emscripten::function("hpa", &hpa);
  emscripten::function("exercise", &exercise);
  emscripten::function("grade", &grade);
  emscripten::function("explain", &explain);
  emscripten::function("schema", &schema);
  emscripten::function("nodepool_check", &nodepool_check);
}
