// Browser tests of crash recovery on the served page: with ?debug=1 the module is crashed on purpose
// (a wasm trap, a call-stack overflow, an Emscripten abort); the page says so in plain words, keeps
// every field as the learner left it, and the next grade and run work on the restarted module.
// Without ?debug=1 the test hook is refused, and the worker protocol is checked on its own.
//
//   node --test tests/browser-recovery.test.mjs
// env: see tests/browser-helpers.mjs
import assert from 'node:assert/strict';
import test from 'node:test';

import { SEED, WAIT, openSite, openView, waitForPanel, workerFile } from './browser-helpers.mjs';

// Each kind of crash the test hook makes, and what the notice's technical detail says about it.
const CRASHES = [
  ['unreachable', /RuntimeError: unreachable/],
  ['stack_overflow', /RangeError: Maximum call stack size exceeded/],
  ['abort', /RuntimeError: Aborted\(/],
];

/** Every form field on the page, by id (or name), with what it holds now. */
function fieldValues(page) {
  return page.evaluate(() => Object.fromEntries([...document.querySelectorAll('input, select, textarea')].map((e, i) => [
    `${e.id || e.name || `#${i}`}${e.type === 'radio' ? `=${e.value}` : ''}`,
    e.type === 'checkbox' || e.type === 'radio' ? e.checked : e.value,
  ])));
}

function savedProgress(page) {
  return page.evaluate(() => Object.fromEntries(Object.keys(localStorage).sort().map((k) => [k, localStorage.getItem(k)])));
}

/** Waits until the playground shows a run newer than `rev` and is idle. */
async function playgroundRunAfter(page, rev) {
  await page.waitForFunction((r) => Number(document.querySelector('#playground .summary')?.dataset.rev) > r
    && document.querySelector('#playground').dataset.busy === 'false', rev, WAIT);
  return Number(await page.getAttribute('#playground', 'data-rev'));
}

test('a crashed module is restarted: the page says so, keeps the inputs, and grades and runs again', { timeout: 240_000 }, async (t) => {
  const { page, problems, url } = await openSite(t);
  // Every view the learner works in is opened once: they stay mounted (hidden) when another is shown.
  await page.goto(url(`?debug=1#/exercise/2?variant=${SEED}`), WAIT);
  await waitForPanel(page, 'ex2');
  await openView(page, 'playground', 'playground');
  await openView(page, 'exercise/1', 'ex1');
  assert.equal(await page.evaluate(() => typeof window.__labDebug?.trap), 'function', 'the debug hook exists with ?debug=1');

  // The learner's work: an answer typed in exercise 1, a note typed into exercise 2's YAML, a
  // playground knob changed (and run).
  const answerA = (await page.getAttribute('#ex1 [data-question="a"]', 'data-type')) === 'choice'
    ? null : '#ex1-q-a';
  if (answerA) await page.fill(answerA, '4242');
  else await page.locator('#ex1 [data-question="a"] input[type="radio"]').last().check();
  await page.click('nav a[data-view="exercise/2"]');
  await page.focus('#ex2-q-nodepool');
  await page.keyboard.press('Control+End');
  await page.keyboard.type('\n# my own note\n');
  await page.click('nav a[data-view="playground"]');
  let rev = Number(await page.getAttribute('#playground', 'data-rev'));
  await page.fill('#playground [data-path="/workload/rate_scale"] input', '3');
  rev = await playgroundRunAfter(page, rev);
  await page.waitForSelector('#ex2 .np-editor[data-state="valid"]', { ...WAIT, state: 'attached' });
  await page.evaluate(() => { document.querySelector('#ex1 [data-question="a"] input').dataset.marker = 'typed'; });
  const fieldsBefore = await fieldValues(page);
  const savedBefore = await savedProgress(page);
  assert.equal(fieldsBefore['pg-workload-rate_scale'], '3');

  const status = page.locator('#status');
  for (const [i, [kind, cause]] of CRASHES.entries()) {
    const answer = await page.evaluate((k) => window.__labDebug.trap(k).then(
      () => ({ crashed: false }), (e) => ({ name: e.name, crashed: e.crashed, message: e.message })), kind);
    assert.equal(answer.crashed, true, `${kind}: the call is answered as a crash: ${JSON.stringify(answer)}`);
    assert.match(answer.message, /crashed while running this request and was restarted/, kind);

    // The notice, in plain words, in the page's status line (role="status").
    await page.waitForSelector('#status.notice', WAIT);
    assert.equal(await status.getAttribute('role'), 'status');
    assert.ok(await status.isVisible(), `${kind}: the notice is visible`);
    const notice = await status.textContent();
    assert.match(notice, /^The simulation crashed while running this request and was restarted; your inputs are untouched\./, notice);
    assert.match(notice, cause, `${kind}: the notice names the cause: ${notice}`);
    await page.waitForFunction((n) => window.__labDebug.client.restarts === n, i + 1, WAIT);
    t.diagnostic(`${kind}: ${notice}`);

    // Nothing was redrawn from defaults: the same fields hold the same text, the same nodes are there.
    assert.deepEqual(await fieldValues(page), fieldsBefore, `${kind}: every field is as the learner left it`);
    assert.deepEqual(await savedProgress(page), savedBefore, `${kind}: saved progress untouched`);
    assert.equal(await page.getAttribute('#ex1 [data-question="a"] input', 'data-marker'), 'typed', `${kind}: not re-rendered`);
    await status.locator('button', { hasText: 'Dismiss' }).click();
    assert.equal(await status.isVisible(), false, 'the notice can be dismissed');
  }

  // A grade asked for right behind a crash queues while the module restarts, then runs on the fresh one.
  await page.click('nav a[data-view="exercise/1"]');
  await page.evaluate(() => { window.__labDebug.trap('unreachable').catch(() => {}); });
  await page.click('#ex1-check');
  await page.waitForSelector('#ex1-fb-a[data-correct="true"], #ex1-fb-a[data-correct="false"]', WAIT);
  assert.equal(await page.getAttribute('#ex1-fb-a', 'data-correct'), 'false', 'the typed answer was graded (wrong)');
  assert.equal(await page.evaluate(() => window.__labDebug.client.restarts), CRASHES.length + 1);
  assert.match(await status.textContent(), /crashed/);

  // The playground runs again: a changed knob re-runs and redraws.
  await page.click('nav a[data-view="playground"]');
  await page.fill('#playground [data-path="/workload/rate_scale"] input', '4');
  rev = await playgroundRunAfter(page, rev);
  const shown = await page.evaluate(() => JSON.parse(document.querySelector('#playground .summary').dataset.scenario));
  assert.equal(shown.workload.rate_scale, 4, 'the newest setting was run');
  assert.ok((await page.textContent('#playground .summary')).length > 0, 'summary re-rendered');
  if (answerA) assert.equal(await page.inputValue(answerA), '4242', 'the typed answer is still there');

  assert.deepEqual(problems, [], 'no console errors, page errors or foreign requests');
});

test('without ?debug=1 the test hook is refused; the worker protocol around a crash', { timeout: 120_000 }, async (t) => {
  const { page, problems, url } = await openSite(t);
  await page.goto(url(`#/exercise/1?variant=${SEED}`), WAIT);
  await waitForPanel(page, 'ex1');
  assert.equal(await page.evaluate(() => typeof window.__labDebug), 'undefined', 'no debug hook for learners');

  // A bare worker, as the page starts it, with and without debug mode: [trap, run, version] posted
  // at once; the run and the version queue behind the crash and run on the fresh instance.
  const talk = (workerUrl) => page.evaluate((src) => new Promise((resolve, reject) => {
    const worker = new Worker(src, { type: 'module' });
    const log = [];
    const timer = setTimeout(() => { worker.terminate(); reject(new Error(`timed out: ${JSON.stringify(log)}`)); }, 30000);
    worker.onmessage = ({ data }) => {
      log.push({ id: data.id, type: data.type, crashed: data.error?.crashed, message: data.error?.message });
      if (data.type === 'ready') {
        worker.postMessage({ id: 1, op: 'debug_trap', args: ['unreachable'] });
        worker.postMessage({ id: 2, op: 'run', args: [JSON.stringify({ duration_s: 300 })] });
        worker.postMessage({ id: 3, op: 'version', args: [] });
      }
      if (log.some((m) => m.id === 3 && m.type !== 'working')) { clearTimeout(timer); worker.terminate(); resolve(log); }
    };
  }), workerUrl);
  const order = (log) => log.map((m) => (m.id ? `${m.id}:${m.type}` : m.type)).join(' ');

  const normal = await talk(workerFile());
  t.diagnostic(`without debug: ${order(normal)}`);
  const refused = normal.find((m) => m.id === 1);
  assert.equal(refused.type, 'error');
  assert.equal(refused.message, 'unknown op "debug_trap"');
  assert.ok(!refused.crashed, 'refused, not crashed');
  assert.ok(!normal.some((m) => m.type === 'restarted'), 'nothing was restarted');
  assert.equal(order(normal), 'ready 1:error 2:working 2:result 3:working 3:result');

  const debug = await talk(`${workerFile()}?debug=1`);
  t.diagnostic(`with debug: ${order(debug)}`);
  assert.equal(order(debug), 'ready 1:working 1:error restarted 2:working 2:result 3:working 3:result');
  assert.equal(debug.find((m) => m.id === 1 && m.type === 'error').crashed, true);

  assert.deepEqual(problems, [], 'no console errors, page errors or foreign requests');
});
