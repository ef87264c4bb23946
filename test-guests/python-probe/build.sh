#!/usr/bin/env bash
# Build the probe: ./build.sh [OUT] (default ../../target/guests/python-probe.wasm). Needs componentize-py.
# Built against the archived world 0.2.0 (wit/v0.2.0), not the current wit/: the probe stands for
# components built against an earlier contract, which the host keeps serving unchanged.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
out="${1:-$root/target/guests/python-probe.wasm}"
mkdir -p "$(dirname "$out")"
componentize-py -d "$root/wit/v0.2.0" -w strategy componentize app -p "$here" -o "$out"
echo "built $out ($(stat -c %s "$out") bytes)"
