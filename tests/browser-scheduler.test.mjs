// Browser tests of layer 2's YAML on the served page: the Scheduler view (#/scheduler) runs the
// 7-of-8 preset under KAI Scheduler (the gang Pending, KAI's message) and under kube-scheduler (7 pods
// bound, the partly-placed warning), as the CLI does; a YAML syntax error and a field error are shown
// on their lines with the JSON path; the edited text survives a reload and "Reset to the preset"
// brings the file back. The playground runs a scenario written as YAML (the LeaderWorkerSet 7-of-8
// scenario) into its summary, charts, diagnosis view and log, with the core's error on its line
// first. The new view and the playground's YAML section pass axe-core and fit a 390 px (and 360 px)
// phone without sideways scrolling.
//
//   node --test tests/browser-scheduler.test.mjs
// env: see tests/browser-helpers.mjs
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import test from 'node:test';

import { CLI, WAIT, axeViolations, openSite, openView, root, waitForPanel } from './browser-helpers.mjs';

const RUN_WAIT = { timeout: 60_000 };
const editor = '#scheduler .sched-editor';
const textarea = '#sched-text';

const example = (file) => readFileSync(path.join(root, 'docs', 'examples', file), 'utf8');

/** The CLI's cycle over a snapshot text (YAML or JSON), as a learner would run the same text in a terminal. */
function cliSchedule(text) {
  const r = spawnSync(CLI, ['schedule', '-'], { input: text, maxBuffer: 1 << 26 });
  assert.equal(r.status, 0, `gpuscale schedule: ${r.stderr}`);
  return JSON.parse(r.stdout.toString());
}

/** Waits for a finished cycle of `scheduler` newer than run number `after`. */
async function cycle(page, scheduler, after) {
  await page.waitForFunction(([s, n]) => {
    const view = document.getElementById('scheduler');
    const results = view.querySelector('.sched-results');
    return view.querySelector('.sched-editor').dataset.state === 'done' && results.dataset.scheduler === s && Number(view.dataset.run) > n;
  }, [scheduler, after], RUN_WAIT);
  return Number(await page.getAttribute('#scheduler', 'data-run'));
}

const runNumber = async (page) => Number(await page.getAttribute('#scheduler', 'data-run') ?? 0);

/** Every job's status and every pod's status and node as the page shows them. */
function shown(page) {
  return page.evaluate(() => ({
    jobs: Object.fromEntries([...document.querySelectorAll('#scheduler [data-part="jobs"] tbody tr')].map((tr) => [tr.dataset.job, tr.dataset.status])),
    pods: Object.fromEntries([...document.querySelectorAll('#scheduler [data-part="pods"] tbody tr')].map((tr) => [tr.dataset.pod,
      `${tr.dataset.status} ${tr.children[3].textContent}`])),
  }));
}

/** The same, from a result. */
function expected(result) {
  return {
    jobs: Object.fromEntries(result.jobs.map((j) => [j.name, j.status])),
    pods: Object.fromEntries(result.jobs.flatMap((j) => j.tasks.map((t) => [t.name, `${t.status} ${t.node ?? '—'}`]))),
  };
}

/** Selects `[from, to)` of the editor's text and types over it, as a learner who selected it would. */
async function typeOver(page, from, to, text) {
  await page.focus(textarea);
  await page.evaluate(([sel, a, b]) => document.querySelector(sel).setSelectionRange(a, b), [textarea, from, to]);
  await page.keyboard.type(text);
}

/** 1-based line of an offset in a text. */
const lineOf = (text, offset) => text.slice(0, offset).split('\n').length;

