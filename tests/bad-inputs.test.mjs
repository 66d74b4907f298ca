// The bad-input catalogue (tests/bad-inputs/catalogue.json): every user mistake it lists must be an error
// that names the JSON path and says what is wrong, on every front: exit 2 from the CLI with
// `gpuscale: <path>: <message>` on stderr, `{"ok": false, "error": {path, message}}` from the WASM module.
// Exit 1, a crash, a hang or a silent success is a bug.
//
// Catalogue format: a JSON array of entries
//   {
//     "id": "kebab-case-unique",
//     "surface": "run" | "hpa" | "nodepool" | "nodepool-yaml" | "grade" | "exercise" | "explain" | "seed" | "schedule",
//     "exercise": "1" | "2" | "5",   grade, exercise, explain, seed: which exercises/ex<ID>-*.json
//     "seed": "3",                   grade, exercise, explain: the seed (default "1")
//     "via": "exercise" | "explain" | "grade",   seed only: the call that gets the seed (default exercise)
//     "fronts": ["cli", "wasm"],     optional: where the entry applies (default both; nodepool-yaml: cli only)
//     one input, the text the learner gave:
//       "input": "<text>"            as written (UTF-8)
//       "input_json": <any JSON>     serialised with JSON.stringify (cannot hold duplicate keys: use input)
//       "input_hex": "7b7d"          raw bytes (invalid UTF-8, NUL, byte-order marks)
//       "input_gen": {"prefix": "...", "repeat": "[", "times": 150000, "suffix": "...", "then": {...}}
//                                    big or deep inputs: prefix + repeat × times + suffix, then the text of
//                                    `then` (another generator) appended; every field optional
//     "expect": {
//       "path": "/cluster/nodepools/0/spec/weight",   exact JSON pointer ("" = the input has no field yet)
//       "path_prefix": "/kkk",       instead of path, for a path the lab must shorten (a 3 MB key)
//       "message": ["fragment", …],  each must appear in the message (case-sensitive): the words that teach
//       "max_message_bytes": 2000    optional bound on the message's length
//     },
//     "why": "the mistake a learner made",
//     "known_bad": "what the lab does instead",   a bug not fixed yet: the entry fails, saying so
//     "known_bad_fronts": ["cli"]    optional: the fronts the bug is on (default all)
//   }
// What the input is, per surface: run a scenario (`gpuscale run FILE.json`, run()); hpa an HPA document
// (`gpuscale hpa` on stdin, hpa()); nodepool a NodePool as JSON (`gpuscale nodepool check FILE.json`,
// nodepool_check()); nodepool-yaml the same as YAML (`... check FILE.yaml`; the module takes JSON, so
// the page's own YAML reader is checked instead, see checkPage); grade an answer (`gpuscale grade ID FILE --seed S`, grade()); exercise and explain an exercise
// definition in place of the file's (`--exercises DIR`, exercise() / explain()); seed the seed text
// (`--seed TEXT`, the seed argument); schedule a cluster snapshot (`gpuscale schedule FILE.json`, schedule()).
//
// Checks per entry and front: exit status 2 / ok false, the path, every fragment, a message of printable
// text (control characters escaped) under 10 KB, and an answer within 15 s (a CLI spawn is killed at
// 20 s, and so is the worker thread that holds the module). After the catalogue the module instance must
// still run a scenario. A known_bad entry fails
// with "KNOWN BAD (...)" and the checks it failed; once the lab handles it, it fails asking to remove the
// mark. Environment: GPUSCALE_CLI (the CLI binary), GPUSCALE_SITE (the folder with sim.mjs and sim.wasm),
// GPUSCALE_CATALOGUE_FILTER (a regular expression: run only the entries whose id matches).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync, writeFileSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = new URL('../', import.meta.url);
const site = new URL(process.env.GPUSCALE_SITE ? `file://${process.env.GPUSCALE_SITE.replace(/\/?$/, '/')}` : '../build-wasm/site/', import.meta.url);
const cli = process.env.GPUSCALE_CLI ?? fileURLToPath(new URL('build/cli/gpuscale', root));

const SURFACES = ['run', 'hpa', 'nodepool', 'nodepool-yaml', 'grade', 'exercise', 'explain', 'seed', 'schedule', 'plan'];
const INPUT_KEYS = ['input', 'input_json', 'input_hex', 'input_gen'];
const MAX_SECONDS = 15;
const MAX_STDERR_BYTES = 10 * 1024;

