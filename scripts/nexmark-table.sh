#!/usr/bin/env bash
# Runs the Nexmark benchmark the way the README's table was measured and
# prints the table's rows: for each query, the median of RUNS runs (by
# events/s) of `sluice bench nexmark` over EVENTS events, and for q0, q1,
# q2, q5 and q7 the engine's CPU per event over the hand-written floor's
# (bench/nexmarkfloor, median of RUNS runs too). Run it on an otherwise idle
# machine: wall-clock figures are only as good as the machine is quiet.
#
#	scripts/nexmark-table.sh                      # q0..q22, 1M events, 3 runs
#	QUERIES="q0 q1 q2" EVENTS=10000000 scripts/nexmark-table.sh
set -euo pipefail
cd "$(dirname "$0")/.."

QUERIES=${QUERIES:-"q0 q1 q2 q3 q4 q5 q6 q7 q8 q9 q10 q11 q12 q13 q14 q15 q16 q17 q18 q19 q20 q21 q22"}
EVENTS=${EVENTS:-1000000}
RUNS=${RUNS:-3}
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -ldflags "-X sluice/storage.buildStamp=$(git rev-parse --short=12 HEAD)" -o "$bin/sluice" ./cmd/sluice
go build -o "$bin/floor" ./bench/nexmarkfloor

# median CMD...: runs CMD RUNS times and prints the result line of the run
# with the median events/s.
median() {
	for _ in $(seq "$RUNS"); do
		"$@" 2>/dev/null | grep '^query='
	done | sort -t= -k5 -n | sed -n "$(((RUNS + 1) / 2))p"
}
field() { tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"; }
commas() { sed ':a;s/\B[0-9]\{3\}\>/,&/;ta' <<<"$1"; }

declare -A target=([q0]=1,000,000 [q1]=1,000,000 [q2]=1,000,000 [q10]=1,000,000 [q14]=1,000,000
	[q21]=1,000,000 [q22]=1,000,000 [q3]=500,000 [q8]=500,000 [q20]=500,000 [q4]=200,000
	[q5]=200,000 [q7]=200,000 [q9]=200,000 [q15]=200,000 [q16]=200,000 [q17]=200,000
	[q18]=200,000 [q19]=200,000)
echo "| query | events/s | CPU-s per 1M events | peak RSS MiB (anonymous) | target events/s | CPU ratio to the hand-written floor |"
echo "|---|---|---|---|---|---|"
for q in $QUERIES; do
	line=$(median "$bin/sluice" bench nexmark --query "$q" --events "$EVENTS")
	eps=$(field "$line" events_per_sec)
	cpu=$(field "$line" cpu_seconds_per_million)
	rss=$(field "$line" peak_rss_mib)
	anon=$(field "$line" peak_anon_mib)
	[ -z "$anon" ] || rss="$rss (anon $anon)"
	ratio="—"
	case $q in
	q0 | q1 | q2 | q5 | q7)
		fl=$(median "$bin/floor" --query "$q" --events "$EVENTS")
		ratio=$(awk -v a="$cpu" -v b="$(field "$fl" cpu_seconds_per_million)" 'BEGIN { printf "%.0f× (floor %.3f)", a / b, b }')
		;;
	esac
	name=$q
	[ "$EVENTS" = 1000000 ] || name="$q ($((EVENTS / 1000000))M events)"
	printf '| %s | %s | %.2f | %s | %s | %s |\n' "$name" "$(commas "$eps")" "$cpu" "$rss" "${target[$q]:-—}" "$ratio"
done
