// The WASM module under node: byte-identical results with the native CLI (determinism), clear
// errors for bad input with the module still usable afterwards, and CLI/WASM agreement on exercises.
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = new URL('../', import.meta.url);
const site = new URL(process.env.GPUSCALE_SITE ? `file://${process.env.GPUSCALE_SITE.replace(/\/?$/, '/')}` : '../build-wasm/site/', import.meta.url);
const cli = process.env.GPUSCALE_CLI ?? fileURLToPath(new URL('build/cli/gpuscale', root));

let sim;
before(async () => {
  const { default: createSim } = await import(new URL('sim.mjs', site));
  sim = await createSim({ wasmBinary: await readFile(new URL('sim.wasm', site)) });
});

function native(args, input) {
  return execFileSync(cli, args, { input, maxBuffer: 1 << 30, cwd: fileURLToPath(root) }).toString();
}

test('golden scenarios give byte-identical result JSON natively and in WASM', async () => {
  const dir = new URL('scenarios/', root);
  const files = (await readdir(dir)).filter((f) => f.startsWith('golden-') && f.endsWith('.json')).sort();
  assert.ok(files.length >= 4, 'golden scenarios present');
  for (const f of files) {
    const text = await readFile(new URL(f, dir), 'utf8');
    const nat = native(['run', fileURLToPath(new URL(f, dir))]).trimEnd();
    const wasm = sim.run(text);
    assert.ok(wasm.startsWith('{"ok":true,'), `${f}: ${wasm.slice(0, 300)}`);
    assert.equal(wasm, `{"ok":true,"result":${nat}}`, `${f} differs between native and WASM`);
    const result = JSON.parse(nat);
    assert.ok(result.summary.num_requests > 100, `${f} simulated real traffic`);
    assert.ok(result.series.t_s.length > 10);
  }
});

test('exercise 1: the CLI and the module give the same variant, grade and explanation', async () => {
  const def = await readFile(new URL('exercises/ex1-bursty.json', root), 'utf8');
  for (const seed of ['1', '7']) {
    const nat = native(['exercise', '1', '--seed', seed]).trimEnd();
    assert.equal(sim.exercise(def, seed), `{"ok":true,"result":${nat}}`);
    const solved = JSON.parse(native(['solve', '1', '--seed', seed]));
    const answer = JSON.stringify(solved.answers);
    const graded = JSON.parse(sim.grade(def, seed, answer));
    assert.equal(graded.ok, true);
    assert.equal(graded.result.correct, true, `seed ${seed}: the solved answer grades as correct`);
    const wrong = JSON.stringify({ a: solved.answers.a + 1, b: solved.answers.b });
    const g2 = JSON.parse(sim.grade(def, seed, wrong)).result;
    assert.equal(g2.correct, false);
    assert.equal(g2.questions[0].correct, false);
    assert.ok(g2.questions[0].hint.length > 20, 'a wrong answer earns a hint');
    // Locked before any attempt; open after a correct one (the policy: after 3 attempts or a correct one).
    assert.equal(JSON.parse(sim.explain(def, seed)).result.locked, true);
    const history = { format: 'gpuscale-attempts/1', exercise: '1', seed: Number(seed), lab_version: JSON.parse(sim.version()).result.version,
      attempts: [{ at: '2025-01-01T10:00:00Z', answer: solved.answers, score: 1, revealed_before: false }] };
    const ex = JSON.parse(sim.explain(def, seed, JSON.stringify({ history, simulated: graded.result.simulated })));
    assert.equal(ex.ok, true);
    assert.equal(ex.result.locked, false);
    assert.match(ex.result.text, /dropped/);
  }
});

test('exercises 2 and 5: the CLI and the module give the same variants', async () => {
  for (const [id, file] of [['2', 'ex2-nodepool.json'], ['5', 'ex5-consolidation.json']]) {
    const def = await readFile(new URL(`exercises/${file}`, root), 'utf8');
    for (const seed of ['0', '3']) {
      const nat = native(['exercise', id, '--seed', seed]).trimEnd();
      assert.equal(sim.exercise(def, seed), `{"ok":true,"result":${nat}}`, `exercise ${id} seed ${seed}`);
    }
  }
});