const catalogue = JSON.parse(readFileSync(new URL('bad-inputs/catalogue.json', import.meta.url), 'utf8'));
const filter = process.env.GPUSCALE_CATALOGUE_FILTER ? new RegExp(process.env.GPUSCALE_CATALOGUE_FILTER) : null;
const selected = catalogue.filter((e) => !filter || filter.test(e.id));

function generate(g) {
  let text = (g.prefix ?? '') + (g.repeat ?? '').repeat(g.times ?? 1) + (g.suffix ?? '');
  if (g.then) text += generate(g.then);
  return text;
}

// The learner's input as bytes, and as the argument the module gets: a string for text, the bytes
// themselves (embind copies a Uint8Array into std::string unchanged) for input_hex.
function materialize(e) {
  if ('input_hex' in e) {
    const bytes = Buffer.from(e.input_hex, 'hex');
    return { bytes, arg: bytes };
  }
  const text = 'input' in e ? e.input : 'input_json' in e ? JSON.stringify(e.input_json) : generate(e.input_gen);
  return { bytes: Buffer.from(text, 'utf8'), arg: text };
}

const definitions = new Map();
function definition(id) {
  if (!definitions.has(id)) {
    const dir = new URL('exercises/', root);
    const files = readdirSync(dir).filter((f) => f.startsWith(`ex${id}-`) && f.endsWith('.json'));
    assert.equal(files.length, 1, `one exercises/ex${id}-*.json`);
    definitions.set(id, readFileSync(new URL(files[0], dir), 'utf8'));
  }
  return definitions.get(id);
}

const fronts = (e) => e.fronts ?? (e.surface === 'nodepool-yaml' ? ['cli'] : ['cli', 'wasm']);
const knownBadOn = (e, front) => Boolean(e.known_bad) && (!e.known_bad_fronts || e.known_bad_fronts.includes(front));
// Control characters other than a line break must reach the learner escaped (\u0000, \t).
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f]/;

// The checks common to both fronts, on the path and message the front reported.
function checkError(e, path, message, problems) {
  const x = e.expect;
  if ('path' in x && path !== x.path) problems.push(`path ${JSON.stringify(path)}, expected ${JSON.stringify(x.path)}`);
  if ('path_prefix' in x && !(path ?? '').startsWith(x.path_prefix)) {
    problems.push(`path ${JSON.stringify(path)} does not start with ${JSON.stringify(x.path_prefix)}`);
  }
  for (const fragment of x.message) {
    if (!(message ?? '').includes(fragment)) problems.push(`message lacks ${JSON.stringify(fragment)}`);
  }
  const bytes = Buffer.byteLength(message ?? '');
  if (x.max_message_bytes && bytes > x.max_message_bytes) problems.push(`message is ${bytes} bytes (at most ${x.max_message_bytes})`);
  if (CONTROL.test(message ?? '')) problems.push('message holds an unescaped control character');
}

function verdict(e, front, problems, observed) {
  if (knownBadOn(e, front)) {
    if (problems.length === 0) assert.fail(`marked known_bad ("${e.known_bad}") but the lab now handles it: remove the mark`);
    assert.fail(`KNOWN BAD (${e.known_bad}): ${problems.join('; ')}\n  observed: ${observed}\n  why: ${e.why}`);
  }
  if (problems.length) assert.fail(`${problems.join('; ')}\n  observed: ${observed}\n  why: ${e.why}`);
}

let scratch;
function scratchDir() {
  scratch ??= mkdtempSync(join(tmpdir(), 'gpuscale-bad-inputs-'));
  return scratch;
}

// The CLI's arguments (and stdin) for an entry.
function cliCall(e, bytes) {
  const seed = e.seed ?? '1';
  const file = (name) => {
    const p = join(scratchDir(), name);
    writeFileSync(p, bytes);
    return p;
  };
  switch (e.surface) {
    case 'run': return { args: ['run', file(`${e.id}.json`)] };
    case 'hpa': return { args: ['hpa'], input: bytes };
    case 'nodepool': return { args: ['nodepool', 'check', file(`${e.id}.json`)] };
    case 'nodepool-yaml': return { args: ['nodepool', 'check', file(`${e.id}.yaml`)] };
    case 'schedule': return { args: ['schedule', file(`${e.id}.json`)] };
    case 'plan': return { args: ['plan', file(`${e.id}.json`)] };
    case 'grade': return { args: ['grade', e.exercise, file(`${e.id}.json`), '--seed', seed] };
    case 'exercise':
    case 'explain': {
      const dir = join(scratchDir(), e.id);
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, `ex${e.exercise}-catalogue.json`), bytes);
      return { args: [e.surface, e.exercise, '--seed', seed, '--exercises', dir] };
    }
    case 'seed': {
      const via = e.via ?? 'exercise';
      const text = bytes.toString('utf8');
      return via === 'grade' ? { args: ['grade', e.exercise, '-', '--seed', text], input: '{}' } : { args: [via, e.exercise, '--seed', text] };
    }
    default: throw new Error(`unknown surface ${e.surface}`);
  }
}

