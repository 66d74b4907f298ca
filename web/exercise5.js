// Exercise 5 panel: the consolidation trap's cost. The learner runs the variant's two simulated
// weeks (one after the other: they take seconds each, with a progress bar inside each week), reads
// the evictions, failed requests, SLA breach hours and node cost off them, prices the difference
// per day and per month, and checks it. Each simulation runs once per variant: the weeks as shown
// are kept in IndexedDB (a reload shows them without running them), and what the grader simulated
// (its `simulated` object) is given back to every later grade and explain (in the worker's memory
// and, across reloads, in IndexedDB), so a check after the first one simulates nothing.
import { RUN_CHARTS, RunChart, chartMax, withNodesChart } from './charts.js';
import {
  ExercisePanel, collectAnswers, markStale, parametersTable, progressBar, questionField, renderVerdict, renderVerdicts,
  variantBar, usd, whileBusy,
} from './exercise-kit.js';
import { formatNumber } from './summary.js';
import { el, renderText } from './text.js';

const DEFINITION_URL = 'exercises/ex5-consolidation.json';

// An SLA breach is a clock hour whose P99 TTFT, over the requests that arrived in it, is above
// this. The core counts them (summary.ttft_breach_hours, as the grader does); the page only draws
// the line. The variant text says "exceeds 10 s"; the core's constant is kBreachTtftS.
const BREACH_TTFT_S = 10;

const PARAMS = {
  gpu_hour_usd: { label: 'GPU-hour', format: usd },
  node_hour_usd: { label: 'p5.48xlarge (8 GPUs) per hour', format: usd },
  failed_request_usd: { label: 'Each failed request', format: usd },
  sla_credit_usd: { label: 'SLA credit per breached hour', format: usd },
  model_load_s: { label: 'Model load', unit: 's' },
  night_rps: { label: 'Night traffic', unit: 'req/s' },
  peak_rps: { label: 'Peak traffic', unit: 'req/s' },
  rate_scale: { label: "Load (× the lesson's traffic)" },
};

/** The core's windowed P99 TTFT series (over the scenario's ttft_window_s) with the SLA line. */
function ttftChart(windowS) {
  const span = windowS % 3600 === 0 ? `${windowS / 3600} h` : windowS % 60 === 0 ? `${windowS / 60} min` : `${windowS} s`;
  return {
    id: 'ttft', title: `P99 TTFT over a sliding ${span} window, SLA line at ${BREACH_TTFT_S} s`, unit: 's',
    lines: [
      { key: 'ttft_p99_s', label: 'P99 TTFT', color: '#1d4ed8' },
      { key: 'breach_level_s', label: 'SLA line', color: '#b91c1c', dash: [4, 4] },
    ],
  };
}
const WEEK_CHARTS = RUN_CHARTS.filter((spec) => spec.id === 'replicas' || spec.id === 'dropped');

// The comparison of the two weeks: [id, label, value(week), unit].
const WEEK_ROWS = [
  ['evictions', 'Replicas evicted by consolidation', (w) => w.summary.num_replica_evictions, ''],
  ['failed', 'Failed requests (timed out or evicted)', (w) => w.summary.num_dropped, ''],
  ['failed_by_eviction', '… of them in flight on an evicted replica', (w) => w.summary.num_requests_failed_by_eviction, ''],
  ['breach_hours', `Clock hours with P99 TTFT > ${BREACH_TTFT_S} s`, (w) => w.summary.ttft_breach_hours, ''],
  ['node_cost', 'Node cost (GPU and CPU nodes)', (w) => w.summary.cluster?.node_cost_usd, 'USD'],
  ['gpu_hours', 'GPU-hours paid (GPUs on nodes × hours)', (w) => w.summary.cluster?.gpu_hours_allocatable, 'h'],
  ['nodes_launched', 'Nodes launched', (w) => w.summary.cluster?.nodes_launched, ''],
  ['requests', 'Requests', (w) => w.summary.num_requests, ''],
  ['slo', 'SLO attainment', (w) => w.summary.slo_attainment, 'fraction'],
];

export class Exercise5Panel extends ExercisePanel {
  constructor(root, client) {
    super(root, client, {
      prefix: 'ex5', definitionUrl: DEFINITION_URL, progress: { answers: {}, graded: null },
    });
  }

