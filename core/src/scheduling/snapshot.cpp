// Reading a cluster snapshot (see snapshot.hpp; the format is docs/schedule.md).
#include "scheduling/snapshot.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "k8s/duration.hpp"
#include "k8s/names.hpp"
#include "k8s/quantity.hpp"

namespace gpuscale {

namespace {

constexpr double kMegabytes = 1000.0 * 1000.0;  // a Queue's memory unit (proportion.go: "mebibytes = 1000 * 1000")

// A Kubernetes object name (metadata.name): a DNS-1123 subdomain.
// A snapshot is not an API server: names may also carry '_' and capitals, as KAI's own test fixtures'
// do ("pending_job0"), but nothing else a name could not.
std::string object_name(const Json& v, const std::string& path, const char* what) {
  const std::string name = expect_string(v, path, 253);
  bool ok = !name.empty() && std::isalnum(static_cast<unsigned char>(name.front())) && std::isalnum(static_cast<unsigned char>(name.back()));
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_');
  if (!ok)
    throw InputError(path, shown(name) + " is not a valid " + what + " name: letters, digits, '-', '.' and '_', starting and ending with a letter or digit");
  return name;
}

// Queues and PodGroups are written either as the object ({"apiVersion", "kind", "metadata": {"name"},
// "spec": {...}}) or flat ({"name", ...the spec's fields}). Returns the name and the reader of the spec.
struct Named_object {
  std::string name;
  const Json* spec = nullptr;  // the spec object (or the flat object itself)
  std::string spec_path;
  std::string namespace_ = "default";
};

// `with_tasks`: a PodGroup, whose pods sit beside its spec.
Named_object read_object(const Json& doc, const std::string& path, const char* api_version, const char* kind, const char* what,
                         bool with_tasks = false) {
  expect_object(doc, path);
  Named_object out;
  if (doc.contains("metadata") || doc.contains("spec")) {
    ObjectReader r(doc, path);
    if (with_tasks) {
      r.only_keys({"apiVersion", "kind", "metadata", "spec", "tasks"});
      r.raw("tasks");
    } else {
      r.only_keys({"apiVersion", "kind", "metadata", "spec"});
    }
    if (const Json* v = r.raw("apiVersion")) expect_enum(*v, path + "/apiVersion", {api_version});
    if (const Json* v = r.raw("kind")) expect_enum(*v, path + "/kind", {kind});
    const Json& meta = r.require("metadata", "{\"name\": ...}");
    ObjectReader mr(meta, path + "/metadata");
    mr.only_keys({"name", "labels", "annotations", "namespace"});
    out.name = object_name(mr.require("name", std::string("the ") + what + "'s name"), path + "/metadata/name", what);
    if (const Json* ns = mr.raw("namespace")) out.namespace_ = expect_string(*ns, path + "/metadata/namespace", 63);
    mr.raw("labels");
    mr.raw("annotations");
    static const Json kEmpty = Json::object();
    const Json* spec = r.raw("spec");
    out.spec = spec ? &expect_object(*spec, path + "/spec") : &kEmpty;
    out.spec_path = path + "/spec";
    return out;
  }
  out.spec = &doc;
  out.spec_path = path;
  return out;
}

// spec.resources.<r> of a Queue: {quota, limit, overQuotaWeight}, in the Queue's units (GPU devices,
// millicores, MB). Unset fields are 0, as the CRD's float64s are: a quota 0 deserves nothing, and a
// limit 0 allows nothing (write -1 for no limit).
void read_queue_resource(const Json& v, const std::string& path, kai::ResourceShare& share, double unit) {
  ObjectReader r(v, path);
  r.only_keys({"quota", "limit", "overQuotaWeight"});
  const auto amount = [&](const char* key) {
    const double x = r.get_number(key, 0, -1, 1e15);
    if (x < 0 && x != -1) throw InputError(r.child_path(key), "is " + std::to_string(x) + "; a quantity is -1 (unlimited) or 0 or more");
    return x == -1 ? kai::kUnlimited : x * unit;
  };
  share.deserved = amount("quota");
  share.max_allowed = amount("limit");
  // The CRD does not bound it; KAI's own test departments carry -1 (test_utils_builder.go).
  share.over_quota_weight = r.get_number("overQuotaWeight", 0, -1, 1e9);
  r.finish();
}

kai::Queue read_queue(const Json& doc, const std::string& path, std::int64_t index) {
  const Named_object o = read_object(doc, path, "scheduling.run.ai/v2", "Queue", "Queue");
  kai::Queue q;
  q.created = index;
  ObjectReader r(*o.spec, o.spec_path);
  if (o.name.empty()) {
    q.name = object_name(r.require("name", "the Queue's name"), r.child_path("name"), "Queue");
  } else {
    q.name = o.name;
  }
  if (const Json* v = r.raw("parentQueue")) q.parent = v->is_null() ? "" : object_name(*v, r.child_path("parentQueue"), "Queue");
  q.priority = static_cast<int>(r.get_int("priority", 100, -1000000000, 1000000000));  // DefaultQueuePriority 100
  q.created = r.get_int("createdOrder", index, 0, 1000000000);
  r.get_string("displayName", "", 253);
  if (const Json* v = r.raw("preemptMinRuntime")) expect_string(*v, r.child_path("preemptMinRuntime"), 64);
  if (const Json* v = r.raw("reclaimMinRuntime")) expect_string(*v, r.child_path("reclaimMinRuntime"), 64);
  // No spec.resources (a v1 queue): every quantity 0 (queue_info.go getQueueQuota).
  for (auto& s : q.resources) s = kai::ResourceShare{0, 0, 0, 0};
  if (const Json* res = r.raw("resources")) {
    const std::string rp = r.child_path("resources");
    ObjectReader rr(*res, rp);
    rr.only_keys({"gpu", "cpu", "memory"});
    if (const Json* v = rr.raw("gpu")) read_queue_resource(*v, rp + "/gpu", q.resources[kai::Gpu], 1);
    if (const Json* v = rr.raw("cpu")) read_queue_resource(*v, rp + "/cpu", q.resources[kai::Cpu], 1);
    if (const Json* v = rr.raw("memory")) read_queue_resource(*v, rp + "/memory", q.resources[kai::Memory], kMegabytes);
    rr.finish();
  }
  r.finish();
  return q;
}

TopologyConstraint read_topology_constraint(const Json& v, const std::string& path) {
  ObjectReader r(v, path);
  r.only_keys({"topology", "requiredTopologyLevel", "preferredTopologyLevel"});
  TopologyConstraint t;
  t.topology = r.get_string("topology", "", 253);
  t.required_level = r.get_string("requiredTopologyLevel", "", 317);
  t.preferred_level = r.get_string("preferredTopologyLevel", "", 317);
  r.finish();
  if (t.topology.empty() && (!t.required_level.empty() || !t.preferred_level.empty()))
    throw InputError(path + "/topology", "is required with a topology level (the name of a Topology)");
  return t;
}

SnapshotNode read_node(const Json& doc, const std::string& path) {
  ObjectReader r(doc, path);
  r.only_keys({"name", "gpus", "cpu", "memory", "labels", "taints", "unschedulable"});
  SnapshotNode n;
  n.name = object_name(r.require("name", "the node's name"), r.child_path("name"), "node");
  n.gpus = static_cast<int>(r.get_int("gpus", 0, 0, 64));
  if (const Json* v = r.raw("cpu")) {
    n.cpu_milli = quantity_milli(*v, r.child_path("cpu"));
    if (n.cpu_milli < 0) throw InputError(r.child_path("cpu"), "is negative");
  }
  if (const Json* v = r.raw("memory")) {
    n.memory_bytes = quantity_milli(*v, r.child_path("memory")) / 1000;
    if (n.memory_bytes < 0) throw InputError(r.child_path("memory"), "is negative");
  }
  if (const Json* v = r.raw("labels")) n.labels = parse_labels(*v, r.child_path("labels"));
  n.labels.emplace("kubernetes.io/hostname", n.name);  // the kubelet's label, unless given
  if (const Json* v = r.raw("taints")) n.taints = parse_taints(*v, r.child_path("taints"));
  n.unschedulable = r.get_bool("unschedulable", false);
  r.finish();
  return n;
}

// factory.go addToParent: each sub-group under its parent; a parent that names no sub-group, or a
// chain that comes back to itself (upstream would leave it out of the tree), is refused.
void link_sub_groups(std::vector<SnapshotSubGroup>& groups, const std::string& path) {
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].parent.empty()) continue;
    int found = -1;
    for (std::size_t k = 0; k < groups.size(); ++k)
      if (groups[k].name == groups[g].parent) found = static_cast<int>(k);
    if (found < 0) throw InputError(path + "/" + std::to_string(g) + "/parent", shown(groups[g].parent) + " is not one of the PodGroup's subGroups");
    groups[g].parent_index = found;
    groups[static_cast<std::size_t>(found)].leaf = false;
  }
  for (std::size_t g = 0; g < groups.size(); ++g) {
    int at = static_cast<int>(g);
    for (std::size_t steps = 0; at >= 0; ++steps) {
      if (steps > groups.size())
        throw InputError(path + "/" + std::to_string(g) + "/parent", "sub-group " + shown(groups[g].name) + " is its own ancestor; parents form a tree under the PodGroup");
      at = groups[static_cast<std::size_t>(at)].parent_index;
    }
  }
}

