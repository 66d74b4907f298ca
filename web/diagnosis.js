// The per-layer diagnosis view of a cluster run, in the words each layer's operators see: Karpenter
// (NodeClaims launched and pending, NodePool limit usage, its "incompatible with nodepool" events),
// kube-scheduler (pending pods, FailedScheduling messages), KAI Scheduler (PodGroup conditions and
// events, queue allocated vs deserved vs fair share, gang deferrals) and the free GPUs per node over
// time. It reads a run's `cluster_series` (output.cluster_series) and its decision log; a slider picks
// the moment the tables show. Used by exercise 3 and by the playground's cluster runs.
import { RunChart } from './charts.js';
import { el } from './text.js';

const NODE_COLORS = ['#0f766e', '#7c3aed', '#c2410c', '#1d4ed8', '#b91c1c', '#475569', '#a16207', '#be185d'];

let viewCount = 0;

/** Whether a run result carries what the view reads. */
export function hasDiagnosis(result) {
  return Boolean(result?.cluster_series && Array.isArray(result.series?.t_s));
}

function gpus(v) {
  return v === null || v === undefined || Number(v) < 0 ? 'unlimited' : String(Number(Number(v).toFixed(2)));
}

/** A decision's time in words: "t = 57 s" (and its last repeat when folded). */
function when(d) {
  const t = `t = ${Number(Number(d.t_s).toFixed(1))} s`;
  return d.repeats ? `${t} (and ${d.repeats} more times, last at t = ${Number(Number(d.last_t_s).toFixed(1))} s)` : t;
}

/** Consecutive rows with the same text are one row "(×N)": Karpenter retries every batch. */
function collapse(decisions, textOf) {
  const out = [];
  for (const d of decisions) {
    const text = textOf(d);
    const last = out[out.length - 1];
    if (last && last.text === text) {
      last.count += 1 + (d.repeats ?? 0);
      last.lastT = d.repeats ? d.last_t_s : d.t_s;
    } else {
      out.push({ d, text, count: 1 + (d.repeats ?? 0), lastT: d.repeats ? d.last_t_s : d.t_s });
    }
  }
  return out;
}

