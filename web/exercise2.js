// Exercise 2 panel: the learner writes the GPU NodePool in YAML; the core checks it on every edit,
// grades it (criteria, then a simulated day against a reference pool), and the day can be re-run
// here for its charts. Progress (the text and the last grade) is kept per seed; the attempt history
// and the gated explanation (the reference NodePool) come from the shared panel frame.
import { stringify } from 'yaml';

import { RUN_CHARTS, RunCharts, chartMax, withNodesChart } from './charts.js';
import { DecisionLog } from './decision-log.js';
import {
  ExercisePanel, collectAnswers, parametersTable, questionField, questionMark, variantBar, whileBusy,
} from './exercise-kit.js';
import { NodePoolEditor } from './nodepool-editor.js';
import { formatNumber, renderSummaryTiles, summaryField } from './summary.js';
import { el, renderText } from './text.js';

const DEFINITION_URL = 'exercises/ex2-nodepool.json';

const PARAMS = {
  slo_kind_text: { label: 'Service' },
  slo_kind: null,  // the code behind slo_kind_text
  batch: null,     // idem
  ttft_target_s: { label: 'P99 TTFT target', unit: 's' },
  attainment_pct: { label: 'Requests within the target', unit: '%' },
  model_load_s: { label: 'Model load', unit: 's' },
  web_replicas: { label: 'Web-tier pods' },
  web_cpu: { label: 'CPU per web pod', unit: 'cores' },
  web_memory_gib: { label: 'Memory per web pod', unit: 'GiB' },
  cost_margin_pct: { label: 'Allowed cost above the reference', unit: '%' },
};

// The grader's `run` next to its `reference` (docs/wasm-api.md): summary fields, labelled as summary.js labels them.
const DAY_ROWS = ['node_cost_usd', 'slo_attainment', 'ttft_p99_s', 'num_requests', 'num_dropped', 'num_replica_evictions',
  'spot_interruptions', 'non_gpu_pods_on_gpu_nodes', 'nodes_launched'].map((key) => [key, ...(summaryField(key) ?? [key, ''])]);

const DAY_CHARTS = RUN_CHARTS.filter((spec) => ['replicas', 'waiting', 'dropped'].includes(spec.id));

export class Exercise2Panel extends ExercisePanel {
  constructor(root, client) {
    super(root, client, { prefix: 'ex2', definitionUrl: DEFINITION_URL, progress: { text: null, graded: null } });
  }

  /** Shows the variant with the learner's saved text and grade for it. */
  async _show() {
    this._render();
    if (this.progress.data.graded?.result) this._showGrade(this.progress.data.graded.result);
  }

  _render() {
    const v = this.variant;
    const text = el('div', { class: 'variant-text prose' });
    renderText(text, v.text ?? '');
    const criteria = el('div', { class: 'criteria-preview' },
      el('h4', { text: 'How it is graded' }),
      el('ul', {}, (v.criteria ?? []).map((c) => el('li', {}, c.label, el('span', { class: 'pts', text: ` (${c.points} pt)` })))));

    this.fields = {};
    const form = el('form', { class: 'questions', novalidate: true, onsubmit: (event) => { event.preventDefault(); this._grade(); } });
    for (const q of v.questions ?? []) {
      const field = questionField(q, { prefix: 'ex2', factories: { nodepool: (question, ctx) => this._nodepoolField(question, ctx) } });
      this.fields[q.id] = field;
      form.append(field.box);
    }
    this.gradeButton = el('button', { type: 'submit', class: 'primary', id: 'ex2-grade', text: 'Grade my NodePool' });
    this.scoreBox = el('span', { class: 'score', 'aria-live': 'polite' });
    form.append(el('div', { class: 'actions' }, this.gradeButton, this.scoreBox));
    this.gradeBox = el('div', { class: 'grade-box', 'data-part': 'grade', hidden: true });
    this.dayBox = el('div', { class: 'day-box', 'data-part': 'day', hidden: true });
    this.explanationBox = el('div', { class: 'explanation-box prose', hidden: true, 'aria-live': 'polite' });

    this.body.replaceChildren(
      variantBar(this),
      el('div', { class: 'variant' },
        el('h3', { text: 'Your variant' }),
        el('div', {}, text, criteria),
        parametersTable(v.params, { labels: PARAMS })),
      el('h3', { text: 'Your NodePool' }),
      form,
      this.gradeBox,
      this._gateBlock(),
      this.explanationBox,
      this._historyBlock(),
      this.dayBox);
  }

