// Exercise 4 panel: one autoscaling signal for the prefill pool of a disaggregated server and one for
// its decode pool, with a justification. The grader runs all 36 pairs of signals on the variant (the
// first check of a variant simulates them, with a progress bar; what it simulated is given back to
// every later grade and explain, so later checks are instant) and the page shows them as a 6×6 grid
// of goodput per dollar; a cell opens that pair's run with both pools over time. The learner's
// justification is shown back beside the model explanation once the policy unlocks it.
import { RUN_CHARTS, RunChart, burstBands, chartMax, scaleEvents } from './charts.js';
import { DecisionLog } from './decision-log.js';
import {
  ExercisePanel, collectAnswers, markStale, parametersTable, progressBar, questionField, renderVerdict, renderVerdicts,
  usd, variantBar, whileBusy,
} from './exercise-kit.js';
import { flattenSummary, renderSummary } from './summary.js';
import { el, renderText } from './text.js';

const DEFINITION_URL = 'exercises/ex4-disagg.json';
const ROLES = ['prefill', 'decode'];
const ROLE_PROMPT = {
  prefill: 'Signal for the prefill pool’s autoscaler',
  decode: 'Signal for the decode pool’s autoscaler',
};

/** "5 min" / "4 min 30 s" for a duration in seconds. */
function minutes(s) {
  const m = Math.floor(Number(s) / 60), rest = Math.round(Number(s) - 60 * m);
  return m ? `${m} min${rest ? ` ${rest} s` : ''}` : `${rest} s`;
}

// The variant's parameters in the learner's words; codes that another parameter spells out are left out.
const PARAMS = {
  shape_label: { label: 'Traffic' },
  quiet_rps: { label: 'Before the burst', unit: 'req/s' },
  quiet_s: { label: 'Quiet start', format: minutes },
  burst_rps: { label: 'During the burst', unit: 'req/s' },
  burst_s: { label: 'Burst lasts', format: minutes },
  tail_rps: { label: 'After the burst', unit: 'req/s' },
  duration_min: { label: 'Simulated per pair', unit: 'min' },
  prompt_mean: { label: 'Prompt, mean', unit: 'tokens' },
  output_mean: { label: 'Answer, mean', unit: 'tokens' },
  ttft_slo_s: { label: 'SLO: first token within', unit: 's' },
  itl_slo_s: { label: 'SLO: mean inter-token latency within', unit: 's' },
  timeout_s: { label: 'A client gives up after', unit: 's' },
  max_replicas: { label: 'Replicas per pool', format: (n) => `1 to ${n}` },
  node_s: { label: 'New replica: node', unit: 's' },
  load_s: { label: 'New replica: weights load', unit: 's' },
  warmup_s: { label: 'New replica: warm-up', unit: 's' },
  gpu_hour_usd: { label: 'GPU-hour', format: usd },
  margin_pct: { label: 'A pick passes within', format: (p) => `${p} % of the grid's best pair` },
  shape: null,
  shape_id: null,
  shape_text: null,
  load: null,
};

// Each pool's charts in a run: the replicas its autoscaler asked for and got, then what each of the
// six signals read (KV-cache use as a percentage here; the series holds the fraction).
const chart = (id) => RUN_CHARTS.find((spec) => spec.id === id);
const POOL_CHARTS = [
  chart('replicas'),
  chart('waiting'),
  {
    id: 'kv', title: 'KV-cache use (vllm:kv_cache_usage_perc, mean over ready replicas)', unit: '%', range: [0, 100],
    lines: [{ key: 'kv_cache_pct', label: 'KV cache', color: '#0369a1' }],
  },
  chart('gpu'),
  {
    id: 'fb', title: 'GPU memory used (DCGM_FI_DEV_FB_USED, per GPU)', unit: 'MiB',
    lines: [{ key: 'DCGM_FI_DEV_FB_USED', label: 'memory used', color: '#9333ea' }],
  },
  {
    id: 'ttft', title: 'The pool’s own P99 TTFT over 1 minute', unit: 's',
    lines: [{ key: 'ttft_p99_s', label: 'P99 TTFT', color: '#1d4ed8' }],
  },
];

export class Exercise4Panel extends ExercisePanel {
  constructor(root, client) {
    super(root, client, {
      prefix: 'ex4', definitionUrl: DEFINITION_URL, progress: { answers: {}, graded: null, openCell: null },
    });
    this.charts = [];
  }

  _reset() {
    for (const c of this.charts) c.destroy();
    this.charts = [];
    this.openCell = null;
    this.gridCells = null;
    this.justificationEcho = null;
  }

