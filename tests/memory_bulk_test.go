package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// bulkCopyRSSBound bounds TestMemoryBulkLoad's peak RSS for its COPY of a
// million rows with the server's default flags. Before a table's
// materialization spilled a large epoch (and its source read bulk chunks
// from the log as the dataflow took them) the same load peaked at about
// 850 MiB; README "Memory" has the figures after.
const bulkCopyRSSBound = 480 << 10 // KiB

// bulkInsertRSSBound bounds the peak RSS of TestMemoryBulkLoad's four
// INSERT … SELECT statements of 500,000 rows each (before: about 2 GiB).
const bulkInsertRSSBound = 900 << 10 // KiB

// csvRows streams the CSV of rows 1..n of (id BIGINT, customer TEXT, qty
// INT, note TEXT), one note in ten quoted with a comma in it.
func csvRows(n int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		w := bufio.NewWriterSize(pw, 1<<16)
		for i := 1; i <= n; i++ {
			note := "ok"
			if i%10 == 3 {
				note = `"late, again"`
			}
			fmt.Fprintf(w, "%d,customer_%d,%d,%s\n", i, i%5000, i%50, note)
		}
		pw.CloseWithError(w.Flush())
	}()
	return pr
}

// TestMemoryBulkLoad loads a million rows with one COPY into a keyed table,
// then two million with four INSERT … SELECT statements into a keyless
// one, each under a view, on a real server with its default flags. Each
// statement enters the table's dataflow in one epoch: its rows must reach
// the views exactly (counts and sums), while the server's peak resident
// memory stays bounded (the materializations spill such an epoch to disk
// and the table sources read its chunks from the log as they go).
func TestMemoryBulkLoad(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if testing.Short() {
		t.Skip("loads three million rows")
	}
	const rows = 1_000_000
	srv := StartServer(t, Options{PlainBuild: true})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		"CREATE TABLE tablemem20_c (id BIGINT PRIMARY KEY, customer TEXT, qty INT, note TEXT)",
		"CREATE MATERIALIZED VIEW tablemem20_cv AS SELECT count(*) AS n, sum(id) AS s, sum(qty) AS q, count(DISTINCT customer) AS c FROM tablemem20_c")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	tag, err := conn.PgConn().CopyFrom(ctx, csvRows(rows), "COPY tablemem20_c FROM STDIN WITH (FORMAT csv)")
	if err != nil {
		t.Fatalf("COPY: %s", describeErr(err))
	}
	if tag.RowsAffected() != rows {
		t.Fatalf("COPY tag %q, want %d rows", tag, rows)
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %s", sql, describeErr(err))
		}
	}
	exec("FLUSH")
	elapsed := time.Since(start)
	var wantQ int64
	for i := int64(1); i <= rows; i++ {
		wantQ += i % 50
	}
	checkRow(t, conn, "SELECT count(*) FROM tablemem20_c", fmt.Sprint(rows))
	checkRow(t, conn, "SELECT n || ' ' || s || ' ' || q || ' ' || c FROM tablemem20_cv",
		fmt.Sprintf("%d %d %d %d", rows, int64(rows)*(rows+1)/2, wantQ, 5000))
	peak := procStatusKiB(t, srv.Pid(), "VmHWM")
	t.Logf("COPY of %d rows and its checkpoint in %v (%.0f rows/s); peak RSS %d MiB", rows, elapsed.Round(time.Second), rows/elapsed.Seconds(), peak>>10)
	if peak > bulkCopyRSSBound {
		t.Fatalf("peak RSS %d MiB after the COPY, want at most %d MiB", peak>>10, bulkCopyRSSBound>>10)
	}

	const stmts, per = 4, 500_000
	ExecAll(t, conn,
		"CREATE TABLE tablemem20_i (id BIGINT, v TEXT)",
		"CREATE MATERIALIZED VIEW tablemem20_iv AS SELECT count(*) AS n, sum(id) AS s, sum(length(v)) AS l FROM tablemem20_i")
	start = time.Now()
	for i := 0; i < stmts; i++ {
		exec(fmt.Sprintf("INSERT INTO tablemem20_i SELECT g + %d, 'row ' || g FROM generate_series(1, %d) g", i*per, per))
	}
	exec("FLUSH")
	elapsed = time.Since(start)
	n := int64(stmts * per)
	var wantL int64 // the lengths of 'row 1' … 'row 500000', four times
	for g := 1; g <= per; g++ {
		wantL += int64(4 + len(fmt.Sprint(g)))
	}
	checkRow(t, conn, "SELECT n || ' ' || s || ' ' || l FROM tablemem20_iv", fmt.Sprintf("%d %d %d", n, n*(n+1)/2, stmts*wantL))
	peak = procStatusKiB(t, srv.Pid(), "VmHWM")
	t.Logf("%d INSERT … SELECT of %d rows and their checkpoints in %v (%.0f rows/s); peak RSS %d MiB", stmts, per, elapsed.Round(time.Second), float64(n)/elapsed.Seconds(), peak>>10)
	if peak > bulkInsertRSSBound {
		t.Fatalf("peak RSS %d MiB after the INSERTs, want at most %d MiB", peak>>10, bulkInsertRSSBound>>10)
	}
}

// checkRow fails unless query's single value, as text, is want.
func checkRow(t *testing.T, conn *pgx.Conn, query, want string) {
	t.Helper()
	if got := queryOne(t, conn, query); got != want {
		t.Fatalf("%s: %q, want %q", query, got, want)
	}
}
