#!/usr/bin/env bash
# Benchmarks (not timed tests): wall time and simulated events per second, native and WASM.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/cli/gpuscale ] && [ -f build-wasm/site/sim.wasm ] || bash scripts/setup.sh
build/cli/gpuscale bench --repeat "${1:-3}"
node scripts/bench-wasm.mjs build-wasm/site "${1:-3}"
