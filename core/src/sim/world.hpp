// The simulated world, private to sim/: one event queue, the request table, the pools of replica
// engines with their scalers, the router, the metrics scrape and the cluster model, and the only
// code that mutates any of them. Its methods are spread over world.cpp (the loop, arrivals, routing,
// the cluster's notices), replicas.cpp (replica lifecycle and the ReplicaSet), measure.cpp (DCGM,
// scrapes, scaler syncs) and summary.cpp (the result).
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autoscaling/replica_scaler.hpp"
#include "autoscaling/service_scalers.hpp"
#include "sim/cluster_model.hpp"
#include "kernel/decision_log.hpp"
#include "kernel/kernel.hpp"
#include "metrics/pipeline.hpp"
#include "metrics/windowed_quantile.hpp"
#include "provisioning/provisioner.hpp"
#include "serving/engine.hpp"
#include "serving/router.hpp"
#include "serving/workload.hpp"
#include "sim/budget.hpp"
#include "sim/simulation.hpp"

namespace gpuscale::sim {

// Draining: its pod is terminating (the one path of sim/replicas.cpp): out of the router, preStop, SIGTERM.
enum class ReplicaState : std::uint8_t { Pending, Loading, WarmingUp, Ready, Draining, Gone };
const char* state_name(ReplicaState s);

struct Replica {
  std::uint32_t id = 0;       // within its pool, in creation order
  ReplicaState state = ReplicaState::Pending;
  Micros created_at = 0;
  Micros node_ready_at = -1;  // container start
  Micros ready_at = -1;       // readiness transition
  std::unique_ptr<Engine> engine;
  bool stepping = false;
  std::uint32_t step_gen = 0;  // bumped whenever the step under way gets a new end time
  Micros step_end = 0;
  Micros busy_at_window_start = 0;  // engine busy time when the current DCGM sample window opened
  bool window_open = false;
  Micros window_opened_at = 0;      // realistic pipeline: when that window opened
  TargetSeries metrics;             // realistic pipeline: its targets' phases, scrapes and collections
  Micros idle_since = -1;           // Ready with nothing to do since then (-1: not idle)
  std::vector<std::uint32_t> assigned;  // requests the router gave it (to account for losses)
  std::int64_t pod = -1;                // cluster mode: its pod in the ClusterModel (a group's leader; its workers follow it)
  // A LeaderWorkerSet group: members bound so far, when the last of their containers can start, and
  // the GPUs its bound members hold while some are not (partly placed) since partial_since.
  int members_bound = 0;
  Micros members_start = 0;
  Micros partial_since = -1;
  int partial_gpus = 0;
  // Its pod's termination (Draining): who deleted it, when SIGTERM and SIGKILL come, what it held.
  FailureCause term_cause = FailureCause::ScaleDown;
  Micros sigterm_at = -1, sigkill_at = -1;
  bool sigterm_sent = false;
  std::int64_t held_at_deletion = 0;
  std::string crash;                    // non-empty: vLLM exits at start-up on the GPU it got (CrashLoopBackOff), why
  // A WVA reads max_over_time(...[1m]) of its vLLM gauges: the scrapes of the last minute (and a bit).
  struct VllmSample {
    Micros at;
    double kv_usage;
    std::int32_t waiting;
  };
  std::deque<VllmSample> vllm_history;
};

// One model-serving Deployment in motion.
struct Pool {
  const PoolConfig* config = nullptr;
  int index = 0;
  std::string log_name;        // DecisionRecord::pool: its name when the scenario lists pools, else ""
  EngineConfig engine;
  int gpus_per_replica = 1;
  std::deque<Replica> replicas;       // a deque: references stay valid as replicas are added
  std::vector<std::uint32_t> ready;   // ids of Ready replicas, ascending (the router's candidates)
  std::vector<std::unique_ptr<ReplicaScaler>> scalers;
  std::vector<ScrapedReplica> scraped;  // what the last scrape saw of its replicas
  std::int32_t spec_replicas = 0, ready_replicas = 0;
  std::int64_t live_replicas = 0, idle_replicas = 0, peak_replicas = 0;
  std::int64_t num_scale_events = 0, num_replica_evictions = 0, retired_preemptions = 0;
  std::int64_t retired_prefix_queries = 0, retired_prefix_hits = 0;  // vllm:prefix_cache_* of replicas gone
  std::int64_t evictions_by_reason[kNumRemovalReasons] = {};
  std::int64_t arrivals = 0, completed = 0, dropped = 0, rejected = 0, arrivals_since_scrape = 0;
  Micros replica_micros = 0, idle_replica_micros = 0;  // replica-µs existing / Ready and idle
  double partial_group_gpu_micros = 0;  // GPU-µs bound members of partly placed groups held
  std::int64_t started_replicas = 0;    // replicas created during the run that became Ready
  Micros start_micros = 0, max_start_micros = 0;  // their creation → Ready, summed and the longest
  WindowedQuantile ttft_window;  // (first token at, TTFT s) within metrics.ttft_window_s
  Micros ttft_spike_micros = 0;
  // The lab's Prometheus rules for the pool, kept when an HPA reads them: its servers' TTFT
  // (vllm:time_to_first_token_seconds: from the request reaching the server to its first token) over
  // the last minute, and when its requests missed the SLO or were dropped (the last minute's).
  bool rule_ttft = false, rule_slo = false;
  WindowedQuantile server_ttft_1m;
  std::deque<Micros> slo_misses;
  // External metrics its model-level autoscaler last published for it (WVA's wva_desired_replicas …).
  std::vector<std::pair<std::string, double>> published;
  Series series;
  // Requests that arrived and are neither answered nor abandoned: at the gateway or at a replica.
  std::int64_t in_flight() const { return arrivals - completed - dropped - rejected; }
};

// The pools that serve one model, by role (PoolRole: aggregated, prefill, decode; several in a role
// are its variants), and per role the requests the gateway holds while none of them has a Ready replica.
struct ModelGroup {
  std::vector<int> pools[3];
  std::deque<std::uint32_t> gateway[3];
  std::size_t rr_next[3] = {};
};

// What a model's frontend has counted since the start (the counters behind Dynamo's frontend
// metrics: dynamo_frontend_requests_started_total and the ISL, OSL, TTFT, ITL and duration histograms'
// sums and counts).
struct FrontendCounters {
  Micros at = 0;
  double started = 0, isl_sum = 0, isl_count = 0, osl_sum = 0, osl_count = 0, ttft_sum = 0, ttft_count = 0, itl_sum = 0, itl_count = 0,
         duration_sum = 0, duration_count = 0;
};

// A model-level autoscaler in motion: its pools and, for the planner, the frontend's counters at its
// past syncs (increase() over its window).
struct ServiceRun {
  const ServiceGroupConfig* config = nullptr;
  std::unique_ptr<ServiceScaler> scaler;
  int model = -1;                        // the workload's model index
  std::deque<FrontendCounters> history;  // at each sync, oldest first, as far back as its window
};

enum class EventKind : std::uint8_t {
  Arrival, StepEnd, NodeReady, LoadDone, WarmupDone, Sigterm, StopDeadline, Timeout, DcgmWindowStart, Scrape, ScalerSync, Cluster,
  ServiceSync,
  KvLoaded,  // a request's KV reached its decode replica (index: the request)
  ClusterSettle,
  // metrics.pipeline "realistic", per replica: Prometheus scrapes its vLLM server; its dcgm-exporter's
  // sample window opens; the exporter collects.
  VllmScrape, DcgmSampleStart, DcgmCollect,
  End
};

struct Payload {
  EventKind kind = EventKind::End;
  std::uint8_t sub = 0;    // Cluster: ClusterEvent::Kind; ScalerSync: which of the pool's scalers
  std::uint16_t pool = 0;
  std::uint32_t index = 0;  // replica id, request id or the cluster event's index
  std::uint32_t gen = 0;    // StepEnd: the replica's step generation (a cut macro step leaves a stale event); Cluster: its gen
};

// Who settles what a call into the cluster reported: the caller at once (a pool acting on its own), or
// the loop already settling the notice that led to the call.
enum class Settle : std::uint8_t { Now, ByCaller };

class World : public ClusterEvents {
 public:
  World(const Scenario& s, const WorkLimits& limits);
  RunResult run();
  void report_progress(const ProgressReport& progress) { progress_ = &progress; }
  void file(Micros time, EventClass cls, const ClusterEvent& event) override;
  static WorkMeter::Kind meter_kind(EventKind k);