// What podgroup_webhook.go validateSubGroupMinFields and validatePodGroupSpec refuse or warn about
// but the scheduler takes as written (factory.go: an unset minMember is 0, a SubGroupSet ignores
// minMember, a PodSet minSubGroup), and a sub-group that can never be satisfied.
void sub_group_warnings(const SnapshotJob& j, const std::string& path, std::vector<std::string>& out) {
  const std::string who = "PodGroup " + j.name + ": ";
  int top = 0;
  for (std::size_t g = 0; g < j.sub_groups.size(); ++g) {
    const SnapshotSubGroup& sg = j.sub_groups[g];
    const std::string at = " (" + path + "/" + std::to_string(g) + ")";
    int children = 0, pods = 0;
    for (const SnapshotSubGroup& other : j.sub_groups) children += other.parent_index == static_cast<int>(g) ? 1 : 0;
    for (const SnapshotTask& t : j.tasks) pods += t.sub_group == sg.name ? 1 : 0;
    top += sg.parent_index < 0 ? 1 : 0;
    if (sg.leaf) {
      if (sg.min_sub_group >= 0)
        out.push_back(who + "subgroup " + shown(sg.name) + ": minSubGroup cannot be set on a leaf SubGroup (no child SubGroups); the admission "
                      "webhook refuses it, the scheduler ignores it" + at);
      if (sg.min_member < 0)
        out.push_back(who + "subgroup " + shown(sg.name) + ": minMember is required (the admission webhook refuses the PodGroup on create); the "
                      "scheduler takes 0, so none of its pods is required" + at);
      if (sg.min_member > pods)
        out.push_back(who + "subgroup " + shown(sg.name) + " has " + std::to_string(pods) + " pods but minMember " + std::to_string(sg.min_member) +
                      ": it can never be satisfied" + at);
    } else {
      if (sg.min_member >= 0)
        out.push_back(who + "subgroup " + shown(sg.name) + ": minMember cannot be set on a mid-level SubGroup (has child SubGroups); use "
                      "minSubGroup instead (the scheduler ignores it)" + at);
      if (sg.min_sub_group > children)
        out.push_back(who + "subgroup " + shown(sg.name) + ": minSubGroup (" + std::to_string(sg.min_sub_group) +
                      ") exceeds the number of direct child SubGroups (" + std::to_string(children) + "): it can never be satisfied" + at);
    }
  }
  if (!j.sub_groups.empty() && j.min_sub_group > top)
    out.push_back(who + "minSubGroup (" + std::to_string(j.min_sub_group) + ") exceeds the number of direct child SubGroups (" + std::to_string(top) +
                  "): the PodGroup can never be scheduled");
}