function checkCli(e) {
  const { bytes } = materialize(e);
  const { args, input } = cliCall(e, bytes);
  const t0 = performance.now();
  const r = spawnSync(cli, args, { input: input ?? '', cwd: fileURLToPath(root), timeout: 20_000, maxBuffer: 1 << 28 });
  const seconds = (performance.now() - t0) / 1000;
  if (r.error && r.error.code !== 'ETIMEDOUT') throw r.error;
  const stderr = r.stderr.toString('utf8');
  const problems = [];
  if (r.signal) problems.push(`killed by ${r.signal}${r.error?.code === 'ETIMEDOUT' ? ' (timed out after 20 s)' : ''}`);
  else if (r.status !== 2) problems.push(`exit status ${r.status}, expected 2${r.status === 1 ? ' (1 means an internal error)' : r.status === 0 ? ' (the input was accepted)' : ''}`);
  if (seconds > MAX_SECONDS) problems.push(`took ${seconds.toFixed(1)} s (at most ${MAX_SECONDS} s)`);
  if (Buffer.byteLength(stderr) >= MAX_STDERR_BYTES) problems.push(`stderr is ${Buffer.byteLength(stderr)} bytes (under ${MAX_STDERR_BYTES})`);
  // `gpuscale: <path>: <message>`, or `gpuscale: <message>` when the path is "".
  const line = stderr.replace(/\n$/, '');
  let path = null;
  let message = line;
  if (line.startsWith('gpuscale: ')) {
    const rest = line.slice('gpuscale: '.length);
    const colon = rest.startsWith('/') ? rest.indexOf(': ') : -1;
    path = colon >= 0 ? rest.slice(0, colon) : '';
    message = colon >= 0 ? rest.slice(colon + 2) : rest;
    // A path with ': ' inside it (a key such as "a: b") cannot be split back; take the expected one if it fits.
    if ('path' in e.expect && e.expect.path && rest.startsWith(`${e.expect.path}: `)) {
      path = e.expect.path;
      message = rest.slice(e.expect.path.length + 2);
    }
  } else {
    problems.push('stderr does not start with "gpuscale: "');
  }
  if (r.status === 2 || r.status === 1) checkError(e, path, message, problems);
  verdict(e, 'cli', problems, `exit ${r.status ?? r.signal}, ${seconds.toFixed(2)} s, stderr ${JSON.stringify(stderr.slice(0, 400))}`);
}

