#!/usr/bin/env bash
# The test command: vet, then every test with the race detector, including
# the end-to-end suites in tests/ (logic tests over the wire in both
# protocols, psql, kill -9 crash recovery). It starts the machine's
# PostgreSQL and Redis if they are down (the suites that use them fail
# loudly if they cannot).
set -euo pipefail
cd "$(dirname "$0")/.."

# install_clients installs what the client matrix (tests/clients_*_test.go:
# psql, psycopg2, psycopg 3, SQLAlchemy 1.4 and 2, pgcli, pgjdbc, node-postgres) and
# the dashboard's browser test (tests/dashboard_test.go: Debian's chromium) need
# when it is missing, and does nothing (quickly) when it is all there. The
# tests fail, never skip, if a client is still missing.
install_clients() {
  local pkgs=() missing
  missing=$(/usr/bin/python3 - 2>/dev/null <<'PY' || echo "python3 python3-psycopg2 python3-psycopg python3-sqlalchemy pgcli"
import importlib.util as u
mods = {"psycopg2": "python3-psycopg2", "psycopg": "python3-psycopg", "sqlalchemy": "python3-sqlalchemy", "pgcli": "pgcli"}
print(" ".join(pkg for mod, pkg in mods.items() if u.find_spec(mod) is None))
PY
)
  pkgs+=($missing)
  command -v psql >/dev/null || pkgs+=(postgresql-client)
  [ -f /usr/share/java/postgresql.jar ] || pkgs+=(libpostgresql-jdbc-java)
  command -v javac >/dev/null || pkgs+=(default-jdk-headless)
  command -v node >/dev/null || pkgs+=(nodejs)
  command -v npm >/dev/null || pkgs+=(npm)
  command -v chromium >/dev/null || command -v chromium-browser >/dev/null || pkgs+=(chromium)
  if [ ${#pkgs[@]} -gt 0 ]; then
    echo "== installing ${pkgs[*]}"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    { $sudo apt-get -o DPkg::Lock::Timeout=300 update -qq &&
      DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=300 install -y -qq \
        --no-install-recommends "${pkgs[@]}"; } || echo "installing ${pkgs[*]} failed: the client tests will fail" >&2
  fi
  # node-postgres, where TestClientNodePostgres looks for it.
  local node_dir=${SLUICE_CLIENT_CACHE:-$HOME/.cache/sluice-clients}/node
  if [ ! -f "$node_dir/node_modules/pg/package.json" ] && command -v npm >/dev/null; then
    echo "== installing node-postgres (pg@8) into $node_dir"
    mkdir -p "$node_dir"
    npm install --no-audit --no-fund --prefix "$node_dir" pg@8 >/dev/null ||
      echo "npm install pg@8 failed: the client tests will fail" >&2
  fi
  # SQLAlchemy 2 (Debian 12 has 1.4), where TestClientSQLAlchemy2 looks for
  # it; the script does nothing when it is there.
  scripts/install-sqlalchemy2.sh "${SLUICE_CLIENT_CACHE:-$HOME/.cache/sluice-clients}/sqlalchemy2" >/dev/null ||
    echo "installing SQLAlchemy 2 failed: TestClientSQLAlchemy2 will fail" >&2
}

command -v go >/dev/null || { echo "go is not installed" >&2; exit 1; }

if command -v pg_isready >/dev/null && ! pg_isready -q -h 127.0.0.1 -p 5432; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
fi
if command -v redis-cli >/dev/null && ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
fi

install_clients

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
  grep -E '^(--- |ok|PASS|FAIL)|kills=|pipeline=|differing=|nexmark:|battery: seed=.*statements=' "$log" | grep -v '^    --- PASS' || true
  rm -f "$log"
else
  cat "$log"
  rm -f "$log"
  exit 1
fi
