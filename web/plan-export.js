// The plan designer's words and files: how a candidate, a rule and an object are named, the
// multi-document YAML of the plan's objects and the one-page Markdown plan. No DOM: the view
// (plan.js) shows the same sentences it writes into the files. A plan has one model-server pool
// (aggregated serving) or two (disaggregated: a prefill and a decode pool, each with its own
// autoscaler and warm replicas); every sentence about a candidate's autoscaler names each pool.
import { usd } from './exercise-kit.js';
import { yamlOfJson } from './yaml-text.js';

/** The replica autoscalers the core tries (plan.cpp's signals, and the GPU-memory rule's run). */
export const SIGNALS = {
  queue_depth: { label: 'queue depth', metric: 'vllm:num_requests_waiting', unit: 'requests waiting' },
  kv_cache: { label: 'KV-cache use', metric: 'vllm:kv_cache_usage_perc', unit: 'fraction' },
  ttft_p99: { label: 'P99 time to first token', metric: 'vllm:time_to_first_token_seconds', unit: 's' },
  gpu_util: { label: 'GPU duty cycle', metric: 'DCGM_FI_DEV_GPU_UTIL', unit: '%' },
  gpu_memory: { label: 'GPU memory used', metric: 'DCGM_FI_DEV_FB_USED', unit: 'MiB' },
  goodput: { label: 'goodput (SLO misses)', metric: 'slo_violations:rate1m', unit: 'per s' },
};

/** The lesson's rules (docs/plan.md) in a few words; the core's id is shown beside them. */
export const RULES = {
  no_gpu_util_hpa: 'No HPA on GPU duty cycle',
  when_empty_on_gpu_pool: 'WhenEmpty, not WhenEmptyOrUnderutilized, on the GPU pool',
  no_gpu_memory_signal: 'No autoscaling on GPU memory',
  gang_for_tp_pp: 'A gang for tensor or pipeline parallelism over nodes',
  per_role_signals: 'Prefill on its queue, decode on its KV cache (per-role signals)',
  single_node_single_gpu_type: 'Not one node of one GPU type',
};

/** Which layer a no_plan verdict failed at, in the home view's words. */
export const LAYERS = {
  nodes: 'Layer 1, node provisioning: the topology cannot hold the burst',
  replicas: 'Layer 3, replica autoscaling: no autoscaler and warm pool met the SLO',
  pods: 'Layer 2, pod scheduling',
  budget: 'The budget: every plan that met the SLO cost more than it',
};

export const percent = (fraction) => `${(Number(fraction) * 100).toFixed(1)} %`;
export const seconds = (s) => `${Number(s).toFixed(2)} s`;
export const perHour = (value) => `${usd(value)}/h`;

/** "2 requests waiting", "50 %" (a KV-cache fraction), "1.00 s": an autoscaler's target in its metric's unit. */
export function targetText(signal, target) {
  const unit = SIGNALS[signal]?.unit ?? '';
  const n = Number(target);
  if (!Number.isFinite(n) || n <= 0) return '—';
  if (unit === 'fraction') return `${Math.round(n * 100)} %`;
  if (unit === 's') return `${n.toFixed(2)} s`;
  return `${Number(n.toPrecision(6))} ${unit}`.trim();
}

/**
 * A candidate's pools, each {role, signal, target, warm_replicas}: one aggregated pool, or (a
 * candidate with `decode`) the prefill pool (the candidate's own signal, target and warm replicas)
 * and the decode pool, in the order of the plan's `autoscalers` and `workloads`.
 */
export function pools(candidate) {
  const own = { signal: candidate?.signal, target: candidate?.target, warm_replicas: candidate?.warm_replicas };
  if (!candidate?.decode) return [{ role: 'aggregated', ...own }];
  return [{ role: 'prefill', ...own }, { role: 'decode', ...candidate.decode }];
}

/** `describe(pool, index)` of each pool, a disaggregated pool's led by its role ("prefill: …"). */
export function poolLines(candidate, describe) {
  return pools(candidate).map((p, i) => (p.role === 'aggregated' ? describe(p, i) : `${p.role}: ${describe(p, i)}`));
}

