// Shared pieces of a run's display: names for scenarios, CSV download buttons, and linking
// "t = 120 s" in hint text to the decision-log row at that time.
import { downloadText, requestsCsv, seriesCsv } from './csv.js';
import { el } from './text.js';

const KNOWN_SCENARIOS = {
  gpu_util: 'HPA on GPU duty cycle (DCGM_FI_DEV_GPU_UTIL)',
  queue_depth: 'HPA on queue depth (vllm:num_requests_waiting)',
  http_concurrency: 'KEDA HTTP Add-on on in-flight requests',
};

/** A readable title for a named scenario. */
export function scenarioTitle(name, scenario) {
  return KNOWN_SCENARIOS[name] ?? scenario?.title ?? scenario?.name ?? name;
}

/**
 * "Download CSV" buttons for one run: the time series from the result already shown, and the
 * per-request lifecycle from that result when it holds one, else by re-running the same scenario
 * with output.requests = true.
 * @param {{client, channel: string, filePrefix: string, getRun: () => {scenario, result}|null,
 *          onError: (error) => void}} options
 */
export function csvButtons({ client, channel, filePrefix, getRun, onError }) {
  const seriesButton = el('button', {
    type: 'button', class: 'secondary', text: 'Download time series (CSV)',
    onclick: () => {
      const run = getRun();
      if (run) downloadText(`${filePrefix}-series.csv`, seriesCsv(run.result.series));
    },
  });
  const requestsButton = el('button', {
    type: 'button', class: 'secondary', text: 'Download requests (CSV)',
    onclick: async () => {
      const run = getRun();
      if (!run) return;
      if (Array.isArray(run.result.requests)) {
        downloadText(`${filePrefix}-requests.csv`, requestsCsv(run.result.requests));
        return;
      }
      const scenario = structuredClone(run.scenario);
      scenario.output = { ...(scenario.output ?? {}), requests: true };
      requestsButton.disabled = true;
      requestsButton.setAttribute('aria-busy', 'true');
      try {
        const result = await client.call('run', [JSON.stringify(scenario)], { channel });
        downloadText(`${filePrefix}-requests.csv`, requestsCsv(result.requests));
      } catch (error) {
        if (error.name !== 'Superseded') onError(error);
      } finally {
        requestsButton.disabled = false;
        requestsButton.removeAttribute('aria-busy');
      }
    },
  });
  return el('div', { class: 'csv-buttons' }, seriesButton, requestsButton);
}

// "t = 600 s" or a list "t = 600 s, 615 s, 630 s"; each time becomes its own link.
const TIME_LIST = /\bt\s*=\s*\d+(?:\.\d+)?\s*s\b(?:,\s*\d+(?:\.\d+)?\s*s\b)*/g;
const ONE_TIME = /(\d+(?:\.\d+)?)\s*s\b/g;

/**
 * Turns every "t = 120 s" (or "t = 120 s, 135 s") in the text nodes under `container` into
 * buttons that show the sync at (or just before) that time in every run's decision log: the
 * logs sit side by side, so the learner sees what each autoscaler decided at that instant.
 * `logs` is a list of {name, log}.
 */
export function linkDecisionTimes(container, logs) {
  if (!logs.length) return;
  const showAll = (t) => logs.forEach(({ log }, i) => {
    const index = log.indexAt(t);
    if (index >= 0) log.show(index, { scrollPage: i === 0 });
  });
  const walker = document.createTreeWalker(container, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const value = node.nodeValue;
    const matches = [...value.matchAll(TIME_LIST)];
    if (!matches.length) continue;
    const parts = [];
    let last = 0;
    for (const match of matches) {
      parts.push(value.slice(last, match.index));
      let inner = 0;
      for (const time of match[0].matchAll(ONE_TIME)) {
        parts.push(match[0].slice(inner, time.index));
        const t = Number(time[1]);
        const known = logs.some(({ log }) => log.indexAt(t) >= 0);
        parts.push(!known ? time[0] : el('button', {
          type: 'button', class: 'link', text: time[0],
          title: `Show the syncs at t = ${t} s in the decision logs`,
          onclick: () => showAll(t),
        }));
        inner = time.index + time[0].length;
      }
      parts.push(match[0].slice(inner));
      last = match.index + match[0].length;
    }
    parts.push(value.slice(last));
    node.replaceWith(...parts.filter((p) => p !== ''));
  }
}