 private:
  // world.cpp
  void advance_clock(Micros t);
  void set_idle(Pool& p, Replica& r, bool idle);
  void dispatch(const Payload& e);
  void on_arrival(std::uint32_t client);
  void client_done(const RequestRecord& rec);
  void route(std::uint32_t request_id);
  Replica* pick_replica(const RequestRecord& rec, PoolRole role, int& pool);
  void drain_gateway(const Pool& p);  // a replica of `p` turned Ready: what its model's gateway holds for its role goes out
  void cut_step(Pool& p, Replica& r);
  void start_step_if_idle(Pool& p, Replica& r);
  void on_step_end(Pool& p, Replica& r);
  void on_timeout(std::uint32_t request_id);
  // Disaggregated serving: the prefill is done, the decode replica allocated blocks for the KV, the
  // KV has arrived; the transfer's seconds over the two replicas' link.
  void hand_off(Pool& p, Replica& r, RequestRecord& rec, Micros at);
  void on_kv_loads(Pool& p, Replica& r, const std::vector<EngineEvent>& events);
  void on_kv_loaded(std::uint32_t request_id);
  void release_prefill_kv(RequestRecord& rec, bool abort);
  double kv_transfer_seconds(const Pool& from, const Replica& sender, const Pool& to, const Replica& receiver, int tokens) const;
  void after_abort(Pool& p, Replica& r);
  void drop(RequestRecord& rec, FailureCause cause);
  void settle();
  void log_decision(Micros t, std::string controller, const std::string& pool, std::int64_t current, std::int64_t desired,
                               std::string reason, std::string explanation);
  void log_lifecycle(const Pool& p, const Replica& r, std::string text);
  void log_termination(const Pool& p, const char* step, std::string text);
  // replicas.cpp
  void fit_engine_to_node(Pool& p, Replica& r);
  // A pod of the replica is bound: true once every member of its group is (at once without a group).
  bool member_bound(Pool& p, Replica& r, Micros container_start);
  void close_partial(Pool& p, Replica& r);
  void log_partly_placed();
  void on_node_ready(Pool& p, Replica& r, Micros container_start = -1);
  void on_load_done(Pool& p, Replica& r);
  void on_warmup_done(Pool& p, Replica& r);
  void enter_ready(Pool& p, Replica& r);
  void leave_ready(Pool& p, const Replica& r);
  // The one termination path, whoever deletes the pod (see replicas.cpp).
  void begin_termination(Pool& p, Replica& r, FailureCause cause, const std::string& by, Micros max_grace, Settle settle);
  void on_sigterm(Pool& p, Replica& r, Settle settle);
  void on_stop_deadline(Pool& p, Replica& r);
  void kill_replica(Pool& p, Replica& r, FailureCause cause, const char* step, const std::string& why, Settle settle, bool pod_gone);
  std::int64_t held(const Pool& p, const Replica& r) const;
  void evict_replica(Pool& p, Replica& r, RemovalReason reason, Micros max_grace);
  void kill_with_instance(Pool& p, Replica& r, RemovalReason reason);
  void remove_replica(Pool& p, Replica& r, const std::string& why, FailureCause cause, Settle settle = Settle::Now, bool pod_gone = false);
  void reconcile_replicas(Pool& p, Micros now, Settle settle);
  void create_ready_replica(Pool& p);
  void create_replica(Pool& p, Micros now, Settle settle);
  void delete_replica(Pool& p, Replica& r, Settle settle);
  // measure.cpp
  bool holds_gpus(const Replica& r) const;
  void on_dcgm_window_start();
  void on_scrape();
  void scrape_pool(Pool& p);
  void on_scaler_sync(Pool& p, std::size_t scaler);
  ScalerSnapshot snapshot(Pool& p);
  void on_service_sync(std::size_t service);
  ServiceSnapshot service_snapshot(ServiceRun& run);
  void note_vllm_sample(Replica& r, Micros at, double kv_usage, std::int32_t waiting);
  void note_slo_miss(const RequestRecord& rec);
  // metrics.pipeline "realistic"
  void start_metric_targets(Pool& p, Replica& r);
  void on_vllm_scrape(Pool& p, Replica& r);
  void on_dcgm_sample_start(Pool& p, Replica& r);
  void on_dcgm_collect(Pool& p, Replica& r);
  void query_metrics(Pool& p);  // p.scraped: what an instant query returns now
  // summary.cpp
  void finish();
  void summarize(Summary& sum, const std::vector<const Pool*>& pools, int only_pool) const;
  std::int64_t breach_hours(int only_pool) const;

