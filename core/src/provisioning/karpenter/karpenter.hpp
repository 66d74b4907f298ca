// Karpenter (karpenter.sh/v1) as a node provisioner: batched provisioning from NodePools, liveness,
// expiration and the disruption controller (Emptiness → MultiNodeConsolidation → SingleNodeConsolidation)
// with budgets. real-systems.md §3 is the specification; the choices the lab makes are written next to the
// code that makes them (core/src/karpenter.cpp). The class only keeps timers and in-flight commands; every
// decision is one of the pure functions below, which read a ClusterState and return what to do and why.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cluster/cluster_state.hpp"
#include "provisioning/karpenter/nodepool.hpp"
#include "provisioning/provisioner.hpp"
#include "kernel/time.hpp"

namespace gpuscale {

struct KarpenterSettings {
  Micros batch_idle = 1 * kMicrosPerSecond;        // BATCH_IDLE_DURATION: window ends this long after the last new pod
  Micros batch_max = 10 * kMicrosPerSecond;        // BATCH_MAX_DURATION: ... or this long after the first
  Micros disruption_poll = 10 * kMicrosPerSecond;  // disruption controller pollingPeriod
  Micros registration_timeout = 15 * 60 * kMicrosPerSecond;  // liveness: a NodeClaim not registered by then is deleted
  Micros nomination_window = 20 * kMicrosPerSecond;  // a node nominated for pending pods is not disrupted (max(2 × batch_max, 10 s))
  bool spot_to_spot_consolidation = false;         // feature gate SpotToSpotConsolidation (default false)
  int min_spot_to_spot_options = 15;               // MinInstanceTypesForSpotToSpotConsolidation (single-node)
  int max_multi_node_candidates = 100;             // multi-node consolidation looks at most at this many
  Micros command_validation = 15 * kMicrosPerSecond;  // a disruption command waits this long, then is re-validated
  // An offering the cloud refused with InsufficientInstanceCapacity is left out of every NodeClaim this long
  // (aws/karpenter-provider-aws pkg/cache/cache.go UnavailableOfferingsTTL = 3 min; MarkUnavailable in
  // pkg/providers/instance/instance.go, per instance type, zone and capacity type).
  Micros unavailable_offerings_ttl = 3 * 60 * kMicrosPerSecond;
  // The wall-clock time (UTC, seconds since the Unix epoch) of simulation time 0, against which budget
  // schedules are evaluated. Default 2026-01-05T00:00:00Z, a Monday at midnight.
  std::int64_t clock_start_unix_s = 1767571200;
};

// ---- prices, capacity, limits ----------------------------------------------------------------------

// USD/h → integer micro-USD/h, rounded once, so sums and "strictly cheaper" comparisons are exact.
std::int64_t price_micro_usd(double usd_per_hour);

struct ResourceAmounts {
  std::int64_t gpus = 0;        // nvidia.com/gpu
  std::int64_t cpu_milli = 0;   // cpu, millicores
  std::int64_t memory_mib = 0;  // memory, MiB
  std::int64_t nodes = 0;       // nodes
};

// What one node of the type adds to a NodePool's usage (capacity, not allocatable, as Karpenter counts it).
ResourceAmounts type_capacity(const InstanceType& type);
// Summed capacity of the pool's nodes (owner == pool name) that are not Terminated.
ResourceAmounts pool_usage(const ClusterState& cluster, const std::string& pool);
// "" if no limit is exceeded, else which one ("nvidia.com/gpu: 72 in use > limit 64"). Exceeded means
// strictly over (a pool exactly at its limit can still launch types that add nothing of that resource).
std::string limits_exceeded(const NodePool& pool, const ResourceAmounts& used);
// Would adding `add` keep every limit (used + add <= limit)?
bool within_limits(const NodePool& pool, const ResourceAmounts& used, const ResourceAmounts& add);

// One launchable (instance type, capacity type, zone) that a NodePool's requirements allow.
struct Offering {
  int type_index = 0;                // into the catalogue
  CapacityType capacity_type = CapacityType::OnDemand;
  std::string zone;
  std::int64_t price_micro_usd = 0;  // per hour
  // Well-known labels + the pool's labels, as the node will have them; shared, because offerings are
  // copied into every simulated NodeClaim.
  std::shared_ptr<const Labels> labels;
};

// The labels a NodeClaim of this pool carries besides the well-known ones: spec.template.metadata.labels,
// karpenter.sh/nodepool, and In requirements on keys that are not well-known (their first value).
Labels pool_node_labels(const NodePool& pool, const Labels& well_known);
// Every offering of the catalogue the pool's requirements allow, cheapest first (ties: spot before
// on-demand, then catalogue order, then the type's zone order).
std::vector<Offering> pool_offerings(const NodePool& pool, const std::vector<InstanceType>& types);
// Every pool's offerings, computed once per run (the catalogue and the pools do not change) and handed
// to the functions below; nullptr makes them compute their own.
using PoolOfferings = std::vector<std::vector<Offering>>;
PoolOfferings all_pool_offerings(const std::vector<NodePool>& pools, const std::vector<InstanceType>& types);
// Indices of `pools` in the order Karpenter tries them: weight descending, then name.
std::vector<int> pool_order(const std::vector<NodePool>& pools);

// ---- the scheduling simulation (shared by provisioning and consolidation) --------------------------

// An existing node as the simulation sees it: the room it has (or will have, if in flight).
struct SimNode {
  std::uint32_t id = 0;
  bool initialized = false;
  int gpus_free = 0;
  std::int64_t cpu_free_milli = 0, memory_free_mib = 0;
  std::vector<Taint> taints;  // startup / not-ready taints removed for in-flight nodes
  // Its labels: the node's own, then its type's well-known ones, then its NodePool's name (the first of
  // a key wins), merged only when a pod that fits its room asks about them: most passes never do.
  const Labels* own = nullptr;                // the cluster's node's (valid for the pass)
  std::shared_ptr<const Labels> well_known;   // shared by the nodes of one type, capacity type and zone
  const std::string* pool = nullptr;          // its NodePool's name, if it has one
  const Labels& labels() const;

