// WASM benchmark under node: the same scenarios as `gpuscale bench`, timed through the module's
// JSON API (including JSON parsing and serialisation, as the page pays them).
// V8 first runs WebAssembly from its baseline compiler (Liftoff) and tiers hot functions up to
// TurboFan while they run, so the first exercise-1 pair after loading is timed on its own, then the
// pair runs a few more times to warm up before every benchmark is timed (best of REPEAT).
// Usage: node scripts/bench-wasm.mjs [SITE_DIR] [REPEAT]
import { readFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';

const root = new URL('../', import.meta.url);
const site = process.argv[2] ? new URL(`file://${process.argv[2].startsWith('/') ? '' : process.cwd() + '/'}${process.argv[2].replace(/\/?$/, '/')}`) : new URL('build-wasm/site/', root);
const repeat = Number(process.argv[3] ?? 3);
const { default: createSim } = await import(new URL('sim.mjs', site));
const sim = await createSim({ wasmBinary: await readFile(new URL('sim.wasm', site)) });

const def = await readFile(new URL('exercises/ex1-bursty.json', root), 'utf8');
const variant = JSON.parse(sim.exercise(def, '1')).result;
const pair = Object.values(variant.scenarios).map((s) => JSON.stringify(s));
// The playground's first run: every knob of the schema where the page starts it, as web/state.js builds it.
const playground = {};
for (const knob of JSON.parse(sim.schema()).result) {
  const keys = knob.path.split('/').slice(1);
  let node = playground;
  for (const k of keys.slice(0, -1)) node = node[k] ??= {};
  node[keys.at(-1)] = knob.start ?? knob.default;  // where the playground starts (web/state.js knobStart)
}
const day = [await readFile(new URL('scenarios/bench-24h.json', root), 'utf8')];
const week = [await readFile(new URL('scenarios/bench-7d-consolidation.json', root), 'utf8')];

function run(s) {
  const out = JSON.parse(sim.run(s));
  if (!out.ok) throw new Error(out.error.message);
  return out.result;
}

function measure(label, scenarios) {
  let best = Infinity, events = 0, requests = 0;
  for (let k = 0; k < repeat; k++) {
    events = 0; requests = 0;
    const t0 = performance.now();
    for (const s of scenarios) {
      const result = run(s);
      events += result.num_events;
      requests += result.summary.num_requests;
    }
    best = Math.min(best, performance.now() - t0);
  }
  console.log(`${label.padEnd(28)} ${best.toFixed(1).padStart(9)} ms  ${String(events).padStart(12)} events  ${(events / best / 1000).toFixed(2).padStart(10)} M events/s  ${String(requests).padStart(8)} requests`);
}
const t0 = performance.now();
for (const s of pair) run(s);
const first = performance.now() - t0;
for (let k = 0; k < 5; k++) for (const s of pair) run(s);
console.log(`wasm (node ${process.version}): first exercise-1 pair after loading ${first.toFixed(1)} ms; then, warmed up, best of ${repeat}`);
measure('exercise-1 pair (1 h x 2)', pair);
measure('playground defaults, one run', [JSON.stringify(playground)]);
measure('24 h, ~500k requests', day);
measure('7 days, Karpenter consolidation', week);
