// The plan designer's input, read strictly (InputError with the field's path) and written back.
#include "plan/input.hpp"

#include <algorithm>

#include "cluster/instance_types.hpp"
#include "gpuscale/errors.hpp"
#include "io/json_reader.hpp"
#include "plan/candidate.hpp"
#include "serving/engine_profiles.hpp"

namespace gpuscale::plan {

namespace {

std::vector<std::string> read_strings(ObjectReader& r, const char* key, std::vector<std::string> fallback, std::size_t max_items) {
  const Json* v = r.raw(key);
  if (!v) return fallback;
  const std::string path = r.child_path(key);
  if (!v->is_array() || v->empty()) throw InputError(path, "expected a non-empty array of strings");
  if (v->size() > max_items) throw InputError(path, "at most " + std::to_string(max_items) + " entries");
  std::vector<std::string> out;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const Json& s = (*v)[i];
    if (!s.is_string() || s.get_ref<const std::string&>().empty() || s.get_ref<const std::string&>().size() > 64) {
      throw InputError(path + "/" + std::to_string(i), "expected a non-empty string of at most 64 characters");
    }
    if (std::find(out.begin(), out.end(), s.get<std::string>()) != out.end()) {
      throw InputError(path + "/" + std::to_string(i), "\"" + s.get<std::string>() + "\" is listed twice");
    }
    out.push_back(s.get<std::string>());
  }
  return out;
}

}  // namespace

// The input as the plan read it, defaults filled in.
Json input_json(const PlanInput& in) {
  Json topology = {{"instance_types", in.instance_types}, {"capacity_types", in.capacity_types}, {"max_nodes", in.max_nodes}, {"racks", in.racks}, {"nvlink_domain_nodes", in.nvlink_domain_nodes},
                   {"spot_interruptions_per_node_hour", in.spot_interruptions_per_node_hour}};
  if (!in.zones.empty()) topology["zones"] = in.zones;
  Json out = {{"topology", topology},
          {"workload",
           {{"engine_profile", in.engine_profile}, {"serving", in.serving}, {"burst_factor", in.burst_factor},
            {"burst_s", in.burst_s}, {"prompt_tokens", in.prompt_tokens}, {"output_tokens", in.output_tokens}, {"timeout_s", in.timeout_s},
            {"what_if_burst", in.what_if_burst}}},
          {"slo", {{"ttft_p99_s", in.ttft_p99_s}, {"itl_s", in.itl_s}, {"attainment", in.attainment}}},
          {"budget_usd_per_hour", in.budget_usd_per_hour},
          {"tenants", {{"training_gpus", in.training_gpus}}},
          {"seed", in.seed}};
  Json choices = {{"gang", in.gang}, {"consolidation_policy", in.consolidation_policy}};
  if (!in.pin_signal.empty()) choices["signal"] = in.pin_signal;
  if (!in.pin_decode_signal.empty()) choices["decode_signal"] = in.pin_decode_signal;
  out["choices"] = choices;
  // The load as given (a concurrency's rate is in the plan's load_from_concurrency).
  if (in.average_concurrency > 0) out["workload"]["average_concurrency"] = in.average_concurrency;
  else out["workload"]["average_rps"] = in.average_rps;
  return out;
}

