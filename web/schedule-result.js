// One scheduling cycle's result (the core's `schedule`, docs/schedule.md "The result") in operators'
// words: per job its status and KAI's reason and message, where each pod went, the victims and the
// action that chose them, the queues' deserved / fair share / allocated / requested, the free GPUs
// of each node before and after the cycle, the decision log and the warnings. Also the same
// snapshot's jobs under both schedulers, side by side. Used by the Scheduler view (scheduler.js).
import { el } from './text.js';

export const SCHEDULER_NAMES = { 'kai-scheduler': 'KAI Scheduler', 'default-scheduler': 'kube-scheduler' };

const ROWS_SHOWN = 200;  // rows of a long table drawn at first; a button draws the rest

// Pod statuses that hold a node's room after the cycle (Pending holds none).
const PLACED = new Set(['Running', 'Binding', 'Pipelined']);

/** "unlimited" for -1, else the number with at most two decimals. */
function amount(v, scale = 1) {
  if (v === null || v === undefined) return '—';
  if (Number(v) === -1) return 'unlimited';
  return String(Number((Number(v) / scale).toFixed(2)));
}

const RESOURCES = [
  { key: 'gpu', label: 'GPUs', scale: 1 },
  { key: 'cpu', label: 'CPU (cores)', scale: 1000 },                // the result's millicores
  { key: 'memory', label: 'memory (GiB)', scale: 1024 ** 3 },       // the result's bytes
];