SnapshotTask read_task(const Json& doc, const std::string& path, const std::map<std::string, int>& nodes, const std::string& job,
                       std::size_t index) {
  expect_object(doc, path);
  SnapshotTask t;
  // The task's own keys; the rest is the pod spec (k8s/pod.hpp parse_pod_template).
  Json pod = doc;
  for (const char* key : {"name", "state", "node", "subGroup"}) pod.erase(key);
  ObjectReader r(doc, path);
  t.name = r.has("name") ? object_name(*r.raw("name"), r.child_path("name"), "pod") : job + "-" + std::to_string(index);
  t.state = get_enum(r, "state", TaskState::Pending, kTaskStates);
  if (const Json* v = r.raw("node"); v && !v->is_null()) {  // null: no node, as the result writes it
    const std::string node = expect_string(*v, r.child_path("node"), 253);
    const auto it = nodes.find(node);
    if (it == nodes.end()) throw InputError(r.child_path("node"), shown(node) + " is not a node of the snapshot");
    t.node = it->second;
  }
  const bool on_node = t.state == TaskState::Running || t.state == TaskState::Releasing || t.state == TaskState::StuckInReleasing;
  if (on_node && t.node < 0) throw InputError(path + "/node", "is required: a " + std::string(task_state_name(t.state)) + " pod is on a node");
  if ((t.state == TaskState::Pending || t.state == TaskState::Gated) && t.node >= 0)
    throw InputError(path + "/node", "is set on a " + std::string(task_state_name(t.state)) +
                                         " pod; a pod waiting to be scheduled has no node yet (state \"running\" or \"releasing\")");
  t.sub_group = r.get_string("subGroup", "", 63);
  PodTemplate base;
  base.gpus = 0;
  t.pod = parse_pod_template(pod, path, base);
  if (const Json* m = doc.contains("memory") ? &doc.at("memory") : nullptr) t.memory_bytes = quantity_milli(*m, path + "/memory") / 1000;
  t.pod.name = t.name;
  return t;
}

