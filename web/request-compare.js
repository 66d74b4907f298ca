// Exercise 1's request-by-request comparison of two runs that saw the same requests (the same ids):
// how many requests ended each way in each run, when and where each one was dropped (time,
// replica, cause), and the burst window on a timeline, so the learner never has to join two CSV
// files. Built from each run's `requests` (the scenario's output.requests).
import { el } from './text.js';

const OUTCOMES = [
  ['completed', 'completed'],
  ['dropped', 'dropped'],
  ['unfinished', 'still running at the end'],
];

const PAGE_SIZE = 50;

// Colours per cause on the timeline (the table says the cause in words).
const CAUSE_COLORS = ['#b91c1c', '#7c3aed', '#c2410c', '#0f766e', '#1d4ed8', '#a16207'];

/** completed | dropped | unfinished for one request record. */
export function outcomeOf(r) {
  if (r?.completed_at !== null && r?.completed_at !== undefined) return 'completed';
  if (r?.dropped_at !== null && r?.dropped_at !== undefined) return 'dropped';
  return 'unfinished';
}

/**
 * Why a request was dropped: the core's `failed_by` (summary.requests_failed_by_cause's keys); for a
 * request log without it (an older lab version), read off its lifecycle: no first token `timeoutS`
 * after arrival is the client giving up; anything else lost it with its replica.
 */
export function dropCause(r, timeoutS) {
  const given = r.failed_by;
  if (typeof given === 'string' && given) return given;
  const waited = r.dropped_at - r.arrived_at;
  if ((r.first_token_at === null || r.first_token_at === undefined) && Number.isFinite(timeoutS) && Math.abs(waited - timeoutS) < 0.5) {
    return 'client_timeout';
  }
  return 'replica_removed';
}

/** The cause in words. */
export function causeText(cause, timeoutS) {
  switch (cause) {
    case 'client_timeout': return Number.isFinite(timeoutS) ? `client timeout (no first token within ${timeoutS} s)` : 'client timeout';
    case 'replica_removed': return 'its replica was removed while it ran';
    case 'scale_down': return 'the ReplicaSet scaled its replica down';
    case 'consolidation': return 'Karpenter consolidated its node';
    case 'node_scale_down': return 'Cluster Autoscaler removed its node';
    case 'expiry': return 'its node expired (expireAfter)';
    case 'drift': return 'its node drifted and was replaced';
    case 'spot': return 'a spot interruption took its node';
    case 'node_removed': return 'its node was removed';
    case 'preemption': return 'KAI Scheduler evicted its replica (reclaim, preempt or consolidation)';
    default: return String(cause).replace(/_/g, ' ');
  }
}

function seconds(t) {
  return t === null || t === undefined ? '—' : `${Number(t).toFixed(1)} s`;
}

/**
 * The comparison tool. `runs`: [{name, title, requests}] (two of them, in the order of the
 * variant's `compare`), `burst`: {start_s, end_s} or null, `durationS`, `timeoutS`.
 */
export class RequestComparison {
  constructor({ prefix, runs, burst, durationS, timeoutS }) {
    this.prefix = prefix;
    this.runs = runs;
    this.burst = burst;
    this.durationS = durationS;
    this.timeoutS = timeoutS;
    this.page = 0;
    this._join();
    this.root = el('section', { class: 'request-compare', id: `${prefix}-compare`, 'aria-labelledby': `${prefix}-compare-title` });
    this._render();
  }

  /** One row per request id: {id, arrived_at, per: [{outcome, record, cause}] in run order}. */
  _join() {
    const byId = new Map();
    this.runs.forEach((run, i) => {
      for (const r of run.requests ?? []) {
        if (!byId.has(r.id)) byId.set(r.id, { id: r.id, arrived_at: r.arrived_at, per: [] });
        const outcome = outcomeOf(r);
        byId.get(r.id).per[i] = { outcome, record: r, cause: outcome === 'dropped' ? dropCause(r, this.timeoutS) : null };
      }
    });
    this.rows = [...byId.values()].sort((a, b) => a.id - b.id);
    this.causes = [...new Set(this.rows.flatMap((row) => row.per.map((p) => p?.cause).filter(Boolean)))].sort();
    this.truncated = this.runs.some((run) => run.truncated);
  }

  _inBurst(t) {
    return Boolean(this.burst) && t >= this.burst.start_s && t < this.burst.end_s;
  }

