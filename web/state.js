// The page's state schema: the core's scenario knobs (schema()) plus the page's own, how each is
// parsed from a form field, written to the URL hash, and set into the scenario JSON.
//
// A knob from the core: {path, label, type: "number"|"integer"|"enum"|"boolean", default, start?, min,
// max, step?, unit, choices?, excluded_by?, requires?} (the last two: see knobActive). `default` is the scenario's own default; `start`, when present, is where
// the playground starts instead (a livelier arrival rate). `path` is a JSON pointer into the scenario ("/autoscaler/strategy").
// Every core knob re-runs the simulation; page knobs say what they affect in `effect`.
// In the playground's route a core knob is keyed by its JSON path
// ("#/playground?/autoscaler/strategy=queue_depth"), which cannot collide with the page's own keys
// ("variant" for an exercise vs "/seed" for the scenario); only values that differ from where the
// playground starts are written, so a short link means "the start".
import { parseRoute } from './router.js';

/** Knobs that belong to the page, not to a scenario. */
export const PAGE_KNOBS = [
  { key: 'variant', label: 'Variant', type: 'integer', min: 0, max: 2147483647, effect: 'exercise' },
];

/** Where a knob starts in the playground: its `start`, else the scenario's default. */
export function knobStart(knob) {
  return knob.start ?? knob.default;
}

/** The hash key of a knob: a page knob's key, or a core knob's JSON path. */
export function knobKey(knob) {
  return knob.key ?? knob.path;
}

/** Choices normalized to {value, label}; the core may send strings or {id|value, text|label}. */
export function knobChoices(knob) {
  return (knob.choices ?? []).map((c) => {
    if (c !== null && typeof c === 'object') {
      const value = c.value ?? c.id;
      return { value, label: String(c.label ?? c.text ?? value) };
    }
    return { value: c, label: String(c) };
  });
}

/**
 * Parses what a form field holds into a knob value.
 * @returns {{value: any} | {error: string}} range checks are left to the core, which names the path
 */
export function parseKnob(knob, text) {
  const raw = String(text ?? '').trim();
  switch (knob.type) {
    case 'integer':
      if (!/^[-+]?\d+$/.test(raw)) return { error: raw === '' ? 'is empty; a whole number is needed' : `"${raw}" is not a whole number` };
      return { value: Number(raw) };
    case 'number': {
      const value = Number(raw);
      if (raw === '' || !Number.isFinite(value)) return { error: raw === '' ? 'is empty; a number is needed' : `"${raw}" is not a number` };
      return { value };
    }
    case 'boolean':
      if (['true', '1', 'on', 'yes'].includes(raw)) return { value: true };
      if (['false', '0', 'off', 'no', ''].includes(raw)) return { value: false };
      return { error: `"${raw}" is not true or false` };
    case 'enum': {
      const choice = knobChoices(knob).find((c) => String(c.value) === raw);
      return choice ? { value: choice.value } : { error: `"${raw}" is not one of the choices` };
    }
    default:
      return { value: raw };
  }
}

/** A knob value as text (form fields and the hash). */
export function formatKnob(knob, value) {
  return value === undefined || value === null ? '' : String(value);
}

function unescapePointer(segment) {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** Sets `value` at JSON pointer `path` in `target`, creating objects on the way. */
export function setPointer(target, path, value) {
  const segments = path.replace(/^\//, '').split('/').map(unescapePointer);
  let node = target;
  segments.forEach((segment, i) => {
    if (i === segments.length - 1) {
      node[segment] = value;
    } else {
      if (node[segment] === null || typeof node[segment] !== 'object') node[segment] = {};
      node = node[segment];
    }
  });
  return target;
}

/**
 * Whether a knob takes part in the scenario with these values: a knob with `excluded_by` (a path) is
 * left out while the knob at that path is above 0, one with `requires` is sent only then (the closed
 * loop's clients exclude the open loop's arrival rate).
 */
export function knobActive(knob, knobs, values) {
  const on = (path) => {
    const other = knobs.find((k) => k.path === path);
    const value = values.has(path) ? values.get(path) : other ? knobStart(other) : undefined;
    return Number(value) > 0;
  };
  if (knob.excluded_by && on(knob.excluded_by)) return false;
  if (knob.requires && !on(knob.requires)) return false;
  return true;
}

/** The scenario object for a set of knob values (one entry per knob path). */
export function buildScenario(knobs, values, base = {}) {
  const scenario = structuredClone(base);
  for (const knob of knobs) {
    if (!knobActive(knob, knobs, values)) continue;
    const value = values.has(knob.path) ? values.get(knob.path) : knobStart(knob);
    if (value !== undefined) setPointer(scenario, knob.path, value);
  }
  return scenario;
}

/** The current route's parameters (#/playground?…), with the address's ?query as a fallback. */
export function readUrlState() {
  const hash = parseRoute().params;
  const query = new URLSearchParams(location.search);
  return {
    get(key) {
      return hash.has(key) ? hash.get(key) : query.get(key);
    },
    has(key) {
      return hash.has(key) || query.has(key);
    },
  };
}

// Variants. Every learner has one variant id, chosen at random on the first visit and kept in this
// browser; each exercise starts at it. "New variant" gives one exercise another id (kept for that
// exercise only); the address (#/exercise/2?variant=17) always says which variant is shown, so a
// link reproduces it.

const LEARNER_KEY = 'gpuscale:learner-variant';
const exerciseKey = (exercise) => `gpuscale:variant:ex${exercise}`;

function stored(key) {
  try {
    return parseVariant(localStorage.getItem(key));
  } catch {
    return null;
  }
}

function store(key, value) {
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, String(value));
  } catch {
    // private mode or quota: the address still carries the variant
  }
}

/** A variant id as typed or found in the address: a whole number 0 … 2147483647, else null. */
export function parseVariant(text) {
  const raw = String(text ?? '').trim();
  if (!/^\d{1,10}$/.test(raw)) return null;
  const value = Number(raw);
  return value <= PAGE_KNOBS[0].max ? value : null;
}

/** A fresh random variant id. */
export function randomSeed() {
  const buffer = new Uint32Array(1);
  crypto.getRandomValues(buffer);
  return buffer[0] % 1000000;
}

/** The learner's own variant id (chosen and kept on the first call). */
export function learnerVariant() {
  let value = stored(LEARNER_KEY);
  if (value === null) {
    value = randomSeed();
    store(LEARNER_KEY, value);
  }
  return value;
}

/** The variant an exercise opens at when the address names none: its own, else the learner's. */
export function exerciseVariant(exercise) {
  return stored(exerciseKey(exercise)) ?? learnerVariant();
}

/** Keeps `variant` as the exercise's own (forgotten when it is the learner's id anyway). */
export function rememberVariant(exercise, variant) {
  store(exerciseKey(exercise), variant === learnerVariant() ? null : variant);
}
