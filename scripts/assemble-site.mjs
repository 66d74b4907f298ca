// Assembles the deployable static site next to the sim.mjs / sim.wasm that the WASM build wrote:
// web/ and its npm dependencies bundled by esbuild into a few minified files named by their content
// hash, the exercise and scenario data, and a precompressed .gz and .br beside every text file and
// the module, for hosts that serve them.
//
//   node scripts/assemble-site.mjs <wasm-build-dir>/site
//
// What the site holds afterwards (every URL in the page is relative, so the folder can be served
// from any sub-path, e.g. /lab/):
//   index.html               the page, pointing at the hashed files
//   main-<hash>.js           web/main.js and everything it imports (uPlot, yaml …), minified
//   worker-<hash>.js         web/worker.js with the Emscripten loader (sim.mjs) inside
//   sim-<hash>.wasm          the module
//   style-<hash>.css         uPlot's styles and web/style.css
//   exercises/*.json, scenarios/*.json, data/*.json   the data the views fetch
//   docs/examples/*.yaml, *.json         the Scheduler view's preset snapshots (schedule-presets.json lists them)
//   licenses.txt             the licences of the bundled npm packages
// sim.mjs and sim.wasm stay where the build put them (the node tests load them from there).
//
// Third-party files are never committed: they come from node_modules (run `npm ci` first).
import { createHash } from 'node:crypto';
import { cp, mkdir, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const LICENSES = [['uPlot', 'node_modules/uplot/LICENSE'], ['yaml', 'node_modules/yaml/LICENSE']];

async function exists(file) {
  try {
    await stat(file);
    return true;
  } catch {
    return false;
  }
}

/** Copies the data files (by extension) of a folder, if the folder exists; returns their names. */
async function copyData(folder, site, extensions = ['.json']) {
  const source = path.join(root, folder);
  if (!(await exists(source))) return [];
  const files = (await readdir(source)).filter((name) => extensions.includes(path.extname(name))).sort();
  await rm(path.join(site, folder), { recursive: true, force: true });
  if (files.length) await mkdir(path.join(site, folder), { recursive: true });
  for (const name of files) await cp(path.join(source, name), path.join(site, folder, name));
  return files.map((name) => `${folder}/${name}`);
}

const hashOf = (bytes) => createHash('sha256').update(bytes).digest('hex').slice(0, 10);

/** "name-<hash>.ext" for some bytes. */
function hashedName(name, bytes) {
  const ext = path.extname(name);
  return `${path.basename(name, ext)}-${hashOf(bytes)}${ext}`;
}

/** Bundles one entry point (JS or CSS) in memory; returns its text. */
async function bundle(esbuild, options) {
  const result = await esbuild.build({
    bundle: true, minify: true, write: false, legalComments: 'none', target: ['es2022', 'chrome100', 'firefox100', 'safari15'],
    logLevel: 'warning', outdir: 'out', ...options,
  });
  const [output] = result.outputFiles.filter((f) => !f.path.endsWith('.map'));
  return output.text;
}

async function main() {
  const target = process.argv[2];
  if (!target) {
    console.error('usage: node scripts/assemble-site.mjs <wasm-build-dir>/site');
    process.exit(2);
  }
  const site = path.resolve(target);
  await mkdir(site, { recursive: true });
  for (const name of ['sim.mjs', 'sim.wasm']) {
    if (!(await exists(path.join(site, name)))) {
      console.error(`${name} not found in ${site}: build the WASM target first (cmake --build --preset wasm)`);
      process.exit(1);
    }
  }
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch {
    console.error(`esbuild is missing: run \`npm ci\` in ${root} first`);
    process.exit(1);
  }

  // Files of an earlier assembly (hashed names change with their content).
  for (const name of await readdir(site)) {
    if (/^(main|worker|style|sim)-[0-9a-f]{10}\.(js|css|wasm)(\.gz|\.br)?$/.test(name) || /^(index\.html|licenses\.txt)(\.gz|\.br)?$/.test(name)) {
      await rm(path.join(site, name));
    }
  }
  // The unbundled page of older assemblies.
  for (const name of await readdir(path.join(root, 'web'))) await rm(path.join(site, name), { recursive: true, force: true });
  await rm(path.join(site, 'vendor'), { recursive: true, force: true });

  const written = [];
  const emit = async (name, bytes) => {
    await writeFile(path.join(site, name), bytes);
    written.push(name);
    return name;
  };

  // The module, then the worker that loads it (Emscripten's loader finds the .wasm by its name).
  const wasm = await readFile(path.join(site, 'sim.wasm'));
  const wasmName = await emit(hashedName('sim.wasm', wasm), wasm);
  let worker = await bundle(esbuild, {
    entryPoints: [path.join(root, 'web', 'worker.js')], format: 'esm', platform: 'browser',
    plugins: [{
      name: 'sim-module',
      setup(build) {
        build.onResolve({ filter: /^\.\/sim\.mjs$/ }, () => ({ path: path.join(site, 'sim.mjs') }));
      },
    }],
  });
  // Emscripten names the file twice (with and without Module.locateFile).
  if (!worker.includes('"sim.wasm"')) throw new Error('the bundled loader does not name "sim.wasm"');
  worker = worker.replaceAll('"sim.wasm"', JSON.stringify(wasmName));
  const workerName = await emit(hashedName('worker.js', worker), worker);

  // The page: its modules and their npm packages in one file; the worker by its hashed name.
  let main = await bundle(esbuild, { entryPoints: [path.join(root, 'web', 'main.js')], format: 'esm', platform: 'browser' });
  const workerRefs = main.split('"./worker.js"').length - 1;
  if (workerRefs !== 1) throw new Error(`expected one "./worker.js" in the bundled page, found ${workerRefs}`);
  main = main.replace('"./worker.js"', JSON.stringify(`./${workerName}`));
  const mainName = await emit(hashedName('main.js', main), main);

  const css = await bundle(esbuild, {
    stdin: { contents: '@import "uplot/dist/uPlot.min.css";\n@import "./web/style.css";\n', resolveDir: root, loader: 'css' },
  });
  const cssName = await emit(hashedName('style.css', css), css);

  const html = (await readFile(path.join(root, 'web', 'index.html'), 'utf8'))
    .replace('href="style.css"', `href="${cssName}"`)
    .replace('src="main.js"', `src="${mainName}"`);
  if (!html.includes(mainName) || !html.includes(cssName)) throw new Error('web/index.html must link style.css and main.js');
  await emit('index.html', html);

  const licenses = [];
  for (const [name, file] of LICENSES) licenses.push(`${name}\n${'='.repeat(name.length)}\n${await readFile(path.join(root, file), 'utf8')}`);
  await emit('licenses.txt', licenses.join('\n\n'));

  const data = [...await copyData('exercises', site), ...await copyData('scenarios', site), ...await copyData('data', site),
                ...await copyData('docs/examples', site, ['.json', '.yaml'])];

  // Precompressed copies for hosts that serve them (nginx gzip_static / brotli_static, Caddy precompressed).
  let raw = 0, gz = 0, br = 0;
  for (const name of [...written, ...data]) {
    const bytes = await readFile(path.join(site, name));
    const gzip = gzipSync(bytes, { level: 9 });
    const brotli = brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11, [constants.BROTLI_PARAM_SIZE_HINT]: bytes.length } });
    await writeFile(path.join(site, `${name}.gz`), gzip);
    await writeFile(path.join(site, `${name}.br`), brotli);
    raw += bytes.length;
    gz += gzip.length;
    br += brotli.length;
  }
  const kb = (n) => `${(n / 1024).toFixed(0)} KB`;
  console.log(`assembled ${site}: ${written.join(', ')}; ${data.length} data file(s); ` +
              `${kb(raw)} in all (${kb(gz)} gzipped, ${kb(br)} brotli); sim.wasm ${kb(wasm.length)}`);
}

await main();
