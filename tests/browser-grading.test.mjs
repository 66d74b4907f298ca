// Browser tests of the grading model on the served page: the explanation gated by the exercise's
// policy (locked before an attempt, unlocked when the policy says, "New variant" once shown,
// later attempts marked revealed_before), the attempt history kept across a reload with the
// answers in progress, exported as a file the teacher's `gpuscale grade --history` accepts, and
// exercise 1's request-by-request comparison checked against the CLI's own runs of the variant.
//
//   node --test tests/browser-grading.test.mjs
// env: see tests/browser-helpers.mjs
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import test from 'node:test';
import { promisify } from 'node:util';

import { CLI, SEED, WAIT, cli, openSite, root, waitForPanel } from './browser-helpers.mjs';

const GRADE_WAIT = { timeout: 60_000 };

/** Runs the CLI, whatever its exit code: {code, stdout, stderr}. */
async function cliRaw(...args) {
  try {
    const { stdout, stderr } = await promisify(execFile)(CLI, args.map(String), { timeout: 120_000, maxBuffer: 1 << 28 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    return { code: error.code, stdout: error.stdout ?? '', stderr: error.stderr ?? '' };
  }
}

/** The exercise file's grading policy (the core judges it; the test only knows what to expect). */
async function policyOf(file) {
  const definition = JSON.parse(await readFile(path.join(root, 'exercises', file), 'utf8'));
  return definition.policy ?? { reveal: 'after_attempt' };
}

/** Answers exercise 1's questions in the page: `answers` maps question id → value. */
async function answerEx1(page, answers) {
  for (const [id, value] of Object.entries(answers)) {
    const type = await page.getAttribute(`#ex1 [data-question="${id}"]`, 'data-type');
    if (type === 'choice') await page.check(`#ex1-q-${id}-${value}`);
    else await page.fill(`#ex1-q-${id}`, String(value));
  }
}

/** A wrong answer to every question of exercise 1 (an integer off by 7, another choice). */
async function wrongEx1(page, right) {
  const wrong = {};
  for (const [id, value] of Object.entries(right)) {
    const question = page.locator(`#ex1 [data-question="${id}"]`);
    if ((await question.getAttribute('data-type')) === 'choice') {
      const choices = await question.locator('input[type="radio"]').evaluateAll((els) => els.map((e) => e.value));
      wrong[id] = choices.find((c) => c !== value);
    } else {
      wrong[id] = Number(value) + 7;
    }
  }
  return wrong;
}

async function checkEx1(page, attempts) {
  await page.click('#ex1-check');
  await page.waitForSelector(`#ex1-history[data-count="${attempts}"]`, GRADE_WAIT);
}

test('exercise 1: the explanation is gated by the policy, the history is kept, exported and re-graded by the CLI', { timeout: 300_000 }, async (t) => {
  const policy = await policyOf('ex1-bursty.json');
  const right = (await cli('solve', 1, '--seed', SEED)).answers;
  const { page, problems, url } = await openSite(t);
  await page.goto(url(`#/exercise/1?variant=${SEED}`), WAIT);
  await waitForPanel(page, 'ex1');

  // Before any attempt: locked, and the page says when it unlocks (the core's sentence).
  assert.equal(await page.getAttribute('#ex1', 'data-explain'), 'locked', `policy ${JSON.stringify(policy)}: locked before an attempt`);
  assert.ok(await page.isDisabled('#ex1-explain'), 'the Explain button is disabled while locked');
  const note = await page.textContent('#ex1-gate-note');
  const locked = await cli('explain', 1, '--seed', SEED);
  assert.equal(locked.locked, true, 'the CLI, given no history, keeps it locked too');
  assert.match(note, /^Locked: /, note);
  assert.ok(note.toLowerCase().includes(String(locked.unlocks).replace(/\.$/, '').toLowerCase()),
            `the page says when it unlocks, in the core's words: "${note}" / "${locked.unlocks}"`);
  assert.equal(await page.getAttribute('#ex1-explain', 'aria-describedby'), 'ex1-gate-note', 'the button is described by that sentence');
  assert.ok(await page.locator('#ex1-new-variant').isHidden(), 'no New variant before the answers are shown');
  assert.equal(await page.locator('#ex1 .explanation-box[data-shown="true"]').count(), 0);
  t.diagnostic(`policy ${JSON.stringify(policy)}; locked: ${note}`);

  // An answer in progress (not checked) survives a reload.
  const wrong = await wrongEx1(page, right);
  await answerEx1(page, { a: wrong.a });
  await page.reload(WAIT);
  await waitForPanel(page, 'ex1');
  if ((await page.getAttribute('#ex1 [data-question="a"]', 'data-type')) !== 'choice') {
    assert.equal(await page.inputValue('#ex1-q-a'), String(wrong.a), 'the unchecked answer came back after the reload');
  }

  // Wrong attempts: locked until the policy allows (after_attempt: 1, after_attempts: N,
  // after_correct: never while wrong).
  await answerEx1(page, wrong);
  const unlockAfter = policy.reveal === 'after_attempts' ? Number(policy.attempts) : policy.reveal === 'after_attempt' ? 1 : Infinity;
  const wrongTries = Number.isFinite(unlockAfter) ? unlockAfter : 2;
  for (let n = 1; n <= wrongTries; n++) {
    await checkEx1(page, n);
    const expected = n >= unlockAfter ? 'unlocked' : 'locked';
    await page.waitForSelector(`#ex1[data-explain="${expected}"]`, GRADE_WAIT);
    t.diagnostic(`after ${n} wrong attempt(s): ${expected}: ${await page.textContent('#ex1-gate-note')}`);
  }
  if (!Number.isFinite(unlockAfter)) {
    await answerEx1(page, right);
    await checkEx1(page, wrongTries + 1);
    await page.waitForSelector('#ex1[data-explain="unlocked"]', GRADE_WAIT);
  }
  const before = Number(await page.getAttribute('#ex1-history', 'data-count'));
  assert.ok(await page.isEnabled('#ex1-explain'), 'unlocked: the button works');

  // Shown: the explanation and the answers, then New variant; a later attempt is marked revealed_before.
  await page.focus('#ex1-explain');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#ex1 .explanation-box[data-shown="true"]', WAIT);
  assert.equal(await page.getAttribute('#ex1', 'data-explain'), 'shown');
  assert.ok(await page.locator('#ex1-new-variant').isVisible(), 'New variant once the answers are shown');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'ex1-new-variant', 'focus moves to New variant');
  assert.match(await page.textContent('#ex1 .explanation-box'), /Answers for this variant/);
  await answerEx1(page, right);
  await checkEx1(page, before + 1);
  const rows = await page.$$eval('#ex1-history tbody tr', (trs) => trs.map((tr) => tr.dataset.revealedBefore));
  assert.deepEqual(rows, [...Array(before).fill('false'), 'true'], 'only the attempt after the answers were shown is revealed_before');

  // The history, kept in localStorage in the contract's format, survives a reload with the gate state.
  await page.reload(WAIT);
  await waitForPanel(page, 'ex1');
  assert.equal(await page.getAttribute('#ex1-history', 'data-count'), String(before + 1));
  assert.equal(await page.getAttribute('#ex1', 'data-explain'), 'shown', 'the shown explanation comes back');
  const stored = await page.evaluate((seed) => JSON.parse(localStorage.getItem(`gpuscale:attempts:1:seed=${seed}`)), SEED);
  assert.equal(stored.format, 'gpuscale-attempts/1');
  assert.equal(stored.exercise, '1');
  assert.equal(stored.seed, SEED);
  assert.ok(stored.lab_version.length > 0, 'the lab version is recorded');
  for (const a of stored.attempts) {
    assert.ok(!Number.isNaN(Date.parse(a.at)), `ISO time: ${a.at}`);
    assert.ok(a.score >= 0 && a.score <= 1, `score in 0..1: ${a.score}`);
    assert.equal(typeof a.revealed_before, 'boolean');
  }
  assert.deepEqual(stored.attempts.at(-1).answer, right, 'the answer exactly as sent to the grader');

  // Export: the download is the stored history, and the teacher's CLI re-grades it (exit 0).
  await page.locator('#ex1-history summary').click();
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#ex1-export-history')]);
  assert.equal(download.suggestedFilename(), `gpuscale-attempts-ex1-seed${SEED}.json`);
  const exported = JSON.parse(await readFile(await download.path(), 'utf8'));
  assert.deepEqual(exported, stored, 'the file is the stored history');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gpuscale-history-'));
  const file = path.join(dir, download.suggestedFilename());
  await writeFile(file, JSON.stringify(exported));
  const checked = await cliRaw('grade', 1, '--seed', SEED, '--history', file);
  t.diagnostic(`gpuscale grade 1 --seed ${SEED} --history: exit ${checked.code}\n${checked.stdout}${checked.stderr}`);
  assert.equal(checked.code, 0, `the CLI accepts the exported history: ${checked.stderr}`);
  const report = JSON.parse(checked.stdout);
  assert.equal(report.attempts.length, exported.attempts.length, 'one report row per attempt');
  assert.equal(report.all_match, true, `every recorded score matches the recomputed one: ${checked.stdout}`);
  assert.deepEqual(report.attempts.map((a) => a.revealed_before), exported.attempts.map((a) => a.revealed_before));
  assert.equal(report.attempts.at(-1).credit, 0, 'the attempt after the answers were shown earns no credit');

  // New variant: another seed, locked again, its own (empty) history.
  await page.click('#ex1-new-variant');
  await page.waitForFunction((seed) => document.querySelector('#ex1').dataset.seed !== String(seed)
    && document.querySelector('#ex1').dataset.ready === 'true', SEED, GRADE_WAIT);
  assert.equal(await page.getAttribute('#ex1', 'data-explain'), 'locked', 'the new variant starts locked');
  assert.equal(await page.getAttribute('#ex1-history', 'data-count'), '0');
  assert.equal(new URL(page.url()).hash, `#/exercise/1?variant=${await page.getAttribute('#ex1', 'data-seed')}`, 'the route names the new variant');
  // Back returns to the variant before, with its history; forward to the new one.
  const fresh = await page.getAttribute('#ex1', 'data-seed');
  await page.goBack();
  await page.waitForFunction((seed) => document.querySelector('#ex1').dataset.seed === String(seed)
    && document.querySelector('#ex1').dataset.ready === 'true', SEED, GRADE_WAIT);
  assert.notEqual(await page.getAttribute('#ex1-history', 'data-count'), '0', 'the earlier variant keeps its attempts');
  await page.goForward();
  await page.waitForFunction((seed) => document.querySelector('#ex1').dataset.seed === seed
    && document.querySelector('#ex1').dataset.ready === 'true', fresh, GRADE_WAIT);

  assert.deepEqual(problems, [], 'no console errors, page errors or foreign requests');
});

/** The requests of one of a variant's runs, from the CLI. */
async function cliRequests(variant, name) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'gpuscale-ex1-'));
  const file = path.join(dir, `${name}.json`);
  await writeFile(file, JSON.stringify({ ...variant.scenarios[name], output: { requests: true } }));
  return (await cli('run', file)).requests;
}

