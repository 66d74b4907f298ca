// Shared pieces of the exercise panels: the panel frame (loading a variant), saved progress, the
// variant bar, the variant's parameters, question fields by type (integer,
// number, choice; other types through a factory) and verdicts.
import { AttemptHistory, SimCache } from './attempts.js';
import { workNote } from './progress.js';
import { go } from './router.js';
import { PAGE_KNOBS, parseVariant, randomSeed, rememberVariant } from './state.js';
import { el, renderText } from './text.js';

/**
 * Saved progress for one (exercise, seed) in localStorage, under
 * "gpuscale:progress:<exercise id>:seed=<seed>". `data` starts as a copy of `initial`.
 */
export class Progress {
  constructor(exerciseId, seed, initial = { answers: {}, graded: null, explained: false }) {
    this.key = Progress.key(exerciseId, seed);
    this.data = structuredClone(initial);
    try {
      const saved = JSON.parse(localStorage.getItem(this.key) ?? 'null');
      if (saved && typeof saved === 'object') Object.assign(this.data, saved);
    } catch {
      // unreadable or unavailable storage: start fresh
    }
  }

  static key(exerciseId, seed) {
    return `gpuscale:progress:${exerciseId}:seed=${seed}`;
  }

  save() {
    try {
      localStorage.setItem(this.key, JSON.stringify(this.data));
    } catch {
      // private mode or quota: progress just isn't kept
    }
  }
}

/**
 * The frame of an exercise panel: for the variant its route names (main.js calls load(seed)), it
 * fetches the exercise definition and the core's variant for that seed, opens the saved progress, and reports on the panel's status
 * line and `data-ready` ("false", "true" or "error"). A newer load supersedes an older one.
 *
 * A subclass passes {prefix, definitionUrl, progress?} (worker channels are `${prefix}-…`;
 * `progress` is the Progress's initial data) and implements `_show(stale)`, which draws the variant
 * (it may run more and should return early once `stale()`); `_reset()` clears per-variant state
 * before the variant is fetched. After load: seed, definitionText, definition, variant, progress,
 * history (the AttemptHistory of this variant) and simCache (what the grader simulated for it).
 *
 * Grading policy (the exercise's `policy`, judged by the core): the panel places `_gateBlock()`
 * (the Explain button, the sentence saying when the explanation unlocks, "New variant" once it is
 * shown) and `_historyBlock()` (the attempts on this variant, with the export), and implements
 * `_showExplanation(result)`. `_callGrader` sends the history and the cached simulation as the
 * grade's context and records the attempt; after `_show` the frame asks `explain` whether the
 * explanation is unlocked (`root.dataset.explain`: "locked", "unlocked" or "shown").
 */
export class ExercisePanel {
  constructor(root, client, { prefix, definitionUrl, progress }) {
    this.root = root;
    this.client = client;
    this.prefix = prefix;
    this.definitionUrl = definitionUrl;
    this.initialProgress = progress;
    this.body = root.querySelector('[data-part="body"]');
    this.exercise = Number(prefix.replace(/^ex/, ''));
    this.generation = 0;
  }

