// Browser test of exercise 4 on the served page: a prefill-heavy variant, a signal picked per pool and a
// justification typed (kept across a reload before any check), the grid run by the first check with
// its progress bar, the 6×6 grid of goodput per dollar (the learner's and the best pair marked,
// headers scoped, axe-core clean), verdicts that agree with the grid the module simulates under node,
// a cell opened by mouse and by keyboard (both pools over time), the answers and the grid restored
// after a reload, a second check that simulates nothing, and the justification beside the model
// explanation once the policy unlocks it.
//
//   node --test tests/browser-exercise4.test.mjs
// env: see tests/browser-helpers.mjs
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import test from 'node:test';

import { ARTIFACTS, SITE, WAIT, axeViolations, openSite, root, since, waitForPanel } from './browser-helpers.mjs';

const GRADE_WAIT = { timeout: 180_000 };  // the first check simulates 36 half-hour runs
const ROLES = ['prefill', 'decode'];
// Typed as a learner would: two paragraphs, a non-ASCII letter.
const JUSTIFICATION = 'Prefill: long prompts queue at the prefill servers first, so their waiting queue leads.\n\n' +
  'Decode: answers are short here; one replica carries them — no signal should add more.';

/** The module under node, loaded as tests/wasm.test.mjs loads it. */
async function loadModule() {
  const site = pathToFileURL(`${SITE}/`);
  const { default: createSim } = await import(new URL('sim.mjs', site));
  return createSim({ wasmBinary: await readFile(new URL('sim.wasm', site)) });
}

function unwrap(text) {
  const envelope = JSON.parse(text);
  assert.equal(envelope.ok, true, JSON.stringify(envelope.error));
  return envelope.result;
}

/**
 * What the page must show for a variant, from the grid the module simulates under node: every cell,
 * the best ones, and which signals pass per role (the exercise's rule: a signal's best pair within
 * the margin of the grid's best). The module's own verdicts for `answer` must agree with the rule.
 */
function expectations(variant, graded, answer) {
  const ids = variant.signals.map((s) => s.id);
  const cells = graded.simulated.data.cells;
  assert.equal(cells.length, ids.length * ids.length);
  const per = cells.map((c) => c.goodput_per_usd);
  const best = Math.max(...per);
  const accepted = Object.fromEntries(ROLES.map((role) => [role, ids.filter((id) =>
    Math.max(...cells.filter((c) => c[role] === id).map((c) => c.goodput_per_usd)) >= (1 - variant.margin) * best)]));
  for (const q of graded.questions) assert.equal(q.correct, accepted[q.id].includes(answer[q.id]), `the module's ${q.id} verdict follows the rule`);
  return { ids, cells, best, bestCells: per.flatMap((v, i) => (v === best ? [i] : [])), accepted };
}

