// WASM benchmark in Chromium (Debian's, through playwright-core): the suite of
// scripts/bench-suite.mjs run on the page's own thread from the assembled site, so the figures are
// the browser's beside node's (scripts/bench.sh prints both). The page's targets for a re-run
// after a knob change: the exercise-1 pair within 10 ms, the playground's default within 8 ms.
// Then the 24-hour two-tenant run as the first call of a module loaded in a fresh browser context, and warm.
// Then each view of the lab opened cold (a fresh browser context: nothing cached) until its panel
// says it is ready (data-ready="true": its data loaded and its first runs shown); target 1 s.
// Usage: node scripts/bench-browser.mjs [SITE_DIR] [REPEAT]   env: CHROMIUM (default /usr/bin/chromium)
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

import { benchLines, firstAndWarmLine } from './bench-suite.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const site = path.resolve(process.argv[2] ?? path.join(root, 'build-wasm/site'));
const repeat = Number(process.argv[3] ?? 3);
const TYPES = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.wasm': 'application/wasm', '.json': 'application/json', '.html': 'text/html' };

// The site at /, the suite at /bench-suite.mjs, an empty page at /bench.html; nothing else.
const server = http.createServer(async (req, res) => {
  const rel = decodeURIComponent(new URL(req.url, 'http://x').pathname).replace(/^\/+/, '');
  if (rel === 'bench.html') {  // an empty page: the lab's own would start its worker beside the benchmark
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>bench</title>');
    return;
  }
  const file = rel === 'bench-suite.mjs' ? path.join(root, 'scripts', rel) : path.resolve(site, rel || 'index.html');
  if (!file.startsWith(site + path.sep) && !file.endsWith('bench-suite.mjs')) { res.writeHead(404); res.end(); return; }
  try {
    const body = await readFile(file);
    res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
    res.end(body);
  } catch {
    res.writeHead(404);
    res.end();
  }
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const origin = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage();
  await page.goto(`${origin}/bench.html`);
  const result = await page.evaluate(async ({ repeat }) => {
    const { default: createSim } = await import('/sim.mjs');
    const { benchSuite } = await import('/bench-suite.mjs');
    const text = async (url) => (await fetch(url)).text();
    const sim = await createSim();
    const files = { ex1: await text('/exercises/ex1-bursty.json'), day: await text('/scenarios/bench-24h.json'), week: await text('/scenarios/bench-7d-consolidation.json'),
      tenants: await text('/scenarios/bench-24h-two-tenants.json') };
    return { version: navigator.userAgent.match(/Chrome\/[\d.]+/)?.[0] ?? 'Chromium', ...benchSuite(sim, files, repeat) };
  }, { repeat });
  for (const line of benchLines(`wasm (Chromium ${result.version.replace('Chrome/', '')})`, result, repeat)) console.log(line);
  await page.close();
  {
    // A context of its own: nothing compiled or cached from the suite's module.
    const context = await browser.newContext();
    const fresh = await context.newPage();
    await fresh.goto(`${origin}/bench.html`);
    const r = await fresh.evaluate(async ({ repeat }) => {
      const { default: createSim } = await import('/sim.mjs');
      const { firstAndWarm } = await import('/bench-suite.mjs');
      const text = await (await fetch('/scenarios/bench-24h-two-tenants.json')).text();
      return firstAndWarm(await createSim(), text, repeat);
    }, { repeat });
    console.log(firstAndWarmLine(`wasm (Chromium ${result.version.replace('Chrome/', '')}) scenarios/bench-24h-two-tenants.json`, r, repeat));
    await context.close();
  }
  console.log(`cold load of each view until its panel is ready (best of ${repeat}, fresh context each time):`);
  for (const [route, id] of [['#/', 'home'], ['#/exercise/1?variant=1', 'ex1'], ['#/exercise/2?variant=1', 'ex2'],
    ['#/exercise/3', 'ex3'], ['#/exercise/5?variant=1', 'ex5'], ['#/playground', 'playground']]) {
    let best = Infinity;
    for (let k = 0; k < repeat; k++) {
      const context = await browser.newContext();
      const view = await context.newPage();
      const t0 = performance.now();
      await view.goto(`${origin}/index.html${route}`);
      await view.waitForSelector(`#${id}[data-ready="true"]`, { timeout: 60_000 });
      best = Math.min(best, performance.now() - t0);
      await context.close();
    }
    console.log(`  ${route.padEnd(28)} ${best.toFixed(0).padStart(6)} ms`);
  }
} finally {
  await browser.close();
  server.close();
}
