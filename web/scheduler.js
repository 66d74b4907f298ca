// The Scheduler view (#/scheduler?preset=<id>&scheduler=<name>): one scheduling cycle of KAI
// Scheduler or kube-scheduler over a cluster snapshot the learner writes in YAML (docs/schedule.md).
// The text is read as kubectl reads YAML, sent as JSON to the core's `schedule` (the same cycle as
// `gpuscale schedule FILE`), and run again on every edit (debounced, the newest text wins). The
// core's error names a JSON path, shown on its line. Presets are the YAML files of docs/examples/
// listed in schedule-presets.json; the learner's edited text is kept per preset in localStorage.
import { updateParams, parseRoute } from './router.js';
import { SCHEDULER_NAMES, renderComparison, renderScheduleResult, resultVerdict } from './schedule-result.js';
import { el } from './text.js';
import { YamlEditor } from './yaml-editor.js';
import { locatePath, readOneYaml, topLevelScalar } from './yaml-text.js';

export const PRESETS_URL = 'docs/examples/schedule-presets.json';
const DEBOUNCE_MS = 300;
const SCHEDULERS = Object.keys(SCHEDULER_NAMES);   // kai-scheduler (the snapshot's default), default-scheduler
const STORAGE_PREFIX = 'gpuscale:scheduler:preset=';  // + preset id → the learner's text of that preset

function saved(id) {
  try {
    return localStorage.getItem(`${STORAGE_PREFIX}${id}`);
  } catch {
    return null;  // storage unavailable: the preset as written
  }
}

function save(id, text) {
  try {
    if (text === null) localStorage.removeItem(`${STORAGE_PREFIX}${id}`);
    else localStorage.setItem(`${STORAGE_PREFIX}${id}`, text);
  } catch {
    // private mode or quota: the text just isn't kept
  }
}

export class SchedulerPanel {
  /** @param {HTMLElement} root @param {import('./sim-client.js').SimClient} client @param {{onNotice?: (text: string) => void}} [options] */
  constructor(root, client, { onNotice = () => {} } = {}) {
    this.root = root;
    this.client = client;
    this.onNotice = onNotice;
    this.body = root.querySelector('[data-part="body"]');
    this.status = root.querySelector('[data-part="status"]');
    this.presets = [];
    this.files = new Map();  // preset id → the file's text
    this.preset = null;
    this.rev = 0;
    this.runs = 0;
    this.timer = null;
  }

  async init() {
    this.root.dataset.ready = 'false';
    const response = await fetch(PRESETS_URL);
    if (!response.ok) throw new Error(`could not load ${PRESETS_URL}: HTTP ${response.status}`);
    this.presets = (await response.json()).presets ?? [];
    if (!this.presets.length) throw new Error(`${PRESETS_URL} lists no preset`);
    this._build();
    await this.fromRoute();
    this.root.dataset.ready = 'true';
  }

