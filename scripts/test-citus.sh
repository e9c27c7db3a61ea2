#!/usr/bin/env bash
# `npm run test:citus`: Tessera's suites on a real Citus cluster (jest.citus.config.js).
#   - CITUS_URL set: the cluster whose coordinator it names (docs/SCALING.md, "Citus").
#   - CITUS_URL unset, and the Citus scripts beside the checkout (../shared/citus: install.sh and
#     cluster.sh; CITUS_SCRIPTS names another place): installs Citus with them, starts a three-node
#     cluster of this run's own (CITUS_BASEPORT, default 9800, and the two ports above it; its data
#     in a temporary folder), runs the suites on it and stops it — the one place the repository
#     installs anything from outside itself, and only where those scripts are present.
#   - neither: the suites report their skip (test/citus/cluster.citus.ts).
# Arguments go to Jest. Writes test-results/jest-citus.json.
set -uo pipefail
cd "$(dirname "$0")/.."
jest=(npx jest --config jest.citus.config.js --json --outputFile=test-results/jest-citus.json "$@")

if [ -n "${CITUS_URL:-}" ]; then
  exec "${jest[@]}"
fi
scripts="${CITUS_SCRIPTS:-$PWD/../shared/citus}"
if [ ! -x "$scripts/install.sh" ] || [ ! -x "$scripts/cluster.sh" ]; then
  echo "test:citus: CITUS_URL is not set and no Citus scripts at $scripts: the suites report their skip" >&2
  exec "${jest[@]}"
fi
base="${CITUS_BASEPORT:-9800}"
dir=$(mktemp -d /tmp/tessera-citus-XXXXXX)
chmod 755 "$dir" # the cluster's servers run as the OS user postgres
stop() { "$scripts/cluster.sh" stop "$dir/cluster" "$base" >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap stop EXIT
"$scripts/install.sh" >/dev/null || { echo "test:citus: could not install Citus with $scripts/install.sh" >&2; exit 1; }
url=$("$scripts/cluster.sh" start "$dir/cluster" "$base" | tail -n 1) || { echo "test:citus: could not start the Citus cluster on ports $base-$((base + 2))" >&2; exit 1; }
echo "test:citus: a cluster of this run's own at $url" >&2
CITUS_URL="$url" "${jest[@]}"
