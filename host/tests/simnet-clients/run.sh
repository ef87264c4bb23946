#!/usr/bin/env bash
# Starts a throwaway simnet and runs the conformance suites of the real Solana clients against
# it: @solana/web3.js + @solana/spl-token (conformance.mjs), then solana-py + solders
# (conformance.py). Exits non-zero if either suite has a failed step.
#
#   host/tests/simnet-clients/run.sh target/debug/crucible          # a Crucible server's /simnet/rpc
#   host/tests/simnet-clients/run.sh target/debug/crucible simnet   # `crucible simnet` alone, at /
set -euo pipefail

if [[ $# -lt 1 || $# -gt 2 || ( $# -eq 2 && $2 != serve && $2 != simnet ) ]]; then
  echo "usage: $0 <path-to-crucible-binary> [serve|simnet]" >&2
  exit 2
fi
binary=$(realpath "$1")
mode=${2:-serve}
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

# A free port whose successor is free too (`crucible simnet` serves PubSub there as well).
port=$(python3 -c '
import socket
while True:
    a = socket.socket(); a.bind(("127.0.0.1", 0)); port = a.getsockname()[1]
    b = socket.socket()
    try:
        b.bind(("127.0.0.1", port + 1))
    except OSError:
        continue
    print(port); break')
base="http://127.0.0.1:$port"

# Transactions finalize 1.5 s after they execute, so the finalized-commitment steps are quick.
if [[ $mode == serve ]]; then
  # Rate limits off: the suites airdrop and send far faster than a person would.
  CRUCIBLE_SIMNET_FINALITY_MS=1500 "$binary" serve \
    --data-dir "$tmp/data" --bind "127.0.0.1:$port" --rate-limits off \
    >"$tmp/server.log" 2>&1 &
  rpc="$base/simnet/rpc"
  ready() { curl -sf "$base/api/health" >/dev/null; }
else
  # The simnet on its own: no accounts, no scheduler, the ledger in memory.
  "$binary" simnet --bind "127.0.0.1:$port" --finality-ms 1500 >"$tmp/server.log" 2>&1 &
  rpc="$base"
  ready() {
    curl -sf -H 'content-type: application/json' \
      -d '{"jsonrpc":"2.0","id":1,"method":"getHealth"}' "$base/" | grep -q '"ok"'
  }
fi
server_pid=$!

server_failed() {
  echo "--- last lines of the server log ($1) ---" >&2
  tail -n 40 "$tmp/server.log" >&2
  exit 1
}

for _ in $(seq 1 120); do
  ready && break
  kill -0 "$server_pid" 2>/dev/null || server_failed "the server exited"
  sleep 0.5
done
ready || server_failed "not ready after 60 s"
echo "# crucible $mode: the simnet on $rpc"

status=0
cd "$here"
if [[ -f package-lock.json ]]; then
  npm ci --no-audit --no-fund --loglevel=error >/dev/null
else
  npm install --no-audit --no-fund --loglevel=error >/dev/null
fi
echo "# @solana/web3.js + @solana/spl-token"
SIMNET_URL="$rpc" node conformance.mjs || status=1

python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r requirements.txt
echo "# solana-py + solders"
SIMNET_URL="$rpc" python3 conformance.py || status=1

if [[ $status -ne 0 ]]; then
  echo "--- last lines of the server log ---"
  tail -n 20 "$tmp/server.log"
fi
exit $status