  _render() {
    const [a, b] = this.runs;
    const id = (part) => `${this.prefix}-compare-${part}`;
    this.filter = el('select', { id: id('filter'), onchange: () => { this.page = 0; this._renderList(); } },
      el('option', { value: 'dropped-first-only', text: `dropped by the ${shortName(a)}, completed by the ${shortName(b)}` }),
      el('option', { value: 'dropped-second-only', text: `dropped by the ${shortName(b)}, completed by the ${shortName(a)}` }),
      el('option', { value: 'dropped-both', text: 'dropped in both runs' }),
      el('option', { value: 'dropped-any', text: 'dropped in either run' }),
      el('option', { value: 'all', text: 'every request' }));
    this.listBox = el('div', { class: 'compare-list', id: id('list'), 'aria-live': 'polite' });
    const burstText = this.burst ? ` The burst window (t = ${this.burst.start_s} … ${this.burst.end_s} s) is shaded on the timeline.` : '';
    this.root.replaceChildren(
      el('h3', { id: id('title'), text: 'Compare the runs request by request' }),
      el('p', { class: 'hint-text', text: `Both runs saw the same ${this.rows.length.toLocaleString('en-US')} requests (the same ids, arrival times and lengths): only the autoscaler differs. Choose a cell of the table to list those requests.${burstText}` }),
      this.truncated ? el('p', { class: 'error', text: 'The request log was cut at its limit: the counts below cover only the requests it holds.' }) : null,
      this._matrix(),
      el('div', { class: 'two-up' }, this.runs.map((run, i) => this._dropSummary(run, i))),
      this._timeline(),
      el('div', { class: 'compare-filter' }, el('label', { for: id('filter'), text: 'List the requests ' }), this.filter),
      this.listBox);
    this._renderList();
  }

  /** Outcome in the first run (rows) × outcome in the second (columns), each cell a filter button. */
  _matrix() {
    const [a, b] = this.runs;
    const count = (oa, ob) => this.rows.filter((r) => r.per[0]?.outcome === oa && r.per[1]?.outcome === ob).length;
    const filterFor = (oa, ob) => (oa === 'dropped' && ob === 'completed' ? 'dropped-first-only'
      : oa === 'completed' && ob === 'dropped' ? 'dropped-second-only'
        : oa === 'dropped' && ob === 'dropped' ? 'dropped-both' : null);
    return el('table', { class: 'summary compare-matrix', id: `${this.prefix}-compare-matrix` },
      el('caption', { text: `Requests by outcome: ${a.title} (rows) against ${b.title} (columns)` }),
      el('thead', {}, el('tr', {}, el('td'), OUTCOMES.map(([, label]) => el('th', { scope: 'col', text: `${label} (${shortName(b)})` })),
        el('th', { scope: 'col', text: 'total' }))),
      el('tbody', {}, OUTCOMES.map(([oa, labelA]) => el('tr', {},
        el('th', { scope: 'row', text: `${labelA} (${shortName(a)})` }),
        OUTCOMES.map(([ob, labelB]) => {
          const n = count(oa, ob);
          const filter = filterFor(oa, ob);
          const cell = el('td', { dataset: { first: oa, second: ob, count: String(n) } });
          if (filter && n > 0) {
            cell.append(el('button', {
              type: 'button', class: 'link', text: n.toLocaleString('en-US'),
              'aria-label': `List the ${n.toLocaleString('en-US')} requests ${labelA} in the ${shortName(a)} run and ${labelB} in the ${shortName(b)} run`,
              'aria-controls': `${this.prefix}-compare-list`,
              onclick: () => { this.filter.value = filter; this.page = 0; this._renderList(); },
            }));
          } else {
            cell.textContent = n.toLocaleString('en-US');
          }
          return cell;
        }),
        el('td', { text: this.rows.filter((r) => r.per[0]?.outcome === oa).length.toLocaleString('en-US') })))),
      el('tfoot', {}, el('tr', {}, el('th', { scope: 'row', text: 'total' }),
        OUTCOMES.map(([ob]) => el('td', { text: this.rows.filter((r) => r.per[1]?.outcome === ob).length.toLocaleString('en-US') })),
        el('td', { text: this.rows.length.toLocaleString('en-US') }))));
  }