SnapshotJob read_job(const Json& doc, const std::string& path, std::int64_t index, const std::map<std::string, int>& nodes,
                     std::size_t& tasks_so_far, const std::string& scheduler, std::vector<std::string>& warnings) {
  const Named_object o = read_object(doc, path, "scheduling.run.ai/v2alpha2", "PodGroup", "PodGroup", true);
  SnapshotJob j;
  // The tasks sit beside the spec: in the object form, at the top level ("tasks" is not a PodGroup field).
  const Json* tasks = nullptr;
  std::string tasks_path;
  const bool object_form = o.spec != &doc;
  ObjectReader r(*o.spec, o.spec_path);
  if (object_form) {
    j.name = o.name;
    j.namespace_ = o.namespace_;
  } else {
    j.name = object_name(r.require("name", "the PodGroup's name"), r.child_path("name"), "PodGroup");
    j.namespace_ = r.get_string("namespace", "default", 63);
    tasks = r.raw("tasks");
    tasks_path = r.child_path("tasks");
  }
  j.queue = r.get_string("queue", "", 253);
  j.created = r.get_int("createdOrder", index, 0, 1000000000);
  if (const Json* v = r.raw("priorityClassName")) {
    j.priority_class = expect_string(*v, r.child_path("priorityClassName"), 253);
    const int known = well_known_priority(j.priority_class);
    if (known < 0 && !r.has("priority"))
      throw InputError(r.child_path("priorityClassName"), shown(j.priority_class) +
                                                              " is not a well-known PriorityClass (train 50, build-preemptible 75, build 100, "
                                                              "inference 125, system-*); give its value in \"priority\" too");
    j.priority = known;
  } else {
    j.priority_class = "";
  }
  j.priority = static_cast<int>(r.get_int("priority", j.priority_class.empty() ? 50 : j.priority, -1000000000, 2000001000));
  // pkg/common/podgroup CalculatePreemptibility: explicit, else preemptible below the build priority (100).
  const std::string pre = r.get_enum("preemptibility", "", {"", "preemptible", "non-preemptible"});
  j.preemptible = pre.empty() ? j.priority < 100 : pre == "preemptible";
  if (const Json* v = r.raw("topologyConstraint")) j.topology = read_topology_constraint(*v, r.child_path("topologyConstraint"));
  if (const Json* v = r.raw("subGroups")) {
    const std::string sp = r.child_path("subGroups");
    expect_array(*v, sp, 64);
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string p = sp + "/" + std::to_string(i);
      ObjectReader sr((*v)[i], p);
      sr.only_keys({"name", "minMember", "minSubGroup", "topologyConstraint", "parent"});
      SnapshotSubGroup g;
      g.name = sr.require_string("name", "the sub-group's name", 63);
      if (const Json* m = sr.raw("minMember"); m && !m->is_null())
        g.min_member = static_cast<int>(expect_int(*m, p + "/minMember", 0, SnapshotLimits::kMaxTasksPerJob));
      if (const Json* m = sr.raw("minSubGroup"); m && !m->is_null()) g.min_sub_group = static_cast<int>(expect_int(*m, p + "/minSubGroup", 0, 64));
      // podgroup_webhook.go validateSubGroupMinFields: a structural error, refused on create and update.
      if (g.min_member >= 0 && g.min_sub_group >= 0)
        throw InputError(p + "/minSubGroup", "subgroup " + shown(g.name) + ": minMember and minSubGroup are mutually exclusive; minMember counts pods "
                                                "(a sub-group without children), minSubGroup counts child sub-groups");
      if (const Json* tc = sr.raw("topologyConstraint")) g.topology = read_topology_constraint(*tc, p + "/topologyConstraint");
      // factory.go formatParentName: null or absent is the PodGroup; names compare lower-cased.
      if (const Json* parent = sr.raw("parent"); parent && !parent->is_null()) {
        g.parent = expect_string(*parent, p + "/parent", 63);
        std::transform(g.parent.begin(), g.parent.end(), g.parent.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (g.parent.empty()) throw InputError(p + "/parent", "is empty; name another sub-group of the PodGroup, or leave parent out");
      }
      for (const auto& other : j.sub_groups)
        if (other.name == g.name) throw InputError(p + "/name", "sub-group " + shown(g.name) + " is named twice");
      sr.finish();
      j.sub_groups.push_back(std::move(g));
    }
    link_sub_groups(j.sub_groups, sp);
  }
  std::optional<std::int64_t> min_member;
  if (const Json* m = r.raw("minMember"); m && !m->is_null()) min_member = expect_int(*m, r.child_path("minMember"), 0, SnapshotLimits::kMaxTasksPerJob);
  if (const Json* m = r.raw("minSubGroup"); m && !m->is_null()) j.min_sub_group = static_cast<int>(expect_int(*m, r.child_path("minSubGroup"), 0, 64));
  // podgroup_webhook.go validatePodGroupSpec
  if (min_member && j.min_sub_group >= 0)
    throw InputError(r.child_path("minSubGroup"), "minMember and minSubGroup are mutually exclusive: set minMember (" + std::to_string(*min_member) +
                                                      ") to schedule a fixed number of pods, or set minSubGroup to require a minimum number of child "
                                                      "SubGroups, but not both");
  j.stale_for_s = r.get_number("staleForSeconds", -1, -1, 1e9);
  r.raw("markUnschedulable");
  r.raw("schedulingBackoff");
  // spec.preemptionDelay (a metav1.Duration; podgroup_types.go): how long after its creation, or its
  // pods' last eviction, the PodGroup may first trigger evictions. createdSecondsAgo and
  // lastEvictedSecondsAgo give the job's times as the cycle sees them (default: created now, never evicted).
  if (const Json* v = r.raw("preemptionDelay"); v && !v->is_null()) {
    const std::string text = expect_string(*v, r.child_path("preemptionDelay"), 64);
    std::string why;
    const std::optional<std::int64_t> ns = go_duration_ns(text, why);
    if (!ns) throw InputError(r.child_path("preemptionDelay"), shown(text) + " is not a valid duration: " + why + "; " + kGoDurationHelp);
    j.preemption_delay_s = std::max(0.0, static_cast<double>(*ns) / 1e9);
  }
  j.created_s_ago = r.get_number("createdSecondsAgo", 0, 0, 1e10);
  j.last_evicted_s_ago = r.get_number("lastEvictedSecondsAgo", -1, -1, 1e10);
  if (j.last_evicted_s_ago > j.created_s_ago)
    throw InputError(r.child_path("lastEvictedSecondsAgo"), "is " + std::to_string(static_cast<long long>(j.last_evicted_s_ago)) +
                                                                 " s, before the PodGroup was created (createdSecondsAgo " +
                                                                 std::to_string(static_cast<long long>(j.created_s_ago)) + " s)");
  // spec.stalenessGracePeriod (a metav1.Duration): overrides the scheduler's; negative turns eviction off.
  if (const Json* v = r.raw("stalenessGracePeriod"); v && !v->is_null()) {
    const std::string text = expect_string(*v, r.child_path("stalenessGracePeriod"), 64);
    std::string why;
    const std::optional<std::int64_t> ns = go_duration_ns(text, why);
    if (!ns) throw InputError(r.child_path("stalenessGracePeriod"), shown(text) + " is not a valid duration: " + why + "; " + kGoDurationHelp);
    j.staleness_grace_s = static_cast<double>(*ns) / 1e9;
  }
  r.finish();
  if (object_form) {
    ObjectReader top(doc, path);
    tasks = top.raw("tasks");
    tasks_path = path + "/tasks";
  }
  if (!tasks) throw InputError(tasks_path, "is required: the PodGroup's pods, [{\"gpus\": 1, \"state\": \"pending\"}, ...]");
  expect_array(*tasks, tasks_path, SnapshotLimits::kMaxTasksPerJob);
  if (tasks->empty()) throw InputError(tasks_path, "is empty; a PodGroup in the snapshot has at least one pod");
  for (std::size_t i = 0; i < tasks->size(); ++i) {
    if (++tasks_so_far > SnapshotLimits::kMaxTasks)
      throw InputError(tasks_path + "/" + std::to_string(i), "is past the snapshot's " + std::to_string(SnapshotLimits::kMaxTasks) + " pods");
    const std::string task_path = tasks_path + "/" + std::to_string(i);
    SnapshotTask t = read_task((*tasks)[i], task_path, nodes, j.name, i);
    // A pod waiting for another scheduler is not this cycle's to place; one that runs only takes room.
    const Json& raw = (*tasks)[i];
    if (raw.contains("schedulerName") && t.pod.scheduler_name != scheduler && (t.state == TaskState::Pending || t.state == TaskState::Gated))
      throw InputError(task_path + "/schedulerName", shown(t.pod.scheduler_name) + " is not this snapshot's scheduler (" + shown(scheduler) +
                                                         "): a pending pod here is one the snapshot's scheduler places; set \"scheduler\" at the top, "
                                                         "or give another scheduler's pod as running on its node (it then only takes room)");
    if (raw.contains("annotations") && raw.at("annotations").is_object())
      for (const char* key : {"kai.scheduler/topology", "kai.scheduler/topology-required-placement", "kai.scheduler/topology-preferred-placement"})
        if (raw.at("annotations").contains(key))
          warnings.push_back("PodGroup " + j.name + ": pod " + t.name + "'s annotation " + key +
                             " is read by KAI's pod-grouper from the pod's top owner into the PodGroup's topologyConstraint; the scheduler reads "
                             "only the PodGroup (set topologyConstraint there) (" + task_path + "/annotations)");
    if (!t.sub_group.empty()) {
      const SnapshotSubGroup* group = nullptr;
      for (const auto& g : j.sub_groups)
        if (g.name == t.sub_group) group = &g;
      if (!group) throw InputError(tasks_path + "/" + std::to_string(i) + "/subGroup", shown(t.sub_group) + " is not one of the PodGroup's subGroups");
      // job_info.go AddTaskInfo: a pod joins a PodSet; one naming a SubGroupSet is dropped.
      if (!group->leaf)
        throw InputError(tasks_path + "/" + std::to_string(i) + "/subGroup",
                         shown(t.sub_group) + " is the parent of other sub-groups; a pod belongs to a sub-group without children (KAI drops a pod that names a parent)");
    } else if (!j.sub_groups.empty()) {
      throw InputError(tasks_path + "/" + std::to_string(i) + "/subGroup",
                       "is required: the PodGroup has subGroups, and KAI drops a pod that is in none of them (job_info.go AddTaskInfo)");
    }
    // The queue may come from the pods' label, as the pod-grouper reads it.
    if (j.queue.empty()) {
      const auto it = t.pod.labels.find("kai.scheduler/queue");
      if (it != t.pod.labels.end()) j.queue = it->second;
    }
    j.tasks.push_back(std::move(t));
  }
  // The default pod set's minAvailable: minMember; without it every pod (the lab's fixtures' default),
  // or 1 beside minSubGroup, as job_info.go setSubGroups takes an unset minMember.
  j.min_member = min_member ? static_cast<int>(*min_member) : j.min_sub_group >= 0 ? 1 : static_cast<int>(j.tasks.size());
  sub_group_warnings(j, o.spec_path + "/subGroups", warnings);
  if (j.min_member > static_cast<int>(j.tasks.size()))
    throw InputError(o.spec_path + "/minMember", "is " + std::to_string(j.min_member) + " but the PodGroup has " + std::to_string(j.tasks.size()) +
                                                     " pods; it could never be scheduled");
  return j;
}

}  // namespace

