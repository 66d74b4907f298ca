// The work budget of a run (see budget.hpp).
#include "sim/budget.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "kernel/time.hpp"

namespace gpuscale {

namespace {

// The mean of what a token distribution draws, near enough for an estimate.
double mean_tokens(const TokenDistribution& d) {
  const double lo = static_cast<double>(d.min), hi = static_cast<double>(d.max);
  if (d.kind == TokenDistributionKind::Uniform) return (lo + hi) / 2;
  return std::clamp(d.mean, lo, hi);
}

// "1,234,567"
std::string count(double v) {
  std::string digits = std::to_string(static_cast<long long>(std::llround(std::max(0.0, v))));
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, v >= 100 ? "%.0f" : "%.3g", v);
  return buf;
}

// The share of requests each pool serves (workload.models; a single pool serves all).
// The prefix of a pool's fields: "/engine" in the single-service form, "/pools/i/engine" with pools.
std::string pool_path(const Scenario& s, std::size_t i, const char* field) {
  return (s.pools_declared ? "/pools/" + std::to_string(i) : std::string()) + "/" + field;
}

// The field that sets how many requests arrive: the open loop's rate, or the closed loop's clients.
const char* load_field(const Scenario& s) { return s.workload.closed_loop() ? "concurrency" : "rate_scale"; }

}  // namespace

WorkEstimate estimate_work(const Scenario& s) {
  WorkEstimate e;
  e.requests = expected_arrivals(s);  // a closed loop: the most its clients can send (scenario/parse.cpp)
  const std::vector<double> share = pool_request_shares(s);
  // A shared prefix adds its tokens to the prompts that carry it (a prefix-cache hit spares part of
  // them; the estimate counts the worst case).
  const PrefixConfig& px = s.workload.prefixes;
  const double prompt = mean_tokens(s.workload.prompt_tokens) + (px.count > 0 ? px.share * mean_tokens(px.tokens) : 0.0);
  double handoffs = 0;  // the share of requests prefilled in one pool and decoded in another
  for (std::size_t i = 0; i < s.pools.size(); ++i) {
    // A step takes at most max_num_batched_tokens prompt tokens, so prefill needs at least this many
    // steps (a decode pool computes no prompt: its KV arrives).
    if (s.pools[i].role == PoolRole::Decode) continue;
    e.prefill_steps += e.requests * share[i] * prompt / static_cast<double>(s.pools[i].engine.max_num_batched_tokens);
    if (s.pools[i].role == PoolRole::Prefill) handoffs += share[i];
  }
  const double scrapes = s.duration_s / s.metrics.scrape_interval_s;
  e.periodic = 2 * scrapes;  // the scrape and its DCGM window (metrics.pipeline "ideal")
  if (s.metrics.pipeline == MetricsPipeline::Realistic) {
    // Per replica: Prometheus's scrape of its vLLM server, and its exporter's sample window and
    // collection; the series row stays. Counted at the replicas the run starts with (at least one),
    // the meter counts what the run then grows to.
    double replicas = 0;
    for (const PoolConfig& p : s.pools) replicas += std::max<double>(1, static_cast<double>(p.autoscaler.replicas));
    e.periodic = scrapes + replicas * (scrapes + 2 * s.duration_s / s.metrics.dcgm_collect_interval_s);
  }
  double syncs = 0;
  for (const PoolConfig& p : s.pools) {
    if (p.autoscaler.hpa) syncs += s.duration_s / p.autoscaler.sync_period_s;
    if (is_keda(p.autoscaler.strategy) && p.autoscaler.keda.scales_to_zero()) syncs += s.duration_s / p.autoscaler.keda.polling_interval_s;
  }
  e.periodic += syncs;
  // Per request: its arrival, its first token and its completion; with a handoff, the prefill's end
  // and the KV's arrival too.
  e.events = (3 + 2 * handoffs) * e.requests + e.prefill_steps + e.periodic;
  e.series_rows = (std::floor(scrapes) + 1) * (1 + (s.pools_declared ? static_cast<double>(s.pools.size()) : 0));
  if (s.output.decisions && s.output.hpa_syncs == HpaSyncLog::All) e.logged_syncs = syncs;
  const double detail = s.output.decision_detail ? double(WorkCounts::kDetail) : 0;
  e.units = (e.events * double(WorkCounts::kEvent) + scrapes * double(WorkCounts::kScrape) + syncs * double(WorkCounts::kSync) +
             e.series_rows * double(WorkCounts::kRow) + e.logged_syncs * (double(WorkCounts::kDecision) + detail)) /
            1000;
  return e;
}

