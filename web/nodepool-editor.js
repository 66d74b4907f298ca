// The NodePool editor: a plain textarea for YAML with line numbers, read on every edit (debounced)
// the way kubectl reads YAML, checked by the core's nodepool_check, and the verdict shown beside
// it: YAML syntax errors with line and column, validity, the failing field, the lint advice.
// The learner's text is never rewritten: comments and layout stay exactly as typed.
import { LineCounter, isMap, isSeq, parseAllDocuments, stringify } from 'yaml';
import { el } from './text.js';

const DEBOUNCE_MS = 300;
const INDENT = '  ';

// kubectl reads YAML with sigs.k8s.io/yaml over go-yaml v2: YAML 1.1 scalars (yes/no/on/off are
// booleans, 010 is octal), but no base-60 numbers (1:30 stays a string). docs/nodepool.md, "Input".
const YAML_OPTIONS = {
  version: '1.1',
  uniqueKeys: true,
  customTags: (tags) => tags.filter((tag) => tag.format !== 'TIME'),
};

// The yaml package's error codes in the learner's words: what is wrong and what to change. The
// package's own sentence follows, for anyone who knows YAML's terms.
const YAML_ADVICE = {
  TAB_AS_INDENT: 'A tab indents this line: YAML indents with spaces only. Replace the tab with spaces.',
  BAD_INDENT: 'This line is indented differently from the lines it belongs with: line it up with its siblings (same number of spaces), or two more spaces under its parent.',
  MISSING_CHAR: 'Something is missing here, often a colon after a key ("key: value") or a closing quote or bracket.',
  MULTILINE_IMPLICIT_KEY: 'This line has a key without its colon, or a key that runs on from the line before: write "key: value" on one line.',
  BLOCK_AS_IMPLICIT_KEY: 'A list or map stands where a key should be: check the colon and the indentation of this line.',
  DUPLICATE_KEY: 'This key appears twice in the same map: keep one of them.',
  UNEXPECTED_TOKEN: 'YAML did not expect this character here: check the line for a stray character, a missing space after a colon or after "-".',
  BAD_SCALAR_START: 'A value cannot start with this character unquoted: put the value in quotes.',
  BAD_DQ_ESCAPE: 'A backslash in double quotes starts an escape YAML does not know: use single quotes, or double the backslash.',
  BLOCK_IN_FLOW: 'A block (indented lines) sits inside brackets or braces: write the whole item inside the brackets, or drop them.',
  MULTIPLE_DOCS: 'A second document starts here ("---"): the editor takes one NodePool (and, optionally, its EC2NodeClass).',
  NON_STRING_KEY: 'A key must be plain text here: write it without brackets or braces.',
  BAD_ALIAS: 'An alias (*name) points at no anchor (&name) above it.',
  RESOURCE_EXHAUSTION: 'The text expands to too much (aliases inside aliases): write the values out.',
};

/** A YAML error in plain words, with the line the learner must fix quoted. */
export function plainYamlError(error, text) {
  const at = error.linePos?.[0];
  const own = error.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '');
  const unclosed = /end with a ([\]}])/.exec(own)?.[1];
  const advice = unclosed ? `A "${unclosed === ']' ? '[' : '{'}" is not closed: end it with "${unclosed}" on the same line, or write the items one per line.`
    : YAML_ADVICE[error.code];
  const line = at ? String(text).split(/\r?\n/)[at.line - 1] : undefined;
  const quoted = line !== undefined && line.trim() !== '' ? ` The line reads: "${line.trim().slice(0, 80)}".` : '';
  return { message: advice ? `${advice}${quoted} (YAML: ${own}.)` : `${own}.${quoted}`, line: at?.line, col: at?.col, code: error.code };
}

/**
 * Reads the editor's text as the one NodePool it must hold. A stream may also hold the
 * EC2NodeClass it refers to (apiVersion karpenter.k8s.aws/…), which is skipped, as the CLI does.
 * @returns {{ok: true, value: any, doc, lineCounter} |
 *           {ok: false, empty?: true, error: {message: string, line?: number, col?: number}}}
 */
