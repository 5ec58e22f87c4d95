#!/usr/bin/env bash
# Run the server integration tests N times in a row (default 50) and count failures, and in particular
# libzmq assertion aborts (issue 12: test/integration/server.test.ts once aborted in pipe.cpp:355).
# Not part of `make test` (it takes a while). Usage: scripts/reliability/integration-loop.sh [N] [TEST_FILE...]
# Prints one JSON line; the logs of failed runs are kept in the directory it names. Exit 0 when all passed.
set -u
cd "$(dirname "$0")/../.."
n="${1:-50}"
shift || true
files=("$@")
[ ${#files[@]} -eq 0 ] && files=(test/integration/server.test.ts)
logs="$(mktemp -d -t ycgym-loop-XXXXXX)"
pass=0
fail=0
aborts=0
start=$(date +%s)
for i in $(seq 1 "$n"); do
  log="$logs/run-$i.log"
  if npx vitest run "${files[@]}" >"$log" 2>&1; then
    pass=$((pass + 1))
    rm -f "$log"
  else
    fail=$((fail + 1))
    if grep -qE 'Assertion failed|pipe\.cpp|Worker exited unexpectedly|SIGABRT' "$log"; then aborts=$((aborts + 1)); fi
  fi
  echo "[loop] run $i/$n: $pass passed, $fail failed ($aborts aborts)" >&2
done
echo "{\"runs\": $n, \"passed\": $pass, \"failed\": $fail, \"aborts\": $aborts, \"files\": \"${files[*]}\", \"seconds\": $(( $(date +%s) - start )), \"failed_logs\": \"$logs\"}"
[ "$fail" -eq 0 ]
