// Exercise 1 panel: the learner's variant of the bursty-workload exercise, its two runs side by
// side, the request-by-request comparison of the runs, the questions with grading and the gated
// explanation, the attempt history, the decision logs, and saved progress.
import { RUN_CHARTS, RunCharts, chartMax } from './charts.js';
import { DecisionLog, idPart } from './decision-log.js';
import { csvButtons, linkDecisionTimes, scenarioTitle } from './run-view.js';
import {
  ExercisePanel, collectAnswers, markStale, parametersTable, questionField, renderVerdict, renderVerdicts,
  variantBar, whileBusy,
} from './exercise-kit.js';
import { RequestComparison } from './request-compare.js';
import { renderSummary } from './summary.js';
import { el, renderText } from './text.js';

const DEFINITION_URL = 'exercises/ex1-bursty.json';

/** "9 min" / "9 min 30 s" for a duration in seconds. */
function minutes(s) {
  const m = Math.floor(Number(s) / 60), rest = Math.round(Number(s) - 60 * m);
  return m ? `${m} min${rest ? ` ${rest} s` : ''}` : `${rest} s`;
}

// The variant's parameters in the learner's words (the burst's start and end are in the text).
const PARAMS = {
  quiet_s: { label: 'Quiet start', format: minutes },
  quiet_rps: { label: 'Traffic before the burst', unit: 'requests/s' },
  spike_start_s: { label: 'Burst starts at', format: (s) => `minute ${Math.round(s / 60)}` },
  spike_end_s: { label: 'Burst ends at', format: (s) => `minute ${Math.round(s / 60)}` },
  spike_s: { label: 'Burst lasts', format: minutes },
  spike_rps: { label: 'Traffic during the burst', unit: 'requests/s' },
  tail_rps: { label: 'Traffic after the burst', unit: 'requests/s' },
  timeout_s: { label: 'A client gives up after', unit: 's' },
};

export class Exercise1Panel extends ExercisePanel {
  constructor(root, client) {
    super(root, client, { prefix: 'ex1', definitionUrl: DEFINITION_URL });
  }

  _reset() {
    this.runs = {};
    this.logs = [];
  }

  /** Shows the variant, then runs both of its scenarios. */
  async _show(stale) {
    const variant = this.variant;
    this._renderVariant();
    this._status('Running both scenarios…');
    const names = Object.keys(variant.scenarios ?? {});
    // Each run keeps its request log: the comparison joins the two runs by request id.
    const withRequests = (scenario) => ({ ...scenario, output: { ...(scenario.output ?? {}), requests: true } });
    const results = await Promise.all(names.map((name) =>
      this.client.call('run', [JSON.stringify(withRequests(variant.scenarios[name]))], { channel: `ex1-run-${name}` })));
    if (stale()) return;
    names.forEach((name, i) => { this.runs[name] = { scenario: variant.scenarios[name], result: results[i] }; });
    this._renderRuns(names);
    this._renderComparison(names);
    this._restoreProgress();
  }

  /** The request-by-request comparison of the two runs, in the variant's `compare` order. */
  _renderComparison(names) {
    const order = [this.variant.compare?.first, this.variant.compare?.second].filter((n) => names.includes(n));
    const pair = order.length === 2 ? order : names.slice(0, 2);
    if (pair.length < 2) return;
    const params = this.variant.params ?? {};
    const scenario = this.runs[pair[0]].scenario;
    const burst = Number.isFinite(params.spike_start_s) && Number.isFinite(params.spike_end_s)
      ? { start_s: params.spike_start_s, end_s: params.spike_end_s } : null;
    this.comparison = new RequestComparison({
      prefix: 'ex1',
      runs: pair.map((name) => ({ name, title: this._title(name), requests: this.runs[name].result.requests ?? [],
                                  truncated: Boolean(this.runs[name].result.requests_truncated) })),
      burst,
      durationS: Number(scenario.duration_s ?? 3600),
      timeoutS: Number(scenario.workload?.timeout_s ?? params.timeout_s),
    });
    this.compareBox.replaceChildren(this.comparison.root);
  }

