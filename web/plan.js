// The plan designer view (#/plan?/topology/max_nodes=4&…): a form for the core's plan input
// (docs/plan.md: topology, workload, SLO, budget, tenants), "Design the plan" running the core's
// `plan` with its progress and a Cancel, the verdict with the rules and every candidate, the objects
// as YAML (copy, one YAML file, a one-page Markdown plan), and the chosen plan's own run.
//
// One schema (PLAN_FIELDS) builds the form, the input sent to the core, the route (each field keyed
// by its JSON path, as the playground keys its knobs) and the Markdown's table of inputs. The form is
// kept in localStorage as typed; a link holding an input fills the form and designs that plan.
import { NODES_CHART, RUN_CHARTS, RunCharts, runMarks } from './charts.js';
import { downloadText } from './csv.js';
import { DecisionLog } from './decision-log.js';
import { progressBar, whileBusy } from './exercise-kit.js';
import {
  LAYERS, RULES, autoscalerKind, autoscalerText, candidateVerdict, chosenIndex, perHour, percent, placeText, planMarkdown, planObjects,
  loadSentence, planYaml, shapeText, poolLines, poolsSentence, runText, seconds, signalName, signalShort, targetText, verdictSentence, warmCount, warmPoolTitle,
} from './plan-export.js';
import { parseRoute, routeHash, updateParams } from './router.js';
import { parseKnob } from './state.js';
import { renderSummaryTiles } from './summary.js';
import { el } from './text.js';
import { yamlOfJson } from './yaml-text.js';

const STORAGE_KEY = 'gpuscale:plan:form';

// The lab's GPU instance types a plan may use: the catalogue the core embeds (data/instance-types.json,
// shipped beside the page), read once when the view first opens. Their prices are the core's (each
// candidate's cost comes back in the plan), not shown here.
const INSTANCE_CATALOGUE_URL = 'data/instance-types.json';
const INSTANCE_TYPES = [];

/** Fills INSTANCE_TYPES from the catalogue (the GPU types, in its order): "8 × H100 80 GB". */
async function loadInstanceTypes() {
  if (INSTANCE_TYPES.length) return;
  const response = await fetch(INSTANCE_CATALOGUE_URL);
  if (!response.ok) throw new Error(`${INSTANCE_CATALOGUE_URL}: HTTP ${response.status}`);
  const catalogue = await response.json();
  for (const type of catalogue.instance_types ?? catalogue) {
    if (!(type.gpus > 0)) continue;
    INSTANCE_TYPES.push({ value: type.name, label: type.name,
      note: `${type.gpus} × ${String(type.gpu_name).toUpperCase()} ${Math.round(type.gpu_memory_mib / 1024)} GB` });
  }
}
// A replica autoscaler the engineer may pin ('' leaves it to the search); plan-export.js's SIGNALS name them.
const PIN_SIGNALS = [
  { value: '', label: 'Searched' },
  { value: 'queue_depth', label: 'Queue depth (KEDA)' },
  { value: 'kv_cache', label: 'KV-cache use' },
  { value: 'ttft_p99', label: 'P99 time to first token' },
  { value: 'goodput', label: 'Goodput (SLO misses)' },
  { value: 'gpu_util', label: 'GPU duty cycle' },
  { value: 'gpu_memory', label: 'GPU memory used' },
];
const CAPACITY_TYPES = [
  { value: 'on-demand', label: 'On-demand' },
  { value: 'spot', label: 'Spot', note: 'interrupted with 2 minutes\' notice' },
];
const ENGINE_PROFILES = [
  { value: 'llama-3.3-70b-fp8-tp2-h100-sxm5', label: 'Llama 3.3 70B FP8, 2 GPUs',
    note: 'A replica is one pod of 2 GPUs (tensor parallel): four to an 8-GPU node.' },
  { value: 'llama-3.1-405b-bf16-tp8-pp2-h100-sxm5', label: 'Llama 3.1 405B BF16, 16 GPUs',
    note: 'A replica is 2 pods of 8 GPUs on 2 nodes (tensor parallel 8 × pipeline parallel 2), a LeaderWorkerSet scheduled as a gang.' },
];
const SERVING = [
  { value: 'aggregated', label: 'Aggregated (one pool)' },
  { value: 'disaggregated', label: 'Disaggregated (prefill and decode pools)',
    note: 'Two Deployments of the model, each with its own autoscaler and warm replicas, the KV cache handed over by NIXL; a replica must fit one node.' },
];

/**
 * The plan input, field by field: `path` is the JSON pointer into the core's input (and the route's
 * key), `default` the core's own (plan.hpp), `scale` turns the core's unit into the form's (a
 * fraction shown as %), `optional` fields left empty are left out (the core then names what it needs).
 */