const outcome = (r) => (r.completed_at !== null ? 'completed' : r.dropped_at !== null ? 'dropped' : 'unfinished');

test('exercise 1: the request comparison joins both runs by request id, with drop times, replicas and the burst window', { timeout: 240_000 }, async (t) => {
  // A variant where both runs drop requests (the comparison then has every kind of row).
  let seed = null;
  let variant = null;
  let runs = null;
  for (const candidate of [SEED, 2, 4, 0, 6, 7, 8, 9]) {
    const v = await cli('exercise', 1, '--seed', candidate);
    const pair = [v.compare.first, v.compare.second];
    const r = await Promise.all(pair.map((name) => cliRequests(v, name)));
    if (r.every((reqs) => reqs.some((q) => q.dropped_at !== null))) {
      seed = candidate; variant = v; runs = r;
      break;
    }
  }
  assert.ok(seed !== null, 'a variant where both runs drop requests');
  const [first, second] = runs;
  const byId = new Map(second.map((r) => [r.id, r]));
  const expect = (oa, ob) => first.filter((r) => outcome(r) === oa && outcome(byId.get(r.id)) === ob).length;
  const droppedFirstOnly = expect('dropped', 'completed');

  const { page, problems, url } = await openSite(t);
  await page.goto(url(`#/exercise/1?variant=${seed}`), WAIT);
  await waitForPanel(page, 'ex1');
  const matrix = '#ex1-compare-matrix';
  for (const oa of ['completed', 'dropped', 'unfinished']) {
    for (const ob of ['completed', 'dropped', 'unfinished']) {
      assert.equal(await page.getAttribute(`${matrix} td[data-first="${oa}"][data-second="${ob}"]`, 'data-count'), String(expect(oa, ob)),
                   `seed ${seed}: ${oa} in ${variant.compare.first}, ${ob} in ${variant.compare.second}`);
    }
  }
  t.diagnostic(`seed ${seed}: dropped by ${variant.compare.first} only ${droppedFirstOnly}, by ${variant.compare.second} only ${expect('completed', 'dropped')}, by both ${expect('dropped', 'dropped')}`);
  const answer = (await cli('solve', 1, '--seed', seed)).answers;
  const prompt = variant.questions.find((q) => q.id === 'a')?.prompt ?? '';
  if (/drop.*serve/i.test(prompt)) assert.equal(droppedFirstOnly, Number(answer.a), `question (a) is read off the table: ${prompt}`);

  // The default list: dropped by the first run, completed by the second; each row with its drop time and replica.
  const list = '#ex1-compare-list';
  assert.equal(await page.getAttribute(list, 'data-count'), String(droppedFirstOnly));
  const firstRow = page.locator('#ex1-compare-requests tbody tr').first();
  const id = Number(await firstRow.getAttribute('data-id'));
  const record = first.find((r) => r.id === id);
  const cells = await firstRow.locator('td').allTextContents();
  assert.equal(cells[1], 'dropped', `request ${id} dropped in the first run: ${cells}`);
  assert.match(cells[2], new RegExp(`dropped at ${record.dropped_at.toFixed(1)} s`));
  assert.equal(cells[3], String(record.replica ?? 'none'), 'the replica it was dropped on');
  assert.ok(cells[4].length > 5, `a cause in words: ${cells[4]}`);
  assert.equal(cells[5], 'completed');

  // From the keyboard: the filter (a labelled select) and a matrix cell (a button).
  const filter = page.getByLabel('List the requests', { exact: true });
  await filter.focus();
  await filter.selectOption('dropped-both');
  assert.equal(await page.getAttribute(list, 'data-count'), String(expect('dropped', 'dropped')));
  const cellButton = page.locator(`${matrix} td[data-first="completed"][data-second="dropped"] button`);
  if (await cellButton.count()) {
    await cellButton.focus();
    await page.keyboard.press('Enter');
    assert.equal(await page.getAttribute(list, 'data-count'), String(expect('completed', 'dropped')));
    assert.equal(await filter.inputValue(), 'dropped-second-only');
  }
  // Paging, when there are more rows than a page.
  await filter.selectOption('dropped-any');
  const anyCount = Number(await page.getAttribute(list, 'data-count'));
  if (anyCount > 50) {
    const next = page.locator(`${list} button`, { hasText: 'Next' });
    await next.focus();
    await page.keyboard.press('Enter');
    assert.match(await page.textContent(`${list} .compare-count`), /rows 51–/);
  }

  // The timeline: the burst window shaded where the variant says, and a text alternative.
  const timeline = page.locator('#ex1-compare-timeline');
  assert.equal(await timeline.getAttribute('role'), 'img');
  const label = await timeline.getAttribute('aria-label');
  assert.match(label, new RegExp(`t = ${variant.params.spike_start_s} to ${variant.params.spike_end_s} s`));
  assert.equal(await timeline.locator('[data-part="burst"]').count(), 1);
  const summaries = await page.$$eval('#ex1 .drop-summary', (els) => els.map((e) => [e.dataset.run, Number(e.dataset.dropped)]));
  assert.deepEqual(summaries, [[variant.compare.first, first.filter((r) => r.dropped_at !== null).length],
                               [variant.compare.second, second.filter((r) => r.dropped_at !== null).length]]);

  // Every control of the tool has an accessible name.
  const unnamed = await page.$$eval('#ex1-compare button, #ex1-compare select', (els) => els
    .filter((e) => !(e.getAttribute('aria-label') || e.textContent.trim() || (e.id && document.querySelector(`label[for="${e.id}"]`))))
    .map((e) => e.outerHTML.slice(0, 80)));
  assert.deepEqual(unnamed, [], 'every button and select is named');

  assert.deepEqual(problems, [], 'no console errors, page errors or foreign requests');
});
