// Browser test of exercise 3 on the served page: the variant's cluster is simulated and shown in the
// per-layer diagnosis view (Karpenter, kube-scheduler, KAI, free GPUs per node), the evidence choices
// are the run's own lines (as the CLI's variant gives them), a wrong diagnosis is refused with
// feedback and a fix that does not work is simulated and shown Pending, the right one is accepted and
// its fix makes the pod schedule, and the explanation opens under the exercise's policy.
//
//   node --test tests/browser-exercise3.test.mjs
// env: see tests/browser-helpers.mjs
import assert from 'node:assert/strict';
import test from 'node:test';

import { WAIT, cli, openSite, waitForPanel } from './browser-helpers.mjs';

const GRADE_WAIT = { timeout: 60_000 };

/** The first variant whose cause is in `layer`, with its answers and variant (from the CLI). */
async function variantOfLayer(layer) {
  for (let seed = 0; seed < 60; seed++) {
    const { answers } = await cli('solve', 3, '--seed', seed);
    if (answers.layer === layer) return { seed, answers, variant: await cli('exercise', 3, '--seed', seed) };
  }
  throw new Error(`no variant in layer ${layer}`);
}

async function answer(page, { layer, cause, evidence = [], fix }) {
  if (layer) await page.check(`#ex3-q-layer-${layer}`);
  if (cause) await page.check(`#ex3-q-cause-${cause}`);
  for (const box of await page.locator('#ex3 input[name="ex3-q-evidence"]').all()) {
    const id = await box.getAttribute('value');
    if (evidence.includes(id)) await box.check(); else await box.uncheck();
  }
  if (fix) await page.check(`#ex3-q-fix-${fix}`);
}

async function grade(page, attempts) {
  await page.click('#ex3-grade');
  await page.waitForSelector(`#ex3-history[data-count="${attempts}"]`, GRADE_WAIT);
  await page.waitForSelector('#ex3 [data-part="fix-run"][data-ready="true"]', GRADE_WAIT);
}

