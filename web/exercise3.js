// Exercise 3 panel: a Deployment stuck in Pending. The variant's cluster is simulated here and shown
// in the per-layer diagnosis view (diagnosis.js) beside its decision log; the learner names the layer,
// the root cause, the evidence (the run's own signals) and a fix; the core grades it, applies the fix
// to the same cluster and simulates it again, and the re-run is shown in the diagnosis view too.
import { stringify } from 'yaml';

import { DecisionLog } from './decision-log.js';
import { DiagnosisView } from './diagnosis.js';
import {
  ExercisePanel, clearVerdicts, collectAnswers, markStale, parametersTable, questionField, questionMark, renderVerdicts,
  variantBar, whileBusy,
} from './exercise-kit.js';
import { el, renderText } from './text.js';

const DEFINITION_URL = 'exercises/ex3-pending.json';

const PARAMS = {
  deployment: { label: 'Deployment' },
  replicas: { label: 'Replicas asked for' },
  nodepool: { label: 'GPU NodePool' },
  initial_nodes: { label: 'Nodes when it scaled up' },
  duration_min: { label: 'Simulated', unit: 'minutes' },
  nodes_text: null,
  scheduler_text: null,
  pending_text: null,
};

export class Exercise3Panel extends ExercisePanel {
  constructor(root, client) {
    super(root, client, { prefix: 'ex3', definitionUrl: DEFINITION_URL, progress: { answers: {}, graded: null } });
  }

  _reset() {
    this.run = null;
  }

  async _show(stale) {
    this._render();
    this._restore();
    this.runStatus.textContent = 'Simulating the cluster…';
    try {
      const result = await this.client.call('run', [JSON.stringify(this.variant.scenario)], { channel: 'ex3-run' });
      if (stale()) return;
      this.run = result;
      this.runStatus.textContent = '';
      this.diagnosis.render(result);
      new DecisionLog(this.logBox, { runName: 'ex3-run', title: 'The cluster after the scale-up' }).render(result.decisions ?? [], result.decision_log);
      this.runBox.dataset.ready = 'true';
    } catch (error) {
      if (error.name === 'Superseded' || stale()) return;
      this.runStatus.textContent = `Could not simulate the cluster: ${error.message}`;
      this.runBox.dataset.ready = 'error';
    }
    if (this.progress.data.graded?.result) this._showGrade(this.progress.data.graded.result, { rerun: false });
  }

  _render() {
    const v = this.variant;
    const text = el('div', { class: 'variant-text prose' });
    renderText(text, v.text ?? '');
    this.runStatus = el('p', { class: 'run-status', 'aria-live': 'polite' });
    const diagBox = el('div');
    this.diagnosis = new DiagnosisView(diagBox, { title: `The cluster after the scale-up (pod ${v.pod || '…'} stays Pending)`, syncKey: 'ex3' });
    this.logBox = el('div', { class: 'logs' });
    this.runBox = el('div', { class: 'run-box', 'data-part': 'run', dataset: { ready: 'false' } }, this.runStatus, diagBox,
      el('details', { class: 'day-log' }, el('summary', { text: 'Decision log: every controller action of the run' }), this.logBox));
    const scenario = el('details', { class: 'scenario-yaml' },
      el('summary', { text: 'The cluster as configured (NodePool, the pods\' spec, KAI queues): the scenario the lab simulates' }),
      el('pre', { class: 'nodepool-yaml', text: stringify(v.scenario?.cluster ?? {}) }));

    this.fields = {};
    const form = el('form', { class: 'questions', novalidate: true, onsubmit: (event) => { event.preventDefault(); this._grade(); } });
    const onChange = () => {
      this.progress.data.answers = collectAnswers(this.fields).typed;
      this.progress.save();
      markStale(this.fields, this.progress.data.graded?.typed);
    };
    for (const q of v.questions ?? []) {
      const field = questionField(q, {
        prefix: 'ex3', onChange,
        factories: { multi: (question, ctx) => multiField(question, ctx), fix: (question, ctx) => fixField(question, ctx) },
      });
      this.fields[q.id] = field;
      form.append(field.box);
    }
    this.gradeButton = el('button', { type: 'submit', class: 'primary', id: 'ex3-grade', text: 'Check my diagnosis and apply my fix' });
    this.scoreBox = el('span', { class: 'score', 'aria-live': 'polite' });
    form.append(el('div', { class: 'actions' }, this.gradeButton, this.scoreBox));
    this.fixBox = el('div', { class: 'fix-box', 'data-part': 'fix-run', hidden: true });
    this.explanationBox = el('div', { class: 'explanation-box prose', hidden: true, 'aria-live': 'polite' });

    this.body.replaceChildren(
      variantBar(this),
      el('div', { class: 'variant' }, el('h3', { text: 'Your variant' }), text, parametersTable(v.params, { labels: PARAMS }), scenario),
      el('h3', { text: 'What the cluster shows' }),
      this.runBox,
      el('h3', { text: 'Your diagnosis' }),
      form,
      this.fixBox,
      this._gateBlock(),
      this.explanationBox,
      this._historyBlock());
  }