test('exercise 3: the CLI and the module give the same variant, grade (with the fix re-simulated) and solution', async () => {
  const def = await readFile(new URL('exercises/ex3-pending.json', root), 'utf8');
  for (const seed of ['0', '3', '8']) {
    assert.equal(sim.exercise(def, seed), `{"ok":true,"result":${native(['exercise', '3', '--seed', seed]).trimEnd()}}`, `variant ${seed}`);
    const answers = JSON.parse(native(['solve', '3', '--seed', seed])).answers;
    const graded = JSON.parse(sim.grade(def, seed, JSON.stringify(answers)));
    assert.equal(graded.ok, true);
    assert.equal(graded.result.score, 1, `seed ${seed}: the solution scores 1`);
    assert.equal(graded.result.fix_run.scheduled, true, `seed ${seed}: its fix makes the pod schedule`);
  }
});

test('nodepool_check: a valid pool with lint, and errors naming the path', () => {
  const pool = {
    apiVersion: 'karpenter.sh/v1', kind: 'NodePool', metadata: { name: 'gpu' },
    spec: { template: { spec: { nodeClassRef: { group: 'karpenter.k8s.aws', kind: 'EC2NodeClass', name: 'gpu' },
      requirements: [{ key: 'node.kubernetes.io/instance-type', operator: 'In', values: ['p5.48xlarge'] }] } } },
  };
  const ok = JSON.parse(sim.nodepool_check(JSON.stringify(pool)));
  assert.equal(ok.ok, true);
  assert.ok(ok.result.warnings.some((w) => w.code === 'consolidation-evicts-replicas'), JSON.stringify(ok.result.warnings));
  pool.spec.disruption = { consolidationPolicy: 'WhenEmpty', consolidateAfter: '1hr' };
  const bad = JSON.parse(sim.nodepool_check(JSON.stringify(pool)));
  assert.equal(bad.ok, false);
  assert.equal(bad.error.path, '/spec/disruption/consolidateAfter');
});

test('bad input gives an error naming the path, and the module stays usable', () => {
  const cases = [
    ['{oops', '', /malformed JSON/],
    ['[1,2]', '', /expected an object/],
    ['{"duration_s": "long"}', '/duration_s', /expected a number/],
    ['{"duration_s": 1e12}', '/duration_s', /allowed: between 1 and 691200/],
    ['{"workload": {"rate_scale": 1000, "preset": "steady"}, "duration_s": 600000}', '/workload', /at most 2000000/],
    ['{"autoscaler": {"strategy": "magic"}}', '/autoscaler/strategy', /"magic" is not allowed/],
    ['{"autoscaler": {"max_replicas": 100000}}', '/autoscaler/max_replicas', /between 1 and 256/],
    ['{"autoscaler": {"min_replicas": 5, "max_replicas": 2}}', '/autoscaler/min_replicas', /above max_replicas/],
    ['{"colour": "red"}', '/colour', /unknown field/],
    ['{"workload": {"phases": [{"duration_s": 10, "rate_rps": -1}], "preset": "custom"}}', '/workload/phases/0/rate_rps', /between 0 and 500/],
    ['{"seed": 1.5}', '/seed', /whole number/],
    ['{"autoscaler": {"strategy": "custom", "hpa": {"maxReplicas": "many"}}}', '/autoscaler/hpa/maxReplicas', /./],
  ];
  for (const [input, path, message] of cases) {
    const out = JSON.parse(sim.run(input));
    assert.equal(out.ok, false, input);
    assert.equal(out.error.path, path, `${input}: ${out.error.message}`);
    assert.match(out.error.message, message, input);
    // The CLI says the same on stderr with exit code 2.
    const r = spawnSync(cli, ['run', '-'], { input });
    assert.equal(r.status, 2, input);
    assert.match(r.stderr.toString(), message);
  }
  const ok = JSON.parse(sim.run('{"duration_s": 120}'));
  assert.equal(ok.ok, true, 'the module still works after errors');
  const huge = 'x'.repeat(5 << 20);
  assert.equal(JSON.parse(sim.run(huge)).ok, false);
  const badSeed = JSON.parse(sim.exercise('{}', 'abc'));
  assert.equal(badSeed.ok, false);
  assert.equal(badSeed.error.path, '/seed');
  const badAnswer = JSON.parse(sim.grade(readFileSync(new URL('exercises/ex1-bursty.json', root), 'utf8'), '1', '{"a": "twelve"}'));
  assert.equal(badAnswer.ok, false);
  assert.equal(badAnswer.error.path, '/a');
});

