// Browser tests of the lab's shell: the first load (requests and bytes against the targets), every
// view at a desktop and a phone size (no sideways scrolling, axe-core clean of serious and critical
// violations, a bounded number of tab stops, a screenshot each), routing with back and forward,
// addresses the page cannot use, and a keyboard-only pass through exercise 1.
//
//   node --test tests/browser-shell.test.mjs
// env: see tests/browser-helpers.mjs
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import test from 'node:test';

import { ARTIFACTS, SEED, WAIT, axeViolations, cli, openSite, waitForPanel } from './browser-helpers.mjs';


// Targets of the page: first load, and the module's size (README, "Benchmarks": not met yet).
const MAX_FIRST_LOAD_REQUESTS = 15;
const MAX_WASM_BYTES = 700 * 1024;
const MAX_TAB_STOPS = 60;

const VIEWPORTS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } };
const VIEWS = [
  { route: '#/', id: 'home', name: 'home' },
  { route: `#/exercise/1?variant=${SEED}`, id: 'ex1', name: 'exercise-1' },
  { route: `#/exercise/2?variant=${SEED}`, id: 'ex2', name: 'exercise-2' },
  { route: `#/exercise/3?variant=${SEED}`, id: 'ex3', name: 'exercise-3' },
  { route: '#/exercise/4', id: 'ex4', name: 'exercise-4' },
  { route: `#/exercise/5?variant=${SEED}`, id: 'ex5', name: 'exercise-5' },
  { route: '#/playground', id: 'playground', name: 'playground' },
  { route: '#/scheduler?preset=two-tenants', id: 'scheduler', name: 'scheduler' },
  { route: '#/plan', id: 'plan', name: 'plan' },
];

/** How many elements Tab stops at on the page as it is now (visible, enabled, tabindex ≥ 0). */
function tabStops(page) {
  return page.evaluate(() => {
    const candidates = document.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex], [contenteditable="true"]');
    let n = 0;
    const radios = new Set();
    for (const e of candidates) {
      if (e.disabled || e.tabIndex < 0 || e.closest('[hidden], [inert]')) continue;
      if (e.matches('details:not([open]) > :not(summary), details:not([open]) > :not(summary) *')) continue;
      const box = e.getBoundingClientRect();
      if (box.width === 0 && box.height === 0 && !e.matches('.skip')) continue;
      if (e.type === 'radio') {  // a radio group is one tab stop
        if (radios.has(e.name)) continue;
        radios.add(e.name);
      }
      n++;
    }
    return n;
  });
}

/** Whether anything makes the page wider than the viewport. */
function overflow(page) {
  return page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const wide = [...document.querySelectorAll('body *')].filter((e) => {
      if (e.closest('[hidden]')) return false;
      const box = e.getBoundingClientRect();
      return box.right > width + 1 && box.width > 0;
    }).filter((e) => !e.parentElement?.closest('.table-scroll, .log-scroll, table.summary, table.log, table.parameters, table.weeks-table, .np-code, pre'));
    return { scrollWidth: document.documentElement.scrollWidth, width,
             wide: wide.slice(0, 5).map((e) => `${e.tagName.toLowerCase()}${e.id ? `#${e.id}` : ''}.${[...e.classList].join('.')} right=${Math.round(e.getBoundingClientRect().right)}`) };
  });
}

