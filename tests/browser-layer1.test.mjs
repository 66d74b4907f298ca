// Browser tests of the layer-1 exercises on the served page: exercise 2 (the NodePool editor typed
// from the keyboard, lint advice, YAML and validation errors, a wrong then a right NodePool graded,
// progress restored after a reload) and exercise 5 (the two simulated weeks, a wrong then a right
// cost, the formula, the explanation). Right answers come from the teacher CLI.
//
//   node --test tests/browser-layer1.test.mjs
// env: see tests/browser-helpers.mjs (GPUSCALE_SEED picks exercise 2's variant; exercise 5 uses
// seed 0, the lesson's baseline)
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import test from 'node:test';

import { stringify } from 'yaml';

import { ARTIFACTS, SEED, WAIT, cli, openSite, since, waitForPanel } from './browser-helpers.mjs';

const GRADE_WAIT = { timeout: 120_000 };  // a grade simulates a day (ex 2) or two weeks (ex 5)
const WEEKS_WAIT = { timeout: 240_000 };

/** Replaces the editor's whole text by typing it, as a learner would. */
async function typeInto(page, selector, text) {
  await page.focus(selector);
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Backspace');
  await page.keyboard.type(text);
}

test('exercise 2: the NodePool editor checks, grades and restores the learner\'s YAML', { timeout: 400_000 }, async (t) => {
  const variant = await cli('exercise', 2, '--seed', SEED);
  const solution = (await cli('solve', 2, '--seed', SEED)).answers.nodepool;
  assert.ok(solution && typeof solution === 'object', 'gpuscale solve 2 gave a NodePool');
  const { page, problems, url } = await openSite(t);

  const started = performance.now();
  await page.goto(url(`#/exercise/2?variant=${SEED}`), WAIT);
  await waitForPanel(page, 'ex2');
  t.diagnostic(`exercise 2 ready after ${since(started)}`);
  const editor = '#ex2 .np-editor';
  const textarea = '#ex2-q-nodepool';
  assert.equal(await page.inputValue(textarea), variant.starter_yaml, 'the editor starts with the starter');

  // The starter, typed from the keyboard: valid, but the lint gives GPU-pool advice with lines.
  await typeInto(page, textarea, variant.starter_yaml);
  assert.equal(await page.inputValue(textarea), variant.starter_yaml, 'the page never rewrites the text');
  await page.waitForSelector(`${editor}[data-state="valid"]`, WAIT);
  const codes = await page.$$eval(`${editor} .np-warning`, (els) => els.map((e) => e.dataset.code));
  t.diagnostic(`lint on the starter: ${codes.join(', ')}`);
  for (const code of ['consolidation-evicts-replicas', 'no-gpu-taint']) assert.ok(codes.includes(code), `warning ${code} shown`);
  const jumps = await page.$$eval(`${editor} .np-warning .np-jump`, (els) => els.map((e) => e.textContent));
  // The starter leaves those fields out, so each warning points near the part that would hold them.
  assert.ok(jumps.length && jumps.every((j) => /^(line \d+|not written \(near line \d+\))$/.test(j)), `each warning names a line: ${jumps}`);
  assert.ok(await page.locator(`${editor} .np-gutter .np-line.warning`).count() > 0, 'the gutter marks advised lines');

  // A YAML syntax error shows its line and column; a schema error its path.
  const tail = '  limits: [\n';
  await page.keyboard.type(tail);
  await page.waitForSelector(`${editor}[data-state="yaml-error"]`, WAIT);
  assert.match(await page.textContent(`${editor} .np-error`), /line \d+, column \d+/);
  assert.match(await page.textContent(`${editor} .np-error`), /is not closed: end it with "\]"/, 'the error says what to fix');
  for (let i = 0; i < tail.length; i++) await page.keyboard.press('Backspace');
  // A key without its colon: the message quotes the line to fix, in plain words.
  const colon = '  weight 500\n';
  await page.keyboard.type(colon);
  await page.waitForSelector(`${editor}[data-state="yaml-error"]`, WAIT);
  assert.match(await page.textContent(`${editor} .np-error`), /colon[\s\S]*The line reads: "weight 500"/);
  for (let i = 0; i < colon.length; i++) await page.keyboard.press('Backspace');
  const invalid = '  weight: 500\n';
  await page.keyboard.type(invalid);
  await page.waitForSelector(`${editor}[data-state="invalid"]`, WAIT);
  assert.equal(await page.textContent(`${editor} .np-error .np-path`), '/spec/weight');
  assert.match(await page.textContent(`${editor} .np-error`), /line \d+/);
  t.diagnostic(`invalid: ${await page.textContent(`${editor} .np-error`)}`);
  for (let i = 0; i < invalid.length; i++) await page.keyboard.press('Backspace');
  assert.equal(await page.inputValue(textarea), variant.starter_yaml);
  await page.waitForSelector(`${editor}[data-state="valid"]`, WAIT);

  // Graded: valid, but the criteria the starter leaves open fail, each with feedback.
  let clock = performance.now();
  await page.click('#ex2-grade');
  await page.waitForSelector('#ex2 [data-part="grade"][data-correct="false"]', GRADE_WAIT);
  t.diagnostic(`grading the starter took ${since(clock)}`);
  const failed = await page.$$eval('#ex2 .criterion[data-ok="false"]', (els) => els.map((e) => ({
    id: e.dataset.criterion, feedback: e.querySelector('.feedback-text').textContent.trim() })));
  t.diagnostic(`failed criteria: ${failed.map((c) => c.id).join(', ')}`);
  for (const id of ['taint', 'disruption']) assert.ok(failed.some((c) => c.id === id), `criterion ${id} fails for the starter`);
  for (const c of failed) assert.ok(c.feedback.length > 10, `criterion ${c.id} explains itself`);
  assert.equal(await page.getAttribute('#ex2 .criterion[data-criterion="valid"]', 'data-ok'), 'true');
  assert.ok(await page.locator('#ex2 .day-table tr[data-field="node_cost_usd"]').count() === 1, 'the day is compared with the reference');

  // The right NodePool (the teacher's, as YAML, with a comment of the learner's own), typed in.
  const right = `# my GPU pool: on-demand, tainted, only empty nodes consolidated\n${stringify(solution, { version: '1.1' })}`;
  await typeInto(page, textarea, right);
  await page.waitForSelector(`${editor}[data-state="valid"]`, WAIT);
  assert.ok(await page.locator('#ex2 [data-part="grade"].stale').count() === 1, 'the old grade is marked stale');
  clock = performance.now();
  await page.click('#ex2-grade');
  await page.waitForSelector('#ex2 [data-part="grade"][data-correct="true"]', GRADE_WAIT);
  t.diagnostic(`grading the right pool took ${since(clock)}`);
  assert.equal(await page.getAttribute('#ex2 [data-part="grade"]', 'data-score'), '1');
  assert.equal(await page.locator('#ex2 .criterion[data-ok="false"]').count(), 0, 'every criterion met');
  clock = performance.now();
  await page.waitForSelector('#ex2 [data-part="day"][data-ready="true"]', GRADE_WAIT);
  t.diagnostic(`re-running the day for charts took ${since(clock)}`);
  assert.ok(await page.locator('#ex2 [data-part="day"] figure.chart').count() >= 2, 'the day has charts');

  // Reload: the text (comment included) and the grade come back.
  await page.reload(WAIT);
  await waitForPanel(page, 'ex2');
  assert.equal(await page.inputValue(textarea), right, 'the text is restored as typed');
  assert.equal(await page.getAttribute('#ex2 [data-part="grade"]', 'data-correct'), 'true', 'the grade is restored');
  assert.equal(await page.locator('#ex2 [data-part="grade"].stale').count(), 0, 'the restored grade is current');
  await page.click('#ex2-day');
  await page.waitForSelector('#ex2 [data-part="day"][data-ready="true"]', GRADE_WAIT);
  await page.waitForSelector(`${editor}[data-state="valid"]`, WAIT);

  await mkdir(ARTIFACTS, { recursive: true });
  await page.locator('#ex2').screenshot({ path: path.join(ARTIFACTS, 'ex2.png') });
  t.diagnostic(`exercise 2 test body took ${since(started)}`);
  assert.deepEqual(problems, [], 'no console errors, page errors or foreign requests');
});

