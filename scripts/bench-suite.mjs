// The WASM benchmark suite, shared by node (scripts/bench-wasm.mjs) and Chromium
// (scripts/bench-browser.mjs): the same scenarios as `gpuscale bench`, timed through the module's
// JSON API (including JSON parsing and serialisation, as the page pays them).
// V8 first runs WebAssembly from its baseline compiler (Liftoff) and tiers hot functions up to
// TurboFan while they run, so the first exercise-1 pair after loading is timed on its own, then the
// pair runs a few more times to warm up before every benchmark is timed (best of `repeat`).
// firstAndWarm times one scenario as the first call of a module just loaded (nothing run before it),
// then warm (best of the next `repeat`): the scripts give it a module of its own, in a process or
// browser context of its own, as V8 may share compiled code between instances of the same bytes.

/**
 * Runs the suite on a loaded module. `files` holds the texts: {ex1, day, week, tenants}.
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
  measure('24 h, two KAI tenants', [files.tenants]);
  return { first_pair_ms: first, rows };
}

/**
 * Times `text` (a scenario) as the first call of the freshly loaded module `sim`, then warm.
 * @returns {{first_ms: number, warm_ms: number, events: number, requests: number}}
 */
export function firstAndWarm(sim, text, repeat = 3) {
  const run = () => {
    const out = JSON.parse(sim.run(text));
    if (!out.ok) throw new Error(out.error.message);
    return out.result;
  };
  let t0 = performance.now();
  const result = run();
  const first = performance.now() - t0;
  let best = Infinity;
  for (let k = 0; k < repeat; k++) {
    t0 = performance.now();
    run();
    best = Math.min(best, performance.now() - t0);
  }
  return { first_ms: first, warm_ms: best, events: result.num_events, requests: result.summary.num_requests };
}

/**
 * One scheduling cycle of a snapshot (`schedule(text)`, docs/schedule.md): the first call, then the best
 * of `repeat`; with the decisions it made, so that a faster build can be checked to decide the same.
 */
export function scheduleFirstAndWarm(sim, text, repeat = 3) {
  const cycle = () => {
    const out = JSON.parse(sim.schedule(text));
    if (!out.ok) throw new Error(out.error.message);
    return out.result;
  };
  let t0 = performance.now();
  const result = cycle();
  const first = performance.now() - t0;
  let best = Infinity;
  for (let k = 0; k < repeat; k++) {
    t0 = performance.now();
    cycle();
    best = Math.min(best, performance.now() - t0);
  }
  const placed = result.jobs.filter((j) => j.status === 'allocated' || j.status === 'pipelined').length;
  return { first_ms: first, warm_ms: best, jobs: result.jobs.length, placed, victims: result.victims.length };
}

/** scheduleFirstAndWarm's result as the line the scripts print. */
export function scheduleLine(label, { first_ms, warm_ms, jobs, placed, victims }, repeat) {
  return `${label}: first call in a fresh module ${first_ms.toFixed(1)} ms, then best of ${repeat} ${warm_ms.toFixed(1)} ms ` +
    `(${jobs} jobs, ${placed} allocated or pipelined, ${victims} victims)`;
}

/** firstAndWarm's result as the line the scripts print. */
export function firstAndWarmLine(label, { first_ms, warm_ms, events, requests }, repeat) {
  return `${label}: first call in a fresh module ${first_ms.toFixed(1)} ms, then best of ${repeat} ${warm_ms.toFixed(1)} ms ` +
    `(${events} events, ${requests} requests)`;
}

/** The suite's result as the lines the scripts print. */
export function benchLines(title, { first_pair_ms, rows }, repeat) {
  return [`${title}: first exercise-1 pair after loading ${first_pair_ms.toFixed(1)} ms; then, warmed up, best of ${repeat}`,
    ...rows.map((r) => `${r.label.padEnd(32)} ${r.ms.toFixed(1).padStart(9)} ms  ${String(r.events).padStart(12)} events  ` +
      `${(r.events / r.ms / 1000).toFixed(2).padStart(10)} M events/s  ${String(r.requests).padStart(8)} requests`)];
}
