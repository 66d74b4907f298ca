// WASM benchmark under node (the suite in scripts/bench-suite.mjs).
// Usage: node scripts/bench-wasm.mjs [SITE_DIR] [REPEAT]
import { readFile } from 'node:fs/promises';

import { benchLines, benchSuite } from './bench-suite.mjs';

const root = new URL('../', import.meta.url);
const site = process.argv[2] ? new URL(`file://${process.argv[2].startsWith('/') ? '' : process.cwd() + '/'}${process.argv[2].replace(/\/?$/, '/')}`) : new URL('build-wasm/site/', root);
const repeat = Number(process.argv[3] ?? 3);
const { default: createSim } = await import(new URL('sim.mjs', site));
const sim = await createSim({ wasmBinary: await readFile(new URL('sim.wasm', site)) });
const text = (rel) => readFile(new URL(rel, root), 'utf8');
const files = { ex1: await text('exercises/ex1-bursty.json'), day: await text('scenarios/bench-24h.json'), week: await text('scenarios/bench-7d-consolidation.json') };
for (const line of benchLines(`wasm (node ${process.version})`, benchSuite(sim, files, repeat), repeat)) console.log(line);
