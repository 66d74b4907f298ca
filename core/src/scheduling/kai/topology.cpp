// Topology-aware placement (real-systems.md §5.5): the domains a job may use. Ported from
// kai-scheduler/KAI-Scheduler pkg/scheduler/plugins/topology (job_filtering.go, topology_plugin.go)
// and docs/topology: a domain is a set of nodes sharing the label values of every level down to the
// constraint's; among the domains that can hold the job, the tightest fit (fewest available) first.
#include <algorithm>
#include <map>

#include "scheduling/kai/session_state.hpp"

namespace gpuscale::kai {

namespace {

const SnapshotTopology* find_topology(const Snapshot& s, const std::string& name) {
  for (const SnapshotTopology& t : s.topologies)
    if (t.name == name) return &t;
  return nullptr;
}

// The domain id of a node at `level` (an index into the levels): the values of levels 0..level, or ""
// if the node lacks one of them (it belongs to no domain at that level).
std::string domain_of(const SnapshotNode& n, const SnapshotTopology& t, std::size_t level) {
  std::string id;
  for (std::size_t l = 0; l <= level; ++l) {
    const auto it = n.labels.find(t.levels[l]);
    if (it == n.labels.end()) return "";
    id += (l ? "/" : "") + it->second;
  }
  return id;
}

struct Domain {
  int index;  // its place in domain-id order
  std::vector<int> nodes;
  Vec free;  // idle + releasing over its nodes
};

std::size_t level_index(const SnapshotTopology& t, const std::string& label) {
  return static_cast<std::size_t>(std::find(t.levels.begin(), t.levels.end(), label) - t.levels.begin());
}

// The domains at `level` of the candidates that have one, in domain-id order, each with its nodes in
// the candidates' order.
std::vector<Domain> domains_at(const Session& s, const Session::DomainIndex& index, const std::vector<int>& candidates) {
  std::vector<Domain> by_index(static_cast<std::size_t>(index.count));
  std::vector<char> seen(by_index.size(), 0);
  for (int n : candidates) {
    const int d = index.node_domain[static_cast<std::size_t>(n)];
    if (d < 0) continue;
    Domain& dom = by_index[static_cast<std::size_t>(d)];
    dom.index = d;
    seen[static_cast<std::size_t>(d)] = 1;
    dom.nodes.push_back(n);
    dom.free += s.nodes[static_cast<std::size_t>(n)].idle;
    dom.free += s.nodes[static_cast<std::size_t>(n)].releasing;
  }
  std::vector<Domain> out;
  for (std::size_t d = 0; d < by_index.size(); ++d)
    if (seen[d]) out.push_back(std::move(by_index[d]));
  return out;
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
  return &domain_index(s, static_cast<std::size_t>(t - s.snap.topologies.data()), level_index(*t, c.required_level));
}

std::vector<std::vector<int>> topology_domains(const Session& s, int j, const std::vector<int>& which, const std::vector<int>& candidates) {
  const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
  const TopologyConstraint& c = job.topology;
  const SnapshotTopology* t = c.topology.empty() ? nullptr : find_topology(s.snap, c.topology);
  if (!t || (c.required_level.empty() && c.preferred_level.empty())) return {candidates};
  const Vec need = s.request_of(j, which);
  const std::string& level_label = c.required_level.empty() ? c.preferred_level : c.required_level;
  const std::vector<Domain> domains =
      domains_at(s, domain_index(s, static_cast<std::size_t>(t - s.snap.topologies.data()), level_index(*t, level_label)), candidates);
  // The job's running members pin the domain: it must hold them.
  std::vector<int> pinned;
  for (std::size_t k = 0; k < job.tasks.size(); ++k) {
    const TaskRun& run = s.tasks[static_cast<std::size_t>(j)][k];
    if (is_active_allocated(run.status) && run.node >= 0) pinned.push_back(run.node);
  }
  std::vector<const Domain*> fitting;
  for (const Domain& d : domains) {
    bool holds = true;
    for (int n : pinned) holds = holds && std::find(d.nodes.begin(), d.nodes.end(), n) != d.nodes.end();
    if (holds && Session::fits(need, d.free)) fitting.push_back(&d);
  }
  // Bin packing: the domain with the fewest available resources that can still hold the job first
  // (GPUs, then CPU, then memory; then the id).
  std::stable_sort(fitting.begin(), fitting.end(), [](const Domain* a, const Domain* b) {
    for (int r = 0; r < 3; ++r)
      if (a->free.v[r] != b->free.v[r]) return a->free.v[r] < b->free.v[r];
    return a->index < b->index;
  });
  std::vector<std::vector<int>> out;
  for (const Domain* d : fitting) out.push_back(d->nodes);
  // A preferred level only: when no domain at that level holds the job, any node will do.
  if (c.required_level.empty()) out.push_back(candidates);
  return out;
}

std::string topology_failure_message(const Session& s, int j, const std::vector<int>& which) {
  const SnapshotJob& job = s.snap.jobs[static_cast<std::size_t>(j)];
  const Vec need = s.request_of(j, which);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", need.v[0]);
  return "No " + job.topology.required_level + " domain of topology " + job.topology.topology + " can hold the job's " +
         std::to_string(which.size()) + " pods (" + buf + " GPUs) together; required placement keeps it pending";
}

}  // namespace gpuscale::kai
