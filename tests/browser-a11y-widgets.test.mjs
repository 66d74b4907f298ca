// Browser test of the playground's two keyboard widgets: the decision log is one tab stop whose rows
// the arrow keys move through and Enter opens (the controller's arithmetic), skipping filtered rows;
// each chart has a text alternative with its numbers, is one tab stop whose ArrowRight moves the
// cursor point by point (the announced values change), and opens a table of its values from the keyboard.
//
//   node --test tests/browser-a11y-widgets.test.mjs
// env: see tests/browser-helpers.mjs
import assert from 'node:assert/strict';
import test from 'node:test';

import { WAIT, openSite, waitForPanel } from './browser-helpers.mjs';

/** Elements under `selector` that Tab stops at (visible, enabled, tabindex ≥ 0). */
function tabStopsIn(page, selector) {
  return page.evaluate((sel) => {
    const root = document.querySelector(sel);
    const candidates = root.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex], [contenteditable="true"]');
    return [...candidates].filter((e) => {
      if (e.disabled || e.tabIndex < 0 || e.closest('[hidden], [inert]')) return false;
      if (e.matches('details:not([open]) > :not(summary), details:not([open]) > :not(summary) *')) return false;
      const box = e.getBoundingClientRect();
      return box.width > 0 || box.height > 0;
    }).map((e) => e.id || `${e.tagName.toLowerCase()}.${e.className}`);
  }, selector);
}

const focused = (page) => page.evaluate(() => {
  const e = document.activeElement;
  return { id: e?.id ?? '', tag: e?.tagName.toLowerCase(), tabIndex: e?.tabIndex, expanded: e?.getAttribute('aria-expanded'),
           className: String(e?.className ?? ''), hidden: Boolean(e?.hidden), change: e?.dataset?.change };
});

