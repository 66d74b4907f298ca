// The decision-log viewer: every controller decision of one run, filterable by controller and to the
// decisions that changed the replica count.
//
// Rows are addressable: row i of run NAME has id "decision-NAME-i" (i = index in the run's full
// `decisions` array, stable under filtering), so hints and links can point at a decision.
//
// The table is one keyboard widget (an ARIA treegrid with row focus): a single tab stop, the rows
// moved through with the arrow keys (Home/End, PageUp/PageDown by 10), a row's explanation opened
// and closed with Enter or Space (or ArrowRight/ArrowLeft) and by a click. An open explanation is
// the row's child row, so the arrows reach it and a screen reader reads it. Hidden (filtered) rows
// are skipped. Exactly one row has tabindex 0 (roving tabindex); `show(index)` moves it there.
import { el } from './text.js';

/** A run name made safe for an element id. */
export function idPart(name) {
  return String(name).replace(/[^A-Za-z0-9_-]/g, '_');
}

/** Whether a decision's current and desired replica counts differ (any controller). */
export function isChange(d) {
  return d.current_replicas !== d.desired_replicas;
}

/**
 * The controllers that decide the replica count (HPA, KEDA, and the planners). Other controllers
 * (node provisioners, the scheduler, the replica lifecycle) also carry the replica counts they saw,
 * but they did not decide them. charts.js keeps the same list for the scale-event marks.
 */
export const REPLICA_AUTOSCALERS = new Set(['hpa', 'keda', 'planner', 'wva']);

/** Whether a decision is a replica autoscaler's. */
export function isReplicaAutoscaler(d) {
  return REPLICA_AUTOSCALERS.has(d?.controller);
}

/** Whether a decision is a replica autoscaler changing the replica count (a scale event). */
export function isScaleEvent(d) {
  return isReplicaAutoscaler(d) && isChange(d);
}

const PAGE = 10;  // rows moved by PageUp / PageDown

let logCount = 0;

export class DecisionLog {
  /**
   * @param {HTMLElement} container
   * @param {{runName: string, title?: string}} options
   */
  constructor(container, { runName, title }) {
    this.runName = runName;
    this.decisions = [];
    this.rows = [];
    this.active = null;  // the row that holds the tab stop
    const filterId = `log-${idPart(runName)}-changes`;
    const keysId = `log-${idPart(runName)}-keys-${++logCount}`;
    this.filter = el('input', { type: 'checkbox', id: filterId, onchange: () => this._applyFilter() });
    // Which controller's decisions to show: filled from the run (hpa, keda, karpenter.*, kube-scheduler, …).
    this.controllerFilter = el('select', { 'aria-label': 'Show decisions of', class: 'log-controller',
                                           onchange: () => this._applyFilter() });
    this.count = el('span', { class: 'log-count', 'aria-live': 'polite' });
    this.body = el('tbody', { onkeydown: (event) => this._key(event), onclick: (event) => this._click(event) });
    this.table = el('table', { class: 'log', role: 'treegrid', 'aria-label': `Decision log: ${title ?? runName}`,
                               'aria-describedby': keysId },
      el('thead', {}, el('tr', {},
        el('th', { scope: 'col', text: 'time' }),
        el('th', { scope: 'col', text: 'controller' }),
        el('th', { scope: 'col', text: 'replicas' }),
        el('th', { scope: 'col', text: 'why it acted' }))),
      this.body);
    this.scroller = el('div', { class: 'log-scroll' }, this.table);
    this.root = el('div', { class: 'decision-log', dataset: { run: runName } },
      el('div', { class: 'log-toolbar' },
        el('h4', { text: title ?? runName }),
        this.controllerFilter,
        el('label', { class: 'check', for: filterId }, this.filter, ' only changes'),
        this.count),
      el('p', { class: 'log-keys', id: keysId,
                text: 'Tab into the log, then ↑ ↓ move through the decisions (Home, End, Page Up, Page Down), Enter opens or closes why the controller acted.' }),
      this.scroller);
    container.append(this.root);
  }

