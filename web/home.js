// The home view and the "coming" exercise views, drawn from exercises/catalogue.json: the three
// layers as a map (each linking to its exercises, the playground setting and the views that show it), the
// five exercises with the learner's progress on the variant each opens at, and what the exercises
// not built yet will ask.
import { savedHistory } from './attempts.js';
import { Progress } from './exercise-kit.js';
import { routeHash } from './router.js';
import { exerciseVariant } from './state.js';
import { el } from './text.js';

export const CATALOGUE_URL = 'exercises/catalogue.json';

let catalogue = null;

/** The catalogue, fetched once. */
export async function loadCatalogue() {
  if (!catalogue) {
    catalogue = fetch(CATALOGUE_URL).then((response) => {
      if (!response.ok) throw new Error(`could not load ${CATALOGUE_URL}: HTTP ${response.status}`);
      return response.json();
    });
    catalogue.catch(() => { catalogue = null; });
  }
  return catalogue;
}

/** What the learner has done on one variant of an exercise, from what this browser keeps. */
export function progressOf(exerciseId, variant) {
  const attempts = savedHistory(exerciseId, variant)?.attempts ?? [];
  const counted = attempts.filter((a) => !a.revealed_before);
  const best = counted.reduce((m, a) => Math.max(m, Number(a.score) || 0), 0);
  return { attempts: attempts.length, best, solved: best >= 1, revealed: Boolean(new Progress(exerciseId, variant).data.revealed) };
}

/** "Not started", "2 attempts · best 60 %", "Solved". */
export function progressText(p) {
  if (p.solved) return `Solved (${p.attempts} attempt${p.attempts === 1 ? '' : 's'})`;
  if (!p.attempts) return p.revealed ? 'Answers looked at, no attempt' : 'Not started';
  return `${p.attempts} attempt${p.attempts === 1 ? '' : 's'} · best ${Math.round(p.best * 100)} %${p.revealed ? ' · answers shown' : ''}`;
}

function exerciseTitle(entry) {
  return entry?.title ?? `Exercise ${entry?.id}`;
}

/** Draws the home view into `body`. */
export function renderHome(body, data) {
  const layers = el('ol', { class: 'layer-map', 'aria-label': 'The three layers' }, data.layers.map((layer) => {
    const links = layer.exercises.map((id) => {
      const entry = data.exercises.find((e) => e.id === id);
      return el('li', {}, el('a', { href: routeHash({ view: 'exercise', exercise: id }), text: `Exercise ${id}: ${exerciseTitle(entry)}` }),
        entry?.status === 'coming' ? el('span', { class: 'badge', text: 'coming' }) : null);
    });
    return el('li', { class: 'layer', dataset: { layer: layer.id } },
      el('h3', {}, el('span', { class: 'layer-number', text: `Layer ${layer.number}` }), ' ', layer.title),
      el('p', { text: layer.decides }),
      el('p', { class: 'hint-text', text: `Modelled: ${layer.tools}.` }),
      el('p', { class: 'failure' }, el('strong', { text: 'What goes wrong: ' }), layer.failure),
      el('ul', { class: 'layer-links' }, links,
        el('li', {}, el('a', { href: routeHash({ view: 'playground', params: layer.playground.params }), text: `Playground: ${layer.playground.label}` })),
        (layer.views ?? []).map((v) => el('li', {}, el('a', { href: routeHash({ view: v.view, params: v.params }), text: v.label })))));
  }));

  const rows = data.exercises.map((entry) => {
    const ready = entry.status === 'ready';
    const variant = ready ? exerciseVariant(entry.id) : null;
    const progress = ready ? progressText(progressOf(entry.id, variant)) : 'Coming: not built yet';
    const layer = data.layers.find((l) => l.id === entry.layer);
    return el('li', { class: `exercise-card${ready ? '' : ' coming'}`, dataset: { exercise: String(entry.id), status: entry.status } },
      el('h3', {}, el('a', { href: routeHash({ view: 'exercise', exercise: entry.id }), text: `Exercise ${entry.id} · ${exerciseTitle(entry)}` })),
      el('p', { class: 'hint-text', text: `Layer ${layer?.number ?? '?'}: ${layer?.title ?? ''}` }),
      el('p', { text: entry.asks }),
      el('p', { class: 'progress-note', 'data-part': 'progress', text: ready ? `Variant ${variant} · ${progress}` : progress }));
  });

  body.replaceChildren(
    el('h3', { class: 'section-title', text: 'The layers' }),
    layers,
    el('h3', { class: 'section-title', text: 'The exercises' }),
    el('ol', { class: 'exercise-list' }, rows),
    el('p', { class: 'hint-text', text: 'Progress is kept in this browser only. Every exercise opens at your own variant; "New variant" in an exercise gives that exercise fresh numbers.' }));
}

/** Draws the view of an exercise that is not built yet: what it will ask, and where to look meanwhile. */
export function renderComing(body, entry, data) {
  const layer = data.layers.find((l) => l.id === entry.layer);
  body.replaceChildren(
    el('p', { class: 'badge-line' }, el('span', { class: 'badge', text: 'coming' }), ' This exercise is not built yet.'),
    el('p', {}, el('strong', { text: 'It will ask: ' }), entry.asks),
    layer ? el('p', {}, `Until then, the playground shows layer ${layer.number} (${layer.title.toLowerCase()}): `,
      el('a', { href: routeHash({ view: 'playground', params: layer.playground.params }), text: layer.playground.label }), '.') : null,
    el('p', {}, el('a', { href: routeHash({ view: 'home' }), text: 'Back to the home view' })));
}
