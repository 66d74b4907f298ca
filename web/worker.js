// Module worker that owns the WASM simulation: runs one call at a time, and per channel only the latest.
//
// Protocol (all messages are plain objects):
//   worker → page  {type: "ready", version}            once the module is loaded
//                  {type: "fatal", error: {message}}   the module could not be loaded (or reloaded
//                                                      after a crash); every later request is
//                                                      answered with an error
//   page → worker  {id, op, args, channel?, progress?} op is one of OPS; args are JSON text or plain
//                                                      values (objects are stringified here);
//                                                      channel defaults to op; progress: true adds
//                                                      the progress callback as the last argument
//                                                      (run, grade, explain and plan take it)
//   worker → page  {id, type: "working"}               the call has started
//                  {id, type: "progress", fraction, label}  sent while the call simulates (the
//                                                      module calls back synchronously; the page
//                                                      receives these while the call still runs)
//                  {id, type: "result", value}         value = the envelope's `result`
//                  {id, type: "error", error}          error = {path, message} from the envelope
//                  {id, type: "dropped"}               a newer request on the same channel replaced
//                                                      this one before it started
//   A result and an error also carry `ms` (how long the module call took) and `progressed` (how
//   many progress messages it sent: 0 means the call simulated nothing).
//
// What the grader simulated (exercise 5's two weeks): `grade` and `explain` return a `simulated`
// object; the worker keeps the newest one per exercise id + seed + module version in memory and
// puts it into the `context` argument (docs/wasm-api.md) of a later grade or explain of the same
// variant that does not carry one, so the weeks are simulated once per variant and worker.
//   page → worker  {id, op: "stats"}                   answered at once (never queued) with
//   worker → page  {id, type: "result", value: {calls: {op: n}, progressed_calls: {op: n},
//                   channels: {channel: {calls, progressed_calls}}, simulated_injected: n, simulated_kept: n}}
// A WASM call is synchronous, so requests that arrive while one runs queue up; when it ends the
// worker yields once to let them in, keeps only the newest per channel, and runs the oldest channel.
//
// Crashes: a call that throws instead of returning an envelope (a trap such as "unreachable" or
// "memory access out of bounds", Emscripten's "Aborted(…)", a RangeError when the call stack runs
// out) leaves the instance in an unknown state. The worker drops it and answers that request with
//                  {id, type: "error", error: {path: "", message, crashed: true}}
// then loads a fresh instance (fresh memory) and, once it is ready, sends
//                  {type: "restarted", version}
// and goes on with the queued requests; requests that arrive meanwhile queue as usual. The crashing
// request is not retried, so a request that always crashes cannot loop. If the fresh instance cannot
// be loaded, the worker sends "fatal".
//
// Debug mode (worker.js?debug=1, which the page sets only when its own address has ?debug=1) also
// accepts op "debug_trap" with args [kind]: the module's test hook that crashes on purpose (kind
// "unreachable", "stack_overflow" or "abort"). Without debug mode it is an unknown op.
import createSim from './sim.mjs';

const OPS = new Set(['version', 'run', 'hpa', 'exercise', 'grade', 'explain', 'schema', 'nodepool_check', 'schedule', 'plan']);
if (new URL(self.location.href).searchParams.get('debug') === '1') OPS.add('debug_trap');

// Context argument index per op: grade(definition, seed, answer, context), explain(definition, seed, context).
const CONTEXT_ARG = { grade: 3, explain: 2 };
const PROGRESS_OPS = new Set(['run', 'grade', 'explain', 'plan']);

let sim = null;
let version = '';
const simulatedCache = new Map();  // "<exercise id>|<seed>|<version>" → the grader's simulated object
const stats = { calls: {}, progressed_calls: {}, channels: {}, simulated_injected: 0, simulated_kept: 0 };
let busy = false;
let broken = null;          // the fatal message once no instance could be loaded
const pending = new Map();  // channel → newest request not yet started (Map keeps arrival order)

self.onmessage = (event) => {
  const req = event.data;
  if (req && typeof req.id === 'number' && req.op === 'stats') {
    self.postMessage({ id: req.id, type: 'result', value: structuredClone(stats) });
    return;
  }
  if (!req || typeof req.id !== 'number' || !OPS.has(req.op)) {
    if (req && typeof req.id === 'number') {
      self.postMessage({ id: req.id, type: 'error', error: { path: '', message: `unknown op "${req.op}"` } });
    }
    return;
  }
  if (broken) {
    self.postMessage({ id: req.id, type: 'error', error: { path: '', message: broken } });
    return;
  }
  const channel = req.channel ?? req.op;
  const stale = pending.get(channel);
  if (stale) {
    self.postMessage({ id: stale.id, type: 'dropped' });
    pending.delete(channel);  // re-inserting moves the channel to the back: the newest request waits its turn
  }
  pending.set(channel, req);
  schedule();
};

function schedule() {
  if (busy || !sim || pending.size === 0) return;
  busy = true;
  // A macrotask, not a microtask: messages that queued during the last call are delivered first.
  setTimeout(step, 0);
}