 private:
  mutable std::shared_ptr<const Labels> merged_;
};

// A NodeClaim the simulation would create: the pods packed onto it and the offerings that still fit them all.
struct SimClaim {
  int pool = 0;                   // index into the pools vector
  std::vector<Offering> options;  // cheapest first
  std::vector<std::uint32_t> pods;
  int gpus = 0;                   // summed requests of `pods`
  std::int64_t cpu_milli = 0, memory_mib = 0;
  std::string pools_tried;        // for the first pod: each pool in weight order and why it was or was not used
};

struct SimResult {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> on_existing;  // (pod, node)
  std::vector<SimClaim> claims;
  std::vector<std::pair<std::uint32_t, std::string>> unplaced;      // (pod, why, per pool)
};

// Nodes pods could go to: Launched, Registered or Initialized, not disrupted, not in `exclude`.
// Initialized nodes come first (ready capacity before in-flight), then by id.
std::vector<SimNode> simulation_nodes(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                      const std::set<std::uint32_t>& exclude);
// Places `pods` (first-fit decreasing: GPUs, then CPU, then memory, descending; ties by pod id): first on
// `nodes` in their order, then on claims already opened by this simulation (a claim takes a pod while some
// offering still fits all its pods), then on a new claim from the first pool, in weight order, that can take it.
SimResult simulate_scheduling(const ClusterState& cluster, const std::vector<NodePool>& pools, std::vector<SimNode> nodes,
                              std::vector<std::uint32_t> pods, const PoolOfferings* offerings = nullptr);

// ---- provisioning ------------------------------------------------------------------------------------

struct ProvisioningPlan {
  std::vector<NodeLaunch> launches;
  std::vector<std::vector<std::uint32_t>> launch_pods;            // the pods each launch is for
  std::vector<std::pair<std::uint32_t, std::uint32_t>> on_existing;  // (pod, node): no launch needed
  std::vector<std::uint32_t> unplaced;                              // fit no pool: stay pending
  std::vector<ProvisionerLog> log;
};

// Pods Karpenter would provision for now: Pending and marked Unschedulable.
std::vector<std::uint32_t> provisionable_pods(const ClusterState& cluster);
// The batch decision at the window's end: `pods` ∪ provisionable_pods() simulated against existing and
// in-flight nodes (minus `exclude`, nodes marked for deletion), then new NodeClaims.
ProvisioningPlan plan_provisioning(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                   const std::vector<std::uint32_t>& pods, const std::set<std::uint32_t>& exclude,
                                   Micros window_start, Micros now, const PoolOfferings* offerings = nullptr);

// ---- disruption --------------------------------------------------------------------------------------

// allowed = roundup(pct × total) for "P%", or the number for "N", minus `disrupting`, never below 0.
// Docs example: 19 nodes at "20%" → 4. A malformed value allows nothing.
std::int64_t allowed_disruptions(const std::string& nodes, std::int64_t total, std::int64_t disrupting);
// The minimum across the pool's active budgets whose reasons include `reason` (no reasons: all), minus
// `disrupting`; unlimited (INT32_MAX) if no budget applies. A budget with a `schedule` is active for
// `duration` after each time its schedule fires (Budget.IsActive), at `now_unix_us` (µs since the epoch, UTC).
std::int64_t pool_allowed_disruptions(const NodePool& pool, DisruptionReason reason, std::int64_t total,
                                      std::int64_t disrupting, std::int64_t now_unix_us);
bool budget_active(const DisruptionBudget& budget, std::int64_t now_unix_us);
struct BudgetCount {
  std::int64_t total = 0;       // the pool's initialized nodes not yet terminated (draining ones included)
  std::int64_t disrupting = 0;  // of those: Terminating, disrupted, or in `marked`
  std::int64_t allowed = 0;
};
BudgetCount pool_budget(const ClusterState& cluster, const NodePool& pool, DisruptionReason reason,
                        const std::set<std::uint32_t>& marked, std::int64_t now_unix_us);

// When the node's Consolidatable condition turns True: (last pod event, else initialized_at) + consolidateAfter;
// -1 if never (consolidateAfter: Never, or not initialized).
Micros consolidatable_at(const Node& node, const NodePool& pool);

// EvictionCost (kubernetes-sigs/karpenter pkg/utils/disruption/disruption.go) in units of 2^-25, so it is an
// integer: clamp(1 + priority / 2^25, −10, 10) × 2^25. pod-deletion-cost (/ 2^27) is not modelled.
constexpr std::int64_t kEvictionCostUnit = std::int64_t(1) << 25;
std::int64_t eviction_cost_units(const PodTemplate& t);

struct Candidate {
  std::uint32_t node = 0;
  int pool = 0;                      // index into the pools vector
  std::vector<std::uint32_t> pods;   // Bound pods that would be rescheduled (not terminating)
  // RescheduleDisruptionCost (pkg/controllers/disruption/types.go), in kEvictionCostUnit: the per-node
  // base 1 + Σ max(0, EvictionCost) over the reschedulable pods.
  std::int64_t reschedule_cost = kEvictionCostUnit;
  std::int64_t price_micro_usd = 0;  // per hour
  // SavingsRatio = Price / RescheduleDisruptionCost (µUSD/h per unit of disruption; higher goes first).
  double savings_ratio() const { return static_cast<double>(price_micro_usd) * static_cast<double>(kEvictionCostUnit) / static_cast<double>(reschedule_cost); }
  // IsEmpty: no pod adds a positive eviction cost (DaemonSet-like or clamped-to-zero pods only).
  bool empty() const { return reschedule_cost <= kEvictionCostUnit; }
};
// The v1.14 candidate order (consolidation.go sortCandidates), used by Emptiness, MultiNodeConsolidation
// and SingleNodeConsolidation for every policy: savings ratio descending; ties (Go's sort.Slice leaves
// them unspecified) by node id.
std::vector<Candidate> sort_candidates(std::vector<Candidate> v);
struct CandidateScan {
  std::vector<Candidate> candidates;  // node id order
  std::vector<std::string> skipped;   // "node 4: do-not-disrupt pod 7", ...
};
// Consolidatable nodes of the pools: Initialized, not disrupted, not marked, not nominated, consolidateAfter
// elapsed, no do-not-disrupt pod or node annotation.
CandidateScan disruption_candidates(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                    const std::set<std::uint32_t>& marked, const std::map<std::uint32_t, Micros>& nominated_until,
                                    Micros now);

// What a disruption command does to its nodes.
enum class DisruptionAction : std::uint8_t { None, Delete, Replace };
inline constexpr Named<DisruptionAction> kDisruptionActions[] = {
    {"none", DisruptionAction::None}, {"delete", DisruptionAction::Delete}, {"replace", DisruptionAction::Replace}};
inline const char* to_string(DisruptionAction a) { return name_of(a, kDisruptionActions); }

// The disruption methods, in the order a pass tries them.
enum class DisruptionMethod : std::uint8_t { None, Emptiness, MultiNodeConsolidation, SingleNodeConsolidation };
inline constexpr Named<DisruptionMethod> kDisruptionMethods[] = {{"", DisruptionMethod::None},
                                                                {"Emptiness", DisruptionMethod::Emptiness},
                                                                {"MultiNodeConsolidation", DisruptionMethod::MultiNodeConsolidation},
                                                                {"SingleNodeConsolidation", DisruptionMethod::SingleNodeConsolidation}};
inline const char* to_string(DisruptionMethod m) { return name_of(m, kDisruptionMethods); }

struct ConsolidationOption {
  DisruptionAction action = DisruptionAction::None;
  std::vector<std::uint32_t> nodes;    // the candidates it removes
  std::optional<NodeLaunch> replacement;
  std::int64_t candidates_price = 0;   // µUSD/h, summed over the candidates
  std::int64_t replacement_price = 0;  // µUSD/h
  std::string why;
};
// One consolidation command for these candidates: a scheduling simulation of their pods (plus pending pods
// and pods of deleting nodes) onto the other nodes plus at most one new NodeClaim. `multi_node` applies
// filterOutSameType; the spot-to-spot option count applies to single-node commands only.
ConsolidationOption compute_consolidation(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                          const std::vector<Candidate>& candidates, const std::set<std::uint32_t>& marked,
                                          const KarpenterSettings& settings, bool multi_node,
                                          const PoolOfferings* offerings = nullptr);

// compute_consolidation, then, for a pool with consolidationPolicy Balanced, the move's score: a move the
// score rejects is no action.
ConsolidationOption scored_consolidation(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                         const std::vector<Candidate>& candidates, const std::set<std::uint32_t>& marked,
                                         const KarpenterSettings& settings, bool multi_node, const PoolOfferings* offerings);

struct DisruptionDecision {
  DisruptionMethod method = DisruptionMethod::None;
  DisruptionAction action = DisruptionAction::None;
  DisruptionReason reason = DisruptionReason::Empty;  // the budget reason
  std::vector<std::uint32_t> nodes;   // removed (delete) or replaced once the replacement is Initialized
  std::optional<NodeLaunch> replacement;
  bool had_candidates = false;        // something was a candidate or was skipped for a reason worth logging
  ProvisionerLog log;
};
// Why a command decided earlier is no longer valid now, or "" if it still is (validation.go): a
// consolidation's nodes must all still be candidates, nominated for nothing, within their pools' budgets,
// and its re-simulated scheduling must give the same action (and, for a replace, the same instance type
// and capacity type). An Emptiness command keeps the nodes that are still empty candidates within the
// budgets (EmptinessValidator): `d.nodes` shrinks to them, `dropped` says why the others left; it is
// invalid only when none is left.
std::string command_invalidation(DisruptionDecision& d, const ClusterState& cluster, const std::vector<NodePool>& pools,
                                 const KarpenterSettings& settings, const std::set<std::uint32_t>& marked,
                                 const std::map<std::uint32_t, Micros>& nominated_until, Micros now,
                                 const PoolOfferings* offerings = nullptr, std::vector<std::string>* dropped = nullptr);
// One disruption pass: the first method, in Karpenter's order, that finds an action.
DisruptionDecision decide_disruption(const ClusterState& cluster, const std::vector<NodePool>& pools,
                                     const KarpenterSettings& settings, const std::set<std::uint32_t>& marked,
                                     const std::map<std::uint32_t, Micros>& nominated_until, Micros now,
                                     const PoolOfferings* offerings = nullptr);

// ---- the controller ----------------------------------------------------------------------------------

class Karpenter : public NodeProvisioner {
 public:
  Karpenter(std::vector<NodePool> pools, KarpenterSettings settings = {});