  const Scenario& s_;
  Micros end_;
  Workload workload_;
  FixedDelayNodes fixed_nodes_;
  std::vector<Pool> pools_;
  std::vector<std::pair<int, std::uint32_t>> partly_placed_;  // groups a member of which was bound this instant (pool, replica)
  std::vector<ModelGroup> groups_;  // by the workload's model index
  std::vector<int> group_of_pool_;  // pool → its model's group
  ApproxPrefixIndex epp_index_;     // router "epp": the approximate prefix index, over every pool
  Rng epp_ties_;                    // and the max-score picker's tie-break
  std::vector<ServiceRun> services_;          // model-level autoscalers (scenario.service_groups)
  std::vector<FrontendCounters> frontend_;    // per model: its frontend's counters now
  bool keep_vllm_history_ = false;            // a WVA runs: replicas keep a minute of vLLM scrapes
  std::unique_ptr<ClusterModel> cluster_;  // null: fixed-delay nodes, no cluster model
  Micros settle_at_ = -1;  // the instant a ClusterSettle event is filed for
  Micros scrape_every_ = 0, dcgm_period_ = 0, timeout_ = 0;
  bool realistic_metrics_ = false;  // metrics.pipeline "realistic"
  PipelineTiming pipeline_;
  LogPolicy log_policy_;

  EventQueue<Payload> queue_;
  Micros now_ = 0;
  const ProgressReport* progress_ = nullptr;  // reported from the event loop (run())
  Request pending_arrival_;            // open loop: the next arrival, filed
  std::vector<std::uint32_t> client_of_;  // closed loop: request id → the client that sent it
  std::vector<EngineEvent> engine_events_;
  std::vector<EngineEvent> kv_events_;  // a decode engine's KvLoadStarted, outside end_step
  WindowedQuantile ttft_window_;  // every pool's first tokens, for the total series
  std::int64_t live_replicas_ = 0, peak_replicas_ = 0;  // over every pool
  std::int64_t num_dropped_ = 0, arrivals_since_scrape_ = 0;
  Micros ttft_spike_micros_ = 0;
  RunResult result_;
  DecisionLog log_;  // becomes result_.decisions at the end
  WorkMeter meter_;
};

}  // namespace gpuscale::sim