const char* task_state_name(TaskState s) { return name_of(s, kTaskStates); }

void read_kai_settings(ObjectReader& kr, KaiSettings& out) {
  if (const Json* a = kr.raw("actions")) {
    expect_array(*a, kr.child_path("actions"), 5);
    out.actions.clear();
    for (std::size_t i = 0; i < a->size(); ++i) {
      std::string name = expect_enum((*a)[i], kr.child_path("actions") + "/" + std::to_string(i),
                                     {"allocate", "consolidation", "reclaim", "preempt", "stalegangeviction"});
      for (const auto& seen : out.actions)
        if (seen == name) throw InputError(kr.child_path("actions") + "/" + std::to_string(i), shown(name) + " is listed twice");
      out.actions.push_back(std::move(name));
    }
  }
  out.k_value = kr.get_number("kValue", 1.0, 0, 100);
  out.spread = kr.get_enum("placementStrategy", "binpack", {"binpack", "spread"}) == "spread";
  out.staleness_grace_s = kr.get_number("stalenessGracePeriodSeconds", 60, 0, 1e7);
  // -1: no restriction (the scheduler's noConsolidationPreempteesRestrcition, as upstream's tests set it)
  out.max_consolidation_preemptees = static_cast<int>(kr.get_int("maxConsolidationPreemptees", 16, -1, 1000));
  out.use_scheduling_signatures = kr.get_bool("useSchedulingSignatures", true);
}