export const PLAN_FIELDS = [
  { path: '/topology/instance_types', group: 'topology', type: 'set', label: 'Instance types', options: INSTANCE_TYPES, default: ['p5.48xlarge'] },
  { path: '/topology/capacity_types', group: 'topology', type: 'set', label: 'Capacity types', options: CAPACITY_TYPES, default: ['on-demand'] },
  { path: '/topology/max_nodes', group: 'topology', type: 'integer', label: 'Nodes at most', unit: 'nodes', default: 4, min: 1, max: 64 },
  { path: '/topology/racks', group: 'topology', type: 'integer', label: 'Racks', unit: 'racks', default: 0, min: 0, max: 64,
    hint: '0: not described. Otherwise a NodePool per rack; a replica larger than a node is placed within one.' },
  { path: '/topology/nvlink_domain_nodes', group: 'topology', type: 'integer', label: 'Nodes per NVLink domain', unit: 'nodes', default: 1, min: 1, max: 64,
    hint: '1: NVLink inside a node only. More: domains of that many nodes inside a rack (a NodePool each).' },
  { path: '/topology/spot_interruptions_per_node_hour', group: 'topology', type: 'number', label: 'Spot interruptions', unit: 'per node-hour',
    default: null, min: 0, max: 10, step: 0.01, optional: true, when: (values) => values.get('/topology/capacity_types').includes('spot'),
    hint: 'Required with spot: how often a spot node is reclaimed (0 assumes never).' },
  { path: '/workload/engine_profile', group: 'workload', type: 'enum', label: 'Model and engine', options: ENGINE_PROFILES, default: ENGINE_PROFILES[0].value },
  { path: '/workload/serving', group: 'workload', type: 'enum', label: 'Serving', options: SERVING, default: 'aggregated' },
  { path: '/workload/average_rps', group: 'workload', type: 'number', label: 'Average requests', unit: 'req/s', default: 0.5, min: 0.001, max: 5, step: 0.1,
    when: (values) => String(values.get('/workload/average_concurrency') ?? '').trim() === '' },
  { path: '/workload/average_concurrency', group: 'workload', type: 'integer', label: 'Or: average requests in flight', unit: 'clients', default: null,
    min: 1, max: 500, optional: true, placeholder: 'e.g. 8',
    hint: 'Instead of req/s: the plan turns this concurrency into a rate by a closed-loop run (Little\'s law). Leave empty to give req/s.' },
  { path: '/workload/burst_factor', group: 'workload', type: 'number', label: 'Burst: times the average', unit: '×', default: 4, min: 1, max: 50, step: 0.5 },
  { path: '/workload/burst_s', group: 'workload', type: 'number', label: 'Burst lasts', unit: 's', default: 900, min: 60, max: 2400, step: 60 },
  { path: '/workload/prompt_tokens', group: 'workload', type: 'number', label: 'Prompt, mean', unit: 'tokens', default: 2000, min: 16, max: 65536, step: 100 },
  { path: '/workload/output_tokens', group: 'workload', type: 'number', label: 'Answer, mean', unit: 'tokens', default: 300, min: 1, max: 16384, step: 50 },
  { path: '/workload/what_if_burst', group: 'workload', type: 'number', label: 'What-if: the burst times', unit: '×', default: 1.5, min: 1, max: 10, step: 0.1 },
  { path: '/slo/ttft_p99_s', group: 'slo', type: 'number', label: 'P99 time to first token within', unit: 's', default: 2, min: 0.05, max: 600, step: 0.1 },
  { path: '/slo/itl_s', group: 'slo', type: 'number', label: 'Inter-token latency within', unit: 's', default: 0.05, min: 0.001, max: 10, step: 0.01 },
  { path: '/slo/attainment', group: 'slo', type: 'number', label: 'Requests within the SLO, at least', unit: '%', scale: 100, default: 0.99, min: 0.5, max: 1, step: 0.1 },
  { path: '/budget_usd_per_hour', group: 'slo', type: 'number', label: 'Budget for the nodes', unit: '$/h', default: 0, min: 0, max: 1e6, step: 10, hint: '0: no budget.' },
  { path: '/tenants/training_gpus', group: 'slo', type: 'integer', label: 'Training GPUs that may borrow', unit: 'GPUs', default: 0, min: 0, max: 4096,
    hint: 'A training queue borrows what inference leaves idle (KAI Scheduler reclaims it).' },
  { path: '/seed', group: 'slo', type: 'integer', label: 'Seed of the simulated arrivals', default: 1, min: 0, max: 9007199254740992 },
  { path: '/choices/signal', group: 'choices', type: 'enum', label: 'Replica autoscaler', options: PIN_SIGNALS, default: '', optional: true,
    hint: 'Disaggregated: the prefill pool\'s. The lesson refuses the last two, with its reason.' },
  { path: '/choices/decode_signal', group: 'choices', type: 'enum', label: 'Decode pool\'s autoscaler', options: PIN_SIGNALS, default: '', optional: true,
    when: (values) => values.get('/workload/serving') === 'disaggregated' },
  { path: '/choices/gang', group: 'choices', type: 'enum', label: 'Gang scheduling', default: 'true', parse: (v) => v === 'true',
    options: [{ value: 'true', label: 'Required (a KAI PodGroup per replica)' }, { value: 'false', label: 'Declined (pods placed one by one)' }] },
  { path: '/choices/consolidation_policy', group: 'choices', type: 'enum', label: 'Karpenter consolidation', default: 'WhenEmpty',
    options: [{ value: 'WhenEmpty', label: 'WhenEmpty, after 1 h' }, { value: 'WhenEmptyOrUnderutilized', label: 'WhenEmptyOrUnderutilized' }] },
];

