// The run summary as a table, one column per run, with labels and units for the documented fields.
import { el } from './text.js';

// Documented summary fields (docs/wasm-api.md), in display order. Unknown fields follow, raw.
const FIELDS = [
  ['num_requests', 'Requests arrived', ''],
  ['num_completed', 'Completed', ''],
  ['num_dropped', 'Dropped (gave up waiting)', ''],
  ['num_unfinished', 'Unfinished at the end', ''],
  ['num_rejected', 'Rejected (HTTP 400: longer than max_model_len)', ''],
  ['ttft_p50_s', 'TTFT p50', 's'],
  ['ttft_p90_s', 'TTFT p90', 's'],
  ['ttft_p99_s', 'TTFT p99', 's'],
  ['itl_mean_s', 'Inter-token latency, mean', 's'],
  ['e2e_p50_s', 'End-to-end p50', 's'],
  ['e2e_p99_s', 'End-to-end p99', 's'],
  ['slo_attainment', 'SLO attainment', 'fraction'],
  ['goodput_rps', 'Goodput', 'req/s'],
  ['peak_replicas', 'Peak replicas', ''],
  ['mean_replicas', 'Mean replicas', ''],
  ['num_scale_events', 'Scale events', ''],
  ['num_preemptions', 'Preemptions', ''],
  ['gpu_hours', 'GPU-hours', 'h'],
  ['idle_gpu_minutes', 'Idle GPU-minutes', 'min'],
  ['cost_usd', 'Cost', 'USD'],
  ['num_replica_evictions', 'Replicas evicted', ''],
  ['num_requests_failed_by_eviction', 'Requests failed by eviction', ''],
  // Why replicas were evicted (summary.replica_evictions_by_reason): rows left out while all are 0.
  ['replica_evictions_by_reason.Empty', 'Evicted: empty node removed', '', 'breakdown'],
  ['replica_evictions_by_reason.Underutilized', 'Evicted: underused node consolidated', '', 'breakdown'],
  ['replica_evictions_by_reason.Drifted', 'Evicted: node replaced (drift)', '', 'breakdown'],
  ['replica_evictions_by_reason.Expired', 'Evicted: node expired (expireAfter)', '', 'breakdown'],
  ['replica_evictions_by_reason.Interrupted', 'Evicted: spot interruption', '', 'breakdown'],
  ['replica_evictions_by_reason.ScaleDown', 'Evicted: node group scaled down', '', 'breakdown'],
  ['replica_evictions_by_reason.RegistrationTimeout', 'Evicted: node never registered', '', 'breakdown'],
  ['replica_evictions_by_reason.Drain', 'Evicted: node drained', '', 'breakdown'],
  ['replica_evictions_by_reason.Preempted', 'Evicted: preempted by KAI Scheduler (reclaim, preempt, consolidation)', '', 'breakdown'],
  ['time_to_ready_mean_s', 'New replica: created → Ready, mean', 's'],
  ['time_to_ready_max_s', 'New replica: created → Ready, longest', 's'],
  ['partial_group_gpu_hours', 'GPU-hours held by partly placed LeaderWorkerSet groups', 'h'],
  ['ttft_spike_minutes', 'Minutes with windowed P99 TTFT > 10 s', 'min'],
  ['ttft_breach_hours', 'Clock hours with P99 TTFT > 10 s (by arrival)', ''],
  // Cluster mode (a scenario with a cluster section): nested under `cluster`.
  ['cluster.nodes_launched', 'Nodes launched', ''],
  ['cluster.node_hours', 'Node-hours', 'h'],
  ['cluster.node_cost_usd', 'Node cost', 'USD'],
  ['cluster.gpu_hours_allocatable', 'GPU-hours paid (on nodes)', 'h'],
  ['cluster.gpu_hours_requested', 'GPU-hours requested by pods', 'h'],
  ['cluster.pod_evictions', 'Pods evicted', ''],
  ['cluster.non_gpu_pods_on_gpu_nodes', 'Non-GPU pods on GPU nodes', ''],
  ['cluster.spot_interruptions', 'Spot interruptions', ''],
];

/** [label, unit] of a documented summary field, by its key or its key under `cluster`; null if unknown. */
export function summaryField(key) {
  const row = FIELDS.find(([k]) => k === key || k === `cluster.${key}`);
  return row ? [row[1], row[2]] : null;
}

