// Browser test of the assembled site: Debian's Chromium through playwright-core, the site served
// under the sub-path /lab/, exercise 1 graded wrong then right (right answers from the teacher CLI),
// progress restored after a reload, a playground knob changed from the keyboard.
//
//   node --test tests/browser.test.mjs
// env: GPUSCALE_SITE (default build-wasm/site), GPUSCALE_CLI (default build/cli/gpuscale),
//      GPUSCALE_SEED (default 1), CHROMIUM (default /usr/bin/chromium)
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import test from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SITE = path.resolve(root, process.env.GPUSCALE_SITE ?? 'build-wasm/site');
const CLI = path.resolve(root, process.env.GPUSCALE_CLI ?? 'build/cli/gpuscale');
const SEED = Number(process.env.GPUSCALE_SEED ?? 1);
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = path.join(root, 'tests', 'artifacts');
const PREFIX = '/lab/';
const WAIT = { timeout: 30_000 };

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.css': 'text/css', '.wasm': 'application/wasm', '.json': 'application/json', '.txt': 'text/plain',
  '.png': 'image/png', '.svg': 'image/svg+xml',
};

/** A static server for SITE at PREFIX only: anything outside the sub-path is a 404. */
function serveSite() {
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url, 'http://localhost');
    let file = null;
    if (url.pathname.startsWith(PREFIX)) {
      const rel = decodeURIComponent(url.pathname.slice(PREFIX.length)) || 'index.html';
      const full = path.resolve(SITE, rel);
      if (full.startsWith(SITE + path.sep)) file = full;
    }
    try {
      if (!file) throw new Error('outside the site');
      const body = await readFile(file);
      res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' });
      res.end(body);
    } catch {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function solve(seed) {
  const { stdout } = await promisify(execFile)(CLI, ['solve', '1', '--seed', String(seed)], { timeout: 60_000 });
  const answers = JSON.parse(stdout).answers;
  assert.ok(answers && typeof answers === 'object', `no "answers" in: ${stdout}`);
  return answers;
}

test('exercise 1 and the playground work on the served page', { timeout: 180_000 }, async (t) => {
  assert.ok(existsSync(path.join(SITE, 'index.html')), `${SITE}/index.html missing: run node scripts/assemble-site.mjs ${SITE}`);
  assert.ok(existsSync(path.join(SITE, 'sim.mjs')), `${SITE}/sim.mjs missing: build the WASM target first`);
  assert.ok(existsSync(CLI), `${CLI} missing: build the native CLI first (or set GPUSCALE_CLI)`);
  const answers = await solve(SEED);
  assert.ok('a' in answers, `the CLI gave no answer for question a: ${JSON.stringify(answers)}`);

  const server = await serveSite();
  t.after(() => { server.closeAllConnections(); server.close(); });
  const origin = `http://127.0.0.1:${server.address().port}`;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    timeout: 30_000,
  });
  t.after(() => browser.close());
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 }, acceptDownloads: true });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT.timeout);

  const problems = [];
  page.on('console', (msg) => { if (msg.type() === 'error') problems.push(`console error: ${msg.text()}`); });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('request', (req) => {
    const url = req.url();
    if (!url.startsWith(`${origin}${PREFIX}`) && !/^(data|blob):/.test(url)) problems.push(`request outside the site: ${url}`);
  });
  page.on('requestfailed', (req) => problems.push(`request failed: ${req.url()} ${req.failure()?.errorText}`));
  page.on('response', (res) => { if (res.status() >= 400) problems.push(`HTTP ${res.status()}: ${res.url()}`); });

  await page.goto(`${origin}${PREFIX}#seed=${SEED}`, WAIT);
  const ready = '#ex1[data-ready="true"]';
  await page.waitForSelector(`${ready}, #ex1[data-ready="error"]`, WAIT);
  assert.equal(await page.getAttribute('#ex1', 'data-ready'), 'true',
               `exercise 1 failed to load: ${await page.textContent('#ex1 [data-part="status"]')}`);
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

  // Playground: change a numeric knob from the keyboard; the summary re-renders and the hash follows.
  await page.waitForSelector('#playground[data-ready="true"]', WAIT);
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
  assert.ok(new URL(page.url()).hash.includes(`seed=${SEED}`), 'the seed stays in the hash');

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

  // The worker protocol on its own: per channel only the newest queued request runs; errors carry a path.
  const seen = await page.evaluate(() => new Promise((resolve, reject) => {
    const worker = new Worker('worker.js', { type: 'module' });
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
  }));
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