  async _show(stale) {
    this._render();
    this._restore();
    const open = this.progress.data.openCell;
    if (this.gridCells && Number.isInteger(open) && open >= 0 && open < this.gridCells.length) await this._openCell(open, { stale });
  }

  /** The label of a signal id ("Queue depth"). */
  _label(id) {
    return (this.variant.signals ?? []).find((s) => s.id === id)?.label ?? id;
  }

  _pairText(cell) {
    const c = this.variant.cells?.[cell];
    return c ? `prefill on ${this._label(c.prefill)}, decode on ${this._label(c.decode)}` : `pair ${cell}`;
  }

  _render() {
    const v = this.variant;
    const text = el('div', { class: 'variant-text prose' });
    renderText(text, v.text ?? '');

    this.fields = {};
    const onChange = () => this._answerChanged();
    const factories = { signal: (q, opts) => this._signalInput(q, opts), text: (q, opts) => this._justificationInput(q, opts) };
    for (const role of ROLES) {
      this.fields[role] = questionField({ id: role, type: 'signal', prompt: ROLE_PROMPT[role] }, { prefix: 'ex4', onChange, factories });
    }
    this.fields.justification = questionField({ id: 'justification', type: 'text', prompt: 'Why these two signals?' },
      { prefix: 'ex4', onChange, factories });

    this.checkButton = el('button', { type: 'submit', class: 'primary', id: 'ex4-check', text: 'Run the grid and check' });
    this.scoreBox = el('span', { class: 'score', id: 'ex4-score', 'aria-live': 'polite' });
    this.gradeProgress = progressBar('ex4-grade-progress');
    const form = el('form', { class: 'questions', novalidate: true, onsubmit: (event) => { event.preventDefault(); this._grade(); } },
      el('div', { class: 'ex4-roles' }, this.fields.prefill.box, this.fields.decode.box),
      this.fields.justification.box,
      el('div', { class: 'actions' }, this.checkButton, this.scoreBox),
      this.gradeProgress.root);

    this.gridBox = el('div', { class: 'grid-box', 'data-part': 'grid' },
      el('p', { class: 'hint-text', text: `"Run the grid and check" simulates every pair of signals on your variant once (${(v.cells ?? []).length} runs of ${v.params?.duration_min ?? 30} minutes; a few seconds in all), then shows them here. Later checks reuse those runs.` }));
    this.runStatus = el('p', { class: 'run-status', 'aria-live': 'polite' });
    this.runBody = el('div');
    this.runBox = el('section', { class: 'pair-run', id: 'ex4-run', 'aria-label': 'The run of the pair you opened', dataset: { ready: 'idle' } },
      this.runStatus, this.runBody);
    this.explanationBox = el('div', { class: 'explanation-box', id: 'ex4-explanation', hidden: true, 'aria-live': 'polite' });

    this.body.replaceChildren(
      variantBar(this),
      el('div', { class: 'variant' },
        el('h3', { text: 'Your variant' }),
        text,
        parametersTable(v.params, { labels: PARAMS })),
      el('h3', { text: 'Your answer' }),
      form,
      el('h3', { text: `The grid: all ${(v.cells ?? []).length} pairs on your variant` }),
      this.gridBox,
      this.runBox,
      this._gateBlock(),
      this.explanationBox,
      this._historyBlock());
  }

  /** A select of the variant's signals (label and metric). */
  _signalInput(q, { prefix, feedback, onChange }) {
    const id = `${prefix}-q-${q.id}`;
    const signals = this.variant.signals ?? [];
    // The pick's metric in full under the select, which cuts a long option short.
    const metric = el('p', { class: 'signal-metric hint-text' });
    const showMetric = () => { metric.textContent = signals.find((s) => s.id === select.value)?.metric ?? ''; };
    const select = el('select', { id, name: id, 'aria-describedby': feedback.id, onchange: () => { showMetric(); onChange(); } },
      el('option', { value: '', text: 'Choose a signal…' }),
      signals.map((s) => el('option', { value: s.id, text: `${s.label}: ${s.metric}` })));
    const box = el('div', { class: 'question signal-question', dataset: { question: q.id, type: 'signal' } },
      el('label', { for: id, text: q.prompt }), select, metric, feedback);
    return {
      box, input: select,
      read: () => select.value,
      write: (value) => { select.value = signals.some((s) => s.id === value) ? value : ''; showMetric(); },
      parse: () => (select.value ? { value: select.value } : { empty: true }),
    };
  }

