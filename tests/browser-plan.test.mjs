// Browser test of the plan designer (#/plan) on the served page: the form starts at the core's
// defaults and keeps what is typed over a reload; "Design the plan" runs the module's plan with the
// core's progress labels in the bar; the chosen plan, the what-if, the rules (the simulation's
// disagreement shown) and every candidate agree with the plan the module designs under node for the
// same input; each object's YAML copies to the clipboard; the Markdown download holds the chosen
// type, the rules and a NodePool yaml block that parses to the module's; the YAML download's
// documents parse to the module's objects; the chosen plan's own run is shown; the view is axe-core
// clean and fits a 390 px (and 360 px) phone; "Link to this plan" reproduces it in a fresh browser;
// a refused topology shows the refusal, and a field the core refuses shows the core's message
// beside that field. Disaggregated serving chosen in the form gives a plan of a prefill and a decode
// pool: two Deployments and two autoscalers in the YAML download, both pools named in the Markdown.
//
//   node --test tests/browser-plan.test.mjs
// env: see tests/browser-helpers.mjs
import assert from 'node:assert/strict';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import test from 'node:test';

import { parseAllDocuments, parse as parseYaml } from 'yaml';

import { YAML_OPTIONS } from '../web/yaml-text.js';
import { ARTIFACTS, SITE, WAIT, axeViolations, openSite, since, waitForPanel } from './browser-helpers.mjs';

const PLAN_WAIT = { timeout: 120_000 };
const MAX_TAB_STOPS = 60;

// A small plan: two 8-GPU types, at most 2 nodes, a training tenant (so KAI gets three queues).
// Typed into the form field by field below; the page must send exactly this (the Markdown's input block says so).
const INPUT = {
  topology: { instance_types: ['p5.48xlarge', 'p5en.48xlarge'], capacity_types: ['on-demand'], max_nodes: 2, racks: 0, nvlink_domain_nodes: 1 },
  workload: { engine_profile: 'llama-3.3-70b-fp8-tp2-h100-sxm5', serving: 'aggregated', average_rps: 0.5, burst_factor: 3, burst_s: 600,
              prompt_tokens: 1500, output_tokens: 250, what_if_burst: 1.5 },
  slo: { ttft_p99_s: 2, itl_s: 0.05, attainment: 0.95 },
  budget_usd_per_hour: 0,
  tenants: { training_gpus: 8 },
  seed: 1,
  choices: { gang: true, consolidation_policy: 'WhenEmpty' },
};
const REFUSED = { ...INPUT, topology: { ...INPUT.topology, instance_types: ['p5.48xlarge'], max_nodes: 1 } };
const BAD = { ...INPUT, workload: { ...INPUT.workload, average_rps: 0 } };
// Disaggregated serving: long prompts on at most 3 nodes, no tenant (about 20 one-hour runs).
const DISAGGREGATED = {
  ...INPUT,
  topology: { ...INPUT.topology, max_nodes: 3 },
  workload: { ...INPUT.workload, serving: 'disaggregated', average_rps: 1, burst_factor: 4, burst_s: 900, prompt_tokens: 6000, output_tokens: 300 },
  slo: { ttft_p99_s: 3, itl_s: 0.06, attainment: 0.95 },
  tenants: { training_gpus: 0 },
};

const id = (pointer) => `#plan${pointer.replace(/[^A-Za-z0-9_]+/g, '-')}`;  // plan.js's fieldId
const check = (pointer, value) => `${id(pointer)}-${value.replace(/[^A-Za-z0-9_-]/g, '-')}`;

/** The module under node, loaded as tests/wasm.test.mjs loads it. */
async function loadModule() {
  const site = pathToFileURL(`${SITE}/`);
  const { default: createSim } = await import(new URL('sim.mjs', site));
  return createSim({ wasmBinary: await readFile(new URL('sim.wasm', site)) });
}

/** The module's plan of an input: {envelope, labels (its progress labels), ms}. */
function plan(sim, input) {
  const labels = new Set();
  const started = performance.now();
  const envelope = JSON.parse(sim.plan(JSON.stringify(input), (fraction, label) => labels.add(label)));
  return { envelope, labels, ms: performance.now() - started };
}

// The page's number formats (plan-export.js), written out again so that a change to them shows here.
const pct = (f) => `${(f * 100).toFixed(1)} %`;
const sec = (s) => `${s.toFixed(2)} s`;
const hourly = (usd) => `$${usd.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 })}/h`;

