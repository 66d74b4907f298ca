// The learner's attempt history per exercise + seed (docs/wasm-api.md, "Attempt history"), kept in
// localStorage and exported as the file a teacher checks with `gpuscale grade ID --seed N --history FILE`,
// and the cache of what the grader simulated for a variant (IndexedDB, across reloads).
import { downloadText } from './csv.js';

export const HISTORY_FORMAT = 'gpuscale-attempts/1';

/**
 * The attempts on one variant, in the contract's format:
 *   {format, exercise, seed, lab_version, attempts: [{at, answer, score, revealed_before}]}
 * under localStorage "gpuscale:attempts:<exercise id>:seed=<seed>". A history written by another
 * lab version is kept aside (":lab=<version>" appended to the key) and a fresh one begins: its
 * recorded scores were computed by other rules.
 */
export class AttemptHistory {
  constructor(exerciseId, seed, labVersion) {
    this.key = historyKey(exerciseId, seed);
    this.data = { format: HISTORY_FORMAT, exercise: String(exerciseId), seed, lab_version: String(labVersion ?? ''), attempts: [] };
    const saved = savedHistory(exerciseId, seed);
    if (!saved) return;
    if (saved.lab_version === this.data.lab_version) {
      this.data.attempts = saved.attempts;
    } else {
      write(`${this.key}:lab=${saved.lab_version}`, saved);
    }
  }

  get attempts() {
    return this.data.attempts;
  }

  /** Records one graded attempt (the answer exactly as sent to the grader) and saves. */
  record(answer, score, revealedBefore) {
    const attempt = {
      at: new Date().toISOString(),
      answer: structuredClone(answer),
      score: Number.isFinite(Number(score)) ? Number(score) : 0,
      revealed_before: Boolean(revealedBefore),
    };
    this.data.attempts.push(attempt);
    write(this.key, this.data);
    return attempt;
  }

  /** The history as the grader's context takes it (a copy, so later attempts do not change it). */
  snapshot() {
    return structuredClone(this.data);
  }

  /** The file name the download gets: gpuscale-attempts-ex<id>-seed<seed>.json. */
  get fileName() {
    return `gpuscale-attempts-ex${this.data.exercise}-seed${this.data.seed}.json`;
  }

  /** Offers the history as a JSON file. */
  download() {
    downloadText(this.fileName, `${JSON.stringify(this.data, null, 2)}\n`, 'application/json');
  }
}

const historyKey = (exerciseId, seed) => `gpuscale:attempts:${exerciseId}:seed=${seed}`;

/** The history stored for one variant (whichever lab version wrote it), or null. Read only. */
export function savedHistory(exerciseId, seed) {
  let saved = null;
  try {
    saved = JSON.parse(localStorage.getItem(historyKey(exerciseId, seed)) ?? 'null');
  } catch {
    return null;  // unreadable or unavailable storage
  }
  return isHistory(saved, { exercise: String(exerciseId), seed }) ? saved : null;
}

function isHistory(saved, fresh) {
  return saved && typeof saved === 'object' && saved.format === HISTORY_FORMAT && saved.exercise === fresh.exercise &&
         saved.seed === fresh.seed && Array.isArray(saved.attempts);
}

function write(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch {
    // private mode or quota: the history is kept for this page only
  }
}

const DB_NAME = 'gpuscale-lab';
const STORE = 'simulated';
let dbPromise = null;

function openDb() {
  if (!dbPromise) {
    dbPromise = new Promise((resolve) => {
      try {
        const request = indexedDB.open(DB_NAME, 1);
        request.onupgradeneeded = () => request.result.createObjectStore(STORE);
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => resolve(null);
        request.onblocked = () => resolve(null);
      } catch {
        resolve(null);  // no IndexedDB (some private modes): memory only
      }
    });
  }
  return dbPromise;
}

/**
 * What simulations of one variant produced, kept across reloads in IndexedDB under
 * "<exercise id>|seed=<seed>|<lab version>|<kind>": kind "simulated" is the grader's `simulated`
 * object (given back in the context of the next grade or explain), kind "weeks" exercise 5's two
 * simulated weeks as the page shows them. Every method resolves (to null when storage is missing).
 */
export class SimCache {
  constructor(exerciseId, seed, labVersion) {
    this.prefix = `${exerciseId}|seed=${seed}|${labVersion ?? ''}`;
    this.memory = new Map();
  }

  async get(kind) {
    if (this.memory.has(kind)) return this.memory.get(kind);
    const db = await openDb();
    if (!db) return null;
    const value = await new Promise((resolve) => {
      try {
        const request = db.transaction(STORE).objectStore(STORE).get(`${this.prefix}|${kind}`);
        request.onsuccess = () => resolve(request.result ?? null);
        request.onerror = () => resolve(null);
      } catch {
        resolve(null);
      }
    });
    if (value !== null) this.memory.set(kind, value);
    return value;
  }

  async put(kind, value) {
    this.memory.set(kind, value);
    const db = await openDb();
    if (!db) return;
    await new Promise((resolve) => {
      try {
        const tx = db.transaction(STORE, 'readwrite');
        tx.objectStore(STORE).put(value, `${this.prefix}|${kind}`);
        tx.oncomplete = () => resolve();
        tx.onerror = () => resolve();
        tx.onabort = () => resolve();
      } catch {
        resolve();
      }
    });
  }
}
