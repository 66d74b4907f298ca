// The lab's GPU-pool lint of a NodePool: advice, not errors, each with the field path it is about
// (real-systems.md §3.3, §3.4; docs/nodepool.md lists every rule).
#include <algorithm>

#include "cluster/instance_types.hpp"
#include "k8s/duration.hpp"
#include "k8s/names.hpp"
#include "provisioning/karpenter/nodepool.hpp"

namespace gpuscale {

namespace {

constexpr Micros kHour = 3600 * kMicrosPerSecond;

}  // namespace

bool selects_gpu_instances(const std::vector<Requirement>& requirements) {
  auto gpu_family = [](const std::string& family) {
    for (const auto& t : default_instance_types())
      if (t.family == family) return t.gpus > 0;
    // p2…p6 and g3…g6e/gr6 are the EC2 GPU families.
    auto digit_at = [&](std::size_t i) { return family.size() > i && is_digit(family[i]); };
    return (family[0] == 'p' && digit_at(1)) || (family[0] == 'g' && digit_at(1)) ||
           (starts_with(family, "gr") && digit_at(2));
  };
  auto gpu_type = [&](const std::string& name) {
    if (const InstanceType* t = find_instance_type(default_instance_types(), name)) return t->gpus > 0;
    auto dot = name.find('.');
    return dot != std::string::npos && dot > 0 && gpu_family(name.substr(0, dot));
  };
  auto any_value = [](const Requirement& r, auto pred) { return std::any_of(r.values.begin(), r.values.end(), pred); };
  for (const Requirement& r : requirements) {
    const bool positive = r.op == SelectorOp::In || r.op == SelectorOp::Exists || r.op == SelectorOp::Gt || r.op == SelectorOp::Gte;
    if (!positive) continue;
    if (r.key == "karpenter.k8s.aws/instance-gpu-count") {
      if (r.op == SelectorOp::Exists || r.op == SelectorOp::Gt) return true;
      if (r.op == SelectorOp::Gte && !r.values.empty() && r.values[0] != "0") return true;
      if (r.op == SelectorOp::In && any_value(r, [](const std::string& v) {
            return !v.empty() && std::all_of(v.begin(), v.end(), is_digit) && v.find_first_not_of('0') != std::string::npos;
          }))
        return true;
    } else if (r.key == "karpenter.k8s.aws/instance-gpu-name" || r.key == "karpenter.k8s.aws/instance-gpu-manufacturer" ||
               r.key == "karpenter.k8s.aws/instance-gpu-memory") {
      return true;
    } else if (r.key == "karpenter.k8s.aws/instance-family" && r.op == SelectorOp::In) {
      if (any_value(r, [&](const std::string& v) { return !v.empty() && gpu_family(v); })) return true;
    } else if (r.key == "karpenter.k8s.aws/instance-category" && r.op == SelectorOp::In) {
      if (any_value(r, [](const std::string& v) { return v == "p" || v == "g"; })) return true;
    } else if (r.key == "node.kubernetes.io/instance-type" && r.op == SelectorOp::In) {
      if (any_value(r, gpu_type)) return true;
    }
  }
  return false;
}

std::vector<NodePoolWarning> lint_nodepool(const NodePool& pool, const Json& doc) {
  (void)doc;  // every rule reads the parsed pool; the document is kept for rules that need the raw text
  std::vector<NodePoolWarning> out;
  const bool gpu = selects_gpu_instances(pool.requirements);
  const bool consolidates_underutilized =
      pool.consolidate_after.has_value() && pool.consolidation_policy != ConsolidationPolicy::WhenEmpty;
  const std::string tps = "/spec/template/spec";

  // nodeclaim_validation.go validateWellKnownValues: invalid values beside valid ones are logged and
  // ignored ("please correct found invalid values, proceeding with valid values"); only-invalid is a
  // parse error (parse_requirement).
  for (std::size_t i = 0; i < pool.requirements.size(); ++i) {
    const Requirement& r = pool.requirements[i];
    const std::vector<std::string>* known = well_known_values(r.key);
    if (!known || r.op != SelectorOp::In) continue;
    for (std::size_t k = 0; k < r.values.size(); ++k) {
      if (std::find(known->begin(), known->end(), r.values[k]) != known->end()) continue;
      std::string allowed;
      for (std::size_t j = 0; j < known->size(); ++j) allowed += (j ? ", " : "") + (*known)[j];
      out.push_back({tps + "/requirements/" + std::to_string(i) + "/values/" + std::to_string(k), "unknown-requirement-value",
                     "\"" + r.values[k] + "\" is not a value of " + r.key + " (allowed: " + allowed +
                         "); Karpenter logs an error and proceeds with the valid values only"});
    }
  }

  if (gpu && consolidates_underutilized) {
    const bool balanced = pool.consolidation_policy == ConsolidationPolicy::Balanced;
    out.push_back({"/spec/disruption/consolidationPolicy", "consolidation-evicts-replicas",
                   "consolidationPolicy " + std::string(to_string(pool.consolidation_policy)) + " on a GPU pool lets Karpenter delete or replace a "
                   "node that still runs inference replicas whenever their pods fit elsewhere or on a cheaper node" +
                       std::string(balanced ? " (Balanced only when the savings outweigh the disruption score, but it still evicts)" : "") +
                       ". Every evicted replica is a full restart: image pull, weight load and warm-up (minutes for a 70B "
                       "model) during which it serves nothing while its queue moves to the others. Use WhenEmpty for GPU "
                       "pools that serve live traffic."});
  }
  if (gpu && pool.consolidate_after && *pool.consolidate_after == 0) {
    out.push_back({"/spec/disruption/consolidateAfter", "consolidate-after-zero",
                   "consolidateAfter 0s: a GPU node is deleted the moment its last replica leaves. A scale-down followed by "
                   "a scale-up minutes later then pays a new node launch (several minutes until the GPUs register) plus a "
                   "model load, instead of reusing the warm node. Give it a window longer than a typical traffic dip, "
                   "e.g. 10m-30m."});
  }
  if (gpu && !pool.consolidate_after) {
    out.push_back({"/spec/disruption/consolidateAfter", "consolidate-after-never",
                   "consolidateAfter Never disables consolidation entirely, including the deletion of empty nodes: once "
                   "the HPA scales down, the idle GPU nodes stay up (and billed) until expireAfter or manual deletion. "
                   "Use WhenEmpty with a finite consolidateAfter to keep replicas safe and still release idle GPUs."});
  }
  if (gpu) {
    bool blocking = std::any_of(pool.taints.begin(), pool.taints.end(),
                                [](const Taint& t) { return t.effect != TaintEffect::PreferNoSchedule; });
    if (!blocking) {
      out.push_back({tps + "/taints", "no-gpu-taint",
                     "no NoSchedule taint on a GPU pool: pods that need no GPU (web tiers, batch jobs, controllers) can be "
                     "scheduled onto these nodes. They pay nothing for the GPUs but keep a node non-empty, so WhenEmpty "
                     "consolidation never removes it and the GPUs are billed idle. Add e.g. {key: nvidia.com/gpu, value: "
                     "\"true\", effect: NoSchedule}; GPU pods tolerate it (the ExtendedResourceToleration admission plugin "
                     "adds the toleration to pods that request nvidia.com/gpu)."});
    }
  }
  if (gpu) {
    // Without a capacity-type requirement the AWS provider defaults the pool to on-demand.
    std::optional<std::size_t> first;
    bool spot = true;
    for (std::size_t i = 0; i < pool.requirements.size(); ++i) {
      const Requirement& r = pool.requirements[i];
      if (r.key != "karpenter.sh/capacity-type") continue;
      if (!first) first = i;
      const bool listed = std::find(r.values.begin(), r.values.end(), "spot") != r.values.end();
      if ((r.op == SelectorOp::In && !listed) || (r.op == SelectorOp::NotIn && listed) || r.op == SelectorOp::DoesNotExist) spot = false;
    }
    // A template label pins the capacity type of every node (Karpenter treats labels as In requirements).
    auto label = pool.template_labels.find("karpenter.sh/capacity-type");
    if (label != pool.template_labels.end()) spot = spot && label->second == "spot";
    const bool has_constraint = first.has_value() || label != pool.template_labels.end();
    if (has_constraint && spot) {
      std::string path = first ? tps + "/requirements/" + std::to_string(*first)
                               : "/spec/template/metadata/labels/karpenter.sh~1capacity-type";
      out.push_back({path, "spot-for-latency-slo",
                     "spot capacity is allowed on a GPU pool. A spot interruption gives a 2-minute notice, less than "
                     "launching a replacement node and loading the model, so every interruption removes serving "
                     "capacity for several minutes and requests queue up: TTFT breaks the latency SLO. Keep spot for "
                     "batch or overflow pools; serve the SLO from on-demand (or reserved) capacity."});
    }
  }
  if (!pool.limit_gpus && !pool.limit_cpu_milli && !pool.limit_memory_mib && !pool.limit_nodes) {
    out.push_back({"/spec/limits", "no-limits",
                   std::string("no limits: nothing caps how many nodes this pool launches. A runaway HPA (a metric stuck "
                               "high, a retry storm) or pods that never schedule turn into one node per batch") +
                       (gpu ? ", at tens of dollars per hour per 8-GPU node. Set nvidia.com/gpu (and nodes) to what the "
                              "budget allows."
                            : ". Set cpu/memory or nodes limits.")});
  }
  auto blocked = [&](const char* name) {
    out.push_back({"/spec/limits/" + pointer_token(name), "limit-blocks-launches",
                   std::string("limits.") + name + " is 0 or less: Karpenter refuses every launch from this pool, so its "
                   "pods stay Pending."});
  };
  if (pool.limit_gpus && *pool.limit_gpus <= 0 && gpu) blocked("nvidia.com/gpu");
  if (pool.limit_nodes && *pool.limit_nodes <= 0) blocked("nodes");
  if (gpu && pool.expire_after && *pool.expire_after < 24 * kHour) {
    out.push_back({tps + "/expireAfter", "expire-after-short",
                   "expireAfter " + format_duration(*pool.expire_after) + " on a GPU pool: every node is drained when it "
                   "reaches that age. Expiration is forceful: it ignores disruption budgets and does not launch a "
                   "replacement first, so each expiry takes replicas offline for a node launch plus a model load. Use "
                   "720h (the default) or more, and roll AMIs through drift, which budgets do limit."});
  }
  {
    // The reasons whose disruptions evict running replicas: Drifted always, Underutilized when the policy
    // consolidates non-empty nodes. (Empty nodes run no replicas; budgets never cover expiration.)
    std::vector<DisruptionReason> reasons = {DisruptionReason::Drifted};
    if (consolidates_underutilized) reasons.insert(reasons.begin(), DisruptionReason::Underutilized);
    std::vector<std::string> unbounded;
    for (DisruptionReason reason : reasons) {
      bool bounded = false;
      for (const DisruptionBudget& b : pool.budgets) {
        if (!b.schedule.empty()) continue;  // only active during its window
        if (!b.reasons.empty() && std::find(b.reasons.begin(), b.reasons.end(), reason) == b.reasons.end()) continue;
        if (b.nodes != "100%") bounded = true;
      }
      if (!bounded) unbounded.push_back(to_string(reason));
    }
    if (!unbounded.empty()) {
      std::string list;
      for (const auto& r : unbounded) list += (list.empty() ? "" : " and ") + r;
      out.push_back({"/spec/disruption/budgets", "budget-allows-all",
                     "the budgets let " + list + " disruptions take 100% of this pool's nodes at once (no always-active "
                     "budget below 100% covers them). One AMI drift or consolidation pass can drain every node together "
                     "and every replica reloads at the same time. Keep an always-active budget such as {nodes: \"10%\"} "
                     "or {nodes: \"1\"}."});
    }
  }
  return out;
}

Json check_nodepool_document(const Json& doc) {
  NodePool pool = parse_nodepool(doc, "");
  Json normalised = nodepool_to_json(pool);
  // The NodePool object's own labels and annotations are passed through (validated by parse_nodepool).
  const Json& md = doc.at("metadata");
  for (const char* k : {"labels", "annotations"}) {
    if (md.contains(k) && !md.at(k).is_null()) normalised["metadata"][k] = md.at(k);
  }
  Json warnings = Json::array();
  for (const NodePoolWarning& w : lint_nodepool(pool, doc)) {
    warnings.push_back({{"path", w.path}, {"code", w.code}, {"message", w.message}});
  }
  return Json{{"valid", true}, {"nodepool", normalised}, {"warnings", warnings}};
}

}  // namespace gpuscale