/** Whether anything makes the page wider than the viewport (tables scroll inside their own box). */
function overflow(page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll('body *')].filter((e) => {
      if (e.closest('[hidden]')) return false;
      const box = e.getBoundingClientRect();
      return box.right > width + 1 && box.width > 0;
    }).filter((e) => !e.parentElement?.closest('.table-scroll, .log-scroll, table.summary, table.log, pre'));
    return { scrollWidth: document.documentElement.scrollWidth, width,
             wide: wide.slice(0, 5).map((e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}.${[...e.classList].join('.')}`) };
  });
}

/** How many elements Tab stops at (visible, enabled, tabindex ≥ 0), as the shell test counts them. */
function tabStops(page) {
  return page.evaluate(() => [...document.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex], [contenteditable="true"]')]
    .filter((e) => !e.disabled && e.tabIndex >= 0 && !e.closest('[hidden], [inert]')
      && !e.matches('details:not([open]) > :not(summary), details:not([open]) > :not(summary) *')
      && (e.getBoundingClientRect().width > 0 || e.getBoundingClientRect().height > 0 || e.matches('.skip'))).length);
}

/** The form's values as the page holds them: each field's text, or the ticked boxes of a set. */
function formValues(page) {
  return page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#plan-form [data-path]')].map((box) => [box.dataset.path,
    box.matches('fieldset') ? [...box.querySelectorAll('input:checked')].map((i) => i.value) : box.querySelector('input, select').value])));
}

/** Types the test's input into the form as a learner would (from the core's defaults). */
async function fillForm(page) {
  await page.check(check('/topology/instance_types', 'p5en.48xlarge'));
  await page.fill(id('/topology/max_nodes'), '2');
  await page.fill(id('/workload/burst_factor'), '3');
  await page.fill(id('/workload/burst_s'), '600');
  await page.fill(id('/workload/prompt_tokens'), '1500');
  await page.fill(id('/workload/output_tokens'), '250');
  await page.fill(id('/slo/attainment'), '95');
  await page.fill(id('/tenants/training_gpus'), '8');
}

const FILLED = {
  '/topology/instance_types': ['p5.48xlarge', 'p5en.48xlarge'], '/topology/capacity_types': ['on-demand'], '/topology/max_nodes': '2',
  '/topology/racks': '0', '/topology/nvlink_domain_nodes': '1', '/topology/spot_interruptions_per_node_hour': '', '/workload/average_concurrency': '', '/workload/engine_profile': 'llama-3.3-70b-fp8-tp2-h100-sxm5', '/workload/serving': 'aggregated',
  '/workload/average_rps': '0.5', '/workload/burst_factor': '3', '/workload/burst_s': '600', '/workload/prompt_tokens': '1500',
  '/workload/output_tokens': '250', '/workload/what_if_burst': '1.5', '/slo/ttft_p99_s': '2', '/slo/itl_s': '0.05', '/slo/attainment': '95',
  '/budget_usd_per_hour': '0', '/tenants/training_gpus': '8', '/seed': '1',
  '/choices/signal': '', '/choices/decode_signal': '', '/choices/gang': 'true', '/choices/consolidation_policy': 'WhenEmpty',
};

/** The view's object blocks: {object (its id), kind, yaml}. */
function objectBlocks(page) {
  return page.locator('#plan .plan-object').evaluateAll((els) => els.map((e) => ({ object: e.dataset.object, kind: e.dataset.kind, yaml: e.querySelector('pre').textContent })));
}

/** A plan's Kubernetes objects in the order the page shows and downloads them. */
function deployableObjects(result) {
  const p = result.plan;
  return [...p.nodepools, p.ec2nodeclass, ...p.workloads, ...p.autoscalers, ...p.kai.queues, ...(p.kai.topologies ?? [])];
}

/** Clicks a download button and returns the file's name and text. */
async function download(page, selector) {
  const [file] = await Promise.all([page.waitForEvent('download', WAIT), page.click(selector)]);
  return { name: file.suggestedFilename(), text: await readFile(await file.path(), 'utf8') };
}

/** Clicks "Design the plan" and waits for the next verdict (or error) of the view. */
async function design(page) {
  const before = await page.evaluate(() => ({ designs: document.getElementById('plan').dataset.designs ?? '0' }));
  await page.click('#plan-design');
  await page.waitForFunction((b) => {
    const view = document.getElementById('plan');
    return (view.dataset.state === 'done' && view.dataset.designs !== b.designs) || view.dataset.state === 'error' || view.dataset.state === 'cancelled';
  }, before, PLAN_WAIT);
  return page.getAttribute('#plan', 'data-state');
}

test('plan designer: the form, the plan with its progress, rules and candidates, the objects copied and downloaded, the link, a refusal and a field error', { timeout: 600_000 }, async (t) => {
  // ---- Expectations from the module under node, for the same inputs.
  const sim = await loadModule();
  const expected = plan(sim, INPUT);
  assert.equal(expected.envelope.ok, true, JSON.stringify(expected.envelope.error));
  const result = expected.envelope.result;
  assert.equal(result.verdict, 'plan', 'the test\'s input has a plan');
  t.diagnostic(`under node the plan took ${expected.ms.toFixed(0)} ms (${result.candidates.length} candidates, ${expected.labels.size} progress labels); chosen ${result.chosen.instance_type} ${result.chosen.capacity_type} ${result.chosen.signal}`);
  const refused = plan(sim, REFUSED).envelope;
  assert.equal(refused.ok, true);
  assert.equal(refused.result.verdict, 'refused');
  const bad = plan(sim, BAD).envelope;
  assert.equal(bad.ok, false, 'average_rps 0 is refused by the core');
  assert.equal(bad.error.path, '/workload/average_rps');

  const { page, context, origin, problems, url } = await openSite(t);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  await page.goto(url('#/'), WAIT);
  await page.waitForSelector('#home[data-ready="true"]', WAIT);
  // The home view's layer map links the view; so does the navigation.
  assert.ok(await page.locator('#home .layer-links a[href="#/plan"]').count() >= 1, 'the home view links the plan designer');
  await page.click('nav a[data-view="plan"]');
  await waitForPanel(page, 'plan');
  assert.equal(await page.getAttribute('nav a[data-view="plan"]', 'aria-current'), 'page');
  assert.equal(new URL(page.url()).hash, '#/plan');
  assert.deepEqual(await axeViolations(page), [], 'the form alone is axe-core clean');

  // ---- The form starts at the core's defaults (plan.hpp); spot's interruption rate shows with spot only.
  const defaults = await formValues(page);
  assert.deepEqual(defaults['/topology/instance_types'], ['p5.48xlarge']);
  // The instance types offered are the catalogue's GPU types (data/instance-types.json, the core's own).
  const catalogue = JSON.parse(await readFile(new URL('../data/instance-types.json', import.meta.url), 'utf8'));
  const offered = await page.locator('#plan-form [data-path="/topology/instance_types"] input[type="checkbox"]').evaluateAll((els) => els.map((e) => e.value));
  assert.deepEqual(offered, catalogue.filter((t) => t.gpus > 0).map((t) => t.name), 'the catalogue\'s GPU types, in its order');
  assert.deepEqual(defaults['/topology/capacity_types'], ['on-demand']);
  assert.deepEqual([defaults['/topology/max_nodes'], defaults['/workload/average_rps'], defaults['/workload/burst_factor'], defaults['/workload/burst_s'],
    defaults['/slo/ttft_p99_s'], defaults['/slo/attainment'], defaults['/seed']], ['4', '0.5', '4', '900', '2', '99', '1']);
  for (const [label, field] of [['Instance types', '/topology/instance_types'], ['Average requests', '/workload/average_rps'], ['Requests within the SLO, at least', '/slo/attainment']]) {
    const box = page.locator(`#plan-form [data-path="${field}"]`);
    assert.equal((await box.locator('label, legend').first().textContent()).trim(), label, `${field} is labelled`);
  }
  const spotRate = `#plan-form [data-path="/topology/spot_interruptions_per_node_hour"]`;
  assert.ok(await page.isHidden(spotRate), 'no spot rate without spot');
  await page.check(check('/topology/capacity_types', 'spot'));
  assert.ok(await page.isVisible(spotRate), 'the spot rate shows with spot ticked');
  await page.uncheck(check('/topology/capacity_types', 'spot'));
  assert.ok(await page.isHidden(spotRate));

  // ---- What is typed is kept over a reload.
  await fillForm(page);
  assert.deepEqual(await formValues(page), FILLED);
  await page.reload(WAIT);
  await waitForPanel(page, 'plan');
  assert.deepEqual(await formValues(page), FILLED, 'the form survives a reload');

  // ---- "Design the plan": the core's progress labels in the bar, then the verdict.
  await page.evaluate(() => {
    window.__planLabels = [];
    const label = document.getElementById('plan-progress-label');
    new MutationObserver(() => window.__planLabels.push(label.textContent)).observe(label, { childList: true, characterData: true, subtree: true });
  });
  let clock = performance.now();
  assert.equal(await design(page), 'done');
  const planMs = Number(await page.getAttribute('#plan', 'data-plan-ms'));
  t.diagnostic(`the page designed the plan in ${since(clock)}; the module took ${planMs} ms in Chromium`);
  const seen = await page.evaluate(() => window.__planLabels);
  const coreLabels = seen.map((text) => text.replace(/ \(\d+ %\)$/, '')).filter((l) => l !== 'starting');
  t.diagnostic(`progress: ${seen.length} updates, e.g. ${seen.slice(1, 4).map((s) => `"${s}"`).join(', ')}`);
  assert.ok(coreLabels.length >= 10, `the bar follows the core's progress (${coreLabels.length} updates with a core label; ` +
    'web/worker.js must pass a progress function to op "plan": PROGRESS_OPS needs "plan")');
  for (const label of new Set(coreLabels)) assert.ok(expected.labels.has(label), `"${label}" is one of the core's labels`);
  assert.ok(new Set(coreLabels).size >= 5, 'the labels name the runs as they go');
  assert.ok(await page.isHidden('#plan [data-part="plan-progress"]'), 'the bar is gone once designed');
  assert.equal(await page.getAttribute('#plan', 'data-verdict'), 'plan');

  // ---- The chosen plan and the what-if, as the module designed them.
  const c = result.chosen, w = result.what_if;
  const cellOf = async (field, of) => (await page.textContent(`#plan-chosen tr[data-field="${field}"] td[data-of="${of}"]`)).trim();
  for (const [x, of] of [[c, 'chosen'], [w, 'what-if']]) {
    assert.equal(await cellOf('instance_type', of), x.instance_type);
    assert.equal(await cellOf('capacity_type', of), x.capacity_type);
    assert.equal(await cellOf('tensor_parallel', of), `TP${x.tensor_parallel}: ${x.engine_profile}`);
    assert.equal(await cellOf('warm_replicas', of), String(x.warm_replicas));
    assert.equal(await cellOf('slo_attainment', of), pct(x.slo_attainment));
    assert.equal(await cellOf('ttft_p99_s', of), sec(x.ttft_p99_s));
    assert.equal(await cellOf('node_cost_usd_per_hour', of), hourly(x.node_cost_usd_per_hour));
    assert.equal(await cellOf('meets_slo', of), x.meets_slo ? 'yes' : 'no');
  }
  const autoscaler = await cellOf('autoscaler', 'chosen');
  assert.ok(autoscaler.includes(result.plan.autoscalers[0].kind), `the autoscaler's kind: ${autoscaler}`);
  assert.ok(!/prefill|decode/.test(autoscaler), 'one pool, not named by role');
  assert.match(await cellOf('target', 'chosen'), new RegExp(`^${c.signal === 'kv_cache' ? Math.round(c.target * 100) : Number(c.target.toFixed(2))}\\b`));
  assert.match(await page.textContent('#plan-verdict'), new RegExp(`^Plan: ${c.instance_type}, ${c.capacity_type}, TP${c.tensor_parallel};`));
  assert.ok((await page.textContent('#plan-warm')).includes(result.plan.warm_pool.reason.slice(1, 60)), 'the warm pool\'s reason');
  assert.equal(await page.textContent('#plan-kill-switch'), result.plan.kill_switch);

  // ---- The rules: one row each, the disagreement shown where the simulation disagrees.
  const rules = await page.locator('#plan-rules tbody tr').evaluateAll((rows) => rows.map((r) => ({
    rule: r.dataset.rule, disagrees: r.dataset.disagrees, verdict: r.querySelector('.rule-verdict').textContent, reason: r.querySelector('.rule-reason').textContent })));
  assert.deepEqual(rules.map((r) => [r.rule, r.disagrees, r.reason]), result.rules.map((r) => [r.rule, String(r.simulation_disagrees), r.reason]));
  for (const r of rules) assert.match(r.verdict, r.disagrees === 'true' ? /The simulation disagrees/ : /Confirms the rule/, r.rule);
  assert.ok(result.rules.some((r) => r.simulation_disagrees), 'the test\'s input has a rule the simulation disagrees with');

  // ---- The candidates: every row, the chosen one marked, each rejected one with its reasons.
  const rows = await page.locator('#plan-candidates tbody tr').evaluateAll((trs) => trs.map((tr) => ({
    chosen: tr.dataset.chosen, rejected: tr.dataset.rejected, type: tr.children[1].textContent, capacity: tr.children[2].textContent,
    slo: tr.children[6].textContent, verdict: tr.querySelector('.candidate-verdict').textContent })));
  assert.equal(rows.length, result.candidates.length);
  const chosenAt = result.candidates.findIndex((x) => ['instance_type', 'capacity_type', 'signal', 'target', 'warm_replicas', 'node_cost_usd_per_hour', 'inference_quota_gpus']
    .every((k) => x[k] === c[k]));
  rows.forEach((row, i) => {
    const x = result.candidates[i];
    assert.deepEqual([row.type, row.capacity, row.slo], [x.instance_type, x.capacity_type, x.simulated ? pct(x.slo_attainment) : '—'], `candidate ${i + 1}`);
    assert.equal(row.chosen, String(i === chosenAt), `candidate ${i + 1}: chosen`);
    assert.equal(row.rejected, String(x.rejected.length > 0));
    for (const reason of x.rejected) assert.ok(row.verdict.includes(reason), `candidate ${i + 1} says why: ${reason.slice(0, 60)}`);
  });
  assert.ok(result.candidates.some((x) => x.rejected.length), 'some candidate is rejected');

  // ---- The objects: one block each, its YAML the module's object; Copy puts it on the clipboard.
  const queues = result.plan.kai.queues;
  const blocks = await objectBlocks(page);
  const objects = deployableObjects(result);
  assert.deepEqual(blocks.map((b) => b.kind), [...objects.map((o) => o.kind), ''], 'each NodePool, EC2NodeClass, the model server, its autoscaler, each queue, KAI\'s pod settings');
  assert.deepEqual(result.plan.workloads.map((o) => o.kind), ['Deployment']);
  objects.forEach((o, i) => assert.deepEqual(parseYaml(blocks[i].yaml, YAML_OPTIONS), o, `${blocks[i].kind}: the YAML reads back as the module's object`));
  const { queues: _queues, topologies: _topologies, ...podSettings } = result.plan.kai;
  assert.deepEqual(parseYaml(blocks.at(-1).yaml, YAML_OPTIONS), podSettings, 'KAI\'s pod settings');
  await page.click('#plan-object-workload-0 button');
  await page.waitForSelector('#plan-object-workload-0 button[data-copy="copied"]', WAIT);
  assert.deepEqual(parseYaml(await page.evaluate(() => navigator.clipboard.readText()), YAML_OPTIONS), result.plan.workloads[0], 'the clipboard holds the Deployment');
  await page.click('#plan-object-nodepool-0 button');
  await page.waitForSelector('#plan-object-nodepool-0 button[data-copy="copied"]', WAIT);
  assert.equal(await page.textContent('#plan-object-nodepool-0 .copy-note'), 'Copied.');
  const clipboard = await page.evaluate(() => navigator.clipboard.readText());
  assert.deepEqual(parseYaml(clipboard, YAML_OPTIONS), result.plan.nodepools[0], 'the clipboard holds the NodePool');

  // ---- "Download Markdown": the one-page plan.
  const md = await download(page, '#plan-download-md');
  assert.equal(md.name, 'gpu-plan.md');
  assert.ok(md.text.includes(c.instance_type), 'the chosen instance type');
  for (const r of result.rules) assert.ok(md.text.includes(`\`${r.rule}\``), `the rule ${r.rule}`);
  assert.match(md.text, /\*\*disagrees\*\* on this input/);
  assert.ok(md.text.includes(result.plan.kill_switch) && md.text.includes(result.plan.dashboard[0]), 'the kill switch and the dashboard');
  const fences = [...md.text.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]);
  const nodepoolBlock = fences.find((f) => /^kind: NodePool$/m.test(f));
  assert.ok(nodepoolBlock, 'a yaml block of the NodePool');
  assert.deepEqual(parseYaml(nodepoolBlock, YAML_OPTIONS), result.plan.nodepools[0], 'the Markdown\'s NodePool is the module\'s');
  assert.deepEqual(parseYaml(fences[0], YAML_OPTIONS), INPUT, 'the Markdown\'s input is the input typed (and sent)');
  assert.equal(fences.length, 1 + blocks.length, 'the input and every object');
  for (const x of result.candidates.filter((y) => y.rejected.length)) assert.ok(md.text.includes(x.rejected[0].replace(/\|/g, '\\|')), 'rejected candidates with their reasons');

  // ---- "Download YAML": every object a document that parses, in the order shown.
  const yamlFile = await download(page, '#plan-download-yaml');
  const docs = parseAllDocuments(yamlFile.text, YAML_OPTIONS).filter((d) => d.contents !== null);
  for (const d of docs) assert.deepEqual(d.errors, [], 'each document parses');
  assert.equal(docs.length, result.plan.nodepools.length + 3 + queues.length, 'each NodePool, EC2NodeClass, the Deployment, its autoscaler and each queue');
  assert.deepEqual(docs.map((d) => d.toJS()), objects);
  assert.match(yamlFile.text, /^# .*kai-scheduler/m, 'the pods\' KAI settings as a comment');

  // ---- The chosen plan's own run: its summary, replicas and nodes over time, its decision log.
  await page.waitForSelector('#plan-run[data-ready="true"]', WAIT);
  assert.deepEqual(await page.locator('#plan-run figure.chart').evaluateAll((f) => f.map((x) => x.dataset.chart)), ['replicas', 'nodes']);
  assert.ok(await page.locator('#plan-run .decision-log tbody tr').count() > 0, 'the run\'s decision log');
  assert.ok(await page.locator('#plan-run .tile').count() > 5, 'the run\'s summary');

  // ---- Accessible and narrow: axe-core clean, few tab stops, nothing wider than a 390 px (or 360 px) phone.
  assert.deepEqual(await axeViolations(page), [], 'axe-core clean with a plan shown');
  const stops = await tabStops(page);
  t.diagnostic(`${stops} tab stops with a plan shown`);
  assert.ok(stops <= MAX_TAB_STOPS, `${stops} tab stops`);
  await mkdir(ARTIFACTS, { recursive: true });
  for (const width of [390, 360]) {
    await page.setViewportSize({ width, height: 844 });
    await page.waitForTimeout(300);
    const wide = await overflow(page);
    assert.ok(wide.scrollWidth <= wide.width, `at ${width} px the page is ${wide.scrollWidth} px wide: ${wide.wide.join('; ')}`);
    if (width === 390) await page.screenshot({ path: path.join(ARTIFACTS, 'view-plan-phone.png'), fullPage: true });
  }
  assert.deepEqual(await axeViolations(page), [], 'axe-core clean at phone size');
  await page.setViewportSize({ width: 1360, height: 900 });

  // ---- The link reproduces the plan in a browser that never saw it.
  const link = await page.getAttribute('#plan-link', 'href');
  assert.match(link, /#\/plan\?\/topology\/instance_types=p5\.48xlarge&\/topology\/instance_types=p5en\.48xlarge&/);
  const verdict = await page.textContent('#plan-verdict');
  const fresh = await (await context.browser().newContext()).newPage();
  t.after(() => fresh.context().close());
  await fresh.goto(link, WAIT);
  await fresh.waitForSelector('#plan[data-state="done"]', PLAN_WAIT);
  assert.deepEqual(await formValues(fresh), FILLED, 'the link fills the form');
  assert.equal(await fresh.textContent('#plan-verdict'), verdict, 'and designs the same plan');
  assert.equal(new URL(fresh.url()).hash, '#/plan', 'the address is the view again (the form is kept from now on)');

  // ---- A reload keeps the form (the plan shown is designed again on demand).
  await page.reload(WAIT);
  await waitForPanel(page, 'plan');
  assert.deepEqual(await formValues(page), FILLED);

  // ---- One node of one GPU type is refused, with the rule and its reason.
  await page.uncheck(check('/topology/instance_types', 'p5en.48xlarge'));
  await page.fill(id('/topology/max_nodes'), '1');
  assert.equal(await design(page), 'done');
  assert.equal(await page.getAttribute('#plan', 'data-verdict'), 'refused');
  const refusal = refused.result.refusals[0];
  assert.equal(await page.getAttribute('#plan-refusals li', 'data-rule'), refusal.rule);
  assert.ok((await page.textContent('#plan-refusals li')).includes(refusal.reason), 'the core\'s reason');
  assert.equal(await page.locator('#plan-download-yaml').count(), 0, 'no objects to download');
  const refusedMd = await download(page, '#plan-download-md');
  assert.ok(refusedMd.text.includes(refusal.reason.replace(/\|/g, '\\|')));
  // Pinning what the lesson refuses adds its refusal, with the field that asked for it.
  await page.selectOption(id('/choices/signal'), 'gpu_memory');
  assert.equal(await design(page), 'done');
  assert.deepEqual(await page.locator('#plan-refusals li').evaluateAll((els) => els.map((e) => e.dataset.rule)),
    ['single_node_single_gpu_type', 'no_gpu_memory_signal']);
  assert.match(await page.textContent('#plan-refusals li[data-rule="no_gpu_memory_signal"]'), /\/choices\/signal.*never scales down/s);
  await page.selectOption(id('/choices/signal'), '');

  // ---- A field the core refuses: its message beside that field, nothing designed. From the keyboard:
  // a box ticked with Space, a number typed, Enter designs.
  await page.fill(id('/topology/max_nodes'), '2');
  await page.focus(check('/topology/instance_types', 'p5en.48xlarge'));
  await page.keyboard.press('Space');
  assert.ok(await page.isChecked(check('/topology/instance_types', 'p5en.48xlarge')));
  await page.focus(id('/workload/average_rps'));
  await page.keyboard.press('Control+A');
  await page.keyboard.type('0');
  const designs = await page.getAttribute('#plan', 'data-designs');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#plan[data-state="error"]', PLAN_WAIT);
  assert.equal(await page.getAttribute('#plan', 'data-designs'), designs, 'nothing designed');
  const message = await page.textContent(`${id('/workload/average_rps')}-error`);
  assert.ok(message.includes(bad.error.message), `the core's message beside the field: ${message}`);
  assert.ok(message.includes(bad.error.path));
  assert.equal(await page.getAttribute(id('/workload/average_rps'), 'aria-invalid'), 'true');
  assert.match(await page.textContent('#plan-run-status'), /Nothing was designed: the core refused Average requests/);
  assert.deepEqual(await axeViolations(page), [], 'axe-core clean with the error shown');
  await page.fill(id('/workload/average_rps'), '0.5');
  assert.equal(await page.getAttribute(id('/workload/average_rps'), 'aria-invalid'), null, 'typing clears the error');
  assert.equal(await page.textContent(`${id('/workload/average_rps')}-error`), '');

  await page.locator('#plan').screenshot({ path: path.join(ARTIFACTS, 'view-plan.png') });
  assert.deepEqual(problems, [], 'no console errors, page errors or foreign requests');
});

