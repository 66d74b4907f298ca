#!/usr/bin/env bash
# Benchmarks (not timed tests): wall time and simulated events per second, native, WASM under node
# and WASM in Chromium (the browser's figures beside node's).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/cli/gpuscale ] && [ -f build-wasm/site/sim.wasm ] || bash scripts/setup.sh
build/cli/gpuscale bench --repeat "${1:-3}"
# One scheduling cycle of the 1,000-node, 10,000-pod snapshot, the whole CLI call (reading, the cycle, writing).
snapshot=$(mktemp)
node scripts/schedule-snapshot.mjs > "$snapshot"
for _ in $(seq "${1:-3}"); do
  start=$(date +%s%N)
  build/cli/gpuscale schedule "$snapshot" > /dev/null
  echo "native: one scheduling cycle, 1,000 nodes, 10,000 pods (gpuscale schedule): $(( ($(date +%s%N) - start) / 1000000 )) ms"
done
rm -f "$snapshot"
# Exercise 4's grid: its first grade of a variant runs all 36 pairs (seed 1 prefill-heavy, 3 decode-heavy).
for seed in 1 3; do
  for _ in $(seq "${1:-3}"); do
    start=$(date +%s%N)
    echo '{"prefill": "queue_depth", "decode": "kv_cache"}' | build/cli/gpuscale grade 4 - --seed "$seed" > /dev/null
    echo "native: exercise-4 grid, seed $seed (gpuscale grade, 36 runs): $(( ($(date +%s%N) - start) / 1000000 )) ms"
  done
done
# The plan designer on the three example inputs (the whole CLI call).
for f in docs/examples/plan-small-cluster.yaml docs/examples/plan-405b-spot.yaml docs/examples/plan-disaggregated.yaml; do
  start=$(date +%s%N)
  build/cli/gpuscale plan "$f" > /dev/null
  echo "native: plan $f (gpuscale plan): $(( ($(date +%s%N) - start) / 1000000 )) ms"
done
node scripts/bench-wasm.mjs build-wasm/site "${1:-3}"
node scripts/bench-browser.mjs build-wasm/site "${1:-3}"