const GROUPS = [
  { id: 'topology', legend: 'Topology (layer 1: nodes)' },
  { id: 'workload', legend: 'Workload' },
  { id: 'slo', legend: 'SLO, budget and tenants' },
  { id: 'choices', legend: 'What you pin (the rest is searched)' },
];

/** A value of the core's input as the form shows it (0.99 → "99" for a percentage). */
function shown(field, value) {
  if (field.type === 'set') return [...value];
  if (value === null || value === undefined) return '';
  if (field.type === 'enum') return String(value);
  const n = Number(value);
  if (!Number.isFinite(n)) return String(value);
  // A scaled value drops the float's noise (0.95 × 100 is 94.99999999999999); others stay exact (a 16-digit seed).
  return String(field.scale ? Number((n * field.scale).toPrecision(12)) : n);
}

/** The form as the core's defaults make it: path → text (or the ticked options of a set). */
export function defaultValues() {
  return new Map(PLAN_FIELDS.map((f) => [f.path, shown(f, f.default)]));
}

/** Sets `value` at a JSON pointer in `object`, making the objects on the way. */
function setAt(object, pointer, value) {
  const keys = pointer.split('/').slice(1);
  let at = object;
  for (const key of keys.slice(0, -1)) at = (at[key] ??= {});
  at[keys[keys.length - 1]] = value;
}

function getAt(object, pointer) {
  return pointer.split('/').slice(1).reduce((at, key) => (at === null || typeof at !== 'object' ? undefined : at[key]), object);
}

/**
 * The core's input from the form's values: {input, errors} where `errors` (path → message) are
 * fields the page cannot read as a number; every other check is the core's.
 */
export function buildInput(values) {
  const input = {};
  const errors = new Map();
  for (const field of PLAN_FIELDS) {
    if (field.when && !field.when(values)) continue;
    const value = values.get(field.path);
    if (field.type === 'set') {
      setAt(input, field.path, field.options.map((o) => o.value).filter((v) => value.includes(v)));
    } else if (field.type === 'enum') {
      if (!(value === '' && field.optional)) setAt(input, field.path, field.parse ? field.parse(value) : value);
    } else if (String(value).trim() === '' && field.optional) {
      // left out: the core says whether it is needed
    } else {
      const parsed = parseKnob({ type: 'number' }, value);  // a whole number is the core's check, with its path
      if ('error' in parsed) errors.set(field.path, parsed.error);
      else setAt(input, field.path, field.scale ? Number((parsed.value / field.scale).toPrecision(12)) : parsed.value);
    }
  }
  return { input, errors };
}

/** The route's parameters of an input: each field under its JSON path (a set: one entry per option). */
export function inputParams(input) {
  const params = new URLSearchParams();
  for (const field of PLAN_FIELDS) {
    const value = getAt(input, field.path);
    if (value === undefined) continue;
    if (Array.isArray(value)) for (const v of value) params.append(field.path, String(v));
    else params.append(field.path, String(value));
  }
  return params;
}

/** The form's values from a route's parameters (the others at the core's defaults); unknown keys are listed. */
export function valuesFromParams(params) {
  const values = defaultValues();
  const known = new Set(PLAN_FIELDS.map((f) => f.path));
  for (const field of PLAN_FIELDS) {
    if (!params.has(field.path)) continue;
    if (field.type === 'set') values.set(field.path, params.getAll(field.path));
    else if (field.type === 'enum') values.set(field.path, params.get(field.path));
    else {
      const raw = params.get(field.path);
      const n = Number(raw);
      values.set(field.path, raw.trim() !== '' && Number.isFinite(n) ? shown(field, n) : raw);
    }
  }
  return { values, unknown: [...new Set([...params.keys()].filter((k) => !known.has(k)))] };
}

function loadSaved() {
  try {
    const saved = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? 'null');
    if (!saved || typeof saved !== 'object') return null;
    const values = defaultValues();
    for (const field of PLAN_FIELDS) {
      const v = saved[field.path];
      if (field.type === 'set' ? Array.isArray(v) : typeof v === 'string') values.set(field.path, v);
    }
    return values;
  } catch {
    return null;  // unreadable or unavailable storage: the defaults
  }
}

function save(values) {
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(Object.fromEntries(values)));
  } catch {
    // private mode or quota: the form just isn't kept
  }
}

/** "plan" + the field's path as an element id ("plan-workload-average_rps"). */
function fieldId(path) {
  return `plan${path.replace(/[^A-Za-z0-9_]+/g, '-')}`;
}

export class PlanPanel {
  /** @param {HTMLElement} root @param {import('./sim-client.js').SimClient} client */
  constructor(root, client) {
    this.root = root;
    this.client = client;
    this.body = root.querySelector('[data-part="body"]');
    this.status = root.querySelector('[data-part="status"]');
    this.values = loadSaved() ?? defaultValues();
    this.controls = new Map();  // path → {field, box, inputs, error}
    this.notes = new Map();     // path → the note of a select's choice
    this.designs = 0;           // plans shown so far
    this.charts = null;
  }

