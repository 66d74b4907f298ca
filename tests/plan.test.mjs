// The plan designer through the WASM module: byte-identical with the native CLI, progress to the end,
// and every object it emits valid against the upstream CRD schemas that npm packages ship
// (@kubernetes-models/karpenter: NodePool and EC2NodeClass; kubernetes-models: autoscaling/v2 HPA;
// @kubernetes-models/keda: ScaledObject; kubernetes-models: apps/v1 Deployment). KAI's Queue and Topology
// and the LeaderWorkerSet have no published schema package; the lab's own readers check them (tests/test_plan.cpp).
// Each plan's pools match its serving: one model server and autoscaler (aggregated), or a prefill and
// a decode Deployment (disaggregated), each with its own autoscaler aimed at it.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

const root = new URL('../', import.meta.url);
const site = new URL(process.env.GPUSCALE_SITE ? `file://${process.env.GPUSCALE_SITE.replace(/\/?$/, '/')}` : '../build-wasm/site/', import.meta.url);
const cli = process.env.GPUSCALE_CLI ?? fileURLToPath(new URL('build/cli/gpuscale', root));
const EXAMPLES = ['docs/examples/plan-small-cluster.yaml', 'docs/examples/plan-405b-spot.yaml', 'docs/examples/plan-disaggregated.yaml'];
// Disaggregated serving given as a rate: long prompts on at most 3 nodes of one rack (~20 one-hour runs).
const DISAGGREGATED = {
  topology: { instance_types: ['p5.48xlarge', 'p5en.48xlarge'], max_nodes: 3 },
  workload: { serving: 'disaggregated', average_rps: 1.0, burst_factor: 4, prompt_tokens: 6000, output_tokens: 300 },
  slo: { ttft_p99_s: 3, itl_s: 0.06, attainment: 0.95 },
};

let sim;
before(async () => {
  const { default: createSim } = await import(new URL('sim.mjs', site));
  sim = await createSim({ wasmBinary: await readFile(new URL('sim.wasm', site)) });
});

async function schemaClass(object) {
  switch (`${object.apiVersion} ${object.kind}`) {
    case 'karpenter.sh/v1 NodePool': return (await import('@kubernetes-models/karpenter/karpenter.sh/v1/NodePool')).NodePool;
    case 'karpenter.k8s.aws/v1 EC2NodeClass': return (await import('@kubernetes-models/karpenter/karpenter.k8s.aws/v1/EC2NodeClass')).EC2NodeClass;
    case 'autoscaling/v2 HorizontalPodAutoscaler': return (await import('kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler')).HorizontalPodAutoscaler;
    case 'keda.sh/v1alpha1 ScaledObject': return (await import('@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject')).ScaledObject;
    case 'apps/v1 Deployment': return (await import('kubernetes-models/apps/v1/Deployment')).Deployment;
    default: return null;
  }
}

/**
 * The plan of an input natively (the CLI reading `input` from stdin) and in WASM: asserts they are
 * byte-identical and the progress reaches the end; returns the parsed plan.
 */
function planBoth(input) {
  const native = execFileSync(cli, ['plan', '-'], { input, maxBuffer: 1 << 28 }).toString().trimEnd();
  const fractions = [];
  const wasm = sim.plan(input, (fraction) => fractions.push(fraction));
  assert.equal(wasm, `{"ok":true,"result":${native}}`, 'byte-identical with the CLI');
  assert.ok(fractions.length > 10 && fractions.at(-1) === 1, `progress reported to the end (${fractions.length} calls)`);
  return JSON.parse(native);
}

/**
 * Checks a plan's pools against its serving: one model server `vllm` (aggregated), or the prefill and
 * the decode Deployments with llm-d's role label and vLLM's NIXL connector (disaggregated); each
 * starts at its warm replicas.
 */
