#!/usr/bin/env bash
# The test command: vet, then every test with the race detector, including
# the end-to-end suites in tests/ (logic tests over the wire in both
# protocols, psql, kill -9 crash recovery). It starts the machine's
# PostgreSQL and Redis if they are down (the suites that use them fail
# loudly if they cannot).
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null || { echo "go is not installed" >&2; exit 1; }

if command -v pg_isready >/dev/null && ! pg_isready -q -h 127.0.0.1 -p 5432; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
fi
if command -v redis-cli >/dev/null && ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi

echo "== build"
go build ./...
echo "== vet"
go vet ./...
echo "== test (race)"
# The end-to-end suites run a sluice binary built with the race detector too.
export SLUICE_BUILD_FLAGS=${SLUICE_BUILD_FLAGS--race}
go test -race -count=1 -timeout 25m "$@" $(go list ./... | grep -v '^sluice/tests$')
# tests/ verbosely, so that the crash test's counts (kills=… mismatches=0)
# show; the full log is printed if anything fails.
log=$(mktemp)
if go test -race -count=1 -timeout 25m -v "$@" ./tests/ >"$log" 2>&1; then
  grep -E '^(--- |ok|PASS|FAIL)|kills=|pipeline=|differing=|nexmark:' "$log" | grep -v '^    --- PASS' || true
  rm -f "$log"
else
  cat "$log"
  rm -f "$log"
  exit 1
fi