test('plan designer: Cancel stops a long plan, and the next input (a model no topology holds) shows the failed layer', { timeout: 240_000 }, async (t) => {
  const sim = await loadModule();
  const noPlanInput = { topology: { instance_types: ['p5.48xlarge', 'p5en.48xlarge'], capacity_types: ['on-demand', 'spot'], max_nodes: 4,
                                    spot_interruptions_per_node_hour: 0.05 },
                        workload: { engine_profile: 'llama-3.1-405b-bf16-tp8-pp2-h100-sxm5' } };
  const noPlan = plan(sim, noPlanInput).envelope.result;
  assert.equal(noPlan.verdict, 'no_plan', 'the 405B model on at most 4 nodes has no plan');

  const { page, problems, url } = await openSite(t);
  await page.goto(url('#/plan'), WAIT);
  await waitForPanel(page, 'plan');
  // A long search: three types, both capacity types, 16 nodes, a 40-minute burst at the core's largest peak (25 req/s).
  await page.check(check('/topology/instance_types', 'p5en.48xlarge'));
  await page.check(check('/topology/instance_types', 'p4d.24xlarge'));
  await page.check(check('/topology/capacity_types', 'spot'));
  await page.fill(id('/topology/spot_interruptions_per_node_hour'), '0.05');
  await page.fill(id('/topology/max_nodes'), '16');
  await page.fill(id('/workload/average_rps'), '5');
  await page.fill(id('/workload/burst_factor'), '5');
  await page.fill(id('/workload/burst_s'), '2400');
  await page.fill(id('/workload/prompt_tokens'), '4000');
  await page.click('#plan-design');
  const note = '#plan-design + [data-part="work-note"]';
  await page.waitForSelector(`${note} button:not([hidden])`, WAIT);
  assert.ok(await page.isVisible('#plan [data-part="plan-progress"]'), 'the bar shows while it runs');
  await page.click(`${note} button`);
  await page.waitForSelector('#plan[data-state="cancelled"]', WAIT);
  assert.equal(await page.textContent('#plan-run-status'), 'Cancelled: nothing was designed.');
  assert.ok(await page.isHidden('#plan [data-part="plan-progress"]'), 'the bar is gone');
  assert.equal(await page.isDisabled('#plan-design'), false, 'the button is back');

  // The next plan runs on the fresh worker: the 405B model over two nodes a replica.
  await page.uncheck(check('/topology/instance_types', 'p4d.24xlarge'));
  await page.selectOption(id('/workload/engine_profile'), 'llama-3.1-405b-bf16-tp8-pp2-h100-sxm5');
  for (const [field, value] of [['/topology/max_nodes', '4'], ['/workload/average_rps', '0.5'], ['/workload/burst_factor', '4'],
    ['/workload/burst_s', '900'], ['/workload/prompt_tokens', '2000']]) await page.fill(id(field), value);
  assert.equal(await design(page), 'done');
  assert.equal(await page.getAttribute('#plan', 'data-verdict'), 'no_plan');
  assert.equal(await page.getAttribute('#plan-failed-layer', 'data-layer'), noPlan.failed_layer);
  assert.ok((await page.textContent('#plan-verdict')).includes(noPlan.reason), 'the core\'s reason');
  assert.equal(await page.locator('#plan-candidates tbody tr').count(), noPlan.candidates.length);
  assert.equal(await page.locator('#plan-download-yaml').count(), 0, 'no objects to download');
  assert.deepEqual(await axeViolations(page), []);
  assert.deepEqual(problems, []);
});

