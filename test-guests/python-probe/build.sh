#!/usr/bin/env bash
# Build the probe: ./build.sh [OUT] (default ../../target/guests/python-probe.wasm). Needs componentize-py.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/target/guests/python-probe.wasm}"
mkdir -p "$(dirname "$out")"
componentize-py -d "$root/wit" -w strategy componentize app -p "$here" -o "$out"
echo "built $out ($(stat -c %s "$out") bytes)"