  _reset() {
    this.weeks = {};
    this.root.dataset.weeks = 'idle';
  }

  async _show(stale) {
    this.runNames = Object.keys(this.variant.scenarios ?? {}).sort((a, b) => (a === 'trap' ? -1 : b === 'trap' ? 1 : 0));
    this._render();
    this._restore();
    const kept = await this.simCache.get('weeks');
    if (stale() || !kept || this.root.dataset.weeks !== 'idle') return;
    if (!this.runNames.every((n) => kept[n]?.summary && kept[n]?.series)) return;
    this.weeks = kept;
    this._renderWeeks();
    this._renderWeekCharts();
    this.weeksStatus.textContent = 'Both weeks as simulated on your last visit (kept in this browser; not simulated again).';
    this.root.dataset.weeks = 'done';
    this.root.dataset.weeksSource = 'cache';
    this.runButton.textContent = 'Run the two weeks again';
  }

  _label(name) {
    const label = this.variant.runs?.[name];
    return `${name === 'trap' ? 'Trap' : name === 'safe' ? 'Safe' : name}: ${typeof label === 'string' ? label : label?.label ?? name}`;
  }

  _render() {
    const v = this.variant;
    const text = el('div', { class: 'variant-text prose' });
    renderText(text, v.text ?? '');
    const baseline = el('button', { type: 'button', class: 'secondary', text: "The lesson's baseline (variant 0)", onclick: () => this.openVariant(0) });

    this.runButton = el('button', { type: 'button', class: 'primary', id: 'ex5-run', text: 'Run the two weeks', onclick: () => this._runWeeks() });
    this.weeksProgress = progressBar('ex5-weeks-progress');
    this.weeksStatus = el('span', { class: 'run-status', 'data-part': 'weeks-status', 'aria-live': 'polite' });
    this.weeksTable = el('div', { class: 'summary-box' });
    this.weeksCharts = el('div', { class: 'two-up' });

    this.fields = {};
    const form = el('form', { class: 'questions', novalidate: true, onsubmit: (event) => { event.preventDefault(); this._grade(); } });
    for (const q of v.questions ?? []) {
      const field = questionField({ ...q, unit_prefix: q.type === 'number' && /_usd$/.test(q.id) ? 'USD' : undefined }, {
        prefix: 'ex5', onChange: (id) => this._answerChanged(id),
      });
      this.fields[q.id] = field;
      form.append(field.box);
    }
    this.checkButton = el('button', { type: 'submit', class: 'primary', id: 'ex5-check', text: 'Check answer' });
    this.scoreBox = el('span', { class: 'score', 'aria-live': 'polite' });
    this.gradeProgress = progressBar('ex5-grade-progress');
    form.append(el('div', { class: 'actions' }, this.checkButton, this.scoreBox), this.gradeProgress.root);
    this.formulaBox = el('div', { class: 'formula-box prose', id: 'ex5-formula', hidden: true, 'aria-live': 'polite' });
    this.explanationBox = el('div', { class: 'explanation-box prose', hidden: true, 'aria-live': 'polite' });

    this.body.replaceChildren(
      variantBar(this, { extra: [baseline] }),
      el('div', { class: 'variant' },
        el('h3', { text: `Your variant${this.seed === 0 ? ": the lesson's baseline" : ''}` }),
        text,
        parametersTable(v.params, { labels: PARAMS })),
      el('h3', { text: 'The two weeks' }),
      el('p', { class: 'hint-text', text: `Each run simulates 7 days of the same requests (a few seconds each; they run one after the other). Answers to within ${Math.round((v.tolerance ?? 0.05) * 100)} % count.` }),
      el('div', { class: 'actions' }, this.runButton, this.weeksStatus),
      this.weeksProgress.root,
      this.weeksTable,
      this.weeksCharts,
      el('h3', { text: 'Your answers' }),
      form,
      this.formulaBox,
      this._gateBlock(),
      this.explanationBox,
      this._historyBlock());
  }