  _renderVariant() {
    const v = this.variant;
    const text = el('div', { class: 'variant-text prose' });
    renderText(text, v.text ?? v.prompt ?? '');

    this.questionsBox = el('div', { class: 'questions-box' });
    this.resultsBox = el('div', { class: 'results' });
    this.logsBox = el('div', { class: 'logs two-up' });
    this.compareBox = el('div', { class: 'compare-box' });
    this.explanationBox = el('div', { class: 'explanation-box prose', hidden: true, 'aria-live': 'polite' });

    this.body.replaceChildren(
      variantBar(this),
      el('div', { class: 'variant' },
        el('h3', { text: 'Your variant' }),
        text,
        parametersTable(v.params ?? v.parameters, { labels: PARAMS })),
      el('h3', { text: 'The two runs' }),
      this.resultsBox,
      this.compareBox,
      el('h3', { text: 'Your answers' }),
      this.questionsBox,
      this._gateBlock(),
      this.explanationBox,
      this._historyBlock(),
      el('h3', { text: 'Decision logs' }),
      el('p', { class: 'hint-text', text: 'Every HPA sync of each run: the replica count it saw, the one it asked for, and why. Open a row (click it, or Enter on it) for the arithmetic.' }),
      this.logsBox);
    this._renderQuestions();
  }

  /** The run's label from the variant ("HPA on DCGM_FI_DEV_GPU_UTIL …"), else a known name. */
  _title(name) {
    const label = this.variant.runs?.[name];
    return typeof label === 'string' ? label : (label?.label ?? scenarioTitle(name, this.runs[name]?.scenario));
  }

  _renderRuns(names) {
    const columns = el('div', { class: 'two-up' });
    const maxima = {};
    for (const spec of RUN_CHARTS) maxima[spec.id] = chartMax(spec, names.map((n) => this.runs[n].result.series));
    const summaryBox = el('div', { class: 'summary-box' });
    this.resultsBox.replaceChildren(summaryBox, columns);
    renderSummary(summaryBox, names.map((name) => ({ name: this._title(name), summary: this.runs[name].result.summary })),
      { caption: `Summary of both runs (variant ${this.seed})` });
    for (const name of names) {
      const run = this.runs[name];
      const chartBox = el('div', { class: 'chart-stack' });
      const column = el('section', { class: 'run-column', dataset: { run: name }, 'aria-label': this._title(name) },
        el('h4', { text: this._title(name) }),
        chartBox,
        csvButtons({
          client: this.client, channel: `ex1-csv-${name}`, filePrefix: `ex1-seed${this.seed}-${name}`,
          getRun: () => this.runs[name], onError: (error) => this._status(`CSV export failed: ${error.message}`, true),
        }));
      columns.append(column);
      new RunCharts(chartBox, { syncKey: 'ex1' }).update(run.result.series, maxima, RunCharts.marksFor(run.scenario, run.result));
    }
    this.logsBox.replaceChildren();
    this.logs = names.map((name) => {
      const log = new DecisionLog(this.logsBox, { runName: name, title: this._title(name) });
      log.render(this.runs[name].result.decisions, this.runs[name].result.decision_log);
      return { name, log };
    });
  }

  _renderQuestions() {
    this.fields = {};
    const form = el('form', { class: 'questions', novalidate: true, onsubmit: (event) => { event.preventDefault(); this._grade(); } });
    for (const q of this.variant.questions ?? []) {
      const field = questionField(q, { prefix: 'ex1', onChange: (id) => this._answerChanged(id) });
      this.fields[q.id] = field;
      form.append(field.box);
    }
    this.scoreBox = el('span', { class: 'score', 'aria-live': 'polite' });
    this.checkButton = el('button', { type: 'submit', class: 'primary', text: 'Check answer', id: 'ex1-check' });
    form.append(el('div', { class: 'actions' }, this.checkButton, this.scoreBox));
    this.questionsBox.replaceChildren(form);
  }

  _answerChanged(id) {
    this.progress.data.answers[id] = this.fields[id].read();
    this.progress.save();
    this._markStale();
  }

  _markStale() {
    markStale(this.fields, this.progress.data.graded?.answers);
  }

