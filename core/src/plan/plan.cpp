// The plan designer: a staged search over candidate plans, each simulated on the described workload.
// Stage 1 picks the replica autoscaler and the warm pool on the cheapest compatible instance type,
// stage 1b the replica's tensor-parallel degree, stage 2 prices that choice on every compatible
// instance and capacity type, and last runs try the winner against a larger burst and (with a
// training tenant) a tighter inference quota. The lesson's rules (docs/plan.md) are enforced with their
// reasons; where a rejected choice did better in the simulation, the plan says so with the run that
// shows it. The objects are objects.cpp's, the input input.cpp's.
#include "plan/plan.hpp"

#include <algorithm>
#include <cmath>

#include "autoscaling/hpa_json.hpp"
#include "cluster/instance_types.hpp"
#include "gpuscale/errors.hpp"
#include "plan/candidate.hpp"
#include "plan/input.hpp"
#include "plan/objects.hpp"
#include "provisioning/karpenter/nodepool.hpp"
#include "scenario/scenario.hpp"
#include "scheduling/snapshot.hpp"
#include "serving/engine_profiles.hpp"
#include "sim/simulation.hpp"

namespace gpuscale::plan {

namespace {

// The replica autoscalers a plan may use and the targets it tries for each (the P99 TTFT rule's target
// is a share of the SLO, so that it acts before the SLO is missed). The duty cycle is simulated only to
// check the rule that rejects it.
struct Signal {
  const char* id;
  std::vector<double> targets;
  bool target_is_slo_share = false;
};
const std::vector<Signal>& signals() {
  static const std::vector<Signal> s = {{"queue_depth", {2, 5}}, {"kv_cache", {0.5, 0.7}}, {"ttft_p99", {0.5}, true}, {"goodput", {0.05}}, {"gpu_util", {80}}};
  return s;
}

RunResult simulate(const PlanInput& in, Candidate& c, const Shape& s, const RunOptions& o, const std::function<void(double)>& at) {
  const Scenario sc = parse_scenario(scenario_for(in, c, s, o));
  ProgressReport report;
  report.every_s = sc.duration_s / 4;
  report.at = [&](double t) {
    if (at) at(t / sc.duration_s);
  };
  const RunResult r = run_simulation(sc, {}, report);
  c.simulated = true;
  c.slo_attainment = r.summary.slo_attainment;
  c.ttft_p99_s = r.summary.ttft_p99_s;
  c.cost_usd = r.summary.cluster.node_cost_usd;
  c.node_cost_usd_per_hour = r.summary.cluster.node_cost_usd / (sc.duration_s / 3600);
  c.time_to_ready_s = r.summary.time_to_ready_mean_s;
  c.num_requests = r.summary.num_requests;
  c.num_dropped = r.summary.num_dropped;
  c.peak_replicas = r.summary.peak_replicas;
  c.nodes_launched = r.summary.cluster.nodes_launched;
  c.meets_slo = c.slo_attainment >= in.attainment && c.ttft_p99_s <= in.ttft_p99_s;
  if (!c.meets_slo) {
    c.rejected.push_back("misses the SLO: " + num(c.slo_attainment * 100, 1) + " % of requests within it (target " + num(in.attainment * 100, 1) +
                         " %), P99 TTFT " + num(c.ttft_p99_s, 2) + " s (target " + num(in.ttft_p99_s, 2) + " s)");
  }
  return r;
}

// An average concurrency as an arrival rate: the input's clients, each with one request in flight,
// sending the next as the last completes (the scenario's closed loop, perf_analyzer's concurrency
// mode), for ten minutes against every replica the topology holds, already warm. Little's law,
// rate = concurrency / latency, with the latency of a pool that keeps up: the most the clients can
// send, so the plan is sized for it. Sets in.average_rps and returns what the run showed.
Json rate_from_concurrency(PlanInput& in, const Shape& s) {
  const int replicas = max_replicas_for(in, s);
  const double duration = 600;
  Json sc = {{"duration_s", duration},
             {"seed", in.seed},
             {"workload",
              {{"concurrency", in.average_concurrency},
               {"prompt_tokens", {{"kind", "lognormal"}, {"mean", in.prompt_tokens}, {"cv", 0.4}, {"min", 16}, {"max", 65536}}},
               {"output_tokens", {{"kind", "lognormal"}, {"mean", in.output_tokens}, {"cv", 0.5}, {"min", 1}, {"max", 16384}}},
               {"timeout_s", in.timeout_s}}},
             {"slo", {{"ttft_s", in.ttft_p99_s}, {"itl_s", in.itl_s}}}};
  int prefill = replicas;
  if (in.serving == "disaggregated") {
    prefill = std::max(1, replicas / 2);
    sc["workload"]["models"] = Json::array({{{"model", kModel}, {"share", 1}}});
    sc["pools"] = Json::array({{{"name", "prefill"}, {"model", kModel}, {"role", "prefill"}, {"engine", {{"profile", in.engine_profile}}},
                                {"autoscaler", {{"strategy", "fixed"}, {"replicas", prefill}}}},
                               {{"name", "decode"}, {"model", kModel}, {"role", "decode"}, {"engine", {{"profile", in.engine_profile}}},
                                {"autoscaler", {{"strategy", "fixed"}, {"replicas", std::max(1, replicas - prefill)}}}}});
  } else {
    sc["engine"] = {{"profile", in.engine_profile}};
    sc["autoscaler"] = {{"strategy", "fixed"}, {"replicas", replicas}};
  }
  const RunResult r = run_simulation(parse_scenario(sc));
  const double rate = static_cast<double>(r.summary.num_requests) / duration;
  const std::string path = "/workload/average_concurrency";
  if (rate * in.burst_factor > 25) {
    throw InputError(path, std::to_string(in.average_concurrency) + " clients sent " + num(rate, 2) + " req/s against " + std::to_string(replicas) +
                               " warm replicas; × burst_factor " + num(in.burst_factor, 1) + " is over 25 req/s, the most the search simulates");
  }
  if (r.summary.num_completed == 0) {
    throw InputError(path, "the clients completed no request in ten minutes (every one timed out or was dropped): the model cannot serve this request size within the timeout");
  }
  in.average_rps = rate;
  return {{"concurrency", in.average_concurrency},
          {"replicas", replicas},
          {"duration_s", duration},
          {"requests", r.summary.num_requests},
          {"completed", r.summary.num_completed},
          {"average_rps", rate},
          {"mean_latency_s", in.average_concurrency / rate},
          {"reason", std::to_string(in.average_concurrency) + " clients, each with one request in flight, sent " + std::to_string(r.summary.num_requests) +
                         " requests in " + num(duration / 60, 0) + " minutes against " + std::to_string(replicas) + " warm replicas: " + num(rate, 3) +
                         " req/s, a request every " + num(in.average_concurrency / rate, 2) + " s per client (Little's law: rate = concurrency / latency)"}};
}

// The cheaper of two acceptable candidates (ties: the one found first).
bool better(const Candidate& a, const Candidate* b) { return !b || a.node_cost_usd_per_hour < b->node_cost_usd_per_hour; }


// The lesson's hard rejects and refusals of what the input asks for, before anything is simulated:
// [{rule, field, reason}], empty when none applies.
Json refusals_of(const PlanInput& in) {
  Json refusals = Json::array();
  const auto refuse = [&](const char* rule, const std::string& field, const std::string& reason) {
    refusals.push_back({{"rule", rule}, {"field", field}, {"reason", reason}});
  };
  if (in.max_nodes == 1 && in.instance_types.size() == 1) {
    refuse("single_node_single_gpu_type", "/topology",
           "A single node of a single GPU type (" + in.instance_types[0] +
               "): there is nothing for Karpenter to choose or consolidate, and a replica lost with its node has nowhere to go. Use a managed serverless endpoint instead, or allow more nodes or types.");
  }
  for (const auto& [field, signal] : {std::pair<std::string, std::string>{"/choices/signal", in.pin_signal}, {"/choices/decode_signal", in.pin_decode_signal}}) {
    if (signal == "gpu_util") {
      refuse("no_gpu_util_hpa", field,
             "Hard reject: an HPA on DCGM_FI_DEV_GPU_UTIL. The duty cycle is the share of time a kernel ran: it reads 100 % with one request or a hundred, "
             "so it says nothing about backlog. Scale on queue depth, KV-cache use, P99 TTFT or goodput.");
    }
    if (signal == "gpu_memory") {
      refuse("no_gpu_memory_signal", field,
             "Refused: scaling on GPU memory. vLLM claims --gpu-memory-utilization (0.9) of each GPU at start for its KV cache, so the signal stays near 90 % "
             "from the first request and the pool never scales down.");
    }
  }
  if (in.consolidation_policy == "WhenEmptyOrUnderutilized") {
    refuse("when_empty_on_gpu_pool", "/choices/consolidation_policy",
           "Hard reject: WhenEmptyOrUnderutilized on a GPU pool. Karpenter may then delete any node whose pods fit elsewhere, and each model server it moves "
           "pays a full cold start (image, weights, warm-up). Use WhenEmpty with consolidateAfter: 1h.");
  }
  const EngineProfile asked = engine_profile(in.engine_profile);
  if (!in.gang && asked.pipeline_parallel > 1) {
    refuse("gang_for_tp_pp", "/choices/gang",
           "Refused: declining gangs for a TP" + std::to_string(asked.tensor_parallel) + " × PP" + std::to_string(asked.pipeline_parallel) +
               " workload. Its replica is " + std::to_string(asked.pipeline_parallel) + " pods that serve nothing until all are placed; placed one by one, "
               "some bind and hold their GPUs while the rest wait (the 7-of-8 trap). KAI Scheduler's PodGroup places all or none.");
  }
  return refusals;
}

// The instance types of the topology that can run the model at all (vLLM's start-up checks for this
// GPU, a replica within max_nodes, two replicas for disaggregated serving); the others become rejected
// rows, one per capacity type.
std::vector<const InstanceType*> usable_types(const PlanInput& in, std::vector<Candidate>& rows) {
  const bool disaggregated = in.serving == "disaggregated";
  const EngineProfile profile = engine_profile(in.engine_profile);
  std::vector<const InstanceType*> usable;
  for (const std::string& name : in.instance_types) {
    const InstanceType& type = *find_instance_type(default_instance_types(), name);
    EngineConfig config;
    config.profile = profile;
    const ProfileOnGpu g = profile_on_gpu(config, type.gpu_name, type.gpu_memory_mib);
    const Shape s = shape_of(in.engine_profile, type);
    // A tensor-parallel group must fit one node; a replica of several pods must fit one placement domain.
    std::string fit_error;
    if (s.gpus_per_pod > type.gpus) {
      fit_error = "a replica's pod needs " + std::to_string(s.gpus_per_pod) + " GPUs (its tensor-parallel group), more than one " + type.name + " has";
    } else if (max_replicas_for(in, s) < 1) {
      fit_error = s.pods_per_replica > 1 ? "a replica is " + std::to_string(s.pods_per_replica) + " pods on as many nodes, and no " +
                                               (in.racks > 0 || in.nvlink_domain_nodes > 1 ? std::string("rack or NVLink domain") : std::to_string(in.max_nodes) + "-node pool") +
                                               " holds that many"
                                         : "a replica needs " + std::to_string(s.gpus_per_replica) + " GPUs, more than " + std::to_string(in.max_nodes) + " nodes have";
    }
    const bool fits_cluster = fit_error.empty();
    // Disaggregated serving needs a prefill and a decode replica, each a Deployment's pod (the lab's
    // prefill and decode pools are not LeaderWorkerSets).
    std::string disagg_error;
    if (disaggregated && s.pods_per_replica > 1) {
      disagg_error = "a disaggregated replica must fit one " + type.name + " (the lab's prefill and decode pools are Deployments, one pod per replica), and " +
                     in.engine_profile + " needs " + std::to_string(s.gpus_per_replica) + " GPUs";
    } else if (disaggregated && fits_cluster && max_replicas_for(in, s) < 2) {
      disagg_error = "disaggregated serving needs a prefill and a decode replica, 2 × " + std::to_string(s.gpus_per_replica) + " GPUs, more than " +
                     std::to_string(in.max_nodes) + " nodes have";
    }
    if (g.loads && fits_cluster && disagg_error.empty()) {
      usable.push_back(&type);
      continue;
    }
    for (const std::string& cap : in.capacity_types) {
      Candidate c;
      c.instance_type = name;
      c.capacity_type = cap;
      c.signal = "-";
      c.engine_profile = in.engine_profile;
      c.rejected.push_back(!g.loads        ? "the model does not start on " + type.gpu_name + ": " + g.error
                           : !fits_cluster ? fit_error
                                           : disagg_error);
      rows.push_back(c);
    }
  }
  return usable;
}

// Stage 1's candidates from a prototype (the base type, capacity, profile and replica ceiling): every
// signal, target and warm pool size; disaggregated, a grid of prefill and decode signals.
std::vector<Candidate> first_stage(const PlanInput& in, const Candidate& prototype) {
  const bool disaggregated = in.serving == "disaggregated";
  std::vector<Candidate> stage1;
  const auto base_candidate = [&](const std::string& signal, double target, int warm) {
    Candidate c = prototype;
    c.signal = signal;
    c.target = target;
    c.warm = warm;
    return c;
  };
  // A pinned signal narrows the search to it (the duty cycle still runs, to check its rule).
  const auto searched = [](const std::string& pin, const std::string& signal) { return pin.empty() || signal == pin || signal == "gpu_util"; };
  if (!disaggregated) {
    for (const Signal& sig : signals())
      if (searched(in.pin_signal, sig.id))
      for (double target : sig.targets)
        for (int warm : {1, 2, 3}) stage1.push_back(base_candidate(sig.id, sig.target_is_slo_share ? target * in.ttft_p99_s : target, warm));
    stage1.erase(std::remove_if(stage1.begin(), stage1.end(), [](const Candidate& c) { return c.warm > c.max_replicas; }), stage1.end());
  } else {
    // Per role (exercise 4's question): the prefill pool on its queue, its P99 TTFT or its KV cache;
    // the decode pool on its KV cache or its queue; both with 1 or 2 warm replicas. The duty cycle on
    // both pools is run only to check its rule.
    // A pinned signal is tried at each of its targets instead.
    const auto options = [&](std::vector<std::pair<std::string, double>> preset, const std::string& pin) {
      if (pin.empty()) return preset;
      std::vector<std::pair<std::string, double>> out;
      for (const Signal& sig : signals())
        if (sig.id == pin)
          for (double t : sig.targets) out.emplace_back(sig.id, sig.target_is_slo_share ? t * in.ttft_p99_s : t);
      return out;
    };
    const auto prefill = options({{"queue_depth", 2}, {"ttft_p99", 0.5 * in.ttft_p99_s}, {"kv_cache", 0.7}}, in.pin_signal);
    const auto decode = options({{"kv_cache", 0.5}, {"kv_cache", 0.7}, {"queue_depth", 5}}, in.pin_decode_signal);
    for (int warm : {1, 2}) {
      if (2 * warm > prototype.max_replicas) continue;
      for (const auto& p : prefill)
        for (const auto& d : decode) {
          Candidate c = base_candidate(p.first, p.second, warm);
          c.decode_signal = d.first;
          c.decode_target = d.second;
          c.decode_warm = warm;
          stage1.push_back(c);
        }
      Candidate util = base_candidate("gpu_util", 80, warm);
      util.decode_signal = "gpu_util";
      util.decode_target = 80;
      util.decode_warm = warm;
      stage1.push_back(util);
    }
  }
  return stage1;
}

// A row for a candidate that was not run (a copy of one that was, with why it could not be): its
// figures cleared, so that the table shows only what ran.
void push_unrun(std::vector<Candidate>& rows, Candidate c, const std::string& why) {
  Candidate row;
  row.instance_type = c.instance_type;
  row.capacity_type = c.capacity_type;
  row.engine_profile = c.engine_profile;
  row.signal = c.signal;
  row.target = c.target;
  row.warm = c.warm;
  row.max_replicas = c.max_replicas;
  row.decode_signal = c.decode_signal;
  row.decode_target = c.decode_target;
  row.decode_warm = c.decode_warm;
  row.rejected.push_back(why);
  rows.push_back(row);
}

// Runs candidates and reports the search's progress: the share of its runs done, and which runs now.
struct Runner {
  const PlanInput& in;
  const PlanProgress& progress;
  int total = 1;
  double done = 0;  // runs done, rescaled when the search grows (so that the share never goes back)