export function readNodePoolText(text) {
  if (String(text).trim() === '') return { ok: false, empty: true, error: { message: 'The editor is empty: write a NodePool.' } };
  const lineCounter = new LineCounter();
  const parsed = parseAllDocuments(String(text), { ...YAML_OPTIONS, lineCounter });
  const docs = Array.isArray(parsed) ? parsed : [];
  for (const doc of docs) {
    const error = doc.errors[0];
    // The package appends "at line L, column C:" and a code excerpt; the position is shown apart.
    if (error) return { ok: false, error: plainYamlError(error, text) };
  }
  let values;
  try {
    values = docs.map((doc) => ({ doc, value: doc.toJS({ maxAliasCount: 100 }) }));
  } catch (e) {
    return { ok: false, error: { message: e.message } };
  }
  const pools = values.filter(({ doc, value }) => doc.contents !== null
    && !(value && typeof value === 'object' && String(value.apiVersion ?? '').startsWith('karpenter.k8s.aws/')));
  if (pools.length === 0) return { ok: false, empty: true, error: { message: 'No NodePool in the text (only comments or an EC2NodeClass).' } };
  if (pools.length > 1) {
    const at = lineCounter.linePos(pools[1].doc.range[0]);
    return { ok: false, error: { message: `The text holds ${pools.length} documents besides any EC2NodeClass; write exactly one NodePool.`, line: at.line, col: at.col } };
  }
  // JSON has no dates: a YAML 1.1 timestamp becomes its ISO text, as sigs.k8s.io/yaml makes it.
  const value = JSON.parse(JSON.stringify(pools[0].value ?? null));
  return { ok: true, value, doc: pools[0].doc, lineCounter };
}

/** Unescapes one JSON Pointer segment ("nvidia.com~1gpu" → "nvidia.com/gpu"). */
function unescapeSegment(segment) {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}

/**
 * Where a JSON Pointer (a path from the core) is in the text: the line of its key or item, or of
 * the deepest part that is written when the field itself is not (`exact` false: a default applies).
 * @returns {{line: number, col: number, exact: boolean}}
 */
export function locatePath(doc, lineCounter, pointer) {
  let node = doc.contents;
  let offset = node?.range?.[0] ?? doc.range?.[0] ?? 0;
  let exact = true;
  const segments = pointer ? pointer.split('/').slice(1).map(unescapeSegment) : [];
  for (const segment of segments) {
    if (isMap(node)) {
      const pair = node.items.find((p) => String(p.key?.value ?? p.key) === segment);
      if (!pair) { exact = false; break; }
      offset = pair.key?.range?.[0] ?? offset;
      node = pair.value;
    } else if (isSeq(node) && /^\d+$/.test(segment) && node.items[Number(segment)]) {
      node = node.items[Number(segment)];
      offset = node.range?.[0] ?? offset;
    } else {
      exact = false;
      break;
    }
  }
  const { line, col } = lineCounter.linePos(offset);
  return { line, col, exact };
}

export class NodePoolEditor {
  /**
   * @param {{id: string, client: import('./sim-client.js').SimClient, channel: string, label: Node|string,
   *          text: string, describedBy?: string, onInput?: (text: string) => void,
   *          onChecked?: (state: string) => void}} options
   */
  constructor({ id, client, channel, label, text, describedBy, onInput = () => {}, onChecked = () => {} }) {
    this.id = id;
    this.client = client;
    this.channel = channel;
    this.onInput = onInput;
    this.onChecked = onChecked;
    this.rev = 0;
    this.timer = null;
    this.tabReleased = false;
    this.markers = new Map();  // line → "error" | "warning"

    this.gutter = el('div', { class: 'np-gutter', 'aria-hidden': 'true' });
    const keysHint = el('p', { class: 'hint-text np-keys', id: `${id}-keys`,
      text: 'Tab indents by two spaces, Shift+Tab outdents; press Esc, then Tab, to leave the editor.' });
    this.verdict = el('p', { class: 'np-verdict', id: `${id}-verdict`, 'aria-live': 'polite' });
    this.textarea = el('textarea', {
      id, class: 'np-text', spellcheck: 'false', autocapitalize: 'off', autocomplete: 'off', wrap: 'off',
      'aria-describedby': [`${id}-verdict`, describedBy, `${id}-keys`].filter(Boolean).join(' '),
      oninput: () => this._edited(),
      onkeydown: (event) => this._key(event),
      onfocus: () => { this.tabReleased = false; },
      onscroll: () => { this.gutter.scrollTop = this.textarea.scrollTop; },
    });
    this.textarea.value = text ?? '';
    this.detail = el('div', { class: 'np-detail' });
    this.warningsBox = el('div', { class: 'np-warnings' });
    this.normalised = el('details', { class: 'np-normalised', hidden: true },
      el('summary', { text: 'The NodePool as the API server stores it (defaults filled in)' }),
      el('pre'));
    this.root = el('div', { class: 'np-editor', dataset: { state: 'checking', warnings: '0' } },
      el('label', { for: id, class: 'np-label' }, label),
      el('div', { class: 'np-layout' },
        el('div', {}, el('div', { class: 'np-code' }, this.gutter, this.textarea), keysHint),
        el('div', { class: 'np-report' }, this.verdict, this.detail, this.warningsBox, this.normalised)));
    this._renderGutter();
    this.check();
  }