std::vector<kai::Queue> read_queues(const Json& v, const std::string& path) {
  std::vector<kai::Queue> queues;
  std::set<std::string> queue_names;
  expect_array(v, path, SnapshotLimits::kMaxQueues);
  for (std::size_t i = 0; i < v.size(); ++i) {
    kai::Queue q = read_queue(v[i], path + "/" + std::to_string(i), static_cast<std::int64_t>(i));
    if (!queue_names.insert(q.name).second) throw InputError(path + "/" + std::to_string(i), "queue " + shown(q.name) + " is listed twice");
    queues.push_back(std::move(q));
  }
  for (std::size_t i = 0; i < queues.size(); ++i) {
    const kai::Queue& q = queues[i];
    if (!q.parent.empty() && !queue_names.count(q.parent))
      throw InputError(path + "/" + std::to_string(i) + "/parentQueue", shown(q.parent) + " is not a queue of the snapshot");
    // A cycle would make the chain endless (capacity.cpp bounds the walk, but the hierarchy is wrong).
    std::string at = q.parent;
    for (std::size_t steps = 0; !at.empty(); ++steps) {
      if (steps > queues.size() || at == q.name)
        throw InputError(path + "/" + std::to_string(i) + "/parentQueue", "the queue hierarchy has a cycle through " + shown(q.name));
      for (const auto& p : queues)
        if (p.name == at) {
          at = p.parent;
          break;
        }
    }
  }
  return queues;
}