function assertPools(out) {
  const { plan, chosen } = out;
  if (out.input.workload.serving === 'aggregated') {
    assert.deepEqual(plan.workloads.map((w) => w.metadata.name), ['vllm'], 'one pool');
    assert.equal(chosen.decode, undefined, 'an aggregated candidate has no decode pool');
    assert.deepEqual(plan.warm_pool.roles, { aggregated: chosen.warm_replicas });
    assert.equal(plan.workloads[0].spec.replicas, chosen.warm_replicas, 'the model server starts at its warm replicas');
    return;
  }
  assert.equal(out.input.workload.serving, 'disaggregated');
  assert.deepEqual(plan.workloads.map((w) => [w.kind, w.metadata.name, w.spec.template.metadata.labels['llm-d.ai/role']]),
    [['Deployment', 'vllm-prefill', 'prefill'], ['Deployment', 'vllm-decode', 'decode']]);
  for (const w of plan.workloads) assert.ok(w.spec.template.spec.containers[0].args.includes('--kv-transfer-config'), `${w.metadata.name}: the KV cache over NIXL`);
  assert.ok(chosen.decode, 'the chosen candidate has its decode pool');
  assert.deepEqual(plan.warm_pool.roles, { prefill: chosen.warm_replicas, decode: chosen.decode.warm_replicas });
  assert.equal(plan.warm_pool.replicas, chosen.warm_replicas + chosen.decode.warm_replicas);
  plan.workloads.forEach((w, i) => assert.equal(w.spec.replicas, [chosen.warm_replicas, chosen.decode.warm_replicas][i], `${w.metadata.name} starts at its warm replicas`));
  assert.ok(out.rules.some((r) => r.rule === 'per_role_signals'), 'the per-role rule is checked');
  assert.ok(out.candidates.filter((c) => c.simulated).every((c) => c.decode), 'every simulated candidate has a decode pool');
}

/**
 * Checks a plan's objects against the upstream schemas: each NodePool, the EC2NodeClass, each pool's
 * autoscaler and model server (a Deployment; a LeaderWorkerSet has no schema package), and that each
 * autoscaler, named after its model server, scales it.
 */
async function assertObjectsValid(plan) {
  assert.equal(plan.autoscalers.length, plan.workloads.length, 'an autoscaler per pool');
  assert.ok(plan.nodepools.length >= 1, 'a NodePool at least');
  const objects = [...plan.nodepools, plan.ec2nodeclass, ...plan.autoscalers];
  for (const workload of plan.workloads) {
    if (workload.kind === 'Deployment') objects.push(workload);
    else assert.equal(workload.kind, 'LeaderWorkerSet');
  }
  for (const object of objects) {
    const Model = await schemaClass(object);
    assert.ok(Model, `a schema for ${object.apiVersion} ${object.kind}`);
    assert.doesNotThrow(() => new Model(object).validate(), `${object.kind} ${object.metadata.name} against its upstream schema`);
  }
  plan.autoscalers.forEach((a, i) => {
    assert.equal(a.metadata.name, plan.workloads[i].metadata.name, 'named after its model server');
    assert.equal(a.spec.scaleTargetRef.name, plan.workloads[i].metadata.name, `${a.kind} ${a.metadata.name} scales its own pool`);
  });
}

for (const file of EXAMPLES) {
  test(`plan ${file}: the same natively and in WASM, its objects valid against the upstream schemas`, async () => {
    const input = YAML.parse(await readFile(new URL(file, root), 'utf8'));
    const out = planBoth(JSON.stringify(input));
    assert.equal(out.verdict, 'plan');
    assert.equal(out.input.workload.serving, input.workload.serving ?? 'aggregated');
    assertPools(out);
    await assertObjectsValid(out.plan);
  });
}

test('plan, disaggregated: the same natively and in WASM; a prefill and a decode Deployment, each with its autoscaler, valid against the upstream schemas', async () => {
  const out = planBoth(JSON.stringify(DISAGGREGATED));
  assert.equal(out.verdict, 'plan');
  assert.equal(out.input.workload.serving, 'disaggregated');
  assertPools(out);
  await assertObjectsValid(out.plan);
});

test('plan: the schemas refuse what they should (the check is not vacuous)', async () => {
  const out = JSON.parse(execFileSync(cli, ['plan', fileURLToPath(new URL(EXAMPLES[0], root))], { maxBuffer: 1 << 28 }).toString());
  const Deployment = await schemaClass(out.plan.workloads[0]);
  const noContainers = structuredClone(out.plan.workloads[0]);
  delete noContainers.spec.template.spec.containers;
  assert.throws(() => new Deployment(noContainers).validate());
  const NodePool = await schemaClass(out.plan.nodepools[0]);
  const broken = structuredClone(out.plan.nodepools[0]);
  broken.spec.disruption.consolidationPolicy = 'WhenIdle';
  assert.throws(() => new NodePool(broken).validate());
  const HPA = await schemaClass({ apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler' });
  assert.throws(() => new HPA({ apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: { name: 'x' }, spec: { minReplicas: 1 } }).validate());
});