test('first load: at most 15 requests, the module within its size, nothing outside the site', { timeout: 120_000 }, async (t) => {
  const { page, problems, url } = await openSite(t, { viewport: VIEWPORTS.desktop });
  const loads = [];
  page.on('response', async (res) => {
    const body = await res.body().catch(() => Buffer.alloc(0));
    loads.push({ url: res.url().replace(/^.*\/lab\//, ''), bytes: body.length });
  });
  const started = performance.now();
  await page.goto(url(''), WAIT);
  await page.waitForSelector('#home[data-ready="true"]', WAIT);
  const homeMs = performance.now() - started;
  await page.waitForFunction(() => document.getElementById('version').textContent !== '', null, WAIT);  // the module is up
  const moduleMs = performance.now() - started;
  await page.waitForTimeout(300);  // anything late
  const bytes = loads.reduce((sum, l) => sum + l.bytes, 0);
  t.diagnostic(`first load: ${loads.length} requests, ${(bytes / 1024).toFixed(0)} KB; home ready after ${homeMs.toFixed(0)} ms, module after ${moduleMs.toFixed(0)} ms`);
  for (const l of loads) t.diagnostic(`  ${l.url || '(page)'} ${(l.bytes / 1024).toFixed(1)} KB`);
  assert.ok(loads.length <= MAX_FIRST_LOAD_REQUESTS, `${loads.length} requests on first load (at most ${MAX_FIRST_LOAD_REQUESTS})`);
  const wasm = loads.find((l) => /\.wasm$/.test(l.url));
  assert.ok(wasm, 'the module was fetched');
  // The module's size target is not met yet (README, "Benchmarks"): reported, not failed.
  const over = wasm.bytes > MAX_WASM_BYTES;
  t.diagnostic(`${wasm.url}: ${(wasm.bytes / 1024).toFixed(0)} KB, target at most ${MAX_WASM_BYTES / 1024} KB${over ? ' (NOT MET)' : ''}`);
  // Scripts and styles carry content hashes (a host may cache them for ever).
  for (const l of loads.filter((x) => /\.(js|css|wasm)$/.test(x.url))) assert.match(l.url, /-[0-9a-f]{10}\.(js|css|wasm)$/, `${l.url} is named by its content`);
  assert.deepEqual(problems, []);
  // Everything above must hold; only then is the size shortfall marked (a TODO is reported, not failed).
  if (over) t.todo(`sim.wasm is ${(wasm.bytes / 1024).toFixed(0)} KB, above the ${MAX_WASM_BYTES / 1024} KB target`);
});

for (const [size, viewport] of Object.entries(VIEWPORTS)) {
  test(`every view at ${size} size (${viewport.width}×${viewport.height}): no sideways scrolling, axe-core clean, few tab stops`, { timeout: 300_000 }, async (t) => {
    const { page, problems, url } = await openSite(t, { viewport });
    await mkdir(ARTIFACTS, { recursive: true });
    const failures = [];
    for (const view of VIEWS) {
      await page.goto(url(view.route), WAIT);
      await waitForPanel(page, view.id, 60_000);
      await page.waitForFunction((id) => document.getElementById(id).dataset.busy !== 'true', view.id, WAIT);
      const wide = await overflow(page);
      if (wide.scrollWidth > wide.width) failures.push(`${view.name}: the page is ${wide.scrollWidth} px wide in a ${wide.width} px viewport: ${wide.wide.join('; ')}`);
      const violations = await axeViolations(page);
      for (const v of violations) failures.push(`${view.name}: ${v}`);
      const stops = await tabStops(page);
      if (stops > MAX_TAB_STOPS) failures.push(`${view.name}: ${stops} tab stops (at most ${MAX_TAB_STOPS})`);
      t.diagnostic(`${view.name}: ${stops} tab stops, ${violations.length} serious/critical axe violations, width ${wide.scrollWidth}/${wide.width}`);
      await page.screenshot({ path: path.join(ARTIFACTS, `view-${view.name}-${size}.png`), fullPage: size === 'phone' });
      if (size === 'phone') {
        // The narrowest phone the page is for, reached by turning the window: the charts follow.
        await page.setViewportSize({ width: 360, height: 740 });
        await page.waitForTimeout(300);
        const narrow = await overflow(page);
        if (narrow.scrollWidth > narrow.width) failures.push(`${view.name} at 360 px: the page is ${narrow.scrollWidth} px wide: ${narrow.wide.join('; ')}`);
        await page.setViewportSize(viewport);
      }
    }
    assert.deepEqual(failures, []);
    assert.deepEqual(problems, []);
  });
}

test('routing: views in the address, back and forward, addresses the page cannot use', { timeout: 180_000 }, async (t) => {
  const { page, problems, url } = await openSite(t, { viewport: VIEWPORTS.desktop });
  await page.goto(url('#/'), WAIT);
  await page.waitForSelector('#home[data-ready="true"]', WAIT);
  const shown = () => page.evaluate(() => [...document.querySelectorAll('main > .view')].filter((v) => !v.hidden).map((v) => v.id));
  assert.deepEqual(await shown(), ['home']);

  // Home → exercise 2 (from its card) → the playground (from the navigation); back, back, forward.
  await page.click('#home [data-exercise="2"] h3 a');
  await waitForPanel(page, 'ex2');
  assert.deepEqual(await shown(), ['ex2']);
  const variant = await page.getAttribute('#ex2', 'data-seed');
  assert.equal(new URL(page.url()).hash, `#/exercise/2?variant=${variant}`, 'the route names the variant');
  assert.equal(await page.getAttribute('nav a[data-view="exercise/2"]', 'aria-current'), 'page');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'ex2-title', 'focus moves to the view it opened');
  await page.click('nav a[data-view="playground"]');
  await waitForPanel(page, 'playground');
  assert.deepEqual(await shown(), ['playground']);
  await page.goBack();
  await page.waitForFunction(() => !document.getElementById('ex2').hidden);
  assert.equal(await page.getAttribute('#ex2', 'data-seed'), variant, 'back: exercise 2, same variant');
  await page.goBack();
  await page.waitForFunction(() => !document.getElementById('home').hidden);
  await page.goForward();
  await page.waitForFunction(() => !document.getElementById('ex2').hidden);

  // The home view shows each exercise's variant and progress; every exercise is built.
  await page.click('nav a[data-view="home"]');
  await page.waitForFunction(() => !document.getElementById('home').hidden);
  assert.match(await page.textContent('#home [data-exercise="2"] [data-part="progress"]'), new RegExp(`Variant ${variant}`));
  for (const n of [3, 4]) assert.equal(await page.getAttribute(`#home [data-exercise="${n}"]`, 'data-status'), 'ready');
  await page.click('#home [data-exercise="4"] h3 a');
  await waitForPanel(page, 'ex4');
  assert.match(await page.textContent('#ex4 .variant-text'), /disaggregated/);

  // A link from before the routes reproduces what it meant; a variant that is not a number is
  // refused in words and replaced; an unknown route shows the home view and says so.
  await page.goto(url('#seed=3'), WAIT);
  await page.waitForFunction(() => location.hash === '#/exercise/1?variant=3', null, WAIT);
  await waitForPanel(page, 'ex1');
  assert.equal(await page.getAttribute('#ex1', 'data-seed'), '3');
  await page.goto(url('#/exercise/1?variant=abc'), WAIT);
  await page.waitForFunction(() => /^#\/exercise\/1\?variant=\d+$/.test(location.hash), null, WAIT);
  assert.match(await page.textContent('#status'), /"abc" in the address is not a variant/);
  assert.equal(new URL(page.url()).hash, `#/exercise/1?variant=${await page.getAttribute('#ex1', 'data-seed')}`, 'the address and the variant shown agree');
  await page.goto(url('#/no/such/view'), WAIT);
  await page.waitForFunction(() => !document.getElementById('home').hidden, null, WAIT);
  assert.match(await page.textContent('#status'), /names no page of the lab/);

  // "New variant" changes one exercise only.
  await page.goto(url(`#/exercise/5?variant=${SEED}`), WAIT);
  await waitForPanel(page, 'ex5');
  await page.click('#ex5-new-variant-top');
  await page.waitForFunction((s) => document.getElementById('ex5').dataset.seed !== String(s) && document.getElementById('ex5').dataset.ready === 'true', SEED, WAIT);
  const ex5 = await page.getAttribute('#ex5', 'data-seed');
  await page.click('nav a[data-view="home"]');
  await page.waitForFunction(() => !document.getElementById('home').hidden);
  assert.match(await page.textContent('#home [data-exercise="5"] [data-part="progress"]'), new RegExp(`Variant ${ex5}\\b`));
  assert.doesNotMatch(await page.textContent('#home [data-exercise="1"] [data-part="progress"]'), new RegExp(`Variant ${ex5}\\b`), 'exercise 1 keeps its variant');
  assert.deepEqual(problems, []);
});

test('keyboard only: exercise 1 answered, hinted and explained without a mouse', { timeout: 240_000 }, async (t) => {
  const answers = (await cli('solve', '1', '--seed', SEED)).answers;
  const { page, problems, url } = await openSite(t, { viewport: VIEWPORTS.desktop });
  await page.goto(url('#/'), WAIT);
  await page.waitForSelector('#home[data-ready="true"]', WAIT);
  const active = () => page.evaluate(() => {
    const e = document.activeElement;
    return e ? { id: e.id, tag: e.tagName.toLowerCase(), text: (e.textContent ?? '').trim().slice(0, 60), view: e.dataset?.view ?? '' } : null;
  });
  /** Presses Tab until the focused element satisfies `match` (at most `limit` presses); returns the count. */
  const tabTo = async (match, limit = 120) => {
    for (let i = 1; i <= limit; i++) {
      await page.keyboard.press('Tab');
      if (match(await active())) return i;
    }
    assert.fail(`not reached with ${limit} Tab presses: ${match}`);
  };
  const visibleFocus = () => page.evaluate(() => {
    const style = getComputedStyle(document.activeElement);
    return style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0;
  });

  // From the top of the page: the navigation's "Exercise 1", Enter.
  await tabTo((a) => a.view === 'exercise/1', 15);
  assert.ok(await visibleFocus(), 'the focused link shows a focus ring');
  await page.keyboard.press('Enter');
  await waitForPanel(page, 'ex1');
  assert.equal(await page.getAttribute('#ex1', 'data-seed'), String(await page.evaluate(() => Number(localStorage.getItem('gpuscale:learner-variant')))));
  // The route names the learner's own variant; load the one the CLI solved, from the keyboard too.
  await tabTo((a) => a.id === 'ex1-variant-input', 20);
  await page.keyboard.press('Control+A');
  await page.keyboard.type(String(SEED));
  await page.keyboard.press('Enter');
  await page.waitForFunction((s) => document.getElementById('ex1').dataset.seed === String(s) && document.getElementById('ex1').dataset.ready === 'true', SEED, WAIT);

  // Each question: tab to it and answer it (a wrong first answer to (a), to see its hint).
  const ids = Object.keys(answers);
  const type = async (id, value) => {
    const kind = await page.getAttribute(`#ex1 [data-question="${id}"]`, 'data-type');
    if (kind === 'choice') {
      await tabTo((a) => a.id.startsWith(`ex1-q-${id}-`));
      // Arrow keys move through a radio group and check the option they land on.
      for (let i = 0; i < 20 && (await active()).id !== `ex1-q-${id}-${value}`; i++) await page.keyboard.press('ArrowDown');
      assert.equal((await active()).id, `ex1-q-${id}-${value}`);
      assert.ok(await page.isChecked(`#ex1-q-${id}-${value}`));
    } else {
      await tabTo((a) => a.id === `ex1-q-${id}`);
      await page.keyboard.press('Control+A');
      await page.keyboard.type(String(value));
    }
  };
  const kindA = await page.getAttribute('#ex1 [data-question="a"]', 'data-type');
  assert.notEqual(kindA, 'choice', 'question (a) is a number');
  await page.focus('#ex1-title');
  await type('a', Number(answers.a) + 7);
  await tabTo((a) => a.id === 'ex1-check');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#ex1-fb-a[data-correct="false"] .hint', WAIT);
  t.diagnostic(`hint: ${(await page.textContent('#ex1-fb-a .hint')).slice(0, 160)}`);

  await page.focus('#ex1-title');
  for (const id of ids) await type(id, answers[id]);
  await tabTo((a) => a.id === 'ex1-check');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#ex1-fb-a[data-correct="true"]', WAIT);
  for (const id of ids) assert.equal(await page.getAttribute(`#ex1-fb-${id}`, 'data-correct'), 'true', `(${id}) right`);

  // The explanation, unlocked by the attempts, opened with the keyboard.
  await page.waitForSelector('#ex1[data-explain="unlocked"]', WAIT);
  await tabTo((a) => a.id === 'ex1-explain');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#ex1[data-explain="shown"]', WAIT);
  assert.ok((await page.textContent('#ex1 .explanation-box')).length > 100, 'the explanation is shown');
  assert.equal((await active()).id, 'ex1-new-variant', 'focus lands on "New variant" after the explanation');
  assert.deepEqual(problems, []);
});

test('long work: progress beside the control that started it, the simulated clock, and Cancel', { timeout: 180_000 }, async (t) => {
  const { page, problems, url } = await openSite(t, { viewport: VIEWPORTS.desktop });
  await page.goto(url(`#/exercise/5?variant=${SEED}`), WAIT);
  await waitForPanel(page, 'ex5');
  await page.click('#ex5-run');
  // Past 200 ms the note appears next to the button, with the core's clock; past 1 s, Cancel.
  const note = '#ex5-run + [data-part="work-note"]';
  await page.waitForSelector(`${note}:not([hidden])`, WAIT);
  await page.waitForFunction((sel) => /day \d+ of 7/.test(document.querySelector(sel)?.textContent ?? ''), note, WAIT);
  t.diagnostic(`progress: ${await page.textContent(note)}`);
  await page.waitForSelector(`${note} button:not([hidden])`, WAIT);
  const clicked = performance.now();
  await page.click(`${note} button`);
  await page.waitForSelector('#ex5[data-weeks="idle"]', WAIT);
  assert.match(await page.textContent('#ex5 [data-part="weeks-status"]'), /Cancelled/);
  assert.equal(await page.locator(note).count(), 0, 'the note is gone');
  assert.equal(await page.isDisabled('#ex5-run'), false, 'the button is back');
  // The fresh worker answers: the weeks run again from the start (the first progress comes back).
  await page.click('#ex5-run');
  await page.waitForSelector(`${note}:not([hidden])`, WAIT);
  t.diagnostic(`cancelled and running again after ${((performance.now() - clicked) / 1000).toFixed(1)} s`);
  await page.click(`${note} button`, WAIT);
  await page.waitForSelector('#ex5[data-weeks="idle"]', WAIT);
  assert.deepEqual(problems, []);
});