/** "queue depth (vllm:num_requests_waiting)": a signal with its metric. */
export function signalName(signal) {
  const s = SIGNALS[signal];
  return s ? `${s.label} (${s.metric})` : String(signal ?? '');
}

/** "queue depth, 2 requests waiting": a pool's signal and target in short (the candidates' tables). */
export function signalShort(pool) {
  const s = SIGNALS[pool.signal];
  return s ? `${s.label}, ${targetText(pool.signal, pool.target)}` : '—';
}

/**
 * "queue depth (vllm:num_requests_waiting), target 2 requests waiting", or for a disaggregated
 * candidate "prefill: …; decode: …".
 */
export function autoscalerText(candidate) {
  if (candidate?.signal === '-') return 'none (not simulated)';
  return poolLines(candidate, (p) => (SIGNALS[p.signal] ? `${signalName(p.signal)}, target ${targetText(p.signal, p.target)}` : String(p.signal ?? ''))).join('; ');
}

/** The chosen plan's autoscalers, each pool's kind and signal: "KEDA ScaledObject on queue depth (…), target 2 requests waiting". */
export function deployedAutoscalerText(result, candidate) {
  return poolLines(candidate, (p, i) => `${autoscalerKind(result, i)} on ${signalName(p.signal)}, target ${targetText(p.signal, p.target)}`).join('; ');
}

/** "2" warm replicas, or "1 prefill + 2 decode". */
export function warmCount(candidate) {
  return candidate?.decode ? `${candidate.warm_replicas} prefill + ${candidate.decode.warm_replicas} decode` : String(candidate?.warm_replicas);
}

/** "2 warm replicas", or "1 prefill + 2 decode warm replicas". */
export function warmText(candidate) {
  const total = candidate?.decode ? candidate.warm_replicas + candidate.decode.warm_replicas : candidate?.warm_replicas;
  return `${warmCount(candidate)} warm replica${total === 1 ? '' : 's'}`;
}

/** "Warm pool: 3 replicas (1 prefill + 2 decode)", from the plan's warm_pool. */
export function warmPoolTitle(warmPool) {
  const n = warmPool.replicas;
  const roles = ['prefill', 'decode'].filter((role) => warmPool.roles?.[role] !== undefined);
  return `Warm pool: ${n} replica${n === 1 ? '' : 's'}${roles.length ? ` (${roles.map((role) => `${warmPool.roles[role]} ${role}`).join(' + ')})` : ''}`;
}

/** The role of a model-server object, from llm-d's label on its pods (absent: aggregated). */
function roleOf(workload) {
  const template = workload?.spec?.template ?? workload?.spec?.leaderWorkerTemplate?.workerTemplate;
  return template?.metadata?.labels?.['llm-d.ai/role'] ?? 'aggregated';
}

/** The load a concurrency became ("Load: 12 clients … 1.955 req/s …"), or '' when the input gave a rate. */
export function loadSentence(result) {
  const load = result?.load_from_concurrency;
  if (!load) return '';
  return `Load: ${load.reason.charAt(0).toUpperCase()}${load.reason.slice(1)}. The plan is sized for ${Number(load.average_rps.toPrecision(4))} req/s.`;
}

/**
 * For a disaggregated plan, its pools in one sentence: "Disaggregated serving: a prefill pool
 * (Deployment vllm-prefill) and a decode pool (Deployment vllm-decode) of one model, …"; else ''.
 */
export function poolsSentence(result) {
  const workloads = result?.plan?.workloads ?? [];
  if (!workloads.some((w) => roleOf(w) !== 'aggregated')) return '';
  const named = workloads.map((w) => `a ${roleOf(w)} pool (${w.kind} ${w.metadata?.name ?? ''})`);
  return `Disaggregated serving: ${named.join(' and ')} of one model, each with its own autoscaler and warm replicas. ` +
    'A request is prefilled in the prefill pool, its KV cache handed to a decode server over NIXL (vLLM\'s NixlConnector), and decoded there.';
}

/** "p5.48xlarge, spot". */
export function placeText(candidate) {
  const tp = candidate.tensor_parallel ? `, TP${candidate.tensor_parallel}` : '';
  return `${candidate.instance_type}, ${candidate.capacity_type}${tp}`;
}