  _restore() {
    const saved = this.progress.data.answers ?? {};
    for (const [id, value] of Object.entries(saved)) this.fields[id]?.write(value);
  }

  async _grade() {
    const { answer, problems, typed } = collectAnswers(this.fields);
    const problem = Object.values(problems)[0];
    if (problem) {
      this.scoreBox.textContent = `Fix this first: ${problem}`;
      this.scoreBox.classList.add('error');
      return;
    }
    if (!Object.keys(answer).length) {
      this.scoreBox.textContent = 'Answer at least one part first.';
      this.scoreBox.classList.add('error');
      return;
    }
    await whileBusy(this.gradeButton, async (note) => {
      this.scoreBox.classList.remove('error');
      this.scoreBox.textContent = 'Checking: the lab applies your fix and simulates the cluster again…';
      const result = await this._callGrader(answer, { onProgress: (fraction, label) => note.progress(fraction, label) });
      if (!result) return;
      this.progress.data.graded = { typed, result };
      this.progress.save();
      this._showGrade(result, { rerun: true });
    }, { client: this.client });
  }

  _showGrade(result, { rerun }) {
    const typed = this.progress.data.graded?.typed ?? {};
    clearVerdicts(this.fields);
    const right = renderVerdicts(this.fields, result.questions ?? [], typed);
    this.scoreBox.classList.remove('error');
    this.scoreBox.textContent = `${right} of ${(result.questions ?? []).length} parts right · score ${Math.round((result.score ?? 0) * 100)} %`;
    this.root.dataset.graded = 'true';
    this.root.dataset.score = String(result.score ?? 0);
    markStale(this.fields, typed);
    const run = result.fix_run;
    const box = this.fixBox;
    if (!run || !result.fix_scenario) {
      box.hidden = true;
      return;
    }
    box.hidden = false;
    box.dataset.ready = 'false';
    box.dataset.scheduled = String(Boolean(run.scheduled));
    const diag = el('div');
    box.replaceChildren(
      el('h4', { text: 'Your fix, simulated' }),
      el('p', { class: run.scheduled ? 'fix-ok' : 'fix-fail', 'data-part': 'fix-verdict',
                text: run.scheduled ? `After "${run.change}", every pod of the Deployment schedules.` : `After "${run.change}", pod ${run.pod} still stays Pending.` }),
      diag);
    const view = new DiagnosisView(diag, { title: 'The cluster with your fix', syncKey: 'ex3-fix' });
    if (!rerun) {
      diag.replaceChildren(el('button', { type: 'button', class: 'secondary', id: 'ex3-fix-show', text: 'Show the cluster with your fix',
                                          onclick: () => this._runFix(result.fix_scenario, view, diag) }));
      return;
    }
    this._runFix(result.fix_scenario, view, diag);
  }

  async _runFix(scenario, view, box) {
    box.replaceChildren(el('p', { class: 'run-status', text: 'Simulating the cluster with your fix…' }));
    try {
      const result = await this.client.call('run', [JSON.stringify(scenario)], { channel: 'ex3-fix' });
      view.render(result);
      this.fixBox.dataset.ready = 'true';
    } catch (error) {
      if (error.name === 'Superseded') return;
      box.replaceChildren(el('p', { class: 'error', text: `Could not run the fix: ${error.message}` }));
    }
  }