  RunResult run(Candidate& c, const Shape& s, const RunOptions& o, const std::string& label) {
    const RunResult r = simulate(in, c, s, o, [&](double f) {
      if (progress) progress((done + f) / total, label);
    });
    ++done;
    return r;
  }
  // More runs than planned: the share done so far stays, the rest spreads over more runs.
  void grow(int more) {
    const double share = done / total;
    total += more;
    done = share * total;
  }
  void check_budget(Candidate& c) const {
    if (in.budget_usd_per_hour > 0 && c.node_cost_usd_per_hour > in.budget_usd_per_hour) {
      c.rejected.push_back("over budget: $" + num(c.node_cost_usd_per_hour, 2) + " per hour against $" + num(in.budget_usd_per_hour, 2));
    }
  }
};

// No autoscaler and warm pool met the SLO: which layer failed, with every candidate.
Json no_plan_json(const PlanInput& in, const std::vector<Candidate>& rows, const std::vector<Candidate>& stage1) {
  Json cands = Json::array();
  for (const Candidate& c : rows) cands.push_back(candidate_json(c));
  // Which layer failed: replicas that could not come up in time (nodes), or a scaler at its ceiling.
  // The closest candidate the rules allow (the duty cycle is rejected whatever its run showed).
  const Candidate& best = *std::max_element(stage1.begin(), stage1.end(), [](const Candidate& a, const Candidate& b) {
    const bool a_util = a.signal == "gpu_util", b_util = b.signal == "gpu_util";
    return a_util != b_util ? a_util : a.slo_attainment < b.slo_attainment;
  });
  const bool at_ceiling = best.peak_replicas >= best.max_replicas;
  // The budget failed, not a layer: a candidate met the SLO, and every one that did cost too much.
  const Candidate* cheapest_met = nullptr;
  for (const Candidate& c : stage1)
    if (c.meets_slo && c.signal != "gpu_util" && (!cheapest_met || c.node_cost_usd_per_hour < cheapest_met->node_cost_usd_per_hour)) cheapest_met = &c;
  if (cheapest_met) {
    return {{"verdict", "no_plan"},
            {"failed_layer", "budget"},
            {"reason", "the cheapest candidate that met the SLO (" + scaler_label(*cheapest_met) + " on " + cheapest_met->instance_type + ") costs $" +
                           num(cheapest_met->node_cost_usd_per_hour, 2) + "/h, over the budget of $" + num(in.budget_usd_per_hour, 2) + "/h"},
            {"candidates", cands}};
  }
  const std::string cold_start = best.time_to_ready_s > 0 ? "; a new replica took " + num(best.time_to_ready_s, 0) + " s to serve, against a " + num(in.ttft_p99_s, 1) + " s TTFT target"
                                                          : "; no replica was added in its run";
  return {{"verdict", "no_plan"},
          {"failed_layer", at_ceiling ? "nodes" : "replicas"},
          {"reason", at_ceiling ? "the best candidate ran its " + std::to_string(best.max_replicas) + " replicas (all " + std::to_string(in.max_nodes) +
                                      " nodes) and still met the SLO for " + num(best.slo_attainment * 100, 1) + " % of requests: the topology is too small for the burst"
                                : "no autoscaler and warm pool met the SLO (best " + num(best.slo_attainment * 100, 1) + " % with " + scaler_label(best) + ")" + cold_start},
          {"candidates", cands}};
}

// Stage 1b, the replica's shape: the chosen autoscaler and warm pool with the model at every other
// tensor-parallel degree the lab has (one pod per replica, on the same type) whose stage 1 did not run;
// the cheapest that meets the SLO is carried on.
Candidate choose_shape(Runner& runner, const Candidate& chosen1, const InstanceType& base_type, const std::vector<std::string>& tried,
                       std::vector<Candidate>& rows) {
  const PlanInput& in = runner.in;
  Candidate shaped = chosen1;
  for (const std::string& variant : tensor_parallel_variants(in.engine_profile)) {
    if (std::find(tried.begin(), tried.end(), variant) != tried.end()) continue;  // its stage 1 ran
    Candidate c = chosen1;
    c.engine_profile = variant;
    c.rejected.clear();
    const Shape s = shape_of(variant, base_type);
    if (s.pods_per_replica > 1 || s.gpus_per_pod > base_type.gpus) {
      push_unrun(rows, c, "a replica of " + std::to_string(s.gpus_per_replica) + " GPUs does not fit one " + base_type.name);
      continue;
    }
    c.max_replicas = max_replicas_for(in, s);
    c.warm = std::min(chosen1.warm, c.max_replicas);
    c.decode_warm = std::min(chosen1.decode_warm, c.max_replicas);
    if (in.serving == "disaggregated" && c.max_replicas < 2) {
      push_unrun(rows, c, "disaggregated serving needs a prefill and a decode replica of " + std::to_string(s.gpus_per_replica) + " GPUs");
      continue;
    }
    runner.run(c, s, {}, scaler_label(c) + " at TP" + std::to_string(engine_profile(variant).tensor_parallel));
    runner.check_budget(c);
    if (c.rejected.empty() && c.node_cost_usd_per_hour < shaped.node_cost_usd_per_hour) shaped = c;
    rows.push_back(c);
  }
  return shaped;
}

// Stage 2: the chosen autoscaler, warm pool and shape on every other usable type and capacity type;
// the cheapest that meets the SLO.
Candidate choose_type(Runner& runner, const Candidate& shaped, const std::vector<const InstanceType*>& usable, std::vector<Candidate>& rows) {
  const PlanInput& in = runner.in;
  Candidate best = shaped;
  for (const InstanceType* type : usable)
    for (const std::string& cap : in.capacity_types) {
      if (type->name == shaped.instance_type && cap == shaped.capacity_type) continue;
      Candidate c = shaped;
      c.instance_type = type->name;
      c.capacity_type = cap;
      c.rejected.clear();
      const Shape s = shape_of(c.engine_profile, *type);
      c.max_replicas = max_replicas_for(in, s);
      c.warm = std::min(shaped.warm, c.max_replicas);
      c.decode_warm = std::min(shaped.decode_warm, c.max_replicas);
      if (cap == "spot" && type->spot_usd_per_hour <= 0) {
        push_unrun(rows, c, type->name + " is not offered as spot in the lab's catalogue");
        continue;
      }
      if (c.engine_profile != in.engine_profile && (s.pods_per_replica > 1 || s.gpus_per_pod > type->gpus || c.max_replicas < 1)) {
        push_unrun(rows, c, "a replica of " + std::to_string(s.gpus_per_replica) + " GPUs does not fit one " + type->name);
        continue;
      }
      runner.run(c, s, {}, scaler_label(c) + " on " + c.instance_type + " (" + cap + ")");
      runner.check_budget(c);
      if (c.rejected.empty() && c.node_cost_usd_per_hour < best.node_cost_usd_per_hour) best = c;
      rows.push_back(c);
    }
  return best;
}

// The runs after the choice: the larger burst, the queue quota, and the chosen plan with what each
// rule forbids.
struct Checks {
  Candidate what_if, trap, memory, no_gang;
  std::int64_t trap_evictions = 0;
  std::int64_t partial_gpu_hours_milli = 0;
};

// Stage 3: the winner against a larger burst (reported, not a condition); with a training tenant the
// inference queue's quota (which may change the plan: `best`); then the rule checks, the chosen plan
// with what each rule forbids, to show what the rule costs or saves on this input.
Checks run_checks(Runner& runner, Candidate& best, const Shape& shape, std::vector<Candidate>& rows) {
  const PlanInput& in = runner.in;
  Checks k;
  k.what_if = best;
  k.what_if.rejected.clear();
  RunOptions bigger;
  bigger.burst_factor = in.burst_factor * in.what_if_burst;
  runner.run(k.what_if, shape, bigger, "what if the burst is " + num(in.what_if_burst, 1) + "x larger");
  // The inference queue's quota: every GPU its replicas can reach leaves the training tenant nothing
  // of its own. With a tenant, the chosen plan runs again with inference's quota cut to the peak of
  // the larger burst and the rest guaranteed to training; kept if it still meets the SLO at no more
  // than 5 % more cost, and then the larger burst runs again under it.
  const int peak_quota = static_cast<int>(std::max(best.peak_replicas, k.what_if.peak_replicas)) * shape.gpus_per_replica;
  if (in.training_gpus > 0 && peak_quota < best.max_replicas * shape.gpus_per_replica) {
    Candidate tight = best;
    tight.rejected.clear();
    tight.inference_quota_gpus = peak_quota;
    runner.run(tight, shape, {}, "the inference queue's quota at the larger burst's peak, " + std::to_string(peak_quota) + " GPUs");
    runner.check_budget(tight);
    if (tight.rejected.empty() && tight.node_cost_usd_per_hour <= best.node_cost_usd_per_hour * 1.05) {
      best = tight;
      k.what_if = best;
      runner.run(k.what_if, shape, bigger, "what if the burst is " + num(in.what_if_burst, 1) + "x larger, under that quota");
    } else if (tight.rejected.empty()) {
      tight.rejected.push_back("guaranteeing training the rest of the pool cost inference $" + num(tight.node_cost_usd_per_hour - best.node_cost_usd_per_hour, 2) +
                               "/h, over 5 %");
    }
    rows.push_back(tight);
  }
  k.trap = best;
  k.trap.rejected.clear();
  RunOptions underutilized;
  underutilized.consolidate_underutilized = true;
  const RunResult trap_run = runner.run(k.trap, shape, underutilized, "rule check: WhenEmptyOrUnderutilized/0s");
  k.trap_evictions = trap_run.summary.replica_evictions_by_reason[static_cast<int>(RemovalReason::Underutilized)];
  k.memory = best;
  k.memory.rejected.clear();
  k.memory.signal = "gpu_memory";
  k.memory.target = 60000;  // the lab's default target, MiB per GPU
  if (in.serving == "disaggregated") {
    k.memory.decode_signal = k.memory.signal;
    k.memory.decode_target = k.memory.target;
  }
  runner.run(k.memory, shape, {}, "rule check: an HPA on GPU memory");
  k.no_gang = best;
  if (shape.pods_per_replica > 1) {
    k.no_gang.rejected.clear();
    RunOptions kube;
    kube.kube_scheduler = true;
    const RunResult r = runner.run(k.no_gang, shape, kube, "rule check: the replicas' pods one by one (kube-scheduler, no gang)");
    k.partial_gpu_hours_milli = static_cast<std::int64_t>(std::llround(r.summary.partial_group_gpu_hours * 1000));
  }
  return k;
}

// Each rule with the run that checks it on this input: it confirms the rule, or the plan says the
// simulation disagrees here and why the rule still stands.
Json rules_json(const PlanInput& in, const std::vector<Candidate>& stage1, const Candidate& chosen1, const Candidate& best, const Shape& shape, const Checks& k) {
  Json rules = Json::array();
  const bool gang = shape.pods_per_replica > 1;
  const bool disaggregated = in.serving == "disaggregated";
  const Candidate& trap = k.trap;
  const Candidate& memory = k.memory;
  const Candidate& no_gang = k.no_gang;
  const std::int64_t trap_evictions = k.trap_evictions, partial_gpu_hours_milli = k.partial_gpu_hours_milli;
  const auto rule = [&](const char* id, const std::string& reason, bool disagrees, const Candidate* run) {
    Json j = {{"rule", id}, {"applied", true}, {"reason", reason}, {"simulation_disagrees", disagrees}};
    if (run) j["run"] = candidate_json(*run);
    rules.push_back(j);
  };
  {
    const Candidate* util = nullptr;  // the cheapest duty-cycle run of stage 1 that met the SLO
    for (const Candidate& c : stage1)
      if (c.signal == "gpu_util" && c.meets_slo && (!util || c.node_cost_usd_per_hour < util->node_cost_usd_per_hour)) util = &c;
    const bool disagrees = util && util->node_cost_usd_per_hour <= chosen1.node_cost_usd_per_hour;
    rule("no_gpu_util_hpa",
         disagrees ? "the simulation disagrees on this input: on " + chosen1.instance_type + " (" + chosen1.capacity_type +
                         ") the duty-cycle HPA met the SLO at $" + num(util->node_cost_usd_per_hour, 2) + "/h against $" +
                         num(chosen1.node_cost_usd_per_hour, 2) + "/h for " + scaler_words(chosen1) +
                         " there. The rule stands: the duty cycle saturates at 100 % with one request or a hundred, so it scales toward its maximum on any load, which this burst happened to need"
         : util ? "confirmed: on " + chosen1.instance_type + " (" + chosen1.capacity_type + ") the duty-cycle HPA met the SLO only at $" +
                      num(util->node_cost_usd_per_hour, 2) + "/h, against $" + num(chosen1.node_cost_usd_per_hour, 2) + "/h for " + scaler_words(chosen1) + " there"
                : std::string("confirmed: no duty-cycle HPA run met the SLO"),
         disagrees, util);
  }
  {
    const bool disagrees = trap.meets_slo && trap_evictions == 0;
    rule("when_empty_on_gpu_pool",
         disagrees ? "the simulation disagrees on this input: WhenEmptyOrUnderutilized/0s evicted no model server in the hour (SLO " + num(trap.slo_attainment * 100, 1) +
                         " %). The rule stands: it may delete any node whose pods fit elsewhere, and a moved replica reloads its weights for minutes"
                   : "confirmed: WhenEmptyOrUnderutilized/0s evicted " + std::to_string(trap_evictions) + " replicas to consolidate (SLO " +
                         num(trap.slo_attainment * 100, 1) + " % against " + num(best.slo_attainment * 100, 1) + " %)",
         disagrees, &trap);
  }
  {
    const bool disagrees = memory.meets_slo && memory.node_cost_usd_per_hour <= best.node_cost_usd_per_hour;
    rule("no_gpu_memory_signal",
         disagrees ? std::string("the simulation disagrees on this input: an HPA on GPU memory met the SLO at no more cost. The refusal stands: vLLM claims "
                                 "--gpu-memory-utilization of each GPU at start, so the signal reads full from the first request and never lets the pool scale down")
                   : "confirmed: an HPA on GPU memory reached " + std::to_string(memory.peak_replicas) + " replicas at $" + num(memory.node_cost_usd_per_hour, 2) +
                         "/h (SLO " + num(memory.slo_attainment * 100, 1) + " %): vLLM claims the memory at start, so the signal reads full whatever the load",
         disagrees, &memory);
  }
  if (gang) {
    const bool disagrees = partial_gpu_hours_milli == 0 && no_gang.meets_slo;
    rule("gang_for_tp_pp",
         disagrees ? std::string("the simulation disagrees on this input: placed pod by pod, no replica was left partly placed. The rule stands: with fewer free GPUs "
                                 "than a replica needs, kube-scheduler binds some of its pods and they hold their GPUs while serving nothing")
                   : "confirmed: each replica is " + std::to_string(shape.pods_per_replica) + " pods of " + std::to_string(shape.gpus_per_pod) +
                         " GPUs; placed pod by pod (kube-scheduler), partly placed replicas held " + num(static_cast<double>(partial_gpu_hours_milli) / 1000, 2) +
                         " GPU-hours serving nothing",
         disagrees, &no_gang);
  }
  if (disaggregated) {
    // The lesson's per-role rule (exercise 4): prefill on its queue, decode on its KV cache. The
    // cheapest run of that pair beside the chosen one.
    const Candidate* lesson = nullptr;
    for (const Candidate& c : stage1)
      if (c.signal == "queue_depth" && c.decode_signal == "kv_cache" && c.meets_slo && (!lesson || c.node_cost_usd_per_hour < lesson->node_cost_usd_per_hour)) lesson = &c;
    const bool agrees = chosen1.signal == "queue_depth" && chosen1.decode_signal == "kv_cache";
    // A pinned signal may have kept the lesson's pair from running at all.
    bool lesson_ran = false;
    for (const Candidate& c : stage1) lesson_ran = lesson_ran || (c.signal == "queue_depth" && c.decode_signal == "kv_cache");
    std::string reason;
    if (agrees) {
      reason = "confirmed: the cheapest pair that met the SLO scales prefill on its queue and decode on its KV cache ($" + num(chosen1.node_cost_usd_per_hour, 2) + "/h)";
    } else if (!lesson_ran) {
      reason = "not checked: the input pinned " + scaler_words(chosen1) + ", so the lesson's pair (prefill on its queue, decode on its KV cache) was not run";
    } else {
      reason = "the simulation disagrees on this input: the cheapest pair that met the SLO was " + scaler_words(chosen1) + " at $" +
               num(chosen1.node_cost_usd_per_hour, 2) + "/h; " +
               (lesson ? "the lesson's pair met it at $" + num(lesson->node_cost_usd_per_hour, 2) + "/h" : std::string("the lesson's pair did not meet it")) +
               ". The rule stands as guidance: a prefill server is compute-bound and its backlog is its queue, a decode server is memory-bound and its KV cache fills before its queue grows";
    }
    rule("per_role_signals", reason, !agrees && lesson_ran, lesson);
  }
  return rules;
}

// The warm pool's reason: the runs' cold start against the TTFT target, and what fewer warm replicas did.
std::string warm_reason(const PlanInput& in, const std::vector<Candidate>& stage1, const Candidate& chosen1, const Candidate& best, double cold_start_s) {
  // The warm pool: what the runs of the chosen autoscaler with fewer warm replicas showed.
  std::string fewer;
  for (const Candidate& c : stage1) {
    if (c.signal != chosen1.signal || c.target != chosen1.target || c.decode_signal != chosen1.decode_signal ||
        c.decode_target != chosen1.decode_target || c.engine_profile != chosen1.engine_profile || c.warm >= best.warm)
      continue;
    fewer += std::string(fewer.empty() ? "" : "; ") + warm_text(c) + ": " +
             (c.meets_slo ? "met the SLO at $" + num(c.node_cost_usd_per_hour, 2) + "/h" : c.rejected.front());
  }
  return "a new replica took up to " + num(cold_start_s, 0) + " s from creation to serving in the simulated runs (node launch, image, weights, warm-up), " +
      num(cold_start_s / in.ttft_p99_s, 0) + " times the " + num(in.ttft_p99_s, 1) + " s TTFT target, so a burst's first minutes are served by the " +
      warm_text(best) +
      (fewer.empty() ? std::string(" (the least the autoscaler keeps)") : ". With fewer: " + fewer);
}

// The plan's objects, each through the lab's own validator, with the warm pool, dashboard and kill switch.
Json plan_json(const PlanInput& in, const Candidate& best, const Shape& shape, double cold_start_s, const std::string& warm_pool_reason) {
  const bool disaggregated = in.serving == "disaggregated";
  const Json chosen_scenario = scenario_for(in, best, shape);
  const Scenario sc = parse_scenario(chosen_scenario);
  const Json nodepools = nodepools_json(in, best, shape);
  Json lint = Json::array();
  for (std::size_t k = 0; k < nodepools.size(); ++k) {
    const NodePool parsed_pool = parse_nodepool(nodepools[k], "/plan/nodepools/" + std::to_string(k));
    for (const NodePoolWarning& w : lint_nodepool(parsed_pool, nodepools[k]))
      if (std::find(lint.begin(), lint.end(), Json(w.message)) == lint.end()) lint.push_back(w.message);
  }
  // Each pool's autoscaler and model server (one pool aggregated; prefill and decode disaggregated).
  Json autoscalers = Json::array(), workloads = Json::array();
  const std::vector<Role> roles = roles_of(best);
  for (std::size_t k = 0; k < roles.size(); ++k) {
    const Json a = deployed_autoscaler(roles[k], shape, best.max_replicas, *sc.pools.at(k).autoscaler.hpa);
    if (a.at("kind") == "HorizontalPodAutoscaler") hpa::parse_hpa_spec(a.at("spec"), "/plan/autoscalers/" + std::to_string(k) + "/spec");
    autoscalers.push_back(a);
    workloads.push_back(workload_json(in, roles[k], shape, engine_profile(best.engine_profile)));
  }
  const Json queues = kai_queues(in, shape, best);
  read_queues(queues, "/plan/kai/queues");
  const bool gang = shape.pods_per_replica > 1;
  Json kai = {{"queues", queues},
              {"pod_labels", {{"kai.scheduler/queue", "inference"}}},
              {"schedulerName", "kai-scheduler"},
              {"podgroup", {{"minMember", shape.pods_per_replica}, {"priorityClassName", "inference"}}}};
  if (gang) {
    // The lesson's rule: TP/PP over nodes must be a gang, and its members close together.
    kai["topology"] = topology_annotations(in, shape);
    kai["topologies"] = Json::array({topology_cr(in)});
    read_topologies(kai["topologies"], "/plan/kai/topologies");
  }
  const Json dashboard = Json::array({"sum(vllm:num_requests_waiting) per replica (queue depth)", "vllm:kv_cache_usage_perc per replica",
                                      "P99 of vllm:time_to_first_token_seconds against " + num(in.ttft_p99_s, 2) + " s",
                                      "Karpenter: karpenter_nodeclaims_created and the pods' Pending time (node provisioning wait)",
                                      "KAI: PodGroups Pending and their Unschedulable events (gang deferrals)",
                                      "Karpenter disruption: karpenter_voluntary_disruption_decisions_total (consolidation events)"});
  return {{"nodepools", nodepools},
          {"nodepool_lint", lint},
          {"ec2nodeclass", ec2nodeclass_json()},
          {"autoscalers", autoscalers},
          {"kai", kai},
          {"warm_pool",
           {{"replicas", best.warm + (disaggregated ? best.decode_warm : 0)},
            {"roles", disaggregated ? Json{{"prefill", best.warm}, {"decode", best.decode_warm}} : Json{{"aggregated", best.warm}}},
            {"cold_start_s", cold_start_s},
            {"reason", warm_pool_reason}}},
          {"dashboard", dashboard},
          {"scenario", chosen_scenario},
          {"workloads", workloads},
          {"kill_switch", "If the P99 TTFT stays above " + num(in.ttft_p99_s, 2) + " s for 5 minutes, roll the autoscaler back to its last known-good state (" +
                              warm_text(best) + ", the previous " + autoscalers.at(0).at("kind").get<std::string>() + (disaggregated ? "s" : "") + ")."}};
}

}  // namespace

Json make_plan(PlanInput in, const PlanProgress& progress) {
  const Json refusals = refusals_of(in);
  if (!refusals.empty()) return {{"verdict", "refused"}, {"refusals", refusals}};
  std::vector<Candidate> rows;
  const std::vector<const InstanceType*> usable = usable_types(in, rows);
  if (usable.empty()) {
    Json cands = Json::array();
    for (const Candidate& c : rows) cands.push_back(candidate_json(c));
    return {{"verdict", "no_plan"}, {"failed_layer", "nodes"}, {"reason", "no instance type of the topology can run " + in.engine_profile}, {"candidates", cands}};
  }
  // Stage 1 on the cheapest usable on-demand (else spot) type: every signal and warm pool size.
  const auto price = [](const InstanceType* t, const std::string& cap) { return cap == "spot" ? t->spot_usd_per_hour : t->on_demand_usd_per_hour; };
  const std::string first_cap = std::find(in.capacity_types.begin(), in.capacity_types.end(), "on-demand") != in.capacity_types.end() ? "on-demand" : "spot";
  const InstanceType* base_type = *std::min_element(usable.begin(), usable.end(), [&](const InstanceType* a, const InstanceType* b) {
    return price(a, first_cap) < price(b, first_cap);
  });
  const Shape base_shape = shape_of(in.engine_profile, *base_type);
  const Json load = in.average_concurrency > 0 ? rate_from_concurrency(in, base_shape) : Json();
  Candidate prototype;
  prototype.instance_type = base_type->name;
  prototype.capacity_type = first_cap;
  prototype.engine_profile = in.engine_profile;
  prototype.max_replicas = max_replicas_for(in, base_shape);
  std::vector<Candidate> stage1 = first_stage(in, prototype);
  // Stage 1b and 2 run at most one candidate per TP degree and per other (type, capacity) pair, stage 3
  // the what-if, the quota (twice), the rule checks.
  Runner runner{in, progress};
  const int stage2_count = static_cast<int>(usable.size() * in.capacity_types.size()) - 1;
  runner.total = static_cast<int>(stage1.size()) + std::max(0, stage2_count) + 3 + (base_shape.pods_per_replica > 1 ? 1 : 0) + (in.training_gpus > 0 ? 2 : 0) +
                 static_cast<int>(tensor_parallel_variants(in.engine_profile).size()) - 1;
  const auto run_first = [&](std::vector<Candidate>& candidates, const Shape& shape) {
    for (Candidate& c : candidates) {
      runner.run(c, shape, {}, scaler_label(c) + ", " + std::to_string(c.warm) + " warm on " + c.instance_type +
                                   (c.engine_profile == in.engine_profile ? "" : " at TP" + std::to_string(engine_profile(c.engine_profile).tensor_parallel)));
      if (c.signal == "gpu_util") {
        c.rejected.push_back("the lesson's hard reject: an HPA on DCGM_FI_DEV_GPU_UTIL, a duty cycle that reads 100 % with one request or a hundred, says nothing about backlog");
      }
      runner.check_budget(c);
    }
  };
  run_first(stage1, base_shape);
  const auto acceptable = [](const std::vector<Candidate>& candidates) {
    return std::any_of(candidates.begin(), candidates.end(), [](const Candidate& c) { return c.rejected.empty(); });
  };
  // Nothing met the SLO at the input's tensor-parallel degree: before the search gives up, the stage-1
  // candidate that came closest (the duty cycle aside) runs again with the model at every other degree
  // whose replica fits one node (one run each, so that a search that fails stays short).
  std::vector<std::string> tried = {in.engine_profile};
  if (!acceptable(stage1)) {
    std::vector<Candidate> closest;
    for (const Candidate& c : stage1)
      if (c.signal != "gpu_util") closest.push_back(c);
    std::stable_sort(closest.begin(), closest.end(), [](const Candidate& a, const Candidate& b) { return a.slo_attainment > b.slo_attainment; });
    closest.resize(std::min<std::size_t>(closest.size(), 1));
    for (const std::string& variant : tensor_parallel_variants(in.engine_profile)) {
      const Shape s = shape_of(variant, *base_type);
      if (variant == in.engine_profile || s.pods_per_replica > 1 || s.gpus_per_pod > base_type->gpus) continue;
      const int max_replicas = max_replicas_for(in, s);
      if (max_replicas < (in.serving == "disaggregated" ? 2 : 1)) continue;
      std::vector<Candidate> more;
      for (const Candidate& c : closest) {
        Candidate at_tp = prototype;
        at_tp.engine_profile = variant;
        at_tp.max_replicas = max_replicas;
        at_tp.signal = c.signal;
        at_tp.target = c.target;
        at_tp.warm = std::min(c.warm, max_replicas);
        at_tp.decode_signal = c.decode_signal;
        at_tp.decode_target = c.decode_target;
        at_tp.decode_warm = std::min(c.decode_warm, max_replicas);
        more.push_back(at_tp);
      }
      runner.grow(static_cast<int>(more.size()));
      run_first(more, s);
      stage1.insert(stage1.end(), more.begin(), more.end());
      tried.push_back(variant);
    }
  }
  const Candidate* chosen1 = nullptr;
  for (const Candidate& c : stage1) {
    if (c.rejected.empty() && better(c, chosen1)) chosen1 = &c;
  }
  rows.insert(rows.end(), stage1.begin(), stage1.end());
  if (!chosen1) {
    Json out = no_plan_json(in, rows, stage1);
    if (!load.is_null()) out["load_from_concurrency"] = load;
    return out;
  }
  const Candidate shaped = choose_shape(runner, *chosen1, *base_type, tried, rows);
  Candidate best = choose_type(runner, shaped, usable, rows);
  const Shape shape = shape_of(best.engine_profile, *find_instance_type(default_instance_types(), best.instance_type));
  const Checks checks = run_checks(runner, best, shape, rows);
  if (progress) progress(1.0, "done");
  // The cold start a warm pool has to cover: the longest creation → Ready of any run that added replicas.
  double cold_start_s = 0;
  for (const Candidate& c : rows) cold_start_s = std::max(cold_start_s, c.time_to_ready_s);
  cold_start_s = std::max({cold_start_s, checks.what_if.time_to_ready_s, best.time_to_ready_s});
  Json candidates = Json::array();
  for (const Candidate& c : rows) candidates.push_back(candidate_json(c));
  Json out = {{"verdict", "plan"},
              {"input", input_json(in)},
              {"chosen", candidate_json(best)},
              {"plan", plan_json(in, best, shape, cold_start_s, warm_reason(in, stage1, *chosen1, best, cold_start_s))},
              {"what_if", candidate_json(checks.what_if)},
              {"rules", rules_json(in, stage1, *chosen1, best, shape, checks)},
              {"candidates", candidates}};
  if (!load.is_null()) out["load_from_concurrency"] = load;
  return out;
}

}  // namespace gpuscale::plan
