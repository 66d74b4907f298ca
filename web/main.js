// Entry point: the lab's shell. Starts the simulation worker, shows one view at a time from the
// route in the address (router.js), and mounts each view's panel the first time it is opened.
import { Exercise1Panel } from './exercise1.js';
import { Exercise2Panel } from './exercise2.js';
import { Exercise3Panel } from './exercise3.js';
import { Exercise4Panel } from './exercise4.js';
import { Exercise5Panel } from './exercise5.js';
import { loadCatalogue, renderComing, renderHome } from './home.js';
import { PlanPanel } from './plan.js';
import { PlaygroundPanel } from './playground.js';
import { go, onRouteChange, parseRoute, viewKey } from './router.js';
import { SchedulerPanel } from './scheduler.js';
import { SimClient } from './sim-client.js';
import { exerciseVariant, parseVariant, rememberVariant } from './state.js';
import { el } from './text.js';

const PANELS = { 1: Exercise1Panel, 2: Exercise2Panel, 3: Exercise3Panel, 4: Exercise4Panel, 5: Exercise5Panel };
const views = new Map([...document.querySelectorAll('main > .view')].map((section) => [section.dataset.view, section]));
const status = document.getElementById('status');

/**
 * Says something about the simulation or the address in the page's status line (role="status"):
 * an error stays; a notice floats at the foot of the window, wherever the learner is, until dismissed.
 */
function showStatus(text, { error = false } = {}) {
  const sentence = text.charAt(0).toUpperCase() + text.slice(1);
  status.classList.toggle('error', error);
  status.classList.toggle('notice', !error);
  status.replaceChildren(el('span', { text: sentence }), error ? null : el('button', {
    type: 'button', class: 'secondary small', text: 'Dismiss', onclick: () => clearStatus(),
  }));
}

function clearStatus() {
  status.classList.remove('error', 'notice');
  status.replaceChildren();
}

// ?debug=1 in the page's address starts the worker in debug mode, which accepts the module's
// test hook (op "debug_trap"); window.__labDebug then reaches it. Never set for learners.
const debug = new URLSearchParams(location.search).get('debug') === '1';
const workerUrl = new URL('./worker.js', import.meta.url);
if (debug) workerUrl.searchParams.set('debug', '1');

/** The view a worker channel belongs to ("ex1-…" → exercise/1, "sched…" → scheduler, "plan…" → plan, "playground"/"pg-…" → playground). */
function viewOf(channel) {
  const exercise = /^ex(\d+)/.exec(channel)?.[1];
  if (exercise) return views.get(`exercise/${exercise}`);
  if (channel.startsWith('plan')) return views.get('plan');
  return views.get(channel.startsWith('sched') ? 'scheduler' : 'playground');
}

const busyChannels = new Set();
const client = new SimClient(workerUrl, {
  onBusy(channel, busy) {
    if (busy) busyChannels.add(channel);
    else busyChannels.delete(channel);
    for (const view of views.values()) {
      if (!('busy' in view.dataset)) continue;
      const any = [...busyChannels].some((c) => viewOf(c) === view);
      view.dataset.busy = String(any);
      view.setAttribute('aria-busy', String(any));
    }
  },
  // The worker restarted the module; the panel that asked shows the error too. Nothing is redrawn,
  // so every field keeps what the learner typed.
  onCrash: (error) => showStatus(error.detail),
  onFatal: (error) => showStatus(`${error.message.replace(/\.$/, '')}. Reload the page to start it again; your saved answers come back.`, { error: true }),
});

if (debug) {
  window.__labDebug = {
    client,
    /** Crashes the module on purpose (kind: "unreachable", "stack_overflow" or "abort"). */
    trap: (kind = 'unreachable') => client.call('debug_trap', [kind], { channel: 'debug' }),
  };
}

// "Skip to the content" moves focus without touching the route in the hash.
document.addEventListener('click', (event) => {
  const link = event.target.closest('a[data-focus]');
  if (!link) return;
  event.preventDefault();
  document.getElementById(link.dataset.focus)?.focus();
});

const panels = new Map();  // exercise number, "playground", "scheduler" or "plan" → mounted panel
let playgroundStart = null;
let schedulerStart = null;

/** The panel of an exercise, mounted on first use (its section keeps data-ready "idle" until then). */
function exercisePanel(number) {
  if (!panels.has(number)) panels.set(number, new PANELS[number](views.get(`exercise/${number}`), client));
  return panels.get(number);
}