std::vector<SnapshotTopology> read_topologies(const Json& v, const std::string& path) {
  std::vector<SnapshotTopology> topologies;
  expect_array(v, path, SnapshotLimits::kMaxTopologies);
  for (std::size_t i = 0; i < v.size(); ++i) {
    const std::string p = path + "/" + std::to_string(i);
    const Named_object o = read_object(v[i], p, "kai.scheduler/v1alpha1", "Topology", "Topology");
    ObjectReader tr(*o.spec, o.spec_path);
    SnapshotTopology t;
    t.name = o.name.empty() ? object_name(tr.require("name", "the Topology's name"), tr.child_path("name"), "Topology") : o.name;
    const Json& levels = tr.require("levels", "[{\"nodeLabel\": \"...\"}, ...] from the widest level to the narrowest");
    expect_array(levels, tr.child_path("levels"), SnapshotLimits::kMaxLevels);
    if (levels.empty()) throw InputError(tr.child_path("levels"), "is empty; a Topology has at least one level");
    for (std::size_t k = 0; k < levels.size(); ++k) {
      const std::string lp = tr.child_path("levels") + "/" + std::to_string(k);
      ObjectReader lr(levels[k], lp);
      lr.only_keys({"nodeLabel"});
      const std::string label = lr.require_string("nodeLabel", "a node label key", 317);
      if (std::string why = qualified_name_problem(label); !why.empty()) throw InputError(lp + "/nodeLabel", shown(label) + " is not a label key: " + why);
      for (const auto& seen : t.levels)
        if (seen == label) throw InputError(lp + "/nodeLabel", shown(label) + " is a level twice");
      t.levels.push_back(label);
      lr.finish();
    }
    tr.finish();
    for (const auto& other : topologies)
      if (other.name == t.name) throw InputError(p, "topology " + shown(t.name) + " is listed twice");
    topologies.push_back(std::move(t));
  }
  return topologies;
}

