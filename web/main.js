// Entry point: starts the simulation worker and mounts one panel per section of the page.
import { Exercise1Panel } from './exercise1.js';
import { Exercise2Panel } from './exercise2.js';
import { Exercise5Panel } from './exercise5.js';
import { PlaygroundPanel } from './playground.js';
import { SimClient } from './sim-client.js';
import { ensureSeed } from './state.js';
import { el } from './text.js';

const panels = {
  ex1: document.getElementById('ex1'),
  ex2: document.getElementById('ex2'),
  ex5: document.getElementById('ex5'),
  playground: document.getElementById('playground'),
};

// Worker channels are named after their panel ("ex1-…", "ex2-…", "ex5-…", "playground", "pg-…").
function panelFor(channel) {
  const prefix = /^(ex\d+)/.exec(channel)?.[1];
  return panels[prefix] ?? panels.playground;
}

const status = document.getElementById('status');

/**
 * Says something about the simulation itself in the page's status line (role="status"): an error
 * stays; a notice floats at the foot of the window, wherever the learner is, until dismissed.
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

const busyChannels = new Set();
const client = new SimClient(workerUrl, {
  onBusy(channel, busy) {
    if (busy) busyChannels.add(channel);
    else busyChannels.delete(channel);
    for (const panel of Object.values(panels)) {
      const any = [...busyChannels].some((c) => panelFor(c) === panel);
      panel.dataset.busy = String(any);
      panel.setAttribute('aria-busy', String(any));
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

// In-page links must not replace the hash: it holds the seed and the playground's settings.
document.addEventListener('click', (event) => {
  const link = event.target.closest('a[data-scroll]');
  if (!link) return;
  event.preventDefault();
  const target = document.getElementById(link.getAttribute('href').slice(1));
  target?.scrollIntoView({ behavior: 'smooth', block: 'start' });
  target?.focus({ preventScroll: true });
});

try {
  const version = await client.ready;
  document.getElementById('version').textContent = version ? `simulation core ${version}` : '';
  // One seed for every exercise (#seed=N): chosen here once, so the panels never race to pick one.
  ensureSeed();
  const exercises = [
    new Exercise1Panel(panels.ex1, client),
    new Exercise2Panel(panels.ex2, client),
    new Exercise5Panel(panels.ex5, client),
  ];
  const playground = new PlaygroundPanel(panels.playground, client);
  await Promise.all([
    ...exercises.map((exercise) => exercise.load()),
    playground.init().catch((error) => {
      panels.playground.dataset.ready = 'error';
      panels.playground.querySelector('[data-part="status"]').textContent = `Could not start the playground: ${error.message}`;
    }),
  ]);
} catch (error) {
  if (!client.failure) showStatus(error.message, { error: true });  // else onFatal said it already
  for (const panel of Object.values(panels)) panel.dataset.ready = 'error';
}