test('grade and explain take a context and a progress function; explain is locked until the policy allows', async () => {
  const def = await readFile(new URL('exercises/ex5-consolidation.json', root), 'utf8');
  const seen = [];
  const firstText = sim.grade(def, '0', '{"daily_usd": 1, "monthly_usd": 30}', '', (f, label) => seen.push([f, label]));
  const first = JSON.parse(firstText);
  assert.equal(first.ok, true);
  assert.equal(seen.length, 14, 'once a simulated day of each week');
  assert.equal(seen[0][1], 'trap week: day 1 of 7');
  assert.equal(first.result.revealed, false);
  const nat = native(['grade', '5', '-', '--seed', '0'], '{"daily_usd": 1, "monthly_usd": 30}').trimEnd();
  assert.equal(firstText, `{"ok":true,"result":${nat}}`, 'the CLI grades the same');
  // Given its figures back, a grade simulates nothing and takes well under a second.
  const context = JSON.stringify({ history: null, simulated: first.result.simulated });
  const t0 = Date.now();
  const again = sim.grade(def, '0', '{"daily_usd": 1, "monthly_usd": 30}', context, () => assert.fail('no simulation'));
  assert.ok(Date.now() - t0 < 500);
  assert.equal(JSON.parse(again).result.score, first.result.score);
  const locked = JSON.parse(sim.explain(def, '0', context)).result;
  assert.equal(locked.locked, true);
  assert.match(locked.unlocks, /after 3 attempts/);
  const history = { format: 'gpuscale-attempts/1', exercise: '5', seed: 0, lab_version: JSON.parse(sim.version()).result.version,
    attempts: [0, 1, 2].map(() => ({ at: '2025-01-01T10:00:00Z', answer: { daily_usd: 1 }, score: 0, revealed_before: false })) };
  const open = JSON.parse(sim.explain(def, '0', JSON.stringify({ history, simulated: first.result.simulated }))).result;
  assert.equal(open.locked, false);
  assert.match(open.text, /per day/);
  const runSeen = [];
  const run = JSON.parse(sim.run('{"duration_s": 120}', (f) => runSeen.push(f)));
  assert.equal(run.ok, true);
  assert.ok(runSeen.length >= 19 && runSeen.length <= 20);
});

test('schedule: the WASM module and the CLI give the same bytes for a snapshot, and errors name the path', async () => {
  const { benchmarkSnapshot } = await import(new URL('scripts/schedule-snapshot.mjs', root));
  const snapshot = benchmarkSnapshot({ nodes: 40, pods: 400 });
  snapshot.kai = { actions: ['allocate', 'preempt', 'stalegangeviction'] };
  const text = JSON.stringify(snapshot);
  const wasm = JSON.parse(sim.schedule(text));
  assert.equal(wasm.ok, true);
  const cliOut = JSON.parse(native(['schedule', '-'], text));
  assert.deepEqual(wasm.result, cliOut);
  assert.ok(wasm.result.jobs.some((j) => j.status === 'allocated'));
  const example = readFileSync(new URL('docs/examples/schedule-7-of-8.yaml', root), 'utf8');
  const out = JSON.parse(native(['schedule', '-'], example));
  assert.equal(out.jobs[0].status, 'pending');
  assert.match(out.jobs[0].message, /^Resources were found for 7 pods while 8 are required for gang scheduling/);
  const bad = JSON.parse(sim.schedule(JSON.stringify({ nodes: [{ name: 'n1', gpus: 'eight' }] })));
  assert.equal(bad.ok, false);
  assert.equal(bad.error.path, '/nodes/0/gpus');
});