  /** The justification: free text up to the definition's limit, with a counter. Not scored. */
  _justificationInput(q, { prefix, feedback, onChange }) {
    const id = `${prefix}-q-${q.id}`;
    const max = Number(this.variant.justification_max_chars) || 4000;
    const hint = el('p', { class: 'hint-text', id: `${id}-hint`,
      text: 'Not scored. It is kept with each attempt (the history a teacher reads) and shown beside the model explanation once that unlocks.' });
    const counter = el('p', { class: 'char-count hint-text', id: `${id}-count` });
    const area = el('textarea', { id, name: id, rows: 6, maxlength: max, class: 'justification', spellcheck: 'true',
      'aria-describedby': `${hint.id} ${counter.id}`,
      oninput: () => { count(); onChange(); } });
    // The grader counts characters (code points); maxlength counts UTF-16 units, never fewer, so a
    // typed text always fits. A restored or pasted one is checked here too.
    const chars = () => [...area.value].length;
    const count = () => {
      const over = chars() > max;
      counter.textContent = over ? `Too long: ${chars()} characters of at most ${max}.` : `${chars()} of ${max} characters`;
      counter.classList.toggle('error', over);
      area.setAttribute('aria-invalid', String(over));
    };
    count();
    const box = el('div', { class: 'question justification-question', dataset: { question: q.id, type: 'text' } },
      el('label', { for: id, text: q.prompt }), hint, area, counter);
    return {
      box, input: area,
      read: () => area.value,
      write: (value) => { area.value = String(value ?? ''); count(); },
      parse: () => {
        if (area.value.trim() === '') return { empty: true };
        return chars() > max ? { error: counter.textContent } : { value: area.value };
      },
    };
  }

  /** Every change is saved as typed, so a reload loses nothing. */
  _answerChanged() {
    this.progress.data.answers = collectAnswers(this.fields).typed;
    this.progress.save();
    markStale(this.fields, this.progress.data.graded?.answers);
  }

  async _grade() {
    const { answer, problems, typed } = collectAnswers(this.fields);
    if (problems.justification) {
      this.scoreBox.textContent = 'Shorten the justification first (see below the field).';
      this.fields.justification.input.focus();
      return;
    }
    if (!answer.prefill && !answer.decode) {
      this.scoreBox.textContent = 'Pick a signal for at least one pool first.';
      return;
    }
    await whileBusy(this.checkButton, async (note) => {
      this.scoreBox.classList.remove('error');
      this.scoreBox.textContent = 'Checking…';
      // Only the first check of a variant simulates the grid (kept afterwards): then the bar shows it.
      const result = await this._gradeShowingProgress(answer, note, {
        scoreBox: this.scoreBox, bar: this.gradeProgress,
        busyText: `Checking: the grader simulates the ${(this.variant.cells ?? []).length} pairs once for this variant (kept for every later check)…`,
        label: 'the grader simulates the grid',
      });
      if (!result) return;
      this.progress.data.graded = { answers: typed, result };
      this.progress.save();
      this._showGrade(result, typed);
    }, { client: this.client });
  }

  _showGrade(result, graded) {
    const verdicts = (result.questions ?? []).filter((q) => ROLES.includes(q.id));
    const right = renderVerdicts(this.fields, verdicts, graded, (field, verdict) => renderVerdict(field, verdict));
    this.scoreBox.classList.remove('error');
    const mine = result.pair ? ` Your pair: ${Number(result.pair.goodput_per_usd).toFixed(1)} goodput requests per dollar.` : '';
    this.scoreBox.textContent = `${right} of ${ROLES.length} roles pass.${mine}`;
    this.root.dataset.graded = String(Boolean(result.correct));
    this.root.dataset.score = String(result.score);
    this._renderGrid(result);
    if (this.explanationBox.dataset.shown === 'true') this._renderJustificationEcho();
    markStale(this.fields, graded);
  }