  const char* name() const override { return "karpenter"; }
  void on_unschedulable(const ClusterState& cluster, std::uint32_t pod, Micros now) override;
  Micros next_wakeup() const override;
  void wake(const ClusterState& cluster, Micros now, ProvisionerActions& out) override;
  // The cloud refused offerings of a launch: each is unavailable for settings().unavailable_offerings_ttl;
  // a consolidation replacement that got no node abandons its command at the next wake.
  void on_insufficient_capacity(const LaunchOutcome& outcome, Micros now) override;
  // The unavailable-offerings cache: (type index, capacity type, zone) → until when (µs).
  const std::map<std::tuple<int, CapacityType, std::string>, Micros>& unavailable_offerings() const { return unavailable_; }

  // The NodePools in the order they are tried: weight descending, then name.
  const std::vector<NodePool>& pools() const { return pools_; }
  const KarpenterSettings& settings() const { return settings_; }
  // The open batch window: -1 when none is open.
  Micros batch_start() const { return batch_start_; }
  Micros batch_end() const;
  const std::vector<std::uint32_t>& batch_pods() const { return batch_pods_; }
  // Nodes this controller has asked to remove or is replacing (they count as disrupting).
  std::set<std::uint32_t> marked_nodes() const;
  std::size_t replacements_in_flight() const { return replacements_.size(); }