test('exercise 3: the diagnosis view, a wrong diagnosis refused, the right one and its fix simulated, the gated explanation', { timeout: 300_000 }, async (t) => {
  const { seed, answers, variant } = await variantOfLayer('karpenter');
  const { page, problems, url } = await openSite(t);
  await page.goto(url(`#/exercise/3?variant=${seed}`), WAIT);
  await waitForPanel(page, 'ex3');
  await page.waitForSelector('#ex3 [data-part="run"][data-ready="true"]', GRADE_WAIT);

  // The diagnosis view: each layer in its operators' words, and the free GPUs per node over time.
  for (const layer of ['karpenter', 'kube-scheduler', 'kai-scheduler', 'gpus']) {
    assert.equal(await page.locator(`#ex3 [data-part="run"] .diag-layer[data-layer="${layer}"]`).count(), 1, `a ${layer} section`);
  }
  const run = page.locator('#ex3 [data-part="run"]');
  assert.match(await run.locator('[data-field="nodeclaims_launched"] td').textContent(), /^\d+$/);
  assert.match(await run.locator('[data-field^="nodepool:"] td').first().textContent(), /\d/);
  assert.ok(await run.locator('.diag-layer[data-layer="karpenter"] .diag-events li').count() > 0, 'Karpenter events are listed');
  assert.ok(await run.locator('.diag-layer[data-layer="kube-scheduler"] .diag-events li[data-reason="FailedScheduling"]').count() > 0);
  assert.equal(await run.locator('figure[data-chart="free-gpus"]').count(), 1, 'the free-GPUs chart');
  // The moment slider moves the tables to an earlier scrape.
  await run.locator('input[type="range"]').fill('0');
  assert.match(await run.locator('.diag-moment').textContent(), /^t = 0 s$/);

  // The evidence choices are the run's own lines, as the core's variant lists them.
  const evidence = variant.questions.find((q) => q.id === 'evidence').choices;
  for (const c of evidence) {
    const text = await page.locator(`label[for="ex3-q-evidence-${c.id}"] .evidence-text`).textContent();
    assert.equal(text.trim(), c.text.trim(), `${c.id}: the page shows the core's line`);
  }

  // Locked before an attempt.
  assert.equal(await page.getAttribute('#ex3', 'data-explain'), 'locked');

  // A wrong diagnosis: another layer, another cause, a signal that every Pending pod shows, a fix of
  // another layer. The fix is simulated and the pod stays Pending.
  const wrongCause = variant.questions.find((q) => q.id === 'cause').choices.find((c) => c.layer === 'kube-scheduler').id;
  await answer(page, { layer: 'kube-scheduler', cause: wrongCause, evidence: ['pending_pods'], fix: 'add_toleration' });
  await grade(page, 1);
  assert.equal(await page.getAttribute('#ex3 [data-question="layer"]', 'data-correct'), 'false');
  assert.equal(await page.getAttribute('#ex3 [data-question="cause"]', 'data-correct'), 'false');
  assert.match(await page.textContent('#ex3-fb-evidence'), /does not single out the cause/);
  assert.equal(await page.getAttribute('#ex3 [data-part="fix-run"]', 'data-scheduled'), 'false');
  assert.match(await page.textContent('#ex3-fb-fix'), /still stays Pending/);
  assert.equal(await page.getAttribute('#ex3', 'data-explain'), 'locked', 'one wrong attempt: still locked (after_attempts)');

  // The right answer, as the CLI solves it: every part right, and the fix schedules the pod.
  await answer(page, answers);
  await grade(page, 2);
  for (const id of ['layer', 'cause', 'evidence', 'fix']) {
    assert.equal(await page.getAttribute(`#ex3 [data-question="${id}"]`, 'data-correct'), 'true', `${id} is right`);
  }
  assert.equal(await page.getAttribute('#ex3', 'data-score'), '1');
  assert.equal(await page.getAttribute('#ex3 [data-part="fix-run"]', 'data-scheduled'), 'true');
  assert.match(await page.textContent('#ex3 [data-part="fix-run"] [data-part="fix-verdict"]'), /every pod of the Deployment schedules/);
  assert.equal(await page.locator('#ex3 [data-part="fix-run"] .diag-layer').count(), 4, 'the fixed cluster in the diagnosis view');

  // Correct: the policy opens the explanation; looking shows the answers.
  await page.waitForSelector('#ex3[data-explain="unlocked"]', GRADE_WAIT);
  await page.click('#ex3-explain');
  await page.waitForSelector('#ex3 .explanation-box[data-shown="true"]', WAIT);
  assert.match(await page.textContent('#ex3 .explanation-box'), new RegExp(answers.cause));

  // A KAI variant: the queue table shows the queue's allocated, deserved and fair-share GPUs.
  const kai = await variantOfLayer('kai-scheduler');
  await page.goto(url(`#/exercise/3?variant=${kai.seed}`), WAIT);
  await waitForPanel(page, 'ex3');
  await page.waitForSelector('#ex3 [data-part="run"][data-ready="true"]', GRADE_WAIT);
  const row = page.locator('#ex3 [data-part="run"] .diag-layer[data-layer="kai-scheduler"] tr[data-queue="inference"] td');
  assert.equal(await row.count(), 6);
  assert.ok(await page.locator('#ex3 [data-part="run"] .diag-layer[data-layer="kai-scheduler"] .diag-events li[data-reason="FailedScheduling"]').count() > 0,
            'the PodGroup condition is listed');

  // The topology variant: KAI's gang waits beside free GPUs in two zones; the view counts the deferrals
  // and the node table shows each node's zone.
  let topo = null;
  for (let seed = 0; seed < 60 && !topo; seed++) {
    if ((await cli('solve', 3, '--seed', seed)).answers.cause === 'topology_required') topo = seed;
  }
  assert.notEqual(topo, null, 'a variant of the topology cause');
  await page.goto(url(`#/exercise/3?variant=${topo}`), WAIT);
  await waitForPanel(page, 'ex3');
  await page.waitForSelector('#ex3 [data-part="run"][data-ready="true"]', GRADE_WAIT);
  const deferrals = await page.textContent('#ex3 [data-part="run"] [data-field="topology_deferrals"]');
  assert.ok(Number(deferrals.match(/(\d+)$/)[1]) > 0, deferrals);
  const zones = await page.locator('#ex3 [data-part="run"] .diag-layer[data-layer="gpus"] tbody tr td:first-of-type').allTextContents();
  assert.ok(new Set(zones.map((z) => z.split(' ').pop())).size >= 3, zones.join(' | '));

  // The same view in the playground, for a cluster run.
  await page.goto(url('#/playground?/cluster/preset=karpenter_when_empty'), WAIT);
  await waitForPanel(page, 'playground');
  await page.waitForSelector('#playground details.pg-diagnosis:not([hidden])', GRADE_WAIT);
  await page.click('#playground details.pg-diagnosis > summary');
  await page.waitForSelector('#playground details.pg-diagnosis .diag-layer[data-layer="gpus"] figure[data-chart="free-gpus"]', WAIT);
  assert.equal(await page.locator('#playground details.pg-diagnosis .diag-layer').count(), 4);

  assert.deepEqual(problems, []);
});