test('playground: the decision log and the charts work from the keyboard and without sight', { timeout: 180_000 }, async (t) => {
  const { page, problems, url } = await openSite(t, { viewport: { width: 1280, height: 800 } });
  await page.goto(url('#/playground'), WAIT);
  await waitForPanel(page, 'playground', 60_000);
  // A heavier burst, so the run scales (the log then has changes to filter to).
  const rev = Number(await page.getAttribute('#playground', 'data-rev'));
  await page.fill('#playground [data-path="/workload/rate_scale"] input', '40');
  await page.press('#playground [data-path="/workload/rate_scale"] input', 'Enter');
  await page.waitForFunction((r) => Number(document.querySelector('#playground').dataset.rev) > r
                              && document.querySelector('#playground').dataset.busy !== 'true', rev, WAIT);

  // ---- The decision log: one tab stop, the rows moved through with the arrows, Enter opens one.
  const log = '#playground .decision-log';
  assert.equal(await page.getAttribute(`${log} table.log`, 'role'), 'treegrid');
  const rows = await page.locator(`${log} tbody tr.decision`).count();
  assert.ok(rows > 20, `the run has decisions: ${rows}`);
  assert.deepEqual(await tabStopsIn(page, `${log} .log-scroll`), ['decision-playground-0'], 'the log is one tab stop: its first row');
  assert.equal(await page.locator(`${log} table.log button`).count(), 0, 'no button per row');
  const headers = await page.locator(`${log} thead th`).allTextContents();
  assert.deepEqual(headers, ['time', 'controller', 'replicas', 'why it acted']);

  await page.focus(`${log} input[type="checkbox"]`);
  await page.keyboard.press('Tab');
  let at = await focused(page);
  assert.equal(at.id, 'decision-playground-0', 'Tab from the filter lands on the log');
  assert.equal(at.tabIndex, 0);
  assert.ok(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle !== 'none'), 'the focused row shows a focus ring');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  at = await focused(page);
  assert.equal(at.id, 'decision-playground-2', 'ArrowDown moves row by row');
  assert.equal(await page.getAttribute('#decision-playground-0', 'tabindex'), '-1', 'the tab stop moved with the focus');
  assert.equal(await page.locator(`${log} tbody tr[tabindex="0"]`).count(), 1, 'exactly one row holds the tab stop');
  await page.keyboard.press('PageDown');
  assert.equal((await focused(page)).id, 'decision-playground-12', 'PageDown moves 10 rows');
  await page.keyboard.press('End');
  assert.equal((await focused(page)).id, `decision-playground-${rows - 1}`, 'End: the last row');
  await page.keyboard.press('Home');
  assert.equal((await focused(page)).id, 'decision-playground-0', 'Home: the first row');

  // Enter opens the row's explanation (the controller's arithmetic), the arrows reach it, Enter closes it.
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  at = await focused(page);
  assert.equal(at.id, 'decision-playground-1');
  assert.equal(at.expanded, 'true', 'Enter opened the row');
  const explanation = await page.textContent('#decision-playground-1-why pre.explanation');
  assert.match(explanation, /currentReplicas|replicas/, `the explanation: ${explanation.slice(0, 120)}`);
  await page.keyboard.press('ArrowDown');
  assert.equal((await focused(page)).id, 'decision-playground-1-why', 'ArrowDown reaches the open explanation');
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('Enter');
  assert.equal((await focused(page)).expanded, 'false', 'Enter closed it');
  assert.equal(await page.locator('#decision-playground-1-why').count(), 0);
  // Tab leaves the log at once: it is one stop, however many rows.
  await page.keyboard.press('Tab');
  assert.ok(!(await page.evaluate(() => Boolean(document.activeElement.closest('table.log')))), 'Tab leaves the log');

  // Filtered rows are skipped: only the changes, then the arrows land on changes only.
  await page.check(`${log} input[type="checkbox"]`);
  const shown = await page.locator(`${log} tbody tr.decision:not([hidden])`).count();
  assert.ok(shown >= 2 && shown < rows, `some rows are changes: ${shown} of ${rows}`);
  await page.keyboard.press('Tab');
  at = await focused(page);
  assert.equal(at.change, 'true', `the tab stop moved to a shown row: ${at.id}`);
  await page.keyboard.press('ArrowDown');
  const next = await focused(page);
  assert.equal(next.change, 'true');
  assert.equal(next.hidden, false);
  assert.ok(Number(next.id.split('-').pop()) > Number(at.id.split('-').pop()), `${at.id} → ${next.id}`);
  assert.match(await page.textContent(`#${next.id} td.replicas`), /^\d+ → \d+$/, 'a change shows its replica counts');
  // A click on a row opens it too.
  await page.click(`#${next.id} td.reason`);
  assert.equal(await page.getAttribute(`#${next.id}`, 'aria-expanded'), 'true', 'a click opens a row');
  assert.ok(await page.isVisible(`#${next.id}-why pre.explanation`));
  await page.click(`#${next.id} td.reason`);
  assert.equal(await page.getAttribute(`#${next.id}`, 'aria-expanded'), 'false', 'a second click closes it');
  await page.uncheck(`${log} input[type="checkbox"]`);

  // ---- The charts: a text alternative with numbers, one tab stop each, exact values by keyboard.
  const figure = '#playground figure[data-chart="replicas"]';
  const described = await page.evaluate((sel) => {
    const f = document.querySelector(sel);
    return (f.getAttribute('aria-describedby') ?? '').split(' ').map((id) => document.getElementById(id)?.textContent ?? '').join(' ');
  }, figure);
  assert.match(described, /desired: .*max \d+ replicas at [\d.]+ min.*final \d+ replica/, `the figure's description: ${described}`);
  assert.match(described, /Burst window \(shaded\): \d+–\d+ min/, 'the burst window is named');
  assert.match(described, /scale events? \(dashed lines/, 'the scale events are named');
  assert.equal(await page.getAttribute(`${figure} .uplot`, 'aria-hidden'), 'true', 'the canvas is hidden from screen readers');
  const chartStops = await tabStopsIn(page, figure);
  assert.equal(chartStops.length, 1, `one tab stop per chart: ${chartStops}`);
  for (const f of await page.locator('#playground figure.chart:not([hidden])').all()) {
    assert.match(await f.locator('.chart-numbers').textContent(), /\d/, 'every chart says its numbers');
  }

  const plot = page.locator(`${figure} .chart-plot`);
  assert.equal(await plot.getAttribute('role'), 'slider');
  await page.focus('#playground figure[data-chart="replicas"] .chart-plot');
  await page.keyboard.press('Home');
  const first = await plot.getAttribute('aria-valuetext');
  assert.match(first, /^t = 0 s .*: desired \d+ replicas?, ready \d+ replicas?$/, `the first point: ${first}`);
  const values = [first];
  for (let i = 0; i < 60; i++) {
    await page.keyboard.press('ArrowRight');
    values.push(await plot.getAttribute('aria-valuetext'));
  }
  assert.equal(await plot.getAttribute('aria-valuenow'), '60', 'ArrowRight steps one scrape at a time');
  assert.notEqual(values[1], values[0], `ArrowRight changes the announced values: ${values[1]}`);
  assert.ok(new Set(values.map((v) => v.replace(/^t = [^:]+: /, ''))).size > 1, `the values change along the run: ${values.at(-1)}`);
  const legend = await page.textContent(`${figure} .u-legend`);
  const time = /^t = (\S+ s)/.exec(values.at(-1))[1];
  assert.ok(legend.includes(time), `the legend shows the same time (${time}): ${legend}`);
  assert.match(legend, /replicas?/, 'the legend gives units');
  // The other charts' cursors follow (shared cursor).
  assert.ok((await page.textContent('#playground figure[data-chart="waiting"] .u-legend')).includes(time), 'the synced chart shows the same time');

  // Enter opens the table of values, focus goes into it; Escape closes it and returns to the plot.
  await page.keyboard.press('Enter');
  const table = `${figure} .chart-table`;
  await page.waitForSelector(`${table}:not([hidden]) table tbody tr`, WAIT);
  assert.ok(await page.evaluate((sel) => document.activeElement === document.querySelector(sel), table), 'focus is in the table');
  const heads = await page.locator(`${table} thead th`).allTextContents();
  assert.deepEqual(heads, ['time (min)', 'desired (replicas)', 'ready (replicas)']);
  assert.ok(await page.locator(`${table} tbody tr`).count() > 10, 'the table has rows');
  assert.match(await page.textContent(`${table} tbody tr:first-child td`), /^\d+$/);
  await page.keyboard.press('Escape');
  assert.equal(await page.isHidden(table), true, 'Escape closed the table');
  assert.ok(await page.evaluate(() => document.activeElement.classList.contains('chart-plot')), 'focus is back on the plot');

  // The whole playground stays within a keyboard user's reach.
  const stops = await tabStopsIn(page, '#playground');
  t.diagnostic(`playground: ${stops.length} tab stops`);
  assert.ok(stops.length <= 60, `${stops.length} tab stops in the playground`);
  assert.deepEqual(problems, []);
});