  _build() {
    const id = 'sched';
    this.presetSelect = el('select', { id: `${id}-preset`, onchange: () => this._choosePreset(this.presetSelect.value) },
      this.presets.map((p) => el('option', { value: p.id, text: p.title })));
    this.schedulerRadios = SCHEDULERS.map((name) => el('input', {
      type: 'radio', name: `${id}-scheduler`, id: `${id}-scheduler-${name}`, value: name,
      onchange: () => this._chooseScheduler(name),
    }));
    this.resetButton = el('button', { type: 'button', class: 'secondary small', id: `${id}-reset`, text: 'Reset to the preset',
      onclick: () => this._reset() });
    this.editedNote = el('span', { class: 'hint-text', id: `${id}-edited`, 'aria-live': 'polite' });
    this.summary = el('p', { class: 'preset-summary', id: `${id}-summary` });

    this.verdict = el('p', { class: 'np-verdict', id: `${id}-verdict`, 'aria-live': 'polite' });
    this.detail = el('div', { class: 'np-detail' });
    this.warnings = el('div', { class: 'sched-warnings', 'data-part': 'warnings' });
    this.compare = el('div', { class: 'sched-compare' });
    this.results = el('div', { class: 'sched-results', 'data-part': 'result' });
    this.editor = new YamlEditor({
      id: `${id}-text`, describedBy: [`${id}-verdict`], minRows: 18, maxRows: 40,
      onInput: (text) => this._edited(text),
    });
    this.editorRoot = el('div', { class: 'np-editor sched-editor', dataset: { state: 'pending' } },
      el('label', { for: `${id}-text`, class: 'np-label', text: 'The cluster snapshot (YAML): nodes, queues, topologies and jobs (PodGroups with their pods)' }),
      el('div', { class: 'np-layout' },
        this.editor.box,
        el('div', { class: 'np-report' }, this.verdict, this.detail, this.warnings,
          el('h3', { class: 'compare-title', text: 'Side by side' }), this.compare)));

    this.body.replaceChildren(
      el('div', { class: 'sched-controls' },
        el('div', { class: 'field' }, el('label', { for: `${id}-preset`, text: 'Start from' }), this.presetSelect),
        el('fieldset', { class: 'sched-choice' }, el('legend', { text: 'Scheduler' }),
          this.schedulerRadios.map((input) => el('span', { class: 'check' }, input,
            el('label', { for: input.id, text: SCHEDULER_NAMES[input.value] })))),
        el('div', { class: 'sched-reset' }, this.resetButton, this.editedNote)),
      this.summary,
      el('p', { class: 'hint-text' }, 'The same text runs in a terminal: ',
        el('code', { text: 'build/cli/gpuscale schedule snapshot.yaml' }), '. The format: docs/schedule.md.'),
      this.editorRoot,
      this.results);
  }

  /** The route's preset and scheduler, for the address (main.js puts them back when the view is reopened). */
  routeParams() {
    if (!this.preset) return {};
    // A scheduler the text names but the core does not know is the text's error, not the address's.
    return SCHEDULERS.includes(this.scheduler) ? { preset: this.preset, scheduler: this.scheduler } : { preset: this.preset };
  }

  /** The route changed (opened, an edited address, back or forward): show its preset and scheduler. */
  async fromRoute() {
    const params = parseRoute().params;
    const notices = [];
    const asked = params.get('preset');
    let id = asked ?? this.preset ?? this.presets[0].id;
    if (!this.presets.some((p) => p.id === id)) {
      id = this.preset ?? this.presets[0].id;
      notices.push(`"${asked}" in the address is not a preset of the Scheduler view (${this.presets.map((p) => p.id).join(', ')}): showing "${id}".`);
    }
    if (id !== this.preset) await this._load(id);
    const scheduler = params.get('scheduler');
    if (scheduler !== null && !SCHEDULERS.includes(scheduler)) {
      notices.push(`"${scheduler}" in the address is not a scheduler (kai-scheduler or default-scheduler): the snapshot's own is used.`);
    } else if (scheduler !== null && scheduler !== this._textScheduler()) {
      this._writeScheduler(scheduler);
    }
    if (notices.length) this.onNotice(notices.join(' '));
    this._syncControls();
    this._updateRoute();
  }

  /** Loads a preset: the learner's saved text of it, else the file as written. */
  async _load(id) {
    this.preset = id;
    const preset = this.presets.find((p) => p.id === id);
    this.presetSelect.value = id;
    this.summary.textContent = preset.summary ?? '';
    if (!this.files.has(id)) {
      const response = await fetch(`docs/examples/${preset.file}`);
      if (!response.ok) throw new Error(`could not load docs/examples/${preset.file}: HTTP ${response.status}`);
      this.files.set(id, await response.text());
    }
    const text = saved(id) ?? this.files.get(id);
    this.editor.textarea.value = text;
    this.editor.renderGutter();
    this._noteEdited();
    await this.run();
  }

  async _choosePreset(id) {
    try {
      await this._load(id);
      this._syncControls();
      this._updateRoute();
    } catch (error) {
      this._showStatus(error.message);
    }
  }

  _chooseScheduler(name) {
    if (name === this._textScheduler()) return;
    this._writeScheduler(name);  // the text changes, which runs it again
    this._syncControls();
    this._updateRoute();
  }

