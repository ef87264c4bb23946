#!/usr/bin/env bash
# Build the component: ./build.sh  ->  strategy.wasm
# Needs componentize-py: pip install componentize-py
set -euo pipefail
cd "$(dirname "$0")"
componentize-py -d wit -w strategy componentize app -p . -o strategy.wasm
echo "built strategy.wasm"
