// Playground panel: a form built from the core's knob schema; every change re-runs the scenario
// (debounced, latest request wins) and redraws the summary, charts and decision log. A whole
// scenario written as YAML (scenario-yaml.js) can be run instead; the results say which one they show.
import { RunCharts } from './charts.js';
import { DecisionLog } from './decision-log.js';
import { DiagnosisView, hasDiagnosis } from './diagnosis.js';
import { workNote } from './progress.js';
import { updateParams } from './router.js';
import { csvButtons } from './run-view.js';
import { ScenarioYaml } from './scenario-yaml.js';
import { buildScenario, formatKnob, knobActive, knobChoices, knobKey, knobStart, parseKnob, readUrlState } from './state.js';
import { renderHeadline, renderSummaryTiles } from './summary.js';
import { el } from './text.js';

const DEBOUNCE_MS = 100;

// Legends for the knob groups (the first segment of each knob's path); others show the segment.
const GROUP_LABELS = {
  autoscaler: 'Replica autoscaler (HPA)',
  workload: 'Workload',
  cold_start: 'Cold start',
  metrics: 'Metrics pipeline',
  engine: 'Engine (vLLM)',
  slo: 'SLO',
  cluster: 'Nodes (layer 1)',
  seed: 'Randomness',
};

export class PlaygroundPanel {
  constructor(root, client) {
    this.root = root;
    this.client = client;
    this.body = root.querySelector('[data-part="body"]');
    this.values = new Map();       // path → parsed value (only knobs whose field parses)
    this.localErrors = new Map();  // path → message for fields that don't parse
    this.coreError = null;         // {path, message} from the last run, if it failed
    this.controls = new Map();     // path → {knob, input, message, field}
    this.rev = 0;
    this.timer = null;
  }

  async init() {
    this.root.dataset.ready = 'false';
    this.root.dataset.rev = '0';
    const schema = await this.client.call('schema', [], { channel: 'pg-schema' });
    this.knobs = Array.isArray(schema) ? schema : (schema.knobs ?? []);
    const url = readUrlState();
    for (const knob of this.knobs) {
      const key = knobKey(knob);
      let value = knobStart(knob);
      if (url.has(key)) {
        const parsed = parseKnob(knob, url.get(key));
        if ('value' in parsed) value = parsed.value;
      }
      this.values.set(knob.path, value);
    }
    this._build();
    this._showActive();
    await this._run();
  }