void check_work_budget(const Scenario& s, const WorkLimits& limits) {
  const WorkEstimate e = estimate_work(s);
  const double max_events = static_cast<double>(limits.max_events);
  const double max_rows = static_cast<double>(limits.max_series_rows);
  if (e.series_rows > max_rows) {
    const double series = e.series_rows / (std::floor(s.duration_s / s.metrics.scrape_interval_s) + 1);
    const double rows = max_rows / series;
    throw InputError("/metrics/scrape_interval_s",
                     "is " + num(s.metrics.scrape_interval_s) + " s over duration_s " + num(s.duration_s) + " s: " + count(e.series_rows) +
                         " rows of series (one per scrape" + (series > 1 ? " for the run and each pool" : "") + "); a run returns at most " +
                         count(max_rows) + ". Raise scrape_interval_s to at least " +
                         num(std::ceil(s.duration_s / (rows - 1) * 10) / 10) + " s, or shorten duration_s to at most " +
                         num(std::floor((rows - 1) * s.metrics.scrape_interval_s)) + " s");
  }
  // Explaining every sync of a long run costs more than running it.
  const double log_units = e.logged_syncs * (double(WorkCounts::kDecision) + (s.output.decision_detail ? double(WorkCounts::kDetail) : 0)) / 1000;
  if (e.units > static_cast<double>(limits.max_work) && log_units > e.units / 2) {
    const double fit = e.logged_syncs * static_cast<double>(limits.max_work) / e.units;
    throw InputError(s.output.decision_detail ? "/output/decision_detail" : pool_path(s, 0, "autoscaler/sync_period_s"),
                     "would explain " + count(e.logged_syncs) + " autoscaler syncs" + (s.output.decision_detail ? " in full detail" : "") +
                         " (duration_s " + num(s.duration_s) + " s over the sync periods): about " + count(e.units) +
                         " units of work; a run may take at most " + count(double(limits.max_work)) + ", about " + count(fit) +
                         " syncs. Set output.hpa_syncs to \"changes\" (only the syncs that change the replica count are explained)" +
                         (s.output.decision_detail ? ", turn output.decision_detail off," : "") + " or raise autoscaler.sync_period_s (and keda.polling_interval_s)");
  }
  if (e.events <= max_events && e.units <= static_cast<double>(limits.max_work)) return;
  // Name what drives the estimate most, with what would fit.
  const double per_request = e.requests > 0 ? (3 * e.requests + e.prefill_steps) / e.requests : 3;
  const bool by_events = e.events > max_events;
  const double fit_share = by_events ? max_events / e.events : static_cast<double>(limits.max_work) / e.units;
  const double fit_requests = std::max(0.0, e.requests * fit_share);
  const std::string events_text = count(e.events) + " events (" + count(e.requests) + " requests × " + num(per_request) + " events each" +
                                  (e.prefill_steps > e.requests ? ", mostly prefill steps" : "") + ", plus " + count(e.periodic) +
                                  " scrapes and autoscaler syncs)";
  std::string how = by_events ? "about " + events_text + "; a run may take at most " + count(max_events) + ". "
                              : "about " + count(e.units) + " units of work (" + events_text + ", " + count(e.series_rows) +
                                    " series rows); a run may take at most " + count(double(limits.max_work)) + ". ";
  if (e.prefill_steps > 3 * e.requests) {
    std::size_t worst = 0;
    for (std::size_t i = 1; i < s.pools.size(); ++i) {
      if (s.pools[i].engine.max_num_batched_tokens < s.pools[worst].engine.max_num_batched_tokens) worst = i;
    }
    throw InputError(pool_path(s, worst, "engine/max_num_batched_tokens"),
                     "is " + count(double(s.pools[worst].engine.max_num_batched_tokens)) + " tokens per step for prompts of about " +
                         count(mean_tokens(s.workload.prompt_tokens)) + " tokens: " + how + "Raise max_num_batched_tokens, shorten the prompts (workload.prompt_tokens), or lower the request count to about " +
                         count(fit_requests) + " (workload." + load_field(s) + " or duration_s)");
  }
  const double periodic_units = e.units - (3 * e.requests + e.prefill_steps) * double(WorkCounts::kEvent) / 1000;
  if (by_events ? e.periodic > max_events / 2 : periodic_units > e.units / 2) {
    throw InputError("/duration_s", "is " + num(s.duration_s) + " s with a scrape every " + num(s.metrics.scrape_interval_s) +
                                         " s and autoscaler syncs: " + how + "Raise metrics.scrape_interval_s and the sync periods, or shorten duration_s");
  }
  throw InputError(std::string("/workload/") + load_field(s), "gives " + how + "Lower workload." + load_field(s) + " or duration_s so that about " +
                                                                    count(fit_requests) + " requests arrive");
}