  /** The 6×6 grid of goodput per dollar: rows the prefill signal, columns the decode signal. */
  _renderGrid(result) {
    const signals = this.variant.signals ?? [];
    const n = signals.length;
    const cells = result.simulated?.data?.cells ?? [];
    if (!n || cells.length !== n * n) {
      this.gridCells = null;
      return;
    }
    this.gridCells = cells;
    const perUsd = cells.map((c) => Number(c.goodput_per_usd));
    const best = Math.max(...perUsd);
    const mine = Number.isInteger(result.pair?.cell) ? result.pair.cell : null;
    const margin = Number(this.variant.margin ?? 0.1);
    const keysId = 'ex4-grid-keys';
    const cellButton = (i) => {
      const c = cells[i];
      const isBest = perUsd[i] === best;
      const near = !isBest && perUsd[i] >= (1 - margin) * best;
      const marks = [
        i === mine ? el('span', { class: 'cell-mark mine', text: 'your pair' }) : null,
        isBest ? el('span', { class: 'cell-mark best', text: 'best' }) : null,
      ];
      return el('button', {
        type: 'button', class: 'pair-cell', tabindex: '-1', 'aria-controls': 'ex4-run',
        'aria-current': i === mine ? 'true' : undefined,
        style: `--heat: ${best > 0 ? Math.max(0, perUsd[i] / best).toFixed(3) : 0}`,
        dataset: { cell: String(i), best: String(isBest), near: String(near), prefill: c.prefill, decode: c.decode },
        onclick: () => this._openCell(i, { focus: false }),
      },
      el('span', { class: 'sr-only', text: `${this._pairText(i)}: ` }),
      el('span', { class: 'per-usd', text: perUsd[i].toFixed(1) }),
      el('span', { class: 'sr-only', text: ' goodput requests per dollar, ' }),
      el('span', { class: 'cell-meta', text: `SLO ${(Number(c.slo_attainment) * 100).toFixed(1)} %` }),
      el('span', { class: 'sr-only', text: ', ' }),
      el('span', { class: 'cell-meta', text: usd(c.cost_usd) }),
      near ? el('span', { class: 'sr-only', text: `, within ${Math.round(margin * 100)} % of the best` }) : null,
      marks.some(Boolean) ? el('span', { class: 'cell-marks' }, marks) : null);
    };
    const table = el('table', { class: 'pair-grid', id: 'ex4-grid', role: 'grid', 'aria-describedby': keysId,
                                onkeydown: (event) => this._gridKey(event) },
      el('caption', { text: `Goodput requests per dollar of each pair on variant ${this.seed}, with its SLO attainment and cost: rows are the prefill pool's signal, columns the decode pool's` }),
      el('thead', {}, el('tr', {},
        el('th', { scope: 'col', text: 'prefill ↓ · decode →' }),
        signals.map((s) => el('th', { scope: 'col', dataset: { signal: s.id }, text: s.label })))),
      el('tbody', {}, signals.map((s, p) => el('tr', { dataset: { prefill: s.id } },
        el('th', { scope: 'row', dataset: { signal: s.id }, text: s.label }),
        signals.map((_, d) => el('td', { dataset: { cell: String(p * n + d) } }, cellButton(p * n + d)))))));
    const bestCells = perUsd.map((v, i) => (v === best ? i : -1)).filter((i) => i >= 0);
    const legend = el('p', { class: 'hint-text grid-legend' },
      el('span', { class: 'cell-mark mine', text: 'your pair' }), ' the pair you checked',
      mine === null ? ' (pick both signals to see it)' : `: ${this._pairText(mine)}`, '; ',
      el('span', { class: 'cell-mark best', text: 'best' }), ` the grid's best, ${best.toFixed(1)} per dollar${bestCells.length > 1 ? ` (${bestCells.length} pairs tie)` : ''}. `,
      `Darker cells come closer to the best. A signal passes for a role when its best pair comes within ${Math.round(margin * 100)} % of the best.`);
    this.gridBox.replaceChildren(
      el('div', { class: 'table-scroll grid-scroll' }, table),
      legend,
      el('p', { class: 'hint-text', id: keysId, text: 'Open a cell (click it, or Enter) to see that pair’s run below: both pools over time. In the grid the arrow keys move between cells, Home and End to a row’s ends.' }));
    this._setTabStop(mine ?? bestCells[0] ?? 0);
    if (this.openCell !== null) this._markOpen(this.openCell);
  }

  _cellButtons() {
    return [...this.gridBox.querySelectorAll('button.pair-cell')];
  }

  /** One cell of the grid holds the tab stop (roving tabindex); the arrows move it. */
  _setTabStop(index) {
    for (const b of this._cellButtons()) b.tabIndex = Number(b.dataset.cell) === index ? 0 : -1;
  }

