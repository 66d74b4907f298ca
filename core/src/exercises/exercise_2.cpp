// Exercise 2: design the GPU NodePool. Four criteria read from the learner's NodePool (the taint one
// checked by simulation), then three outcomes from simulating a day of the variant's traffic on it,
// against a reference pool. Every outcome comes from the simulation.
#include <algorithm>
#include <cstdio>

#include "exercises/exercise.hpp"
#include "provisioning/karpenter/nodepool.hpp"
#include "sim/simulation.hpp"

namespace gpuscale::exercise2 {

namespace {

std::string num(double v, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

Json params_for(const Json& def, std::uint64_t seed) {
  Json p = draw_variant_params(def, seed);
  // One variant in four is a batch pipeline (a latency SLO of minutes, where spot is defensible).
  const bool batch = p.at("slo_kind").get<double>() == 0;
  p["batch"] = batch;
  p["slo_kind_text"] = batch ? "a batch summarization pipeline (a job, not a person, waits for the answer)"
                             : "an interactive chat assistant (a person waits for every answer)";
  if (batch) p["ttft_target_s"] = p.at("ttft_target_s").get<double>() * 6;
  p["model_load_s"] = def.at("base_scenario").at("cold_start").at("model_load_s");
  // The day's spot market: when EC2 reclaims spot capacity, and how long it then grants none.
  const Json& market = def.at("spot_market");
  char clock[16];
  std::snprintf(clock, sizeof clock, "%02d:00", static_cast<int>(p.at("spot_reclaim_hour").get<double>()));
  p["reclaim_clock"] = clock;
  p["shortage_h"] = market.at("shortage_h");
  // The streaming half of the SLO: a request's mean inter-token latency (summary.cpp counts a request
  // as meeting the SLO when both its TTFT and its ITL are within target).
  p["itl_target_s"] = 0.2;
  return p;
}

// The variant's day with the given GPU NodePool in front of the general CPU pool.
Json scenario_for(const Json& def, const Json& params, std::uint64_t seed, const Json& gpu_pool) {
  Json sc = def.at("base_scenario");
  sc["seed"] = seed;
  sc["workload"]["rate_scale"] = params.at("peak_rps");  // the phases are fractions of the peak
  const Json& market = def.at("spot_market");
  const double reclaim_s = params.at("spot_reclaim_hour").get<double>() * 3600;
  sc["cluster"]["spot_reclaims"] = Json::array({{{"at_s", reclaim_s}, {"instance_type", market.at("instance_type")}, {"fraction", market.at("fraction")}}});
  sc["cluster"]["insufficient_capacity"] =
      Json::array({{{"instance_type", market.at("instance_type")}, {"capacity_type", "spot"}, {"probability", 1.0},
                    {"from_s", reclaim_s}, {"until_s", reclaim_s + market.at("shortage_h").get<double>() * 3600}}});
  sc["slo"] = {{"ttft_s", params.at("ttft_target_s")}, {"itl_s", params.at("itl_target_s")}};
  Json pools = Json::array({gpu_pool});
  for (const auto& p : sc["cluster"]["nodepools"]) pools.push_back(p);
  sc["cluster"]["nodepools"] = pools;
  sc["cluster"]["workloads"] = Json::array({{{"name", "web"},
                                             {"replicas", params.at("web_replicas")},
                                             {"pod", {{"cpu", num(params.at("web_cpu").get<double>(), 0)},
                                                      {"memory", num(params.at("web_memory_gib").get<double>(), 0) + "Gi"}}}}});
  return sc;
}

Json def_scenario_without_gpu_pool(const Json& def, const Json& params, std::uint64_t seed) {
  Json sc = scenario_for(def, params, seed, Json::object());
  sc["cluster"]["nodepools"].erase(0);
  return sc;
}

struct Outcome {
  Summary summary;
  bool replicas_blocked = false;  // no replica was ever Ready: the pool's taint or requirements keep them off
  std::string launch_failure;     // then: Karpenter's own event for the first replica pod no NodePool could take
};

Outcome simulate(const Json& scenario, const ProgressReport& progress) {
  Scenario s = parse_scenario(scenario);
  // The log, for Karpenter's events (a pool that cannot launch the replicas' GPUs).
  s.output.decisions = true;
  RunResult r = run_simulation(s, {}, progress);
  Outcome o;
  o.summary = r.summary;
  o.replicas_blocked = std::all_of(r.series.ready_replicas.begin(), r.series.ready_replicas.end(), [](std::int32_t n) { return n == 0; });
  for (const DecisionRecord& d : r.decisions) {
    if (d.controller != "karpenter.provisioner") continue;
    if (o.launch_failure.empty() && d.reason == "NoCompatibleNodePool" && d.explanation.find("(vllm") != std::string::npos) {
      o.launch_failure = d.explanation.substr(0, 600);
    }
  }
  return o;
}

// What the grade reads of the reference pool's day.
struct ReferenceDay {
  double node_cost_usd = 0;
  double slo_attainment = 0;
};

std::int64_t evicted(const Summary& s, RemovalReason reason) { return s.replica_evictions_by_reason[static_cast<int>(reason)]; }
std::int64_t failed(const Summary& s, FailureCause cause) { return s.requests_failed_by_cause[static_cast<int>(cause)]; }

// Whether a taint of the pool keeps off pods that tolerate only nvidia.com/gpu (ExtendedResourceToleration).
bool has_blocking_taint(const NodePool& pool) {
  for (const auto& t : pool.taints) {
    if (t.effect != TaintEffect::PreferNoSchedule && t.key != "nvidia.com/gpu") return true;
  }
  return false;
}

Json criterion(const Json& def, const char* id, bool ok, double fraction, const std::string& feedback) {
  const Json& c = def.at("criteria").at(id);
  const double points = c.at("points").get<double>();
  return {{"id", id}, {"label", c.at("label")}, {"ok", ok}, {"points", points * fraction}, {"max_points", points}, {"feedback", feedback}};
}

std::string message(const Json& def, const char* key, const Json& params) {
  return fill_template(def.at("messages").at(key).get<std::string>(), params);
}

}  // namespace

Json variant(const Json& def, std::uint64_t seed) {
  Json params = params_for(def, seed);
  Json criteria = Json::array();
  for (auto it = def.at("criteria").begin(); it != def.at("criteria").end(); ++it) {
    criteria.push_back({{"id", it.key()}, {"label", it.value().at("label")}, {"points", it.value().at("points")}});
  }
  return {{"id", def.at("id")},
          {"seed", seed},
          {"title", def.at("title")},
          {"text", fill_template(def.at("text").get<std::string>(), params)},
          {"params", params},
          {"starter_yaml", def.at("starter_yaml")},
          {"criteria", criteria},
          {"questions", Json::array({{{"id", "nodepool"}, {"type", "nodepool"},
                                      {"prompt", "Your GPU NodePool, as YAML (kind: NodePool, apiVersion: karpenter.sh/v1)."}}})},
          // The day the learner's pool runs in; "nodepools" holds only the cluster's CPU pool: the
          // learner's GPU pool goes first (the reference answer is never sent).
          {"scenario", def_scenario_without_gpu_pool(def, params, seed)}};
}

Json solve(const Json& def, std::uint64_t /*seed*/) {
  return {{"answers", {{"nodepool", def.at("reference_nodepool")}}}};
}

Answer parse_answer(const Json& answer) {
  ObjectReader r(answer, "");
  const Json* pool_json = r.raw("nodepool");
  r.finish();
  if (!pool_json) throw InputError("/nodepool", "the answer needs the NodePool object: {\"nodepool\": {...}}");
  Answer out;
  out.nodepool = *pool_json;
  try {
    NodePool pool = parse_nodepool(*pool_json, "/nodepool");
    if (pool.name == "general") throw InputError("/nodepool/metadata/name", "\"general\" is the cluster's CPU pool; name yours differently");
    out.pool = std::move(pool);
  } catch (const InputError& e) {
    out.error = e.what();
  }
  return out;
}

Json grade(const Json& def, std::uint64_t seed, const Json& answer, const GradeContext& context) {
  const Answer given = parse_answer(answer);
  Json params = params_for(def, seed);
  Json criteria = Json::array();

  if (!given.pool) {
    params["error"] = given.error;
    criteria.push_back(criterion(def, "valid", false, 0, message(def, "invalid", params)));
    return {{"score", 0.0}, {"correct", false}, {"criteria", criteria}};
  }
  const NodePool& pool = *given.pool;
  criteria.push_back(criterion(def, "valid", true, 1, "Valid karpenter.sh/v1 NodePool \"" + pool.name + "\"."));

  // Capacity type, judged against the variant's SLO.
  const bool batch = params.at("batch").get<bool>();
  const Requirement* capacity = nullptr;
  for (const auto& q : pool.requirements) {
    if (q.key == "karpenter.sh/capacity-type") capacity = &q;
  }
  // Whether the requirement lets Karpenter pick spot: In [.., spot], NotIn without spot, or Exists.
  const bool lists_spot = capacity && std::find(capacity->values.begin(), capacity->values.end(), "spot") != capacity->values.end();
  const bool allows_spot = capacity && ((capacity->op == SelectorOp::In && lists_spot) || (capacity->op == SelectorOp::NotIn && !lists_spot) ||
                                        capacity->op == SelectorOp::Exists);
  params["capacity"] = allows_spot ? "spot allowed" : "on-demand only";

  // The rest by simulation: the learner's pool and the reference pool on the same day.
  const double duration = def.at("base_scenario").at("duration_s").get<double>();
  const auto report = [&](int index, int count, const char* what) {
    return progress_share(context.progress, index, count, duration, duration / 12,
                          [what, duration](double t) { return std::string(what) + ": " + clock_text(t, duration); });
  };
  // The reference pool's day is the same for every attempt at this variant: given back in the context's
  // "simulated", it is not simulated again.
  ReferenceDay ref;
  const Json* day = nullptr;  // the reference day given back ({} is nothing given)
  if (context.simulated) {
    ObjectReader r(*context.simulated, "/context/simulated/data");
    day = r.raw("reference");
    r.finish();
  }
  if (day) {
    ObjectReader dr(*day, "/context/simulated/data/reference");
    if (!dr.has("node_cost_usd") || !dr.has("slo_attainment")) throw InputError("/context/simulated/data/reference", "needs node_cost_usd and slo_attainment");
    ref.node_cost_usd = dr.get_number("node_cost_usd", 0, 0, 1e12);
    ref.slo_attainment = dr.get_number("slo_attainment", 0, 0, 1);
    dr.finish();
  }
  const Outcome mine = simulate(scenario_for(def, params, seed, given.nodepool), report(0, day ? 1 : 2, "your pool's day"));
  if (!day) {
    const Outcome day = simulate(scenario_for(def, params, seed, def.at("reference_nodepool")), report(1, 2, "the reference pool's day"));
    ref.node_cost_usd = day.summary.cluster.node_cost_usd;
    ref.slo_attainment = day.summary.slo_attainment;
  }
  const Summary& s = mine.summary;

  // A spot verdict rests on what the day's spot reclaim did to this pool.
  params["spot_nodes"] = s.cluster.spot_interruptions;
  params["spot_replicas"] = evicted(s, RemovalReason::Interrupted);
  params["spot_failed"] = failed(s, FailureCause::Spot);
  if (!capacity) {
    criteria.push_back(criterion(def, "capacity", false, 0.5, message(def, "capacity_missing", params)));
  } else if (allows_spot && !batch) {
    criteria.push_back(criterion(def, "capacity", false, 0,
                                 message(def, s.cluster.spot_interruptions > 0 ? "capacity_spot_interactive" : "capacity_spot_interactive_untouched", params)));
  } else {
    criteria.push_back(criterion(def, "capacity", true, 1,
                                 message(def, batch ? (allows_spot ? "capacity_spot_batch" : "capacity_ok_batch") : "capacity_ok_interactive", params)));
  }
  params["non_gpu"] = s.cluster.non_gpu_pods_on_gpu_nodes;
  params["pending"] = "all";
  bool has_taint = false;
  for (const auto& t : pool.taints) has_taint = has_taint || t.effect != TaintEffect::PreferNoSchedule;
  params["karpenter_event"] = mine.launch_failure;
  const bool cannot_launch = mine.replicas_blocked && mine.launch_failure.find(pool.name + " (weight") != std::string::npos && !has_blocking_taint(pool);
  criteria.push_back(criterion(def, "instances", !cannot_launch, cannot_launch ? 0 : 1, message(def, cannot_launch ? "pool_cannot_launch" : "instances_ok", params)));
  if (cannot_launch) {
    // No GPU node ran, so the taint is judged on the pool alone.
    criteria.push_back(has_taint ? criterion(def, "taint", true, 1, message(def, "taint_ok_untested", params))
                                 : criterion(def, "taint", false, 0, message(def, "taint_missing_untested", params)));
  } else if (mine.replicas_blocked) {
    criteria.push_back(criterion(def, "taint", false, 0, message(def, "taint_blocks_replicas", params)));
  } else if (!has_taint) {
    criteria.push_back(criterion(def, "taint", false, 0, message(def, "taint_missing", params)));
  } else if (s.cluster.non_gpu_pods_on_gpu_nodes > 0) {
    criteria.push_back(criterion(def, "taint", false, 0, message(def, "taint_leaky", params)));
  } else {
    criteria.push_back(criterion(def, "taint", true, 1, message(def, "taint_ok", params)));
  }

  // Disruption, judged by its effect on the day (and, where nothing was evicted, by what the settings
  // cost when nodes empty): the field that made Karpenter evict running replicas is named.
  params["policy"] = to_string(pool.consolidation_policy);
  params["after"] = pool.consolidate_after ? format_duration(*pool.consolidate_after) : std::string("Never");
  params["expire"] = pool.expire_after ? format_duration(*pool.expire_after) : std::string("Never");
  // The pool's own disruption (not the cloud's interruptions, judged under capacity type), by reason.
  const std::pair<RemovalReason, const char*> own[] = {{RemovalReason::Underutilized, "Underutilized"}, {RemovalReason::Empty, "Empty"},
                                                       {RemovalReason::Expired, "Expired"},             {RemovalReason::Drifted, "Drifted"}};
  std::int64_t disrupted = 0;
  std::string by, fields, advice;
  for (const auto& [reason, name] : own) {
    const std::int64_t n = evicted(s, reason);
    if (n == 0) continue;
    disrupted += n;
    by += (by.empty() ? "" : ", ") + std::to_string(n) + " " + name;
    const std::string field = reason == RemovalReason::Expired   ? "spec.template.spec.expireAfter (" + params.at("expire").get<std::string>() + ")"
                              : reason == RemovalReason::Drifted ? "the pool's template (drift replaces nodes built from an older one)"
                                                                 : "spec.disruption.consolidationPolicy (" + params.at("policy").get<std::string>() + ")";
    if (fields.find(field) == std::string::npos) fields += (fields.empty() ? "" : "; ") + field;
    const std::string fix = reason == RemovalReason::Expired   ? "Set expireAfter longer than the nodes need to live (the lesson uses 720h)."
                            : reason == RemovalReason::Drifted ? ""
                                                               : "Use consolidationPolicy: WhenEmpty.";
    if (!fix.empty() && advice.find(fix) == std::string::npos) advice += (advice.empty() ? "" : " ") + fix;
  }
  params["evicted_advice"] = advice;
  params["evicted_total"] = disrupted;
  params["evicted_by"] = by;
  params["evicted_fields"] = fields;
  Json disruption;
  if (disrupted > 0) {
    disruption = criterion(def, "disruption", false, 0, message(def, "disruption_evicted", params));
  } else if (mine.replicas_blocked && pool.consolidation_policy != ConsolidationPolicy::WhenEmpty) {
    disruption = criterion(def, "disruption", false, 0, message(def, "disruption_untested", params));
  } else if (!pool.consolidate_after) {
    disruption = criterion(def, "disruption", false, 0.5, message(def, "disruption_never", params));
  } else if (*pool.consolidate_after == 0) {
    disruption = criterion(def, "disruption", false, 0.5, message(def, "disruption_zero", params));
  } else if (pool.consolidation_policy != ConsolidationPolicy::WhenEmpty) {
    disruption = criterion(def, "disruption", true, 1, message(def, "disruption_blocked_ok", params));
  } else {
    disruption = criterion(def, "disruption", true, 1, message(def, "disruption_ok", params));
  }
  criteria.insert(criteria.begin() + 2, disruption);  // after valid and capacity, where the page lists it

  params["evictions"] = disrupted;
  params["failed"] = failed(s, FailureCause::Consolidation) + failed(s, FailureCause::Expiry) + failed(s, FailureCause::Drift);
  const bool kept = disrupted == 0 && !mine.replicas_blocked;
  criteria.push_back(criterion(def, "no_evictions", kept, kept ? 1 : 0,
                               mine.replicas_blocked ? std::string("No replica ever ran on this pool, so the day tests no eviction.")
                                                     : message(def, kept ? "no_evictions_ok" : "evictions", params)));

  const double target = params.at("attainment_pct").get<double>() / 100.0;
  params["attainment_pct_run"] = num(s.slo_attainment * 100, 1);
  params["ttft_p99_s"] = num(s.ttft_p99_s, 2);
  const bool slo_ok = !mine.replicas_blocked && s.slo_attainment >= target;
  std::string slo_text = message(def, slo_ok ? "slo_ok" : "slo_miss", params);
  if (!slo_ok && !mine.replicas_blocked && !mine.launch_failure.empty()) slo_text += " " + message(def, "slo_pending", params);
  criteria.push_back(criterion(def, "slo", slo_ok, slo_ok ? 1 : 0, slo_text));

  const double margin = params.at("cost_margin_pct").get<double>() / 100.0;
  params["cost"] = num(s.cluster.node_cost_usd, 2);
  params["reference_cost"] = num(ref.node_cost_usd, 2);
  const bool cost_ok = !mine.replicas_blocked && s.cluster.node_cost_usd <= ref.node_cost_usd * (1 + margin);
  criteria.push_back(criterion(def, "cost", cost_ok, cost_ok ? 1 : 0,
                               mine.replicas_blocked ? std::string("No replica ever ran on this pool, so its cost compares nothing.")
                                                     : message(def, cost_ok ? "cost_ok" : "cost_high", params)));

  double points = 0, max_points = 0;
  bool all = true;
  for (const auto& c : criteria) {
    points += c.at("points").get<double>();
    max_points += c.at("max_points").get<double>();
    all = all && c.at("ok").get<bool>();
  }
  Json run{{"num_requests", s.num_requests},          {"num_dropped", s.num_dropped},
           {"slo_attainment", s.slo_attainment},      {"ttft_p99_s", s.ttft_p99_s},
           {"node_cost_usd", s.cluster.node_cost_usd},        {"num_replica_evictions", s.num_replica_evictions},
           {"spot_interruptions", s.cluster.spot_interruptions},
           {"non_gpu_pods_on_gpu_nodes", s.cluster.non_gpu_pods_on_gpu_nodes}, {"nodes_launched", s.cluster.nodes_launched}, {"karpenter_event", mine.launch_failure}};
  return {{"score", max_points > 0 ? points / max_points : 0.0},
          {"correct", all},
          {"criteria", criteria},
          {"run", run},
          {"reference", {{"node_cost_usd", ref.node_cost_usd}, {"slo_attainment", ref.slo_attainment}}},
          {"simulated", {{"reference", {{"node_cost_usd", ref.node_cost_usd}, {"slo_attainment", ref.slo_attainment}}}}},
          {"scenario", scenario_for(def, params, seed, given.nodepool)}};
}

Json explain(const Json& def, std::uint64_t seed, const GradeContext& /*context*/) {
  Json params = params_for(def, seed);
  std::string text =
      "A reference answer: on-demand capacity" + std::string(params.at("batch").get<bool>() ? " (spot would also do for this batch SLO)" : "") +
      ", consolidationPolicy: WhenEmpty with consolidateAfter: 1h (only empty nodes go, after a quiet hour), and the taint nvidia.com/gpu=true:NoSchedule, "
      "which GPU pods tolerate automatically (ExtendedResourceToleration) and the web tier does not. A GPU limit caps runaway cost, but it must leave room "
      "for the afternoon peak of " + num(params.at("peak_rps").get<double>(), 1) + " requests/s (a limit of 8 GPUs, one node, misses the SLO); "
      "expireAfter 720h keeps forced drains rare. Spot: the reclaim at " + params.at("reclaim_clock").get<std::string>() +
      " interrupts half of the spot nodes, and for " + num(params.at("shortage_h").get<double>(), 0) +
      " hours no spot p5.48xlarge is granted, so a spot-only pool waits for capacity while one that also allows on-demand falls back to it.";
  return {{"text", text}, {"answers", {{"nodepool", def.at("reference_nodepool")}}}};
}

}  // namespace gpuscale::exercise2
