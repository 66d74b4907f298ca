// Shared exercise machinery: seeded variant parameters, text templates, JSON merging.
#include "exercises/exercise.hpp"

#include <algorithm>
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

ProgressReport progress_share(const ProgressFn& progress, int index, int count, double duration_s, double every_s,
                              std::function<std::string(double t_s)> label) {
  ProgressReport r;
  if (!progress || duration_s <= 0 || count <= 0) return r;
  r.every_s = every_s;
  r.at = [progress, index, count, duration_s, label = std::move(label)](double t_s) {
    progress((index + std::min(1.0, t_s / duration_s)) / count, label(t_s));
  };
  return r;
}

std::string clock_text(double t_s, double duration_s) {
  const double unit = duration_s >= 2 * 86400 ? 86400 : duration_s >= 3 * 3600 ? 3600 : 60;
  const char* name = unit == 86400 ? "day " : unit == 3600 ? "hour " : "minute ";
  const auto whole = [](double v) { return std::to_string(static_cast<long long>(std::ceil(v - 1e-9))); };
  return name + whole(std::max(1.0, t_s / unit)) + " of " + whole(duration_s / unit);
}

RevealPolicy parse_policy(const Json& definition) {
  if (!definition.contains("policy")) throw InputError("/policy", "is required: when the explanation and answers may be shown");
  ObjectReader r(definition.at("policy"), "/policy");
  RevealPolicy p;
  const std::string when = r.require_enum("reveal", {"after_attempt", "after_correct", "after_attempts"});
  p.when = when == "after_attempt" ? RevealPolicy::When::AfterAttempt
           : when == "after_correct" ? RevealPolicy::When::AfterCorrect
                                     : RevealPolicy::When::AfterAttempts;
  if (p.when == RevealPolicy::When::AfterAttempts) {
    p.attempts = static_cast<int>(r.require_int("attempts", 1, 100));
  } else if (r.has("attempts")) {
    throw InputError("/policy/attempts", "only \"after_attempts\" takes a number of attempts");
  }
  r.finish();
  return p;
}

bool policy_reveals(const RevealPolicy& policy, const std::vector<double>& scores) {
  const bool solved = std::any_of(scores.begin(), scores.end(), [](double s) { return s >= 1.0 - 1e-9; });
  switch (policy.when) {
    case RevealPolicy::When::AfterAttempt: return !scores.empty();
    case RevealPolicy::When::AfterCorrect: return solved;
    case RevealPolicy::When::AfterAttempts: return solved || static_cast<int>(scores.size()) >= policy.attempts;
  }
  return false;
}

std::string unlock_sentence(const RevealPolicy& policy, const std::vector<double>& scores) {
  switch (policy.when) {
    case RevealPolicy::When::AfterAttempt: return "The explanation and the answers open after your first attempt.";
    case RevealPolicy::When::AfterCorrect: return "The explanation and the answers open once you have answered every part correctly.";
    case RevealPolicy::When::AfterAttempts: {
      const int left = policy.attempts - static_cast<int>(scores.size());
      return "The explanation and the answers open after " + std::to_string(policy.attempts) + " attempts (" + std::to_string(std::max(0, left)) +
             " more) or once you have answered every part correctly.";
    }
  }
  return "";
}

AttemptHistory parse_history(const Json& history, const std::string& path) {
  ObjectReader r(history, path);
  r.only_keys({"format", "exercise", "seed", "lab_version", "attempts"});
  AttemptHistory h;
  const std::string format = r.require_string("format");
  if (format != "gpuscale-attempts/1") throw InputError(r.child_path("format"), "is \"" + format.substr(0, 40) + "\"; allowed: \"gpuscale-attempts/1\"");
  h.exercise = r.require_string("exercise", "the exercise id", 32);
  h.seed = static_cast<std::uint64_t>(r.require_int("seed", 0, std::int64_t(1) << 53));
  h.lab_version = r.require_string("lab_version", "the lab version that recorded it", 32);
  const Json& list = r.require("attempts", "the list of attempts");
  const std::string list_path = r.child_path("attempts");
  if (!list.is_array()) throw InputError(list_path, std::string("expected an array, found ") + type_name(list));
  if (list.size() > 1000) throw InputError(list_path, "holds " + std::to_string(list.size()) + " attempts; at most 1000");
  for (std::size_t i = 0; i < list.size(); ++i) {
    ObjectReader a(list[i], list_path + "/" + std::to_string(i));
    a.only_keys({"at", "answer", "score", "revealed_before"});
    Attempt at;
    at.at = a.require_string("at", "an ISO-8601 time", 40);
    const Json& answer = a.require("answer", "the answer object as sent to grade");
    if (!answer.is_object()) throw InputError(a.child_path("answer"), std::string("expected an object, found ") + type_name(answer));
    at.answer = answer;
    if (!a.has("score")) throw InputError(a.child_path("score"), "is required (the score recorded, 0 to 1)");
    at.score = a.get_number("score", 0, 0, 1);
    if (!a.has("revealed_before")) throw InputError(a.child_path("revealed_before"), "is required (true or false)");
    at.revealed_before = a.get_bool("revealed_before", false);
    a.finish();
    h.attempts.push_back(std::move(at));
  }
  r.finish();
  return h;
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
    {"3",
     {exercise3::variant, exercise3::grade, exercise3::explain, exercise3::solve,
      {GPUSCALE_COMMON_FIELDS, {"/variant/cause", 'o'}, {"/variant/nodes", 'o'}, {"/variant/extra", 'o'}, {"/variant/zone", 'o'},
       {"/variant/gpu_typo", 'o'}, {"/kai_queues", 'a'}, {"/layers", 'a'}, {"/causes", 'o'}, {"/cause_order", 'a'}, {"/evidence", 'o'},
       {"/fixes", 'o'}, {"/points", 'o'}, {"/questions", 'a'}, {"/lesson_note", 's'}}}},
    {"4",
     {exercise4::variant, exercise4::grade, exercise4::explain, exercise4::solve,
      {GPUSCALE_COMMON_FIELDS, {"/variant/shape", 'o'}, {"/variant/load", 'o'}, {"/variant/burst_s", 'o'}, {"/shapes", 'a'},
       {"/signals", 'a'}, {"/margin", 'n'}, {"/base_scenario/duration_s", 'n'}, {"/base_scenario/slo", 'o'}, {"/base_scenario/cold_start", 'o'},
       {"/base_scenario/cost", 'o'}, {"/base_scenario/pools", 'a'}, {"/feedback", 'o'}, {"/feedback/why", 'o'}, {"/explanation", 's'},
       {"/shape_reasons", 'o'}, {"/lesson_check", 'o'}, {"/lesson_pair", 'o'}}}},
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
  parse_policy(definition);  // last: the fields the grader reads are reported first
}

std::string known_exercise_ids() {
  std::string out;
  for (const Registered& e : kExercises) out += (out.empty() ? "\"" : ", \"") + std::string(e.id) + "\"";
  return out;
}

}  // namespace gpuscale