/** A table that scrolls sideways inside its own box on a phone (and takes focus to do so). */
function scrollTable(label, table) {
  return el('div', { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': label }, table);
}

/** The first ROWS_SHOWN rows, and a button that adds the others (a snapshot may hold 50,000 pods). */
function rowsLimited(tbody, rows, what) {
  tbody.append(...rows.slice(0, ROWS_SHOWN));
  if (rows.length <= ROWS_SHOWN) return null;
  const button = el('button', { type: 'button', class: 'secondary small', text: `Show all ${rows.length} ${what}`,
    onclick: () => { tbody.append(...rows.slice(ROWS_SHOWN)); button.remove(); } });
  return button;
}

/** The snapshot's tasks in the result's order: the result lists each job's pods as the snapshot does. */
function snapshotJobs(snapshot) {
  return Array.isArray(snapshot?.jobs) ? snapshot.jobs : [];
}

/** GPUs a snapshot task asks for (0 when not written). */
function taskGpus(snapshot, j, t) {
  const gpus = Number(snapshotJobs(snapshot)[j]?.tasks?.[t]?.gpus ?? 0);
  return Number.isFinite(gpus) ? gpus : 0;
}

/**
 * Free GPUs per node before and after the cycle, from the snapshot sent and the result: before,
 * allocatable minus what running and releasing pods hold; after, also minus the pods bound this
 * cycle, with the victims' pods releasing and the Pipelined pods claiming releasing room first.
 * @returns {{name, gpus, running, bound, releasing, pipelined, freeBefore, freeAfter}[]}
 */
export function nodeRoom(snapshot, result) {
  const nodes = (Array.isArray(snapshot?.nodes) ? snapshot.nodes : []).map((n) => ({
    name: String(n?.name ?? ''), gpus: Number(n?.gpus ?? 0) || 0,
    runningBefore: 0, releasingBefore: 0, running: 0, bound: 0, releasing: 0, pipelined: 0,
  }));
  const byName = new Map(nodes.map((n) => [n.name, n]));
  const victims = new Set((result?.victims ?? []).map((v) => `${v.job}\u0000${v.task}`));
  const jobs = snapshotJobs(snapshot);
  (result?.jobs ?? []).forEach((job, j) => (job.tasks ?? []).forEach((task, t) => {
    const gpus = taskGpus(snapshot, j, t);
    const sent = jobs[j]?.tasks?.[t] ?? {};
    const wasOn = byName.get(String(sent.node ?? ''));
    if (wasOn && sent.state === 'running') wasOn.runningBefore += gpus;
    if (wasOn && sent.state === 'releasing') wasOn.releasingBefore += gpus;
    // A victim's old pod is released (a moved victim's new pod is Pipelined on its new node).
    if (wasOn && (sent.state === 'releasing' || (sent.state === 'running' && victims.has(`${job.name}\u0000${task.name}`)))) wasOn.releasing += gpus;
    else if (wasOn && sent.state === 'running') wasOn.running += gpus;
    const now = byName.get(String(task.node ?? ''));
    if (!now) return;
    if (task.status === 'Binding') now.bound += gpus;
    if (task.status === 'Pipelined') now.pipelined += gpus;
  }));
  return nodes.map((n) => {
    const onReleasing = Math.min(n.pipelined, n.releasing);
    const free = Math.max(0, n.gpus - n.running - n.bound - n.releasing - (n.pipelined - onReleasing));
    return { ...n, freeBefore: Math.max(0, n.gpus - n.runningBefore - n.releasingBefore), freeAfter: free,
             releasingLeft: n.releasing - onReleasing };
  });
}

/** One node's GPUs after the cycle as a row of cells (running, bound, pipelined, releasing, free). */
function gpuCells(n) {
  const cells = [];
  const add = (count, kind) => { for (let i = 0; i < count && cells.length < n.gpus; i++) cells.push(el('span', { class: `gpu-cell ${kind}` })); };
  add(n.running, 'running');
  add(n.bound, 'bound');
  add(n.pipelined, 'pipelined');
  add(n.releasingLeft, 'releasing');
  add(n.gpus - cells.length, 'free');
  return el('span', { class: 'gpu-cells', role: 'img', 'aria-label': roomWords(n) }, cells);
}

const LEGEND = [['running', 'running'], ['bound', 'bound this cycle'], ['pipelined', 'pipelined (waits for released room)'],
  ['releasing', 'being released'], ['free', 'free']];

/** Draws a result: what the cycle decided, table by table. */
export function renderScheduleResult(container, { result, snapshot }) {
  const jobs = result.jobs ?? [];
  const kai = result.scheduler === 'kai-scheduler';

  // Jobs (PodGroups).
  const jobRows = jobs.map((job) => el('tr', { dataset: { job: job.name, status: job.status } },
    el('th', { scope: 'row', text: job.name }),
    el('td', { text: job.queue ?? '—' }),
    el('td', { class: `job-status status-${job.status.replace(/\s+/g, '-')}`, text: job.status }),
    el('td', { class: 'job-reason', text: job.reason ?? '' }),
    el('td', { class: 'job-message', text: job.message ?? '' })));
  const jobBody = el('tbody');
  const jobMore = rowsLimited(jobBody, jobRows, 'jobs');

  // Pods.
  const podRows = jobs.flatMap((job) => (job.tasks ?? []).map((task) => el('tr', { dataset: { pod: task.name, status: task.status } },
    el('th', { scope: 'row', text: task.name }),
    el('td', { text: job.name }),
    el('td', { text: task.status }),
    el('td', { text: task.node ?? '—' }),
    el('td', { class: 'job-message', text: task.message ?? '' }))));
  const podBody = el('tbody');
  const podMore = rowsLimited(podBody, podRows, 'pods');

  // Victims.
  const victims = result.victims ?? [];
  const victimsPart = victims.length
    ? scrollTable('Victims', el('table', { class: 'summary sched-table', 'data-part': 'victims' },
      el('caption', { text: `Victims: ${victims.length} pod${victims.length === 1 ? '' : 's'} evicted (a moved pod is placed again, Pipelined, on its new node)` }),
      el('thead', {}, el('tr', {}, ['pod', 'job', 'node', 'action', 'to make room for'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, victims.map((v) => el('tr', { dataset: { victim: v.task, action: v.action } },
        el('th', { scope: 'row', text: v.task }), el('td', { text: v.job }), el('td', { text: v.node ?? '—' }),
        el('td', { text: v.action }), el('td', { text: v.for ?? '—' }))))))
    : el('p', { class: 'hint-text', 'data-part': 'victims', text: kai ? 'No victims: no action evicted a pod in this cycle.'
      : 'No victims: kube-scheduler\'s cycle here places pods on free room only (the lab does not model its priority preemption).' });

  // Queues (KAI only).
  const queues = result.queues ?? [];
  const queuesPart = !kai
    ? el('p', { class: 'hint-text', 'data-part': 'queues', text: 'kube-scheduler has no queues: quotas, limits and fair shares are KAI Scheduler\'s.' })
    : scrollTable('Queues', el('table', { class: 'summary sched-table queue-table', 'data-part': 'queues' },
      el('caption', { text: 'Queues after the cycle (-1 in the result is "unlimited")' }),
      el('thead', {}, el('tr', {}, ['queue', 'resource', 'deserved', 'fair share', 'allocated', 'requested'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, queues.flatMap((q) => RESOURCES.map((r, i) => el('tr', { dataset: { queue: q.name, resource: r.key }, class: i === 0 ? 'queue-first' : '' },
        i === 0 ? el('th', { scope: 'rowgroup', rowspan: RESOURCES.length },
          q.name, q.parentQueue ? el('span', { class: 'queue-parent', text: ` under ${q.parentQueue}` }) : null) : null,
        el('td', { class: 'resource', text: r.label }),
        ...['deserved', 'fairShare', 'allocated', 'requested'].map((field) => el('td', { dataset: { field }, text: amount(q[field]?.[r.key], r.scale) }))))))));

  // Free GPUs per node.
  const room = nodeRoom(snapshot, result);
  const nodeRows = room.map((n) => el('tr', { dataset: { node: n.name, freeBefore: String(n.freeBefore), freeAfter: String(n.freeAfter) } },
    el('th', { scope: 'row', text: n.name }),
    el('td', { text: String(n.gpus) }),
    el('td', { dataset: { field: 'free-before' }, text: String(n.freeBefore) }),
    el('td', { dataset: { field: 'free-after' }, text: String(n.freeAfter) }),
    el('td', { class: 'gpu-grid-cell' }, n.gpus ? gpuCells(n) : el('span', { class: 'hint-text', text: 'no GPUs' }))));
  const nodeBody = el('tbody');
  const nodeMore = rowsLimited(nodeBody, nodeRows, 'nodes');

  // The decision log, in order.
  const log = result.log ?? [];
  const logItems = log.map((line) => {
    const colon = line.indexOf(': ');
    return el('li', {}, colon > 0 ? [el('strong', { text: line.slice(0, colon) }), line.slice(colon)] : line);
  });
  // A scrolling box: one tab stop, so the keyboard can scroll it too.
  const logList = el('ol', { class: 'sched-log', tabindex: '0', 'aria-label': 'Decision log of the cycle' });
  const logMore = rowsLimited(logList, logItems, 'log lines');

  container.replaceChildren(...[
    el('h3', { text: 'Jobs (PodGroups)' }),
    scrollTable('Jobs', el('table', { class: 'summary sched-table', 'data-part': 'jobs' },
      el('caption', { text: `${jobs.length} job${jobs.length === 1 ? '' : 's'}: status, and ${kai ? 'KAI\'s reason and message' : 'kube-scheduler\'s reason and message (of the first pod still pending)'}` }),
      el('thead', {}, el('tr', {}, ['job', 'queue', 'status', 'reason', 'message'].map((h) => el('th', { scope: 'col', text: h })))),
      jobBody)),
    jobMore,
    el('h3', { text: 'Pods' }),
    scrollTable('Pods', el('table', { class: 'summary sched-table', 'data-part': 'pods' },
      el('caption', { text: 'Each pod: Running (already), Binding (placed this cycle), Pipelined (placed on room being released), Pending, Releasing' }),
      el('thead', {}, el('tr', {}, ['pod', 'job', 'status', 'node', 'why'].map((h) => el('th', { scope: 'col', text: h })))),
      podBody)),
    podMore,
    el('h3', { text: 'Victims' }),
    victimsPart,
    el('h3', { text: 'Queues' }),
    queuesPart,
    el('h3', { text: 'Free GPUs per node' }),
    el('p', { class: 'gpu-legend', 'aria-hidden': 'true' }, LEGEND.map(([kind, label]) => el('span', { class: 'legend-item' },
      el('span', { class: `gpu-cell ${kind}` }), ` ${label}`))),
    scrollTable('Free GPUs per node', el('table', { class: 'summary sched-table node-table', 'data-part': 'nodes' },
      el('caption', { text: 'GPUs per node, free before and after the cycle, and each GPU after it' }),
      el('thead', {}, el('tr', {}, ['node', 'GPUs', 'free before', 'free after', 'after the cycle'].map((h) => el('th', { scope: 'col', text: h })))),
      nodeBody)),
    nodeMore,
    el('h3', { text: 'Decision log' }),
    log.length ? logList : el('p', { class: 'hint-text', text: 'The cycle logged nothing.' }),
    logMore].filter(Boolean));
}

function roomWords(n) {
  const parts = [`${n.running} running`, `${n.bound} bound this cycle`, `${n.pipelined} pipelined`, `${n.releasingLeft} being released`, `${n.freeAfter} free`];
  return `After the cycle: ${parts.join(', ')}.`;
}

/** The one-line verdict of a result: how many jobs ended in each status, and the victims. */
export function resultVerdict(result) {
  const counts = new Map();
  for (const job of result.jobs ?? []) counts.set(job.status, (counts.get(job.status) ?? 0) + 1);
  const parts = [...counts].map(([status, n]) => `${n} ${status}`);
  const victims = (result.victims ?? []).length;
  return `One cycle of ${SCHEDULER_NAMES[result.scheduler] ?? result.scheduler}: ${parts.join(', ') || 'no jobs'}` +
    `${victims ? `; ${victims} victim${victims === 1 ? '' : 's'}` : ''}.`;
}

/** Pods of a job on a node after the cycle, of all its pods. */
function placed(job) {
  const tasks = job.tasks ?? [];
  return `${tasks.filter((t) => PLACED.has(t.status) && t.node).length} of ${tasks.length} pods placed`;
}

/**
 * The same snapshot's jobs under both schedulers, side by side: `runs` maps a scheduler name to
 * {result} or {error: {path, message}}.
 */
export function renderComparison(container, runs, { note = '' } = {}) {
  const order = ['kai-scheduler', 'default-scheduler'];
  const names = [];
  for (const id of order) for (const job of runs[id]?.result?.jobs ?? []) if (!names.includes(job.name)) names.push(job.name);
  const cell = (id, name) => {
    const run = runs[id];
    if (!run) return el('td', { text: '…' });
    if (run.error) return el('td', { class: 'error', text: '—' });
    const job = run.result.jobs.find((j) => j.name === name);
    return el('td', { dataset: { scheduler: id, status: job?.status ?? '' } },
      el('strong', { text: job?.status ?? '—' }), job ? el('span', { class: 'placed', text: ` · ${placed(job)}` }) : null);
  };
  const errors = order.filter((id) => runs[id]?.error).map((id) => el('p', { class: 'np-error' },
    `${SCHEDULER_NAMES[id]} could not run this snapshot: `, runs[id].error.path ? el('code', { class: 'np-path', text: runs[id].error.path }) : null,
    ` ${runs[id].error.message}`));
  const body = el('tbody');
  const more = rowsLimited(body, names.map((name) => el('tr', { dataset: { job: name } },
    el('th', { scope: 'row', text: name }), ...order.map((id) => cell(id, name)))), 'jobs');
  const victims = el('tfoot', {}, el('tr', { dataset: { row: 'victims' } }, el('th', { scope: 'row', text: 'victims' }),
    ...order.map((id) => el('td', { text: runs[id]?.result ? String(runs[id].result.victims?.length ?? 0) : '—' }))));
  container.replaceChildren(
    scrollTable('Both schedulers', el('table', { class: 'summary sched-table compare-table', 'data-part': 'compare' },
      el('caption', { text: 'The same snapshot under both schedulers' }),
      el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: 'job' }), order.map((id) => el('th', { scope: 'col', text: SCHEDULER_NAMES[id] })))),
      body, victims)),
    ...[more, ...errors, note ? el('p', { class: 'hint-text', text: note }) : null].filter(Boolean));
}
