// Module worker that owns the WASM simulation: runs one call at a time, and per channel only the latest.
//
// Protocol (all messages are plain objects):
//   worker → page  {type: "ready", version}            once the module is loaded
//                  {type: "fatal", error: {message}}   the module could not be loaded
//   page → worker  {id, op, args, channel?}            op is one of OPS; args are JSON text or plain
//                                                      values (objects are stringified here);
//                                                      channel defaults to op
//   worker → page  {id, type: "working"}               the call has started
//                  {id, type: "result", value}         value = the envelope's `result`
//                  {id, type: "error", error}          error = {path, message} from the envelope
//                  {id, type: "dropped"}               a newer request on the same channel replaced
//                                                      this one before it started
// A WASM call is synchronous, so requests that arrive while one runs queue up; when it ends the
// worker yields once to let them in, keeps only the newest per channel, and runs the oldest channel.
import createSim from './sim.mjs';

const OPS = new Set(['version', 'run', 'hpa', 'exercise', 'grade', 'explain', 'schema', 'nodepool_check']);

let sim = null;
let busy = false;
const pending = new Map();  // channel → newest request not yet started (Map keeps arrival order)

self.onmessage = (event) => {
  const req = event.data;
  if (!req || typeof req.id !== 'number' || !OPS.has(req.op)) {
    if (req && typeof req.id === 'number') {
      self.postMessage({ id: req.id, type: 'error', error: { path: '', message: `unknown op "${req.op}"` } });
    }
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
  const [channel, req] = pending.entries().next().value;
  pending.delete(channel);
  self.postMessage({ id: req.id, type: 'working' });
  self.postMessage({ id: req.id, ...call(req.op, req.args ?? []) });
  busy = false;
  schedule();
}

// Runs one exported function and unwraps its {ok, result | error} envelope.
function call(op, args) {
  let text;
  try {
    text = sim[op](...args.map(toArg));
  } catch (e) {
    return { type: 'error', error: { path: '', message: `the module threw: ${describe(e)}` } };
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

// Every exported function takes text: JSON documents as JSON text, seeds as decimal text.
function toArg(value) {
  if (typeof value === 'string') return value;
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

createSim().then(
  (module) => {
    sim = module;
    let version = '';
    try {
      version = JSON.parse(sim.version()).result?.version ?? '';
    } catch {
      // a module without version() still runs; the page just shows no version
    }
    self.postMessage({ type: 'ready', version });
    schedule();
  },
  (e) => self.postMessage({ type: 'fatal', error: { message: `could not load the simulation: ${describe(e)}` } }),
);
