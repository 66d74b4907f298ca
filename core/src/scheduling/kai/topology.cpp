// Topology-aware placement (real-systems.md §5.5): the domains a job may use and the order of its nodes.
// Ported from kai-scheduler/KAI-Scheduler pkg/scheduler/plugins/topology: topology_plugin.go (the tree),
// common.go (lowestCommonDomainID), job_filtering.go (subSetNodesFn: the domains' room, the fit check,
// sortTree, getJobAllocatableDomains, sortDomainInfos), node_scoring.go (calculateNodeScores),
// topology_utils.go (reverseLevelOrder), and api/common_info/job_errors.go for the messages.
//
// A domain is a set of nodes sharing the values of every level down to its own; a node lacking a label
// of any level is outside the topology. For one job: from the lowest domain that holds every candidate
// down to the constraint's deepest level, the children of each domain are sorted by how full the job
// would leave them (the largest ratio of request to free over the resources first, then the id);
// the domains of the levels from the preferred (or required) one up to the required one (or the root)
// that can hold the job are tried deepest level first, in that sorted order. The preferred level's
// domains score the nodes: the later a domain in the sorted order, the higher its nodes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "scheduling/kai/capacity.hpp"
#include "scheduling/kai/session_state.hpp"

namespace gpuscale::kai {

namespace {

constexpr double kTopologyScore = 10000;              // scores.Topology
constexpr double kRequiredResourceNotInDomain = 1000;  // job_filtering.go requiredResourceNotInDomainRatio
constexpr long kNotSet = -1;                           // topology_structs.go allocatablePodsNotSet

const SnapshotTopology* find_topology(const Snapshot& s, const std::string& name) {
  for (const SnapshotTopology& t : s.topologies)
    if (t.name == name) return &t;
  return nullptr;
}

// isNodePartOfTopology: a label for every level.
bool in_topology(const SnapshotNode& n, const SnapshotTopology& t) {
  for (const std::string& level : t.levels)
    if (n.labels.find(level) == n.labels.end()) return false;
  return true;
}

// calcDomainId: the values of levels 0..level joined by "."; "" for a node outside the topology.
std::string domain_of(const SnapshotNode& n, const SnapshotTopology& t, std::size_t level) {
  if (!in_topology(n, t)) return "";
  std::string id;
  for (std::size_t l = 0; l <= level; ++l) id += (l ? "." : "") + n.labels.at(t.levels[l]);
  return id;
}

std::size_t level_index(const SnapshotTopology& t, const std::string& label) {
  return static_cast<std::size_t>(std::find(t.levels.begin(), t.levels.end(), label) - t.levels.begin());
}

std::size_t topology_number(const Session& s, const SnapshotTopology& t) {
  return static_cast<std::size_t>(&t - s.snap.topologies.data());
}

// The tree of one topology: the root, then each level's domains in id order, each a child of the
// domain one level up that holds its nodes.
Session::TopologyTree& topology_tree(const Session& s, std::size_t topology) {
  Session::TopologyTree& tree = s.topology_tree_[topology];
  if (tree.ready) return tree;
  const SnapshotTopology& t = s.snap.topologies[topology];
  tree.domains.assign(1, {});
  tree.at_level.assign(t.levels.size() + 1, {});
  tree.at_level[0].push_back(0);
  tree.member.assign(s.snap.nodes.size(), 0);
  for (std::size_t n = 0; n < s.snap.nodes.size(); ++n)
    if (in_topology(s.snap.nodes[n], t)) {
      tree.member[n] = 1;
      tree.domains[0].nodes.push_back(static_cast<int>(n));
    }
  for (std::size_t l = 0; l < t.levels.size(); ++l) {
    const Session::DomainIndex& index = domain_index(s, topology, l);
    const int first = static_cast<int>(tree.domains.size());
    tree.domains.resize(tree.domains.size() + static_cast<std::size_t>(index.count));
    std::vector<char> linked(static_cast<std::size_t>(index.count), 0);
    for (std::size_t n = 0; n < s.snap.nodes.size(); ++n) {
      const int d = index.node_domain[n];
      if (d < 0) continue;
      const int at = first + d;
      Session::TopologyDomain& dom = tree.domains[static_cast<std::size_t>(at)];
      if (!linked[static_cast<std::size_t>(d)]) {
        linked[static_cast<std::size_t>(d)] = 1;
        dom.level = static_cast<int>(l);
        dom.id = domain_of(s.snap.nodes[n], t, l);
      }
      dom.nodes.push_back(static_cast<int>(n));
    }
    for (int d = 0; d < index.count; ++d) tree.at_level[l + 1].push_back(first + d);
  }
  // Each domain a child of the domain one level up of any of its nodes: children in id order.
  for (std::size_t l = 0; l < t.levels.size(); ++l)
    for (const int d : tree.at_level[l + 1]) {
      const int node = tree.domains[static_cast<std::size_t>(d)].nodes.front();
      const int up = l == 0 ? 0 : tree.at_level[l][static_cast<std::size_t>(domain_index(s, topology, l - 1).node_domain[static_cast<std::size_t>(node)])];
      tree.domains[static_cast<std::size_t>(up)].children.push_back(d);
    }
  tree.ready = true;
  return tree;
}

// Quantity.Value(): a CPU amount in millicores rounded up to whole cores.
double cpu_value(double millicores) { return std::ceil(millicores / 1000); }

// getJobRatioToFreeResources: the largest ratio of the job's request to the domain's free room over
// GPUs, CPU (whole cores) and memory; above 1 the domain cannot hold it.
double ratio_to_free(const Vec& request, const Vec& free) {
  if (request.v[0] <= 0 && request.v[1] <= 0 && request.v[2] <= 0) return 0;
  double ratio = 0;
  if (request.v[0] > 0) ratio = std::max(ratio, request.v[0] / free.v[0]);
  const double asked[2] = {cpu_value(request.v[1]), std::floor(request.v[2])};
  const double have[2] = {cpu_value(free.v[1]), std::floor(free.v[2])};
  for (int r = 0; r < 2; ++r) {
    if (asked[r] == 0) continue;
    ratio = std::max(ratio, have[r] == 0 ? kRequiredResourceNotInDomain : asked[r] / have[r]);
  }
  return ratio;
}

std::string format_g3(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// One job's view of the tree: each domain's free room and the pods of the job it can take.
struct JobView {
  const Session& s;
  Session::TopologyTree& tree;
  std::vector<Vec> free;             // [domain] idle + releasing (only under the lowest common domain)
  std::vector<long> pods;            // [domain] AllocatablePods (kNotSet: not counted)
  Vec request;                       // the job's tasks to allocate, summed
  long count = 0;                    // how many
  Vec max_pod;                       // the largest of them, per resource (the representor pod)
  bool representor = false;          // useRepresentorPodsAccounting
  std::vector<std::pair<double, int>> keyed;  // sort_below's scratch
  std::string sub_group;             // "" for the job's own constraint

  JobView(const Session& session, Session::TopologyTree& t) : s(session), tree(t) {
    free.resize(tree.domains.size());
    pods.assign(tree.domains.size(), kNotSet);
  }

  // calcSubTreeFreeResources and calcSubTreeAllocatable below `d`.
  void measure(int d) {
    const Session::TopologyDomain& dom = tree.domains[static_cast<std::size_t>(d)];
    Vec room;
    long fit = 0;
    if (dom.children.empty()) {
      for (const int n : dom.nodes) {
        const NodeRoom& r = s.nodes[static_cast<std::size_t>(n)];
        room += r.idle;
        room += r.releasing;
        if (representor) fit += accommodation(r);
      }
    } else {
      for (const int c : dom.children) {
        measure(c);
        room += free[static_cast<std::size_t>(c)];
        fit += pods[static_cast<std::size_t>(c)];
      }
    }
    free[static_cast<std::size_t>(d)] = room;
    if (representor) pods[static_cast<std::size_t>(d)] = fit;
  }

  // calcNodeAccommodation: how many copies of the largest pod the node's idle and releasing room
  // takes (the copies' requests added one by one, as upstream's test pods are). A pod asking for
  // nothing fits every task on every node. Counted up to the job's tasks: only a total below it shows.
  long accommodation(const NodeRoom& r) const {
    if (max_pod.v[0] <= 0 && max_pod.v[1] <= 0 && max_pod.v[2] <= 0) return count;
    Vec room = r.idle;
    room += r.releasing;
    Vec test = max_pod;
    long k = 0;
    while (k < count && Session::fits(test, room)) {
      ++k;
      test += max_pod;
    }
    return k;
  }

  std::string prefix() const { return sub_group.empty() ? "" : "subgroup " + sub_group + ": "; }

  // checkJobDomainFit: whether the domain can hold the job.
  bool holds(int d) const {
    if (pods[static_cast<std::size_t>(d)] != kNotSet) return pods[static_cast<std::size_t>(d)] >= count;
    return ratio_to_free(request, free[static_cast<std::size_t>(d)]) <= 1;
  }

  // "" when the domain can hold the job, else its TopologyFitError's detailed message.
  std::string misfit(int d) const {
    if (holds(d)) return "";
    const Session::TopologyDomain& dom = tree.domains[static_cast<std::size_t>(d)];
    const std::string id = dom.level < 0 ? "root" : dom.id;
    if (pods[static_cast<std::size_t>(d)] != kNotSet) {
      return "<" + id + ">: " + prefix() + "node-group " + id + " can allocate only " + std::to_string(pods[static_cast<std::size_t>(d)]) + " of " +
             std::to_string(count) + " required pods";
    }
    const Vec& have = free[static_cast<std::size_t>(d)];
    // NewTopologyInsufficientResourcesError.
    std::vector<std::string> parts;
    if (request.v[0] > have.v[0])
      parts.push_back(id + " didn't have enough resource: GPUs, requested: " + format_g3(request.v[0]) + ", available: " + format_g3(have.v[0]));
    if (std::floor(request.v[1]) > std::floor(have.v[1]))
      parts.push_back(id + " didn't have enough resources: CPU cores, requested: " + humanize(request.v[1], 1000) +
                      ", available: " + humanize(have.v[1], 1000));
    if (request.v[2] > have.v[2])
      parts.push_back(id + " didn't have enough resources: memory, requested: " + humanize(request.v[2], 1e9) +
                      ", available: " + humanize(have.v[2], 1e9));
    std::string msg = "<" + id + ">: " + prefix();
    for (std::size_t i = 0; i < parts.size(); ++i) msg += (i ? ", " : "") + parts[i];
    return msg;
  }

  // sortTree: the children of every domain from `d` down to the level `deepest`, fullest first, then
  // by id (siblings share a level, whose domains are numbered in id order). In the tree itself, as
  // upstream sorts it: what lies outside the sorted part keeps an earlier job's order. Upstream also
  // sorts the children of the `deepest` level's domains before it stops; nothing reads their order
  // (the plan's domains and scores are of `deepest` and above, and a job that reaches deeper sorts
  // them again first), so that last sort is left out.
  void sort_below(int d, int deepest) {
    if (tree.domains[static_cast<std::size_t>(d)].level == deepest) return;
    std::vector<int>& kids = tree.domains[static_cast<std::size_t>(d)].children;
    keyed.clear();
    for (const int c : kids) keyed.push_back({ratio_to_free(request, free[static_cast<std::size_t>(c)]), c});
    std::sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first > b.first;
      return a.second < b.second;
    });
    for (std::size_t i = 0; i < kids.size(); ++i) kids[i] = keyed[i].second;
    for (const int c : kids) sort_below(c, deepest);
  }