  _build() {
    this.errorBox = el('div', { class: 'form-errors', role: 'alert', hidden: true });
    const groups = new Map();
    for (const knob of this.knobs) {
      const group = knob.path.replace(/^\//, '').split('/')[0] || 'scenario';
      if (!groups.has(group)) groups.set(group, []);
      groups.get(group).push(knob);
    }
    // The strategy is the first thing to pick: its group goes first.
    const order = [...groups.keys()].sort((a, b) => rank(groups.get(a)) - rank(groups.get(b)));
    const form = el('form', { class: 'knobs', novalidate: true, onsubmit: (e) => e.preventDefault() },
      order.map((group) => el('fieldset', { class: 'knob-group' },
        el('legend', { text: GROUP_LABELS[group] ?? group.replace(/_/g, ' ') }),
        groups.get(group).map((knob) => this._control(knob)))),
      el('div', { class: 'actions' },
        el('button', { type: 'button', class: 'secondary', text: 'Reset to defaults', onclick: () => this._reset() })));

    this.summaryBox = el('div', { class: 'summary-box' });
    // The few numbers that answer "did that change help?", kept in view while a knob moves.
    this.headline = el('dl', { class: 'run-headline', 'data-part': 'headline' });
    this.statusBox = el('p', { class: 'run-status', 'aria-live': 'polite' });
    const chartBox = el('div', { class: 'chart-stack' });
    const logBox = el('div', { class: 'logs' });
    // Cluster runs: the per-layer diagnosis view (diagnosis.js), drawn when opened.
    const diagnosisBody = el('div');
    this.diagnosis = new DiagnosisView(diagnosisBody, { title: 'Diagnosis view: each layer in its operators\' words', syncKey: 'pg-diagnosis' });
    this.diagnosisBox = el('details', { class: 'pg-diagnosis', hidden: true, ontoggle: () => {
      if (this.diagnosisBox.open && this.diagnosisResult) this.diagnosis.render(this.diagnosisResult);
    } }, el('summary', { text: 'Diagnosis view (Karpenter, kube-scheduler, KAI, free GPUs per node)' }), diagnosisBody);
    this.specBox = el('pre', { class: 'spec' });
    const spec = el('details', { class: 'hpa-spec' },
      el('summary', { text: 'The autoscaler this run used (the strategy expanded to an HPA spec)' }), this.specBox);
    // The alternative to the knobs: a whole scenario as YAML, run on demand into the same results.
    // A knob run still waiting for its debounce was asked for before this one: it must not replace it.
    this.yaml = new ScenarioYaml({ onRun: (scenario, source) => { clearTimeout(this.timer); return this._run({ scenario, source }); } });
    this.sourceBox = el('p', { class: 'run-source', 'data-part': 'source', 'aria-live': 'polite' });
    this.body.replaceChildren(el('div', { class: 'playground-grid' },
      this.headline,
      this.yaml.root,
      el('div', { class: 'knob-column' }, this.errorBox, form),
      el('div', { class: 'result-column' },
        this.sourceBox,
        this.statusBox,
        this.summaryBox,
        chartBox,
        spec,
        csvButtons({
          client: this.client, channel: 'pg-csv', filePrefix: 'playground',
          getRun: () => this.lastRun ?? null,
          onError: (error) => { this.statusBox.textContent = `CSV export failed: ${error.message}`; },
        }),
        this.diagnosisBox,
        logBox)));
    this.charts = new RunCharts(chartBox, { syncKey: 'playground', nodesWhenPresent: true });
    this.log = new DecisionLog(logBox, { runName: 'playground', title: 'Decision log' });
  }

  _control(knob) {
    const id = `pg-${knob.path.replace(/^\//, '').replace(/[^A-Za-z0-9_-]/g, '-')}`;
    const message = el('div', { class: 'field-error', id: `${id}-error`, 'aria-live': 'polite' });
    const value = this.values.get(knob.path);
    const unit = knob.unit ? el('span', { class: 'unit', text: knob.unit }) : null;
    let input;
    if (knob.type === 'enum') {
      input = el('select', { id, 'aria-describedby': message.id },
        knobChoices(knob).map((c) => el('option', { value: String(c.value), text: c.label, selected: String(c.value) === String(value) })));
    } else if (knob.type === 'boolean') {
      input = el('input', { type: 'checkbox', id, checked: Boolean(value), 'aria-describedby': message.id });
    } else {
      input = el('input', {
        type: 'number', id, 'aria-describedby': message.id,
        min: knob.min ?? undefined, max: knob.max ?? undefined,
        step: knob.step ?? (knob.type === 'integer' ? 1 : 'any'),
        inputmode: knob.type === 'integer' ? 'numeric' : 'decimal',
        value: formatKnob(knob, value),
      });
    }
    const read = () => (knob.type === 'boolean' ? String(input.checked) : input.value);
    input.addEventListener(knob.type === 'number' || knob.type === 'integer' ? 'input' : 'change', () => this._changed(knob, read()));
    const title = [knob.path, knob.min !== undefined && knob.max !== undefined ? `range ${knob.min}–${knob.max}` : '', knob.description ?? knob.help ?? '']
      .filter(Boolean).join(' · ');
    const field = el('div', { class: `field field-${knob.type}`, dataset: { path: knob.path }, title },
      knob.type === 'boolean'
        ? el('div', { class: 'check' }, input, el('label', { for: id, text: knob.label ?? knob.path }))
        : [el('label', { for: id, text: knob.label ?? knob.path }), el('div', { class: 'input-row' }, input, unit)],
      message);
    this.controls.set(knob.path, { knob, input, message, field });
    return field;
  }

  _changed(knob, text) {
    const parsed = parseKnob(knob, text);
    if ('error' in parsed) {
      this.localErrors.set(knob.path, parsed.error);
    } else {
      this.localErrors.delete(knob.path);
      this.values.set(knob.path, parsed.value);
      const isDefault = String(parsed.value) === String(knobStart(knob));
      updateParams({ [knobKey(knob)]: isDefault ? null : formatKnob(knob, parsed.value) });
    }
    this._showErrors();
    this._showActive();
    this._schedule();
  }

  /** Greys out the knobs the other knobs' values leave out of the scenario (knobActive). */
  _showActive() {
    for (const { knob, input, field } of this.controls.values()) {
      const active = knobActive(knob, this.knobs, this.values);
      input.disabled = !active;
      field.classList.toggle('inactive', !active);
    }
  }

  /** The knobs that differ from where the playground starts, as the route's parameters. */
  routeParams() {
    const params = {};
    for (const knob of this.knobs ?? []) {
      const value = this.values.get(knob.path);
      if (String(value) !== String(knobStart(knob))) params[knobKey(knob)] = formatKnob(knob, value);
    }
    return params;
  }

  /** The route changed (an edited address, back or forward): take the knob values from it. */
  fromRoute() {
    const url = readUrlState();
    let changed = false;
    for (const knob of this.knobs) {
      const key = knobKey(knob);
      const parsed = url.has(key) ? parseKnob(knob, url.get(key)) : { value: knobStart(knob) };
      if ('value' in parsed && String(parsed.value) !== String(this.values.get(knob.path))) {
        this.values.set(knob.path, parsed.value);
        this._writeControl(knob, parsed.value);
        changed = true;
      }
    }
    if (changed) {
      this._showActive();
      this._schedule();
    }
  }

  _writeControl(knob, value) {
    const { input } = this.controls.get(knob.path);
    if (knob.type === 'boolean') input.checked = Boolean(value);
    else input.value = formatKnob(knob, value);
    this.localErrors.delete(knob.path);
  }

  _reset() {
    const changes = {};
    for (const knob of this.knobs) {
      this.values.set(knob.path, knobStart(knob));
      this._writeControl(knob, knobStart(knob));
      changes[knobKey(knob)] = null;
    }
    updateParams(changes);
    this._showErrors();
    this._showActive();
    this._schedule();
  }

  _schedule() {
    clearTimeout(this.timer);
    if (this.localErrors.size) return;  // nothing to run until every field parses
    this.timer = setTimeout(() => this._run(), DEBOUNCE_MS);
  }

  /**
   * Runs a scenario and shows it: the knob form's (the default), or `yaml` ({scenario, source}: a
   * scenario written as YAML, whose errors go back to its editor: the returned promise rejects).
   */
  async _run(yaml = null) {
    const scenario = yaml ? yaml.scenario : buildScenario(this.knobs, this.values);
    this.statusBox.textContent = 'Running…';
    this.note?.done();
    const note = workNote(this.statusBox, this.client, { id: 'pg-run-progress' });
    this.note = note;
    try {
      // A cluster run also reports what the diagnosis view reads (the scenario as built is kept).
      const clustered = scenario.cluster && ((scenario.cluster.preset ?? 'none') !== 'none' || (scenario.cluster.provisioner ?? 'fixed') !== 'fixed');
      const sent = clustered ? { ...scenario, output: { ...(scenario.output ?? {}), cluster_series: true } } : scenario;
      const result = await this.client.call('run', [JSON.stringify(sent)], {
        channel: 'playground', onProgress: (fraction, label) => note.progress(fraction, label),
      });
      note.done();
      if (!yaml) this.coreError = null;
      this.lastRun = { scenario, result, source: yaml ? yaml.source : null };
      this._render(result, scenario);
      this._showSource(yaml?.source ?? null);
      this.statusBox.textContent = '';
    } catch (error) {
      if (error.name === 'Superseded') {
        if (yaml) throw error;
        return;
      }
      note.done();
      if (error.name === 'Cancelled') {
        this.statusBox.textContent = this.lastRun ? 'Cancelled: the charts still show the previous run.' : 'Cancelled: nothing was run.';
        this.root.dataset.ready = 'true';
        if (yaml) throw error;
        return;
      }
      if (yaml) {
        // The YAML editor shows the error on its line; the results stay as they were.
        this.statusBox.textContent = this.lastRun ? 'The YAML was not run: see the message beside it. The charts still show the previous run.' : 'The YAML was not run: see the message beside it.';
        throw error;
      }
      this.coreError = { path: error.path ?? '', message: error.detail ?? error.message };
      this.statusBox.textContent = this.lastRun
        ? 'The last change was not run: see the message next to the form. The charts still show the previous run.'
        : 'Nothing was run yet: fix the field named next to the form.';
    }
    this._showErrors();
    this.root.dataset.ready = 'true';
  }

  /** Says which scenario the results show: the knob form's, or the one written as YAML. */
  _showSource(source) {
    this.root.dataset.source = source ? 'yaml' : 'knobs';
    this.sourceBox.replaceChildren(...(source
      ? [el('strong', { text: 'Shown: the scenario written as YAML' }),
        ` (${source.file}${source.edited ? ', edited' : ''}), from "Scenario as YAML" above. The knobs are not in it; moving one runs the knob form again.`]
      : [el('strong', { text: 'Shown: the knob form\'s scenario.' })]));
  }

  _render(result, scenario) {
    renderSummaryTiles(this.summaryBox, result.summary);
    renderHeadline(this.headline, result.summary);
    this.charts.update(result.series, {}, RunCharts.marksFor(scenario, result));
    this.log.render(result.decisions, result.decision_log);
    this.diagnosisBox.hidden = !hasDiagnosis(result);
    this.diagnosisResult = result;
    if (this.diagnosisBox.open && hasDiagnosis(result)) this.diagnosis.render(result);
    this.specBox.textContent = result.autoscaler ? JSON.stringify(result.autoscaler, null, 2) : '(not reported)';
    this.rev += 1;
    // What was run, for tests and for anyone inspecting the page: the latest change always wins.
    Object.assign(this.summaryBox.firstElementChild.dataset, { rev: String(this.rev), scenario: JSON.stringify(scenario) });
    this.root.dataset.rev = String(this.rev);
  }

  /** Shows parse errors and the core's error next to the form and on the fields they name. */
  _showErrors() {
    const errors = [...this.localErrors].map(([path, message]) => ({ path, message }));
    if (this.coreError) errors.push(this.coreError);
    for (const { input, message, field } of this.controls.values()) {
      input.removeAttribute('aria-invalid');
      field.classList.remove('invalid');
      message.textContent = '';
    }
    const items = errors.map(({ path, message }) => {
      const control = this._controlFor(path);
      if (control) {
        control.input.setAttribute('aria-invalid', 'true');
        control.field.classList.add('invalid');
        control.message.textContent = message;
      }
      return el('li', {},
        control
          ? el('button', { type: 'button', class: 'link', text: path, onclick: () => control.input.focus() })
          : el('code', { text: path || '(scenario)' }),
        ` ${message}`);
    });
    this.errorBox.hidden = items.length === 0;
    this.errorBox.replaceChildren(...(items.length ? [el('p', { text: 'Not run yet:' }), el('ul', {}, items)] : []));
  }

  /** The control a JSON path is about: the knob with that path, or the closest parent path. */
  _controlFor(path) {
    if (this.controls.has(path)) return this.controls.get(path);
    let best = null;
    for (const [knobPath, control] of this.controls) {
      if (path.startsWith(`${knobPath}/`) && (!best || knobPath.length > best[0].length)) best = [knobPath, control];
    }
    return best ? best[1] : null;
  }
}

function rank(knobs) {
  return knobs.some((k) => /strategy$/.test(k.path)) ? 0 : 1;
}