async function showExercise(route, catalogue) {
  const number = route.exercise;
  const entry = catalogue?.exercises.find((e) => e.id === number);
  const section = views.get(`exercise/${number}`);
  if (!PANELS[number]) {
    if (entry) renderComing(section.querySelector('[data-part="body"]'), entry, catalogue);
    return;
  }
  const asked = route.params.get('variant');
  let variant = parseVariant(asked);
  if (variant === null) {
    variant = exerciseVariant(number);
    if (asked !== null) showStatus(`"${asked}" in the address is not a variant (a whole number from 0 to 2147483647): showing your variant ${variant} of exercise ${number} instead.`);
    go({ view: 'exercise', exercise: number, params: { variant } }, { replace: true });
    return;  // the corrected route comes back here
  }
  rememberVariant(number, variant);
  await client.ready;
  const panel = exercisePanel(number);
  if (panel.seed !== variant || section.dataset.ready === 'error') await panel.load(variant);
}

async function showPlayground() {
  await client.ready;
  if (!panels.has('playground')) {
    const panel = new PlaygroundPanel(views.get('playground'), client);
    panels.set('playground', panel);
    playgroundStart = panel.init().catch((error) => {
      const section = views.get('playground');
      section.dataset.ready = 'error';
      section.querySelector('[data-part="status"]').textContent = `Could not start the playground: ${error.message}`;
    });
  } else if ([...parseRoute().params.keys()].length === 0 && Object.keys(panels.get('playground').routeParams()).length) {
    // Back to the playground from the navigation (#/playground): its knobs stay as the learner left them.
    go({ view: 'playground', params: panels.get('playground').routeParams() }, { replace: true });
  } else {
    panels.get('playground').fromRoute();
  }
  return playgroundStart;
}

async function showScheduler() {
  await client.ready;
  if (!panels.has('scheduler')) {
    const section = views.get('scheduler');
    const panel = new SchedulerPanel(section, client, { onNotice: (text) => showStatus(text) });
    panels.set('scheduler', panel);
    schedulerStart = panel.init().catch((error) => {
      section.dataset.ready = 'error';
      section.querySelector('[data-part="status"]').textContent = `Could not start the Scheduler view: ${error.message}`;
    });
  } else if ([...parseRoute().params.keys()].length === 0) {
    // Back from the navigation (#/scheduler): the preset and scheduler stay as the learner left them.
    go({ view: 'scheduler', params: panels.get('scheduler').routeParams() }, { replace: true });
  } else {
    await schedulerStart;
    await panels.get('scheduler').fromRoute();
  }
  return schedulerStart;
}

async function showPlan() {
  if (!panels.has('plan')) {
    const section = views.get('plan');
    const panel = new PlanPanel(section, client);
    panels.set('plan', panel);
    try {
      await panel.init();
    } catch (error) {
      panels.delete('plan');  // the next visit tries again
      section.dataset.ready = 'error';
      section.querySelector('[data-part="status"]').textContent = `Could not start the plan designer: ${error.message}`;
      return;
    }
  }
  // A link to a plan (its input in the route) fills the form and designs it; #/plan alone keeps the form as typed.
  await panels.get('plan').fromRoute();
}

async function showHome(catalogue) {
  const home = views.get('home');
  if (!catalogue) return;
  renderHome(home.querySelector('[data-part="body"]'), catalogue);
  home.dataset.ready = 'true';
}

let catalogue = null;
let first = true;

/** Shows the route's view (hiding the others), marks it in the navigation and mounts its panel. */
async function show(route) {
  const key = views.has(viewKey(route)) ? viewKey(route) : 'home';
  if (route.unknown !== undefined && !route.legacy) showStatus(`The address "#${route.unknown}" names no page of the lab: here is the home view.`);
  if (route.legacy) {
    // An address from before the lab had routes: rewrite it to the route it meant.
    go({ view: route.view, exercise: route.exercise, params: route.params }, { replace: true });
    return;
  }
  for (const [name, section] of views) section.hidden = name !== key;
  for (const link of document.querySelectorAll('nav a[data-view]')) {
    if (link.dataset.view === key) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const section = views.get(key);
  const title = section.querySelector('h2')?.textContent ?? '';
  document.title = key === 'home' ? 'GPU Autoscaling Lab' : `${title} · GPU Autoscaling Lab`;
  if (!first) section.querySelector('h2')?.focus({ preventScroll: true });
  if (!first) window.scrollTo(0, 0);
  first = false;
  if (route.view === 'exercise') await showExercise(route, catalogue);
  else if (route.view === 'playground') await showPlayground();
  else if (route.view === 'scheduler') await showScheduler();
  else if (route.view === 'plan') await showPlan();
  else await showHome(catalogue);
}

onRouteChange((route) => show(route).catch((error) => showStatus(error.message, { error: true })));

try {
  catalogue = await loadCatalogue().catch((error) => {
    showStatus(error.message, { error: true });
    return null;
  });
  await show(parseRoute());
  const version = await client.ready;
  document.getElementById('version').textContent = version ? `simulation core ${version}` : '';
} catch (error) {
  if (!client.failure) showStatus(error.message, { error: true });  // else onFatal said it already
  for (const view of views.values()) if (view.dataset.ready !== 'true') view.dataset.ready = 'error';
}