test('Scheduler view: the 7-of-8 trap under KAI Scheduler and kube-scheduler, errors on their lines, the text kept over a reload', { timeout: 240_000 }, async (t) => {
  const { page, problems, url } = await openSite(t);
  await page.goto(url('#/'), WAIT);
  await page.waitForSelector('#home[data-ready="true"]', WAIT);
  // The home view's layer map links the view.
  assert.equal(await page.locator('#home .layer[data-layer="pods"] a[href^="#/scheduler"]').count(), 1, 'layer 2 links the Scheduler view');
  await openView(page, 'scheduler', 'scheduler');
  let run = await cycle(page, 'kai-scheduler', 0);

  // Another preset, then the 7-of-8 trap: each loads its file from the site, as written.
  await page.selectOption('#sched-preset', 'two-tenants');
  await page.waitForFunction(() => document.querySelector('#scheduler [data-part="victims"] tr[data-action="reclaim"]'), null, RUN_WAIT);
  assert.equal(await page.inputValue(textarea), example('schedule-two-tenants.yaml'));
  run = await runNumber(page);
  await page.selectOption('#sched-preset', '7-of-8');
  run = await cycle(page, 'kai-scheduler', run);
  const file = example('schedule-7-of-8.yaml');
  assert.equal(await page.inputValue(textarea), file, 'the preset is the file docs/examples/schedule-7-of-8.yaml');
  assert.equal(new URL(page.url()).hash, '#/scheduler?preset=7-of-8&scheduler=kai-scheduler');
  assert.equal(await page.isChecked('#sched-scheduler-kai-scheduler'), true);

  // KAI Scheduler: the gang stays Pending, whole, with KAI's own message; the node keeps its 7 GPUs.
  const gang = '#scheduler [data-part="jobs"] tr[data-job="llama-405b"]';
  assert.equal(await page.getAttribute(gang, 'data-status'), 'pending');
  assert.match(await page.textContent(`${gang} .job-message`), /^Resources were found for 7 pods while 8 are required for gang scheduling/);
  assert.deepEqual(await shown(page), expected(cliSchedule(file)), 'the page shows what `gpuscale schedule` prints');
  assert.equal(await page.getAttribute('#scheduler [data-part="nodes"] tr[data-node="p5-a"]', 'data-free-before'), '7');
  assert.equal(await page.getAttribute('#scheduler [data-part="nodes"] tr[data-node="p5-a"]', 'data-free-after'), '7');
  assert.equal(await page.textContent('#scheduler [data-part="queues"] tr[data-queue="inference"][data-resource="gpu"] td[data-field="deserved"]'), '9');
  assert.equal(await page.textContent('#scheduler [data-part="queues"] tr[data-queue="root"][data-resource="cpu"] td[data-field="deserved"]'), 'unlimited', '-1 is "unlimited"');
  assert.ok(await page.locator('#scheduler ol.sched-log li').count() >= 2, 'the decision log is listed');
  assert.match(await page.textContent('#scheduler ol.sched-log'), /allocate: llama-405b not allocated/);
  // Side by side: the same text under kube-scheduler, partly placed.
  assert.equal(await page.getAttribute('#scheduler [data-part="compare"] tr[data-job="llama-405b"] td[data-scheduler="default-scheduler"]', 'data-status'), 'partly placed');

  // kube-scheduler: 7 pods bound to p5-a, the 8th Pending, and the partly-placed warning.
  await page.check('#sched-scheduler-default-scheduler');
  run = await cycle(page, 'default-scheduler', run);
  assert.equal(new URL(page.url()).hash, '#/scheduler?preset=7-of-8&scheduler=default-scheduler');
  const underKube = await page.inputValue(textarea);
  assert.equal(underKube, file.replace('scheduler: kai-scheduler', 'scheduler: default-scheduler'), 'only the scheduler line changed');
  assert.equal(await page.getAttribute(gang, 'data-status'), 'partly placed');
  const pods = (await shown(page)).pods;
  assert.equal(Object.values(pods).filter((p) => p === 'Binding p5-a').length, 7, `7 pods bound: ${JSON.stringify(pods)}`);
  assert.equal(pods['llama-405b-7'], 'Pending —');
  assert.match(await page.textContent('#scheduler [data-part="warnings"]'), /llama-405b: 7 of 8 pods placed; .*the 7-of-8 trap/);
  assert.deepEqual(await shown(page), expected(cliSchedule(underKube)), 'as the CLI runs the same text');
  assert.equal(await page.getAttribute('#scheduler [data-part="nodes"] tr[data-node="p5-a"]', 'data-free-after'), '0');
  assert.match(await page.textContent('#scheduler [data-part="queues"]'), /kube-scheduler has no queues/);

  // A YAML syntax error: the line and column of the unclosed brace, marked in the gutter.
  const broken = '\n- {name: extra, tasks: [{gpus: 1}]';
  await page.focus(textarea);
  await page.keyboard.press('Control+End');
  await page.keyboard.type(broken);
  await page.waitForSelector(`${editor}[data-state="yaml-error"]`, RUN_WAIT);
  const brokenLine = lineOf(underKube + broken, underKube.length + broken.length);
  const syntax = await page.textContent(`${editor} .np-error`);
  assert.match(syntax, new RegExp(`line ${brokenLine}, column \\d+`), syntax);
  assert.match(syntax, /is not closed: end it with "\}"/, 'the error says what to fix');
  assert.deepEqual(await page.$$eval(`${editor} .np-gutter .np-line.error`, (els) => els.map((e) => e.textContent)), [String(brokenLine)]);
  assert.equal(await page.getAttribute(textarea, 'aria-invalid'), 'true');
  for (let i = 0; i < broken.length; i++) await page.keyboard.press('Backspace');
  run = await cycle(page, 'default-scheduler', run);

  // A field error: a task asking for -1 GPUs. The core's JSON path, on the task's own line.
  const at = underKube.indexOf('{gpus: 1,') + '{gpus: '.length;
  await typeOver(page, at, at + 1, '-1');
  await page.waitForSelector(`${editor}[data-state="invalid"]`, RUN_WAIT);
  assert.equal(await page.textContent(`${editor} .np-error .np-path`), '/jobs/0/tasks/0/gpus');
  const fieldError = await page.textContent(`${editor} .np-error`);
  assert.match(fieldError, new RegExp(`line ${lineOf(underKube, at)}, column \\d+`), fieldError);
  assert.match(fieldError, /is -1; allowed: between 0 and 64/);
  assert.deepEqual(await page.$$eval(`${editor} .np-gutter .np-line.error`, (els) => els.map((e) => e.textContent)), [String(lineOf(underKube, at))]);
  assert.equal(await page.getAttribute('#scheduler .sched-results', 'data-stale'), 'true', 'the last good tables stay, marked stale');
  // The jump button puts the caret on that line.
  await page.click(`${editor} .np-error .np-jump`);
  const caret = await page.evaluate((sel) => document.querySelector(sel).selectionStart, textarea);
  assert.equal(lineOf(await page.inputValue(textarea), caret), lineOf(underKube, at));
  const edited = await page.inputValue(textarea);
  assert.equal(await page.getAttribute('#scheduler', 'data-edited'), 'true');

  // Reload: the preset, the scheduler and the edited text come back, and so does the error.
  await page.reload(WAIT);
  await waitForPanel(page, 'scheduler');
  await page.waitForSelector(`${editor}[data-state="invalid"]`, RUN_WAIT);
  assert.equal(await page.inputValue(textarea), edited, 'the edited text is kept as typed');
  assert.equal(await page.inputValue('#sched-preset'), '7-of-8');
  assert.equal(await page.isChecked('#sched-scheduler-default-scheduler'), true);
  assert.equal(await page.textContent(`${editor} .np-error .np-path`), '/jobs/0/tasks/0/gpus');

  // Another preset keeps its own text; back to this one, the edit is still there; then reset.
  await page.selectOption('#sched-preset', 'queue-limit');
  await page.waitForFunction(() => document.querySelector('#scheduler [data-part="jobs"] tr[data-job="a-eval"]'), null, RUN_WAIT);
  assert.equal(await page.inputValue(textarea), example('schedule-queue-limit.yaml'));
  assert.equal(await page.getAttribute('#scheduler [data-part="jobs"] tr[data-job="a-eval"]', 'data-status'), 'pending');
  assert.equal(await page.textContent('#scheduler [data-part="jobs"] tr[data-job="a-eval"] .job-reason'), 'OverLimit');
  await page.selectOption('#sched-preset', '7-of-8');
  await page.waitForSelector(`${editor}[data-state="invalid"]`, RUN_WAIT);
  assert.equal(await page.inputValue(textarea), edited);
  run = await runNumber(page);
  await page.click('#sched-reset');
  run = await cycle(page, 'kai-scheduler', run);
  assert.equal(await page.inputValue(textarea), file, '"Reset to the preset" brings the file back');
  assert.equal(new URL(page.url()).hash, '#/scheduler?preset=7-of-8&scheduler=kai-scheduler');
  assert.equal(await page.getAttribute('#scheduler', 'data-edited'), 'false');
  await page.reload(WAIT);
  await waitForPanel(page, 'scheduler');
  await cycle(page, 'kai-scheduler', 0);
  assert.equal(await page.inputValue(textarea), file, 'after the reset nothing edited is kept');
  assert.deepEqual(problems, []);
});

