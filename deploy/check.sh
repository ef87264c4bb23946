#!/usr/bin/env bash
# CI has no container runtime, so it cannot build the image; it checks instead that the files in
# deploy/ still describe this repository: the binary the Dockerfile copies is the one
# `cargo build --release -p crucible` makes, and the unit and the image run it the same way.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() { echo "deploy/check.sh: $*" >&2; exit 1; }

bin_name="$(cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
meta = json.load(sys.stdin)
host = next(p for p in meta["packages"] if p["name"] == "crucible")
print(next(t["name"] for t in host["targets"] if "bin" in t["kind"]))')"
target_dir="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys; print(json.load(sys.stdin)["target_directory"])')"
[ "$target_dir" = "$PWD/target" ] || fail "the target dir is $target_dir, the Dockerfile expects ./target"

copied="$(sed -n 's/^COPY --from=build \([^ ]*\) .*/\1/p' deploy/Dockerfile)"
[ "$copied" = "/src/target/release/$bin_name" ] || fail "the Dockerfile copies $copied, cargo builds /src/target/release/$bin_name"
grep -q "cargo build --release --locked -p crucible --bin $bin_name" deploy/Dockerfile || fail "the Dockerfile does not build the $bin_name binary"
grep -q '^ENTRYPOINT \["/usr/local/bin/'"$bin_name"'"\]' deploy/Dockerfile || fail "the image's entrypoint is not /usr/local/bin/$bin_name"
grep -q "^ExecStart=/usr/local/bin/$bin_name serve$" deploy/crucible.service || fail "the unit does not run /usr/local/bin/$bin_name serve"
grep -q 'curl -fsS http://127.0.0.1:8080/api/health' deploy/Dockerfile || fail "the healthcheck does not ask /api/health"
grep -q '"/api/health"' host/src/health.rs || fail "the server no longer answers /api/health"
grep -q '^USER crucible$' deploy/Dockerfile || fail "the image must not run as root"
if command -v systemd-analyze >/dev/null; then
    # The binary is not installed on the CI machine; everything else in the unit must parse.
    systemd-analyze verify deploy/crucible.service 2>&1 | grep -v -e 'EnvironmentFile' -e 'not executable' -e 'not found' || true
fi
echo "deploy/: the Dockerfile and the systemd unit match the binary cargo builds ($bin_name)"
