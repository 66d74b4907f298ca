// Assembles the deployable static site: web/, exercise and scenario data, and vendored npm files,
// copied next to the sim.mjs / sim.wasm that the WASM build wrote into the same folder.
//
//   node scripts/assemble-site.mjs <wasm-build-dir>/site
//
// Every URL in the page is relative, so the folder can be served from any sub-path (e.g. /lab/).
// Third-party files are never committed: they come from node_modules (run `npm ci` first).
import { cp, mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// [source under the repo root, destination under the site]; a folder is copied whole.
const VENDOR = [
  ['node_modules/uplot/dist/uPlot.esm.js', 'vendor/uPlot.esm.js'],
  ['node_modules/uplot/dist/uPlot.min.css', 'vendor/uPlot.min.css'],
  ['node_modules/uplot/LICENSE', 'vendor/uPlot.LICENSE.txt'],
  // yaml's browser build: index.js + dist/** with relative imports only; index.html maps "yaml" to it.
  ['node_modules/yaml/browser', 'vendor/yaml'],
  ['node_modules/yaml/LICENSE', 'vendor/yaml/LICENSE.txt'],
];

async function exists(file) {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

/** Copies the *.json files of a data folder, if the folder exists; returns how many. */
async function copyJson(folder, site) {
  const source = path.join(root, folder);
  if (!(await exists(source))) return 0;
  const files = (await readdir(source)).filter((name) => name.endsWith('.json'));
  if (files.length) await mkdir(path.join(site, folder), { recursive: true });
  for (const name of files) await cp(path.join(source, name), path.join(site, folder, name));
  return files.length;
}

async function main() {
  const target = process.argv[2];
  if (!target) {
    console.error('usage: node scripts/assemble-site.mjs <wasm-build-dir>/site');
    process.exit(2);
  }
  const site = path.resolve(target);
  await mkdir(site, { recursive: true });

  await cp(path.join(root, 'web'), site, { recursive: true });
  const exercises = await copyJson('exercises', site);
  const scenarios = await copyJson('scenarios', site);

  for (const [from, to] of VENDOR) {
    const source = path.join(root, from);
    if (!(await exists(source))) {
      console.error(`missing ${from}: run \`npm ci\` in ${root} first`);
      process.exit(1);
    }
    await mkdir(path.dirname(path.join(site, to)), { recursive: true });
    await cp(source, path.join(site, to), { recursive: true });
  }

  const missing = [];
  for (const name of ['sim.mjs', 'sim.wasm']) if (!(await exists(path.join(site, name)))) missing.push(name);
  console.log(`assembled ${site}: web/, ${exercises} exercise file(s), ${scenarios} scenario file(s), vendor/`);
  if (missing.length) {
    console.warn(`warning: ${missing.join(' and ')} not found in ${site}; build the WASM target first ` +
                 '(emcmake cmake -S . -B build-wasm && cmake --build build-wasm)');
  }
}

await main();