  /**
   * Shows a run's decisions (replacing any previous ones). `bounds` is the result's `decision_log`
   * (present only when the log folded repeats or dropped records: docs/limits.md).
   */
  render(decisions, bounds) {
    const hadFocus = this.body.contains(document.activeElement);
    this.decisions = decisions ?? [];
    this.bounds = bounds ?? null;
    const prefix = `decision-${idPart(this.runName)}-`;
    const span = this.decisions.reduce((max, d) => (typeof d.t_s === 'number' && d.t_s > max ? d.t_s : max), 0);
    const time = (t) => formatTime(t, span);
    this.rows = this.decisions.map((d, i) => {
      const scale = isScaleEvent(d);
      const { text: reason, derived } = reasonText(d);
      return el('tr', { id: prefix + i, tabindex: '-1', 'aria-level': '1', 'aria-expanded': 'false',
                        dataset: { change: String(scale), t: String(d.t_s), index: String(i) },
                        class: `decision${scale ? (d.desired_replicas > d.current_replicas ? ' up' : ' down') : ''}` },
        // The chevron is the visual affordance only: the row itself is the control (Enter, Space or a click).
        el('td', { class: 'num time' }, el('span', { class: 'why', 'aria-hidden': 'true', text: '▸' }), time(d.t_s)),
        el('td', { class: 'controller', text: (d.controller ?? '') + (d.pool ? ` (${d.pool})` : '') }),
        el('td', { class: 'num replicas', text: replicasText(d) }),
        el('td', { class: derived ? 'reason derived' : 'reason', text: reason +
          (d.repeats ? ` (×${(d.repeats + 1).toLocaleString('en-US')}, last at ${time(d.last_t_s)})` : '') }));
    });
    this.active = null;
    this.body.replaceChildren(...this.rows);
    const counts = new Map();
    for (const d of this.decisions) counts.set(d.controller ?? '', (counts.get(d.controller ?? '') ?? 0) + 1);
    const previous = this.controllerFilter.value;
    this.controllerFilter.replaceChildren(
      el('option', { value: '', text: `all controllers (${this.decisions.length})` }),
      ...[...counts].sort(([a], [b]) => a.localeCompare(b)).map(([name, n]) => el('option', { value: name, text: `${name} (${n})` })));
    this.controllerFilter.value = counts.has(previous) ? previous : '';
    this._applyFilter();
    if (hadFocus && this.active) this.active.focus({ preventScroll: true });
  }

  /** Opens (or closes) the full-width row under decision i with the controller's own arithmetic. */
  _toggle(i, open) {
    const row = this.rows[i];
    if (!row) return;
    const next = row.nextElementSibling;
    const isOpen = next?.classList.contains('why-row') ?? false;
    const want = open ?? !isOpen;
    if (want === isOpen) return;
    if (want) {
      row.after(el('tr', { class: 'why-row', id: `${row.id}-why`, tabindex: '-1', 'aria-level': '2',
                           dataset: { index: String(i) } },
        el('td', { colspan: '4' }, el('pre', { class: 'explanation', text: this.decisions[i].explanation ?? '' }))));
      row.setAttribute('aria-controls', `${row.id}-why`);
    } else {
      const hadFocus = next.contains(document.activeElement);
      if (this.active === next) this._setActive(row, { focus: hadFocus });
      next.remove();
      row.removeAttribute('aria-controls');
    }
    row.setAttribute('aria-expanded', String(want));
    row.querySelector('.why').textContent = want ? '▾' : '▸';
  }

