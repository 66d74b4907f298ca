// Page-side handle on worker.js: promise per call, latest call per channel wins, busy, crash and
// fatal notifications.

/** The call was replaced by a newer one on the same channel; callers simply ignore it. */
export class Superseded extends Error {
  constructor() {
    super('superseded by a newer request');
    this.name = 'Superseded';
  }
}

/** The learner cancelled the call (the worker was stopped and started afresh). */
export class Cancelled extends Error {
  constructor() {
    super('cancelled');
    this.name = 'Cancelled';
  }
}

/**
 * An error the core reported: `path` is the JSON path it is about ("" when none). `crashed` is true
 * when the call crashed the module, which the worker then restarted (nothing to fix in the input).
 */
export class SimError extends Error {
  constructor({ path = '', message = '', crashed = false } = {}) {
    super(path ? `${path}: ${message}` : message);
    this.name = 'SimError';
    this.path = path;
    this.detail = message;
    this.crashed = Boolean(crashed);
  }
}

export class SimClient {
  /**
   * @param {URL|string} workerUrl URL of worker.js
   * @param {{onBusy?: (channel: string, busy: boolean) => void,
   *          onCrash?: (error: SimError) => void,
   *          onFatal?: (error: SimError) => void}} [options]
   *   onCrash: a call crashed the module and the worker restarted it (also for a superseded call);
   *   onFatal: the module could not be loaded or restarted, so every call fails from now on
   */
  constructor(workerUrl, { onBusy, onCrash, onFatal } = {}) {
    this.workerUrl = workerUrl;
    this.nextId = 1;
    this.calls = new Map();   // id → {resolve, reject, channel}
    this.latest = new Map();  // channel → id of the newest call
    this.timings = new Map(); // channel → {ms, progressed} of its newest finished call
    this.restarts = 0;        // how many times the worker restarted a crashed module
    this.failure = null;      // the SimError once the module is gone for good
    this.onBusy = onBusy ?? (() => {});
    this.onCrash = onCrash ?? (() => {});
    this.onFatal = onFatal ?? (() => {});
    this.ready = new Promise((resolve, reject) => {
      this._ready = resolve;
      this._fatal = reject;
    });
    this.cancels = 0;         // how many times the learner cancelled a call
    this._spawn();
  }

  _spawn() {
    this.worker = new Worker(this.workerUrl, { type: 'module' });
    this.worker.onmessage = (event) => this._receive(event.data);
    this.worker.onerror = (event) => {
      event.preventDefault();
      this._fail(`the simulation worker failed to start: ${event.message || 'could not load worker.js or sim.mjs'}`);
    };
  }

  /**
   * Cancels every call in flight: a WASM call cannot be interrupted, so the worker is stopped and a
   * fresh one started (the module loads again, well under a second). The calls reject with
   * Cancelled; calls made afterwards wait for the fresh module.
   */
  cancel() {
    if (this.failure) return;
    this.worker.terminate();
    this.cancels += 1;
    const calls = [...this.calls];
    this.calls.clear();
    for (const [id, entry] of calls) {
      if (this.latest.get(entry.channel) === id) this.onBusy(entry.channel, false);
      entry.reject(new Cancelled());
    }
    this._spawn();
  }

  /**
   * Calls one module function in the worker.
   * @param {string} op e.g. "run", "exercise"
   * @param {Array} args JSON text, objects (stringified by the worker) or numbers
   * @param {{channel?: string, onProgress?: (fraction: number, label: string) => void}} [options]
   *   calls on the same channel replace each other; onProgress (run, grade, explain) is called
   *   while the module simulates
   * @returns {Promise<any>} the envelope's result; rejects with SimError or Superseded. The
   *   worker's timing of the call is then in `this.timings.get(channel)`: {ms, progressed}
   */
  call(op, args = [], { channel = op, onProgress = null } = {}) {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    this.latest.set(channel, id);
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject, channel, onProgress });
      this.worker.postMessage({ id, op, args, channel, progress: Boolean(onProgress) });
    });
  }

  /** The worker's counters: calls per op, calls that simulated (sent progress), cache use. */
  stats() {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject, channel: `stats-${id}` });
      this.latest.set(`stats-${id}`, id);
      this.worker.postMessage({ id, op: 'stats' });
    });
  }

  _receive(msg) {
    if (msg.type === 'ready') {
      this.version = msg.version;
      this._ready(msg.version);  // after a cancel: the promise is settled already, nothing changes
      return;
    }
    if (msg.type === 'restarted') {
      this.version = msg.version;
      this.restarts += 1;
      return;
    }
    if (msg.type === 'fatal') {
      this._fail(msg.error.message);
      return;
    }
    const entry = this.calls.get(msg.id);
    if (!entry) return;
    if (msg.type === 'working') {
      this.onBusy(entry.channel, true);
      return;
    }
    if (msg.type === 'progress') {
      if (this.latest.get(entry.channel) === msg.id) entry.onProgress?.(msg.fraction, msg.label);
      return;
    }
    this.calls.delete(msg.id);
    const current = this.latest.get(entry.channel) === msg.id;
    if (current && typeof msg.ms === 'number') this.timings.set(entry.channel, { ms: msg.ms, progressed: msg.progressed ?? 0 });
    if (current) this.onBusy(entry.channel, false);
    const error = msg.type === 'error' ? new SimError(msg.error) : null;
    if (error?.crashed) this.onCrash(error);
    if (!current || msg.type === 'dropped') entry.reject(new Superseded());
    else if (msg.type === 'result') entry.resolve(msg.value);
    else entry.reject(error);
  }

  _fail(message) {
    if (this.failure) return;
    const error = new SimError({ message });
    this.failure = error;
    this._fatal(error);
    for (const [id, entry] of this.calls) {
      if (this.latest.get(entry.channel) === id) this.onBusy(entry.channel, false);
      entry.reject(error);
    }
    this.calls.clear();
    this.onFatal(error);
  }
}
