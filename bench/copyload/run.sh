#!/usr/bin/env bash
# COPY FROM speed: Sluice against the machine's PostgreSQL (README, "COPY FROM speed").
#
#   bench/copyload/run.sh [ROWS] [ROUNDS]      (defaults 1000000 and 5)
#
# Generates one CSV of ROWS rows (id BIGINT PRIMARY KEY, customer TEXT,
# amount NUMERIC(12,2), qty INT, ts TIMESTAMP, note TEXT; one note in ten
# quoted with a comma, one in ten empty) and loads it with psql's \copy,
# ROUNDS interleaved rounds of Sluice then PostgreSQL (127.0.0.1:5432, db
# test), each into a fresh table (Sluice: a fresh server and data
# directory). Per run it prints rows/s from the \copy's own time (psql
# \timing: from the COPY statement to its acknowledgement, durable in
# both), checks the row count (SELECT count(*) after it), and the peak RSS
# (VmHWM) of the process that loaded it (the sluice server, the PostgreSQL
# backend) right after the \copy. Then the medians.
set -euo pipefail
ROWS=${1:-1000000}
ROUNDS=${2:-5}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WORK=$(mktemp -d /tmp/copyload.XXXXXX)
SLUICE_PID=
cleanup() {
	if [ -n "$SLUICE_PID" ]; then kill "$SLUICE_PID" 2>/dev/null || true; wait "$SLUICE_PID" 2>/dev/null || true; fi
	psql -qX -h 127.0.0.1 -p 5432 -d test -c "DROP TABLE IF EXISTS copyload_bench" >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT

(cd "$ROOT" && go build -o "$WORK/sluice" ./cmd/sluice)
CSV=$WORK/data.csv
awk -v n="$ROWS" 'BEGIN {
	print "id,customer,amount,qty,ts,note"
	base = 1704067200  # 2024-01-01 00:00:00 UTC
	for (i = 1; i <= n; i++) {
		note = "ok"; if (i % 10 == 3) note = "\"late, again\""; else if (i % 10 == 7) note = ""
		printf "%d,customer_%d,%d.%02d,%d,%s,%s\n", i, i % 5000, i % 100000, i % 100, i % 50,
			strftime("%Y-%m-%d %H:%M:%S", base + i, 1), note
	}
}' >"$CSV"
DDL="CREATE TABLE copyload_bench (id BIGINT PRIMARY KEY, customer TEXT, amount NUMERIC(12,2), qty INT, ts TIMESTAMP, note TEXT)"

# load PORT USER DB [pg]: prints the \copy's milliseconds and writes the
# peak RSS (KiB) of the loading process, read right after the \copy, to
# $WORK/hwm: the sluice server ($PGPID), or with pg the session's backend.
load() {
	local port=$1 user=$2 db=$3 pg=${4:-}
	local pid=''
	if [ -n "$pg" ]; then
		pid='SELECT pg_backend_pid() AS pid \gset
\setenv PGPID :pid'
	fi
	local hwm="\\! awk '/^VmHWM:/ {print \$2}' /proc/\$PGPID/status >$WORK/hwm"
	psql -X -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U "$user" -d "$db" >"$WORK/out" 2>&1 <<EOF
$DDL;
$pid
\\timing on
\\copy copyload_bench FROM '$CSV' WITH (FORMAT csv, HEADER)
\\timing off
$hwm
SELECT count(*) AS n FROM copyload_bench;
EOF
	local ms n
	ms=$(grep -m1 '^Time: ' "$WORK/out" | awk '{print $2}')
	n=$(awk '/^ *[0-9]+ *$/ {print $1; exit}' "$WORK/out")
	if [ -z "$ms" ] || [ "$n" != "$ROWS" ]; then
		echo "load on port $port failed:" >&2; cat "$WORK/out" >&2; exit 1
	fi
	echo "$ms"
}

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

declare -a S_RATE P_RATE S_RSS P_RSS
for r in $(seq 1 "$ROUNDS"); do
	# Sluice: a fresh server and data directory.
	port=$(freeport)
	rm -rf "$WORK/data"
	"$WORK/sluice" --listen "127.0.0.1:$port" --data-dir "$WORK/data" >"$WORK/sluice.log" 2>&1 &
	SLUICE_PID=$!
	for _ in $(seq 1 100); do
		psql -qX -h 127.0.0.1 -p "$port" -U sluice -d sluice -c 'SELECT 1' >/dev/null 2>&1 && break
		sleep 0.1
	done
	ms=$(PGPID=$SLUICE_PID load "$port" sluice sluice)
	rss=$(awk '{printf "%.0f", $1/1024}' "$WORK/hwm")
	kill "$SLUICE_PID"; wait "$SLUICE_PID" 2>/dev/null || true; SLUICE_PID=
	rm -rf "$WORK/data"
	S_RATE+=("$(awk -v n="$ROWS" -v ms="$ms" 'BEGIN {printf "%.0f", n / (ms / 1000)}')"); S_RSS+=("$rss")
	echo "round $r: sluice   ${S_RATE[-1]} rows/s (${ms} ms), peak RSS ${rss} MiB"

	# PostgreSQL: a fresh table; the peak RSS of the backend that loaded it.
	psql -qX -h 127.0.0.1 -p 5432 -d test -c "DROP TABLE IF EXISTS copyload_bench" >/dev/null
	ms=$(load 5432 "$(id -un)" test pg)
	rss=$(awk '{printf "%.0f", $1/1024}' "$WORK/hwm")
	psql -qX -h 127.0.0.1 -p 5432 -d test -c "DROP TABLE copyload_bench" >/dev/null
	P_RATE+=("$(awk -v n="$ROWS" -v ms="$ms" 'BEGIN {printf "%.0f", n / (ms / 1000)}')"); P_RSS+=("$rss")
	echo "round $r: postgres ${P_RATE[-1]} rows/s (${ms} ms), peak RSS ${rss} MiB (backend)"
done

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.0f\n", (a[NR/2]+a[NR/2+1])/2}'; }
echo "median: sluice $(median "${S_RATE[@]}") rows/s, postgres $(median "${P_RATE[@]}") rows/s"
echo "peak RSS (median): sluice $(median "${S_RSS[@]}") MiB, postgres backend $(median "${P_RSS[@]}") MiB"
