// Shared exercise machinery: seeded variant parameters, text templates, JSON merging.
#include "exercises/exercise.hpp"

#include <cmath>
#include <cstdio>

#include "kernel/rng.hpp"

namespace gpuscale {

Json draw_variant_params(const Json& definition, std::uint64_t seed) {
  const std::string id = definition.value("id", std::string("?"));
  Rng rng = Rng::stream(seed, "exercise." + id + ".variant");
  Json params = Json::object();
  if (!definition.contains("variant")) return params;
  const Json& ranges = expect_object(definition["variant"], "/variant");
  // nlohmann's objects iterate in key order, so the draws do not depend on the file's layout.
  for (auto it = ranges.begin(); it != ranges.end(); ++it) {
    const std::string path = "/variant/" + it.key();
    ObjectReader r(it.value(), path);
    double lo = r.get_number("min", 0, -1e9, 1e9);
    double hi = r.get_number("max", lo, lo, 1e9);
    double step = r.get_number("step", 1, 1e-9, 1e9);
    r.finish();
    auto steps = static_cast<std::int64_t>(std::floor((hi - lo) / step + 1e-9));
    double v = lo + step * static_cast<double>(rng.uniform_int(std::int64_t(0), steps));
    // Keep decimal steps exact enough to print: round to 1e-9.
    v = std::round(v * 1e9) / 1e9;
    params[it.key()] = v;
  }
  return params;
}

static std::string format_value(const Json& v) {
  if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
  if (v.is_number()) {
    double d = v.get<double>();
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.4f", d);
    std::string s = buf;
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

std::string fill_template(const std::string& text, const Json& params) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '{') {
      auto close = text.find('}', i);
      if (close != std::string::npos) {
        std::string key = text.substr(i + 1, close - i - 1);
        if (params.contains(key)) {
          out += format_value(params[key]);
          i = close;
          continue;
        }
      }
    }
    out += text[i];
  }
  return out;
}

void merge_json(Json& base, const Json& patch) {
  if (!patch.is_object() || !base.is_object()) {
    base = patch;
    return;
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (base.contains(it.key())) {
      merge_json(base[it.key()], it.value());
    } else {
      base[it.key()] = it.value();
    }
  }
}

namespace {

// The exercises that have graders: one row each.
struct Registered {
  const char* id;
  ExerciseOps ops;
};
// What every definition holds, then each exercise's own fields (exercises/ex*.json).
#define GPUSCALE_COMMON_FIELDS {"/title", 's'}, {"/text", 's'}, {"/variant", 'o'}, {"/base_scenario", 'o'}
const Registered kExercises[] = {
    {"1",
     {exercise1::variant, exercise1::grade, exercise1::explain, exercise1::solve,
      {GPUSCALE_COMMON_FIELDS, {"/variant/quiet_s", 'o'}, {"/variant/spike_s", 'o'}, {"/variant/quiet_rps", 'o'}, {"/variant/spike_rps", 'o'},
       {"/variant/tail_rps", 'o'}, {"/variant/timeout_s", 'o'}, {"/runs", 'o'}, {"/compare", 'o'}, {"/compare/first", 's'},
       {"/compare/second", 's'}, {"/questions", 'a'}, {"/hints", 'o'}, {"/explanation", 's'}, {"/mechanisms", 'o'}, {"/lesson_note", 's'}}}},
    {"2",
     {exercise2::variant, exercise2::grade, exercise2::explain, exercise2::solve,
      {GPUSCALE_COMMON_FIELDS, {"/variant/slo_kind", 'o'}, {"/variant/ttft_target_s", 'o'}, {"/variant/attainment_pct", 'o'},
       {"/variant/web_replicas", 'o'}, {"/variant/web_cpu", 'o'}, {"/variant/web_memory_gib", 'o'}, {"/variant/cost_margin_pct", 'o'},
       {"/starter_yaml", 's'}, {"/reference_nodepool", 'o'}, {"/criteria", 'o'}, {"/messages", 'o'}}}},
    {"5",
     {exercise5::variant, exercise5::grade, exercise5::explain, exercise5::solve,
      {GPUSCALE_COMMON_FIELDS, {"/variant/gpu_hour_usd", 'o'}, {"/variant/failed_request_usd", 'o'}, {"/variant/sla_credit_usd", 'o'},
       {"/variant/model_load_s", 'o'}, {"/variant/rate_scale", 'o'}, {"/baseline", 'o'}, {"/baseline/params", 'o'}, {"/runs", 'o'},
       {"/questions", 'a'}, {"/tolerance", 'n'}, {"/hints", 'o'}, {"/explanation", 's'}}}},
};
#undef GPUSCALE_COMMON_FIELDS

}  // namespace

const ExerciseOps* find_exercise(const std::string& id) {
  for (const Registered& e : kExercises) {
    if (id == e.id) return &e.ops;
  }
  return nullptr;
}

void check_definition(const Json& definition, const ExerciseOps& ops) {
  draw_variant_params(definition, 0);  // the variant ranges first: each is checked as it is drawn
  for (const DefinitionField& f : ops.required) {
    const Json::json_pointer at(f.pointer);
    const std::string where = f.pointer;
    const std::string parent = where.substr(0, where.rfind('/'));
    if (!parent.empty() && !definition.contains(Json::json_pointer(parent))) continue;  // reported at the parent
    if (!definition.contains(at)) throw InputError(where, "is required: the exercise's grader reads it");
    const Json& v = definition.at(at);
    const bool ok = f.type == 's' ? v.is_string() : f.type == 'n' ? v.is_number() : f.type == 'o' ? v.is_object() : v.is_array();
    if (!ok) {
      const char* want = f.type == 's' ? "a string" : f.type == 'n' ? "a number" : f.type == 'o' ? "an object" : "an array";
      throw InputError(where, std::string("expected ") + want + ", found " + type_name(v));
    }
  }
}

std::string known_exercise_ids() {
  std::string out;
  for (const Registered& e : kExercises) out += (out.empty() ? "\"" : ", \"") + std::string(e.id) + "\"";
  return out;
}

}  // namespace gpuscale