function step() {
  const [channel, req] = pending.entries().next().value;  // channel: also the key of its stats
  pending.delete(channel);
  self.postMessage({ id: req.id, type: 'working' });
  let answer;
  let progressed = 0;
  const args = withCachedSimulation(req.op, [...(req.args ?? [])]);
  if (req.progress && PROGRESS_OPS.has(req.op)) {
    args.push((fraction, label) => {
      progressed += 1;
      self.postMessage({ id: req.id, type: 'progress', fraction: Number(fraction), label: String(label ?? '') });
    });
  }
  const started = performance.now();
  try {
    answer = call(req.op, args);
  } catch (e) {
    answer = { type: 'error', error: { path: '', message: crashMessage(e), crashed: true } };
    restart();
  }
  stats.calls[req.op] = (stats.calls[req.op] ?? 0) + 1;
  if (progressed) stats.progressed_calls[req.op] = (stats.progressed_calls[req.op] ?? 0) + 1;
  const perChannel = (stats.channels[channel] ??= { calls: 0, progressed_calls: 0 });
  perChannel.calls += 1;
  if (progressed) perChannel.progressed_calls += 1;
  if (answer.type === 'result') keepSimulation(req.op, args, answer.value);
  self.postMessage({ id: req.id, ...answer, ms: performance.now() - started, progressed });
  busy = false;
  schedule();
}

/**
 * Runs one exported function and unwraps its {ok, result | error} envelope.
 * Throws what the call threw when the module crashed (anything but embind refusing the arguments).
 */
function call(op, args) {
  let values;
  try {
    values = Array.from(args, toArg);
  } catch (e) {
    return { type: 'error', error: { path: '', message: `the arguments cannot be sent to the module: ${describe(e)}` } };
  }
  let text;
  try {
    text = sim[op](...values);
  } catch (e) {
    // Embind checks the argument count before entering the module: the instance is untouched.
    if (e?.name !== 'BindingError') throw e;
    return { type: 'error', error: { path: '', message: `the module refused the call: ${describe(e)}` } };
  }
  let envelope;
  try {
    envelope = JSON.parse(text);
  } catch (e) {
    return { type: 'error', error: { path: '', message: `the module returned text that is not JSON: ${describe(e)}` } };
  }
  if (envelope && envelope.ok === true) return { type: 'result', value: envelope.result };
  return { type: 'error', error: normalizeError(envelope && envelope.error) };
}

/** "<exercise id>|<seed>|<version>" for a grade or explain call, or null for other calls. */
function variantKey(op, args) {
  if (!(op in CONTEXT_ARG)) return null;
  try {
    const definition = typeof args[0] === 'string' ? JSON.parse(args[0]) : args[0];
    return `${definition?.id}|${String(args[1])}|${version}`;
  } catch {
    return null;  // the module reports the bad definition itself
  }
}

/** Puts the kept `simulated` object into a grade's or explain's context when it carries none. */
function withCachedSimulation(op, args) {
  const key = variantKey(op, args);
  if (!key) return args;
  const index = CONTEXT_ARG[op];
  let context;
  try {
    const raw = args[index];
    context = raw === undefined || raw === '' ? {} : typeof raw === 'string' ? JSON.parse(raw) : structuredClone(raw);
  } catch {
    return args;  // not JSON: the module names the problem
  }
  if (!context || typeof context !== 'object' || Array.isArray(context)) return args;
  if (context.simulated) {
    simulatedCache.set(key, context.simulated);  // the page's copy (from IndexedDB) serves later calls too
  } else if (simulatedCache.has(key)) {
    context.simulated = simulatedCache.get(key);
    stats.simulated_injected += 1;
  } else {
    return args;
  }
  if (args.length < index) return args;  // too few arguments: the module refuses the call itself
  args[index] = JSON.stringify(context);
  return args;
}

/** Keeps what a grade or explain simulated, for the next call on the same variant. */
function keepSimulation(op, args, value) {
  const key = variantKey(op, args);
  if (!key || !value || typeof value !== 'object' || !value.simulated) return;
  simulatedCache.set(key, value.simulated);
  stats.simulated_kept += 1;
}

/** What the learner reads when their request crashed the module. */
function crashMessage(e) {
  const cause = (e instanceof Error ? `${e.name}: ${e.message}` : describe(e))
    .replace(/\s*Build with -s ASSERTIONS=1 for more info\.?/, '').replace(/\.$/, '');
  return 'the simulation crashed while running this request and was restarted; your inputs are untouched. ' +
         `Run it again, or change the inputs if it crashes again. (Technical detail: ${cause})`;
}

// Every exported function takes text: JSON documents as JSON text, seeds as decimal text.
function toArg(value) {
  if (typeof value === 'string' || typeof value === 'function') return value;  // a function: the progress callback
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value);
}

function normalizeError(error) {
  if (error && typeof error === 'object') {
    return { path: String(error.path ?? ''), message: String(error.message ?? JSON.stringify(error)) };
  }
  return { path: '', message: String(error ?? 'unknown error') };
}

function describe(e) {
  if (e instanceof Error) return e.message;
  if (typeof WebAssembly.Exception === 'function' && e instanceof WebAssembly.Exception) return 'a C++ exception';
  return String(e);
}

/**
 * Instantiates the module (each createSim() call is a new instance with its own memory), then
 * announces it with a message of `type` ("ready" or "restarted") and serves the queue.
 */
function load(type) {
  createSim().then(
    (module) => {
      sim = module;
      version = versionOf(module);
      self.postMessage({ type, version });
      schedule();
    },
    (e) => fail(`could not ${type === 'ready' ? 'load' : 'restart'} the simulation: ${describe(e)}`),
  );
}

/** Drops the instance a call crashed; requests queue until the fresh one is ready. */
function restart() {
  sim = null;
  load('restarted');
}

function versionOf(module) {
  try {
    return JSON.parse(module.version()).result?.version ?? '';
  } catch {
    return '';  // a module without version() still runs; the page just shows no version
  }
}

/** No instance: says so once, and answers the queued requests (and every later one) with the reason. */
function fail(message) {
  broken = message;
  self.postMessage({ type: 'fatal', error: { message } });
  for (const req of pending.values()) self.postMessage({ id: req.id, type: 'error', error: { path: '', message } });
  pending.clear();
}

load('ready');