/** Karpenter's event text without the batch header ("batch window … pending pods [4]; "). */
function karpenterText(d) {
  const e = String(d.explanation ?? '');
  const fits = e.indexOf('fits no NodePool: ');
  if (fits >= 0) {
    const pod = /pod (\d+) \(([^,]+)/.exec(e);
    const tail = e.slice(fits + 18).replace(/; it stays pending.*$/, '');
    return `${pod ? `pod ${pod[2]}-${pod[1]}: ` : ''}incompatible with nodepool: ${tail}`;
  }
  return e.replace(/^[a-z-]+: batch window [^;]*; /, '');
}

function eventList(rows, { empty, label }) {
  if (!rows.length) return el('p', { class: 'hint-text', text: empty });
  return el('ul', { class: 'diag-events', 'aria-label': label }, rows.slice(-8).map((r) =>
    el('li', { dataset: { reason: r.d.reason } },
      el('span', { class: 'diag-when', text: `${when(r.d)}${r.count > 1 ? ` · ×${r.count} until t = ${Number(Number(r.lastT).toFixed(1))} s` : ''}` }), ' ',
      el('strong', { text: r.d.reason || r.d.controller }), ': ', r.text)));
}

function keyValue(rows, caption) {
  return el('table', { class: 'summary diag-table' }, el('caption', { text: caption }),
    el('tbody', {}, rows.map(([k, v, field]) => el('tr', { dataset: { field } }, el('th', { scope: 'row', text: k }), el('td', { text: v })))));
}

export class DiagnosisView {
  /** @param {HTMLElement} container @param {{title?: string, syncKey?: string}} [options] */
  constructor(container, { title = 'Diagnosis view', syncKey = null } = {}) {
    this.container = container;
    this.title = title;
    this.syncKey = syncKey;
    this.id = `diag-${++viewCount}`;
    this.chart = null;
  }

  /** Draws the view for a run result (with cluster_series and decisions). */
  render(result) {
    this.chart?.destroy?.();
    this.chart = null;
    this.result = result;
    const c = result?.cluster_series;
    const t = result?.series?.t_s ?? [];
    if (!c || !t.length) {
      this.container.replaceChildren(el('p', { class: 'hint-text', text: 'The diagnosis view needs a cluster run with output.cluster_series.' }));
      return;
    }
    const last = t.length - 1;
    const sliderId = `${this.id}-t`;
    this.slider = el('input', { type: 'range', id: sliderId, min: 0, max: last, step: 1, value: String(last),
                                'aria-valuetext': `t = ${t[last]} s`, oninput: () => this._at(Number(this.slider.value)) });
    this.momentText = el('output', { for: sliderId, class: 'diag-moment' });
    this.karpenter = el('div', { class: 'diag-tables' });
    this.kube = el('div', { class: 'diag-tables' });
    this.kai = el('div', { class: 'diag-tables' });
    this.free = el('div', { class: 'diag-tables' });
    const decisions = result.decisions ?? [];
    const of = (controller) => decisions.filter((d) => d.controller === controller);
    const provisioner = of('karpenter.provisioner').concat(of('cloud').filter((d) => d.reason === 'InsufficientInstanceCapacity'))
      .sort((a, b) => a.t_s - b.t_s);
    const kubeFailed = of('kube-scheduler').filter((d) => d.reason === 'FailedScheduling');
    const kaiEvents = of('kai-scheduler').filter((d) => d.reason !== 'Session');
    // Each record of a repeated event stands for 1 + repeats cycles.
    const cycles = (re) => of('kai-scheduler').filter((d) => re.test(d.explanation ?? '')).reduce((n, d) => n + 1 + (d.repeats ?? 0), 0);
    const gangDeferrals = cycles(/required for gang scheduling/);
    const topologyDeferrals = cycles(/requirement \S+ couldn't be satisfied for job/);
    const usesKai = (c.kai_queues ?? []).length > 0 || kaiEvents.length > 0;

    const chartBox = el('div', { class: 'chart-stack' });
    const section = (layer, heading, ...parts) => el('section', { class: 'diag-layer', dataset: { layer }, 'aria-labelledby': `${this.id}-${layer}` },
      el('h5', { id: `${this.id}-${layer}`, text: heading }), ...parts);
    this.container.replaceChildren(el('div', { class: 'diagnosis', id: this.id, dataset: { part: 'diagnosis' } },
      el('h4', { text: this.title }),
      el('div', { class: 'diag-moment-row' }, el('label', { for: sliderId, text: 'Moment shown in the tables' }), this.slider, this.momentText),
      el('div', { class: 'diag-grid' },
        section('karpenter', 'Karpenter (node provisioning)', this.karpenter,
          el('h6', { text: 'Provisioner events (NoCompatibleNodePool is "incompatible with nodepool")' }),
          eventList(collapse(provisioner, karpenterText), { empty: 'Karpenter logged nothing: no pod was marked Unschedulable.', label: 'Karpenter events' })),
        section('kube-scheduler', 'kube-scheduler (pod placement)', this.kube,
          el('h6', { text: 'FailedScheduling events' }),
          eventList(collapse(kubeFailed, (d) => String(d.explanation ?? '').replace(/^unschedulable: /, '')),
            { empty: 'No FailedScheduling event from kube-scheduler.', label: 'FailedScheduling events' })),
        section('kai-scheduler', 'KAI Scheduler (queues, PodGroups)', this.kai,
          usesKai ? el('p', { dataset: { field: 'gang_deferrals' }, text: `Gang deferrals (a pod of a PodGroup held back because fewer than minMember pods fit): ${gangDeferrals}` }) : null,
          usesKai ? el('p', { dataset: { field: 'topology_deferrals' },
                              text: `Topology deferrals (a pod of a PodGroup held back because no domain of its required topology level holds the whole gang): ${topologyDeferrals}` }) : null,
          el('h6', { text: 'PodGroup conditions and events' }),
          eventList(collapse(kaiEvents, (d) => String(d.explanation ?? '').replace(/^[a-z]+: /, '')),
            { empty: 'No pod names schedulerName: kai-scheduler in this run.', label: 'KAI events' })),
        section('gpus', 'Free GPUs per node', this.free, chartBox))));
    this.usesKai = usesKai;
    this._chart(chartBox, c, t);
    this._at(last);
  }

  _chart(box, c, t) {
    const nodes = c.nodes ?? [];
    if (!nodes.length) return;
    const series = { t_s: t };
    const lines = nodes.map((n, i) => {
      series[`free_${n.id}`] = n.gpus_free;
      return { key: `free_${n.id}`, label: `${n.name} (${n.instance_type})`, color: NODE_COLORS[i % NODE_COLORS.length] };
    });
    const spec = { id: 'free-gpus', title: 'Free GPUs per node (allocatable − requested nvidia.com/gpu)', unit: 'GPUs', stepped: true, lines };
    this.chart = new RunChart(box, spec, { syncKey: this.syncKey, height: 150 });
    const max = Math.max(1, ...nodes.map((n) => n.gpus));
    this.chart.update(series, max);
  }

  /** Shows the tables at scrape `i`. */
  _at(i) {
    const r = this.result;
    const c = r.cluster_series;
    const t = r.series.t_s[i];
    this.slider.setAttribute('aria-valuetext', `t = ${t} s`);
    this.momentText.textContent = `t = ${t} s`;
    const pools = (c.nodepools ?? []).map((p) => [`NodePool ${p.name}: nvidia.com/gpu in use`,
      `${p.gpus[i]}${p.limit_gpus === null ? ' (no limit)' : ` of a limit of ${p.limit_gpus}`}`, `nodepool:${p.name}`]);
    this.karpenter.replaceChildren(keyValue([
      ['NodeClaims launched (so far)', String(c.nodeclaims_launched[i] ?? 0), 'nodeclaims_launched'],
      ['NodeClaims pending (launched, not initialized)', String(c.nodeclaims_pending[i] ?? 0), 'nodeclaims_pending'],
      ...pools,
    ], `Karpenter at t = ${t} s`));
    this.kube.replaceChildren(keyValue([
      ['Pending pods', String(c.pods_pending[i] ?? 0), 'pods_pending'],
      ['of them PodScheduled=False (Unschedulable)', String(c.pods_unschedulable[i] ?? 0), 'pods_unschedulable'],
    ], `Pods at t = ${t} s`));
    const queues = c.kai_queues ?? [];
    this.kai.replaceChildren(queues.length ? el('table', { class: 'summary diag-table' },
      el('caption', { text: `KAI queues at t = ${t} s (GPUs, as of KAI's last cycle)` }),
      el('thead', {}, el('tr', {}, ['queue', 'allocated', 'deserved', 'fair share', 'quota', 'limit', 'requested'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, queues.map((q) => el('tr', { dataset: { queue: q.name } },
        el('th', { scope: 'row', text: q.name }),
        ...[q.allocated[i], q.deserved[i], q.fair_share[i], q.quota, q.limit, q.requested[i]].map((v) => el('td', { text: gpus(v) })))))) : '');
    const nodes = c.nodes ?? [];
    this.free.replaceChildren(nodes.length ? el('table', { class: 'summary diag-table' },
      el('caption', { text: `Nodes at t = ${t} s` }),
      el('thead', {}, el('tr', {}, ['node', 'type', 'NodePool', 'free GPUs'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, nodes.map((n) => el('tr', { dataset: { node: n.name } },
        el('th', { scope: 'row', text: n.name }), el('td', { text: `${n.instance_type} ${n.capacity_type} ${n.zone}` }), el('td', { text: n.owner }),
        el('td', { text: n.gpus_free[i] === null ? 'not in the cluster yet (or gone)' : `${n.gpus_free[i]} of ${n.gpus}` }))))) : el('p', { text: 'No nodes.' }));
  }
}