  _showExplanation(result) {
    const box = this.explanationBox;
    const text = el('div');
    renderText(text, result?.text ?? '');
    const a = result?.answers ?? {};
    box.hidden = false;
    box.dataset.shown = 'true';
    box.replaceChildren(el('h4', { text: 'Explanation' }), text,
      el('dl', { class: 'answers' },
        el('dt', { text: 'Layer' }), el('dd', { text: a.layer ?? '' }),
        el('dt', { text: 'Root cause' }), el('dd', { text: a.cause ?? '' }),
        el('dt', { text: 'Evidence' }), el('dd', { text: (a.evidence ?? []).join(', ') }),
        el('dt', { text: 'A fix that works' }), el('dd', { text: a.fix ?? '' })));
  }
}

/** The "multi" question type: a checkbox per signal of the run, each with the run's own text. */
function multiField(q, { prefix, feedback, onChange }) {
  const name = `${prefix}-q-${q.id}`;
  const box = el('fieldset', { class: 'question evidence-question', dataset: { question: q.id, type: 'multi' } },
    el('legend', {}, questionMark(q), q.prompt ?? ''),
    el('div', { class: 'choices' }, (q.choices ?? []).map((c) => {
      const id = `${name}-${c.id}`;
      return el('div', { class: 'choice evidence-choice' },
        el('input', { type: 'checkbox', name, id, value: c.id, 'aria-describedby': feedback.id, onchange: onChange }),
        el('label', { for: id }, el('strong', { text: c.label ?? c.id }), el('span', { class: 'evidence-text', text: ` ${c.text ?? ''}` })));
    })),
    feedback);
  const boxes = () => [...box.querySelectorAll(`input[name="${name}"]`)];
  const read = () => boxes().filter((b) => b.checked).map((b) => b.value).join(',');
  return {
    box, read,
    write: (value) => { const ids = String(value ?? '').split(',').filter(Boolean); for (const b of boxes()) b.checked = ids.includes(b.value); },
    parse: () => (read() === '' ? { empty: true } : { value: read().split(',') }),
  };
}

/** The "fix" question type: a radio per fix the lab can apply, and the value for those that take one. */
function fixField(q, { prefix, feedback, onChange }) {
  const name = `${prefix}-q-${q.id}`;
  const valueId = `${name}-value`;
  const value = el('input', { type: 'text', id: valueId, inputmode: 'decimal', autocomplete: 'off', class: 'number-text', 'aria-describedby': `${valueId}-note`, oninput: onChange });
  const box = el('fieldset', { class: 'question fix-question', dataset: { question: q.id, type: 'fix' } },
    el('legend', {}, questionMark(q), q.prompt ?? ''),
    el('div', { class: 'choices' }, (q.choices ?? []).map((c) => {
      const id = `${name}-${c.id}`;
      return el('div', { class: 'choice' },
        el('input', { type: 'radio', name, id, value: c.id, 'aria-describedby': feedback.id, onchange: onChange }),
        el('label', { for: id, text: c.text ?? c.id }));
    })),
    el('div', { class: 'answer-row' }, el('label', { for: valueId, text: 'Value for a fix that takes one (GPUs; optional)' }), value,
      el('span', { class: 'hint-text', id: `${valueId}-note`, text: 'Leave it empty and the lab picks enough for every replica.' })),
    feedback);
  const chosen = () => box.querySelector(`input[name="${name}"]:checked`)?.value ?? '';
  const read = () => (chosen() ? `${chosen()}${value.value.trim() ? `=${value.value.trim()}` : ''}` : '');
  return {
    box, read,
    write: (text) => {
      const [id, v = ''] = String(text ?? '').split('=');
      for (const r of box.querySelectorAll(`input[name="${name}"]`)) r.checked = r.value === id;
      value.value = v;
    },
    parse: () => {
      if (!chosen()) return { empty: true };
      const raw = value.value.trim();
      if (raw === '') return { value: chosen() };
      const n = Number(raw);
      if (!Number.isFinite(n)) return { error: `"${raw}" is not a number of GPUs` };
      return { value: { id: chosen(), value: n } };
    },
  };
}
