// The NodePool editor: a plain textarea for YAML with line numbers, read on every edit (debounced)
// the way kubectl reads YAML, checked by the core's nodepool_check, and the verdict shown beside
// it: YAML syntax errors with line and column, validity, the failing field, the lint advice.
// The learner's text is never rewritten: comments and layout stay exactly as typed.
import { stringify } from 'yaml';

import { el } from './text.js';
import { YamlEditor } from './yaml-editor.js';
import { locatePath, plainYamlError, readYamlDocuments, asJson } from './yaml-text.js';

export { locatePath, plainYamlError };

const DEBOUNCE_MS = 300;

/**
 * Reads the editor's text as the one NodePool it must hold. A stream may also hold the
 * EC2NodeClass it refers to (apiVersion karpenter.k8s.aws/…), which is skipped, as the CLI does.
 * YAML is read as kubectl reads it (yaml-text.js).
 * @returns {{ok: true, value: any, doc, lineCounter} |
 *           {ok: false, empty?: true, error: {message: string, line?: number, col?: number}}}
 */
export function readNodePoolText(text) {
  if (String(text).trim() === '') return { ok: false, empty: true, error: { message: 'The editor is empty: write a NodePool.' } };
  const read = readYamlDocuments(text);
  if (!read.ok) return read;
  const { docs: values, lineCounter } = read;
  const pools = values.filter(({ doc, value }) => doc.contents !== null
    && !(value && typeof value === 'object' && String(value.apiVersion ?? '').startsWith('karpenter.k8s.aws/')));
  if (pools.length === 0) return { ok: false, empty: true, error: { message: 'No NodePool in the text (only comments or an EC2NodeClass).' } };
  if (pools.length > 1) {
    const at = lineCounter.linePos(pools[1].doc.range[0]);
    return { ok: false, error: { message: `The text holds ${pools.length} documents besides any EC2NodeClass; write exactly one NodePool.`, line: at.line, col: at.col } };
  }
  return { ok: true, value: asJson(pools[0].value), doc: pools[0].doc, lineCounter };
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

    this.verdict = el('p', { class: 'np-verdict', id: `${id}-verdict`, 'aria-live': 'polite' });
    this.editor = new YamlEditor({ id, text, describedBy: [`${id}-verdict`, describedBy], onInput: () => this._edited() });
    this.detail = el('div', { class: 'np-detail' });
    this.warningsBox = el('div', { class: 'np-warnings' });
    this.normalised = el('details', { class: 'np-normalised', hidden: true },
      el('summary', { text: 'The NodePool as the API server stores it (defaults filled in)' }),
      el('pre'));
    this.root = el('div', { class: 'np-editor', dataset: { state: 'checking', warnings: '0' } },
      el('label', { for: id, class: 'np-label' }, label),
      el('div', { class: 'np-layout' },
        this.editor.box,
        el('div', { class: 'np-report' }, this.verdict, this.detail, this.warningsBox, this.normalised)));
    this.check();
  }

  get text() {
    return this.editor.text;
  }

  /** Replaces the whole text (an explicit learner action, e.g. "start again from the starter"). */
  setText(text) {
    this.editor.setText(text);
  }

  focus() {
    this.editor.focus();
  }

  goTo(line, col = 1) {
    this.editor.goTo(line, col);
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
    const markers = new Map();
    const warnings = result?.warnings ?? [];
    this.root.dataset.state = state;
    this.root.dataset.warnings = String(warnings.length);
    this.editor.textarea.setAttribute('aria-invalid', String(state === 'yaml-error' || state === 'invalid'));
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
        markers.set(error.line, 'error');
        parts.push(this.editor.jump(error.line, error.col, error.exact === false ? `near line ${error.line}` : `line ${error.line}, column ${error.col}`));
      }
      if (error.path) parts.push(el('code', { class: 'np-path', text: error.path }));
      this.detail.replaceChildren(el('p', { class: 'np-error' }, ...parts.flatMap((p) => [p, ' ']),
        el('span', { class: 'np-message', text: error.message })));
      this.normalised.hidden = true;
    }
    this._renderWarnings(warnings, read, markers);
    this.editor.setMarkers(markers);
    this.onChecked(state);
  }

  _renderWarnings(warnings, read, markers) {
    if (!warnings.length) {
      this.warningsBox.replaceChildren();
      return;
    }
    const items = warnings.map((w) => {
      const at = read ? locatePath(read.doc, read.lineCounter, w.path) : null;
      if (at && !markers.has(at.line)) markers.set(at.line, 'warning');
      return el('li', { class: 'np-warning', dataset: { code: w.code, path: w.path } },
        el('div', { class: 'np-warning-head' },
          el('code', { class: 'np-code-name', text: w.code }), ' ',
          at ? this.editor.jump(at.line, at.col, at.exact ? `line ${at.line}` : `not written (near line ${at.line})`) : null, ' ',
          el('code', { class: 'np-path', text: w.path })),
        el('p', { class: 'np-message', text: w.message }));
    });
    this.warningsBox.replaceChildren(
      el('h5', { text: 'Advice for a GPU pool (lint)' }),
      el('ul', { class: 'np-warning-list' }, items));
  }
}