/** "TP4: llama-3.3-70b-fp8-tp4-h100-sxm5": the replica's tensor-parallel degree and the engine profile that ran. */
export function shapeText(candidate) {
  return `TP${candidate.tensor_parallel}: ${candidate.engine_profile}`;
}

/** The figures of a simulated candidate (or rule run) in one line. */
export function runText(c) {
  if (!c?.simulated) return 'not simulated';
  return `${percent(c.slo_attainment)} within the SLO, P99 TTFT ${seconds(c.ttft_p99_s)}, ${perHour(c.node_cost_usd_per_hour)}, ` +
    `peak ${c.peak_replicas} replica${c.peak_replicas === 1 ? '' : 's'} on ${c.nodes_launched} node${c.nodes_launched === 1 ? '' : 's'}`;
}

/** Whether two candidate rows are the same plan (the chosen one is a copy of one of the rows): decode pool and KAI quota included. */
export function sameCandidate(a, b) {
  return Boolean(a && b) && ['instance_type', 'capacity_type', 'engine_profile', 'signal', 'target', 'warm_replicas', 'max_replicas', 'node_cost_usd_per_hour']
    .every((key) => a[key] === b[key])
    && ['signal', 'target', 'warm_replicas'].every((key) => a.decode?.[key] === b.decode?.[key])
    && a.inference_quota_gpus === b.inference_quota_gpus;
}

/** The index of the chosen plan among the candidates (the first row that is the same plan), or -1. */
export function chosenIndex(result) {
  return (result?.candidates ?? []).findIndex((c) => sameCandidate(c, result?.chosen));
}

/** A candidate's verdict in words: "chosen", why it was rejected, or why an acceptable one was not chosen. */
export function candidateVerdict(c, result, index = -1) {
  const quota = c.inference_quota_gpus ? `The inference queue's quota cut to ${c.inference_quota_gpus} GPUs, the rest of the pool guaranteed to training. ` : '';
  return quota + candidateOutcome(c, result, index);
}

function candidateOutcome(c, result, index) {
  if (index >= 0 && index === chosenIndex(result)) return 'Chosen: the cheapest plan that meets the SLO';
  if (c.rejected?.length) return `Rejected: ${c.rejected.join('; ')}`;
  const chosen = result?.chosen;
  if (!chosen) return 'Acceptable';
  return c.node_cost_usd_per_hour > chosen.node_cost_usd_per_hour
    ? `Acceptable, not chosen: ${perHour(c.node_cost_usd_per_hour)} against the chosen ${perHour(chosen.node_cost_usd_per_hour)}`
    : 'Acceptable, not chosen: the same cost as the chosen plan, which was found first';
}

/** The verdict in one sentence. */
export function verdictSentence(result) {
  if (result?.verdict === 'plan') {
    const c = result.chosen;
    return `Plan: ${placeText(c)}; ${deployedAutoscalerText(result, c)}; ${warmText(c)}. Simulated: ${runText(c)}.`;
  }
  if (result?.verdict === 'refused') {
    const rules = (result.refusals ?? []).map((r) => RULES[r.rule] ?? r.rule);
    return `Refused by the lesson's rule${rules.length === 1 ? '' : 's'}: ${rules.join('; ')}.`;
  }
  if (result?.verdict === 'no_plan') return `No plan meets the SLO: ${result.reason}.`;
  return 'The core returned no verdict.';
}

/** "KEDA ScaledObject" or "HorizontalPodAutoscaler (autoscaling/v2)": the kind of the plan's autoscaler of pool `index`. */
export function autoscalerKind(result, index = 0) {
  const a = result?.plan?.autoscalers?.[index];
  if (!a) return 'autoscaler';
  return a.kind === 'ScaledObject' ? 'KEDA ScaledObject' : `${a.kind} (${a.apiVersion})`;
}

/**
 * The plan's objects, one block each: {id, title, object, yaml, deployable}: the NodePools (one per
 * placement domain), the EC2NodeClass, each pool's model server (Deployment or LeaderWorkerSet) and
 * autoscaler, KAI's queues and Topology. `deployable` objects are Kubernetes objects (kubectl apply);
 * KAI Scheduler's pod settings are what the model server's pods and PodGroup carry, written as a fragment.
 */
