// Entry point: starts the simulation worker and mounts one panel per section of the page.
import { Exercise1Panel } from './exercise1.js';
import { Exercise2Panel } from './exercise2.js';
import { Exercise5Panel } from './exercise5.js';
import { PlaygroundPanel } from './playground.js';
import { SimClient } from './sim-client.js';
import { ensureSeed } from './state.js';

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

const busyChannels = new Set();
const client = new SimClient(new URL('./worker.js', import.meta.url), {
  onBusy(channel, busy) {
    if (busy) busyChannels.add(channel);
    else busyChannels.delete(channel);
    for (const panel of Object.values(panels)) {
      const any = [...busyChannels].some((c) => panelFor(c) === panel);
      panel.dataset.busy = String(any);
      panel.setAttribute('aria-busy', String(any));
    }
  },
});

const status = document.getElementById('status');

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
  status.textContent = error.message;
  status.classList.add('error');
  for (const panel of Object.values(panels)) panel.dataset.ready = 'error';
}