  _gridKey(event) {
    const button = event.target.closest?.('button.pair-cell');
    if (!button || event.altKey || event.metaKey) return;
    const n = (this.variant.signals ?? []).length;
    const i = Number(button.dataset.cell);
    let row = Math.floor(i / n), col = i % n;
    switch (event.key) {
      case 'ArrowRight': col = Math.min(n - 1, col + 1); break;
      case 'ArrowLeft': col = Math.max(0, col - 1); break;
      case 'ArrowDown': row = Math.min(n - 1, row + 1); break;
      case 'ArrowUp': row = Math.max(0, row - 1); break;
      case 'Home': col = 0; if (event.ctrlKey) row = 0; break;
      case 'End': col = n - 1; if (event.ctrlKey) row = n - 1; break;
      default: return;
    }
    event.preventDefault();
    const next = row * n + col;
    this._setTabStop(next);
    this._cellButtons().find((b) => Number(b.dataset.cell) === next)?.focus();
  }

  _markOpen(index) {
    for (const b of this._cellButtons()) {
      const open = Number(b.dataset.cell) === index;
      b.dataset.open = String(open);
      b.querySelector('.cell-mark.open')?.remove();
      if (open) {
        const marks = b.querySelector('.cell-marks') ?? b.appendChild(el('span', { class: 'cell-marks' }));
        marks.append(el('span', { class: 'cell-mark open', text: 'shown below' }));
      }
    }
  }

  /** Runs one pair's scenario (the same the grader ran) and shows it below the grid. */
  async _openCell(index, { stale = () => false } = {}) {
    const generation = this.generation;
    const cell = this.variant.cells?.[index];
    if (!cell) return;
    this.openCell = index;
    this.progress.data.openCell = index;
    this.progress.save();
    this._markOpen(index);
    this._setTabStop(index);
    this.runBox.dataset.ready = 'false';
    this.runBox.dataset.cell = String(index);
    this.runStatus.classList.remove('error');
    this.runStatus.textContent = `Simulating ${this._pairText(index)}…`;
    try {
      const result = await this.client.call('run', [JSON.stringify(cell.scenario)], { channel: 'ex4-run' });
      if (stale() || generation !== this.generation || this.openCell !== index) return;
      this._renderRun(index, cell.scenario, result);
      this.runStatus.textContent = `Showing the run of ${this._pairText(index)}.`;
      this.runBox.dataset.ready = 'true';
    } catch (error) {
      if (error.name === 'Superseded' || stale() || generation !== this.generation) return;
      this.runStatus.textContent = error.name === 'Cancelled' ? 'Cancelled: open the cell again to run it.' : `Could not run the pair: ${error.message}`;
      this.runStatus.classList.toggle('error', error.name !== 'Cancelled');
      this.runBox.dataset.ready = 'error';
    }
  }

  _renderRun(index, scenario, result) {
    for (const c of this.charts) c.destroy();
    this.charts = [];
    const pair = this._pairText(index);
    const grid = this.gridCells?.[index];
    const summaryBox = el('div', { class: 'summary-box' });
    renderSummary(summaryBox, compactSummaries([
      { name: 'Whole service', summary: result.summary },
      ...ROLES.map((role) => ({ name: `${capitalised(role)} pool`, summary: result.pools?.[role]?.summary, role })),
    ]), { caption: `Summary of the run: ${pair}` });

    const series = Object.fromEntries(ROLES.map((role) => [role, poolSeries(result.pools?.[role]?.series)]));
    const maxima = Object.fromEntries(POOL_CHARTS.map((spec) => [spec.id, chartMax(spec, ROLES.map((r) => series[r]))]));
    const bands = burstBands(scenario, result);
    const c = this.variant.cells[index];
    const columns = ROLES.map((role) => {
      const stack = el('div', { class: 'chart-stack' });
      const marks = { bands, events: scaleEvents((result.decisions ?? []).filter((d) => d.pool === role)) };
      for (const spec of POOL_CHARTS) {
        const one = new RunChart(stack, spec, { syncKey: 'ex4', height: 140, marks });
        one.update(series[role], maxima[spec.id]);
        this.charts.push(one);
      }
      const title = `${capitalised(role)} pool, HPA on ${this._label(c[role])}`;
      return el('section', { class: 'run-column', dataset: { pool: role }, 'aria-label': title }, el('h5', { text: title }), stack);
    });

    const logBox = el('div', { class: 'logs' });
    new DecisionLog(logBox, { runName: 'ex4-run', title: `Both pools' autoscalers: ${pair}` }).render(result.decisions ?? [], result.decision_log);
    this.runBody.replaceChildren(
      el('h4', { text: `The run of ${pair}` }),
      grid ? el('p', { class: 'hint-text', text: `${Number(grid.goodput_per_usd).toFixed(1)} goodput requests per dollar: of ${Number(grid.num_requests).toLocaleString('en-US')} requests, ${Number(grid.num_dropped).toLocaleString('en-US')} dropped and ${(Number(grid.slo_attainment) * 100).toFixed(1)} % within the SLO, for ${usd(grid.cost_usd)} of GPU time. In the charts the shaded band is the burst and the dashed lines are the pool's scale events.` }) : null,
      summaryBox,
      el('div', { class: 'two-up' }, columns),
      el('details', { class: 'day-log' }, el('summary', { text: 'Decision log: every HPA sync of both pools' }), logBox));
  }