  // getLevelDomains: the domains of `level` under `d`, in the sorted order.
  void at_level(int d, int level, std::vector<int>& out) const {
    if (tree.domains[static_cast<std::size_t>(d)].level == level) {
      out.push_back(d);
      return;
    }
    for (const int c : tree.domains[static_cast<std::size_t>(d)].children) at_level(c, level, out);
  }

  // reverseLevelOrder: every domain, the deepest level first, each level in breadth-first order.
  std::vector<int> reverse_level_order() const {
    std::vector<std::vector<int>> levels;
    std::vector<int> queue{0};
    while (!queue.empty()) {
      levels.push_back(queue);
      std::vector<int> next;
      for (const int d : queue)
        for (const int c : tree.domains[static_cast<std::size_t>(d)].children) next.push_back(c);
      queue = std::move(next);
    }
    std::vector<int> out;
    for (auto it = levels.rbegin(); it != levels.rend(); ++it) out.insert(out.end(), it->begin(), it->end());
    return out;
  }
};

// The domain's subtree, added to `keep` (addSubTreeToDomainMap).
void mark_subtree(const Session::TopologyTree& tree, int d, std::vector<char>& keep) {
  keep[static_cast<std::size_t>(d)] = 1;
  for (const int c : tree.domains[static_cast<std::size_t>(d)].children) mark_subtree(tree, c, keep);
}

// JobFitErrorsToDetailedMessage as the snapshot's reason and message: one error keeps its own
// reason; several are "Unable to schedule podgroup", their messages sorted, one per line.
FitError fit_error(std::vector<std::string> messages, const std::string& single_reason) {
  if (messages.size() == 1) return {single_reason, messages.front()};
  std::sort(messages.begin(), messages.end());
  std::string joined;
  for (std::size_t i = 0; i < messages.size(); ++i) joined += (i ? ".\n" : "") + messages[i];
  return {"Unable to schedule podgroup", joined};
}

}  // namespace

