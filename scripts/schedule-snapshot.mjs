// The scheduling benchmark's snapshot (docs/schedule.md, README "Benchmarks"): 1,000 nodes of 8 GPUs
// in 25 racks, 4 departments of 5 queues, 10,000 pods — 3,000 of them running (about 75 % of the GPUs) preemptible
// training and non-preemptible inference, the rest pending as 1-GPU inference replicas and 4- or 8-pod
// gangs, some with a required rack. Deterministic (a fixed linear congruential stream), so every run
// times the same cycle. `node scripts/schedule-snapshot.mjs > FILE` writes it.
import { fileURLToPath } from 'node:url';

export function benchmarkSnapshot({ nodes = 1000, pods = 10000 } = {}) {
  let seed = 12345;
  const rand = (n) => { seed = (seed * 48271) % 2147483647; return seed % n; };  // Park–Miller: exact in doubles
  const all = { gpu: { quota: -1, limit: -1, overQuotaWeight: 1 }, cpu: { quota: -1, limit: -1, overQuotaWeight: 1 }, memory: { quota: -1, limit: -1, overQuotaWeight: 1 } };
  const snapshot = {
    scheduler: 'kai-scheduler',
    nodes: [],
    queues: [],
    topologies: [{ name: 'dc', levels: [{ nodeLabel: 'rack' }, { nodeLabel: 'kubernetes.io/hostname' }] }],
    jobs: [],
  };
  for (let n = 0; n < nodes; n++) snapshot.nodes.push({ name: `p5-${n}`, gpus: 8, cpu: '192', memory: '2000Gi', labels: { rack: `r${n % 25}` } });
  const leaves = [];
  for (let d = 0; d < 4; d++) {
    snapshot.queues.push({ name: `dept-${d}`, resources: { ...all, gpu: { quota: nodes * 2, limit: -1, overQuotaWeight: 1 } } });
    for (let q = 0; q < 5; q++) {
      const name = `dept-${d}-q${q}`;
      leaves.push(name);
      snapshot.queues.push({ name, parentQueue: `dept-${d}`, priority: 100 + q, resources: { ...all, gpu: { quota: Math.floor(nodes * 0.4), limit: -1, overQuotaWeight: 1 + q } } });
    }
  }
  const free = Array(nodes).fill(8);
  let placed = 0;
  let job = 0;
  // Running pods: 1-GPU replicas and 4-GPU training tasks, packed onto nodes at random.
  while (placed < pods * 0.3) {
    const gpus = rand(3) === 0 ? 4 : 1;
    const n = rand(nodes);
    if (free[n] < gpus) continue;
    free[n] -= gpus;
    const train = gpus === 4;
    snapshot.jobs.push({ name: `run-${job++}`, queue: leaves[rand(leaves.length)], priority: train ? 50 : 125,
      tasks: [{ gpus, cpu: '8', memory: '64Gi', state: 'running', node: `p5-${n}` }] });
    placed++;
  }
  // Pending: replicas and gangs until the pod count is reached.
  while (placed < pods) {
    const kind = rand(4);
    const size = kind === 0 ? 8 : kind === 1 ? 4 : 1;
    const tasks = [];
    for (let t = 0; t < size && placed < pods; t++, placed++) tasks.push({ gpus: size === 1 ? 1 : 8 / (size === 8 ? 8 : 2), cpu: '8', memory: '64Gi' });
    const j = { name: `pend-${job++}`, queue: leaves[rand(leaves.length)], priority: size === 1 ? 125 : 50, tasks };
    if (size > 1 && rand(2) === 0) j.topologyConstraint = { topology: 'dc', requiredTopologyLevel: 'rack' };
    snapshot.jobs.push(j);
  }
  return snapshot;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(JSON.stringify(benchmarkSnapshot()));
