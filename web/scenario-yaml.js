// The playground's "Scenario as YAML": a whole scenario (docs/scenario.md) in a YAML editor, started
// from one of the cluster scenarios that use layer 2 (each scenarios/*.json file written out as YAML,
// its LeaderWorkerSet, KAI queues and kube-scheduler configuration in their real shapes), edited and
// run by the playground, whose summary, charts, diagnosis view and decision log then show it. The
// core's error names a JSON path: it is shown on its line. The learner's text is kept per scenario
// in localStorage. An alternative to the knob form, which keeps working as it is.
import { el } from './text.js';
import { YamlEditor } from './yaml-editor.js';
import { locatePath, readOneYaml, yamlOfJson } from './yaml-text.js';

/** The scenarios offered (the files are the ones the CLI and the determinism tests run). */
export const YAML_SCENARIOS = [
  {
    id: 'lws-7-of-8', file: 'scenarios/golden-lws-7-of-8.json',
    title: 'LeaderWorkerSet: the 7-of-8 trap (kube-scheduler, Karpenter)',
    about: 'A 405B model served by a LeaderWorkerSet of 8 pods of 2 GPUs on four p5 nodes. When the HPA asks for a second group it finds 14 free GPUs for its 16: kube-scheduler binds 7 pods, Karpenter launches a node for the 8th, and 14 GPUs wait about 5 minutes (partial_group_gpu_hours). Try schedulerName: kai-scheduler and priorityClassName: train in the workerTemplate: KAI places each group whole or not at all.',
  },
  {
    id: 'kai-two-tenants', file: 'scenarios/golden-kai-two-tenants.json',
    title: 'KAI Scheduler: two tenants on one pool (queues, reclaim)',
    about: 'An inference queue with a 16-GPU quota and a training queue with none, on four p5 nodes: training borrows the idle GPUs and is reclaimed when inference scales up, each reclaim costing the new replica the training pod\'s 90 s checkpoint. Try other quotas for the two queues, or more training replicas.',
  },
  {
    id: 'ca-half-placed-group', file: 'scenarios/golden-ca-half-placed-group.json',
    title: 'Cluster Autoscaler and a half-placed group (LeaderWorkerSet)',
    about: 'A group of 2 pods of 8 GPUs under Cluster Autoscaler with maxSize 3: the second group needs two new nodes, CA adds the one maxSize leaves, the leader binds and the worker stays Pending, so 8 GPUs serve nothing to the end. Try maxSize: 4.',
  },
];

// Comments written above the layer-2 objects when a scenario becomes YAML (docs/scenario.md).
const COMMENTS = {
  '/leaderWorkerSet': 'leaderworkerset.x-k8s.io/v1 LeaderWorkerSet: each replica is a group of `size` pods\n(a leader and its workers). kube-scheduler places each pod on its own; KAI Scheduler\nmakes one PodGroup per group (minMember = size). Its metadata.annotations may name\nkai.scheduler/topology and kai.scheduler/topology-required-placement.',
  '/cluster/kai': 'KAI Scheduler, for the pods whose schedulerName is kai-scheduler: Queues\n(scheduling.run.ai/v2), Topologies (kai.scheduler/v1alpha1) and the scheduler\'s settings.',
  '/cluster/kube_scheduler': 'kube-scheduler\'s KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1).',
  '/cluster/inference_pod': 'The model-server pods: schedulerName and the kai.scheduler/queue label put them in a KAI queue.',
  '/cluster/workloads': 'Other work on the cluster: each a pod spec and a replica count.',
  '/cluster/cluster_autoscaler': 'Cluster Autoscaler\'s node groups (docs/cluster-autoscaler.md).',
  '/cluster/nodepools': 'Karpenter NodePools (karpenter.sh/v1).',
};

// Where a scenario has no kube-scheduler configuration, one to uncomment (docs/scenario.md,
// `cluster.kube_scheduler`), written above `initial_nodes` at the indentation it needs.
const KUBE_SCHEDULER_EXAMPLE = `kube-scheduler's configuration: remove the "# " of the lines below to bin-pack GPUs
(MostAllocated) instead of spreading pods (LeastAllocated, the default).
kube_scheduler:
  apiVersion: kubescheduler.config.k8s.io/v1
  kind: KubeSchedulerConfiguration
  profiles:
    - schedulerName: default-scheduler
      pluginConfig:
        - name: NodeResourcesFit
          args:
            scoringStrategy:
              type: MostAllocated
              resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}, {name: nvidia.com/gpu, weight: 1}]`;