test('plan designer: disaggregated serving chosen in the form plans a prefill and a decode pool, each with its Deployment and autoscaler', { timeout: 240_000 }, async (t) => {
  const sim = await loadModule();
  const expected = plan(sim, DISAGGREGATED);
  assert.equal(expected.envelope.ok, true, JSON.stringify(expected.envelope.error));
  const result = expected.envelope.result;
  assert.equal(result.verdict, 'plan', 'the disaggregated input has a plan');
  t.diagnostic(`under node the plan took ${expected.ms.toFixed(0)} ms (${result.candidates.length} candidates)`);
  const c = result.chosen;
  assert.ok(c.decode, 'the chosen plan has a decode pool');

  const { page, problems, url } = await openSite(t);
  await page.goto(url('#/plan'), WAIT);
  await waitForPanel(page, 'plan');
  assert.equal(await page.inputValue(id('/workload/serving')), 'aggregated', 'aggregated by default');
  await page.check(check('/topology/instance_types', 'p5en.48xlarge'));
  await page.fill(id('/topology/max_nodes'), '3');
  await page.selectOption(id('/workload/serving'), 'disaggregated');
  assert.match(await page.textContent(`${id('/workload/serving')}-note`), /Two Deployments/, 'the choice\'s note');
  for (const [field, value] of [['/workload/average_rps', '1'], ['/workload/prompt_tokens', '6000'], ['/slo/ttft_p99_s', '3'],
    ['/slo/itl_s', '0.06'], ['/slo/attainment', '95']]) await page.fill(id(field), value);
  assert.equal(await design(page), 'done');
  assert.equal(await page.getAttribute('#plan', 'data-verdict'), 'plan');

  // ---- The chosen plan names both pools: the sentence, each pool's autoscaler and warm replicas.
  const pools = await page.textContent('#plan-pools');
  assert.match(pools, /a prefill pool \(Deployment vllm-prefill\) and a decode pool \(Deployment vllm-decode\)/);
  const cellOf = async (field) => (await page.textContent(`#plan-chosen tr[data-field="${field}"] td[data-of="chosen"]`)).trim();
  assert.equal(await cellOf('warm_replicas'), `${c.warm_replicas} prefill + ${c.decode.warm_replicas} decode`);
  const autoscaler = await cellOf('autoscaler');
  assert.ok(autoscaler.startsWith(`prefill: ${result.plan.autoscalers[0].kind}`) && autoscaler.includes(`; decode: ${result.plan.autoscalers[1].kind}`),
    `each pool's autoscaler: ${autoscaler}`);
  assert.match(await page.textContent('#plan-verdict'), new RegExp(`; prefill: .*; decode: .*; ${c.warm_replicas} prefill \\+ ${c.decode.warm_replicas} decode warm replicas\\.`));
  assert.ok(await page.locator('#plan-rules tr[data-rule="per_role_signals"]').count() === 1, 'the per-role rule');

  // ---- The candidates: each simulated one with its decode pool; the chosen one marked.
  const rows = await page.locator('#plan-candidates tbody tr').evaluateAll((trs) => trs.map((tr) => ({
    chosen: tr.dataset.chosen, autoscaler: tr.children[3].textContent, warm: tr.children[4].textContent })));
  assert.equal(rows.length, result.candidates.length);
  const chosenAt = result.candidates.findIndex((x) => ['instance_type', 'capacity_type', 'signal', 'target', 'warm_replicas', 'node_cost_usd_per_hour'].every((k) => x[k] === c[k])
    && ['signal', 'target', 'warm_replicas'].every((k) => x.decode?.[k] === c.decode[k]) && x.inference_quota_gpus === c.inference_quota_gpus);
  rows.forEach((row, i) => {
    const x = result.candidates[i];
    assert.equal(row.chosen, String(i === chosenAt), `candidate ${i + 1}: chosen`);
    if (!x.decode) return;
    assert.match(row.autoscaler, /^prefill: .+decode: .+/, `candidate ${i + 1}: both pools' signals`);
    assert.equal(row.warm, `${x.warm_replicas} prefill + ${x.decode.warm_replicas} decode`);
  });

  // ---- The objects: both Deployments and both autoscalers, shown and downloaded.
  const objects = deployableObjects(result);
  const blocks = await objectBlocks(page);
  assert.deepEqual(blocks.map((b) => b.kind), [...objects.map((o) => o.kind), '']);
  objects.forEach((o, i) => assert.deepEqual(parseYaml(blocks[i].yaml, YAML_OPTIONS), o, `${blocks[i].kind}: the YAML reads back as the module's object`));
  const yamlFile = await download(page, '#plan-download-yaml');
  const docs = parseAllDocuments(yamlFile.text, YAML_OPTIONS).filter((d) => d.contents !== null).map((d) => d.toJS());
  assert.deepEqual(docs, objects);
  assert.deepEqual(docs.filter((d) => d.kind === 'Deployment').map((d) => d.metadata.name), ['vllm-prefill', 'vllm-decode'], 'two Deployments');
  assert.deepEqual(docs.filter((d) => ['ScaledObject', 'HorizontalPodAutoscaler'].includes(d.kind)).map((d) => d.spec.scaleTargetRef.name),
    ['vllm-prefill', 'vllm-decode'], 'two autoscalers, one per Deployment');

  // ---- The Markdown names both pools, their autoscalers and warm replicas, and holds every object.
  const md = (await download(page, '#plan-download-md')).text;
  assert.ok(md.includes(pools), 'the pools\' sentence');
  assert.match(md, /^\| warm replicas \| \d+ prefill \+ \d+ decode \|/m);
  assert.match(md, /^\| autoscaler \| prefill: .+; decode: .+ \|/m);
  assert.match(md, new RegExp(`^## Warm pool: ${result.plan.warm_pool.replicas} replicas \\(${c.warm_replicas} prefill \\+ ${c.decode.warm_replicas} decode\\)$`, 'm'));
  for (const name of ['vllm-prefill', 'vllm-decode']) assert.match(md, new RegExp(`^### Deployment ${name}$`, 'm'), `the ${name} Deployment`);
  assert.ok(md.includes('`per_role_signals`'), 'the per-role rule');
  const fences = [...md.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]);
  assert.deepEqual(parseYaml(fences[0], YAML_OPTIONS), DISAGGREGATED, 'the Markdown\'s input is the input typed (and sent)');

  assert.deepEqual(await axeViolations(page), []);
  assert.deepEqual(problems, []);
});