  get text() {
    return this.textarea.value;
  }

  /** Replaces the whole text (an explicit learner action, e.g. "start again from the starter"). */
  setText(text) {
    this.textarea.value = text ?? '';
    this._edited();
  }

  focus() {
    this.textarea.focus();
  }

  /** The answer for the grader: {value} (the NodePool as JSON), {error}, or {empty: true}. */
  parse() {
    const read = readNodePoolText(this.text);
    if (read.ok) return { value: read.value };
    if (read.empty) return { empty: true };
    const where = read.error.line ? `line ${read.error.line}, column ${read.error.col}: ` : '';
    return { error: `YAML: ${where}${read.error.message}` };
  }

  _edited() {
    this.tabReleased = false;
    this._renderGutter();
    this.onInput(this.text);
    clearTimeout(this.timer);
    this.rev++;  // a check still running for older text is now stale
    this.root.dataset.state = 'pending';
    this.timer = setTimeout(() => this.check(), DEBOUNCE_MS);
  }

  /** Reads the text now and asks the core to check it; the newest text wins. */
  async check() {
    clearTimeout(this.timer);
    const rev = ++this.rev;
    const read = readNodePoolText(this.text);
    this.read = read;
    if (!read.ok) {
      this._show(read.empty ? 'empty' : 'yaml-error', {
        error: { ...read.error, title: read.empty ? 'Nothing to check yet' : 'YAML syntax error' },
      });
      return;
    }
    this.root.dataset.state = 'checking';
    try {
      const result = await this.client.call('nodepool_check', [JSON.stringify(read.value)], { channel: this.channel });
      if (rev !== this.rev) return;
      this._show('valid', { result, read });
    } catch (error) {
      if (error.name === 'Superseded' || rev !== this.rev) return;
      const path = error.path ?? '';
      const at = read.value !== null && typeof read.value === 'object' ? locatePath(read.doc, read.lineCounter, path) : null;
      this._show('invalid', {
        error: { title: 'Not a valid NodePool', path, message: error.detail ?? error.message, line: at?.line, col: at?.col, exact: at?.exact },
      });
    }
  }

  _show(state, { error = null, result = null, read = null }) {
    this.markers.clear();
    const warnings = result?.warnings ?? [];
    this.root.dataset.state = state;
    this.root.dataset.warnings = String(warnings.length);
    this.textarea.setAttribute('aria-invalid', String(state === 'yaml-error' || state === 'invalid'));
    if (state === 'valid') {
      const name = result.nodepool?.metadata?.name;
      this.verdict.replaceChildren(el('span', { class: 'mark', text: '✓', 'aria-hidden': 'true' }),
        ` Valid karpenter.sh/v1 NodePool${name ? ` "${name}"` : ''}. `,
        warnings.length ? `${warnings.length} piece${warnings.length === 1 ? '' : 's'} of advice below.` : 'No advice.');
      this.detail.replaceChildren();
      this.normalised.hidden = !result.nodepool;
      if (result.nodepool) this.normalised.querySelector('pre').textContent = stringify(result.nodepool);
    } else {
      const mark = state === 'empty' ? '…' : '✗';
      this.verdict.replaceChildren(el('span', { class: 'mark', text: mark, 'aria-hidden': 'true' }), ` ${error.title}`);
      const parts = [];
      if (error.line) {
        this.markers.set(error.line, 'error');
        parts.push(this._jump(error.line, error.col, error.exact === false ? `near line ${error.line}` : `line ${error.line}, column ${error.col}`));
      }
      if (error.path) parts.push(el('code', { class: 'np-path', text: error.path }));
      this.detail.replaceChildren(el('p', { class: 'np-error' }, ...parts.flatMap((p) => [p, ' ']),
        el('span', { class: 'np-message', text: error.message })));
      this.normalised.hidden = true;
    }
    this._renderWarnings(warnings, read);
    this._renderGutter();
    this.onChecked(state);
  }

