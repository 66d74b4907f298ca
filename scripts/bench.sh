#!/usr/bin/env bash
# Benchmarks (not timed tests): wall time and simulated events per second, native, WASM under node
# and WASM in Chromium (the browser's figures beside node's).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/cli/gpuscale ] && [ -f build-wasm/site/sim.wasm ] || bash scripts/setup.sh
build/cli/gpuscale bench --repeat "${1:-3}"
node scripts/bench-wasm.mjs build-wasm/site "${1:-3}"
node scripts/bench-browser.mjs build-wasm/site "${1:-3}"
