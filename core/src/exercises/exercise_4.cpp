// Exercise 4: one autoscaling signal for the prefill pool of a disaggregated server, one for its decode
// pool. The grader runs every pair of the definition's signals on the learner's variant (the same
// requests in each run) and ranks them by goodput per dollar; a role's pick passes when the best pair it
// is part of comes within the definition's margin of the grid's best. Every figure comes from those runs.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "exercises/exercise.hpp"
#include "serving/engine_profiles.hpp"
#include "sim/simulation.hpp"

namespace gpuscale::exercise4 {

namespace {

const char* const kRoles[] = {"prefill", "decode"};

// What one pool did in one run: the figures the feedback reads.
struct PoolFigures {
  int peak_replicas = 0;
  double mean_replicas = 0;
  double util_mean = 0;      // DCGM_FI_DEV_GPU_UTIL, mean over the scrapes with a replica (percent)
  double util_high = 0;      // share of those scrapes at 95 % or more
  double fb_median_pct = 0;  // DCGM_FI_DEV_FB_USED / the GPU's memory, median over scrapes with a replica (percent)
  double fb_over = 0;        // share of those scrapes above the GPU-memory signal's 60000 MiB
  double kv_max = 0;         // vllm:kv_cache_usage_perc, highest mean over its ready replicas (0-1)
  std::int64_t waiting_max = 0;  // vllm:num_requests_waiting summed over its replicas, highest
  double ttft_max = 0;       // the pool's own windowed P99 TTFT, highest (seconds)
};

// One pair of the grid.
struct Cell {
  int prefill = 0, decode = 0;  // indices into the definition's signals
  double goodput_rps = 0, slo_attainment = 0, cost_usd = 0;
  std::int64_t num_requests = 0, num_dropped = 0;
  double per_dollar = 0;        // requests that met the SLO / cost
  PoolFigures pools[2];
};

struct Analysis {
  Json params;
  std::vector<std::string> signals;  // ids, in the definition's order
  std::vector<Cell> cells;           // prefill-major: cells[p × n + d]
  int best = 0;                      // the best cell (the first of equals, in grid order)
  std::vector<double> role_score[2]; // per role and signal: the best per_dollar of its pairs
  std::vector<int> role_cell[2];     // ... and which cell that is
  double margin = 0.1;
  bool passes(int role, int signal) const { return role_score[role][static_cast<std::size_t>(signal)] >= (1 - margin) * cells[static_cast<std::size_t>(best)].per_dollar; }
};

std::string num(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

const Json& signal_def(const Json& def, int i) { return def.at("signals").at(static_cast<std::size_t>(i)); }
std::string signal_label(const Json& def, int i) { return signal_def(def, i).at("label").get<std::string>(); }

int signal_index(const Analysis& an, const std::string& id) {
  const auto it = std::find(an.signals.begin(), an.signals.end(), id);
  return it == an.signals.end() ? -1 : static_cast<int>(it - an.signals.begin());
}

Json derived_params(const Json& def, std::uint64_t seed) {
  Json p = draw_variant_params(def, seed);
  const Json& shapes = def.at("shapes");
  const auto shape_index = static_cast<std::size_t>(p.at("shape").get<double>());
  if (shape_index >= shapes.size()) throw InputError("/variant/shape", "draws a shape the definition's shapes do not have");
  const Json& shape = shapes.at(shape_index);
  const double load = p.at("load").get<double>();
  const Json& base = def.at("base_scenario");
  p["shape_id"] = shape.at("id");
  p["shape_label"] = shape.at("label");
  p["shape_text"] = shape.at("text");
  // Rates to the hundredth of a request per second, as the text shows them.
  for (const char* k : {"quiet_rps", "burst_rps", "tail_rps"}) p[k] = std::round(shape.at(k).get<double>() * load * 100) / 100;
  p["prompt_mean"] = shape.at("prompt_mean");
  p["output_mean"] = shape.at("output_mean");
  p["quiet_s"] = 300;
  p["duration_min"] = base.at("duration_s").get<double>() / 60;
  p["ttft_slo_s"] = base.at("slo").at("ttft_s");
  p["itl_slo_s"] = base.at("slo").at("itl_s");
  p["timeout_s"] = base.at("workload").at("timeout_s");
  p["node_s"] = base.at("cold_start").at("node_provisioning_s");
  p["load_s"] = base.at("cold_start").at("model_load_s");
  p["warmup_s"] = base.at("cold_start").at("warmup_s");
  p["gpu_hour_usd"] = base.at("cost").at("gpu_hour_usd");
  p["max_replicas"] = base.at("pools").at(0).at("autoscaler").at("max_replicas");
  p["margin_pct"] = std::round(def.at("margin").get<double>() * 100);
  return p;
}

// The scenario of one pair: the base, the variant's arrivals and token lengths, each pool's signal.
Json scenario_for(const Json& def, const Json& params, std::uint64_t seed, int prefill, int decode) {
  Json sc = def.at("base_scenario");
  sc["seed"] = seed;
  const Json& shape = def.at("shapes").at(static_cast<std::size_t>(params.at("shape").get<double>()));
  const double duration = sc.at("duration_s").get<double>();
  const double quiet = params.at("quiet_s").get<double>(), burst = params.at("burst_s").get<double>();
  Json& w = sc["workload"];
  w["phases"] = Json::array({{{"duration_s", quiet}, {"rate_rps", params.at("quiet_rps")}},
                             {{"duration_s", burst}, {"rate_rps", params.at("burst_rps")}},
                             {{"duration_s", std::max(1.0, duration - quiet - burst)}, {"rate_rps", params.at("tail_rps")}}});
  w["prompt_tokens"]["mean"] = shape.at("prompt_mean");
  w["prompt_tokens"]["cv"] = shape.at("prompt_cv");
  w["output_tokens"]["mean"] = shape.at("output_mean");
  w["output_tokens"]["cv"] = shape.at("output_cv");
  merge_json(sc["pools"][0]["autoscaler"], signal_def(def, prefill).at("autoscaler"));
  merge_json(sc["pools"][1]["autoscaler"], signal_def(def, decode).at("autoscaler"));
  return sc;
}

// The GPU-memory signal's target in the definition (MiB per GPU; 60000, the strategy's default, without one).
double memory_target_mib(const Json& def) {
  for (const Json& sig : def.at("signals")) {
    const Json& a = sig.at("autoscaler");
    if (a.value("strategy", "") == "gpu_memory") return a.value("target", 60000.0);
  }
  return 60000;
}

// memory_target_mib: the GPU-memory signal's target, for the share of scrapes above it.
PoolFigures pool_figures(const PoolResult& pool, double gpu_memory_mib, double memory_target_mib) {
  PoolFigures f;
  f.peak_replicas = pool.summary.peak_replicas;
  f.mean_replicas = pool.summary.mean_replicas;
  const Series& s = pool.series;
  double util_sum = 0;
  int with_replica = 0, high = 0, over = 0;
  std::vector<double> fb;
  for (std::size_t i = 0; i < s.t_s.size(); ++i) {
    f.kv_max = std::max(f.kv_max, s.kv_cache_usage_perc[i]);
    f.waiting_max = std::max<std::int64_t>(f.waiting_max, s.num_requests_waiting[i]);
    f.ttft_max = std::max(f.ttft_max, s.ttft_p99_s[i]);
    if (s.ready_replicas[i] <= 0) continue;
    ++with_replica;
    util_sum += s.gpu_util[i];
    high += s.gpu_util[i] >= 95 ? 1 : 0;
    over += s.fb_used_mib[i] > memory_target_mib ? 1 : 0;
    fb.push_back(gpu_memory_mib > 0 ? s.fb_used_mib[i] / gpu_memory_mib * 100 : 0);
  }
  f.util_mean = with_replica ? util_sum / with_replica : 0;
  f.util_high = with_replica ? static_cast<double>(high) / with_replica : 0;
  f.fb_over = with_replica ? static_cast<double>(over) / with_replica : 0;
  if (!fb.empty()) {
    std::sort(fb.begin(), fb.end());
    f.fb_median_pct = fb[(fb.size() - 1) / 2];
  }
  return f;
}

Json pool_json(const PoolFigures& f) {
  return {{"peak_replicas", f.peak_replicas}, {"mean_replicas", f.mean_replicas}, {"gpu_util_mean", f.util_mean},
          {"gpu_util_high", f.util_high},     {"fb_used_median_pct", f.fb_median_pct}, {"fb_over_target", f.fb_over},  {"kv_cache_max", f.kv_max},
          {"waiting_max", f.waiting_max},     {"ttft_p99_max_s", f.ttft_max}};
}

PoolFigures read_pool(const Json& j, const std::string& path) {
  ObjectReader r(j, path);
  PoolFigures f;
  f.peak_replicas = static_cast<int>(r.require_int("peak_replicas", 0, 100'000));
  f.mean_replicas = r.get_number("mean_replicas", 0, 0, 100'000);
  f.util_mean = r.get_number("gpu_util_mean", 0, 0, 100);
  f.util_high = r.get_number("gpu_util_high", 0, 0, 1);
  f.fb_median_pct = r.get_number("fb_used_median_pct", 0, 0, 100);
  f.fb_over = r.get_number("fb_over_target", 0, 0, 1);
  f.kv_max = r.get_number("kv_cache_max", 0, 0, 1);
  f.waiting_max = r.get_int("waiting_max", 0, 0, 100'000'000);
  f.ttft_max = r.get_number("ttft_p99_max_s", 0, 0, 1e9);
  r.finish();
  return f;
}

Json simulated_json(const Analysis& an) {
  Json cells = Json::array();
  for (const Cell& c : an.cells) {
    cells.push_back({{"prefill", an.signals[static_cast<std::size_t>(c.prefill)]},
                     {"decode", an.signals[static_cast<std::size_t>(c.decode)]},
                     {"goodput_rps", c.goodput_rps},
                     {"slo_attainment", c.slo_attainment},
                     {"cost_usd", c.cost_usd},
                     {"goodput_per_usd", c.per_dollar},
                     {"num_requests", c.num_requests},
                     {"num_dropped", c.num_dropped},
                     {"pools", {{"prefill", pool_json(c.pools[0])}, {"decode", pool_json(c.pools[1])}}}});
  }
  return {{"cells", cells}};
}

void rank(Analysis& an) {
  const int n = static_cast<int>(an.signals.size());
  an.best = 0;
  for (int i = 1; i < static_cast<int>(an.cells.size()); ++i)
    if (an.cells[static_cast<std::size_t>(i)].per_dollar > an.cells[static_cast<std::size_t>(an.best)].per_dollar) an.best = i;
  for (int role = 0; role < 2; ++role) {
    an.role_score[role].assign(static_cast<std::size_t>(n), -1);
    an.role_cell[role].assign(static_cast<std::size_t>(n), 0);
  }
  for (int i = 0; i < static_cast<int>(an.cells.size()); ++i) {
    const Cell& c = an.cells[static_cast<std::size_t>(i)];
    for (int role = 0; role < 2; ++role) {
      const auto s = static_cast<std::size_t>(role == 0 ? c.prefill : c.decode);
      if (c.per_dollar > an.role_score[role][s]) {
        an.role_score[role][s] = c.per_dollar;
        an.role_cell[role][s] = i;
      }
    }
  }
}

Analysis analyse(const Json& def, std::uint64_t seed, const GradeContext& context) {
  Analysis an;
  an.params = derived_params(def, seed);
  an.margin = def.at("margin").get<double>();
  for (const Json& s : def.at("signals")) an.signals.push_back(s.at("id").get<std::string>());
  const int n = static_cast<int>(an.signals.size());
  if (context.simulated) {
    // Every pair's figures from an earlier grade of this variant: nothing to simulate.
    ObjectReader r(*context.simulated, "/context/simulated/data");
    const Json* cells = r.raw("cells");
    r.finish();
    const std::string path = "/context/simulated/data/cells";
    if (!cells || !cells->is_array() || cells->size() != static_cast<std::size_t>(n * n)) {
      throw InputError(path, "needs the " + std::to_string(n * n) + " pairs of the grid, prefill-major in the signals' order");
    }
    for (int i = 0; i < n * n; ++i) {
      const std::string at = path + "/" + std::to_string(i);
      ObjectReader cr((*cells)[static_cast<std::size_t>(i)], at);
      Cell c;
      c.prefill = i / n;
      c.decode = i % n;
      if (cr.get_string("prefill", "", 64) != an.signals[static_cast<std::size_t>(c.prefill)] ||
          cr.get_string("decode", "", 64) != an.signals[static_cast<std::size_t>(c.decode)]) {
        throw InputError(at, "expected the pair " + an.signals[static_cast<std::size_t>(c.prefill)] + " / " +
                                 an.signals[static_cast<std::size_t>(c.decode)] + " here");
      }
      c.goodput_rps = cr.get_number("goodput_rps", 0, 0, 1e9);
      c.slo_attainment = cr.get_number("slo_attainment", 0, 0, 1);
      c.cost_usd = cr.get_number("cost_usd", 0, 0, 1e12);
      c.per_dollar = cr.get_number("goodput_per_usd", 0, 0, 1e12);
      c.num_requests = cr.get_int("num_requests", 0, 0, 100'000'000);
      c.num_dropped = cr.get_int("num_dropped", 0, 0, 100'000'000);
      const Json* pools = cr.raw("pools");
      cr.finish();
      if (!pools) throw InputError(at + "/pools", "required: the two pools' figures");
      ObjectReader pr(*pools, at + "/pools");
      const Json* p = pr.raw("prefill");
      const Json* d = pr.raw("decode");
      pr.finish();
      if (!p || !d) throw InputError(at + "/pools", "needs prefill and decode");
      c.pools[0] = read_pool(*p, at + "/pools/prefill");
      c.pools[1] = read_pool(*d, at + "/pools/decode");
      an.cells.push_back(c);
    }
  } else {
    const double duration = def.at("base_scenario").at("duration_s").get<double>();
    const double memory_target = memory_target_mib(def);
    for (int i = 0; i < n * n; ++i) {
      Cell c;
      c.prefill = i / n;
      c.decode = i % n;
      const Scenario sc = parse_scenario(scenario_for(def, an.params, seed, c.prefill, c.decode));
      const std::string label = "prefill on " + signal_label(def, c.prefill) + ", decode on " + signal_label(def, c.decode);
      const RunResult r = run_simulation(sc, {},
                                         progress_share(context.progress, i, n * n, duration, duration / 2,
                                                        [label, duration](double t) { return label + ": " + clock_text(t, duration); }));
      c.goodput_rps = r.summary.goodput_rps;
      c.slo_attainment = r.summary.slo_attainment;
      c.cost_usd = r.summary.cost_usd;
      c.num_requests = r.summary.num_requests;
      c.num_dropped = r.summary.num_dropped;
      c.per_dollar = c.cost_usd > 0 ? c.goodput_rps * sc.duration_s / c.cost_usd : 0;
      for (int role = 0; role < 2; ++role) {
        const auto k = static_cast<std::size_t>(role);
        c.pools[role] = pool_figures(r.pools.at(k), static_cast<double>(engine_profile(sc.pools[k].engine.profile).gpu_memory_mib), memory_target);
      }
      an.cells.push_back(c);
    }
  }
  rank(an);
  return an;
}

std::string pair_text(const Json& def, const Analysis& an, int cell) {
  const Cell& c = an.cells[static_cast<std::size_t>(cell)];
  return "prefill on " + signal_label(def, c.prefill) + ", decode on " + signal_label(def, c.decode);
}

Json text_params(const Json& def, const Analysis& an) {
  Json p = an.params;
  const Cell& b = an.cells[static_cast<std::size_t>(an.best)];
  p["best"] = num(b.per_dollar, 1);
  // Pairs whose runs came out the same (a signal that never moved its pool gives the same run as
  // another that did not) share the best figure: name them all.
  std::string ties;
  int tied = 0;
  for (int i = 0; i < static_cast<int>(an.cells.size()); ++i) {
    if (i == an.best || an.cells[static_cast<std::size_t>(i)].per_dollar != b.per_dollar) continue;
    ++tied;
    ties += "; " + pair_text(def, an, i);
  }
  p["best_pair_text"] = pair_text(def, an, an.best) + (tied ? " (tied with " + std::to_string(tied) + " other pair" + (tied > 1 ? "s" : "") + ", the same figure: " + ties.substr(2) + ")" : "");
  p["best_slo_pct"] = num(b.slo_attainment * 100, 1);
  p["best_cost"] = num(b.cost_usd, 2);
  p["need_pct"] = num((1 - an.margin) * 100, 0);
  for (int role = 0; role < 2; ++role) {
    std::string list;
    for (int s = 0; s < static_cast<int>(an.signals.size()); ++s)
      if (an.passes(role, s)) list += (list.empty() ? "" : ", ") + signal_label(def, s);
    p[std::string(kRoles[role]) + "_pass"] = list;
  }
  return p;
}

void fill_pool(Json& p, const PoolFigures& f, const std::string& prefix) {
  p[prefix + "mean_replicas"] = num(f.mean_replicas, 1);
  p[prefix + "peak_replicas"] = f.peak_replicas;
}

// One role's verdict for the learner's pair (prefill, decode).
Json grade_role(const Json& def, const Analysis& an, int role, const std::optional<std::string>& pick, int own_cell, Json params) {
  const Json& fb = def.at("feedback");
  Json q{{"id", kRoles[role]}};
  if (!pick) {
    q["correct"] = false;
    q["feedback"] = fb.at("no_answer");
    return q;
  }
  const int s = signal_index(an, *pick);
  const double score = an.role_score[role][static_cast<std::size_t>(s)];
  const int cell = an.role_cell[role][static_cast<std::size_t>(s)];
  const Cell& best = an.cells[static_cast<std::size_t>(an.best)];
  const int best_signal = role == 0 ? best.prefill : best.decode;
  params["role"] = kRoles[role];
  params["signal_label"] = signal_label(def, s);
  params["pair_text"] = pair_text(def, an, cell);
  params["score"] = num(score, 1);
  params["score_pct"] = num(best.per_dollar > 0 ? score / best.per_dollar * 100 : 0, 1);
  const bool pass = an.passes(role, s);
  q["correct"] = pass;
  q["score_ratio"] = best.per_dollar > 0 ? score / best.per_dollar : 0;
  q["best_cell"] = cell;
  std::string text = fill_template(fb.at(pass && score == best.per_dollar ? "pass_best" : pass ? "pass" : "fail").get<std::string>(), params);
  // What the simulation showed of this signal in the learner's own run.
  const Cell& own = an.cells[static_cast<std::size_t>(own_cell)];
  const PoolFigures& f = own.pools[role];
  params["util_mean"] = num(f.util_mean, 0);
  params["util_high_pct"] = num(f.util_high * 100, 0);
  params["fb_median_pct"] = num(f.fb_median_pct, 0);
  params["fb_over_pct"] = num(f.fb_over * 100, 0);
  params["memory_target"] = num(memory_target_mib(def), 0);
  params["gmu_pct"] = num(def.at("base_scenario").at("pools").at(static_cast<std::size_t>(role)).value("engine", Json::object()).value("gpu_memory_utilization", 0.9) * 100, 0);
  params["waiting_max"] = f.waiting_max;
  params["kv_max_pct"] = num(f.kv_max * 100, 0);
  params["ttft_max"] = num(f.ttft_max, 2);
  params["kv_note"] = role == 0 ? fb.at("kv_note_prefill") : Json("");
  params["ttft_note"] = fb.at(role == 0 ? "ttft_note_prefill" : "ttft_note_decode");
  const Json& why = fb.at("why");
  if (why.contains(*pick)) text += " " + fill_template(why.at(*pick).get<std::string>(), params);
  // Replicas and outcome beside the role's best signal's best pair.
  if (s != best_signal || !pass) {
    const Cell& bc = an.cells[static_cast<std::size_t>(an.role_cell[role][static_cast<std::size_t>(best_signal)])];
    fill_pool(params, f, "");
    fill_pool(params, bc.pools[role], "best_");
    params["best_signal_label"] = signal_label(def, best_signal);
    params["slo_pct"] = num(own.slo_attainment * 100, 1);
    params["cost"] = num(own.cost_usd, 2);
    text += " " + fill_template(fb.at("compare").get<std::string>(), params);
  }
  q["feedback"] = text;
  return q;
}

Answer read_answer(const Json& def, const Json& answer) {
  Answer out;
  ObjectReader r(answer, "");
  std::vector<std::string> ids;
  for (const Json& s : def.at("signals")) ids.push_back(s.at("id").get<std::string>());
  std::string list;
  for (const auto& id : ids) list += (list.empty() ? "\"" : ", \"") + id + "\"";
  for (int role = 0; role < 2; ++role) {
    const Json* v = r.raw(kRoles[role]);
    if (!v) continue;
    if (!v->is_string() || std::find(ids.begin(), ids.end(), v->get<std::string>()) == ids.end()) {
      throw InputError(std::string("/") + kRoles[role], "expected one of " + list);
    }
    (role == 0 ? out.prefill : out.decode) = v->get<std::string>();
  }
  // Counted in characters (UTF-8 code points), as the page's text box counts them, not in bytes.
  const auto max_chars = def.value("justification_max_chars", 4000);
  if (const Json* v = r.raw("justification")) {
    if (!v->is_string()) throw InputError("/justification", "expected a string, found " + type_name(*v));
    const std::string& text = v->get_ref<const std::string&>();
    const auto chars = std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
    if (chars > max_chars) {
      throw InputError("/justification", "is " + std::to_string(chars) + " characters; at most " + std::to_string(max_chars));
    }
    out.justification = text;
  }
  r.finish();
  return out;
}

std::string role_table(const Json& def, const Analysis& an) {
  std::string out;
  for (int role = 0; role < 2; ++role) {
    out += std::string(role ? "\n" : "") + "- " + kRoles[role] + ":";
    for (int s = 0; s < static_cast<int>(an.signals.size()); ++s) {
      out += std::string(s ? "," : "") + " " + signal_label(def, s) + " " + num(an.role_score[role][static_cast<std::size_t>(s)], 1) +
             (an.passes(role, s) ? " (passes)" : "");
    }
  }
  return out;
}

}  // namespace

Answer parse_answer(const Json& definition, const Json& answer) { return read_answer(definition, answer); }

Json variant(const Json& def, std::uint64_t seed) {
  const Json params = derived_params(def, seed);
  const int n = static_cast<int>(def.at("signals").size());
  Json signals = Json::array(), cells = Json::array();
  for (const Json& s : def.at("signals")) signals.push_back({{"id", s.at("id")}, {"label", s.at("label")}, {"metric", s.at("metric")}});
  for (int i = 0; i < n * n; ++i) {
    Json sc = scenario_for(def, params, seed, i / n, i % n);
    if (i == 0) parse_scenario(sc);  // a bad exercise file fails here, not in the page
    cells.push_back({{"prefill", signal_def(def, i / n).at("id")}, {"decode", signal_def(def, i % n).at("id")}, {"scenario", sc}});
  }
  return {{"id", def.at("id")},
          {"seed", seed},
          {"title", def.at("title")},
          {"text", fill_template(def.at("text").get<std::string>(), params)},
          {"params", params},
          {"signals", signals},
          {"cells", cells},
          {"margin", def.at("margin")},
          {"justification_max_chars", def.value("justification_max_chars", 4000)}};
}

Json solve(const Json& def, std::uint64_t seed) {
  const Analysis an = analyse(def, seed, {});
  const Cell& b = an.cells[static_cast<std::size_t>(an.best)];
  Json accepted = Json::object();
  for (int role = 0; role < 2; ++role) {
    Json ids = Json::array();
    for (int s = 0; s < static_cast<int>(an.signals.size()); ++s)
      if (an.passes(role, s)) ids.push_back(an.signals[static_cast<std::size_t>(s)]);
    accepted[kRoles[role]] = ids;
  }
  return {{"answers", {{"prefill", an.signals[static_cast<std::size_t>(b.prefill)]}, {"decode", an.signals[static_cast<std::size_t>(b.decode)]}}},
          {"accepted", accepted},
          {"best_goodput_per_usd", b.per_dollar},
          {"simulated", simulated_json(an)}};
}

Json grade(const Json& def, std::uint64_t seed, const Json& answer, const GradeContext& context) {
  const Answer given = read_answer(def, answer);
  const Analysis an = analyse(def, seed, context);
  const Json params = text_params(def, an);
  const int n = static_cast<int>(an.signals.size());
  // The learner's own pair (a role left out reads as the other pick's best partner, for the feedback only).
  int p = given.prefill ? signal_index(an, *given.prefill) : -1;
  int d = given.decode ? signal_index(an, *given.decode) : -1;
  if (p < 0 && d >= 0) p = an.cells[static_cast<std::size_t>(an.role_cell[1][static_cast<std::size_t>(d)])].prefill;
  if (d < 0 && p >= 0) d = an.cells[static_cast<std::size_t>(an.role_cell[0][static_cast<std::size_t>(p)])].decode;
  const int own = p >= 0 && d >= 0 ? p * n + d : an.best;
  Json questions = Json::array({grade_role(def, an, 0, given.prefill, own, params), grade_role(def, an, 1, given.decode, own, params)});
  int right = 0;
  for (const Json& q : questions) right += q.at("correct").get<bool>() ? 1 : 0;
  Json out{{"score", right / 2.0}, {"correct", right == 2}, {"questions", questions}, {"simulated", simulated_json(an)}};
  if (given.prefill && given.decode) out["pair"] = {{"cell", own}, {"goodput_per_usd", an.cells[static_cast<std::size_t>(own)].per_dollar}};
  if (given.justification) out["justification"] = *given.justification;
  return out;
}

Json explain(const Json& def, std::uint64_t seed, const GradeContext& context) {
  const Analysis an = analyse(def, seed, context);
  Json params = text_params(def, an);
  params["role_table"] = role_table(def, an);
  params["shape_reason"] = def.at("shape_reasons").at(params.at("shape_id").get<std::string>());
  // The lesson's rule, checked against this grid.
  const int lp = signal_index(an, def.at("lesson_pair").at("prefill").get<std::string>());
  const int ld = signal_index(an, def.at("lesson_pair").at("decode").get<std::string>());
  std::string lesson;
  if (lp >= 0 && ld >= 0) {
    const int n = static_cast<int>(an.signals.size());
    const Cell& lc = an.cells[static_cast<std::size_t>(lp * n + ld)];
    const double best = an.cells[static_cast<std::size_t>(an.best)].per_dollar;
    params["lesson_score"] = num(lc.per_dollar, 1);
    params["lesson_pct"] = num(best > 0 ? lc.per_dollar / best * 100 : 0, 1);
    const bool holds = lc.per_dollar >= (1 - an.margin) * best;
    std::string detail;
    if (!an.passes(0, lp)) detail += signal_label(def, lp) + " does not pass for prefill";
    if (!an.passes(1, ld)) detail += std::string(detail.empty() ? "" : "; ") + signal_label(def, ld) + " does not pass for decode";
    if (detail.empty()) detail = "each pick passes with another partner, but the two together fall short";
    params["lesson_detail"] = detail;
    lesson = fill_template(def.at("lesson_check").at(holds ? "holds" : "differs").get<std::string>(), params);
  }
  params["lesson_check"] = lesson;
  const Cell& b = an.cells[static_cast<std::size_t>(an.best)];
  Json accepted = Json::object();
  for (int role = 0; role < 2; ++role) {
    Json ids = Json::array();
    for (int s = 0; s < static_cast<int>(an.signals.size()); ++s)
      if (an.passes(role, s)) ids.push_back(an.signals[static_cast<std::size_t>(s)]);
    accepted[kRoles[role]] = ids;
  }
  return {{"text", fill_template(def.at("explanation").get<std::string>(), params)},
          {"answers", {{"prefill", an.signals[static_cast<std::size_t>(b.prefill)]}, {"decode", an.signals[static_cast<std::size_t>(b.decode)]}}},
          {"accepted", accepted},
          {"simulated", simulated_json(an)}};
}

}  // namespace gpuscale::exercise4
