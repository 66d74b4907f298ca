// The plan designer through the WASM module: byte-identical with the native CLI, progress to the end,
// and every object it emits valid against the upstream CRD schemas that npm packages ship
// (@kubernetes-models/karpenter: NodePool and EC2NodeClass; kubernetes-models: autoscaling/v2 HPA;
// @kubernetes-models/keda: ScaledObject; kubernetes-models: apps/v1 Deployment). KAI's Queue and the
// LeaderWorkerSet have no published schema package; the lab's own reader checks the queues (tests/test_plan.cpp).
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';

const root = new URL('../', import.meta.url);
const site = new URL(process.env.GPUSCALE_SITE ? `file://${process.env.GPUSCALE_SITE.replace(/\/?$/, '/')}` : '../build-wasm/site/', import.meta.url);
const cli = process.env.GPUSCALE_CLI ?? fileURLToPath(new URL('build/cli/gpuscale', root));
const EXAMPLES = ['docs/examples/plan-small-cluster.yaml', 'docs/examples/plan-405b-spot.yaml'];

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

for (const file of EXAMPLES) {
  test(`plan ${file}: the same natively and in WASM, its objects valid against the upstream schemas`, async () => {
    const input = JSON.stringify(YAML.parse(await readFile(new URL(file, root), 'utf8')));
    const native = execFileSync(cli, ['plan', fileURLToPath(new URL(file, root))], { maxBuffer: 1 << 28 }).toString().trimEnd();
    const fractions = [];
    const wasm = sim.plan(input, (fraction) => fractions.push(fraction));
    assert.equal(wasm, `{"ok":true,"result":${native}}`, 'byte-identical with the CLI');
    assert.ok(fractions.length > 10 && fractions.at(-1) === 1, `progress reported to the end (${fractions.length} calls)`);
    const out = JSON.parse(native);
    assert.equal(out.verdict, 'plan');
    // The model server's object: a Deployment (checked) or a LeaderWorkerSet (no schema package).
    const objects = [out.plan.nodepool, out.plan.ec2nodeclass, out.plan.autoscaler];
    if (out.plan.workload.kind === 'Deployment') objects.push(out.plan.workload);
    else assert.equal(out.plan.workload.kind, 'LeaderWorkerSet');
    for (const object of objects) {
      const Model = await schemaClass(object);
      assert.ok(Model, `a schema for ${object.apiVersion} ${object.kind}`);
      assert.doesNotThrow(() => new Model(object).validate(), `${object.kind} against its upstream schema`);
    }
  });
}

test('plan: the schemas refuse what they should (the check is not vacuous)', async () => {
  const out = JSON.parse(execFileSync(cli, ['plan', fileURLToPath(new URL(EXAMPLES[0], root))], { maxBuffer: 1 << 28 }).toString());
  const NodePool = await schemaClass(out.plan.nodepool);
  const broken = structuredClone(out.plan.nodepool);
  broken.spec.disruption.consolidationPolicy = 'WhenIdle';
  assert.throws(() => new NodePool(broken).validate());
  const HPA = await schemaClass({ apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler' });
  assert.throws(() => new HPA({ apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler', metadata: { name: 'x' }, spec: { minReplicas: 1 } }).validate());
});
