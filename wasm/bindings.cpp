// The WASM module's API: a handful of JSON-text functions (docs/wasm-api.md). Every call is
// wrapped so that no exception reaches JavaScript and the module stays usable after an error.
#include <emscripten/bind.h>

#include "gpuscale/api.hpp"

using namespace gpuscale;

namespace {

std::string version_json() { return api::envelope([] { return Json{{"version", api::version()}}; }); }
std::string run(const std::string& scenario) { return api::envelope([&] { return api::run(scenario); }); }
std::string hpa(const std::string& doc) { return api::envelope([&] { return api::hpa(doc); }); }
std::string exercise(const std::string& def, const std::string& seed) {
  return api::envelope([&] { return api::exercise(def, api::parse_seed(seed)); });
}
std::string grade(const std::string& def, const std::string& seed, const std::string& answer) {
  return api::envelope([&] { return api::grade(def, api::parse_seed(seed), answer); });
}
std::string explain(const std::string& def, const std::string& seed) {
  return api::envelope([&] { return api::explain(def, api::parse_seed(seed)); });
}
std::string schema() { return api::envelope([] { return api::schema(); }); }
std::string nodepool_check(const std::string& doc) { return api::envelope([&] { return api::nodepool_check(doc); }); }

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