  /** Builds the form (from what this browser kept, else the core's defaults) once the catalogue is read. */
  async init() {
    this.root.dataset.ready = 'false';
    await loadInstanceTypes();
    this._build();
    this._writeForm();
    this.root.dataset.ready = 'true';
  }

  /**
   * The route changed to this view: a route holding an input fills the form with it (the rest at the
   * core's defaults), keeps it, designs that plan and leaves the address at #/plan (the form is kept
   * from then on, and "Link to this plan" gives the link again). #/plan alone keeps the form.
   */
  async fromRoute() {
    const params = parseRoute().params;
    if (![...params.keys()].length) return;
    const { values, unknown } = valuesFromParams(params);
    this.values = values;
    save(values);
    this._writeForm();
    updateParams(Object.fromEntries([...params.keys()].map((key) => [key, null])));
    this.status.textContent = unknown.length
      ? `The link's ${unknown.map((k) => `"${k}"`).join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not part of a plan's input and ${unknown.length === 1 ? 'was' : 'were'} left out.`
      : '';
    this.design();  // not awaited: the view is shown while the plan is designed
  }

  _build() {
    this.formErrors = el('div', { class: 'form-errors', id: 'plan-form-errors', hidden: true });
    const fieldsets = GROUPS.map((g) => el('fieldset', { class: 'knob-group plan-group', dataset: { group: g.id } },
      el('legend', { text: g.legend }),
      PLAN_FIELDS.filter((f) => f.group === g.id).map((f) => this._control(f))));
    this.designButton = el('button', { type: 'submit', class: 'primary', id: 'plan-design', text: 'Design the plan' });
    this.progress = progressBar('plan-progress');
    const form = el('form', { class: 'plan-form', id: 'plan-form', novalidate: true, 'aria-label': 'The plan\'s input',
                              onsubmit: (event) => { event.preventDefault(); this.design(); } },
      this.formErrors,
      el('div', { class: 'plan-groups' }, fieldsets),
      el('div', { class: 'actions' }, this.designButton,
        el('button', { type: 'button', class: 'secondary', id: 'plan-reset', text: 'Reset to the defaults', onclick: () => this._reset() }),
        el('span', { class: 'hint-text', text: 'What you type is kept in this browser.' })),
      this.progress.root);
    this.runStatus = el('p', { class: 'run-status', id: 'plan-run-status', 'aria-live': 'polite' });
    this.result = el('div', { class: 'plan-result', id: 'plan-result', 'data-part': 'result', hidden: true });
    this.body.replaceChildren(
      el('p', { class: 'hint-text' }, 'The same input runs in a terminal: ', el('code', { text: 'build/cli/gpuscale plan input.yaml' }),
        ' (the Markdown download holds it). The rules and the search: docs/plan.md.'),
      form, this.runStatus, this.result);
  }

  _control(field) {
    const id = fieldId(field.path);
    const error = el('div', { class: 'field-error', id: `${id}-error`, 'aria-live': 'polite' });
    const hint = field.hint ? el('div', { class: 'hint-text', id: `${id}-hint`, text: field.hint }) : null;
    const describedBy = [hint?.id, error.id].filter(Boolean).join(' ');
    const changed = () => this._changed(field);
    let box, inputs;
    if (field.type === 'set') {
      inputs = field.options.map((o) => el('input', { type: 'checkbox', id: `${id}-${o.value.replace(/[^A-Za-z0-9_-]/g, '-')}`, value: o.value,
                                                      'aria-describedby': describedBy, onchange: changed }));
      box = el('fieldset', { class: 'plan-set field', dataset: { path: field.path } },
        el('legend', { text: field.label }),
        field.options.map((o, i) => el('div', { class: 'check plan-check' }, inputs[i],
          el('label', { for: inputs[i].id }, o.label, o.note ? el('span', { class: 'hint-text', text: ` ${o.note}` }) : null))),
        hint, error);
    } else {
      // A choice's note (what a model's replica is) follows the choice, under the select.
      const note = field.type === 'enum' ? el('div', { class: 'hint-text choice-note', id: `${id}-note` }) : null;
      const input = field.type === 'enum'
        ? el('select', { id, 'aria-describedby': [note.id, describedBy].filter(Boolean).join(' '), onchange: changed },
          field.options.map((o) => el('option', { value: o.value, text: o.label })))
        : el('input', { type: 'number', id, 'aria-describedby': describedBy, min: field.min, max: field.max,
                        step: field.step ?? (field.type === 'integer' ? 1 : 'any'), inputmode: field.type === 'integer' ? 'numeric' : 'decimal',
                        placeholder: field.placeholder ?? (field.optional ? 'e.g. 0.05' : undefined), oninput: changed });
      inputs = [input];
      box = el('div', { class: 'field', dataset: { path: field.path } },
        el('label', { for: id, text: field.label }),
        el('div', { class: 'input-row' }, input, field.unit ? el('span', { class: 'unit', text: field.unit }) : null),
        note, hint, error);
      if (note) this.notes.set(field.path, note);
    }
    this.controls.set(field.path, { field, box, inputs, error });
    return box;
  }

