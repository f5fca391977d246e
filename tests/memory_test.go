package tests

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// idleRSSBound is the most an idle server (no jobs) may keep resident
// (issue 16: under 100 MiB).
const idleRSSBound = 100 << 10 // KiB

// TestMemoryIdleRSS starts a real server with no jobs and measures its
// resident memory after start-up, and checks the start-up log shows how
// --memory-limit is divided.
func TestMemoryIdleRSS(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	srv := StartServer(t, Options{PlainBuild: true, ExtraArgs: []string{"--memory-limit", "1GiB"}})
	conn := srv.Connect(t)
	ExecAll(t, conn, "CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)", "INSERT INTO t VALUES (1, 'a')")
	time.Sleep(3 * time.Second) // a few checkpoints
	rss := procStatusKiB(t, srv.Pid(), "VmRSS")
	t.Logf("idle VmRSS: %d MiB", rss>>10)
	if rss > idleRSSBound {
		t.Fatalf("idle server holds %d MiB resident, want under %d MiB", rss>>10, idleRSSBound>>10)
	}
	want := "memory limit 1024 MiB: Go heap soft limit 864 MiB (of which operator state cache 216 MiB, each sink's epochs awaiting delivery 6 MiB), store block cache 64 MiB, memtables 3 x 32 MiB"
	if !strings.Contains(srv.Logs(), want) {
		t.Fatalf("start-up log lacks the memory split %q:\n%s", want, srv.Logs())
	}
}

// TestMemoryLimitRefused: a limit below the minimum, or not a size, stops
// the server at start with the reason.
func TestMemoryLimitRefused(t *testing.T) {
	for _, c := range []struct{ arg, want string }{
		{"64MiB", "below the minimum of 128 MiB"},
		{"1XB", `unknown unit "XB"`},
	} {
		srv := NewServer(t, Options{ExtraArgs: []string{"--memory-limit", c.arg}})
		err := srv.Start()
		if err == nil {
			t.Fatalf("--memory-limit %s: the server started", c.arg)
		}
		if !strings.Contains(srv.Logs(), c.want) {
			t.Fatalf("--memory-limit %s: log lacks %q:\n%s", c.arg, c.want, srv.Logs())
		}
	}
}

// TestMemoryGroupBySpills runs a real server under a small --memory-limit
// with a GROUP BY over far more groups than its state cache holds (400k
// groups; the 54 MiB cache of a 256 MiB limit holds some 150,000): the
// aggregation evicts groups to the store and reads them back when their
// second row comes. The view must equal the recomputation exactly, and the
// server's peak resident memory stay under groupBySpillRSSBound.
func TestMemoryGroupBySpills(t *testing.T) {
	longMemoryTest(t, "aggregates 400k groups")
	const (
		rows   = 600_000
		groups = 400_009 // id % groups: ids above it revisit evicted groups
	)
	srv := StartServer(t, Options{PlainBuild: true, ExtraArgs: []string{"--memory-limit", "256MiB"}})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		fmt.Sprintf(`CREATE SOURCE g (id BIGINT) WITH (connector = 'datagen',
			fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '%d',
			datagen.rows.per.second = '0')`, rows),
		fmt.Sprintf(`CREATE MATERIALIZED VIEW v AS SELECT id %% %d AS k, count(*) AS c, sum(id) AS s, max(id) AS m FROM g GROUP BY id %% %d`, groups, groups))
	ctx := context.Background()
	elapsed := awaitQuery(t, conn, 8*time.Minute, 2*time.Second, fmt.Sprintf("%d rows", rows),
		"SELECT coalesce(sum(c), 0) || ' rows' FROM v")
	// The recomputation: group k holds the ids k, k+groups, … up to rows.
	var wantTwo, wantS, wantM int64
	for k := int64(0); k < groups; k++ {
		var s, m int64
		for id := k; id <= rows; id += groups {
			if id > 0 {
				s, m = s+id, id
			}
		}
		if k+groups <= rows && k > 0 {
			wantTwo++
		}
		wantS += s
		wantM += m
	}
	want := fmt.Sprintf("%d %d %d %d %d", groups, rows, wantTwo, wantS, wantM)
	var n, c, two, s, m int64
	if err := conn.QueryRow(ctx, "SELECT count(*), sum(c), count(*) FILTER (WHERE c = 2), sum(s)::bigint, sum(m)::bigint FROM v").Scan(&n, &c, &two, &s, &m); err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%d %d %d %d %d", n, c, two, s, m)
	if got != want {
		t.Fatalf("view v: groups, rows, groups of 2, sum, sum of max = %s; want %s", got, want)
	}
	var k7 string
	if err := conn.QueryRow(ctx, "SELECT c || ' ' || s || ' ' || m FROM v WHERE k = 7").Scan(&k7); err != nil {
		t.Fatal(err)
	}
	if w := fmt.Sprintf("2 %d %d", 7+7+groups, 7+groups); k7 != w {
		t.Fatalf("group 7: %s, want %s", k7, w)
	}
	peakWithin(t, srv, groupBySpillRSSBound, "%d rows into %d groups in %v (%.0f rows/s)", rows, groups, elapsed.Round(time.Second), rows/elapsed.Seconds())
}