  /** The unlocked explanation: its text and the reference NodePool as YAML. */
  _showExplanation(result) {
    const box = this.explanationBox;
    const text = el('div');
    renderText(text, result?.text ?? '');
    const pool = result?.answers?.nodepool;
    box.hidden = false;
    box.dataset.shown = 'true';
    box.replaceChildren(el('h4', { text: 'Explanation' }), text,
      pool ? el('div', { class: 'explain-section' }, el('h5', { text: 'A reference NodePool for this variant' }),
        el('pre', { class: 'nodepool-yaml', text: stringify(pool) })) : null);
  }

  /** The "nodepool" question type: the YAML editor, prefilled with the saved text or the starter. */
  _nodepoolField(q, { prefix, feedback }) {
    const starter = this.variant.starter_yaml ?? '';
    const editor = new NodePoolEditor({
      id: `${prefix}-q-${q.id}`, client: this.client, channel: `${prefix}-check-${q.id}`,
      label: el('span', {}, questionMark(q), q.prompt ?? ''),
      text: this.progress.data.text ?? starter,
      describedBy: feedback.id,
      onInput: (text) => {
        this.progress.data.text = text;
        this.progress.save();
        this._markStale();
      },
    });
    this.editor = editor;
    const reset = el('button', {
      type: 'button', class: 'secondary small', text: 'Start again from the starter',
      onclick: () => {
        if (editor.text !== starter && !window.confirm('Replace your NodePool with the starter? Your text will be lost.')) return;
        editor.setText(starter);
        editor.focus();
      },
    });
    const box = el('div', { class: 'question nodepool-question', dataset: { question: q.id, type: 'nodepool' } },
      editor.root, el('div', { class: 'np-tools' }, reset), feedback);
    return { box, editor, read: () => editor.text, write: (text) => editor.setText(text), parse: () => editor.parse() };
  }

  async _grade() {
    const { answer, problems, typed } = collectAnswers(this.fields);
    const problem = Object.values(problems)[0];
    if (problem || !('nodepool' in answer)) {
      this.scoreBox.textContent = problem ? `Fix this first: ${problem}` : 'Write a NodePool first.';
      this.scoreBox.classList.add('error');
      return;
    }
    await whileBusy(this.gradeButton, async (note) => {
      this.scoreBox.classList.remove('error');
      this.scoreBox.textContent = 'Grading: the lab simulates a day with your NodePool and one with the reference pool…';
      const result = await this._callGrader(answer, {
        onProgress: (fraction, label) => {
          this.scoreBox.textContent = 'Grading: the lab simulates a day with your NodePool and one with the reference pool…';
          note.progress(fraction, label || 'simulating the day');
        },
      });
      if (!result) return;
      this.progress.data.graded = { text: typed.nodepool, result };
      this.progress.save();
      this._showGrade(result);
      if (result.scenario) this._runDay(result.scenario);
    }, { client: this.client });
  }

  _showGrade(result) {
    const criteria = result.criteria ?? [];
    const points = criteria.reduce((sum, c) => sum + Number(c.points ?? 0), 0);
    const max = criteria.reduce((sum, c) => sum + Number(c.max_points ?? 0), 0);
    this.scoreBox.classList.remove('error');
    this.scoreBox.textContent = result.correct ? 'Every criterion met.' : `${criteria.filter((c) => c.ok).length} of ${criteria.length} criteria met.`;
    const box = this.gradeBox;
    box.hidden = false;
    box.dataset.score = String(result.score ?? 0);
    box.dataset.correct = String(Boolean(result.correct));
    box.replaceChildren(
      el('h4', {}, 'Grade: ', el('span', { class: 'grade-score', text: `${trim(points)} of ${trim(max)} points (${Math.round((result.score ?? 0) * 100)} %)` })),
      el('p', { class: 'stale-note', text: 'Your NodePool has changed since this grade: grade it again to see the new verdict.' }),
      el('ol', { class: 'criteria' }, criteria.map((c) => criterionItem(c))),
      result.run ? dayTable(result.run, result.reference) : null,
      result.scenario ? el('div', { class: 'actions' },
        el('button', { type: 'button', class: 'secondary', id: 'ex2-day', text: 'Show the simulated day (charts and decision log)',
                       onclick: () => this._runDay(result.scenario) })) : null);
    this.root.dataset.graded = 'true';
    this._markStale();
  }