const STORAGE_PREFIX = 'gpuscale:playground-yaml:';  // + scenario id → the learner's text; "selected" → the id

function load(key) {
  try {
    return localStorage.getItem(`${STORAGE_PREFIX}${key}`);
  } catch {
    return null;
  }
}

function store(key, value) {
  try {
    if (value === null) localStorage.removeItem(`${STORAGE_PREFIX}${key}`);
    else localStorage.setItem(`${STORAGE_PREFIX}${key}`, value);
  } catch {
    // private mode or quota: the text just isn't kept
  }
}

/** A scenario file's JSON as YAML, with a header saying where it comes from and how to run it. */
export function scenarioYaml(entry, json) {
  return yamlOfJson(json, {
    header: `${entry.file}, written as YAML (every field: docs/scenario.md).\nEdit it and press "Run this YAML": the playground's results below show the run.`,
    comments: json?.cluster && !json.cluster.kube_scheduler && json.cluster.initial_nodes
      ? { ...COMMENTS, '/cluster/initial_nodes': KUBE_SCHEDULER_EXAMPLE } : COMMENTS,
  });
}

export class ScenarioYaml {
  /**
   * @param {{onRun: (scenario: object, source: {id: string, file: string, edited: boolean}) => Promise<void>}} options
   *   onRun runs the scenario and shows it; it rejects with the core's error ({path, detail}) when the
   *   scenario was refused, or with Superseded / Cancelled
   */
  constructor({ onRun }) {
    this.onRun = onRun;
    this.files = new Map();  // scenario id → the file as YAML
    this.current = null;
    this.loading = null;
    const id = 'pg-yaml';
    const saved = load('selected');
    const start = YAML_SCENARIOS.some((s) => s.id === saved) ? saved : YAML_SCENARIOS[0].id;
    this.select = el('select', { id: `${id}-scenario`, onchange: () => this._open(this.select.value) },
      YAML_SCENARIOS.map((s) => el('option', { value: s.id, text: s.title, selected: s.id === start })));
    this.resetButton = el('button', { type: 'button', class: 'secondary small', id: `${id}-reset`, text: 'Reset to the file', onclick: () => this._reset() });
    this.editedNote = el('span', { class: 'hint-text', 'aria-live': 'polite' });
    this.about = el('p', { class: 'hint-text pg-yaml-about' });
    this.verdict = el('p', { class: 'np-verdict', id: `${id}-verdict`, 'aria-live': 'polite' });
    this.detail = el('div', { class: 'np-detail' });
    this.runButton = el('button', { type: 'button', class: 'primary', id: `${id}-run`, text: 'Run this YAML', onclick: () => this.run() });
    this.editor = new YamlEditor({
      id: `${id}-text`, describedBy: [`${id}-verdict`], minRows: 14, maxRows: 30,
      onInput: (text) => this._edited(text),
    });
    this.editor.textarea.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
        event.preventDefault();
        this.run();
      }
    });
    this.editorRoot = el('div', { class: 'np-editor pg-yaml-editor', dataset: { state: 'empty' } },
      el('label', { for: `${id}-text`, class: 'np-label', text: 'The scenario (YAML)' }),
      el('div', { class: 'np-layout' },
        this.editor.box,
        el('div', { class: 'np-report' },
          el('div', { class: 'actions' }, this.runButton, el('span', { class: 'hint-text', text: 'or Ctrl+Enter in the text' })),
          this.verdict, this.detail)));
    this.root = el('details', { class: 'pg-yaml', id, ontoggle: () => { if (this.root.open) this.ready(); } },
      el('summary', { text: 'Scenario as YAML: run a whole scenario with its LeaderWorkerSet, KAI queues and scheduler settings' }),
      el('p', { class: 'hint-text', text: 'An alternative to the knobs: start from a cluster scenario that uses layer 2, edit any field, and run it. The results below then say they came from this YAML; moving a knob runs the knob form again.' }),
      el('div', { class: 'pg-yaml-controls' },
        el('div', { class: 'field' }, el('label', { for: `${id}-scenario`, text: 'Start from' }), this.select),
        el('div', { class: 'sched-reset' }, this.resetButton, this.editedNote)),
      this.about,
      this.editorRoot);
  }

  /** Opens the chosen scenario the first time the section is opened (its files are fetched then). */
  ready() {
    if (!this.loading) this.loading = this._open(this.select.value);
    return this.loading;
  }

  async _open(id) {
    const entry = YAML_SCENARIOS.find((s) => s.id === id);
    this.current = entry;
    store('selected', id);
    this.about.textContent = entry.about;
    try {
      if (!this.files.has(id)) {
        const response = await fetch(entry.file);
        if (!response.ok) throw new Error(`could not load ${entry.file}: HTTP ${response.status}`);
        this.files.set(id, scenarioYaml(entry, await response.json()));
      }
    } catch (error) {
      this._state('error', `✗ ${error.message}`);
      return;
    }
    if (this.current !== entry) return;  // another scenario was picked meanwhile
    this.editor.textarea.value = load(id) ?? this.files.get(id);
    this.editor.setMarkers(new Map());
    this._noteEdited();
    this._check();
  }

  _reset() {
    const original = this.files.get(this.current?.id);
    if (original === undefined || original === this.editor.text) return;
    this.editor.setText(original);
    this.editor.focus();
  }

  _noteEdited() {
    const edited = this.editor.text !== this.files.get(this.current?.id);
    this.resetButton.disabled = !edited;
    this.editedNote.textContent = edited ? 'Edited: your text is kept in this browser.' : 'The file as written.';
    this.editorRoot.dataset.edited = String(edited);
    return edited;
  }

  _edited(text) {
    if (!this.current) return;
    store(this.current.id, text === this.files.get(this.current.id) ? null : text);
    this._noteEdited();
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this._check(), 300);
  }

  /** YAML syntax as the learner types (the core judges the fields when the scenario is run). */
  _check() {
    const read = readOneYaml(this.editor.text, { what: 'a scenario' });
    if (!read.ok) {
      this._error(read.empty ? 'empty' : 'yaml-error', { ...read.error, title: read.empty ? 'Nothing to run yet' : 'YAML syntax error' });
      return null;
    }
    if (this.editorRoot.dataset.state !== 'ran' || this.ranText !== this.editor.text) {
      this._state('ready', 'Ready to run: press "Run this YAML".');
    }
    return read;
  }

  /** Reads the text and has the playground run it. */
  async run() {
    await this.ready();
    const read = this._check();
    if (!read) return;
    const text = this.editor.text;
    this._state('running', 'Running…');
    try {
      await this.onRun(read.value, { id: this.current.id, file: this.current.file, edited: this._noteEdited() });
      if (this.editor.text !== text) return;
      this.ranText = text;
      this._state('ran', `✓ Ran: the results below are this YAML's (${this.current.file}${this.editorRoot.dataset.edited === 'true' ? ', edited' : ''}).`);
    } catch (error) {
      if (error.name === 'Superseded') {
        this._state('ready', 'Not shown: a newer run (a knob moved) replaced it.');
        return;
      }
      if (error.name === 'Cancelled') {
        this._state('ready', 'Cancelled: nothing of this YAML was run.');
        return;
      }
      const path = error.path ?? '';
      const at = !error.crashed && read.value !== null && typeof read.value === 'object' ? locatePath(read.doc, read.lineCounter, path) : null;
      this._error('invalid', { title: error.crashed ? 'The simulation crashed on this scenario and was restarted' : 'Not a scenario the lab can run',
                               path, message: error.detail ?? error.message, line: at?.line, col: at?.col, exact: at?.exact });
    }
  }

  _state(state, text) {
    this.editorRoot.dataset.state = state;
    this.editor.textarea.setAttribute('aria-invalid', 'false');
    this.verdict.textContent = text;
    this.detail.replaceChildren();
    this.editor.setMarkers(new Map());
  }

  _error(state, error) {
    this.editorRoot.dataset.state = state;
    this.editor.textarea.setAttribute('aria-invalid', String(state !== 'empty'));
    this.verdict.replaceChildren(el('span', { class: 'mark', text: state === 'empty' ? '…' : '✗', 'aria-hidden': 'true' }), ` ${error.title}`);
    const parts = [];
    const markers = new Map();
    if (error.line) {
      markers.set(error.line, 'error');
      parts.push(this.editor.jump(error.line, error.col, error.exact === false ? `near line ${error.line}` : `line ${error.line}, column ${error.col}`));
    }
    if (error.path) parts.push(el('code', { class: 'np-path', text: error.path }));
    this.detail.replaceChildren(el('p', { class: 'np-error' }, ...parts.flatMap((p) => [p, ' ']), el('span', { class: 'np-message', text: error.message })));
    this.editor.setMarkers(markers);
  }
}
