#!/usr/bin/env bash
# Installs what is missing (Debian packages, npm packages from the lock file), then builds the
# native CLI + tests (build/) and the WASM module + static site (build-wasm/site/).
# Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
# clang + libclang-rt-14-dev: the fuzz preset (libFuzzer, ASan, UBSan; scripts/fuzz.sh).
for pkg in emscripten nlohmann-json3-dev catch2 libyaml-cpp-dev chromium cmake g++ python3 clang libclang-rt-14-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need_pkgs+=("$pkg")
done
command -v node >/dev/null 2>&1 || need_pkgs+=(nodejs npm)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "setup: installing ${need_pkgs[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci"
  npm ci --no-audit --no-fund >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
echo "setup: native build (build/)"
cmake --preset native >/dev/null
cmake --build --preset native -j"$jobs" >/dev/null
echo "setup: WASM build (build-wasm/)"
cmake --preset wasm >/dev/null
cmake --build --preset wasm -j"$jobs" >/dev/null
node scripts/assemble-site.mjs build-wasm/site
echo "setup: site assembled in build-wasm/site"
