#!/usr/bin/env bash
# Quick start, command 1: install what is missing, build everything, serve the lab on 127.0.0.1.
# Usage: bash scripts/lab.sh [PORT]   (default 8000)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
port="${1:-8000}"
echo "GPU Autoscaling Lab: http://127.0.0.1:${port}/  (Ctrl-C stops the server)"
exec python3 -m http.server "$port" --bind 127.0.0.1 -d build-wasm/site