/** Nested summary objects (e.g. `cluster`) as dotted keys: {"cluster.node_cost_usd": …}. */
export function flattenSummary(summary, prefix = '') {
  const flat = {};
  for (const [key, value] of Object.entries(summary ?? {})) {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) Object.assign(flat, flattenSummary(value, `${prefix}${key}.`));
    else flat[`${prefix}${key}`] = value;
  }
  return flat;
}

/** Formats a number for a table cell: integers as they are, others to 3 significant digits. */
export function formatNumber(value, unit = '') {
  if (value === null || value === undefined) return '—';
  if (typeof value !== 'number') return String(value);
  if (!Number.isFinite(value)) return String(value);
  if (unit === 'fraction') return `${(value * 100).toFixed(1)} %`;
  if (unit === 'USD') return `$${value.toFixed(2)}`;
  let text;
  if (Number.isInteger(value)) text = value.toLocaleString('en-US');
  else if (Math.abs(value) >= 100) text = value.toFixed(0);
  else text = String(Number(value.toPrecision(3)));
  return unit && unit !== '' ? `${text} ${unit}` : text;
}

/**
 * Renders one run's summary as a grid of labelled values (compact, for a single run).
 * @param {HTMLElement} container
 * @param {object} summary
 */
export function renderSummaryTiles(container, nested) {
  const summary = flattenSummary(nested);
  const tiles = summaryRows([{ summary }]).map(([key, label, unit]) => el('div', { class: 'tile', dataset: { field: key } },
    el('dt', { title: key, text: label }),
    el('dd', { text: formatNumber(summary[key], unit) })));
  container.replaceChildren(el('dl', { class: 'summary summary-tiles' }, tiles));
}

// The playground's headline: what a knob change is judged by first.
const HEADLINE = ['num_dropped', 'ttft_p99_s', 'slo_attainment', 'peak_replicas', 'cost_usd', 'cluster.node_cost_usd'];

/** A few key numbers of a run in one line (dl of label/value pairs), for a sticky strip. */
export function renderHeadline(container, nested) {
  const summary = flattenSummary(nested);
  const items = HEADLINE.filter((key) => key in summary).map((key) => {
    const [label, unit] = FIELDS.find(([k]) => k === key).slice(1);
    return el('div', { class: 'headline-item', dataset: { field: key } },
      el('dt', { text: label }), el('dd', { text: formatNumber(summary[key], unit) }));
  });
  container.replaceChildren(...items);
}

/** [key, label, unit] for every field any of the runs has: documented ones first, in order. */
function summaryRows(runs) {
  const known = new Set(FIELDS.map(([key]) => key));
  const extra = [];
  for (const { summary } of runs) {
    for (const key of Object.keys(summary ?? {})) if (!known.has(key) && !extra.includes(key)) extra.push(key);
  }
  const plain = (key) => key.replace(/[._]/g, ' ').replace(/^num /, '').replace(/ s$/, ' (s)');
  return [...FIELDS, ...extra.map((key) => [key, plain(key), ''])]
    .filter(([key]) => runs.some(({ summary }) => summary && key in summary))
    .filter(([key, , , kind]) => kind !== 'breakdown' || runs.some(({ summary }) => Number(summary?.[key]) !== 0));
}

/**
 * Renders a comparison table.
 * @param {HTMLElement} container
 * @param {Array<{name: string, summary: object}>} runs
 * @param {{caption?: string}} [options]
 */
export function renderSummary(container, nestedRuns, { caption } = {}) {
  const runs = nestedRuns.map((run) => ({ ...run, summary: flattenSummary(run.summary) }));
  const rows = summaryRows(runs);
  const table = el('table', { class: 'summary' },
    caption ? el('caption', { text: caption }) : null,
    el('thead', {}, el('tr', {},
      el('th', { scope: 'col', text: 'metric' }),
      runs.map(({ name }) => el('th', { scope: 'col', text: name })))),
    el('tbody', {}, rows.map(([key, label, unit]) => el('tr', { dataset: { field: key } },
      el('th', { scope: 'row', title: key, text: label }),
      runs.map(({ summary }) => el('td', { text: formatNumber(summary?.[key], unit) }))))));
  // On a phone the table scrolls sideways inside this box, which the keyboard can then scroll too.
  container.replaceChildren(el('div', { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': caption ?? 'Summary of the runs' }, table));
}