PlanInput parse_plan_input(const Json& input) {
  PlanInput in;
  ObjectReader r(input, "");
  r.only_keys({"topology", "workload", "slo", "budget_usd_per_hour", "tenants", "seed", "choices"});
  if (const Json* t = r.raw("topology")) {
    ObjectReader tr(*t, "/topology");
    in.instance_types = read_strings(tr, "instance_types", in.instance_types, 8);
    in.capacity_types = read_strings(tr, "capacity_types", in.capacity_types, 2);
    in.max_nodes = static_cast<int>(tr.get_int("max_nodes", in.max_nodes, 1, 64));
    in.zones = read_strings(tr, "zones", {}, 8);
    in.racks = static_cast<int>(tr.get_int("racks", 0, 0, 64));
    in.nvlink_domain_nodes = static_cast<int>(tr.get_int("nvlink_domain_nodes", 1, 1, 64));
    const bool spot = std::find(in.capacity_types.begin(), in.capacity_types.end(), "spot") != in.capacity_types.end();
    if (spot && !tr.has("spot_interruptions_per_node_hour")) {
      throw InputError("/topology/spot_interruptions_per_node_hour",
                       "required with spot capacity: how often a spot node is reclaimed (AWS's Spot Instance Advisor gives each type's monthly "
                       "frequency; 0 assumes none), so that spot candidates are simulated with their interruptions");
    }
    in.spot_interruptions_per_node_hour = tr.get_number("spot_interruptions_per_node_hour", 0, 0, 10);
    tr.finish();
    if (in.racks > in.max_nodes) throw InputError("/topology/racks", "at most max_nodes (" + std::to_string(in.max_nodes) + "): each rack holds at least one of the nodes");
    if (in.nvlink_domain_nodes > std::max(1, in.max_nodes / std::max(1, in.racks))) {
      throw InputError("/topology/nvlink_domain_nodes", "at most the nodes of a rack (" + std::to_string(in.max_nodes / std::max(1, in.racks)) +
                                                            "): an NVLink domain does not span racks");
    }
    for (std::size_t i = 0; i < in.instance_types.size(); ++i) {
      const InstanceType* type = find_instance_type(default_instance_types(), in.instance_types[i]);
      if (!type) throw InputError("/topology/instance_types/" + std::to_string(i), "\"" + in.instance_types[i] + "\" is not in the lab's instance catalogue (data/instance-types.json)");
      if (type->gpus == 0) throw InputError("/topology/instance_types/" + std::to_string(i), in.instance_types[i] + " has no GPU");
    }
    for (std::size_t i = 0; i < in.capacity_types.size(); ++i) {
      if (in.capacity_types[i] != "on-demand" && in.capacity_types[i] != "spot") {
        throw InputError("/topology/capacity_types/" + std::to_string(i), "expected \"on-demand\" or \"spot\"");
      }
    }
  }
  if (const Json* w = r.raw("workload")) {
    ObjectReader wr(*w, "/workload");
    in.engine_profile = wr.get_string("engine_profile", in.engine_profile, 128);
    engine_profile(in.engine_profile);  // an unknown profile is refused with the known ones
    in.serving = wr.get_enum("serving", in.serving, {"aggregated", "disaggregated"});
    if (wr.has("average_rps") && wr.has("average_concurrency")) {
      throw InputError("/workload/average_concurrency", "give average_rps or average_concurrency, not both (the plan converts a concurrency to a rate)");
    }
    in.average_rps = wr.get_number("average_rps", in.average_rps, 0.001, 5);
    in.average_concurrency = static_cast<int>(wr.get_int("average_concurrency", 0, 1, 500));
    in.burst_factor = wr.get_number("burst_factor", in.burst_factor, 1, 50);
    in.burst_s = wr.get_number("burst_s", in.burst_s, 60, 2400);
    in.prompt_tokens = wr.get_number("prompt_tokens", in.prompt_tokens, 16, 65536);
    in.output_tokens = wr.get_number("output_tokens", in.output_tokens, 1, 16384);
    in.timeout_s = wr.get_number("timeout_s", in.timeout_s, 1, 3600);
    in.what_if_burst = wr.get_number("what_if_burst", in.what_if_burst, 1, 10);
    wr.finish();
    // The search simulates about 25 hours of this workload: a burst peak over 25 req/s would take
    // minutes in the page.
    if (in.average_concurrency == 0 && in.average_rps * in.burst_factor > 25) {
      throw InputError("/workload/burst_factor", "average_rps × burst_factor is " + num(in.average_rps * in.burst_factor, 1) +
                                                     " req/s; at most 25 (the search simulates about 25 hours of the workload)");
    }
  }
  if (const Json* s = r.raw("slo")) {
    ObjectReader sr(*s, "/slo");
    in.ttft_p99_s = sr.get_number("ttft_p99_s", in.ttft_p99_s, 0.05, 600);
    in.itl_s = sr.get_number("itl_s", in.itl_s, 0.001, 10);
    in.attainment = sr.get_number("attainment", in.attainment, 0.5, 1);
    sr.finish();
  }
  in.budget_usd_per_hour = r.get_number("budget_usd_per_hour", 0, 0, 1e6);
  if (const Json* t = r.raw("tenants")) {
    ObjectReader tr(*t, "/tenants");
    in.training_gpus = static_cast<int>(tr.get_int("training_gpus", 0, 0, 4096));
    tr.finish();
  }
  in.seed = static_cast<std::uint64_t>(r.get_int("seed", 1, 0, 9007199254740992LL));
  if (const Json* c = r.raw("choices")) {
    ObjectReader cr(*c, "/choices");
    const std::initializer_list<const char*> signals_allowed = {"queue_depth", "kv_cache", "ttft_p99", "goodput", "gpu_util", "gpu_memory"};
    if (cr.has("signal")) in.pin_signal = cr.get_enum("signal", "", signals_allowed);
    if (cr.has("decode_signal")) in.pin_decode_signal = cr.get_enum("decode_signal", "", signals_allowed);
    in.gang = cr.get_bool("gang", true);
    in.consolidation_policy = cr.get_enum("consolidation_policy", in.consolidation_policy, {"WhenEmpty", "WhenEmptyOrUnderutilized"});
    cr.finish();
    if (!in.pin_decode_signal.empty() && in.serving != "disaggregated") {
      throw InputError("/choices/decode_signal", "only with workload.serving: disaggregated (an aggregated pool has one autoscaler: choices.signal)");
    }
  }
  r.finish();
  return in;
}

}  // namespace gpuscale::plan