  /** Puts this.values into the form. */
  _writeForm() {
    for (const { field, inputs } of this.controls.values()) {
      const value = this.values.get(field.path);
      if (field.type === 'set') for (const input of inputs) input.checked = value.includes(input.value);
      else inputs[0].value = value;
    }
    this._showWhen();
  }

  _read(field) {
    const { inputs } = this.controls.get(field.path);
    return field.type === 'set' ? inputs.filter((i) => i.checked).map((i) => i.value) : inputs[0].value;
  }

  _changed(field) {
    this.values.set(field.path, this._read(field));
    save(this.values);
    this._clearError(field.path);
    if (this.root.dataset.state === 'error') this.runStatus.textContent = '';  // it named the field just changed, or one now unchecked
    this._showWhen();
    // The plan shown is marked while the form says something else (typing the same input back clears it).
    if (this.shownInput) {
      if (JSON.stringify(buildInput(this.values).input) === JSON.stringify(this.shownInput)) delete this.result.dataset.stale;
      else this.result.dataset.stale = 'true';
    }
  }

  /** Fields shown only with another's value (the spot interruption rate, with spot ticked), and each choice's note. */
  _showWhen() {
    for (const { field, box } of this.controls.values()) if (field.when) box.hidden = !field.when(this.values);
    for (const [path, note] of this.notes) {
      const field = this.controls.get(path).field;
      note.textContent = field.options.find((o) => o.value === this.values.get(path))?.note ?? '';
    }
  }

  _reset() {
    this.values = defaultValues();
    save(this.values);
    this._writeForm();
    this._clearErrors();
    this.runStatus.textContent = 'The form is back at the core\'s defaults.';
  }

  _clearError(path) {
    const control = this.controls.get(path);
    if (!control) return;
    control.error.textContent = '';
    for (const input of control.inputs) input.removeAttribute('aria-invalid');
    control.box.classList.remove('invalid');
  }

  _clearErrors() {
    for (const path of this.controls.keys()) this._clearError(path);
    this.formErrors.hidden = true;
    this.formErrors.replaceChildren();
  }

  /** The control a core error's path is about: the field with that path, or the one it is inside ("/topology/instance_types/1"). */
  _controlFor(path) {
    let best = null;
    for (const [p, control] of this.controls) {
      if ((path === p || path.startsWith(`${p}/`)) && (!best || p.length > best[0].length)) best = [p, control];
    }
    return best?.[1] ?? null;
  }

  /** Shows an error beside its field (else above the form); returns the control it went to, if any. */
  _showError(path, message) {
    const control = this._controlFor(path);
    if (!control || control.box.hidden) {
      this.formErrors.hidden = false;
      this.formErrors.replaceChildren(el('p', { text: 'The core cannot plan this input:' }),
        el('ul', {}, el('li', {}, ...(path ? [el('code', { text: path }), ' '] : []), message)));
      return null;
    }
    // The core's messages read after their path: "/workload/average_rps is 0; allowed: …".
    control.error.replaceChildren(el('code', { class: 'np-path', text: path || control.field.path }), ` ${message}`);
    control.box.classList.add('invalid');
    if (control.field.type !== 'set') control.inputs[0].setAttribute('aria-invalid', 'true');
    return control;
  }

  /** Runs the core's plan on the form's input, with its progress and a Cancel; then shows the verdict. */
  async design() {
    this._clearErrors();
    const { input, errors } = buildInput(this.values);
    if (errors.size) {
      let first = null;
      for (const [path, message] of errors) first ??= this._showError(path, message);
      this.root.dataset.state = 'error';
      this.runStatus.textContent = 'Nothing was designed: fix the field marked in the form.';
      first?.inputs[0].focus();
      return;
    }
    this.root.dataset.state = 'designing';
    this.progress.root.dataset.updates = '0';
    await whileBusy(this.designButton, async (note) => {
      this.runStatus.textContent = 'Designing the plan: every candidate is simulated on the described traffic…';
      this.progress.show(0, 'starting');
      try {
        const result = await this.client.call('plan', [JSON.stringify(input)], {
          channel: 'plan',
          onProgress: (fraction, label) => {
            this.progress.show(fraction, label || 'simulating the candidates');
            note.progress(fraction, label);
          },
        });
        const timing = this.client.timings.get('plan');
        if (timing) this.root.dataset.planMs = String(Math.round(timing.ms));
        this.progress.hide();
        this._show(input, result);
      } catch (error) {
        this.progress.hide();
        if (error.name === 'Superseded') return;
        this.root.dataset.state = error.name === 'Cancelled' ? 'cancelled' : 'error';
        if (error.name === 'Cancelled') {
          this.runStatus.textContent = this.shownInput ? 'Cancelled: the plan below is still the previous one.' : 'Cancelled: nothing was designed.';
          return;
        }
        const path = error.path ?? '';
        const control = error.crashed ? null : this._showError(path, error.detail ?? error.message);
        this.runStatus.replaceChildren(control
          ? el('span', {}, 'Nothing was designed: the core refused ', el('button', { type: 'button', class: 'link', text: control.field.label,
                                                                                    onclick: () => control.inputs[0].focus() }), ' (see the message beside it).')
          : error.crashed ? `The simulation crashed and was restarted: ${error.detail}` : 'Nothing was designed: see the message above the form.');
      }
    }, { client: this.client });
  }