// Each node's domain at one level of a topology, computed once: domain ids (domain_of) are compared
// only here, and the domains numbered in id order.
const Session::DomainIndex& domain_index(const Session& s, std::size_t topology, std::size_t level) {
  Session::DomainIndex& index = s.domain_index_[topology][level];
  if (index.ready) return index;
  const SnapshotTopology& t = s.snap.topologies[topology];
  std::vector<std::string> ids(s.snap.nodes.size());
  std::map<std::string, int> numbers;
  for (std::size_t n = 0; n < ids.size(); ++n) {
    ids[n] = domain_of(s.snap.nodes[n], t, level);
    if (!ids[n].empty()) numbers.emplace(ids[n], 0);
  }
  int k = 0;
  for (auto& [id, number] : numbers) number = k++;
  index.node_domain.assign(ids.size(), -1);
  for (std::size_t n = 0; n < ids.size(); ++n)
    if (!ids[n].empty()) index.node_domain[n] = numbers[ids[n]];
  index.count = k;
  index.ready = true;
  return index;
}

const Session::DomainIndex* required_domains(const Session& s, int j) {
  const TopologyConstraint& c = s.snap.jobs[static_cast<std::size_t>(j)].topology;
  if (c.topology.empty() || c.required_level.empty()) return nullptr;
  const SnapshotTopology* t = find_topology(s.snap, c.topology);
  if (!t) return nullptr;
  return &domain_index(s, topology_number(s, *t), level_index(*t, c.required_level));
}