  /** Runs the weeks one after the other (each blocks the worker for seconds) and shows them as they come. */
  async _runWeeks() {
    const generation = this.generation;
    this.weeks = {};
    this.root.dataset.weeks = 'running';
    delete this.root.dataset.weeksSource;
    this.weeksCharts.replaceChildren();
    this._renderWeeks();
    const times = [];
    await whileBusy(this.runButton, async (note) => {
      try {
        for (const [i, name] of this.runNames.entries()) {
          const week = `Week ${i + 1} of ${this.runNames.length}: ${this._label(name)}`;
          this.weeksStatus.textContent = `Simulating ${week}…`;
          this.weeksProgress.show(0, week);
          const scenario = structuredClone(this.variant.scenarios[name]);
          // The summary holds the breach hours; neither the decision log nor the request log is shown here.
          scenario.output = { ...(scenario.output ?? {}), decisions: false, requests: false };
          const started = performance.now();
          const result = await this.client.call('run', [JSON.stringify(scenario)], {
            channel: `ex5-week-${name}`, onProgress: (fraction, label) => {
              this.weeksProgress.show(fraction, label ? `Week ${i + 1} of ${this.runNames.length}: ${label}` : week);
              note.progress((i + Number(fraction)) / this.runNames.length, `week ${i + 1} of ${this.runNames.length}${label ? `, ${label}` : ''}`);
            },
          });
          if (generation !== this.generation) return;
          times.push((performance.now() - started) / 1000);
          this.weeks[name] = { summary: result.summary, series: chartSeries(result.series), ttftWindowS: scenario.metrics?.ttft_window_s ?? 60 };
          this._renderWeeks();
        }
        this._renderWeekCharts();
        this.weeksStatus.textContent = `Both weeks simulated (${times.map((t) => `${t.toFixed(1)} s`).join(' and ')}); kept in this browser, so a reload shows them without simulating them again.`;
        this.root.dataset.weeks = 'done';
        this.runButton.textContent = 'Run the two weeks again';
        await this.simCache.put('weeks', this.weeks);
      } catch (error) {
        if (error.name === 'Superseded' || generation !== this.generation) return;
        if (error.name === 'Cancelled') {
          this.weeksStatus.textContent = 'Cancelled: run the weeks again when you want them.';
          this.root.dataset.weeks = 'idle';
          return;
        }
        this.weeksStatus.textContent = `Could not run the weeks: ${error.message}`;
        this.weeksStatus.classList.add('error');
        this.root.dataset.weeks = 'error';
      } finally {
        this.weeksProgress.hide();
      }
    }, { client: this.client });
  }