 private:
  // A consolidation replace waiting for its replacement to become Initialized.
  struct PendingReplacement {
    std::vector<std::uint32_t> old_nodes;
    NodeLaunch launch;
    std::size_t nodes_before = 0;  // cluster.nodes.size() when decided: the replacement's id is at least this
    Micros decided_at = 0;
    std::int32_t node = -1;        // the replacement once recognised
    bool refused = false;          // the cloud granted none of its offerings (InsufficientInstanceCapacity)
  };

  void provision(const ClusterState& cluster, Micros now, ProvisionerActions& out);
  void forceful(const ClusterState& cluster, Micros now, ProvisionerActions& out);
  void progress_replacements(const ClusterState& cluster, Micros now, ProvisionerActions& out);
  void disrupt(const ClusterState& cluster, Micros now, ProvisionerActions& out);
  void execute(DisruptionDecision d, const ClusterState& cluster, Micros now, ProvisionerActions& out);
  bool owns(const Node& node) const;
  // A command decided by a disruption pass, waiting for its validation (settings_.command_validation).
  std::optional<DisruptionDecision> pending_;
  Micros pending_until_ = -1;

  std::vector<NodePool> pools_;
  PoolOfferings offerings_;         // computed at the first wake (the catalogue lives in the ClusterState)
  // "Consolidated": the last pass found nothing and the cluster has not changed since (nor 5 min passed).
  bool consolidated_ = false;
  std::uint64_t consolidated_state_ = 0;
  Micros consolidated_at_ = 0;
  std::uint64_t disruption_state(const ClusterState& cluster, Micros now) const;
  const PoolOfferings& offerings(const ClusterState& cluster);
  // offerings() without those in the unavailable-offerings cache at `now` (expired entries dropped).
  const PoolOfferings& available_offerings(const ClusterState& cluster, Micros now);
  std::map<std::tuple<int, CapacityType, std::string>, Micros> unavailable_;
  PoolOfferings available_;
  bool available_stale_ = true;
  KarpenterSettings settings_;
  Micros batch_start_ = -1;
  Micros batch_last_ = -1;
  std::vector<std::uint32_t> batch_pods_;
  Micros next_poll_ = -1;
  Micros next_deadline_ = -1;  // earliest registration timeout or expiry seen at the last wake
  std::set<std::uint32_t> removed_;
  std::map<std::uint32_t, Micros> nominated_until_;
  std::vector<PendingReplacement> replacements_;
  std::string last_none_;  // the last "no action" explanation, so identical passes are logged once
};

}  // namespace gpuscale