// The module runs in a worker thread, one instance for the whole catalogue, so that a call that hangs can
// be stopped (the worker is terminated at 20 s, as a CLI spawn is killed) and a call that crashes the
// instance (a throw instead of an envelope) is followed by a fresh one, as the page's worker does.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
(async () => {
  const { default: createSim } = await import(workerData.mjs);
  const sim = await createSim({ wasmBinary: readFileSync(new URL(workerData.wasm)) });
  parentPort.on('message', ({ fn, args }) => {
    let reply;
    try {
      reply = { text: sim[fn](...args) };
    } catch (err) {
      reply = { threw: String(err).slice(0, 300) };
    }
    parentPort.postMessage(reply);
  });
  parentPort.postMessage({ ready: true });
})().catch((err) => parentPort.postMessage({ fatal: String(err).slice(0, 500) }));
`;

class SimWorker {
  async start() {
    this.worker = new Worker(WORKER, {
      eval: true,
      workerData: { mjs: new URL('sim.mjs', site).href, wasm: new URL('sim.wasm', site).href },
      stdout: true,
      stderr: true,  // a crashed instance may print Aborted() over and over: kept out of the test output
    });
    this.worker.stdout.resume();
    this.worker.stderr.resume();
    const first = await this.next(60_000);
    if (!first.ready) throw new Error(`the module did not load from ${site.href}: ${first.fatal ?? first.error ?? 'no answer in 60 s'}`);
  }
  next(timeoutMs) {
    return new Promise((resolve) => {
      const done = (reply) => {
        clearTimeout(timer);
        this.worker.off('message', done);
        this.worker.off('error', failed);
        resolve(reply);
      };
      const failed = (err) => done({ threw: `the worker failed: ${String(err).slice(0, 300)}` });
      const timer = setTimeout(() => done({ timedOut: true }), timeoutMs);
      this.worker.on('message', done);
      this.worker.on('error', failed);
    });
  }
  async call(fn, args, timeoutMs) {
    this.worker.postMessage({ fn, args });
    const reply = await this.next(timeoutMs);
    if (reply.threw || reply.timedOut) await this.restart();
    return reply;
  }
  async restart() {
    await this.worker.terminate();
    await this.start();
  }
  stop() {
    return this.worker?.terminate();
  }
}

let sim;

function wasmCall(e, arg) {
  const seed = e.seed ?? '1';
  switch (e.surface) {
    case 'run': return ['run', [arg]];
    case 'hpa': return ['hpa', [arg]];
    case 'nodepool': return ['nodepool_check', [arg]];
    case 'schedule': return ['schedule', [arg]];
    case 'plan': return ['plan', [arg]];
    case 'grade': return ['grade', [definition(e.exercise), seed, arg]];
    case 'exercise': return ['exercise', [arg, seed]];
    case 'explain': return ['explain', [arg, seed]];
    case 'seed': {
      const via = e.via ?? 'exercise';
      return via === 'grade' ? ['grade', [definition(e.exercise), arg, '{}']] : [via, [definition(e.exercise), arg]];
    }
    default: throw new Error(`no WASM call for surface ${e.surface}`);
  }
}

async function checkWasm(e) {
  const { arg } = materialize(e);
  const [fn, args] = wasmCall(e, arg);
  const problems = [];
  const t0 = performance.now();
  const reply = await sim.call(fn, args, 20_000);
  const seconds = (performance.now() - t0) / 1000;
  if (reply.timedOut) problems.push('no answer in 20 s (the worker was stopped)');
  else if (seconds > MAX_SECONDS) problems.push(`took ${seconds.toFixed(1)} s (at most ${MAX_SECONDS} s)`);
  if (reply.threw) problems.push(`the call threw (${reply.threw}): the instance crashed`);
  let out = null;
  if (typeof reply.text === 'string') {
    try {
      out = JSON.parse(reply.text);
    } catch {
      problems.push('the envelope is not JSON');
    }
  }
  if (out) {
    if (out.ok !== false) problems.push('ok is not false: the input was accepted');
    else if (typeof out.error?.path !== 'string' || typeof out.error?.message !== 'string') problems.push('the error has no path and message');
    else {
      if (out.error.message.startsWith('internal error')) problems.push('an internal error');
      if (Buffer.byteLength(out.error.message) >= MAX_STDERR_BYTES) problems.push(`message is ${Buffer.byteLength(out.error.message)} bytes`);
      checkError(e, out.error.path, out.error.message, problems);
    }
  }
  const observed = reply.text !== undefined ? JSON.stringify(reply.text.slice(0, 400)) : reply.timedOut ? 'timed out' : `threw ${reply.threw}`;
  verdict(e, 'wasm', problems, `${seconds.toFixed(2)} s, ${observed}`);
}

// The page reads a NodePool's YAML itself (web/nodepool-editor.js readNodePoolText, the `yaml` package
// read as kubectl reads it) and gives the module JSON. Each nodepool-yaml entry must be refused there too:
// by the reader, with a message (on the line the CLI names, when it names one), or by nodepool_check on
// what the reader made of it, at the entry's path. The page's words differ from the CLI's (its own
// advice), so the fragments are the CLI's alone. Bytes reach the editor as text (a paste or a file read
// as UTF-8: an invalid sequence becomes U+FFFD).
async function checkPage(e, readNodePoolText) {
  const { bytes } = materialize(e);
  const text = new TextDecoder('utf-8').decode(bytes);
  const problems = [];
  const t0 = performance.now();
  const read = readNodePoolText(text);
  let observed;
  if (!read.ok) {
    const message = read.error?.message ?? '';
    observed = `reader: line ${read.error?.line}, ${JSON.stringify(message.slice(0, 300))}`;
    if (!message) problems.push('the reader refused without a message');
    if (CONTROL.test(message)) problems.push('message holds an unescaped control character');
    if (Buffer.byteLength(message) >= MAX_STDERR_BYTES) problems.push(`message is ${Buffer.byteLength(message)} bytes`);
    const line = e.expect.message.map((f) => /^line (\d+)/.exec(f)?.[1]).find(Boolean);
    if (line && read.error?.line !== Number(line)) problems.push(`the reader points at line ${read.error?.line}, the CLI at line ${line}`);
  } else {
    const reply = await sim.call('nodepool_check', [JSON.stringify(read.value)], 20_000);
    observed = `module: ${reply.text !== undefined ? JSON.stringify(reply.text.slice(0, 300)) : reply.timedOut ? 'timed out' : `threw ${reply.threw}`}`;
    if (reply.timedOut) problems.push('no answer in 20 s');
    if (reply.threw) problems.push(`the call threw (${reply.threw})`);
    const out = typeof reply.text === 'string' ? JSON.parse(reply.text) : null;
    if (out && out.ok !== false) problems.push('the page accepted it: the reader read it and nodepool_check found nothing wrong');
    else if (out && e.expect.path && out.error.path !== e.expect.path) problems.push(`path ${JSON.stringify(out.error.path)}, expected ${JSON.stringify(e.expect.path)}`);
  }
  const seconds = (performance.now() - t0) / 1000;
  if (seconds > MAX_SECONDS) problems.push(`took ${seconds.toFixed(1)} s (at most ${MAX_SECONDS} s)`);
  if (problems.length) assert.fail(`${problems.join('; ')}\n  observed: ${observed}\n  why: ${e.why}`);
}

test('the catalogue: at least 100 entries, unique kebab-case ids, every surface, one input each', () => {
  assert.ok(catalogue.length >= 100, `${catalogue.length} entries`);
  const ids = new Set();
  for (const e of catalogue) {
    assert.match(e.id, /^[a-z0-9]+(-[a-z0-9]+)*$/, `id ${e.id}`);
    assert.ok(!ids.has(e.id), `duplicate id ${e.id}`);
    ids.add(e.id);
    assert.ok(SURFACES.includes(e.surface), `${e.id}: surface ${e.surface}`);
    assert.equal(INPUT_KEYS.filter((k) => k in e).length, 1, `${e.id}: exactly one of ${INPUT_KEYS.join(', ')}`);
    assert.ok(e.expect && Array.isArray(e.expect.message) && e.expect.message.length > 0, `${e.id}: expect.message fragments`);
    assert.equal(['path', 'path_prefix'].filter((k) => k in e.expect).length, 1, `${e.id}: expect.path or expect.path_prefix`);
    assert.ok(typeof e.why === 'string' && e.why.length >= 10, `${e.id}: why (a sentence: the mistake a learner made)`);
    if (['grade', 'exercise', 'explain', 'seed'].includes(e.surface)) assert.ok(['1', '2', '3', '4', '5'].includes(e.exercise), `${e.id}: exercise`);
    if (e.surface === 'seed') assert.ok(!('input_hex' in e), `${e.id}: a seed is text`);
  }
  for (const s of SURFACES) assert.ok(catalogue.some((e) => e.surface === s), `surface ${s} has entries`);
});

test('CLI: each bad input is exit 2 with `gpuscale: <path>: <message>`', async (t) => {
  try {
    for (const e of selected) {
      await t.test(e.id, { skip: !fronts(e).includes('cli') && 'not a CLI input' }, () => checkCli(e));
    }
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
});

test('Page: each NodePool YAML mistake is refused by the editor\'s reader or by nodepool_check on what it read', async (t) => {
  const { readNodePoolText } = await import(new URL('../web/nodepool-editor.js', import.meta.url));
  sim = new SimWorker();
  try {
    await sim.start();
    for (const e of selected.filter((x) => x.surface === 'nodepool-yaml')) await t.test(e.id, () => checkPage(e, readNodePoolText));
  } finally {
    await sim.stop();
  }
});

test('WASM: each bad input is {"ok": false, "error": {path, message}}, and the module keeps working', async (t) => {
  sim = new SimWorker();
  try {
    await sim.start();
    for (const e of selected) {
      const skip = !fronts(e).includes('wasm') && (e.surface === 'nodepool-yaml' ? 'YAML: the module takes JSON (the page\'s reader is checked above)' : 'not a WASM input');
      await t.test(e.id, { skip }, () => checkWasm(e));
    }
    await t.test('after the whole catalogue, a small run still succeeds', async () => {
      const reply = await sim.call('run', ['{"duration_s": 120}'], 20_000);
      assert.ok(typeof reply.text === 'string', JSON.stringify(reply));
      const out = JSON.parse(reply.text);
      assert.equal(out.ok, true, reply.text.slice(0, 300));
      assert.ok(out.result.summary.num_requests > 0);
    });
  } finally {
    await sim.stop();
  }
});