test('exercise 4: signals per pool, the grid run once with progress, verdicts, a pair\'s run, restored after a reload, the explanation', { timeout: 600_000 }, async (t) => {
  // ---- Expectations from the module under node, for the first prefill-heavy variant.
  const sim = await loadModule();
  const definition = await readFile(path.join(root, 'exercises', 'ex4-disagg.json'), 'utf8');
  let seed = null, variant = null;
  for (let s = 0; s < 20 && seed === null; s++) {
    const v = unwrap(sim.exercise(definition, String(s)));
    if (v.params.shape_id === 'prefill_heavy') { seed = s; variant = v; }
  }
  assert.notEqual(seed, null, 'a prefill-heavy variant among seeds 0-19');
  let clock = performance.now();
  const probe = { prefill: variant.signals[0].id, decode: variant.signals[0].id };
  const { ids, cells, bestCells, accepted } = expectations(variant, unwrap(sim.grade(definition, String(seed), JSON.stringify(probe))), probe);
  t.diagnostic(`variant ${seed} (prefill-heavy): the grid under node took ${since(clock)}; accepted ${JSON.stringify(accepted)}`);
  // One pick that passes and, where the grid has one, one that does not.
  const answer = { prefill: accepted.prefill[0], decode: ids.find((id) => !accepted.decode.includes(id)) ?? accepted.decode[0] };
  const pass = Object.fromEntries(ROLES.map((role) => [role, accepted[role].includes(answer[role])]));
  const passing = ROLES.filter((role) => pass[role]).length;
  const n = ids.length;
  const mine = ids.indexOf(answer.prefill) * n + ids.indexOf(answer.decode);
  const label = (id) => variant.signals.find((s) => s.id === id).label;

  const { page, problems, url } = await openSite(t);
  const stats = () => page.evaluate(() => window.__labDebug.client.stats());
  const started = performance.now();
  await page.goto(url(`?debug=1#/exercise/4?variant=${seed}`), WAIT);
  await waitForPanel(page, 'ex4');
  assert.equal(await page.getAttribute('#ex4', 'data-seed'), String(seed));
  assert.match(await page.textContent('#ex4 .variant-text'), /prefill-heavy/);
  assert.equal(await page.getAttribute('#ex4', 'data-explain'), 'locked', 'locked before any attempt');

  // ---- The form: each pool's select lists the six signals (label and metric), the justification has a counter.
  for (const role of ROLES) {
    assert.match(await page.textContent(`label[for="ex4-q-${role}"]`), new RegExp(`${role} pool`));
    const options = await page.$$eval(`#ex4-q-${role} option`, (els) => els.map((o) => ({ value: o.value, text: o.textContent })));
    assert.deepEqual(options.slice(1), variant.signals.map((s) => ({ value: s.id, text: `${s.label}: ${s.metric}` })));
  }
  assert.equal(await page.getAttribute('#ex4-q-justification', 'maxlength'), String(variant.justification_max_chars));
  await page.selectOption('#ex4-q-prefill', answer.prefill);
  await page.selectOption('#ex4-q-decode', answer.decode);
  await page.focus('#ex4-q-justification');
  await page.keyboard.type(JUSTIFICATION);
  assert.equal(await page.textContent('#ex4-q-justification-count'), `${[...JUSTIFICATION].length} of ${variant.justification_max_chars} characters`);
  assert.equal(await page.getAttribute('#ex4', 'data-graded'), null, 'nothing graded yet');

  // What the learner typed survives a reload before any check.
  await page.reload(WAIT);
  await waitForPanel(page, 'ex4');
  assert.equal(await page.inputValue('#ex4-q-prefill'), answer.prefill);
  assert.equal(await page.inputValue('#ex4-q-decode'), answer.decode);
  assert.equal(await page.inputValue('#ex4-q-justification'), JUSTIFICATION, 'the justification survives a reload');

  // ---- The first check simulates the grid, with the core's progress in the bar.
  clock = performance.now();
  await page.click('#ex4-check');
  await page.waitForSelector('#ex4[data-graded]', GRADE_WAIT);
  const gradeMs = Number(await page.getAttribute('#ex4', 'data-grade-ms'));
  t.diagnostic(`first check took ${since(clock)}; the module ${gradeMs} ms in Chromium`);
  assert.equal(await page.getAttribute('#ex4', 'data-grade-simulated'), 'true', 'the first check simulates the grid');
  const bar = page.locator('#ex4 [data-part="ex4-grade-progress"]');
  const updates = Number(await bar.getAttribute('data-updates'));
  const lastLabel = await page.textContent('#ex4-grade-progress-label');
  t.diagnostic(`progress: ${updates} updates, the last "${lastLabel}"`);
  assert.ok(updates > 2 * n, `the bar moved through the runs: ${updates} updates`);
  assert.match(lastLabel, /^prefill on .+, decode on .+: minute \d+ of 30 \(\d+ %\)$/, 'the core\'s label');
  assert.ok(Number(await bar.getAttribute('data-fraction')) > 0.9, 'the bar reached the last runs');
  assert.ok(await bar.isHidden(), 'the bar is gone once graded');

  // ---- Verdicts per role, as the grid decides.
  for (const role of ROLES) {
    assert.equal(await page.getAttribute(`#ex4 [data-question="${role}"]`, 'data-correct'), String(pass[role]), `${role}: ${answer[role]}`);
    const feedback = await page.textContent(`#ex4-fb-${role}`);
    assert.ok(feedback.includes(label(answer[role])), `${role} feedback names the pick: ${feedback.slice(0, 120)}`);
    assert.match(feedback, pass[role] ? /passes|best/ : /does not pass/);
  }
  assert.match(await page.textContent('#ex4-score'), new RegExp(`^${passing} of 2 roles pass\\. Your pair: ${cells[mine].goodput_per_usd.toFixed(1)} goodput requests per dollar`));
  assert.equal(await page.getAttribute('#ex4', 'data-score'), String(passing / 2));

  // ---- The grid: 36 cells, numbers from the simulation, headers scoped, the learner's and the best pair marked.
  const grid = page.locator('#ex4-grid');
  assert.match(await grid.locator('caption').textContent(), /rows are the prefill pool's signal, columns the decode pool's/);
  assert.deepEqual(await grid.locator('thead th[scope="col"]').allTextContents(), ['prefill ↓ · decode →', ...variant.signals.map((s) => s.label)]);
  assert.deepEqual(await grid.locator('tbody th[scope="row"]').allTextContents(), variant.signals.map((s) => s.label));
  const shown = await grid.locator('button.pair-cell').evaluateAll((els) => els.map((b) => ({
    cell: Number(b.dataset.cell), prefill: b.dataset.prefill, decode: b.dataset.decode,
    perUsd: b.querySelector('.per-usd').textContent, meta: [...b.querySelectorAll('.cell-meta')].map((m) => m.textContent),
    current: b.getAttribute('aria-current'), best: b.dataset.best, marks: [...b.querySelectorAll('.cell-mark')].map((m) => m.textContent),
  })));
  assert.equal(shown.length, n * n, '36 cells');
  shown.forEach((s, i) => {
    const c = cells[i];
    assert.deepEqual([s.cell, s.prefill, s.decode], [i, c.prefill, c.decode], `cell ${i} in prefill-major order`);
    assert.equal(s.perUsd, c.goodput_per_usd.toFixed(1), `cell ${i}: goodput per dollar`);
    assert.equal(s.meta[0], `SLO ${(c.slo_attainment * 100).toFixed(1)} %`);
    assert.match(s.meta[1], /^\$\d[\d,]*\.\d\d$/);
    assert.equal(Number(s.meta[1].replace(/[$,]/g, '')), Number(c.cost_usd.toFixed(2)));
    assert.equal(s.current, i === mine ? 'true' : null, `cell ${i}: aria-current only on the learner's pair`);
    assert.equal(s.marks.includes('your pair'), i === mine);
    assert.equal(s.best, String(bestCells.includes(i)), `cell ${i}: best`);
    assert.equal(s.marks.includes('best'), bestCells.includes(i));
  });
  assert.deepEqual(await grid.locator('button.pair-cell[tabindex="0"]').evaluateAll((els) => els.map((b) => Number(b.dataset.cell))), [mine],
                   'the grid is one tab stop, at the learner\'s pair');
  const axe = await axeViolations(page);
  assert.deepEqual(axe, [], 'the graded panel is axe-core clean');

  // ---- A cell opens its pair's run: both pools over time, the summary, the decision log.
  const other = bestCells.find((i) => i !== mine) ?? (mine + 1) % (n * n);
  await page.click(`#ex4-grid button[data-cell="${other}"]`);
  await page.waitForSelector(`#ex4-run[data-ready="true"][data-cell="${other}"]`, WAIT);
  for (const role of ROLES) {
    const column = page.locator(`#ex4-run [data-pool="${role}"]`);
    assert.equal(await column.locator('figure.chart').count(), 6, `${role}: six charts`);
    assert.match(await column.locator('h5').textContent(), new RegExp(`HPA on ${label(cells[other][role])}`));
    const replicas = await column.locator('figure[data-chart="replicas"] .chart-numbers').textContent();
    assert.match(replicas, /ready: .*replica/, `${role}: the replicas over time in words: ${replicas}`);
  }
  assert.deepEqual(await page.locator('#ex4-run table.summary thead th').allTextContents(), ['metric', 'Whole service', 'Prefill pool', 'Decode pool']);
  assert.ok(await page.locator('#ex4-run .decision-log tbody tr').count() > 10, 'the decision log of both pools');
  assert.equal(await page.getAttribute(`#ex4-grid button[data-cell="${other}"]`, 'data-open'), 'true');

  // From the keyboard: the arrows move through the grid, Enter opens a cell.
  await page.focus(`#ex4-grid button[data-cell="${mine}"]`);
  const step = mine % n < n - 1 ? ['ArrowRight', mine + 1] : ['ArrowLeft', mine - 1];
  await page.keyboard.press(step[0]);
  assert.equal(await page.evaluate(() => document.activeElement.dataset.cell), String(step[1]), `${step[0]} moves to the next cell`);
  const down = step[1] + n < n * n ? step[1] + n : step[1] - n;
  await page.keyboard.press(down > step[1] ? 'ArrowDown' : 'ArrowUp');
  assert.equal(await page.evaluate(() => document.activeElement.dataset.cell), String(down));
  await page.keyboard.press('Enter');
  await page.waitForSelector(`#ex4-run[data-ready="true"][data-cell="${down}"]`, WAIT);
  const gridText = await grid.locator('tbody').textContent();
  const scoreText = await page.textContent('#ex4-score');

  // ---- A reload shows the answers, the verdicts, the grid and the opened run again.
  await page.reload(WAIT);
  await waitForPanel(page, 'ex4');
  assert.equal(await page.inputValue('#ex4-q-prefill'), answer.prefill);
  assert.equal(await page.inputValue('#ex4-q-decode'), answer.decode);
  assert.equal(await page.inputValue('#ex4-q-justification'), JUSTIFICATION);
  assert.equal(await page.locator('#ex4-grid button.pair-cell').count(), n * n);
  assert.equal((await page.locator('#ex4-grid tbody').textContent()).replace(/shown below/g, ''), gridText.replace(/shown below/g, ''), 'the same grid');
  assert.equal(await page.textContent('#ex4-score'), scoreText);
  for (const role of ROLES) assert.equal(await page.getAttribute(`#ex4 [data-question="${role}"]`, 'data-correct'), String(pass[role]));
  await page.waitForSelector(`#ex4-run[data-ready="true"][data-cell="${down}"]`, WAIT);

  // ---- A second check (on a fresh worker) simulates nothing: the grid comes from this browser's cache.
  clock = performance.now();
  await page.click('#ex4-check');
  await page.waitForSelector('#ex4-history[data-count="2"]', GRADE_WAIT);
  const secondMs = Number(await page.getAttribute('#ex4', 'data-grade-ms'));
  t.diagnostic(`second check (after the reload) took ${since(clock)}; the module ${secondMs} ms`);
  assert.equal(await page.getAttribute('#ex4', 'data-grade-simulated'), 'false', 'the second check does not simulate');
  assert.deepEqual((await stats()).progressed_calls, {}, 'nothing simulated after the reload');
  assert.ok(secondMs < 1000, `the cached check is fast: ${secondMs} ms`);

  // ---- Passing picks: every role right, the explanation unlocks; the justification beside it.
  await page.selectOption('#ex4-q-decode', accepted.decode[0]);
  assert.ok(await page.locator('#ex4-fb-decode.stale').count() === 1, 'the decode verdict is dimmed once the pick changes');
  await page.click('#ex4-check');
  await page.waitForSelector('#ex4-history[data-count="3"]', GRADE_WAIT);
  await page.waitForSelector('#ex4[data-graded="true"]', WAIT);
  assert.match(await page.textContent('#ex4-score'), /^2 of 2 roles pass/);
  await page.waitForSelector('#ex4[data-explain="unlocked"]', GRADE_WAIT);
  await page.click('#ex4-explain');
  await page.waitForSelector('#ex4-explanation[data-shown="true"]', WAIT);
  const headings = await page.locator('#ex4-explanation .explain-column h4').allTextContents();
  assert.deepEqual(headings, ['Your justification', 'Model explanation']);
  assert.equal(await page.textContent('#ex4-explanation .justification-text'), JUSTIFICATION, 'the justification as sent');
  const explanation = await page.textContent('#ex4-explanation .explain-column:nth-child(2)');
  assert.match(explanation, /Across the 36 pairs the best is/);
  for (const role of ROLES) {
    assert.ok(explanation.includes(`Signals that pass for the ${role} pool: ${accepted[role].map(label).join(', ')}`), `${role}: the passing signals`);
  }
  assert.equal((await stats()).progressed_calls.explain ?? 0, 0, 'the explanation reuses the simulated grid');

  // ---- The home view lists exercise 4 as built, with this variant's progress.
  await page.goto(url('#/'), WAIT);
  await page.waitForSelector('#home[data-ready="true"]', WAIT);
  assert.equal(await page.getAttribute('#home [data-exercise="4"]', 'data-status'), 'ready');
  assert.match(await page.textContent('#home [data-exercise="4"] [data-part="progress"]'), new RegExp(`^Variant ${seed} · Solved \\(3 attempts\\)`));

  await page.goto(url(`#/exercise/4?variant=${seed}`), WAIT);
  await waitForPanel(page, 'ex4');
  await mkdir(ARTIFACTS, { recursive: true });
  await page.locator('#ex4').screenshot({ path: path.join(ARTIFACTS, 'ex4.png') });
  t.diagnostic(`exercise 4 test body took ${since(started)}`);
  assert.deepEqual(problems, [], 'no console errors, page errors or foreign requests');
});
