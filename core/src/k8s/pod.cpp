// Pod templates (see pod.hpp).
#include "k8s/pod.hpp"

#include <utility>

#include "k8s/names.hpp"
#include "k8s/quantity.hpp"

namespace gpuscale {

namespace {
constexpr std::int64_t kMaxGracePeriodS = 8 * 24 * 3600;  // a week and a day, the longest run
}  // namespace

int well_known_priority(const std::string& class_name) {
  // kubernetes/kubernetes pkg/apis/scheduling (SystemCriticalPriority); KAI Scheduler
  // pkg/scheduler/constants/priorities.go and docs/priority/README.md.
  static const std::pair<const char*, int> kClasses[] = {{"system-node-critical", 2000001000},
                                                         {"system-cluster-critical", 2000000000},
                                                         {"train", 50},
                                                         {"build-preemptible", 75},
                                                         {"build", 100},
                                                         {"inference", 125}};
  for (const auto& [name, value] : kClasses) {
    if (class_name == name) return value;
  }
  return -1;
}

PodTemplate parse_pod_template(const Json& doc, const std::string& path, PodTemplate t) {
  ObjectReader r(doc, path);
  // Requests are non-negative (ValidateNonnegativeQuantity, kubernetes pkg/apis/core/validation).
  const auto request = [&](const char* key, std::int64_t milli) {
    if (milli < 0) throw InputError(path + "/" + key, "is negative; a pod requests 0 or more");
    return milli;
  };
  if (const Json* v = r.raw("cpu")) t.cpu_milli = request("cpu", quantity_milli(*v, path + "/cpu"));
  if (const Json* v = r.raw("memory")) {
    request("memory", quantity_milli(*v, path + "/memory"));  // "-1" is negative too, though 0 MiB
    t.memory_mib = quantity_mib(*v, path + "/memory");
  }
  t.gpus = static_cast<int>(r.get_int("gpus", t.gpus, 0, 64));
  if (const Json* v = r.raw("tolerations")) t.tolerations = parse_tolerations(*v, path + "/tolerations");
  if (const Json* v = r.raw("nodeSelector")) {
    const Json& sel = expect_object(*v, path + "/nodeSelector");
    t.node_selector.clear();
    for (auto it = sel.begin(); it != sel.end(); ++it) {
      if (!it.value().is_string()) throw InputError(path + "/nodeSelector/" + pointer_token(it.key()), "expected a string");
      t.node_selector[it.key()] = it.value().get<std::string>();
    }
  }
  if (const Json* v = r.raw("affinity")) {
    const std::string a = path + "/affinity";
    ObjectReader ar(*v, a);
    if (const Json* na = ar.raw("nodeAffinity")) {
      ObjectReader nr(*na, a + "/nodeAffinity");
      const std::string key = "requiredDuringSchedulingIgnoredDuringExecution";
      if (const Json* req = nr.raw(key)) {
        ObjectReader rr(*req, a + "/nodeAffinity/" + key);
        if (const Json* terms = rr.raw("nodeSelectorTerms")) {
          const std::string tp = a + "/nodeAffinity/" + key + "/nodeSelectorTerms";
          expect_array(*terms, tp, 1);  // the lab models one term (terms are ORed in Kubernetes)
          if (!terms->empty()) {
            ObjectReader tr((*terms)[0], tp + "/0");
            if (const Json* m = tr.raw("matchExpressions")) t.required_affinity = parse_requirements(*m, tp + "/0/matchExpressions");
            tr.finish();
          }
        }
        rr.finish();
      }
      nr.finish();
    }
    ar.finish();
  }
  if (const Json* v = r.raw("labels")) {
    for (auto& [key, value] : parse_labels(*v, path + "/labels")) t.labels[key] = value;
  }
  if (const Json* v = r.raw("annotations")) {
    const Json& ann = expect_object(*v, path + "/annotations");
    for (auto it = ann.begin(); it != ann.end(); ++it) {
      const std::string p = path + "/annotations/" + pointer_token(it.key());
      if (it.key() == "karpenter.sh/do-not-disrupt") {
        if (!it.value().is_string()) throw InputError(p, "expected \"true\" or a duration string");
        t.do_not_disrupt = it.value().get<std::string>() != "false";
      } else if (it.key() == "pod-group-name") {
        t.pod_group = expect_string(it.value(), p, 253);
        if (!is_dns1123_subdomain(t.pod_group)) throw InputError(p, shown(t.pod_group) + " is not a valid PodGroup name (a DNS-1123 subdomain)");
      }
    }
  }
  if (const Json* v = r.raw("schedulerName")) {
    t.scheduler_name = expect_string(*v, path + "/schedulerName", 253);
    if (!is_dns1123_subdomain(t.scheduler_name)) {
      throw InputError(path + "/schedulerName", shown(t.scheduler_name) + " is not a valid scheduler name (a DNS-1123 subdomain)");
    }
  }
  if (const Json* v = r.raw("priorityClassName")) {
    t.priority_class_name = expect_string(*v, path + "/priorityClassName", 253);
    const int known = well_known_priority(t.priority_class_name);
    if (!r.has("priority")) {
      // The Priority admission plugin resolves the class to its value; the lab knows the well-known ones.
      if (known < 0) {
        throw InputError(path + "/priorityClassName",
                         shown(t.priority_class_name) + " is not a well-known PriorityClass (system-node-critical, "
                         "system-cluster-critical, train, build-preemptible, build, inference); give its value in \"priority\" too");
      }
      t.priority = known;
    }
  }
  t.priority = static_cast<int>(r.get_int("priority", t.priority, -1000000000, 1000000000));  // user PriorityClasses: at most 1e9
  // Non-negative (ValidatePodSpec); the lab bounds it by its longest run.
  t.termination_grace_period_s = r.get_int("terminationGracePeriodSeconds", t.termination_grace_period_s, 0, kMaxGracePeriodS);
  std::string sleep_path;
  if (const Json* v = r.raw("lifecycle")) {
    ObjectReader lr(*v, path + "/lifecycle");
    if (const Json* pre = lr.raw("preStop")) {
      const std::string pp = path + "/lifecycle/preStop";
      ObjectReader pr(*pre, pp);
      if (pr.has("exec") || pr.has("httpGet")) {
        throw InputError(pp, "the lab models the sleep action of a preStop hook only (what a `sleep N` exec hook does): write {\"sleep\": {\"seconds\": N}}");
      }
      const Json* sleep = pr.raw("sleep");
      if (!sleep) throw InputError(pp, "expected {\"sleep\": {\"seconds\": N}} (the lab models the sleep action)");
      ObjectReader sr(*sleep, pp + "/sleep");
      sleep_path = pp + "/sleep/seconds";
      if (!sr.has("seconds")) throw InputError(sleep_path, "is required: how long the hook sleeps before SIGTERM");
      t.prestop_sleep_s = sr.get_int("seconds", 0, 0, kMaxGracePeriodS);
      sr.finish();
      pr.finish();
    }
    lr.finish();
  }
  // kubernetes pkg/apis/core/validation/validation.go validateSleepAction: 0 <= seconds <=
  // terminationGracePeriodSeconds (0 allowed since PodLifecycleSleepActionAllowZero).
  if (t.prestop_sleep_s > t.termination_grace_period_s) {
    throw InputError(sleep_path.empty() ? path + "/terminationGracePeriodSeconds" : sleep_path,
                     "the preStop sleep (" + std::to_string(t.prestop_sleep_s) + " s) is longer than terminationGracePeriodSeconds (" +
                         std::to_string(t.termination_grace_period_s) + " s); Kubernetes refuses a sleep past the grace period");
  }
  r.finish();
  return t;
}

}  // namespace gpuscale