  _renderWarnings(warnings, read) {
    if (!warnings.length) {
      this.warningsBox.replaceChildren();
      return;
    }
    const items = warnings.map((w) => {
      const at = read ? locatePath(read.doc, read.lineCounter, w.path) : null;
      if (at && !this.markers.has(at.line)) this.markers.set(at.line, 'warning');
      return el('li', { class: 'np-warning', dataset: { code: w.code, path: w.path } },
        el('div', { class: 'np-warning-head' },
          el('code', { class: 'np-code-name', text: w.code }), ' ',
          at ? this._jump(at.line, at.col, at.exact ? `line ${at.line}` : `not written (near line ${at.line})`) : null, ' ',
          el('code', { class: 'np-path', text: w.path })),
        el('p', { class: 'np-message', text: w.message }));
    });
    this.warningsBox.replaceChildren(
      el('h5', { text: 'Advice for a GPU pool (lint)' }),
      el('ul', { class: 'np-warning-list' }, items));
  }

  /** A button that puts the caret at (line, col) in the text and selects that line. */
  _jump(line, col, text) {
    return el('button', { type: 'button', class: 'link np-jump', text, title: `Go to line ${line} in the editor`,
                          onclick: () => this.goTo(line, col) });
  }

  goTo(line, col = 1) {
    const lines = this.text.split('\n');
    const index = Math.min(Math.max(line, 1), lines.length) - 1;
    const start = lines.slice(0, index).reduce((n, l) => n + l.length + 1, 0);
    this.textarea.focus();
    this.textarea.setSelectionRange(start + Math.max(0, Math.min(col - 1, lines[index].length)), start + lines[index].length);
    const lineHeight = parseFloat(getComputedStyle(this.textarea).lineHeight) || 20;
    this.textarea.scrollTop = Math.max(0, index * lineHeight - this.textarea.clientHeight / 3);
  }

  _renderGutter() {
    const count = this.text.split('\n').length;
    this.textarea.rows = Math.min(Math.max(count + 1, 14), 36);
    const numbers = [];
    for (let line = 1; line <= count; line++) {
      const marker = this.markers.get(line);
      numbers.push(el('div', { class: marker ? `np-line ${marker}` : 'np-line', text: String(line) }));
    }
    this.gutter.replaceChildren(...numbers);
    this.gutter.scrollTop = this.textarea.scrollTop;
  }

  /** Tab and Shift+Tab indent and outdent the selected lines, until Esc hands Tab back to the page. */
  _key(event) {
    if (event.key === 'Escape') {
      this.tabReleased = true;
      return;
    }
    if (event.key !== 'Tab' || event.ctrlKey || event.altKey || event.metaKey || this.tabReleased) return;
    event.preventDefault();
    const ta = this.textarea;
    const { selectionStart: start, selectionEnd: end, value } = ta;
    const lineStart = value.lastIndexOf('\n', start - 1) + 1;
    if (!event.shiftKey && !value.slice(start, end).includes('\n')) {
      replaceRange(ta, start, end, INDENT);
      return;
    }
    const blockEnd = value.indexOf('\n', end - (end > start && value[end - 1] === '\n' ? 1 : 0));
    const stop = blockEnd === -1 ? value.length : blockEnd;
    const lines = value.slice(lineStart, stop).split('\n');
    const changed = lines.map((l) => (event.shiftKey ? l.replace(/^ {1,2}/, '') : INDENT + l)).join('\n');
    replaceRange(ta, lineStart, stop, changed);
    ta.setSelectionRange(lineStart, lineStart + changed.length);
  }
}

/** Replaces text in a textarea so that undo still works where the browser supports it. */
function replaceRange(textarea, start, end, text) {
  textarea.setSelectionRange(start, end);
  // execCommand keeps the browser's undo stack; setRangeText is the standard fallback.
  if (!document.execCommand?.('insertText', false, text)) {
    textarea.setRangeText(text, start, end, 'end');
    textarea.dispatchEvent(new Event('input', { bubbles: true }));
  }
}
