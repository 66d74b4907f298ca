// The decision-log viewer: every controller decision of one run, filterable by controller and to the
// decisions that changed the replica count.
//
// Rows are addressable: row i of run NAME has id "decision-NAME-i" (i = index in the run's full
// `decisions` array, stable under filtering), so hints and links can point at a decision.
import { el } from './text.js';

/** A run name made safe for an element id. */
export function idPart(name) {
  return String(name).replace(/[^A-Za-z0-9_-]/g, '_');
}

/** Whether a decision changed the replica count. */
export function isChange(d) {
  return d.current_replicas !== d.desired_replicas;
}

export class DecisionLog {
  /**
   * @param {HTMLElement} container
   * @param {{runName: string, title?: string}} options
   */
  constructor(container, { runName, title }) {
    this.runName = runName;
    this.decisions = [];
    this.rows = [];
    const filterId = `log-${idPart(runName)}-changes`;
    this.filter = el('input', { type: 'checkbox', id: filterId, onchange: () => this._applyFilter() });
    // Which controller's decisions to show: filled from the run (hpa, keda, karpenter.*, kube-scheduler, …).
    this.controllerFilter = el('select', { 'aria-label': 'Show decisions of', class: 'log-controller',
                                           onchange: () => this._applyFilter() });
    this.count = el('span', { class: 'log-count', 'aria-live': 'polite' });
    this.body = el('tbody');
    this.scroller = el('div', { class: 'log-scroll', tabindex: '0', role: 'region',
                                'aria-label': `Decision log: ${title ?? runName}` },
      el('table', { class: 'log' },
        el('thead', {}, el('tr', {},
          el('th', { scope: 'col', text: 't (s)' }),
          el('th', { scope: 'col', text: 'controller' }),
          el('th', { scope: 'col', text: 'replicas' }),
          el('th', { scope: 'col', text: 'reason' }),
          el('th', { scope: 'col', text: 'arithmetic' }))),
        this.body));
    this.root = el('div', { class: 'decision-log', dataset: { run: runName } },
      el('div', { class: 'log-toolbar' },
        el('h4', { text: title ?? runName }),
        this.controllerFilter,
        el('label', { class: 'check', for: filterId }, this.filter, ' only changes'),
        this.count),
      this.scroller);
    container.append(this.root);
  }

  /**
   * Shows a run's decisions (replacing any previous ones). `bounds` is the result's `decision_log`
   * (present only when the log folded repeats or dropped records: docs/limits.md).
   */
  render(decisions, bounds) {
    this.decisions = decisions ?? [];
    this.bounds = bounds ?? null;
    const prefix = `decision-${idPart(this.runName)}-`;
    this.rows = this.decisions.map((d, i) => {
      const change = isChange(d);
      const toggle = el('button', { type: 'button', class: 'link why', text: 'why', 'aria-expanded': 'false',
                                    'aria-controls': `${prefix}${i}-why`, onclick: () => this._toggle(i) });
      return el('tr', { id: prefix + i, dataset: { change: String(change), t: String(d.t_s) },
                        class: change ? (d.desired_replicas > d.current_replicas ? 'up' : 'down') : '' },
        el('td', { class: 'num', text: formatTime(d.t_s) }),
        el('td', { text: d.controller ?? '' }),
        el('td', { class: 'num replicas', text: `${d.current_replicas} → ${d.desired_replicas}` }),
        el('td', { class: 'reason', text: (d.reason ?? '') +
          (d.repeats ? ` (×${(d.repeats + 1).toLocaleString('en-US')}, last at ${formatTime(d.last_t_s)})` : '') }),
        el('td', {}, toggle));
    });
    this.body.replaceChildren(...this.rows);
    const counts = new Map();
    for (const d of this.decisions) counts.set(d.controller ?? '', (counts.get(d.controller ?? '') ?? 0) + 1);
    const previous = this.controllerFilter.value;
    this.controllerFilter.replaceChildren(
      el('option', { value: '', text: `all controllers (${this.decisions.length})` }),
      ...[...counts].sort(([a], [b]) => a.localeCompare(b)).map(([name, n]) => el('option', { value: name, text: `${name} (${n})` })));
    this.controllerFilter.value = counts.has(previous) ? previous : '';
    this._applyFilter();
  }

  /** Opens (or closes) the full-width row under decision i with the controller's own arithmetic. */
  _toggle(i, open) {
    const row = this.rows[i];
    const toggle = row.querySelector('button.why');
    const next = row.nextElementSibling;
    const isOpen = next?.classList.contains('why-row') ?? false;
    const want = open ?? !isOpen;
    if (want === isOpen) return;
    if (want) {
      row.after(el('tr', { class: 'why-row', id: toggle.getAttribute('aria-controls') },
        el('td', { colspan: '5' }, el('pre', { class: 'explanation', text: this.decisions[i].explanation ?? '' }))));
    } else {
      next.remove();
    }
    toggle.setAttribute('aria-expanded', String(want));
  }

  _applyFilter() {
    const only = this.filter.checked;
    const controller = this.controllerFilter.value;
    let changes = 0, shown = 0;
    this.decisions.forEach((d, i) => {
      const change = isChange(d);
      if (change) changes++;
      const hide = (only && !change) || (controller !== '' && d.controller !== controller);
      this.rows[i].hidden = hide;
      if (hide) this._toggle(i, false);
      else shown++;
    });
    const b = this.bounds;
    const n = (v) => v.toLocaleString('en-US');
    this.count.textContent = `${this.decisions.length} decisions, ${changes} changed the replica count` +
      (shown < this.decisions.length ? `; ${shown} shown` : '') +
      (b ? `. The controllers made ${n(b.recorded)}: past ${n(b.fold_after)}, ${n(b.folded)} repeats were folded into the ` +
           `entry they repeat` + (b.not_kept ? ` and ${n(b.not_kept)} were only counted (the log keeps at most ${n(b.max_records)})` : '') : '');
  }

  /** Index of the decision at time `t` (seconds), or the last one before it; -1 if none. */
  indexAt(t) {
    let found = -1;
    this.decisions.forEach((d, i) => { if (d.t_s <= t + 1e-9) found = i; });
    return found;
  }

  /**
   * Brings decision `index` into view inside the log (and the page, unless scrollPage is false),
   * opens its explanation and highlights it briefly.
   */
  show(index, { scrollPage = true } = {}) {
    const row = this.rows?.[index];
    if (!row) return;
    if (row.hidden) {
      this.filter.checked = false;
      this.controllerFilter.value = '';
      this._applyFilter();
    }
    this._toggle(index, true);
    if (scrollPage) this.root.scrollIntoView({ block: 'start' });
    const top = row.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top + this.scroller.scrollTop;
    this.scroller.scrollTop = Math.max(0, top - 40);
    row.classList.add('flash');
    setTimeout(() => row.classList.remove('flash'), 1600);
  }
}

function formatTime(t) {
  if (typeof t !== 'number') return String(t ?? '');
  return Number.isInteger(t) ? String(t) : t.toFixed(1);
}