TopologyPlan topology_plan(const Session& s, int j, int set, const std::vector<int>& which, const std::vector<int>& candidates, bool explain) {
  const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
  const TopologyConstraint& c = set < 0 ? job.topology : job.sub_groups[static_cast<std::size_t>(set)].topology;
  // A sub-group's messages name it (job_errors.go DetailedMessage, getNoTopologyMatchError).
  const std::string sub_group = set < 0 ? "" : job.sub_groups[static_cast<std::size_t>(set)].name;
  const SnapshotTopology* t = c.topology.empty() ? nullptr : find_topology(s.snap, c.topology);
  TopologyPlan plan;
  if (!t || (c.required_level.empty() && c.preferred_level.empty()) || which.empty()) {
    plan.domains.push_back(candidates);
    return plan;
  }
  const std::size_t topology = topology_number(s, *t);
  Session::TopologyTree& tree = topology_tree(s, topology);
  const int levels = static_cast<int>(t->levels.size());
  const int required = c.required_level.empty() ? -2 : static_cast<int>(level_index(*t, c.required_level));
  const int preferred = c.preferred_level.empty() ? -2 : static_cast<int>(level_index(*t, c.preferred_level));
  const auto failure = [&]() {
    return "topology " + t->name + ", requirement " + c.required_level + " couldn't be satisfied for job <" + job.namespace_ + "/" + job.name +
           ">" + (sub_group.empty() ? "" : ", subgroup " + sub_group);
  };

  // lowestCommonDomainID: the candidates inside the topology, and the deepest domain holding them
  // all, looking no deeper than the preferred level.
  std::vector<char> valid(s.snap.nodes.size(), 0);
  std::vector<int> valid_nodes;
  for (const int n : candidates)
    if (tree.member[static_cast<std::size_t>(n)]) {
      valid[static_cast<std::size_t>(n)] = 1;
      valid_nodes.push_back(n);
    }
  int lcd = 0;
  for (int l = 0; l < levels && !valid_nodes.empty(); ++l) {
    const Session::DomainIndex& index = domain_index(s, topology, static_cast<std::size_t>(l));
    const int d = index.node_domain[static_cast<std::size_t>(valid_nodes.front())];
    bool all = true;
    for (const int n : valid_nodes) all = all && index.node_domain[static_cast<std::size_t>(n)] == d;
    if (!all) break;
    lcd = tree.at_level[static_cast<std::size_t>(l + 1)][static_cast<std::size_t>(d)];
    if (l == preferred) break;
  }

  JobView view(s, tree);
  view.sub_group = sub_group;
  view.request = s.request_of(j, which);
  view.count = static_cast<long>(which.size());
  int with_gpu = 0;
  for (const int k : which) {
    const Vec& r = s.tasks[static_cast<std::size_t>(j)][static_cast<std::size_t>(k)].request;
    for (int i = 0; i < 3; ++i) view.max_pod.v[i] = std::max(view.max_pod.v[i], r.v[i]);
    with_gpu += r.v[0] > 0 ? 1 : 0;
  }
  // useRepresentorPodsAccounting: every task asks for GPUs, or none does.
  view.representor = with_gpu == 0 || with_gpu == view.count;
  view.measure(lcd);

  if (!view.holds(lcd)) {
    const std::string where = lcd == 0 ? "the cluster" : tree.domains[static_cast<std::size_t>(lcd)].id;
    if (explain) plan.error = {"PodSchedulingErrors", failure() + ": not enough resources in " + where + " to allocate the job"};
    return plan;
  }

  // Sorting the tree for packing and for the preferred level's scores.
  view.sort_below(lcd, preferred >= 0 ? preferred : required);
  if (preferred >= 0) {
    std::vector<int> ordered;
    view.at_level(lcd, preferred, ordered);
    plan.node_score.assign(s.snap.nodes.size(), 0);
    for (std::size_t i = 0; i < ordered.size(); ++i) {
      const double score = std::floor(static_cast<double>(i + 1) / static_cast<double>(ordered.size()) * 10) * kTopologyScore;
      for (const int n : tree.domains[static_cast<std::size_t>(ordered[i])].nodes) plan.node_score[static_cast<std::size_t>(n)] = score;
    }
  }

  // getJobAllocatableDomains: the levels from the preferred (or required) one up to the required one
  // (or the root); with a required level and pods of the job already placed, only the required
  // domains holding one of them and their subtrees.
  std::vector<int> relevant;  // levels, deepest first; -1: the root
  bool found = false;
  for (int l = levels - 1; l >= -1; --l) {
    found = found || l == preferred || l == required;
    if (found) relevant.push_back(l);
    if (l == required) break;
  }
  std::vector<char> allowed(tree.domains.size(), 1);
  if (required >= 0) {
    std::vector<int> placed;
    for (std::size_t k = 0; k < job.tasks.size(); ++k) {
      const TaskRun& run = s.tasks[static_cast<std::size_t>(j)][k];
      if (!s.task_under(j, static_cast<int>(k), set)) continue;  // the sub-group's own pods (those of its PodSets)
      if (is_active_allocated(run.status) && run.node >= 0) placed.push_back(run.node);
    }
    if (!placed.empty()) {
      std::fill(allowed.begin(), allowed.end(), 0);
      for (const int d : tree.at_level[static_cast<std::size_t>(required + 1)]) {
        const std::vector<int>& nodes = tree.domains[static_cast<std::size_t>(d)].nodes;
        bool holds = false;
        for (const int n : placed) holds = holds || std::binary_search(nodes.begin(), nodes.end(), n);
        if (holds) mark_subtree(tree, d, allowed);
      }
    }
  }
  std::vector<char> fits(tree.domains.size(), 0);
  std::vector<std::string> top_misfits;
  bool any = false;
  for (std::size_t i = 0; i < relevant.size(); ++i)
    for (const int d : tree.at_level[static_cast<std::size_t>(relevant[i] + 1)]) {
      if (!allowed[static_cast<std::size_t>(d)]) continue;
      if (view.holds(d)) {
        fits[static_cast<std::size_t>(d)] = 1;
        any = true;
      } else if (explain && i + 1 == relevant.size()) {
        top_misfits.push_back(view.misfit(d));
      }
    }
  if (!any) {
    top_misfits.push_back(failure());
    if (explain) plan.error = fit_error(std::move(top_misfits), "PodSchedulingErrors");
    plan.node_score.clear();
    return plan;
  }

  // sortDomainInfos: in the sorted tree's reverse level order; each domain's candidates inside the topology.
  for (const int d : view.reverse_level_order()) {
    if (!fits[static_cast<std::size_t>(d)]) continue;
    std::vector<int> nodes;
    for (const int n : tree.domains[static_cast<std::size_t>(d)].nodes)
      if (valid[static_cast<std::size_t>(n)]) nodes.push_back(n);
    plan.domains.push_back(std::move(nodes));
  }
  return plan;
}

}  // namespace gpuscale::kai
