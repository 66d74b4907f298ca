// Feedback on long work: progress beside the control that started it, and a way to cancel.
import { el } from './text.js';

/**
 * Progress beside the control that started some work: nothing for the first 200 ms, then
 * "Working… 0.4 s"; the simulated clock ("trap week: day 3 of 7", 43 %) as soon as the core reports
 * it; and past one second a Cancel button that stops the worker (`client.cancel()`).
 * @returns {{root: HTMLElement, progress: (fraction: number, label: string) => void, done: () => void}}
 */
export function workNote(control, client, { id = `${control.id || 'work'}-progress` } = {}) {
  const label = el('span', { class: 'work-label', id: `${id}-label` });
  const bar = el('progress', { max: 1, 'aria-labelledby': `${id}-label`, hidden: true });
  const cancel = el('button', { type: 'button', class: 'secondary small', text: 'Cancel', hidden: true,
                                onclick: () => client?.cancel() });
  const root = el('span', { class: 'work-note', id, 'data-part': 'work-note', role: 'status', hidden: true }, bar, label, cancel);
  control.after(root);
  const started = performance.now();
  let clock = '';
  const draw = () => {
    const seconds = (performance.now() - started) / 1000;
    root.hidden = false;
    label.textContent = clock ? `${clock} · ${seconds.toFixed(1)} s` : `Working… ${seconds.toFixed(1)} s`;
    if (seconds >= 1 && client) cancel.hidden = false;
  };
  const show = setTimeout(draw, 200);
  const tick = setInterval(() => { if (!root.hidden) draw(); }, 250);
  return {
    root,
    progress(fraction, text) {
      const f = Number(fraction);
      if (Number.isFinite(f)) {
        bar.hidden = false;
        bar.value = Math.max(0, Math.min(1, f));
      }
      clock = `${text || 'simulating'} (${Math.round((Number.isFinite(f) ? f : 0) * 100)} %)`;
      if (!root.hidden) draw();
    },
    done() {
      clearTimeout(show);
      clearInterval(tick);
      root.remove();
    },
  };
}