// TestMemoryDistinctSpills: count(DISTINCT) over few groups with many
// values (Nexmark q16's shape) under --memory-limit 256MiB. 1,200,000 rows
// bring 600,000 values into 4 groups, each value twice, 600,000 rows
// apart: the sets' entries are evicted one by one, and the second
// occurrence of a value must find its evicted entry (a read back, or the
// count would be 1 too high).
func TestMemoryDistinctSpills(t *testing.T) {
	longMemoryTest(t, "counts 600k distinct values")
	const (
		rows   = 1_200_000
		values = 600_000 // v = id % values; id % 4 = v % 4, id % 3 = v % 3
	)
	srv := StartServer(t, Options{PlainBuild: true, ExtraArgs: []string{"--memory-limit", "256MiB"}})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		fmt.Sprintf(`CREATE SOURCE g (id BIGINT) WITH (connector = 'datagen',
			fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '%d',
			datagen.rows.per.second = '0')`, rows),
		fmt.Sprintf(`CREATE MATERIALIZED VIEW v AS SELECT id %% 4 AS k, count(*) AS c,
			count(DISTINCT id %% %d) AS d, count(DISTINCT id %% %d) FILTER (WHERE id %% 3 = 0) AS d3
			FROM g GROUP BY id %% 4`, values, values))
	ctx := context.Background()
	elapsed := awaitQuery(t, conn, 8*time.Minute, 2*time.Second, fmt.Sprintf("%d rows", rows),
		"SELECT coalesce(sum(c), 0) || ' rows' FROM v")
	rs, err := conn.Query(ctx, "SELECT k, c, d, d3 FROM v ORDER BY k")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rs.Next() {
		var k, c, d, d3 int64
		if err := rs.Scan(&k, &c, &d, &d3); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %d %d %d", k, c, d, d3))
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	// Each group holds 300,000 rows, the 150,000 values v with v % 4 = k,
	// of which 50,000 have v % 3 = 0.
	want := []string{"0 300000 150000 50000", "1 300000 150000 50000", "2 300000 150000 50000", "3 300000 150000 50000"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("view v:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	peakWithin(t, srv, distinctSpillRSSBound, "%d rows, %d distinct values in 4 groups in %v (%.0f rows/s)", rows, values, elapsed.Round(time.Second), rows/elapsed.Seconds())
}

// TestMemoryExtremesSpill runs a view of min and max over a table (its
// input has retractions, so each group keeps the multiset of its values)
// under --memory-limit 256MiB: 1,200,000 rows in 4 groups, then deletes
// of the largest and the smallest twelfth of them, which move every
// extreme into values that were evicted to the store. Each min and max
// must be exact, and the multisets (about 500 MB held whole) must spill
// (exec/ops/aggextreme.go).
func TestMemoryExtremesSpill(t *testing.T) {
	longMemoryTest(t, "loads 1.2M rows")
	const (
		rows  = 1_200_000
		chunk = 100_000 // rows per INSERT … SELECT (statement_mem at this limit)
		cut   = rows / 12
	)
	srv := StartServer(t, Options{PlainBuild: true, ExtraArgs: []string{"--memory-limit", "256MiB"}})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE t (id BIGINT, s TEXT)`,
		`CREATE MATERIALIZED VIEW v AS SELECT id % 4 AS k, count(*) AS c, min(id) AS mn, max(id) AS mx,
			min(s) AS smn, max(s) AS smx FROM t GROUP BY id % 4`)
	start := time.Now()
	for i := 0; i < rows; i += chunk {
		ExecAll(t, conn, fmt.Sprintf(`INSERT INTO t SELECT g, 'v' || (g + 10000000) FROM generate_series(%d, %d) g`, i+1, i+chunk))
	}
	awaitQuery(t, conn, 8*time.Minute, time.Second, fmt.Sprintf("%d rows", rows), "SELECT coalesce(sum(c), 0) || ' rows' FROM v")
	loaded := time.Since(start)
	ExecAll(t, conn, fmt.Sprintf(`DELETE FROM t WHERE id > %d`, rows-cut), fmt.Sprintf(`DELETE FROM t WHERE id <= %d`, cut))
	awaitQuery(t, conn, 8*time.Minute, time.Second, fmt.Sprintf("%d rows", rows-2*cut), "SELECT coalesce(sum(c), 0) || ' rows' FROM v")
	rs, err := conn.Query(context.Background(), "SELECT k, c, mn, mx, smn, smx FROM v ORDER BY k")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rs.Next() {
		var k, c, mn, mx int64
		var smn, smx string
		if err := rs.Scan(&k, &c, &mn, &mx, &smn, &smx); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %d %d %d %s %s", k, c, mn, mx, smn, smx))
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	// Group k keeps the ids in (cut, rows-cut] with id % 4 = k.
	var want []string
	for k := int64(0); k < 4; k++ {
		mn, mx := int64(cut+1), int64(rows-cut)
		for mn%4 != k {
			mn++
		}
		for mx%4 != k {
			mx--
		}
		want = append(want, fmt.Sprintf("%d %d %d %d v%d v%d", k, (rows-2*cut)/4, mn, mx, mn+10000000, mx+10000000))
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Fatalf("view v:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	peakWithin(t, srv, extremesSpillRSSBound, "%d rows loaded in %v (%.0f rows/s), all done in %v", rows, loaded.Round(time.Second),
		rows/loaded.Seconds(), time.Since(start).Round(time.Second))
}

// extremesSpillRSSBound bounds TestMemoryExtremesSpill's peak RSS (README
// "Memory": the build that held the multisets whole peaked at 811–864
// MiB).
const extremesSpillRSSBound = 700 << 10 // KiB

// distinctSpillRSSBound bounds TestMemoryDistinctSpills' peak RSS (README
// "Memory" gives the figures).
const distinctSpillRSSBound = 480 << 10 // KiB

// longMemoryTest skips a memory test where it cannot read the peak RSS
// (/proc), or under -short (why says what it loads).
func longMemoryTest(t *testing.T, why string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if testing.Short() {
		t.Skip(why)
	}
}

// peakWithin logs what a memory test measured (format, args) with the
// server's peak RSS, and fails the test if that peak is above bound (KiB).
func peakWithin(t *testing.T, srv *Server, bound int64, format string, args ...any) {
	t.Helper()
	peak := procStatusKiB(t, srv.Pid(), "VmHWM")
	t.Logf(format+"; peak RSS %d MiB", append(args, peak>>10)...)
	if peak > bound {
		t.Fatalf("peak RSS %d MiB, want at most %d MiB", peak>>10, bound>>10)
	}
}

// awaitQuery polls query (one text value; no row reads as "") every
// interval until it returns want, and fails the test with the last value
// after within. It returns how long that took.
func awaitQuery(t *testing.T, conn *pgx.Conn, within, every time.Duration, want, query string, args ...any) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		var got string
		err := conn.QueryRow(context.Background(), query, args...).Scan(&got)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		if got == want {
			return time.Since(start)
		}
		if time.Since(start) > within {
			t.Fatalf("after %v %s gives %q, want %q", time.Since(start).Round(time.Second), query, got, want)
		}
		time.Sleep(every)
	}
}

// groupBySpillRSSBound bounds TestMemoryGroupBySpills' peak RSS: the 256
// MiB limit plus what the runtime and Pebble hold beyond it, plus the
// overshoot at full speed: state written by an epoch can be evicted only
// once the epoch commits, and in the first seconds, when the generator
// runs far ahead, the groups of the epochs in flight passed the limit
// (2026-12-05, idle machine: 392–423 MiB peak, live heap 296–324 MiB; at
// machine load 12–27: 264–274 MiB). README "Memory" states it.
const groupBySpillRSSBound = 480 << 10 // KiB

// TestMemoryJoinForgetsCounts runs a real server under the smallest
// --memory-limit with an inner join of two sources over 250,000 distinct
// keys each: its rows spill to the store, and then the row counts of the
// spilled keys too (exec/ops/join.go: a side that forgot its counts looks
// a key up in the store, unless an in-memory Bloom filter of the
// forgotten keys rules it out). The view must count every match exactly,
// and the peak resident memory stay under joinSpillRSSBound. (At this size
// the counts would fit under the Go limit too: 234 MiB peak with counts
// kept, 211 MiB forgotten; TestJoinForgetsSpilledCounts checks the bound
// on the counts themselves.)
func TestMemoryJoinForgetsCounts(t *testing.T) {
	longMemoryTest(t, "joins 250k keys")
	const rows = 250_000
	srv := StartServer(t, Options{PlainBuild: true, ExtraArgs: []string{"--memory-limit", "128MiB"}})
	conn := srv.Connect(t)
	src := func(name string) string {
		return fmt.Sprintf(`CREATE SOURCE %s (id BIGINT, pad TEXT) WITH (connector = 'datagen',
			fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '%d',
			fields.pad.length = '40', datagen.rows.per.second = '0')`, name, rows)
	}
	ExecAll(t, conn, src("a"), src("b"),
		`CREATE MATERIALIZED VIEW j AS SELECT count(*) AS n, sum(a.id) AS s FROM a JOIN b ON a.id = b.id + 1`)
	// Keys 2..rows match once each.
	want := fmt.Sprintf("%d %d", rows-1, int64(rows)*(rows+1)/2-1)
	elapsed := awaitQuery(t, conn, 5*time.Minute, time.Second, want, "SELECT coalesce(n || ' ' || s, '') FROM j")
	peakWithin(t, srv, joinSpillRSSBound, "2 x %d rows joined in %v (%.0f rows/s)", rows, elapsed.Round(time.Second), 2*rows/elapsed.Seconds())
}

// joinSpillRSSBound bounds TestMemoryJoinForgetsCounts' peak RSS: the 128
// MiB limit plus what the runtime and Pebble hold beyond it.
const joinSpillRSSBound = 280 << 10 // KiB

// TestMemoryTopNSpills runs a real server under a small --memory-limit
// with a deduplication (ROW_NUMBER() … WHERE rn = 1, the Top-N operator)
// over far more partitions than its state cache holds (200,003 keys of
// rows with 300-byte values): the operator evicts clean partitions to the
// store and reads one back when a later row of its key comes (ids above
// the key count revisit evicted keys). The view must hold exactly each
// key's latest row, and the peak resident memory stay under
// topNSpillRSSBound.
func TestMemoryTopNSpills(t *testing.T) {
	longMemoryTest(t, "deduplicates 200k keys")
	const (
		rows = 300_000
		keys = 200_003
	)
	srv := StartServer(t, Options{PlainBuild: true, ExtraArgs: []string{"--memory-limit", "256MiB"}})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		fmt.Sprintf(`CREATE SOURCE g (id BIGINT, pad TEXT) WITH (connector = 'datagen',
			fields.id.kind = 'sequence', fields.id.start = '1', fields.id.end = '%d',
			fields.pad.length = '300', datagen.rows.per.second = '0')`, rows),
		fmt.Sprintf(`CREATE MATERIALIZED VIEW v AS SELECT k, id, pad FROM (
			SELECT id %% %d AS k, id, pad, row_number() OVER (PARTITION BY id %% %d ORDER BY id DESC) AS rn FROM g) s
			WHERE rn = 1`, keys, keys))
	// The recomputation: key k's latest id is the largest id <= rows
	// with id % keys = k.
	var wantSum int64
	for k := int64(0); k < keys; k++ {
		id := k + (rows-k)/keys*keys
		wantSum += id
	}
	want := fmt.Sprintf("%d %d %d", keys, wantSum, rows-keys)
	ctx := context.Background()
	// (keys, sum of ids, revisited keys)
	elapsed := awaitQuery(t, conn, 6*time.Minute, 2*time.Second, want,
		"SELECT count(*) || ' ' || coalesce(sum(id), 0) || ' ' || count(*) FILTER (WHERE id > $1) FROM v", keys)
	var bad int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM v WHERE k <> id % $1 OR length(pad) <> 300", keys).Scan(&bad); err != nil {
		t.Fatal(err)
	}
	if bad != 0 {
		t.Fatalf("%d rows of v have another key's id or a cut value", bad)
	}
	peakWithin(t, srv, topNSpillRSSBound, "%d rows deduplicated into %d keys in %v (%.0f rows/s)", rows, keys, elapsed.Round(time.Second), rows/elapsed.Seconds())
}

// topNSpillRSSBound bounds TestMemoryTopNSpills' peak RSS: the 256 MiB
// limit, what the runtime and Pebble hold beyond it, and the state of
// the epochs in flight, which cannot be evicted before they commit
// (2026-12-06: 548 and 556 MiB with the spill; 795 and 830 MiB without).
const topNSpillRSSBound = 680 << 10 // KiB