  /** Loads variant `seed` of the exercise and shows it. */
  async load(seed) {
    const generation = ++this.generation;
    const stale = () => generation !== this.generation;
    this.seed = seed;
    this.root.dataset.ready = 'false';
    this.root.dataset.seed = String(seed);
    delete this.root.dataset.graded;
    delete this.root.dataset.explain;
    this._reset();
    this._status(`Loading variant ${seed}…`);
    try {
      const definition = await loadDefinition(this.definitionUrl);
      this.definitionText = definition.text;
      this.definition = definition.json;
      const variant = await this.client.call('exercise', [definition.text, seed], { channel: `${this.prefix}-variant` });
      if (stale()) return;
      this.variant = variant;
      const fallbackId = this.definitionUrl.replace(/^.*\//, '').replace(/\.json$/, '');
      const exerciseId = String(definition.json.id ?? fallbackId);
      this.exerciseId = exerciseId;
      this.progress = new Progress(exerciseId, seed, this.initialProgress);
      this.history = new AttemptHistory(exerciseId, seed, this.client.version);
      this.simCache = new SimCache(exerciseId, seed, this.client.version);
      await this._show(stale);
      if (stale()) return;
      this._renderHistory();
      await this._refreshGate(stale);
      if (stale()) return;
      this._status('');
      this.root.dataset.ready = 'true';
    } catch (error) {
      if (stale() || error.name === 'Superseded') return;
      this._status(`Could not load the exercise: ${error.message}`, true);
      this.root.dataset.ready = 'error';
    }
  }

  /** A fresh random variant of this exercise (the others keep theirs). */
  newVariant() {
    let seed = randomSeed();
    if (seed === this.seed) seed = (seed + 1) % 1000000;
    this.openVariant(seed);
  }

  /** Opens variant `seed` of this exercise: remembered for it, and a history entry (back returns). */
  openVariant(seed) {
    rememberVariant(this.exercise, seed);
    go({ view: 'exercise', exercise: this.exercise, params: { variant: seed } });
  }

  /** Per-variant state to clear before a new variant is fetched. */
  _reset() {}

  /** Draws the loaded variant (and restores progress); `stale()` turns true once a newer load began. */
  async _show() {}

  _status(text, isError = false) {
    const status = this.root.querySelector('[data-part="status"]');
    status.textContent = text;
    status.classList.toggle('error', isError);
  }

  /**
   * Sends `answer` to the grader for this variant, with the attempt history so far and what an
   * earlier grade or explain simulated (the contract's context), records the attempt (marked
   * revealed_before once the answers were shown), keeps the new `simulated` and unlocks the
   * explanation when the result says so. Returns the result, or null when the seed changed
   * meanwhile, the call was superseded, or it failed (then said in `this.scoreBox`).
   * @param {{onProgress?: (fraction: number, label: string) => void}} [options]
   */
  /**
   * `_callGrader` with `bar` (a progressBar) showing the grader's simulation, which only the first
   * check of a variant runs (its figures are kept afterwards); `busyText` goes to `scoreBox` while
   * it runs and `label` names it when the core gives no label. Records how long the module took and
   * whether it simulated (`data-grade-ms`, `data-grade-simulated`: the tests read them).
   */
  async _gradeShowingProgress(answer, note, { scoreBox, bar, busyText, label }) {
    const result = await this._callGrader(answer, {
      onProgress: (fraction, text) => {
        scoreBox.textContent = busyText;
        bar.show(fraction, text || label);
        note.progress(fraction, text || label);
      },
    });
    bar.hide();
    const timing = this.client.timings.get(`${this.prefix}-grade`);
    if (timing) {
      this.root.dataset.gradeMs = String(Math.round(timing.ms));
      this.root.dataset.gradeSimulated = String(timing.progressed > 0);
    }
    return result;
  }

  async _callGrader(answer, { onProgress } = {}) {
    const seed = this.seed;
    const history = this.history;
    try {
      const context = await this._context();
      const result = await this.client.call('grade', [this.definitionText, seed, JSON.stringify(answer), JSON.stringify(context)],
        { channel: `${this.prefix}-grade`, onProgress });
      if (seed !== this.seed || history !== this.history) return null;
      history.record(answer, result.score, Boolean(this.progress.data.revealed));
      if (result.simulated) await this.simCache.put('simulated', result.simulated);
      this._renderHistory();
      // While locked, ask again: it may open now, or its sentence ("2 more attempts") changes.
      if (this.root.dataset.explain === 'locked') this._refreshGate(() => seed !== this.seed);
      return result;
    } catch (error) {
      if (error.name === 'Cancelled') {
        this.scoreBox.textContent = 'Cancelled: nothing was graded or recorded.';
        this.scoreBox.classList.remove('error');
      } else if (error.name !== 'Superseded') {
        this.scoreBox.textContent = `Could not grade: ${error.message}`;
        this.scoreBox.classList.add('error');
      }
      return null;
    }
  }

  /** The grade's and explain's context: {history, simulated} (either may be null). */
  async _context() {
    return { history: this.history.snapshot(), simulated: (await this.simCache.get('simulated')) ?? null };
  }

  /** Calls `explain` for this variant with the context; resolves to its result ({locked, unlocks} when locked). */
  async _callExplain({ onProgress } = {}) {
    const context = await this._context();
    const result = await this.client.call('explain', [this.definitionText, this.seed, JSON.stringify(context)],
      { channel: `${this.prefix}-explain`, onProgress });
    if (result && result.locked !== true && result.simulated) await this.simCache.put('simulated', result.simulated);
    return result;
  }

  /**
   * The explanation's controls: the Explain button (disabled while locked), the sentence saying
   * when it unlocks or what looking means for later attempts, and "New variant" once it is shown.
   */
  _gateBlock() {
    const id = (part) => `${this.prefix}-${part}`;
    this.gateNote = el('p', { class: 'gate-note hint-text', id: id('gate-note'), 'aria-live': 'polite' });
    this.explainButton = el('button', {
      type: 'button', class: 'secondary', id: id('explain'), text: 'Show the explanation and answers',
      disabled: true, 'aria-describedby': id('gate-note'), onclick: () => this._reveal(),
    });
    this.newVariantButton = el('button', {
      type: 'button', class: 'primary', id: id('new-variant'), text: 'New variant', hidden: true,
      title: 'Load a fresh variant (a new seed) to try again for credit',
      onclick: () => this.newVariant(),
    });
    return el('div', { class: 'gate', 'data-part': 'gate' },
      el('div', { class: 'actions' }, this.explainButton, this.newVariantButton), this.gateNote);
  }

  /** Asks the core whether the explanation is unlocked for this variant, and shows it if already revealed. */
  async _refreshGate(stale = () => false) {
    if (!this.gateNote) return;
    const seed = this.seed;
    // Asking may simulate (exercise 5's weeks, seconds): say so beside the button it unlocks.
    const note = workNote(this.explainButton, this.client, { id: `${this.prefix}-explain-progress` });
    try {
      const result = await this._callExplain({ onProgress: (fraction, label) => note.progress(fraction, label) });
      note.done();
      if (stale() || seed !== this.seed) return;
      this.explainResult = result;
      if (result?.locked === true) {
        this._setGate('locked', unlockSentence(result.unlocks));
      } else if (this.progress.data.revealed) {
        this._showExplanation(result);
        this._setGate('shown');
      } else {
        this._setGate('unlocked');
      }
    } catch (error) {
      note.done();
      if (error.name === 'Superseded' || stale()) return;
      this.gateNote.textContent = error.name === 'Cancelled'
        ? 'Cancelled. Reload the exercise (or open it again) to ask again whether the explanation is unlocked.'
        : `Could not ask whether the explanation is unlocked: ${error.message}`;
      this.gateNote.classList.add('error');
    }
  }

  _setGate(state, sentence = '') {
    this.root.dataset.explain = state;
    this.gateNote.classList.remove('error');
    this.explainButton.disabled = state === 'locked';
    this.explainButton.hidden = state === 'shown';
    this.newVariantButton.hidden = state !== 'shown';
    this.gateNote.textContent = state === 'locked' ? sentence
      : state === 'unlocked'
        ? 'Unlocked. Once you look, later attempts on this variant are recorded as made after the answers were shown and earn no credit; "New variant" then gives you fresh numbers.'
        : 'The explanation and the answers are shown below. Attempts on this variant from now on are marked as made after the answers were shown (no credit): try a new variant for fresh numbers.';
  }

  /** The learner asked to see the explanation: shows it and records that this variant's answers were shown. */
  async _reveal() {
    const result = this.explainResult;
    if (!result || result.locked === true) return;
    this.progress.data.revealed = true;
    this.progress.data.revealed_at = new Date().toISOString();
    this.progress.save();
    this._showExplanation(result);
    this._setGate('shown');
    this._renderHistory();
    this.newVariantButton.focus();
  }

  /** Draws the unlocked explanation (the panel's own layout). */
  _showExplanation() {}

  /** The attempts on this variant: a table and the export for the teacher's `gpuscale grade --history`. */
  _historyBlock() {
    this.historyBox = el('details', { class: 'history', id: `${this.prefix}-history`, 'data-part': 'history' });
    return this.historyBox;
  }

  _renderHistory() {
    const box = this.historyBox;
    if (!box || !this.history) return;
    const attempts = this.history.attempts;
    const exportButton = el('button', {
      type: 'button', class: 'secondary', id: `${this.prefix}-export-history`, text: 'Export attempt history (JSON)',
      onclick: () => this.history.download(),
    });
    const table = attempts.length ? el('table', { class: 'summary history-table' },
      el('caption', { text: `Your attempts on variant ${this.seed}` }),
      el('thead', {}, el('tr', {}, ['#', 'when', 'answer', 'score', 'credit'].map((h) => el('th', { scope: 'col', text: h })))),
      el('tbody', {}, attempts.map((a, i) => el('tr', { dataset: { attempt: String(i + 1), revealedBefore: String(a.revealed_before) } },
        el('th', { scope: 'row', text: String(i + 1) }),
        el('td', {}, el('time', { datetime: a.at, text: new Date(a.at).toLocaleString() })),
        el('td', { text: answerText(a.answer) }),
        el('td', { text: `${Math.round(Number(a.score) * 100)} %` }),
        el('td', { text: a.revealed_before ? 'none: made after the answers were shown' : 'counts' }))))) : el('p', { text: 'No attempt on this variant yet.' });
    box.replaceChildren(
      el('summary', { text: `Your attempts on this variant (${attempts.length})` }),
      table,
      el('div', { class: 'actions' }, exportButton,
        el('span', { class: 'hint-text', text: `A teacher re-grades the file with: gpuscale grade ${this.exerciseId} --seed ${this.seed} --history ${this.history.fileName}` })));
    box.dataset.count = String(attempts.length);
  }
}

/** "after your first attempt" → "The explanation and this variant's answers unlock after your first attempt." */
export function unlockSentence(unlocks) {
  const text = String(unlocks ?? '').trim().replace(/\.$/, '');
  if (!text) return 'The explanation and the answers are locked for now.';
  if (/^(after|once|when|as soon as|if)\b/i.test(text)) return `Locked: the explanation and this variant's answers unlock ${text.charAt(0).toLowerCase()}${text.slice(1)}.`;
  return `Locked: ${text.charAt(0).toUpperCase()}${text.slice(1)}.`;
}

/** One attempt's answer in a few words: "a = 12, b = cold_start_zero"; objects (a NodePool) by name. */
function answerText(answer) {
  if (!answer || typeof answer !== 'object') return '';
  return Object.entries(answer).map(([id, value]) => {
    if (value !== null && typeof value === 'object') return `${id}: ${value.metadata?.name ? `NodePool ${value.metadata.name}` : 'object'}`;
    return `${id} = ${value}`;
  }).join(', ');
}

const definitions = new Map();  // url → Promise<{text, json}>

/** An exercise definition file, fetched once per page: its text (for the core) and parsed JSON. */
export function loadDefinition(url) {
  if (!definitions.has(url)) {
    definitions.set(url, (async () => {
      const response = await fetch(url);
      if (!response.ok) throw new Error(`could not load ${url}: HTTP ${response.status}`);
      const text = await response.text();
      return { text, json: JSON.parse(text) };
    })());
    definitions.get(url).catch(() => definitions.delete(url));  // a failed fetch may be retried
  }
  return definitions.get(url);
}

/**
 * The one place a view says which variant it shows: "Variant 17", "New variant", and a small form
 * to open another variant by its number (a teacher checking a learner's). `extra` adds buttons
 * (e.g. the lesson's baseline).
 */
export function variantBar(panel, { extra = [] } = {}) {
  const id = `${panel.prefix}-variant-input`;
  const input = el('input', {
    type: 'number', id, min: PAGE_KNOBS[0].min, max: PAGE_KNOBS[0].max, step: 1, inputmode: 'numeric',
    value: String(panel.seed), 'aria-describedby': `${panel.prefix}-variant-note`,
  });
  const note = el('span', { class: 'hint-text', id: `${panel.prefix}-variant-note`,
    text: 'The address holds the variant: share the link to share these exact numbers.' });
  const open = el('form', {
    class: 'variant-open',
    onsubmit: (event) => {
      event.preventDefault();
      const value = parseVariant(input.value);
      if (value === null) {
        note.textContent = `"${input.value}" is not a variant: use a whole number from 0 to ${PAGE_KNOBS[0].max.toLocaleString('en-US')}.`;
        note.classList.add('error');
        input.setAttribute('aria-invalid', 'true');
        return;
      }
      panel.openVariant(value);
    },
  },
  el('label', { for: id, text: 'Open variant' }), input,
  el('button', { type: 'submit', class: 'secondary', text: 'Open' }));
  return el('div', { class: 'variant-bar', 'data-part': 'variant-bar' },
    el('p', { class: 'variant-id' }, 'Variant ', el('strong', { 'data-part': 'variant-id', text: String(panel.seed) })),
    el('button', { type: 'button', class: 'secondary', id: `${panel.prefix}-new-variant-top`, text: 'New variant',
                   title: 'Fresh numbers for this exercise only', onclick: () => panel.newVariant() }),
    extra, open, note);
}

/**
 * The variant's parameters as a table (an object map, values either plain or {label?, value, unit?},
 * or a list of {name, value, unit}). `labels` maps a key to {label, unit?, format?(value)}, or to
 * null to leave a parameter out (e.g. a code that another parameter spells out).
 */
export function parametersTable(parameters, { labels = {}, caption = 'Parameters of your variant' } = {}) {
  if (!parameters || typeof parameters !== 'object') return null;
  const rows = [];
  const entries = Array.isArray(parameters)
    ? parameters.map((p) => [p.name ?? p.id ?? p.label ?? '', p])
    : Object.entries(parameters);
  // With labels, their order is the table's (the core's order is alphabetical).
  const order = Object.keys(labels);
  const rank = (key) => (order.includes(key) ? order.indexOf(key) : order.length);
  entries.sort(([a], [b]) => rank(a) - rank(b));
  for (const [key, p] of entries) {
    const known = labels[key];
    if (known === null) continue;
    const boxed = p !== null && typeof p === 'object' && !Array.isArray(p) && 'value' in p;
    const value = boxed ? p.value : p;
    const label = known?.label ?? (boxed ? p.label : null) ?? key;
    const unit = known?.unit ?? (boxed ? p.unit : '') ?? '';
    const text = known?.format ? known.format(value) : `${formatValue(value)}${unit ? ` ${unit}` : ''}`;
    rows.push([label, text]);
  }
  if (!rows.length) return null;
  return el('table', { class: 'parameters' },
    el('caption', { text: caption }),
    el('tbody', {}, rows.map(([label, text]) => el('tr', {},
      el('th', { scope: 'row', text: String(label).replace(/_/g, ' ') }),
      el('td', { text })))));
}

export function formatValue(value) {
  if (typeof value === 'number') return String(Number(value.toPrecision(6)));
  return value !== null && typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** "$1,234.56" for a dollar amount (a number or numeric text). */
export function usd(value) {
  const n = Number(value);
  if (!Number.isFinite(n)) return String(value);
  return `${n < 0 ? '−' : ''}$${Math.abs(n).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}`;
}

/**
 * Parses what a learner typed as a number: "-783.92", "1e3", "$1,234.5". A lone comma is taken
 * for a decimal comma and refused with a pointer to the fix.
 * @returns {{value: number} | {error: string} | {empty: true}}
 */
export function parseNumber(text) {
  let raw = String(text ?? '').trim().replace(/\u2212/g, '-');
  if (raw === '') return { empty: true };
  raw = raw.replace(/^([-+]?)\s*\$\s*/, '$1');
  if (/^[-+]?\d{1,3}(,\d{3})+(\.\d*)?$/.test(raw)) raw = raw.replace(/,/g, '');
  if (raw.includes(',')) return { error: `"${text}" has a comma: write decimals with a point (12.5)` };
  const value = Number(raw);
  if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(raw) || !Number.isFinite(value)) return { error: `"${text}" is not a number` };
  return { value };
}

/**
 * The input for one question. Types: "integer" and "number" (text fields), "choice" (radio
 * buttons); any other type needs `factories[type](q, {prefix, feedback, onChange})` returning
 * {box, read, write, parse}. Ids: the input is `${prefix}-q-${id}`, the feedback `${prefix}-fb-${id}`.
 * @returns {{id, type, box, feedback, read: () => string, write: (v) => void,
 *            parse: () => ({value}|{error}|{empty: true})}}
 */
export function questionField(q, { prefix, onChange = () => {}, factories = {} }) {
  const type = q.type ?? 'integer';
  const feedback = el('div', { class: 'feedback', id: `${prefix}-fb-${q.id}`, 'aria-live': 'polite' });
  const changed = () => onChange(q.id);
  if (factories[type]) {
    const custom = factories[type](q, { prefix, feedback, onChange: changed });
    return { id: q.id, type, feedback, ...custom };
  }
  if (type === 'choice') {
    const name = `${prefix}-q-${q.id}`;
    const box = el('fieldset', { class: 'question', dataset: { question: q.id, type } },
      el('legend', {}, questionMark(q), q.prompt ?? ''),
      el('div', { class: 'choices' }, (q.choices ?? []).map((c) => {
        const id = `${name}-${c.id}`;
        return el('div', { class: 'choice' },
          el('input', { type: 'radio', name, id, value: c.id, 'aria-describedby': feedback.id, onchange: changed }),
          el('label', { for: id, text: c.text ?? c.id }));
      })),
      feedback);
    const read = () => box.querySelector(`input[name="${name}"]:checked`)?.value ?? '';
    return {
      id: q.id, type, box, feedback, read,
      write: (value) => { for (const r of box.querySelectorAll(`input[name="${name}"]`)) r.checked = r.value === value; },
      parse: () => (read() === '' ? { empty: true } : { value: read() }),
    };
  }
  const id = `${prefix}-q-${q.id}`;
  const integer = type === 'integer';
  const input = el('input', integer
    ? { type: 'number', id, step: 1, inputmode: 'numeric', 'aria-describedby': feedback.id, oninput: changed }
    : { type: 'text', id, inputmode: 'decimal', autocomplete: 'off', spellcheck: 'false', class: 'number-text',
        'aria-describedby': feedback.id, oninput: changed });
  const box = el('div', { class: 'question', dataset: { question: q.id, type } },
    el('label', { for: id }, questionMark(q), q.prompt ?? ''),
    el('div', { class: 'answer-row' }, q.unit_prefix ? el('span', { class: 'unit', text: q.unit_prefix }) : null,
      input, q.unit ? el('span', { class: 'unit', text: q.unit }) : null),
    feedback);
  const read = () => input.value.trim();
  return {
    id: q.id, type, box, feedback, input, read,
    write: (value) => { input.value = value ?? ''; },
    parse: () => {
      const raw = read();
      if (raw === '') return { empty: true };
      if (integer) return /^[-+]?\d+$/.test(raw) ? { value: Number(raw) } : { error: `"${raw}" is not a whole number` };
      return parseNumber(raw);
    },
  };
}

/**
 * "(a) " before a question's prompt when its id is a letter the texts refer to; a longer id (an
 * internal name such as daily_usd) is not shown.
 */
export function questionMark(q) {
  return /^[a-z]\d?$/i.test(String(q.id)) ? [el('span', { class: 'qid', text: `(${q.id})` }), ' '] : [];
}

/** The fields' answers: {answer (for the grader), problems (id → message), typed (id → text)}. */
export function collectAnswers(fields) {
  const answer = {};
  const problems = {};
  const typed = {};
  for (const [id, field] of Object.entries(fields)) {
    typed[id] = field.read();
    const parsed = field.parse();
    if ('error' in parsed) problems[id] = parsed.error;
    else if ('value' in parsed) answer[id] = parsed.value;
  }
  return { answer, problems, typed };
}

/**
 * Shows one grader verdict {correct, feedback, hint?} under its question. The hint is shown for a
 * wrong answer unless it repeats the feedback; `decorateHint(node)` may add links to it, and
 * `extra` (a node) follows it.
 */
export function renderVerdict(field, verdict, { decorateHint = () => {}, extra = null } = {}) {
  const correct = Boolean(verdict.correct);
  const text = el('div', { class: 'feedback-text prose' });
  renderText(text, verdict.feedback || (correct ? 'Correct.' : 'Not right yet.'));
  // The mark is for the eye; the same verdict in words leads the text for everyone else.
  text.prepend(el('span', { class: 'sr-only', text: correct ? 'Correct: ' : 'Not right yet: ' }));
  const parts = [el('span', { class: 'verdict', text: correct ? '✓' : '✗', 'aria-hidden': 'true' }), text];
  if (!correct && verdict.hint && verdict.hint.trim() !== String(verdict.feedback ?? '').trim()) {
    const hint = el('div', { class: 'hint prose' });
    renderText(hint, `Hint: ${verdict.hint}`);
    decorateHint(hint);
    parts.push(hint);
  }
  if (!correct && extra) parts.push(extra);
  field.feedback.replaceChildren(...parts);
  field.feedback.dataset.correct = String(correct);
  field.box.dataset.correct = String(correct);
}

/** A question left blank is not "wrong": it just has no verdict yet. */
export function renderUnanswered(field) {
  field.feedback.replaceChildren(el('span', { class: 'verdict', text: '…', 'aria-hidden': 'true' }),
    el('div', { class: 'feedback-text', text: 'No answer yet.' }));
  field.feedback.dataset.correct = 'none';
  delete field.box.dataset.correct;
}

/**
 * Shows the grader's verdicts under their fields, each through `show(field, verdict)`; a wrong
 * verdict on an answer that was blank (`typed`: the answers as typed then) is shown as unanswered.
 * Clears the others first. Returns how many verdicts are correct.
 */
export function renderVerdicts(fields, verdicts, typed, show = renderVerdict) {
  clearVerdicts(fields);
  for (const verdict of verdicts) {
    const field = fields[verdict.id];
    if (!field) continue;
    if ((typed[verdict.id] ?? '') === '' && !verdict.correct) renderUnanswered(field);
    else show(field, verdict);
  }
  return verdicts.filter((v) => v.correct).length;
}

/** Clears every field's verdict. */
export function clearVerdicts(fields) {
  for (const field of Object.values(fields)) {
    field.feedback.replaceChildren();
    delete field.feedback.dataset.correct;
    delete field.box.dataset.correct;
  }
}

/** Feedback for an answer that changed since it was checked is dimmed, not deleted. */
export function markStale(fields, gradedAnswers) {
  for (const [id, field] of Object.entries(fields)) {
    const stale = gradedAnswers ? (gradedAnswers[id] ?? '') !== field.read() : false;
    field.feedback.classList.toggle('stale', stale && field.feedback.childElementCount > 0);
  }
}

/**
 * Disables a button while `work(note)` runs (aria-busy on it), with a workNote beside it when a
 * client is given (the work forwards the core's progress to `note.progress`), and re-enables it
 * afterwards.
 */
export async function whileBusy(button, work, { client = null } = {}) {
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  const note = workNote(button, client);
  try {
    return await work(note);
  } finally {
    note.done();
    button.disabled = false;
    button.removeAttribute('aria-busy');
  }
}

/**
 * A progress bar with its label (the core's "trap week: day 3 of 7"), hidden until shown:
 * {root, show(fraction, label), hide()}. The bar is named by its label.
 */
export function progressBar(id) {
  const label = el('span', { class: 'progress-label', id: `${id}-label` });
  const bar = el('progress', { id, max: 1, value: 0, 'aria-labelledby': `${id}-label` });
  const root = el('div', { class: 'progress-row', hidden: true, 'data-part': id }, bar, label);
  return {
    root,
    show(fraction, text) {
      root.hidden = false;
      bar.value = Math.max(0, Math.min(1, Number(fraction) || 0));
      label.textContent = `${text} (${Math.round(bar.value * 100)} %)`;
      root.dataset.fraction = String(bar.value);
      root.dataset.updates = String(Number(root.dataset.updates ?? 0) + 1);
    },
    hide() {
      root.hidden = true;
    },
  };
}
