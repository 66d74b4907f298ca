// WASM benchmark under node (the suite in scripts/bench-suite.mjs), then the 24-hour two-tenant run
// as the first call of a module loaded in a node process of its own, and warm.
// Usage: node scripts/bench-wasm.mjs [SITE_DIR] [REPEAT] [--first-and-warm SCENARIO | --schedule-first-and-warm | --exercise4-grid | --plan]
//   (--first-and-warm: only that scenario, first call and warm; --schedule-first-and-warm: one
//   scheduling cycle of the 1,000-node, 10,000-pod snapshot of scripts/schedule-snapshot.mjs, first
//   call and warm; --exercise4-grid: exercise 4's first grade of a prefill-heavy and a decode-heavy
//   variant, which runs its 36 pairs, first call and warm; --plan: the plan designer on the three example
//   inputs of docs/examples, first call and warm; the full run starts each in a process of its own)
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

import { benchLines, benchSuite, firstAndWarm, firstAndWarmLine, scheduleFirstAndWarm, scheduleLine } from './bench-suite.mjs';
import { benchmarkSnapshot } from './schedule-snapshot.mjs';

const root = new URL('../', import.meta.url);
const site = process.argv[2] ? new URL(`file://${process.argv[2].startsWith('/') ? '' : process.cwd() + '/'}${process.argv[2].replace(/\/?$/, '/')}`) : new URL('build-wasm/site/', root);
const repeat = Number(process.argv[3] ?? 3);
const { default: createSim } = await import(new URL('sim.mjs', site));
const sim = await createSim({ wasmBinary: await readFile(new URL('sim.wasm', site)) });
const text = (rel) => readFile(new URL(rel, root), 'utf8');
const only = process.argv.indexOf('--first-and-warm');
if (process.argv.includes('--plan')) {
  const { parse } = await import('yaml');
  for (const file of ['docs/examples/plan-small-cluster.yaml', 'docs/examples/plan-405b-spot.yaml', 'docs/examples/plan-disaggregated.yaml']) {
    const input = JSON.stringify(parse(await text(file)));
    const times = [];
    for (let k = 0; k <= repeat; k++) {
      const t0 = performance.now();
      const out = JSON.parse(sim.plan(input));
      if (!out.ok) throw new Error(out.error.message);
      times.push(performance.now() - t0);
    }
    console.log(`wasm (node ${process.version}) plan ${file}: first ${times[0].toFixed(0)} ms, warm best of ${repeat} ${Math.min(...times.slice(1)).toFixed(0)} ms`);
  }
} else if (process.argv.includes('--exercise4-grid')) {
  // Seeds 1 (prefill-heavy) and 3 (decode-heavy); a grade without a context simulates the whole grid.
  const def = await text('exercises/ex4-disagg.json');
  const answer = JSON.stringify({ prefill: 'queue_depth', decode: 'kv_cache' });
  for (const seed of ['1', '3']) {
    const times = [];
    for (let k = 0; k <= repeat; k++) {
      const t0 = performance.now();
      const out = JSON.parse(sim.grade(def, seed, answer, ''));
      if (!out.ok) throw new Error(out.error.message);
      times.push(performance.now() - t0);
    }
    const warm = Math.min(...times.slice(1));
    console.log(`wasm (node ${process.version}) exercise-4 grid, seed ${seed} (36 runs of 30 min): first ${times[0].toFixed(0)} ms, warm best of ${repeat} ${warm.toFixed(0)} ms`);
  }
} else if (process.argv.includes('--schedule-first-and-warm')) {
  console.log(scheduleLine(`wasm (node ${process.version}) one scheduling cycle, 1,000 nodes, 10,000 pods`,
    scheduleFirstAndWarm(sim, JSON.stringify(benchmarkSnapshot()), repeat), repeat));
} else if (only > 0) {
  const file = process.argv[only + 1];
  console.log(firstAndWarmLine(`wasm (node ${process.version}) ${file}`, firstAndWarm(sim, await text(file), repeat), repeat));
} else {
  const files = { ex1: await text('exercises/ex1-bursty.json'), day: await text('scenarios/bench-24h.json'), week: await text('scenarios/bench-7d-consolidation.json'),
    tenants: await text('scenarios/bench-24h-two-tenants.json') };
  for (const line of benchLines(`wasm (node ${process.version})`, benchSuite(sim, files, repeat), repeat)) console.log(line);
  // The fresh module in a process of its own: this one's module has already been compiled and tiered up.
  process.stdout.write(execFileSync(process.execPath, [fileURLToPath(import.meta.url), fileURLToPath(site), String(repeat),
    '--first-and-warm', 'scenarios/bench-24h-two-tenants.json']));
  process.stdout.write(execFileSync(process.execPath, [fileURLToPath(import.meta.url), fileURLToPath(site), String(repeat), '--schedule-first-and-warm']));
  process.stdout.write(execFileSync(process.execPath, [fileURLToPath(import.meta.url), fileURLToPath(site), String(repeat), '--exercise4-grid']));
  process.stdout.write(execFileSync(process.execPath, [fileURLToPath(import.meta.url), fileURLToPath(site), String(repeat), '--plan']));
}