  _showExplanation(result) {
    const box = this.explanationBox;
    const signals = (ids) => (ids ?? []).map((id) => this._label(id)).join(', ') || 'none';
    const model = el('div', { class: 'prose' });
    renderText(model, result.text ?? '');
    const answers = result.answers ? el('div', { class: 'explain-section' }, el('h5', { text: 'Answers for this variant' }),
      el('ul', { class: 'answers' },
        el('li', {}, 'The grid’s best pair: ', el('strong', { text: `prefill on ${this._label(result.answers.prefill)}, decode on ${this._label(result.answers.decode)}` })),
        ROLES.map((role) => el('li', {}, `Signals that pass for the ${role} pool: `, el('strong', { text: signals(result.accepted?.[role]) }))))) : null;
    this.justificationEcho = el('div', { class: 'justification-echo', 'data-part': 'justification-echo' });
    box.hidden = false;
    box.dataset.shown = 'true';
    box.replaceChildren(el('div', { class: 'two-up explain-columns' },
      el('section', { class: 'explain-column', 'aria-labelledby': 'ex4-yours-title' },
        el('h4', { id: 'ex4-yours-title', text: 'Your justification' }), this.justificationEcho),
      el('section', { class: 'explain-column', 'aria-labelledby': 'ex4-model-title' },
        el('h4', { id: 'ex4-model-title', text: 'Model explanation' }), model, answers)));
    this._renderJustificationEcho();
  }

  /** The justification as sent with the last check (else as typed now), beside the model explanation. */
  _renderJustificationEcho() {
    if (!this.justificationEcho) return;
    const graded = this.progress.data.graded?.result;
    const text = typeof graded?.justification === 'string' ? graded.justification : this.fields.justification.read();
    const note = typeof graded?.justification === 'string' ? 'As sent with your last check.' : 'As typed (not checked yet).';
    this.justificationEcho.replaceChildren(
      text.trim() ? el('p', { class: 'justification-text', text }) : el('p', { class: 'hint-text', text: 'You wrote no justification.' }),
      el('p', { class: 'hint-text', text: note }));
  }

  _restore() {
    const data = this.progress.data;
    for (const [id, value] of Object.entries(data.answers ?? {})) this.fields[id]?.write(value);
    if (data.graded?.result) this._showGrade(data.graded.result, data.graded.answers ?? {});
  }
}

function capitalised(text) {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

// Summary rows that say nothing about this exercise while they are 0 in every column.
const QUIET_WHEN_ZERO = new Set(['num_rejected', 'num_replica_evictions', 'num_requests_failed_by_eviction', 'partial_group_gpu_hours']);

/**
 * The summaries of a run (the service's, then each pool's with its `role`) flattened, without the
 * rows that are 0 in every column among the breakdowns (failures by cause, evictions by reason) and
 * QUIET_WHEN_ZERO; a pool leaves out the hand-offs (the service's figures, repeated) and a prefill
 * pool the inter-token latency it never has (it returns one token).
 */
function compactSummaries(runs) {
  const flat = runs.map(({ summary, role }) => {
    const own = { ...(summary ?? {}) };
    if (role) delete own.handoffs;
    if (role === 'prefill') delete own.itl_mean_s;
    return flattenSummary(own);
  });
  const keys = new Set(flat.flatMap((f) => Object.keys(f)));
  for (const key of keys) {
    const quiet = key.includes('.') || QUIET_WHEN_ZERO.has(key);
    if (quiet && key.split('.')[0] !== 'handoffs' && flat.every((f) => !f[key])) for (const f of flat) delete f[key];
  }
  return runs.map((run, i) => ({ name: run.name, summary: flat[i] }));
}

/** A pool's series with KV-cache use as a percentage (the charts' unit). */
function poolSeries(series = {}) {
  return { ...series, kv_cache_pct: (series.kv_cache_usage_perc ?? []).map((v) => (v === null ? null : Number(v) * 100)) };
}
