// Exercise 1: on one bursty variant, how many requests does the duty-cycle HPA drop that the
// queue-depth HPA serves, and which mechanism in the decision log makes the difference?
// Every number here comes from simulating the learner's variant; the file gives only text and ranges.
#include <algorithm>
#include <cstdio>
#include <map>

#include "exercises/exercise.hpp"
#include "sim/simulation.hpp"

namespace gpuscale::exercise1 {

namespace {

// The mechanisms a lagging sync can show, in the order ties are broken.
const char* const kMechanisms[] = {"saturated_signal", "cold_start_zero", "within_tolerance", "low_duty_cycle",
                                   "empty_queue", "scale_up_limit", "scale_down_drain"};

// One of the two runs, seen from the comparison.
struct Side {
  std::string name;
  Scenario scenario;
  RunResult run;
  std::int64_t exclusive = 0;            // requests it dropped that the other run completed
  double first_exclusive_drop = -1;      // seconds
  double last_exclusive_drop = -1;       // seconds
  std::vector<std::uint32_t> examples;   // a few of those request ids
};

struct Analysis {
  Json params;
  Side first, second;                    // first: the duty-cycle run; second: the queue-depth run
  const Side* worse = nullptr;           // the side with more exclusive drops (null: none)
  const Side* other = nullptr;
  double window_start = 0, window_end = 0;  // seconds: when the worse side's capacity was decided
  std::map<std::string, std::vector<std::size_t>> evidence;  // mechanism → indices into worse->run.decisions
  std::string mechanism;                 // the dominant one ("no_difference" if none)
};

std::string num(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

Json scenario_for(const Json& def, const Json& params, std::uint64_t seed, const std::string& run) {
  Json sc = def.at("base_scenario");
  sc["seed"] = seed;
  const double quiet = params.at("quiet_s").get<double>(), spike = params.at("spike_s").get<double>();
  const double duration = sc.value("duration_s", 3600.0);
  sc["workload"]["preset"] = "custom";
  sc["workload"]["phases"] = Json::array({
      {{"duration_s", quiet}, {"rate_rps", params.at("quiet_rps")}},
      {{"duration_s", spike}, {"rate_rps", params.at("spike_rps")}},
      {{"duration_s", std::max(1.0, duration - quiet - spike)}, {"rate_rps", params.at("tail_rps")}},
  });
  sc["workload"]["timeout_s"] = params.at("timeout_s");
  merge_json(sc, def.at("runs").at(run).at("scenario"));
  return sc;
}

Json derived_params(const Json& def, std::uint64_t seed) {
  Json p = draw_variant_params(def, seed);
  p["spike_start_s"] = p.at("quiet_s");
  p["spike_end_s"] = p.at("quiet_s").get<double>() + p.at("spike_s").get<double>();
  return p;
}

// Names the mechanism behind one sync at which this HPA asked for fewer replicas than the other
// run's HPA did at the same instant. Read from the arithmetic the sync logged.
std::string classify(const DecisionRecord& d, const std::string& metric, double tolerance) {
  const bool up = d.ratio > 1 + tolerance;
  if (up && d.metric_proposal <= d.current_replicas && d.unready_pods + d.missing_pods > 0) return "cold_start_zero";
  if (metric == "DCGM_FI_DEV_GPU_UTIL") {
    if (up) return "saturated_signal";  // the duty cycle cannot exceed 100 %: ratio <= 100 / target
    if (d.ratio >= 1 - tolerance) return "within_tolerance";
    return "low_duty_cycle";
  }
  if (up) return "scale_up_limit";
  if (metric == "vllm:num_requests_waiting") return "empty_queue";
  return "within_tolerance";
}

std::string hpa_metric_name(const Scenario& sc) {
  const auto& spec = sc.pools.front().autoscaler.hpa;
  if (!spec || spec->metrics.empty()) return "";
  const hpa::MetricSpec& m = spec->metrics.front();
  const bool named = m.type == hpa::MetricSourceType::Pods || m.type == hpa::MetricSourceType::External ||
                     m.type == hpa::MetricSourceType::Object;
  return named ? m.metric.name : "";
}

void count_exclusive(Side& a, const Side& b) {
  const std::size_t n = std::min(a.run.requests.size(), b.run.requests.size());
  for (std::size_t i = 0; i < n; ++i) {
    const auto& ra = a.run.requests[i];
    if (!ra.dropped_at || !b.run.requests[i].completed_at) continue;
    ++a.exclusive;
    if (a.examples.size() < 5) a.examples.push_back(ra.id);
    if (a.first_exclusive_drop < 0) a.first_exclusive_drop = *ra.dropped_at;
    a.first_exclusive_drop = std::min(a.first_exclusive_drop, *ra.dropped_at);
    a.last_exclusive_drop = std::max(a.last_exclusive_drop, *ra.dropped_at);
  }
}

Analysis analyse(const Json& def, std::uint64_t seed, const GradeContext& context = {}) {
  Analysis an;
  an.params = derived_params(def, seed);
  an.first.name = def.at("compare").at("first").get<std::string>();
  an.second.name = def.at("compare").at("second").get<std::string>();
  int index = 0;
  for (Side* side : {&an.first, &an.second}) {
    side->scenario = parse_scenario(scenario_for(def, an.params, seed, side->name));
    side->scenario.output.decisions = true;
    const double duration = side->scenario.duration_s;
    const std::string label = def.at("runs").at(side->name).value("short", side->name);
    side->run = run_simulation(side->scenario, {},
                               progress_share(context.progress, index++, 2, duration, duration / 10,
                                              [label, duration](double t) { return label + ": " + clock_text(t, duration); }));
  }
  // Same seed, same arrivals: request i is the same request in both runs.
  count_exclusive(an.first, an.second);
  count_exclusive(an.second, an.first);

  an.mechanism = "no_difference";
  if (an.first.exclusive == 0 && an.second.exclusive == 0) return an;
  an.worse = an.first.exclusive >= an.second.exclusive ? &an.first : &an.second;
  an.other = an.worse == &an.first ? &an.second : &an.first;
  const Side& w = *an.worse;

  // The capacity that met the first lost request was decided one cold start (plus the client's
  // patience) earlier; the lost requests keep coming until the last one.
  const ColdStartConfig& cs = w.scenario.cold_start;
  const double cold = (cs.warm_nodes ? 0 : cs.node_provisioning_s) + cs.model_load_s + cs.warmup_s;
  an.window_start = std::max(0.0, w.first_exclusive_drop - cold - w.scenario.workload.timeout_s);
  an.window_end = w.last_exclusive_drop;

  std::map<double, std::int32_t> other_desired;
  for (const auto& d : an.other->run.decisions) {
    if (d.controller == "hpa") other_desired[d.t_s] = d.desired_replicas;
  }
  const std::string metric = hpa_metric_name(w.scenario);
  for (std::size_t i = 0; i < w.run.decisions.size(); ++i) {
    const DecisionRecord& d = w.run.decisions[i];
    if (d.t_s < an.window_start || d.t_s > an.window_end) continue;
    if (d.controller == "lifecycle" && d.explanation.find("requests lost") != std::string::npos) {
      an.evidence["scale_down_drain"].push_back(i);
      continue;
    }
    if (d.controller != "hpa") continue;
    auto it = other_desired.find(d.t_s);
    if (it == other_desired.end() || it->second <= d.desired_replicas) continue;
    an.evidence[classify(d, metric, w.scenario.pools.front().autoscaler.tolerance)].push_back(i);
  }
  std::size_t best = 0;
  for (const char* m : kMechanisms) {
    auto it = an.evidence.find(m);
    if (it != an.evidence.end() && it->second.size() > best) {
      best = it->second.size();
      an.mechanism = m;
    }
  }
  return an;
}

Json public_questions(const Json& def) {
  Json qs = Json::array();
  for (const auto& q : def.at("questions")) {
    Json out{{"id", q.at("id")}, {"type", q.at("type")}, {"prompt", q.at("prompt")}};
    if (q.contains("choices")) {
      Json choices = Json::array();
      for (const auto& c : q["choices"]) choices.push_back({{"id", c.at("id")}, {"text", c.at("text")}});
      out["choices"] = choices;
    }
    qs.push_back(out);
  }
  return qs;
}

Json refs(const Side& side, const std::vector<std::size_t>& indices, std::size_t max) {
  Json out = Json::array();
  for (std::size_t k = 0; k < indices.size() && k < max; ++k) {
    const auto& d = side.run.decisions[indices[k]];
    out.push_back({{"run", side.name}, {"index", indices[k]}, {"t_s", d.t_s}});
  }
  return out;
}

std::string times_text(const Json& r) {
  std::string s;
  for (const auto& x : r) s += (s.empty() ? "t = " : ", ") + num(x["t_s"].get<double>(), 0) + " s";
  return s;
}

const Json& question(const Json& def, const char* id) {
  for (const auto& q : def.at("questions")) {
    if (q.at("id") == id) return q;
  }
  throw InputError("/questions", std::string("the exercise has no question \"") + id + "\"");
}


// Template values every text of this exercise may use.
Json text_params(const Json& def, const Analysis& an) {
  Json p = an.params;
  const Json& runs = def.at("runs");
  p["first_label"] = runs.at(an.first.name).at("label");
  p["second_label"] = runs.at(an.second.name).at("label");
  p["requests"] = an.first.run.summary.num_requests;
  p["dropped_first"] = an.first.run.summary.num_dropped;
  p["dropped_second"] = an.second.run.summary.num_dropped;
  p["exclusive_first"] = an.first.exclusive;
  p["exclusive_second"] = an.second.exclusive;
  p["mechanism"] = an.mechanism;
  p["worse_label"] = an.worse ? runs.at(an.worse->name).at("label") : Json("neither run");
  p["other_label"] = an.other ? runs.at(an.other->name).at("label") : Json("neither run");
  p["window_start"] = num(an.window_start, 0);
  p["window_end"] = num(an.window_end, 0);
  return p;
}

// Grades one "how many requests did run X drop that run Y served" question.
Json grade_count(const Json& def, const std::string& id, std::optional<std::int64_t> given, const Side& dropping,
                 const Side& serving, Json params) {
  const Json& hints = def.at("hints");
  Json q{{"id", id}};
  params["dropping_label"] = def.at("runs").at(dropping.name).at("label");
  params["serving_label"] = def.at("runs").at(serving.name).at("label");
  params["count"] = dropping.exclusive;
  params["dropping_total"] = dropping.run.summary.num_dropped;
  params["serving_total"] = serving.run.summary.num_dropped;
  params["first_drop_t"] = dropping.first_exclusive_drop < 0 ? std::string("(none)") : num(dropping.first_exclusive_drop, 0);
  if (!given) {
    q["correct"] = false;
    q["feedback"] = "No answer yet.";
    return q;
  }
  if (*given == dropping.exclusive) {
    q["correct"] = true;
    q["feedback"] = fill_template(hints.at("count_correct").get<std::string>(), params);
    return q;
  }
  q["correct"] = false;
  const std::int64_t totals = dropping.run.summary.num_dropped - serving.run.summary.num_dropped;
  const char* key = (*given == totals && totals != dropping.exclusive) ? "count_difference_of_totals"
                    : (*given > dropping.exclusive)                    ? "count_too_high"
                                                                       : "count_too_low";
  q["feedback"] = fill_template(hints.at(key).get<std::string>(), params);
  q["hint"] = fill_template(hints.at(dropping.exclusive > 0 ? "count_where" : "count_where_none").get<std::string>(), params);
  if (dropping.first_exclusive_drop >= 0) {
    q["decision_refs"] = Json::array({{{"run", dropping.name}, {"t_s", dropping.first_exclusive_drop}}});
  }
  return q;
}

std::vector<std::string> choice_ids(const Json& def, const char* qid) {
  std::vector<std::string> ids;
  for (const auto& c : question(def, qid).at("choices")) ids.push_back(c.at("id").get<std::string>());
  return ids;
}

}  // namespace

Json variant(const Json& def, std::uint64_t seed) {
  Json params = derived_params(def, seed);
  Json scenarios = Json::object();
  Json labels = Json::object();
  for (auto it = def.at("runs").begin(); it != def.at("runs").end(); ++it) {
    scenarios[it.key()] = scenario_for(def, params, seed, it.key());
    parse_scenario(scenarios[it.key()]);  // a bad exercise file fails here, not in the page
    labels[it.key()] = it.value().at("label");
  }
  return {{"id", def.at("id")},
          {"seed", seed},
          {"title", def.at("title")},
          {"text", fill_template(def.at("text").get<std::string>(), params)},
          {"params", params},
          {"runs", labels},
          {"compare", def.at("compare")},
          {"scenarios", scenarios},
          {"questions", public_questions(def)}};
}

Json solve(const Json& def, std::uint64_t seed) {
  Analysis an = analyse(def, seed);
  Json evidence = Json::object();
  for (const auto& [m, idx] : an.evidence) evidence[m] = idx.size();
  return {{"answers", {{"a", an.first.exclusive}, {"b", an.mechanism}, {"c", an.second.exclusive}}},
          {"dropped", {{an.first.name, an.first.run.summary.num_dropped}, {an.second.name, an.second.run.summary.num_dropped}}},
          {"worse", an.worse ? Json(an.worse->name) : Json(nullptr)},
          {"evidence", evidence},
          {"window_s", {an.window_start, an.window_end}},
          {"example_request_ids", {{an.first.name, an.first.examples}, {an.second.name, an.second.examples}}}};
}

Answer parse_answer(const Json& def, const Json& answer) {
  Answer out;
  ObjectReader r(answer, "");
  out.a = r.get_optional_int("a", 0, 10'000'000);
  out.c = r.get_optional_int("c", 0, 10'000'000);
  if (const Json* v = r.raw("b")) {
    const auto ids = choice_ids(def, "b");
    if (!v->is_string() || std::find(ids.begin(), ids.end(), v->get<std::string>()) == ids.end()) {
      std::string list;
      for (const auto& id : ids) list += (list.empty() ? "" : ", ") + ("\"" + id + "\"");
      throw InputError("/b", "expected one of " + list);
    }
    out.b = v->get<std::string>();
  }
  r.finish();
  return out;
}

Json grade(const Json& def, std::uint64_t seed, const Json& answer, const GradeContext& context) {
  const Answer given = parse_answer(def, answer);
  const std::optional<std::int64_t>& a = given.a;
  const std::optional<std::string>& b = given.b;
  const std::optional<std::int64_t>& c = given.c;

  Analysis an = analyse(def, seed, context);
  const Json& hints = def.at("hints");
  Json params = text_params(def, an);
  Json qa = grade_count(def, "a", a, an.first, an.second, params);
  Json qc = grade_count(def, "c", c, an.second, an.first, params);

  Json qb{{"id", "b"}};
  if (!b) {
    qb["correct"] = false;
    qb["feedback"] = "No answer yet.";
  } else if (*b == an.mechanism) {
    qb["correct"] = true;
    qb["feedback"] = fill_template(hints.at(an.worse ? "b_correct" : "b_correct_none").get<std::string>(), params);
  } else {
    qb["correct"] = false;
    auto own = an.evidence.find(*b);
    params["chosen_count"] = own == an.evidence.end() ? 0 : own->second.size();
    const char* key = !an.worse ? "b_none" : (own != an.evidence.end() ? "b_present_not_dominant" : "b_absent");
    qb["feedback"] = fill_template(hints.at(key).get<std::string>(), params);
    if (an.worse) {
      auto dom = an.evidence.find(an.mechanism);
      Json r3 = dom == an.evidence.end() ? Json::array() : refs(*an.worse, dom->second, 3);
      params["evidence_times"] = r3.empty() ? std::string("(none)") : times_text(r3);
      qb["hint"] = fill_template(hints.at("b_where").get<std::string>(), params);
      qb["decision_refs"] = r3;
    }
  }
  Json questions = Json::array({qa, qb, qc});
  int right = 0;
  for (const auto& q : questions) right += q["correct"].get<bool>() ? 1 : 0;
  return {{"score", right / 3.0}, {"correct", right == 3}, {"questions", questions}};
}

Json explain(const Json& def, std::uint64_t seed, const GradeContext& context) {
  Analysis an = analyse(def, seed, context);
  Json params = text_params(def, an);
  params["peak_first"] = an.first.run.summary.peak_replicas;
  params["peak_second"] = an.second.run.summary.peak_replicas;
  params["gpu_hours_first"] = num(an.first.run.summary.gpu_hours, 1);
  params["gpu_hours_second"] = num(an.second.run.summary.gpu_hours, 1);
  params["idle_first"] = num(an.first.run.summary.idle_gpu_minutes, 0);
  params["idle_second"] = num(an.second.run.summary.idle_gpu_minutes, 0);
  std::string counts;
  for (const char* m : kMechanisms) {
    auto it = an.evidence.find(m);
    if (it == an.evidence.end()) continue;
    counts += std::string(counts.empty() ? "" : ", ") + m + " " + std::to_string(it->second.size());
  }
  params["mechanism_counts"] = counts.empty() ? std::string("none") : counts;
  std::string text = fill_template(def.at("explanation").get<std::string>(), params);
  const Json& mech = def.at("mechanisms");
  if (mech.contains(an.mechanism)) text += "\n\n" + fill_template(mech[an.mechanism].get<std::string>(), params);
  // One representative sync, with the controller's own arithmetic.
  auto dom = an.evidence.find(an.mechanism);
  if (an.worse && dom != an.evidence.end() && !dom->second.empty()) {
    const auto& d = an.worse->run.decisions[dom->second.front()];
    text += "\n\nAt t = " + num(d.t_s, 0) + " s, " + params["worse_label"].get<std::string>() + ":\n" + d.explanation;
  }
  text += "\n\n" + fill_template(def.at("lesson_note").get<std::string>(), params);
  return {{"text", text}, {"answers", {{"a", an.first.exclusive}, {"b", an.mechanism}, {"c", an.second.exclusive}}}};
}

}  // namespace gpuscale::exercise1