  /** One run's drops: how many, how many in the burst window, by cause and by replica. */
  _dropSummary(run, i) {
    const drops = this.rows.map((r) => r.per[i]).filter((p) => p?.outcome === 'dropped');
    const inBurst = drops.filter((p) => this._inBurst(p.record.dropped_at)).length;
    const tally = (key) => {
      const map = new Map();
      for (const p of drops) map.set(key(p), (map.get(key(p)) ?? 0) + 1);
      return [...map.entries()].sort((x, y) => y[1] - x[1]);
    };
    const first = drops.length ? Math.min(...drops.map((p) => p.record.dropped_at)) : null;
    const last = drops.length ? Math.max(...drops.map((p) => p.record.dropped_at)) : null;
    return el('section', { class: 'drop-summary', dataset: { run: run.name, dropped: String(drops.length) }, 'aria-label': `Drops in ${run.title}` },
      el('h4', { text: run.title }),
      drops.length === 0 ? el('p', { text: 'No request dropped.' }) : el('ul', {},
        el('li', { text: `${drops.length.toLocaleString('en-US')} dropped, between t = ${seconds(first)} and ${seconds(last)}${this.burst ? `; ${inBurst.toLocaleString('en-US')} of them during the burst window` : ''}` }),
        el('li', {}, 'By cause: ', tally((p) => p.cause).map(([c, n]) => `${causeText(c, this.timeoutS)}: ${n}`).join('; ')),
        el('li', {}, 'By replica: ', tally((p) => p.record.replica ?? 'none').map(([r, n]) => `${r === 'none' ? 'never on a replica' : `replica ${r}`}: ${n}`).join('; '))));
  }

  /** Each run's drops as ticks on a shared time axis, the burst window shaded. */
  _timeline() {
    const NS = 'http://www.w3.org/2000/svg';
    const svg = (tag, attrs = {}, ...children) => {
      const node = document.createElementNS(NS, tag);
      for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
      node.append(...children);
      return node;
    };
    const W = 1000;
    const left = 150;
    const lane = 34;
    const top = 16;
    const H = top + lane * this.runs.length + 30;
    const x = (t) => left + ((W - left - 10) * Math.max(0, Math.min(t, this.durationS))) / this.durationS;
    const nodes = [];
    if (this.burst) {
      nodes.push(svg('rect', { x: x(this.burst.start_s), y: top - 6, width: x(this.burst.end_s) - x(this.burst.start_s), height: lane * this.runs.length + 6,
                               fill: '#fde68a', 'fill-opacity': 0.55, 'data-part': 'burst' }),
                 svg('text', { x: x(this.burst.start_s) + 4, y: top + 2, 'font-size': 11, fill: '#92400e' }, 'burst window'));
    }
    const step = this.durationS > 2400 ? 600 : 300;
    for (let t = 0; t <= this.durationS; t += step) {
      nodes.push(svg('line', { x1: x(t), x2: x(t), y1: top, y2: top + lane * this.runs.length, stroke: '#d1d5db' }),
                 svg('text', { x: x(t), y: H - 8, 'font-size': 11, 'text-anchor': 'middle', fill: '#374151' }, `${t} s`));
    }
    this.runs.forEach((run, i) => {
      const y = top + lane * i + lane / 2;
      nodes.push(svg('text', { x: left - 8, y: y + 4, 'font-size': 12, 'text-anchor': 'end', fill: '#111827' }, shortName(run)));
      nodes.push(svg('line', { x1: left, x2: W - 10, y1: y, y2: y, stroke: '#9ca3af' }));
      for (const row of this.rows) {
        const p = row.per[i];
        if (p?.outcome !== 'dropped') continue;
        const color = CAUSE_COLORS[this.causes.indexOf(p.cause) % CAUSE_COLORS.length];
        nodes.push(svg('line', { x1: x(p.record.dropped_at), x2: x(p.record.dropped_at), y1: y - 11, y2: y + 11, stroke: color, 'stroke-opacity': 0.55, 'stroke-width': 1.5 }));
      }
    });
    const described = this.runs.map((run, i) => {
      const n = this.rows.filter((r) => r.per[i]?.outcome === 'dropped').length;
      return `${run.title}: ${n} drops`;
    }).join('; ');
    const label = `Timeline of dropped requests over the run (0 to ${this.durationS} s), one line per run, one tick per drop. ${described}.` +
      (this.burst ? ` The burst window, t = ${this.burst.start_s} to ${this.burst.end_s} s, is shaded.` : '');
    const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', 'aria-label': label, class: 'compare-timeline', id: `${this.prefix}-compare-timeline` }, ...nodes);
    return el('figure', { class: 'compare-figure' }, chart,
      el('figcaption', {}, 'When each request was dropped. ',
        this.causes.map((c, i) => el('span', { class: 'legend-item' },
          el('span', { class: 'swatch', style: `background:${CAUSE_COLORS[i % CAUSE_COLORS.length]}`, 'aria-hidden': 'true' }), ` ${causeText(c, this.timeoutS)} `))));
  }

