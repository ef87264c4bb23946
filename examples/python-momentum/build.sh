#!/usr/bin/env bash
# Build this strategy into a component: ./build.sh [OUT] (default ../../target/guests/python-momentum.wasm).
# Needs componentize-py (pip install componentize-py, or pip install "../../sdk-python[build]").
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/target/guests/python-momentum.wasm}"
mkdir -p "$(dirname "$out")"
# -p: where Python modules are found (this directory and the SDK's sources, bundled into the
# component); the world comes from the repository's WIT.
componentize-py -d "$root/wit" -w strategy componentize app \
    -p "$here" -p "$root/sdk-python/src" -o "$out"
echo "built $out ($(stat -c %s "$out") bytes)"