test('playground: a scenario written as YAML runs into the playground\'s results, its errors on their lines', { timeout: 240_000 }, async (t) => {
  const { page, problems, url } = await openSite(t);
  await page.goto(url('#/playground'), WAIT);
  await waitForPanel(page, 'playground', 60_000);
  assert.equal(await page.getAttribute('#playground', 'data-source'), 'knobs');
  assert.match(await page.textContent('#playground [data-part="source"]'), /the knob form's scenario/);

  await page.click('#pg-yaml > summary');
  await page.selectOption('#pg-yaml-scenario', 'lws-7-of-8');
  await page.waitForFunction(() => /kind: LeaderWorkerSet/.test(document.getElementById('pg-yaml-text').value)
    && document.querySelector('#pg-yaml .pg-yaml-editor').dataset.state === 'ready', null, WAIT);
  const file = path.join(root, 'scenarios', 'golden-lws-7-of-8.json');
  const json = JSON.parse(await readFile(file, 'utf8'));
  const text = await page.inputValue('#pg-yaml-text');
  for (const shape of ['apiVersion: leaderworkerset.x-k8s.io/v1', 'leaderWorkerTemplate:', 'size: 8', 'apiVersion: karpenter.sh/v1', '# kube_scheduler:']) {
    assert.ok(text.includes(shape), `the YAML shows ${shape}`);
  }

  // A size that does not divide the profile's GPUs: the core's path, on the size line.
  const at = text.indexOf('size: 8') + 'size: '.length;
  await page.focus('#pg-yaml-text');
  await page.evaluate(([a, b]) => document.getElementById('pg-yaml-text').setSelectionRange(a, b), [at, at + 1]);
  await page.keyboard.type('3');
  await page.click('#pg-yaml-run');
  await page.waitForSelector('#pg-yaml .pg-yaml-editor[data-state="invalid"]', RUN_WAIT);
  assert.equal(await page.textContent('#pg-yaml .np-error .np-path'), '/leaderWorkerSet/spec/leaderWorkerTemplate/size');
  assert.match(await page.textContent('#pg-yaml .np-error'), new RegExp(`line ${lineOf(text, at)}, column \\d+[\\s\\S]*give a size that divides 16`));
  assert.deepEqual(await page.$$eval('#pg-yaml .np-gutter .np-line.error', (els) => els.map((e) => e.textContent)), [String(lineOf(text, at))]);
  assert.equal(await page.getAttribute('#playground', 'data-source'), 'knobs', 'nothing of the YAML was shown');

  // Fixed, and run from the keyboard (Ctrl+Enter): the playground's own results show this scenario.
  await page.focus('#pg-yaml-text');
  await page.evaluate(([a, b]) => document.getElementById('pg-yaml-text').setSelectionRange(a, b), [at, at + 1]);
  await page.keyboard.type('8');
  assert.equal(await page.inputValue('#pg-yaml-text'), text);
  const rev = Number(await page.getAttribute('#playground', 'data-rev'));
  await page.keyboard.press('Control+Enter');
  await page.waitForSelector('#pg-yaml .pg-yaml-editor[data-state="ran"]', RUN_WAIT);
  await page.waitForFunction((r) => Number(document.getElementById('playground').dataset.rev) > r, rev, WAIT);
  assert.equal(await page.getAttribute('#playground', 'data-source'), 'yaml');
  assert.match(await page.textContent('#playground [data-part="source"]'), /Shown: the scenario written as YAML \(scenarios\/golden-lws-7-of-8\.json\)/);
  const ranScenario = JSON.parse(await page.getAttribute('#playground .summary-box > :first-child', 'data-scenario'));
  assert.deepEqual(ranScenario, json, 'the run is the scenario file, read back from its YAML');
  const expectedRun = JSON.parse(spawnSync(CLI, ['run', file], { maxBuffer: 1 << 28 }).stdout.toString());
  assert.equal(await page.textContent('#playground .tile[data-field="num_requests"] dd'), expectedRun.summary.num_requests.toLocaleString('en-US'));
  assert.ok(Number(expectedRun.summary.partial_group_gpu_hours) > 0, 'the scenario has a partly placed group');
  assert.equal(await page.locator('#playground .tile[data-field="partial_group_gpu_hours"]').count(), 1, 'the summary shows the partly placed group\'s GPU-hours');
  assert.ok(await page.locator('#playground figure.chart').count() >= 3, 'the charts are drawn');
  assert.ok(await page.locator('#playground .decision-log tbody tr.decision').count() > 10, 'the decision log is filled');
  assert.equal(await page.isHidden('#playground details.pg-diagnosis'), false, 'the diagnosis view is offered (a cluster run)');
  await page.click('#playground details.pg-diagnosis > summary');
  await page.waitForSelector('#playground .diag-layer[data-layer="kube-scheduler"]', WAIT);

  // A knob moved: the knob form runs again and the results say so.
  const knobRev = Number(await page.getAttribute('#playground', 'data-rev'));
  await page.fill('#playground [data-path="/workload/rate_scale"] input', '2');
  await page.waitForFunction((r) => Number(document.getElementById('playground').dataset.rev) > r, knobRev, RUN_WAIT);
  assert.equal(await page.getAttribute('#playground', 'data-source'), 'knobs');
  assert.match(await page.textContent('#playground [data-part="source"]'), /the knob form's scenario/);
  assert.equal(await page.inputValue('#pg-yaml-text'), text, 'the YAML stays as it was');
  assert.deepEqual(problems, []);
});

/** Whatever makes the page wider than the viewport (wide tables scroll inside their own box). */
function overflow(page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll('body *')].filter((e) => {
      if (e.closest('[hidden]')) return false;
      const box = e.getBoundingClientRect();
      return box.right > width + 1 && box.width > 0;
    }).filter((e) => !e.parentElement?.closest('.table-scroll, .log-scroll, table.summary, table.log, .np-code, pre'));
    return { scrollWidth: document.documentElement.scrollWidth, width,
             wide: wide.slice(0, 5).map((e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}.${[...e.classList].join('.')}`) };
  });
}

test('the Scheduler view and the playground\'s YAML section: axe-core clean, no sideways scrolling at 390 and 360 px', { timeout: 240_000 }, async (t) => {
  const { page, problems, url } = await openSite(t, { viewport: { width: 390, height: 844 } });
  const failures = [];
  const check = async (name) => {
    for (const width of [390, 360]) {
      await page.setViewportSize({ width, height: 844 });
      await page.waitForTimeout(200);
      const wide = await overflow(page);
      if (wide.scrollWidth > wide.width) failures.push(`${name} at ${width} px: the page is ${wide.scrollWidth} px wide: ${wide.wide.join('; ')}`);
    }
    for (const v of await axeViolations(page)) failures.push(`${name}: ${v}`);
    t.diagnostic(`${name}: checked`);
  };
  // Every preset under KAI (the richest tables: victims, queues), one under kube-scheduler, an error.
  await page.goto(url('#/scheduler?preset=7-of-8'), WAIT);
  await waitForPanel(page, 'scheduler');
  let run = await cycle(page, 'kai-scheduler', 0);
  for (const preset of ['7-of-8', 'two-tenants', 'topology', 'queue-limit', 'consolidation']) {
    if (preset !== '7-of-8') {
      await page.selectOption('#sched-preset', preset);
      run = await cycle(page, 'kai-scheduler', run);
    }
    await check(`scheduler ${preset}`);
  }
  await page.check('#sched-scheduler-default-scheduler');
  run = await cycle(page, 'default-scheduler', run);
  await check('scheduler consolidation under kube-scheduler');
  await page.focus(textarea);
  await page.keyboard.press('Control+End');
  await page.keyboard.type('\nnodes: [');
  await page.waitForSelector(`${editor}[data-state="yaml-error"]`, RUN_WAIT);
  await check('scheduler with a YAML error');

  await page.goto(url('#/playground'), WAIT);
  await waitForPanel(page, 'playground', 60_000);
  await page.click('#pg-yaml > summary');
  await page.waitForSelector('#pg-yaml .pg-yaml-editor[data-state="ready"]', WAIT);
  await page.click('#pg-yaml-run');
  await page.waitForSelector('#pg-yaml .pg-yaml-editor[data-state="ran"]', RUN_WAIT);
  await check('playground, scenario as YAML');
  assert.deepEqual(failures, []);
  assert.deepEqual(problems, []);
});
