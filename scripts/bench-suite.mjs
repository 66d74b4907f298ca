// The WASM benchmark suite, shared by node (scripts/bench-wasm.mjs) and Chromium
// (scripts/bench-browser.mjs): the same scenarios as `gpuscale bench`, timed through the module's
// JSON API (including JSON parsing and serialisation, as the page pays them).
// V8 first runs WebAssembly from its baseline compiler (Liftoff) and tiers hot functions up to
// TurboFan while they run, so the first exercise-1 pair after loading is timed on its own, then the
// pair runs a few more times to warm up before every benchmark is timed (best of `repeat`).

/**
 * Runs the suite on a loaded module. `files` holds the texts: {ex1, day, week}.
 * @returns {{first_pair_ms: number, rows: Array<{label, ms, events, requests}>}}
 */
export function benchSuite(sim, files, repeat = 3) {
  const variant = JSON.parse(sim.exercise(files.ex1, '1')).result;
  const pair = Object.values(variant.scenarios).map((s) => JSON.stringify(s));
  // The playground's first run: every knob of the schema where the page starts it (web/state.js knobStart).
  const playground = {};
  for (const knob of JSON.parse(sim.schema()).result) {
    const keys = knob.path.split('/').slice(1);
    let node = playground;
    for (const k of keys.slice(0, -1)) node = node[k] ??= {};
    node[keys.at(-1)] = knob.start ?? knob.default;
  }
  const run = (s) => {
    const out = JSON.parse(sim.run(s));
    if (!out.ok) throw new Error(out.error.message);
    return out.result;
  };
  const rows = [];
  const measure = (label, scenarios) => {
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
    rows.push({ label, ms: best, events, requests });
  };
  const t0 = performance.now();
  for (const s of pair) run(s);
  const first = performance.now() - t0;
  for (let k = 0; k < 5; k++) for (const s of pair) run(s);
  measure('exercise-1 pair (1 h x 2)', pair);
  measure('playground defaults, one run', [JSON.stringify(playground)]);
  measure('24 h, ~500k requests', [files.day]);
  measure('7 days, Karpenter consolidation', [files.week]);
  return { first_pair_ms: first, rows };
}

/** The suite's result as the lines the scripts print. */
export function benchLines(title, { first_pair_ms, rows }, repeat) {
  return [`${title}: first exercise-1 pair after loading ${first_pair_ms.toFixed(1)} ms; then, warmed up, best of ${repeat}`,
    ...rows.map((r) => `${r.label.padEnd(32)} ${r.ms.toFixed(1).padStart(9)} ms  ${String(r.events).padStart(12)} events  ` +
      `${(r.events / r.ms / 1000).toFixed(2).padStart(10)} M events/s  ${String(r.requests).padStart(8)} requests`)];
}