  _renderWeeks() {
    const names = this.runNames;
    this.weeksTable.replaceChildren(el('table', { class: 'summary weeks-table', id: 'ex5-weeks' },
      el('caption', { text: `The two simulated weeks (variant ${this.seed}): totals over 7 days` }),
      el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: 'metric' }),
        names.map((n) => el('th', { scope: 'col', text: this._label(n) })))),
      el('tbody', {}, WEEK_ROWS.map(([id, label, value, unit]) => el('tr', { dataset: { field: id } },
        el('th', { scope: 'row', text: label }),
        names.map((n) => el('td', { dataset: { run: n }, text: this.weeks[n] ? formatNumber(value(this.weeks[n]), unit) : '…' })))))),
    el('p', { class: 'hint-text', text: `Breach hours: clock hours whose P99 TTFT, over the requests that arrived in them, is above ${BREACH_TTFT_S} s, as the grader counts them. The TTFT chart below is a sliding-window P99 at each scrape: it can cross the line without a breach hour.` }));
  }

  _renderWeekCharts() {
    const names = this.runNames.filter((n) => this.weeks[n]);
    const seriesList = names.map((n) => this.weeks[n].series);
    const specs = withNodesChart([...WEEK_CHARTS, ttftChart(this.weeks[names[0]]?.ttftWindowS ?? 60)], seriesList);
    const maxima = Object.fromEntries(specs.map((spec) => [spec.id, chartMax(spec, seriesList)]));
    this.weeksCharts.replaceChildren(...names.map((n) => {
      const stack = el('div', { class: 'chart-stack' });
      for (const spec of specs) new RunChart(stack, spec, { syncKey: 'ex5', height: 150 }).update(this.weeks[n].series, maxima[spec.id]);
      return el('section', { class: 'run-column', dataset: { run: n }, 'aria-label': this._label(n) }, el('h4', { text: this._label(n) }), stack);
    }));
  }

  _answerChanged(id) {
    this.progress.data.answers[id] = this.fields[id].read();
    this.progress.save();
    markStale(this.fields, this.progress.data.graded?.answers);
  }

  async _grade() {
    const { answer, problems, typed } = collectAnswers(this.fields);
    for (const [id, message] of Object.entries(problems)) renderVerdict(this.fields[id], { correct: false, feedback: message });
    if (Object.keys(problems).length) return;
    if (Object.keys(answer).length === 0) {
      this.scoreBox.textContent = 'Answer at least one question first.';
      return;
    }
    await whileBusy(this.checkButton, async (note) => {
      this.scoreBox.classList.remove('error');
      this.scoreBox.textContent = 'Checking…';
      // Only the first check of a variant simulates (the grader's weeks are kept afterwards): then the bar shows it.
      const result = await this._gradeShowingProgress(answer, note, {
        scoreBox: this.scoreBox, bar: this.gradeProgress,
        busyText: 'Checking: the grader simulates both weeks once for this variant (kept for every later check)…',
        label: 'the grader simulates the weeks',
      });
      if (!result) return;
      this.progress.data.graded = { answers: typed, result };
      this.progress.save();
      this._showGrade(result, typed);
    }, { client: this.client });
  }

  _showGrade(result, graded) {
    const verdicts = result.questions ?? [];
    const right = renderVerdicts(this.fields, verdicts, graded);
    this.scoreBox.classList.remove('error');
    this.scoreBox.textContent = `${right} of ${verdicts.length} correct`;
    this.formulaBox.hidden = !result.formula;
    if (result.formula) {
      const body = el('div');
      renderText(body, result.formula);
      this.formulaBox.replaceChildren(el('h4', { text: 'How it adds up, with your simulated weeks' }), body);
    }
    this.root.dataset.graded = String(Boolean(result.correct));
    markStale(this.fields, graded);
  }

  _showExplanation(result) {
    const box = this.explanationBox;
    const text = el('div');
    renderText(text, result.text ?? '');
    const answers = Object.entries(result.answers ?? {}).map(([id, value]) => {
      const q = (this.variant.questions ?? []).find((x) => x.id === id);
      return el('li', {}, q?.prompt ? `${q.prompt} ` : '', el('strong', { text: usd(value) }));
    });
    const runs = this.runNames.filter((n) => result[n] && typeof result[n] === 'object' && !Array.isArray(result[n]));
    const keys = [...new Set(runs.flatMap((n) => Object.keys(result[n])))];
    const counts = runs.length ? el('table', { class: 'summary' },
      el('caption', { text: "The grader's counts for the two weeks" }),
      el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: 'count' }), runs.map((n) => el('th', { scope: 'col', text: this._label(n) })))),
      el('tbody', {}, keys.map((k) => el('tr', {}, el('th', { scope: 'row', text: k.replace(/_/g, ' ') }),
        runs.map((n) => el('td', { text: formatNumber(result[n][k], /_usd$/.test(k) ? 'USD' : '') })))))) : null;
    box.hidden = false;
    box.dataset.shown = 'true';
    box.replaceChildren(el('h4', { text: 'Explanation' }), text,
      answers.length ? el('div', { class: 'explain-section' }, el('h5', { text: 'Answers for this variant' }), el('ul', { class: 'answers' }, answers)) : null,
      counts);
  }

  _restore() {
    const data = this.progress.data;
    for (const [id, value] of Object.entries(data.answers ?? {})) this.fields[id]?.write(value);
    if (data.graded?.result) this._showGrade(data.graded.result, data.graded.answers ?? {});
  }
}

// The series the week charts draw (and that the cache keeps): a week has ~40,000 scrapes.
const CHART_KEYS = ['t_s', 'desired_replicas', 'ready_replicas', 'num_dropped', 'ttft_p99_s', 'nodes'];

function chartSeries(series = {}) {
  const kept = Object.fromEntries(CHART_KEYS.filter((k) => Array.isArray(series[k])).map((k) => [k, series[k]]));
  kept.breach_level_s = (series.t_s ?? []).map(() => BREACH_TTFT_S);
  return kept;
}