  _markStale() {
    const graded = this.progress?.data.graded;
    const stale = Boolean(graded && this.editor && graded.text !== this.editor.text);
    this.gradeBox?.classList.toggle('stale', stale);
  }

  /** Re-runs the graded day (the returned scenario holds the learner's pool) for its charts. */
  async _runDay(scenario) {
    const box = this.dayBox;
    const seed = this.seed;
    box.hidden = false;
    box.dataset.ready = 'false';
    box.replaceChildren(el('h4', { text: "Your pool's simulated day" }), el('p', { class: 'run-status', text: 'Simulating the day again for its charts…' }));
    try {
      const result = await this.client.call('run', [JSON.stringify(scenario)], { channel: 'ex2-day' });
      if (seed !== this.seed) return;
      const tiles = el('div');
      renderSummaryTiles(tiles, result.summary);
      const charts = el('div', { class: 'chart-stack' });
      const logBox = el('div', { class: 'logs' });
      const decisions = result.decisions ?? [];
      // A day holds thousands of controller actions: the rows are built when the log is first opened.
      const details = el('details', { class: 'day-log', ontoggle: () => {
        if (!details.open || logBox.childElementCount) return;
        new DecisionLog(logBox, { runName: 'ex2-day', title: 'Your NodePool, one day' }).render(decisions, result.decision_log);
      } }, el('summary', { text: `Decision log: every controller action of the day (${decisions.length.toLocaleString('en-US')})` }), logBox);
      box.replaceChildren(el('h4', { text: "Your pool's simulated day" }), tiles, charts, details);
      const specs = withNodesChart(DAY_CHARTS, [result.series]);
      const maxima = Object.fromEntries(specs.map((spec) => [spec.id, chartMax(spec, [result.series])]));
      new RunCharts(charts, { syncKey: 'ex2', specs, height: 150 }).update(result.series, maxima, RunCharts.marksFor(scenario, result));
      box.dataset.ready = 'true';
    } catch (error) {
      if (error.name === 'Superseded') return;
      box.replaceChildren(el('p', { class: 'error', text: `Could not run the day: ${error.message}` }));
      box.dataset.ready = 'error';
    }
  }
}

function trim(value) {
  return String(Number(Number(value).toFixed(2)));
}

function criterionItem(c) {
  const partial = !c.ok && Number(c.points) > 0;
  const mark = c.ok ? '✓' : partial ? '◐' : '✗';
  const feedback = el('div', { class: 'feedback-text prose' });
  renderText(feedback, c.feedback ?? '');
  return el('li', { class: 'criterion', dataset: { criterion: c.id, ok: String(Boolean(c.ok)) } },
    el('span', { class: 'verdict', text: mark, 'aria-hidden': 'true' }),
    el('div', {},
      el('div', { class: 'criterion-head' },
        el('span', { class: 'sr-only', text: c.ok ? 'Met: ' : partial ? 'Partly met: ' : 'Not met: ' }),
        el('strong', { text: c.label ?? c.id }),
        el('span', { class: 'pts', text: `${trim(c.points ?? 0)} / ${trim(c.max_points ?? 0)}` })),
      feedback));
}

function dayTable(run, reference = {}) {
  return el('table', { class: 'summary day-table' },
    el('caption', { text: 'The simulated day: your NodePool and the reference pool' }),
    el('thead', {}, el('tr', {},
      el('th', { scope: 'col', text: 'metric' }), el('th', { scope: 'col', text: 'your NodePool' }),
      el('th', { scope: 'col', text: 'reference pool' }))),
    el('tbody', {}, DAY_ROWS.filter(([key]) => key in run || key in (reference ?? {})).map(([key, label, unit]) =>
      el('tr', { dataset: { field: key } },
        el('th', { scope: 'row', text: label }),
        el('td', { text: formatNumber(run[key], unit) }),
        el('td', { text: key in (reference ?? {}) ? formatNumber(reference[key], unit) : '—' })))));
}