export function planObjects(result) {
  const plan = result?.plan;
  if (!plan) return [];
  const name = (o) => `${o.kind} ${o.metadata?.name ?? ''}`.trim();
  const blocks = [
    ...(plan.nodepools ?? []).map((n, i) => ({ id: `nodepool-${i}`, title: name(n), object: n, deployable: true })),
    { id: 'ec2nodeclass', title: name(plan.ec2nodeclass), object: plan.ec2nodeclass, deployable: true },
    ...(plan.workloads ?? []).map((w, i) => ({ id: `workload-${i}`, title: name(w), object: w, deployable: true })),
    ...(plan.autoscalers ?? []).map((a, i) => ({ id: `autoscaler-${i}`, title: name(a), object: a, deployable: true })),
    ...(plan.kai?.queues ?? []).map((q, i) => ({ id: `queue-${i}`, title: `KAI ${name(q)}`, object: q, deployable: true })),
    ...(plan.kai?.topologies ?? []).map((o, i) => ({ id: `topology-${i}`, title: `KAI ${name(o)}`, object: o, deployable: true })),
  ];
  const { queues, topologies, ...pods } = plan.kai ?? {};
  if (Object.keys(pods).length) blocks.push({ id: 'kai-pods', title: 'KAI Scheduler: the pods\' settings and their PodGroup', object: pods, deployable: false });
  for (const b of blocks) b.yaml = yamlOfJson(b.object);
  return blocks;
}

/** The deployable objects as one multi-document YAML file ("---" between them), the pods' settings as a comment. */
export function planYaml(result) {
  const blocks = planObjects(result);
  const pods = blocks.find((b) => !b.deployable);
  const c = result.chosen;
  const head = [
    `GPU autoscaling plan: ${placeText(c)}; ${poolLines(c, (p, i) => `${autoscalerKind(result, i)} on ${SIGNALS[p.signal]?.label ?? p.signal}, ${p.warm_replicas} warm`).join('; ')}.`,
    'Written by the GPU Autoscaling Lab\'s plan designer. CLUSTER_NAME, MODEL_ID and VLLM_VERSION are yours to fill in.',
    ...(pods ? ['', 'KAI Scheduler\'s settings of the model server\'s pods (the Deployment or LeaderWorkerSet below carries them) and their PodGroup:',
      ...pods.yaml.trimEnd().split('\n').map((l) => `  ${l}`)] : []),
  ];
  const comment = head.map((line) => (line ? `# ${line}` : '#')).join('\n');
  return `${comment}\n${blocks.filter((b) => b.deployable).map((b) => `---\n${b.yaml}`).join('')}`;
}

/** One Markdown table cell: no line break, no unescaped pipe. */
function cell(value) {
  return String(value ?? '').replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
}

function table(header, rows) {
  return [`| ${header.map(cell).join(' | ')} |`, `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`)].join('\n');
}

function candidatesTable(candidates, result, { only = null } = {}) {
  const rows = [];
  candidates.forEach((c, i) => {
    if (only && !only(c, i)) return;
    rows.push([String(i + 1), c.instance_type, c.capacity_type, autoscalerText(c), warmCount(c), String(c.max_replicas),
      c.simulated ? percent(c.slo_attainment) : '—', c.simulated ? seconds(c.ttft_p99_s) : '—',
      c.simulated ? perHour(c.node_cost_usd_per_hour) : '—', candidateVerdict(c, result, i)]);
  });
  return rows.length
    ? table(['#', 'instance type', 'capacity', 'autoscaler', 'warm', 'max replicas', 'SLO', 'P99 TTFT', 'nodes', 'verdict'], rows)
    : 'None.';
}

/**
 * The one-page plan in Markdown: the inputs, the verdict, the chosen plan and the what-if, the warm
 * pool and why, the rules with their runs, the rejected candidates, the dashboard, the kill switch
 * and every object as a fenced yaml block. `inputRows` are [label, value] pairs as the form shows
 * them; `inputYaml` is the input as `gpuscale plan FILE` reads it; `whatIfBurst` the what-if run's
 * multiplier of the burst; `link` the page's link to it.
 */
