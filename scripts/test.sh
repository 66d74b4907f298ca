#!/usr/bin/env bash
# Quick start, command 2: every test layer. Installs and builds first if needed (scripts/setup.sh).
#   1. Catch2, native (ctest --test-dir build)
#   2. Catch2 compiled to WASM, run under node (ctest --test-dir build-wasm)
#   3. node --test: WASM determinism vs native, bad input, the exercise CLI/WASM agreement
#   4. node --test: the real page in headless Chromium (playwright-core)
#   5. fuzzing: the libFuzzer targets (clang, ASan + UBSan, build-fuzz/) replay their regression inputs
#      and fuzz 30 s each (scripts/fuzz.sh, docs/fuzzing.md)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
echo "== Catch2 (native)"
ctest --preset native
echo "== Catch2 (WASM under node)"
ctest --preset wasm
echo "== node: WASM module, determinism, bad input, browser"
node --test --test-concurrency=1 tests/*.test.mjs
echo "== fuzzing: libFuzzer + ASan + UBSan, 30 s per target"
bash scripts/fuzz.sh 30