void WorkMeter::stop(std::int64_t now_micros) const {
  static const char* const kNames[] = {"arrivals", "engine steps", "client timeouts", "scrapes", "autoscaler syncs", "cluster events", "other events"};
  std::size_t top = 0;
  for (std::size_t k = 1; k < kKinds; ++k) {
    if (by_kind_[k] > by_kind_[top]) top = k;
  }
  // What took the most work: events, the engine batches, visiting replicas and pods, or explaining.
  const WorkCounts& c = counts_;
  const std::int64_t events = c.events * WorkCounts::kEvent, batches = c.sequences * WorkCounts::kSequence,
                     visits = c.router_visits * WorkCounts::kRouterVisit + c.replica_visits * WorkCounts::kReplicaVisit +
                              c.pod_views * WorkCounts::kPodView + c.scrapes * WorkCounts::kScrape + c.rows * WorkCounts::kRow +
                              c.syncs * WorkCounts::kSync + c.cluster * WorkCounts::kCluster,
                     explaining = c.decisions * WorkCounts::kDecision + c.detailed * WorkCounts::kDetail;
  const double t = micros_to_seconds(now_micros);
  const std::string what = c.events > limits_.max_events ? "more than " + count(double(limits_.max_events)) + " events"
                                                         : "more than " + count(double(limits_.max_work)) + " units of work";
  std::string message = "the run stopped at t = " + num(t) + " s of " + num(s_.duration_s) + " s: it had taken " + what + " (" +
                        count(double(c.events)) + " events, the most of them " + kNames[top] + ", " + count(double(by_kind_[top])) + "; " +
                        count(double(c.sequences)) + " sequences stepped in engine batches; " +
                        count(double(c.router_visits + c.replica_visits + c.pod_views)) + " replicas and pods visited by the router, scrapes and syncs; " +
                        count(double(c.decisions)) + " decisions explained; " + count(double(c.fits)) + " pods tried against nodes). ";
  const std::int64_t fitting = c.fits * WorkCounts::kFit;
  std::string path = "/duration_s";
  if (fitting >= std::max({events, batches, visits, explaining})) {
    // Trying every pending pod against every node (and every offering) at each pass: pods × nodes.
    std::size_t most = 0;
    const auto& w = s_.cluster.workloads;
    for (std::size_t i = 1; i < w.size(); ++i) {
      if (w[i].replicas > w[most].replicas) most = i;
    }
    const bool workload = !w.empty() && w[most].replicas >= 100;
    path = workload ? "/cluster/workloads/" + std::to_string(most) + "/replicas" : pool_path(s_, 0, "autoscaler/max_replicas");
    message += "Most of the work was the scheduler and the node provisioner trying pods against nodes (" + count(double(c.fits)) +
               " fit checks), which grows with pods × nodes at every pass: " +
               (workload ? "lower the replicas of cluster.workloads (" + quote_for_message(w[most].name) + " has " +
                               count(double(w[most].replicas)) + ") or make its pods fewer and larger. "
                         : std::string("lower the replica counts or make the pods fewer and larger. "));
  } else if (explaining >= std::max({events, batches, visits})) {
    if (c.detailed * 2 > c.decisions) {
      path = "/output/decision_detail";
      message += "Most of the work was explaining decisions in full detail: turn output.decision_detail off, set output.hpa_syncs to "
                 "\"changes\", or raise the sync period. ";
    } else if (c.scaler_decisions * 2 < c.decisions) {
      path = "/cluster";
      message += "Most of the work was explaining the cluster's decisions, over and over: pods that stay pending are retried and "
                 "explained at every attempt, so check that every pod fits a NodePool or node group. ";
    } else {
      path = pool_path(s_, 0, "autoscaler/sync_period_s");
      message += "Most of the work was explaining autoscaler syncs: set output.hpa_syncs to \"changes\" (only the syncs that change "
                 "the replica count are explained), or raise autoscaler.sync_period_s (and keda.polling_interval_s). ";
    }
  } else if (visits >= std::max(events, batches)) {
    path = "/metrics/scrape_interval_s";
    message += "Most of the work was scraping, syncing and visiting replicas (at every scrape, autoscaler sync and arrival): raise "
               "metrics.scrape_interval_s and the sync periods, or lower the replica counts. ";
  } else if (batches >= events) {
    path = s_.pools_declared ? "/pools" : "/engine/max_num_seqs";
    message += "Most of the work was stepping large batches (engine.max_num_seqs) of long outputs (workload.output_tokens). ";
  } else if (top == Arrival || top == Timeout || top == EngineStep) {
    path = std::string("/workload/") + load_field(s_);
  }
  message += "At this pace about " + num(std::floor(t * 0.9)) + " s of this scenario fit in one run: shorten duration_s or lower the load";
  throw InputError(path, message);
}

}  // namespace gpuscale