  /** The form's fields as [label, value] rows, for the Markdown's inputs. */
  _inputRows(input) {
    return PLAN_FIELDS.filter((f) => getAt(input, f.path) !== undefined).map((f) => {
      const v = getAt(input, f.path);
      if (f.type === 'set') return [f.label, v.join(', ')];
      if (f.type === 'enum') return [f.label, f.options.find((o) => o.value === String(v))?.label ?? String(v)];
      return [f.label, `${shown(f, v)}${f.unit ? ` ${f.unit}` : ''}`];
    });
  }

  _show(input, result) {
    this.designs += 1;
    this.shownInput = input;
    this.shownResult = result;
    const link = new URL(routeHash({ view: 'plan', params: inputParams(input) }), location.href).href;
    this.link = link;
    for (const c of this.charts?.charts ?? []) c.destroy();
    this.charts = null;
    const verdict = result?.verdict ?? 'none';
    Object.assign(this.root.dataset, { state: 'done', verdict, designs: String(this.designs) });
    delete this.result.dataset.stale;
    this.result.dataset.verdict = verdict;
    this.result.hidden = false;
    this.runStatus.textContent = `${verdict === 'plan' ? 'Designed' : verdict === 'refused' ? 'Refused' : 'No plan'}: ${verdictSentence(result)}`;

    const files = el('div', { class: 'actions plan-files' },
      el('a', { href: link, id: 'plan-link', text: 'Link to this plan' }),
      verdict === 'plan' ? el('button', { type: 'button', class: 'secondary', id: 'plan-download-yaml', text: 'Download YAML',
                                          onclick: () => downloadText('gpu-plan.yaml', planYaml(result), 'application/yaml') }) : null,
      el('button', { type: 'button', class: 'secondary', id: 'plan-download-md', text: 'Download Markdown',
                     onclick: () => this._downloadMarkdown() }));
    const parts = [el('h3', { id: 'plan-verdict-title', text: VERDICT_TITLES[verdict] ?? 'The verdict' }),
      el('p', { class: `plan-verdict verdict-${verdict}`, id: 'plan-verdict', text: verdictSentence(result) }),
      files];
    if (verdict === 'plan') parts.push(...this._planParts(result));
    else if (verdict === 'refused') parts.push(this._refusals(result));
    else if (verdict === 'no_plan') {
      parts.push(el('p', { class: 'plan-failed', id: 'plan-failed-layer', dataset: { layer: result.failed_layer } },
        el('strong', { text: 'Failed layer: ' }), `${LAYERS[result.failed_layer] ?? result.failed_layer} `, el('code', { text: result.failed_layer })));
      parts.push(el('h3', { text: `Candidates (${(result.candidates ?? []).length})` }), this._candidatesTable(result));
    }
    this.result.replaceChildren(...parts.filter(Boolean));
    if (verdict === 'plan') this._runChosen(result);
  }

  _downloadMarkdown() {
    const input = this.shownInput;
    const text = planMarkdown({ result: this.shownResult, inputRows: this._inputRows(input), inputYaml: yamlOfJson(input),
                                whatIfBurst: getAt(input, '/workload/what_if_burst') ?? null, link: this.link });
    downloadText('gpu-plan.md', text, 'text/markdown');
  }