  async _grade() {
    const { answer, problems, typed } = collectAnswers(this.fields);
    for (const [id, message] of Object.entries(problems)) {
      this._showFeedback(this.fields[id], { correct: false, feedback: message, hint: '' });
    }
    if (Object.keys(problems).length) return;
    if (Object.keys(answer).length === 0) {
      this.scoreBox.textContent = 'Answer at least one question first.';
      return;
    }
    await whileBusy(this.checkButton, async (note) => {
      const result = await this._callGrader(answer, { onProgress: (fraction, label) => note.progress(fraction, label) });
      if (!result) return;
      this.progress.data.graded = { answers: typed, result };
      this.progress.save();
      this._showGrade(result, typed);
    }, { client: this.client });
  }

  /** @param {object} result the grader's verdicts; @param {object} [graded] the answers as typed then */
  _showGrade(result, graded = this.progress.data.graded?.answers ?? {}) {
    this.scoreBox.classList.remove('error');
    const verdicts = result.questions ?? [];
    const right = renderVerdicts(this.fields, verdicts, graded, (field, verdict) => this._showFeedback(field, verdict));
    this.scoreBox.textContent = `${right} of ${verdicts.length || (this.variant.questions ?? []).length} correct`;
    this.root.dataset.graded = 'true';
    this._markStale();
  }

  _showFeedback(field, verdict) {
    renderVerdict(field, verdict, {
      decorateHint: (hint) => linkDecisionTimes(hint, this.logs),
      extra: this._decisionRefs(verdict.decision_refs),
    });
  }

  /** Buttons for the grader's decision_refs [{run, index?, t_s}] that jump to those log rows. */
  _decisionRefs(refs) {
    if (!Array.isArray(refs) || refs.length === 0) return null;
    const buttons = refs.map((ref) => {
      const entry = this.logs.find(({ name }) => name === ref.run);
      if (!entry) return null;
      const index = Number.isInteger(ref.index) ? ref.index : entry.log.indexAt(ref.t_s);
      if (index < 0) return null;
      return el('button', {
        type: 'button', class: 'secondary small', text: `t = ${ref.t_s} s`,
        title: `Show sync ${index} of ${this._title(ref.run)} in its decision log`,
        'aria-controls': `decision-${idPart(ref.run)}-${index}`,
        onclick: () => entry.log.show(index),
      });
    }).filter(Boolean);
    if (!buttons.length) return null;
    return el('div', { class: 'decision-refs' }, el('span', { text: 'In the decision log:' }), buttons);
  }

  _showExplanation(result) {
    const box = this.explanationBox;
    box.hidden = false;
    box.replaceChildren(el('h4', { text: 'Explanation' }));
    const content = el('div');
    if (typeof result === 'string') {
      renderText(content, result);
    } else {
      const main = result.text ?? result.explanation ?? result.markdown;
      if (typeof main === 'string') renderText(content, main);
      if (result.answers && typeof result.answers === 'object') content.append(this._answerList(result.answers));
      for (const [key, value] of Object.entries(result)) {
        if (['text', 'explanation', 'markdown'].includes(key) && typeof value === 'string') continue;
        if (['answers', 'locked', 'simulated'].includes(key)) continue;
        const section = el('div', { class: 'explain-section' }, el('h5', { text: key.replace(/_/g, ' ') }));
        const inner = el('div');
        if (typeof value === 'string') renderText(inner, value);
        else inner.append(el('pre', { text: JSON.stringify(value, null, 2) }));
        section.append(inner);
        content.append(section);
      }
    }
    linkDecisionTimes(content, this.logs);
    box.append(content);
    box.dataset.shown = 'true';
  }

  /** The variant's answers, with the text of the chosen choice. */
  _answerList(answers) {
    return el('div', { class: 'explain-section' }, el('h5', { text: 'Answers for this variant' }),
      el('ul', { class: 'answers' }, Object.entries(answers).map(([id, value]) => {
        const q = (this.variant.questions ?? []).find((x) => x.id === id);
        const choice = q?.choices?.find((c) => c.id === value);
        return el('li', {}, el('span', { class: 'qid', text: `(${id}) ` }), choice ? choice.text : String(value));
      })));
  }

  _restoreProgress() {
    const data = this.progress.data;
    for (const [id, value] of Object.entries(data.answers ?? {})) this.fields[id]?.write(value);
    if (data.graded?.result) this._showGrade(data.graded.result);
  }
}
