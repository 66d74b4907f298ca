// Shared helpers of the browser tests: the assembled site served under a sub-path, Debian's
// Chromium through playwright-core, a page that records every console error, and the teacher CLI.
//
// env: GPUSCALE_SITE (default build-wasm/site), GPUSCALE_CLI (default build/cli/gpuscale),
//      GPUSCALE_SEED (default 1), CHROMIUM (default /usr/bin/chromium)
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { chromium } from 'playwright-core';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SITE = path.resolve(root, process.env.GPUSCALE_SITE ?? 'build-wasm/site');
export const CLI = path.resolve(root, process.env.GPUSCALE_CLI ?? 'build/cli/gpuscale');
export const SEED = Number(process.env.GPUSCALE_SEED ?? 1);
export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
export const ARTIFACTS = path.join(root, 'tests', 'artifacts');
export const PREFIX = '/lab/';
export const WAIT = { timeout: 30_000 };
const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.css': 'text/css', '.wasm': 'application/wasm', '.json': 'application/json', '.txt': 'text/plain',
  '.png': 'image/png', '.svg': 'image/svg+xml', '.yaml': 'text/yaml; charset=utf-8',
};

/** The bundled worker's file name in SITE (worker-<hash>.js), for tests that talk to a bare worker. */
export function workerFile() {
  const name = readdirSync(SITE).find((f) => /^worker-[0-9a-f]{10}\.js$/.test(f));
  assert.ok(name, `no worker-<hash>.js in ${SITE}: run node scripts/assemble-site.mjs ${SITE}`);
  return name;
}

/** Opens a view from the page's navigation (as a learner does) and waits for its panel. */
export async function openView(page, view, id) {
  await page.click(`nav a[data-view="${view}"]`);
  await waitForPanel(page, id);
}

/** Fails early with a useful message when the site, the module or the CLI is not built. */
export function assertBuilt() {
  assert.ok(existsSync(path.join(SITE, 'index.html')), `${SITE}/index.html missing: run node scripts/assemble-site.mjs ${SITE}`);
  assert.ok(existsSync(path.join(SITE, 'sim.mjs')), `${SITE}/sim.mjs missing: build the WASM target first`);
  assert.ok(existsSync(CLI), `${CLI} missing: build the native CLI first (or set GPUSCALE_CLI)`);
}

/** A static server for SITE at PREFIX only: anything outside the sub-path is a 404. */
export function serveSite() {
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

/** Runs the teacher CLI and parses its JSON output. */
export async function cli(...args) {
  const { stdout } = await promisify(execFile)(CLI, args.map(String), { timeout: 120_000, maxBuffer: 1 << 28 });
  return JSON.parse(stdout);
}

/**
 * Serves the site and opens a Chromium page on it; everything is closed after the test.
 * `problems` collects console errors, page errors, failed or foreign requests and HTTP errors.
 * @returns {Promise<{page, context, origin, url: (hash: string) => string, problems: string[]}>}
 */
export async function openSite(t, { viewport = { width: 1360, height: 900 } } = {}) {
  assertBuilt();
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
  const context = await browser.newContext({ viewport, acceptDownloads: true });
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
  return { page, context, origin, problems, url: (hash) => `${origin}${PREFIX}${hash}` };
}

/** Waits until a panel is ready (or failed) and fails with its status text if it failed. */
export async function waitForPanel(page, id, timeout = WAIT.timeout) {
  await page.waitForSelector(`#${id}[data-ready="true"], #${id}[data-ready="error"]`, { timeout });
  assert.equal(await page.getAttribute(`#${id}`, 'data-ready'), 'true',
               `${id} failed to load: ${await page.textContent(`#${id} [data-part="status"]`)}`);
}

/** Milliseconds since `start`, for the test's timing diagnostics. */
export function since(start) {
  return `${((performance.now() - start) / 1000).toFixed(1)} s`;
}

/** Serious and critical axe-core violations on the page as it is now, one line each. */
export async function axeViolations(page) {
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.addScriptTag({ content: await readFile(AXE, 'utf8') });
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.impact} ${v.id}: ${v.help} (${v.nodes.length}×, e.g. ${v.nodes[0]?.target?.join(' ')})`);
}