  _applyFilter() {
    const only = this.filter.checked;
    const controller = this.controllerFilter.value;
    let changes = 0, shown = 0;
    this.decisions.forEach((d, i) => {
      const change = isScaleEvent(d);
      if (change) changes++;
      const hide = (only && !change) || (controller !== '' && d.controller !== controller);
      if (hide) this._toggle(i, false);
      this.rows[i].hidden = hide;
      if (!hide) shown++;
    });
    // The tab stop stays on a shown row: the active one, else the next shown one, else the first.
    if (!this.active || this.active.hidden || !this.active.isConnected) {
      const from = this.active?.isConnected ? this.active : null;
      const fallback = (from && (this._step(from, 1) !== from ? this._step(from, 1) : this._step(from, -1))) ?? this._first();
      const hadFocus = from?.contains(document.activeElement) ?? false;
      this._setActive(fallback && !fallback.hidden ? fallback : null, { focus: hadFocus });
    }
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
   * opens its explanation, makes it the log's tab stop and highlights it briefly. `focus: true`
   * also moves the keyboard focus to it.
   */
  show(index, { scrollPage = true, focus = false } = {}) {
    const row = this.rows?.[index];
    if (!row) return;
    if (row.hidden) {
      this.filter.checked = false;
      this.controllerFilter.value = '';
      this._applyFilter();
    }
    this._toggle(index, true);
    this._setActive(row, { focus });
    if (scrollPage) this.root.scrollIntoView({ block: 'start' });
    const top = row.getBoundingClientRect().top - this.scroller.getBoundingClientRect().top + this.scroller.scrollTop;
    this.scroller.scrollTop = Math.max(0, top - 40);
    row.classList.add('flash');
    setTimeout(() => row.classList.remove('flash'), 1600);
  }

  /** Index of the decision whose row holds the tab stop (its explanation's row counts as it), or -1. */
  get activeIndex() {
    return this.active ? Number(this.active.dataset.index) : -1;
  }

  /** Moves the tab stop (tabindex 0) to `row`, the other rows keep -1; optionally focuses it. */
  _setActive(row, { focus = false } = {}) {
    if (this.active && this.active !== row && this.active.isConnected) this.active.tabIndex = -1;
    this.active = row ?? null;
    if (!row) return;
    row.tabIndex = 0;
    if (focus) {
      row.focus({ preventScroll: true });
      row.scrollIntoView({ block: 'nearest' });
    }
  }

  _first() {
    let row = this.body.firstElementChild;
    while (row && row.hidden) row = row.nextElementSibling;
    return row;
  }

  _last() {
    let row = this.body.lastElementChild;
    while (row && row.hidden) row = row.previousElementSibling;
    return row;
  }

  /** The shown row `n` rows after (n > 0) or before `row`, stopping at the first or last one. */
  _step(row, n) {
    let current = row;
    for (let k = 0; k < Math.abs(n); k++) {
      let next = n > 0 ? current.nextElementSibling : current.previousElementSibling;
      while (next && next.hidden) next = n > 0 ? next.nextElementSibling : next.previousElementSibling;
      if (!next) break;
      current = next;
    }
    return current;
  }

  _key(event) {
    if (event.altKey || event.metaKey) return;
    const row = event.target.closest?.('tr');
    if (!row || row.parentElement !== this.body) return;
    const decision = row.classList.contains('why-row') ? row.previousElementSibling : row;
    const index = Number(decision.dataset.index);
    const open = decision.getAttribute('aria-expanded') === 'true';
    let target = null;
    switch (event.key) {
      case 'ArrowDown': target = this._step(row, 1); break;
      case 'ArrowUp': target = this._step(row, -1); break;
      case 'PageDown': target = this._step(row, PAGE); break;
      case 'PageUp': target = this._step(row, -PAGE); break;
      case 'Home': target = this._first(); break;
      case 'End': target = this._last(); break;
      case 'Enter':
      case ' ':
        if (event.ctrlKey) return;
        this._toggle(index, row === decision ? undefined : false);
        target = decision;
        break;
      case 'ArrowRight':
        // Closed: open it; open: go to the explanation (the row's child).
        if (!open) this._toggle(index, true);
        else if (row === decision) target = decision.nextElementSibling;
        target ??= row;
        break;
      case 'ArrowLeft':
        // On the explanation: back to its decision; on an open decision: close it.
        if (row !== decision) target = decision;
        else this._toggle(index, false);
        target ??= decision;
        break;
      default:
        return;
    }
    event.preventDefault();
    if (target) this._setActive(target, { focus: true });
  }

  _click(event) {
    const row = event.target.closest?.('tr');
    if (!row || row.parentElement !== this.body) return;
    if (row.classList.contains('why-row')) {
      this._setActive(row);
      return;
    }
    // Selecting text in a row does not open it.
    const selection = window.getSelection?.();
    if (selection && !selection.isCollapsed && row.contains(selection.anchorNode)) return;
    this._toggle(Number(row.dataset.index));
    this._setActive(row, { focus: true });
  }
}

/** What the reason column shows: the core's reason, else the explanation's first line, else a dash. */
function reasonText(d) {
  const reason = String(d.reason ?? '').trim();
  if (reason) return { text: reason, derived: false };
  const first = String(d.explanation ?? '').split('\n').find((line) => line.trim() !== '')?.trim() ?? '';
  if (!first) return { text: '—', derived: true };
  return { text: first.length > 90 ? `${first.slice(0, 88).trimEnd()}…` : first, derived: true };
}

/**
 * The replicas column: a replica autoscaler's "current → desired" ("4" when it kept the count);
 * blank for the other controllers (node provisioners, the scheduler, the replica lifecycle), whose
 * replica counts are what they saw, not what they decided.
 */
function replicasText(d) {
  if (!isReplicaAutoscaler(d)) return '';
  return isChange(d) ? `${d.current_replicas} → ${d.desired_replicas}` : String(d.current_replicas ?? '');
}

/** A decision's time: seconds to 0.1 s in runs up to 4 h, a clock ("day 2, 14:05:30") beyond. */
function formatTime(t, span = 0) {
  if (typeof t !== 'number' || !Number.isFinite(t)) return String(t ?? '');
  if (span <= 4 * 3600) return `${Number(t.toFixed(1))} s`;
  const day = Math.floor(t / 86400);
  const rest = Math.round(t - day * 86400);
  const pad = (n) => String(Math.floor(n)).padStart(2, '0');
  const clock = `${pad(rest / 3600)}:${pad((rest % 3600) / 60)}:${pad(rest % 60)}`;
  return span > 86400 ? `day ${day + 1}, ${clock}` : clock;
}