Snapshot parse_snapshot(const Json& doc) {
  ObjectReader r(doc, "");
  r.only_keys({"scheduler", "kai", "kubeScheduler", "nodes", "queues", "topologies", "jobs"});
  Snapshot s;
  s.scheduler = r.get_enum("scheduler", "kai-scheduler", {"kai-scheduler", "default-scheduler"});
  if (const Json* v = r.raw("kai")) {
    ObjectReader kr(*v, "/kai");
    kr.only_keys({"actions", "kValue", "placementStrategy", "stalenessGracePeriodSeconds", "maxConsolidationPreemptees",
                  "useSchedulingSignatures"});
    read_kai_settings(kr, s.kai);
    kr.finish();
  }
  if (const Json* v = r.raw("kubeScheduler")) {
    if (s.scheduler != "default-scheduler") throw InputError("/kubeScheduler", "configures kube-scheduler; this snapshot's scheduler is " + shown(s.scheduler));
    s.kube_scheduler = read_kube_scheduler_config(*v, "/kubeScheduler");
  }
  std::map<std::string, int> node_index;
  if (const Json* v = r.raw("nodes")) {
    expect_array(*v, "/nodes", SnapshotLimits::kMaxNodes);
    for (std::size_t i = 0; i < v->size(); ++i) {
      SnapshotNode n = read_node((*v)[i], "/nodes/" + std::to_string(i));
      if (!node_index.emplace(n.name, static_cast<int>(i)).second) throw InputError("/nodes/" + std::to_string(i) + "/name", "node " + shown(n.name) + " is listed twice");
      s.nodes.push_back(std::move(n));
    }
  }
  if (const Json* v = r.raw("queues")) s.queues = read_queues(*v, "/queues");
  if (const Json* v = r.raw("topologies")) s.topologies = read_topologies(*v, "/topologies");
  if (const Json* v = r.raw("jobs")) {
    expect_array(*v, "/jobs", SnapshotLimits::kMaxJobs);
    std::set<std::string> job_names, task_names;
    std::size_t tasks_so_far = 0;
    for (std::size_t i = 0; i < v->size(); ++i) {
      const std::string p = "/jobs/" + std::to_string(i);
      SnapshotJob j = read_job((*v)[i], p, static_cast<std::int64_t>(i), node_index, tasks_so_far, s.scheduler, s.warnings);
      if (!job_names.insert(j.name).second) throw InputError(p, "PodGroup " + shown(j.name) + " is listed twice");
      for (std::size_t k = 0; k < j.tasks.size(); ++k)
        if (!task_names.insert(j.tasks[k].name).second) throw InputError(p + "/tasks/" + std::to_string(k), "pod " + shown(j.tasks[k].name) + " is listed twice");
      if (s.scheduler == "kai-scheduler") {
        if (j.queue.empty()) throw InputError(p + "/queue", "is required: the leaf queue (spec.queue, or the pods' label kai.scheduler/queue)");
        const auto q = std::find_if(s.queues.begin(), s.queues.end(), [&](const kai::Queue& x) { return x.name == j.queue; });
        if (q == s.queues.end()) throw InputError(p + "/queue", shown(j.queue) + " is not a queue of the snapshot");
        for (const auto& child : s.queues)
          if (child.parent == j.queue) throw InputError(p + "/queue", shown(j.queue) + " is a parent queue; only leaf queues hold workloads");
      }
      const auto check_topology = [&](const TopologyConstraint& c, const std::string& cp) {
        if (c.topology.empty()) return;
        const auto t = std::find_if(s.topologies.begin(), s.topologies.end(), [&](const SnapshotTopology& x) { return x.name == c.topology; });
        if (t == s.topologies.end()) throw InputError(cp + "/topology", shown(c.topology) + " is not a topology of the snapshot");
        for (const std::string* level : {&c.required_level, &c.preferred_level})
          if (!level->empty() && std::find(t->levels.begin(), t->levels.end(), *level) == t->levels.end())
            throw InputError(cp, shown(*level) + " is not a level of topology " + shown(c.topology));
      };
      check_topology(j.topology, p + "/topologyConstraint");
      for (std::size_t g = 0; g < j.sub_groups.size(); ++g) check_topology(j.sub_groups[g].topology, p + "/subGroups/" + std::to_string(g) + "/topologyConstraint");
      s.jobs.push_back(std::move(j));
    }
  }
  r.finish();
  return s;
}

}  // namespace gpuscale