test('exercise 5: the two weeks, a wrong then a right cost, the formula and the explanation; simulated once, cached', { timeout: 600_000 }, async (t) => {
  const solved = await cli('solve', 5, '--seed', 0);
  const { page, problems, url } = await openSite(t);
  const stats = () => page.evaluate(() => window.__labDebug.client.stats());

  const started = performance.now();
  await page.goto(url('?debug=1#/exercise/5?variant=0'), WAIT);
  await waitForPanel(page, 'ex5');
  assert.equal(await page.getAttribute('#ex5', 'data-seed'), '0');

  // The weeks run one after the other; the table shows the counts the grader uses.
  let clock = performance.now();
  await page.click('#ex5-run');
  await page.waitForSelector('#ex5[data-weeks="running"]', WAIT);
  // Progress inside each week: the bar moves and says where the simulation is.
  await page.waitForSelector('#ex5 [data-part="ex5-weeks-progress"]:not([hidden])', WAIT);
  await page.waitForFunction(() => Number(document.querySelector('#ex5 [data-part="ex5-weeks-progress"]').dataset.updates) > 2, null, WEEKS_WAIT);
  const progressLabel = await page.textContent('#ex5-weeks-progress-label');
  t.diagnostic(`progress inside a week: ${progressLabel}`);
  assert.match(progressLabel, /^Week 1 of 2: .*: .+\(\d+ %\)$/, 'the core\'s label inside the week');
  await page.waitForSelector('#ex5[data-weeks="done"], #ex5[data-weeks="error"]', WEEKS_WAIT);
  assert.equal(await page.getAttribute('#ex5', 'data-weeks'), 'done', await page.textContent('#ex5 [data-part="weeks-status"]'));
  t.diagnostic(`running the two weeks took ${since(clock)} (${await page.textContent('#ex5 [data-part="weeks-status"]')})`);
  const cell = (field, run) => page.textContent(`#ex5-weeks tr[data-field="${field}"] td[data-run="${run}"]`);
  const count = async (field, run) => Number((await cell(field, run)).replace(/[^\d.]/g, ''));
  for (const run of ['trap', 'safe']) {
    assert.equal(await count('failed', run), solved[run].failed_requests, `${run}: failed requests`);
    assert.equal(await count('breach_hours', run), solved[run].breach_hours, `${run}: breach hours`);
    assert.equal(await count('evictions', run), solved[run].replica_evictions, `${run}: evictions`);
    assert.equal(await count('node_cost', run), Number(solved[run].node_cost_usd.toFixed(2)), `${run}: node cost`);
  }
  assert.ok(await page.locator('#ex5 .run-column figure.chart').count() >= 6, 'replicas, drops and hourly TTFT for both weeks');

  // Wrong: feedback, no formula.
  const { daily_usd: daily, monthly_usd: monthly } = solved.answers;
  await page.fill('#ex5-q-daily_usd', String(Math.round(Math.abs(daily) * 3 + 1000)));
  await page.fill('#ex5-q-monthly_usd', String(Math.round(Math.abs(monthly) * 3 + 30000)));
  clock = performance.now();
  await page.click('#ex5-check');
  await page.waitForSelector('#ex5-fb-daily_usd[data-correct="false"]', GRADE_WAIT);
  t.diagnostic(`grading (wrong) took ${since(clock)}; the module ${await page.getAttribute('#ex5', 'data-grade-ms')} ms, simulated: ${await page.getAttribute('#ex5', 'data-grade-simulated')}`);
  assert.equal(await page.getAttribute('#ex5', 'data-grade-simulated'), 'true', 'the first check of the variant simulates the weeks');
  const afterFirst = await stats();
  assert.ok((await page.textContent('#ex5-fb-daily_usd')).trim().length > 20, 'a wrong answer gets feedback');
  assert.ok(await page.locator('#ex5-formula').isHidden(), 'no formula before the answer is right');

  // Right (to the cent, as a learner would round): the formula with the simulated inputs appears.
  await page.fill('#ex5-q-daily_usd', daily.toFixed(2));
  await page.fill('#ex5-q-monthly_usd', monthly.toFixed(2));
  clock = performance.now();
  await page.click('#ex5-check');
  await page.waitForSelector('#ex5-fb-daily_usd[data-correct="true"]', GRADE_WAIT);
  const secondMs = Number(await page.getAttribute('#ex5', 'data-grade-ms'));
  t.diagnostic(`grading (right) took ${since(clock)}; the module ${secondMs} ms`);
  // The second check simulates nothing: no progress from the module, and well under a second.
  assert.equal(await page.getAttribute('#ex5', 'data-grade-simulated'), 'false', 'the second check does not simulate');
  const afterSecond = await stats();
  assert.equal(afterSecond.calls.grade, afterFirst.calls.grade + 1);
  assert.equal(afterSecond.progressed_calls.grade ?? 0, afterFirst.progressed_calls.grade ?? 0, `no re-simulation: ${JSON.stringify(afterSecond)}`);
  assert.ok(secondMs < 1000, `the cached check takes well under a second: ${secondMs} ms`);
  assert.equal(await page.getAttribute('#ex5-fb-monthly_usd', 'data-correct'), 'true');
  await page.waitForSelector('#ex5-formula:not([hidden])', WAIT);
  assert.match(await page.textContent('#ex5-formula'), /per day/);

  clock = performance.now();
  await page.waitForSelector('#ex5[data-explain="unlocked"]', GRADE_WAIT);
  await page.click('#ex5-explain');
  await page.waitForSelector('#ex5 .explanation-box[data-shown="true"]', GRADE_WAIT);
  t.diagnostic(`explaining took ${since(clock)}`);
  assert.match(await page.textContent('#ex5 .explanation-box'), /consolidat/i);
  assert.equal((await stats()).progressed_calls.explain ?? 0, 0, 'the explanation reuses the simulated weeks');

  // A reload runs nothing again: the weeks come back from IndexedDB, and a check (on a fresh
  // worker, whose memory is empty) gets the grader's weeks from there too.
  const weeksBefore = await page.textContent('#ex5-weeks');
  await page.reload(WAIT);
  await waitForPanel(page, 'ex5');
  await page.waitForSelector('#ex5[data-weeks="done"]', WAIT);
  assert.equal(await page.getAttribute('#ex5', 'data-weeks-source'), 'cache');
  assert.equal(await page.textContent('#ex5-weeks'), weeksBefore, 'the same weeks');
  assert.equal(await page.inputValue('#ex5-q-daily_usd'), daily.toFixed(2), 'the answers came back');
  await page.click('#ex5-check');
  await page.waitForSelector('#ex5-history[data-count="3"]', GRADE_WAIT);
  const reloaded = await stats();
  t.diagnostic(`after the reload: ${JSON.stringify(reloaded)}; the check took ${await page.getAttribute('#ex5', 'data-grade-ms')} ms`);
  assert.deepEqual(Object.keys(reloaded.channels).filter((c) => c.startsWith('ex5-week')), [], 'no week was simulated again after the reload');
  assert.deepEqual(reloaded.progressed_calls, {}, 'nothing simulated after the reload (no progress from any call)');
  assert.ok(Number(await page.getAttribute('#ex5', 'data-grade-ms')) < 1000, 'the check after the reload is fast');

  await mkdir(ARTIFACTS, { recursive: true });
  await page.locator('#ex5').screenshot({ path: path.join(ARTIFACTS, 'ex5.png') });
  t.diagnostic(`exercise 5 test body took ${since(started)}`);
  assert.deepEqual(problems, [], 'no console errors, page errors or foreign requests');
});