export function planMarkdown({ result, inputRows, inputYaml, whatIfBurst = null, link = '', when = new Date() }) {
  const out = ['# GPU autoscaling plan', ''];
  out.push(`Designed by the GPU Autoscaling Lab's plan designer on ${when.toISOString().slice(0, 10)}. ` +
    'Every figure below comes from a simulation of the described workload, not from a cluster.', '');
  if (link) out.push(`Link to this plan: <${link}>`, '');
  out.push('## Inputs', '', table(['input', 'value'], inputRows), '',
    'The same input for the command line (`gpuscale plan plan-input.yaml`):', '', '```yaml', inputYaml.trimEnd(), '```', '');
  out.push('## Verdict', '', verdictSentence(result), '');
  const candidates = result.candidates ?? [];
  if (result.verdict === 'refused') {
    out.push(table(['rule', 'reason'], (result.refusals ?? []).map((r) => [`${RULES[r.rule] ?? r.rule} (\`${r.rule}\`)`, r.reason])), '');
    return `${out.join('\n')}\n`;
  }
  if (result.verdict === 'no_plan') {
    out.push(`Failed layer: ${LAYERS[result.failed_layer] ?? result.failed_layer} (\`${result.failed_layer}\`).`, '',
      '## Candidates', '', candidatesTable(candidates, result), '');
    return `${out.join('\n')}\n`;
  }
  const plan = result.plan;
  const c = result.chosen, w = result.what_if;
  const row = (label, f) => [label, f(c), w ? f(w) : '—'];
  const disaggregated = poolsSentence(result);
  out.push('## The chosen plan', '', ...(result.load_from_concurrency ? [loadSentence(result), ''] : []), ...(disaggregated ? [disaggregated, ''] : []),
    table(['', 'the plan', `what if the burst is ${whatIfBurst ? `${whatIfBurst}× ` : ''}larger`], [
      row('instance type', (x) => x.instance_type),
      row('capacity type', (x) => x.capacity_type),
      row('replica shape', (x) => shapeText(x)),
      row('autoscaler', (x) => deployedAutoscalerText(result, x)),
      row('warm replicas', (x) => warmCount(x)),
      row('replicas at most', (x) => String(x.max_replicas)),
      row('requests within the SLO', (x) => percent(x.slo_attainment)),
      row('P99 time to first token', (x) => seconds(x.ttft_p99_s)),
      row('node cost', (x) => perHour(x.node_cost_usd_per_hour)),
      row('peak replicas', (x) => String(x.peak_replicas)),
      row('nodes launched', (x) => String(x.nodes_launched)),
      row('requests (dropped)', (x) => `${x.num_requests} (${x.num_dropped})`),
      row('meets the SLO', (x) => (x.meets_slo ? 'yes' : 'no')),
    ]), '');
  out.push(`## ${warmPoolTitle(plan.warm_pool)}`, '',
    `${plan.warm_pool.reason.charAt(0).toUpperCase()}${plan.warm_pool.reason.slice(1)}.`, '');
  if (plan.nodepool_lint?.length) out.push('NodePool warnings from the lab\'s linter:', '', ...plan.nodepool_lint.map((l) => `- ${l}`), '');
  out.push('## The rules, each checked by a run', '',
    table(['rule', 'the simulation', 'reason', 'the run'], (result.rules ?? []).map((r) => [
      `${RULES[r.rule] ?? r.rule} (\`${r.rule}\`)`, r.simulation_disagrees ? '**disagrees** on this input' : 'confirms it',
      r.reason, r.run ? `${placeText(r.run)}, ${autoscalerText(r.run)}: ${runText(r.run)}` : '—'])), '');
  const rejected = candidates.filter((x) => x.rejected?.length).length;
  out.push(`## Rejected candidates (${rejected} of ${candidates.length})`, '',
    candidatesTable(candidates, result, { only: (x) => x.rejected?.length > 0 }), '');
  out.push('## Dashboard', '', ...(plan.dashboard ?? []).map((d) => `- ${d}`), '');
  out.push('## Kill switch', '', plan.kill_switch, '');
  out.push('## The objects', '');
  for (const b of planObjects(result)) out.push(`### ${b.title}`, '', '```yaml', b.yaml.trimEnd(), '```', '');
  return `${out.join('\n')}\n`;
}
