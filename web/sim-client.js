// Page-side handle on worker.js: promise per call, latest call per channel wins, busy notifications.

/** The call was replaced by a newer one on the same channel; callers simply ignore it. */
export class Superseded extends Error {
  constructor() {
    super('superseded by a newer request');
    this.name = 'Superseded';
  }
}

/** An error the core reported: `path` is the JSON path it is about ("" when none). */
export class SimError extends Error {
  constructor({ path = '', message = '' } = {}) {
    super(path ? `${path}: ${message}` : message);
    this.name = 'SimError';
    this.path = path;
    this.detail = message;
  }
}

export class SimClient {
  /**
   * @param {URL|string} workerUrl URL of worker.js
   * @param {{onBusy?: (channel: string, busy: boolean) => void}} [options]
   */
  constructor(workerUrl, { onBusy } = {}) {
    this.worker = new Worker(workerUrl, { type: 'module' });
    this.nextId = 1;
    this.calls = new Map();   // id → {resolve, reject, channel}
    this.latest = new Map();  // channel → id of the newest call
    this.onBusy = onBusy ?? (() => {});
    this.ready = new Promise((resolve, reject) => {
      this._ready = resolve;
      this._fatal = reject;
    });
    this.worker.onmessage = (event) => this._receive(event.data);
    this.worker.onerror = (event) => {
      event.preventDefault();
      this._fail(`the simulation worker failed to start: ${event.message || 'could not load worker.js or sim.mjs'}`);
    };
  }

  /**
   * Calls one module function in the worker.
   * @param {string} op e.g. "run", "exercise"
   * @param {Array} args JSON text, objects (stringified by the worker) or numbers
   * @param {{channel?: string}} [options] calls on the same channel replace each other
   * @returns {Promise<any>} the envelope's result; rejects with SimError or Superseded
   */
  call(op, args = [], { channel = op } = {}) {
    const id = this.nextId++;
    this.latest.set(channel, id);
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject, channel });
      this.worker.postMessage({ id, op, args, channel });
    });
  }

  _receive(msg) {
    if (msg.type === 'ready') {
      this.version = msg.version;
      this._ready(msg.version);
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
    this.calls.delete(msg.id);
    const current = this.latest.get(entry.channel) === msg.id;
    if (current) this.onBusy(entry.channel, false);
    if (!current || msg.type === 'dropped') entry.reject(new Superseded());
    else if (msg.type === 'result') entry.resolve(msg.value);
    else entry.reject(new SimError(msg.error));
  }

  _fail(message) {
    const error = new SimError({ message });
    this._fatal(error);
    for (const entry of this.calls.values()) entry.reject(error);
    this.calls.clear();
  }
}