test('the Scheduler view\'s presets: each file runs through the CLI (exit 0) and, read as the page reads YAML, through the module\'s schedule with the same result, under both schedulers', async () => {
  const { readOneYaml } = await import(new URL('web/yaml-text.js', root));
  const manifest = JSON.parse(await readFile(new URL('docs/examples/schedule-presets.json', root), 'utf8'));
  const listed = manifest.presets.map((p) => p.file);
  const files = (await readdir(new URL('docs/examples/', root))).filter((f) => /^schedule-.*\.yaml$/.test(f)).sort();
  assert.deepEqual([...listed].sort(), files, 'every docs/examples/schedule-*.yaml is a preset, and every preset a file');
  assert.equal(new Set(manifest.presets.map((p) => p.id)).size, manifest.presets.length, 'preset ids are unique');
  for (const preset of manifest.presets) {
    const file = fileURLToPath(new URL(`docs/examples/${preset.file}`, root));
    const text = await readFile(file, 'utf8');
    // The CLI reads the file itself (its own YAML reader): exit 0.
    const r = spawnSync(cli, ['schedule', file], { maxBuffer: 1 << 26 });
    assert.equal(r.status, 0, `gpuscale schedule ${preset.file}: ${r.stderr}`);
    const fromCli = JSON.parse(r.stdout.toString());
    // The page reads it with the yaml package (YAML 1.1, as kubectl) and sends JSON to the module.
    const read = readOneYaml(text, { what: 'a cluster snapshot' });
    assert.equal(read.ok, true, `${preset.file}: ${read.error?.message}`);
    const wasm = JSON.parse(sim.schedule(JSON.stringify(read.value)));
    assert.equal(wasm.ok, true, `${preset.file}: ${JSON.stringify(wasm.error)}`);
    assert.deepEqual(wasm.result, fromCli, `${preset.file}: the module and the CLI agree`);
    assert.equal(wasm.result.scheduler, 'kai-scheduler', `${preset.file} starts under KAI Scheduler`);
    // The page's scheduler choice: the same snapshot under kube-scheduler, through both fronts.
    const other = JSON.stringify({ ...read.value, scheduler: 'default-scheduler' });
    const wasmOther = JSON.parse(sim.schedule(other));
    assert.equal(wasmOther.ok, true, `${preset.file} under kube-scheduler: ${JSON.stringify(wasmOther.error)}`);
    assert.deepEqual(wasmOther.result, JSON.parse(native(['schedule', '-'], other)), `${preset.file} under kube-scheduler`);
  }
  // What each preset is there to show.
  const result = async (id, scheduler = 'kai-scheduler') => {
    const preset = manifest.presets.find((p) => p.id === id);
    const read = readOneYaml(await readFile(new URL(`docs/examples/${preset.file}`, root), 'utf8'), { what: 'a snapshot' });
    return JSON.parse(sim.schedule(JSON.stringify({ ...read.value, scheduler }))).result;
  };
  const trap = await result('7-of-8');
  assert.match(trap.jobs[0].message, /^Resources were found for 7 pods while 8 are required for gang scheduling/);
  const placed = (await result('7-of-8', 'default-scheduler')).jobs[0].tasks.filter((t) => t.status === 'Binding').length;
  assert.equal(placed, 7, 'kube-scheduler binds 7 of the 8');
  const tenants = await result('two-tenants');
  assert.deepEqual(tenants.victims.map((v) => [v.action, v.for]), [['reclaim', 'vllm-1']]);
  const topology = await result('topology');
  assert.equal(topology.jobs.find((j) => j.name === 'pp-job').status, 'pending');
  assert.match(topology.jobs.find((j) => j.name === 'pp-job').message, /requirement topology\.kubernetes\.io\/rack couldn't be satisfied/);
  const limit = await result('queue-limit');
  assert.equal(limit.jobs.find((j) => j.name === 'a-eval').reason, 'OverLimit');
  assert.equal(limit.jobs.find((j) => j.name === 'b-finetune').status, 'allocated');
  const consolidation = await result('consolidation');
  assert.deepEqual(consolidation.victims.map((v) => [v.action, v.for]), [['consolidation', 'big-train']]);
});

test('the playground\'s scenarios as YAML read back to their JSON files and run as the CLI runs the files; the kube-scheduler example in their comments runs', async () => {
  const { readOneYaml } = await import(new URL('web/yaml-text.js', root));
  const { YAML_SCENARIOS, scenarioYaml } = await import(new URL('web/scenario-yaml.js', root));
  for (const entry of YAML_SCENARIOS) {
    const json = JSON.parse(await readFile(new URL(entry.file, root), 'utf8'));
    const text = scenarioYaml(entry, json);
    const read = readOneYaml(text, { what: 'a scenario' });
    assert.equal(read.ok, true, `${entry.file}: ${read.error?.message}`);
    assert.deepEqual(read.value, json, `${entry.file}: the YAML holds the same scenario`);
    const wasm = JSON.parse(sim.run(JSON.stringify(read.value)));
    assert.equal(wasm.ok, true, entry.file);
    assert.deepEqual(wasm.result, JSON.parse(native(['run', fileURLToPath(new URL(entry.file, root))])), `${entry.file}: the same run`);
    // The commented kube_scheduler block, uncommented in place, is a configuration the core takes.
    if (/# kube_scheduler:/.test(text)) {
      const uncommented = text.replace(/^(\s*)# (kube_scheduler:.*)$/m, '$1$2').replace(/^(\s*)# ( {2}.*)$/mg, '$1$2');
      const withConfig = readOneYaml(uncommented, { what: 'a scenario' });
      assert.equal(withConfig.ok, true, `${entry.file} uncommented: ${withConfig.error?.message}`);
      assert.equal(withConfig.value.cluster.kube_scheduler.kind, 'KubeSchedulerConfiguration');
      assert.equal(JSON.parse(sim.run(JSON.stringify(withConfig.value))).ok, true, `${entry.file} with MostAllocated runs`);
    }
  }
});
