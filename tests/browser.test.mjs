// Browser test of the assembled site: Debian's Chromium through playwright-core, the site served
// under the sub-path /lab/, exercise 1 graded wrong then right (right answers from the teacher CLI),
// progress restored after a reload, a playground knob changed from the keyboard.
//
//   node --test tests/browser.test.mjs
// env: see tests/browser-helpers.mjs
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import test from 'node:test';

import { ARTIFACTS, SEED, WAIT, cli, openSite, openView, waitForPanel, workerFile } from './browser-helpers.mjs';

async function solve(seed) {
  const answers = (await cli('solve', '1', '--seed', seed)).answers;
  assert.ok(answers && typeof answers === 'object', 'no "answers" from gpuscale solve 1');
  return answers;
}

test('exercise 1 and the playground work on the served page', { timeout: 180_000 }, async (t) => {
  const answers = await solve(SEED);
  assert.ok('a' in answers, `the CLI gave no answer for question a: ${JSON.stringify(answers)}`);
  const { page, problems, url } = await openSite(t);

  await page.goto(url(`#/exercise/1?variant=${SEED}`), WAIT);
  const ready = '#ex1[data-ready="true"]';
  await waitForPanel(page, 'ex1');
  assert.equal(await page.getAttribute('#ex1', 'data-seed'), String(SEED));

  // The variant's questions come from the core; answer each the way the CLI's teacher key says.
  const question = (id) => page.locator(`#ex1 [data-question="${id}"]`);
  const answerWith = async (id, value) => {
    const type = await question(id).getAttribute('data-type');
    if (type === 'choice') await page.check(`#ex1-q-${id}-${value}`);
    else await page.fill(`#ex1-q-${id}`, String(value));
  };
  const wrongFor = async (id, right) => {
    if ((await question(id).getAttribute('data-type')) !== 'choice') return Number(right) + 7;
    const choices = await question(id).locator('input[type="radio"]').evaluateAll((els) => els.map((e) => e.value));
    return choices.find((c) => c !== right);
  };

  // (a) wrong: red feedback with a hint.
  await answerWith('a', await wrongFor('a', answers.a));
  await page.click('#ex1-check');
  const feedbackA = '#ex1-fb-a';
  await page.waitForSelector(`${feedbackA}[data-correct="false"]`, WAIT);
  assert.match(await page.textContent(feedbackA), /not right/i);
  const hint = page.locator(`${feedbackA} .hint`);
  assert.ok(await hint.isVisible(), 'a wrong answer shows a hint');
  assert.ok((await hint.textContent()).replace(/^Hint:\s*/, '').trim().length > 0, 'the hint is not empty');

  // Then every question right.
  for (const [id, value] of Object.entries(answers)) await answerWith(id, value);
  await page.click('#ex1-check');
  await page.waitForSelector(`${feedbackA}[data-correct="true"]`, WAIT);
  assert.match(await page.textContent(feedbackA), /correct/i);
  for (const id of Object.keys(answers)) {
    assert.equal(await page.getAttribute(`#ex1-fb-${id}`, 'data-correct'), 'true', `question ${id} graded correct`);
  }

  // The decision logs list every sync, and rows are addressable.
  assert.ok(await page.locator('#ex1 tr[id^="decision-"]').count() > 0, 'decision log rows exist');

  // Reload: answers and grade come back from localStorage.
  await page.reload(WAIT);
  await page.waitForSelector(ready, WAIT);
  for (const [id, value] of Object.entries(answers)) {
    if ((await question(id).getAttribute('data-type')) === 'choice') {
      assert.ok(await page.isChecked(`#ex1-q-${id}-${value}`), `answer ${id} restored`);
    } else {
      assert.equal(await page.inputValue(`#ex1-q-${id}`), String(value), `answer ${id} restored`);
    }
    assert.equal(await page.getAttribute(`#ex1-fb-${id}`, 'data-correct'), 'true', `grade of ${id} restored`);
  }

  // Playground, opened from the navigation: change a numeric knob from the keyboard; the summary
  // re-renders and the route follows.
  await openView(page, 'playground', 'playground');
  const rev = Number(await page.getAttribute('#playground', 'data-rev'));
  const knob = page.locator('#playground input[type="number"]').first();
  const before = await knob.inputValue();
  const summaryBefore = await page.textContent('#playground .summary');
  await knob.focus();
  await page.keyboard.press('ArrowUp');
  assert.notEqual(await knob.inputValue(), before, 'ArrowUp changed the knob');
  await page.waitForFunction((r) => Number(document.querySelector('#playground .summary')?.dataset.rev) > r, rev, WAIT);
  await page.waitForSelector('#playground[data-busy="false"]', WAIT);
  assert.ok((await page.textContent('#playground .summary')).length > 0, 'summary re-rendered');
  const path0 = await knob.evaluate((e) => e.closest('[data-path]').dataset.path);
  assert.ok(new URL(page.url()).hash.includes(`${path0}=`), `the hash records ${path0}`);
  assert.ok(new URL(page.url()).hash.startsWith('#/playground?'), `the route stays the playground's: ${new URL(page.url()).hash}`);

  // Several quick changes: only the latest is shown once the worker is idle.
  for (let i = 0; i < 3; i++) await page.keyboard.press('ArrowUp');
  const finalValue = Number(await knob.inputValue());
  await page.waitForFunction(([p, v]) => {
    const el = document.querySelector('#playground .summary');
    if (!el?.dataset.scenario || document.querySelector('#playground').dataset.busy !== 'false') return false;
    const value = p.slice(1).split('/').reduce((o, k) => o?.[k], JSON.parse(el.dataset.scenario));
    return value === v;
  }, [path0, finalValue], WAIT);
  t.diagnostic(`knob ${path0}: ${before} → ${await knob.inputValue()}; summary changed: ${summaryBefore !== await page.textContent('#playground .summary')}`);

  // Layer 1 in the playground: pick the consolidation trap's NodePool and a heavier burst; the run
  // now has nodes (a chart appears, the cost tiles are the nodes'), and going back hides the chart.
  const summaryScenario = () => page.evaluate(() => JSON.parse(document.querySelector('#playground .summary')?.dataset.scenario ?? '{}'));
  const settle = (check) => page.waitForFunction((src) => {
    const el = document.querySelector('#playground .summary');
    if (!el?.dataset.scenario || document.querySelector('#playground').dataset.busy !== 'false') return false;
    return new Function('s', src)(JSON.parse(el.dataset.scenario));
  }, check, WAIT);
  await page.selectOption('#playground [data-path="/cluster/preset"] select', 'karpenter_underutilized');
  await page.fill('#playground [data-path="/workload/rate_scale"] input', '40');
  await page.press('#playground [data-path="/workload/rate_scale"] input', 'Enter');
  await settle("return s.cluster?.preset === 'karpenter_underutilized' && s.workload?.rate_scale === 40");
  await page.waitForSelector('#playground figure[data-chart="nodes"]:not([hidden])', WAIT);
  const tiles = await page.textContent('#playground .summary');
  assert.match(tiles, /Nodes launched/, `cluster tiles shown: ${tiles.slice(0, 300)}`);
  assert.ok(new URL(page.url()).hash.includes('karpenter_underutilized'), 'the hash records the provisioner');
  t.diagnostic(`playground with ${JSON.stringify((await summaryScenario()).cluster)}: ${tiles.replace(/\s+/g, ' ').slice(0, 200)}`);
  // The decision log filters by controller: Karpenter's disruption decisions alone, each with its arithmetic.
  const log = page.locator('#playground .decision-log');
  await log.locator('select.log-controller').selectOption('karpenter.disruption');
  const visible = await log.locator('tbody tr:not([hidden]):not(.why-row)').evaluateAll((rows) => rows.map((r) => r.children[1].textContent));
  assert.ok(visible.length > 0 && visible.every((c) => c === 'karpenter.disruption'), `only Karpenter rows: ${visible.slice(0, 5)}`);
  assert.match(await log.locator('.log-count').textContent(), /shown/);
  await log.locator('tbody tr.decision:not([hidden]) .why').first().click();
  assert.match(await log.locator('pre.explanation').first().textContent(), /candidates|Emptiness|Consolidation|budget/);
  // A PodDisruptionBudget that allows no voluntary disruption: no replica is evicted.
  await page.selectOption('#playground [data-path="/cluster/inference_pdb/maxUnavailable"] select', '0%');
  await settle("return s.cluster?.inference_pdb?.maxUnavailable === '0%'");
  assert.equal((await page.textContent('#playground .summary [data-field="num_replica_evictions"] dd')).trim(), '0');
  await page.selectOption('#playground [data-path="/cluster/inference_pdb/maxUnavailable"] select', '100%');
  await page.selectOption('#playground [data-path="/cluster/preset"] select', 'none');
  await settle("return s.cluster?.preset === 'none'");
  assert.equal(await page.locator('#playground figure[data-chart="nodes"]').isHidden(), true, 'no nodes chart without a cluster');

  // The worker protocol on its own: per channel only the newest queued request runs; errors carry a path.
  const seen = await page.evaluate((src) => new Promise((resolve, reject) => {
    const worker = new Worker(src, { type: 'module' });
    const log = [];
    const timer = setTimeout(() => { worker.terminate(); reject(new Error(`worker protocol timed out: ${JSON.stringify(log)}`)); }, 20000);
    worker.onmessage = ({ data }) => {
      log.push(data.type === 'ready' ? { type: 'ready' } : { id: data.id, type: data.type, path: data.error?.path });
      if (data.type === 'ready') {
        const scenario = JSON.stringify({ duration_s: 600 });
        for (let id = 1; id <= 4; id++) worker.postMessage({ id, op: 'run', args: [scenario], channel: 'same' });
        worker.postMessage({ id: 5, op: 'run', args: ['{"no_such_field": 1}'], channel: 'other' });
      }
      const done = (id) => log.some((m) => m.id === id && m.type !== 'working');
      if (done(4) && done(5)) { clearTimeout(timer); worker.terminate(); resolve(log); }
    };
  }), workerFile());
  t.diagnostic(`worker messages: ${seen.map((m) => (m.id ? `${m.id}:${m.type}` : m.type)).join(' ')}`);
  const final = (id) => seen.find((m) => m.id === id && m.type !== 'working')?.type;
  assert.equal(final(4), 'result', `the newest request ran: ${JSON.stringify(seen)}`);
  for (const id of [1, 2, 3]) assert.ok(['dropped', 'result'].includes(final(id)), `request ${id} answered: ${JSON.stringify(seen)}`);
  assert.ok([1, 2, 3].some((id) => final(id) === 'dropped'), `stale queued requests were dropped: ${JSON.stringify(seen)}`);
  const error = seen.find((m) => m.id === 5 && m.type === 'error');
  assert.ok(error && error.path.includes('no_such_field'), `a core error names its path: ${JSON.stringify(seen)}`);

  await mkdir(ARTIFACTS, { recursive: true });
  await page.evaluate(() => window.scrollTo(0, 0));  // sticky parts then sit where a reader sees them
  await page.screenshot({ path: path.join(ARTIFACTS, 'ex1.png'), fullPage: true });
  assert.deepEqual(problems, [], 'no console errors, page errors or foreign requests');
});
