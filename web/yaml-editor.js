// The page's YAML text box: a plain textarea with line numbers whose lines can be marked (an error,
// a piece of advice), Tab and Shift+Tab that indent by two spaces until Esc hands Tab back to the
// page, and buttons that put the caret on a line. The learner's text is never rewritten except by
// an explicit action (replaceRange, setText), and a replacement keeps the browser's undo.
// Used by the NodePool editor (exercise 2), the Scheduler view and the playground's scenario as YAML.
import { el } from './text.js';

const INDENT = '  ';

export class YamlEditor {
  /**
   * @param {{id: string, text?: string, describedBy?: string[], onInput?: (text: string) => void,
   *          minRows?: number, maxRows?: number, label?: string}} options
   *   describedBy: ids read with the textarea (the keys hint is added last); label: an aria-label
   *   when no <label for=id> names it
   */
  constructor({ id, text = '', describedBy = [], onInput = () => {}, minRows = 14, maxRows = 36, label }) {
    this.id = id;
    this.onInput = onInput;
    this.minRows = minRows;
    this.maxRows = maxRows;
    this.tabReleased = false;
    this.markers = new Map();  // line → "error" | "warning"

    this.gutter = el('div', { class: 'np-gutter', 'aria-hidden': 'true' });
    this.keysHint = el('p', { class: 'hint-text np-keys', id: `${id}-keys`,
      text: 'Tab indents by two spaces, Shift+Tab outdents; press Esc, then Tab, to leave the editor.' });
    this.textarea = el('textarea', {
      id, class: 'np-text', spellcheck: 'false', autocapitalize: 'off', autocomplete: 'off', wrap: 'off',
      'aria-label': label,
      'aria-describedby': [...describedBy, `${id}-keys`].filter(Boolean).join(' '),
      oninput: () => this._edited(),
      onkeydown: (event) => this._key(event),
      onfocus: () => { this.tabReleased = false; },
      onscroll: () => { this.gutter.scrollTop = this.textarea.scrollTop; },
    });
    this.textarea.value = text ?? '';
    this.code = el('div', { class: 'np-code' }, this.gutter, this.textarea);
    /** The text box and its keys hint, for the caller to place. */
    this.box = el('div', { class: 'np-box' }, this.code, this.keysHint);
    this.renderGutter();
  }

  get text() {
    return this.textarea.value;
  }

  /** Replaces the whole text (an explicit learner action, e.g. "start again from the starter"). */
  setText(text) {
    this.textarea.value = text ?? '';
    this._edited();
  }

  /** Replaces [start, end) of the text as typing would (the browser's undo keeps it). */
  replaceRange(start, end, text) {
    const { selectionStart, selectionEnd } = this.textarea;
    replaceRange(this.textarea, start, end, text);
    // Put the caret back where it was, moved by the change when it was after it.
    const shift = (at) => (at <= start ? at : Math.max(start + text.length, at + text.length - (end - start)));
    this.textarea.setSelectionRange(shift(selectionStart), shift(selectionEnd));
  }

  focus() {
    this.textarea.focus();
  }

  /** Marks lines in the gutter (line → "error" | "warning"), replacing the previous marks. */
  setMarkers(markers) {
    this.markers = new Map(markers);
    this.renderGutter();
  }

  /** A button that puts the caret at (line, col) in the text and selects that line. */
  jump(line, col, text) {
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

  renderGutter() {
    const count = this.text.split('\n').length;
    this.textarea.rows = Math.min(Math.max(count + 1, this.minRows), this.maxRows);
    const numbers = [];
    for (let line = 1; line <= count; line++) {
      const marker = this.markers.get(line);
      numbers.push(el('div', { class: marker ? `np-line ${marker}` : 'np-line', text: String(line) }));
    }
    this.gutter.replaceChildren(...numbers);
    this.gutter.scrollTop = this.textarea.scrollTop;
  }

  _edited() {
    this.tabReleased = false;
    this.renderGutter();
    this.onInput(this.text);
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
  // execCommand keeps the browser's undo stack; setRangeText is the standard fallback. Either way
  // the textarea hears an input event.
  if (document.activeElement !== textarea || !document.execCommand?.('insertText', false, text)) {
    textarea.setRangeText(text, start, end, 'end');
    textarea.dispatchEvent(new Event('input', { bubbles: true }));
  }
}