  _selected() {
    const f = this.filter.value;
    const o = (row, i) => row.per[i]?.outcome;
    return this.rows.filter((row) => (f === 'dropped-first-only' ? o(row, 0) === 'dropped' && o(row, 1) === 'completed'
      : f === 'dropped-second-only' ? o(row, 1) === 'dropped' && o(row, 0) === 'completed'
        : f === 'dropped-both' ? o(row, 0) === 'dropped' && o(row, 1) === 'dropped'
          : f === 'dropped-any' ? o(row, 0) === 'dropped' || o(row, 1) === 'dropped' : true));
  }

  /** The selected requests, PAGE_SIZE rows at a time. */
  _renderList() {
    const rows = this._selected();
    const pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
    this.page = Math.min(this.page, pages - 1);
    const shown = rows.slice(this.page * PAGE_SIZE, (this.page + 1) * PAGE_SIZE);
    const label = this.filter.selectedOptions[0]?.textContent ?? '';
    const cell = (p) => {
      if (!p) return [el('td', { text: '—' }), el('td', { text: '—' }), el('td', { text: '—' }), el('td', { text: '—' })];
      const r = p.record;
      const when = p.outcome === 'dropped' ? `dropped at ${seconds(r.dropped_at)}${this._inBurst(r.dropped_at) ? ' (burst)' : ''}`
        : p.outcome === 'completed' ? `completed at ${seconds(r.completed_at)}` : 'still running';
      return [el('td', { dataset: { outcome: p.outcome }, text: p.outcome }), el('td', { text: when }),
              el('td', { text: r.replica === null || r.replica === undefined ? 'none' : String(r.replica) }),
              el('td', { text: p.cause ? causeText(p.cause, this.timeoutS) : '' })];
    };
    const [a, b] = this.runs;
    const pager = pages > 1 ? el('div', { class: 'actions pager' },
      el('button', { type: 'button', class: 'secondary small', text: 'Previous', disabled: this.page === 0, 'aria-controls': `${this.prefix}-compare-list`,
                     onclick: () => { this.page -= 1; this._renderList(); } }),
      el('span', { text: `page ${this.page + 1} of ${pages}` }),
      el('button', { type: 'button', class: 'secondary small', text: 'Next', disabled: this.page >= pages - 1, 'aria-controls': `${this.prefix}-compare-list`,
                     onclick: () => { this.page += 1; this._renderList(); } })) : null;
    this.listBox.dataset.count = String(rows.length);
    this.listBox.replaceChildren(
      el('p', { class: 'compare-count', text: rows.length === 0 ? `No request is ${label}.`
        : `${rows.length.toLocaleString('en-US')} requests ${label}; rows ${this.page * PAGE_SIZE + 1}–${this.page * PAGE_SIZE + shown.length} shown.` }),
      rows.length === 0 ? null : el('div', { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-label': 'The requests listed, by id' }, el('table', { class: 'summary compare-requests', id: `${this.prefix}-compare-requests` },
        el('caption', { text: `Requests ${label}` }),
        el('thead', {},
          el('tr', {}, el('th', { scope: 'col', rowspan: 2, text: 'request' }), el('th', { scope: 'col', rowspan: 2, text: 'arrived' }),
            el('th', { scope: 'colgroup', colspan: 4, text: a.title }), el('th', { scope: 'colgroup', colspan: 4, text: b.title })),
          el('tr', {}, [a, b].flatMap(() => ['outcome', 'when', 'replica', 'cause'].map((h) => el('th', { scope: 'col', text: h }))))),
        el('tbody', {}, shown.map((row) => el('tr', { dataset: { id: String(row.id) } },
          el('th', { scope: 'row', text: String(row.id) }),
          el('td', { text: `${seconds(row.arrived_at)}${this._inBurst(row.arrived_at) ? ' (burst)' : ''}` }),
          cell(row.per[0]), cell(row.per[1])))))),
      pager);
  }
}

/** "duty cycle" / "queue depth" for a run's short label; else its name. */
function shortName(run) {
  if (/DCGM|duty|gpu_util/i.test(`${run.name} ${run.title}`)) return 'duty-cycle HPA';
  if (/queue|num_requests_waiting/i.test(`${run.name} ${run.title}`)) return 'queue-depth HPA';
  return run.name;
}