  _planParts(result) {
    const plan = result.plan;
    const c = result.chosen, w = result.what_if;
    const whatIfBurst = Number(getAt(this.shownInput, '/workload/what_if_burst') ?? 1.5);
    const rows = [
      ['Instance type', (x) => x.instance_type, 'instance_type'],
      ['Capacity type', (x) => x.capacity_type, 'capacity_type'],
      ['Replica shape', (x) => shapeText(x), 'tensor_parallel'],
      ['Autoscaler', (x) => poolLines(x, (p, i) => `${autoscalerKind(result, i)} on ${signalName(p.signal)}`).join('; '), 'autoscaler'],
      ['Target', (x) => poolLines(x, (p) => targetText(p.signal, p.target)).join('; '), 'target'],
      ['Warm replicas', (x) => warmCount(x), 'warm_replicas'],
      ['Replicas at most', (x) => String(x.max_replicas), 'max_replicas'],
      ['Requests within the SLO', (x) => percent(x.slo_attainment), 'slo_attainment'],
      ['P99 time to first token', (x) => seconds(x.ttft_p99_s), 'ttft_p99_s'],
      ['Node cost', (x) => perHour(x.node_cost_usd_per_hour), 'node_cost_usd_per_hour'],
      ['Peak replicas', (x) => String(x.peak_replicas), 'peak_replicas'],
      ['Nodes launched', (x) => String(x.nodes_launched), 'nodes_launched'],
      ['Requests (dropped)', (x) => `${x.num_requests.toLocaleString('en-US')} (${x.num_dropped})`, 'num_requests'],
      ['Meets the SLO', (x) => (x.meets_slo ? 'yes' : 'no'), 'meets_slo'],
    ];
    const chosenTable = el('div', { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-labelledby': 'plan-chosen-caption' },
      el('table', { class: 'summary plan-chosen', id: 'plan-chosen' },
        el('caption', { id: 'plan-chosen-caption', text: `The chosen plan, and the same plan with the burst ${whatIfBurst}× larger` }),
        el('thead', {}, el('tr', {}, el('th', { scope: 'col', text: '' }), el('th', { scope: 'col', text: 'the plan' }),
          el('th', { scope: 'col', text: `what if the burst is ${whatIfBurst}× larger` }))),
        el('tbody', {}, rows.map(([label, f, key]) => el('tr', { dataset: { field: key } },
          el('th', { scope: 'row', text: label }), el('td', { dataset: { of: 'chosen' }, text: f(c) }),
          el('td', { dataset: { of: 'what-if' }, text: w ? f(w) : '—' }))))));
    const warm = plan.warm_pool;
    const lint = plan.nodepool_lint ?? [];
    const disaggregated = poolsSentence(result);
    return [
      result.load_from_concurrency ? el('p', { class: 'plan-load', id: 'plan-load', text: loadSentence(result) }) : null,
      disaggregated ? el('p', { class: 'plan-pools', id: 'plan-pools', text: disaggregated }) : null,
      chosenTable,
      el('h4', { text: warmPoolTitle(warm) }),
      el('p', { class: 'plan-warm', id: 'plan-warm', text: `${warm.reason.charAt(0).toUpperCase()}${warm.reason.slice(1)}.` }),
      lint.length ? el('div', { class: 'plan-lint' }, el('h4', { text: 'The NodePool linter says' }),
        el('ul', { class: 'np-warning-list' }, lint.map((l) => el('li', { class: 'np-warning', text: l })))) : null,
      el('h4', { text: 'Kill switch' }),
      el('p', { id: 'plan-kill-switch', text: plan.kill_switch }),
      el('h4', { text: 'Dashboard: watch these' }),
      el('ul', { class: 'plan-dashboard' }, (plan.dashboard ?? []).map((d) => el('li', { text: d }))),
      el('h3', { text: 'The lesson\'s rules, each checked by a run on this input' }),
      this._rulesTable(result),
      el('h3', { text: `Candidates: ${(result.candidates ?? []).length} considered, ${(result.candidates ?? []).filter((x) => x.rejected?.length).length} rejected` }),
      this._candidatesTable(result),
      el('h3', { text: 'The objects' }),
      el('p', { class: 'hint-text', text: 'Each object went through the lab\'s own validator. "Download YAML" gives the Kubernetes objects as one file for kubectl apply (CLUSTER_NAME is yours to fill in); the pods\' KAI settings are a comment at its top.' }),
      el('div', { class: 'plan-objects' }, planObjects(result).map((b) => this._objectBlock(b))),
      el('h3', { text: 'The chosen plan\'s run' }),
      this.runBox = el('section', { class: 'plan-run', id: 'plan-run', 'aria-label': 'The chosen plan\'s run', dataset: { ready: 'false' } },
        el('p', { class: 'run-status', text: 'Simulating the chosen plan once more, to show it over time…' })),
    ];
  }

  _rulesTable(result) {
    const rules = result.rules ?? [];
    return el('div', { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-labelledby': 'plan-rules-caption' },
      el('table', { class: 'summary plan-table plan-rules', id: 'plan-rules' },
        el('caption', { id: 'plan-rules-caption', text: 'Each rule, what the simulation of the plan without it showed, and the run' }),
        el('thead', {}, el('tr', {}, ['rule', 'the simulation', 'why', 'the run'].map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, rules.map((r) => el('tr', { dataset: { rule: r.rule, disagrees: String(Boolean(r.simulation_disagrees)) } },
          el('th', { scope: 'row' }, RULES[r.rule] ?? r.rule, el('br'), el('code', { text: r.rule })),
          el('td', { class: 'rule-verdict' }, r.simulation_disagrees
            ? el('strong', { class: 'disagrees', text: '⚠ The simulation disagrees' })
            : el('span', { class: 'confirms', text: '✓ Confirms the rule' })),
          el('td', { class: 'rule-reason', text: r.reason }),
          el('td', { class: 'rule-run', text: r.run ? `${placeText(r.run)}, ${autoscalerText(r.run)}: ${runText(r.run)}` : '—' }))))));
  }

  _candidatesTable(result) {
    const candidates = result.candidates ?? [];
    const chosen = chosenIndex(result);
    return el('div', { class: 'table-scroll', tabindex: '0', role: 'region', 'aria-labelledby': 'plan-candidates-caption' },
      el('table', { class: 'summary plan-table plan-candidates', id: 'plan-candidates' },
        el('caption', { id: 'plan-candidates-caption', text: 'Every candidate the core simulated (or could not), in the order it tried them' }),
        el('thead', {}, el('tr', {}, ['#', 'instance type', 'capacity', 'autoscaler', 'warm', 'max', 'SLO', 'P99 TTFT', 'nodes $/h', 'verdict']
          .map((h) => el('th', { scope: 'col', text: h })))),
        el('tbody', {}, candidates.map((c, i) => el('tr', { dataset: { index: String(i), chosen: String(i === chosen), rejected: String(Boolean(c.rejected?.length)) } },
          el('th', { scope: 'row', text: String(i + 1) }),
          el('td', { text: c.instance_type }),
          el('td', { text: c.capacity_type }),
          el('td', {}, lines(poolLines(c, signalShort))),
          el('td', { text: warmCount(c) }),
          el('td', { text: String(c.max_replicas) }),
          el('td', { text: c.simulated ? percent(c.slo_attainment) : '—' }),
          el('td', { text: c.simulated ? seconds(c.ttft_p99_s) : '—' }),
          el('td', { text: c.simulated ? perHour(c.node_cost_usd_per_hour) : '—' }),
          el('td', { class: 'candidate-verdict' }, i === chosen
            ? el('strong', { text: candidateVerdict(c, result, i) })
            : c.rejected?.length
              ? el('ul', { class: 'reasons' }, c.rejected.map((r) => el('li', { text: r })))
              : candidateVerdict(c, result, i)))))));
  }

  _refusals(result) {
    return el('ul', { class: 'plan-refusals', id: 'plan-refusals' }, (result.refusals ?? []).map((r) => el('li', { dataset: { rule: r.rule } },
      el('strong', { text: RULES[r.rule] ?? r.rule }), ' ', el('code', { text: r.rule }), r.field ? ` (${r.field})` : '', el('br'), r.reason)));
  }

  /** One object as YAML, with its Copy button. */
  _objectBlock(block) {
    const id = `plan-object-${block.id}`;
    const done = el('span', { class: 'copy-note hint-text', 'aria-live': 'polite' });
    const button = el('button', { type: 'button', class: 'secondary small', text: 'Copy', 'aria-label': `Copy ${block.title}`,
                                  dataset: { copy: 'idle' }, onclick: () => copyText(block.yaml, button, done) });
    return el('section', { class: 'plan-object', id, 'aria-labelledby': `${id}-title`, dataset: { object: block.id, kind: block.object.kind ?? '' } },
      el('div', { class: 'plan-object-head' }, el('h4', { id: `${id}-title`, text: block.title }), button, done),
      el('pre', { class: 'plan-yaml' }, el('code', { text: block.yaml })));
  }

  /** Runs the chosen plan's scenario (plan.scenario) and shows its summary, replicas and nodes over time, and its decision log. */
  async _runChosen(result) {
    const box = this.runBox;
    const designs = this.designs;
    const scenario = result.plan?.scenario;
    if (!scenario) {
      box.dataset.ready = 'none';
      box.replaceChildren(el('p', { class: 'hint-text', text: 'The core did not return the chosen plan\'s scenario, so its run cannot be shown here.' }));
      return;
    }
    try {
      const run = await this.client.call('run', [JSON.stringify(scenario)], { channel: 'plan-run' });
      if (designs !== this.designs) return;
      const summary = el('div', { class: 'summary-box' });
      renderSummaryTiles(summary, run.summary);
      const charts = el('div', { class: 'chart-stack' });
      const logBox = el('div', { class: 'logs' });
      box.replaceChildren(
        el('p', { class: 'hint-text', text: 'The plan as deployed, over the simulated hour: the shaded band is the burst, the lines the autoscaler\'s scale events.' }),
        summary, charts,
        el('details', { class: 'day-log' }, el('summary', { text: 'Decision log: every autoscaler, Karpenter and scheduler decision of the run' }), logBox));
      this.charts = new RunCharts(charts, { syncKey: 'plan', specs: [RUN_CHARTS.find((s) => s.id === 'replicas'), NODES_CHART] });
      this.charts.update(run.series, {}, runMarks(scenario, run));
      new DecisionLog(logBox, { runName: 'plan-run', title: 'The chosen plan' }).render(run.decisions ?? [], run.decision_log);
      box.dataset.ready = 'true';
    } catch (error) {
      if (error.name === 'Superseded' || designs !== this.designs) return;
      box.dataset.ready = 'error';
      box.replaceChildren(el('p', { class: 'run-status error', text: error.name === 'Cancelled' ? 'Cancelled: the chosen plan\'s run is not shown.' : `Could not run the chosen plan: ${error.message}` }));
    }
  }
}

const VERDICT_TITLES = { plan: 'The plan', refused: 'Refused', no_plan: 'No plan meets the SLO' };

/** Texts one to a line (a disaggregated candidate's prefill and decode pools in one cell). */
function lines(texts) {
  return texts.flatMap((text, i) => (i ? [el('br'), text] : [text]));
}

/** Copies text to the clipboard (or, without the permission, through a selected text area); says so beside the button. */
async function copyText(text, button, note) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    const area = el('textarea', { class: 'sr-only', 'aria-hidden': 'true', tabindex: '-1', readonly: true });
    area.value = text;
    document.body.append(area);
    area.select();
    try {
      ok = document.execCommand('copy');
    } catch {
      ok = false;
    }
    area.remove();
    button.focus();
  }
  button.dataset.copy = ok ? 'copied' : 'failed';
  note.textContent = ok ? 'Copied.' : 'Could not copy: select the text below instead.';
}