  /** Back to the preset's file (the saved text of this preset is forgotten). */
  _reset() {
    const original = this.files.get(this.preset);
    if (original === undefined || original === this.editor.text) return;
    this.editor.setText(original);
    this._syncControls();
    this._updateRoute();
    this.editor.focus();
  }

  /** The `scheduler` the text names (the snapshot's default kai-scheduler when it names none). */
  _textScheduler() {
    const read = readOneYaml(this.editor.text, { what: 'a cluster snapshot' });
    if (!read.ok) return this.scheduler ?? SCHEDULERS[0];  // unreadable for now: keep the last one read
    const value = read.value && typeof read.value === 'object' ? read.value.scheduler : undefined;
    if (value === undefined || value === null) return SCHEDULERS[0];
    return typeof value === 'string' ? value : String(value);
  }

  /** Writes `scheduler: <name>` into the text, in place (or as its first key), keeping the rest as typed. */
  _writeScheduler(name) {
    const text = this.editor.text;
    const read = readOneYaml(text, { what: 'a cluster snapshot' });
    const at = read.ok ? topLevelScalar(read.doc, 'scheduler') : null;
    if (at?.range) {
      this.editor.replaceRange(at.range[0], at.range[1], name);
    } else if (at) {
      this.editor.replaceRange(at.insertAt, at.insertAt, `scheduler: ${name}\n`);
    } else {
      // Text the page cannot read: a top-level `scheduler:` line, else a new first line.
      const line = /^scheduler:[ \t]*([^\s#]*)/m.exec(text);
      if (line) this.editor.replaceRange(line.index + line[0].length - line[1].length, line.index + line[0].length, name);
      else this.editor.replaceRange(0, 0, `scheduler: ${name}\n`);
    }
  }

  _syncControls() {
    this.scheduler = this._textScheduler();
    for (const input of this.schedulerRadios) input.checked = input.value === this.scheduler;
    this.root.dataset.scheduler = this.scheduler;
  }

  _noteEdited() {
    const edited = this.editor.text !== this.files.get(this.preset);
    this.resetButton.disabled = !edited;
    this.editedNote.textContent = edited ? 'Edited: your text is kept in this browser.' : 'The preset as written.';
    this.root.dataset.edited = String(edited);
  }

  _edited(text) {
    save(this.preset, text === this.files.get(this.preset) ? null : text);
    this._noteEdited();
    this.rev++;  // a run still going for older text is now stale
    this.editorRoot.dataset.state = 'pending';
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this._syncControls();
      this._updateRoute();
      this.run();
    }, DEBOUNCE_MS);
  }

  /** Writes the preset and scheduler into the address, while this view is the one shown. */
  _updateRoute() {
    if (parseRoute().view === 'scheduler') updateParams(this.routeParams());
  }

  _showStatus(text) {
    this.status.textContent = text;
  }

