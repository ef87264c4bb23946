#!/usr/bin/env bash
# Starts a throwaway Crucible server and runs the simnet conformance suites of the real Solana
# clients against it: @solana/web3.js + @solana/spl-token (conformance.mjs), then solana-py +
# solders (conformance.py). Exits non-zero if either suite has a failed step.
#
#   host/tests/simnet-clients/run.sh target/debug/crucible
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 <path-to-crucible-binary>" >&2
  exit 2
fi
binary=$(realpath "$1")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"

# Transactions finalize 1.5 s after they execute, so the finalized-commitment steps are quick.
# Rate limits off: the suites airdrop and send far faster than a person would.
CRUCIBLE_SIMNET_FINALITY_MS=1500 "$binary" serve \
  --data-dir "$tmp/data" --bind "127.0.0.1:$port" --rate-limits off \
  >"$tmp/server.log" 2>&1 &
server_pid=$!

server_failed() {
  echo "--- last lines of the server log ($1) ---" >&2
  tail -n 40 "$tmp/server.log" >&2
  exit 1
}

for _ in $(seq 1 120); do
  curl -sf "$base/api/health" >/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || server_failed "the server exited"
  sleep 0.5
done
curl -sf "$base/api/health" >/dev/null || server_failed "no /api/health after 60 s"
echo "# crucible serving on $base"

status=0
cd "$here"
if [[ -f package-lock.json ]]; then
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
else
  npm install --no-audit --no-fund --loglevel=error >/dev/null
fi
echo "# @solana/web3.js + @solana/spl-token"
SIMNET_URL="$base/simnet/rpc" node conformance.mjs || status=1

python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r requirements.txt
echo "# solana-py + solders"
SIMNET_URL="$base/simnet/rpc" python3 conformance.py || status=1

if [[ $status -ne 0 ]]; then
  echo "--- last lines of the server log ---"
  tail -n 20 "$tmp/server.log"
fi
exit $status