  /** Reads the text now and runs the cycle under both schedulers; the newest text wins. */
  async run() {
    clearTimeout(this.timer);
    const rev = ++this.rev;
    const read = readOneYaml(this.editor.text, { what: 'a cluster snapshot' });
    this._syncControls();
    if (!read.ok) {
      this._show(read.empty ? 'empty' : 'yaml-error', { error: { ...read.error, title: read.empty ? 'Nothing to run yet' : 'YAML syntax error' } });
      return;
    }
    this.editorRoot.dataset.state = 'running';
    const snapshot = read.value;
    const mine = this.scheduler;
    const other = SCHEDULERS.find((s) => s !== mine);
    const otherSnapshot = this._under(snapshot, other);
    const call = (s, name) => this.client.call('schedule', [JSON.stringify(s)], { channel: name === mine ? 'sched' : 'sched-other' })
      .then((result) => ({ result }), (error) => ({ error }));
    const [first, second] = await Promise.all([call(snapshot, mine), call(otherSnapshot.snapshot, other)]);
    if (rev !== this.rev || [first, second].some((o) => o.error?.name === 'Superseded')) return;
    if ([first, second].some((o) => o.error?.name === 'Cancelled')) {
      this.editorRoot.dataset.state = 'cancelled';
      this.verdict.textContent = 'Cancelled: edit the text to run it again.';
      return;
    }
    const outcome = (o) => (o.error ? { error: { path: o.error.path ?? '', message: o.error.detail ?? o.error.message } } : { result: o.result });
    renderComparison(this.compare, { [mine]: outcome(first), [other]: outcome(second) }, { note: otherSnapshot.note });
    if (first.error) {
      const error = first.error;
      const path = error.path ?? '';
      // A crash is not the text's fault: main.js says so in the status line; here, where the result would be.
      const at = !error.crashed && snapshot !== null && typeof snapshot === 'object' ? locatePath(read.doc, read.lineCounter, path) : null;
      this._show('invalid', { error: {
        title: error.crashed ? 'The simulation crashed on this snapshot and was restarted' : `Not a snapshot ${SCHEDULER_NAMES[mine]} can run`,
        path, message: error.detail ?? error.message, line: at?.line, col: at?.col, exact: at?.exact } });
      return;
    }
    this._show('done', { result: first.result, snapshot });
  }

  /** The snapshot as the other scheduler gets it: only `scheduler` changes (and kubeScheduler, KAI's refusal, goes). */
  _under(snapshot, scheduler) {
    if (snapshot === null || typeof snapshot !== 'object' || Array.isArray(snapshot)) return { snapshot, note: '' };
    const copy = { ...snapshot, scheduler };
    let note = `The other column is the same text with scheduler: ${scheduler}.`;
    if (scheduler === 'kai-scheduler' && 'kubeScheduler' in copy) {
      delete copy.kubeScheduler;
      note = 'The KAI Scheduler column is the same text with scheduler: kai-scheduler and without kubeScheduler (kube-scheduler\'s configuration).';
    }
    return { snapshot: copy, note };
  }

  _show(state, { error = null, result = null, snapshot = null }) {
    this.editorRoot.dataset.state = state;
    this.editor.textarea.setAttribute('aria-invalid', String(state === 'yaml-error' || state === 'invalid'));
    const markers = new Map();
    this.status.textContent = '';
    if (state === 'done') {
      this.verdict.replaceChildren(el('span', { class: 'mark', text: '✓', 'aria-hidden': 'true' }), ` ${resultVerdict(result)}`);
      this.detail.replaceChildren();
      const warnings = result.warnings ?? [];
      this.warnings.replaceChildren(...(warnings.length ? [el('h3', { text: 'Warnings' }),
        el('ul', { class: 'sched-warning-list' }, warnings.map((w) => el('li', { class: 'np-warning', text: w })))] : []));
      renderScheduleResult(this.results, { result, snapshot });
      this.results.hidden = false;
      this.runs += 1;
      Object.assign(this.results.dataset, { scheduler: result.scheduler, run: String(this.runs) });
      this.root.dataset.run = String(this.runs);
    } else {
      const mark = state === 'empty' ? '…' : '✗';
      this.verdict.replaceChildren(el('span', { class: 'mark', text: mark, 'aria-hidden': 'true' }), ` ${error.title}`);
      const parts = [];
      if (error.line) {
        markers.set(error.line, 'error');
        parts.push(this.editor.jump(error.line, error.col, error.exact === false ? `near line ${error.line}` : `line ${error.line}, column ${error.col}`));
      }
      if (error.path) parts.push(el('code', { class: 'np-path', text: error.path }));
      this.detail.replaceChildren(el('p', { class: 'np-error' }, ...parts.flatMap((p) => [p, ' ']),
        el('span', { class: 'np-message', text: error.message })));
      this.warnings.replaceChildren();
      if (state !== 'invalid') this.compare.replaceChildren();
      // The tables of the last good run stay, marked as such: nothing is redrawn from a broken text.
      if (this.runs) this.results.dataset.stale = 'true';
    }
    if (state === 'done') delete this.results.dataset.stale;
    this.editor.setMarkers(markers);
  }
}
