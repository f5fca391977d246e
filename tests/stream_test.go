package tests

// Results that stream: a SELECT over a large table sends its first rows
// before it has read the table, holds bounded memory in the server however
// large the result, and stops when cancelled. The assertions read the real
// server process's memory (/proc/PID/status), not the clock.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// streamRows is the size of the table the tests scan. Collected whole, as
// SELECT did before it streamed, its rows take about 700 bytes each in the
// server (rows, their encoded keys for consolidation, the result slice):
// some 280 MiB, above the bounds below.
const streamRows = 400_000

// Pid returns the process id of the running server (0 if none).
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.proc == nil {
		return 0
	}
	return s.mu.proc.cmd.Process.Pid
}

// procStatusKiB reads a field of /proc/PID/status in KiB (VmRSS, VmHWM).
func procStatusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading the server's memory: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			fs := strings.Fields(rest)
			n, err := strconv.ParseInt(fs[0], 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", field, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// bigTableServer starts a server holding table big with streamRows rows
// (id 1..n, v text, x float), restarted after the load so that its memory
// starts from the recovered state, not from what the load left behind.
func bigTableServer(t *testing.T) *Server {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if testing.Short() {
		t.Skip("loads a large table")
	}
	// A GC target of 25% (instead of sluice's 300%) keeps the heap close to
	// what is live, so that the peak memory shows what the server holds
	// rather than how much garbage it let pile up.
	s := StartServer(t, Options{Env: []string{"GOGC=25"}})
	conn := s.ConnectSimple(t)
	ExecAll(t, conn, `CREATE TABLE big (id BIGINT PRIMARY KEY, v TEXT, x DOUBLE PRECISION)`)
	const chunk = 100_000
	for lo := 1; lo <= streamRows; lo += chunk {
		ExecAll(t, conn, fmt.Sprintf(`INSERT INTO big SELECT g, 'row number ' || g, g * 0.5 FROM generate_series(%d, %d) AS g`, lo, lo+chunk-1))
	}
	ExecAll(t, conn, `FLUSH`)
	conn.Close(context.Background())
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStreamLargeScan(t *testing.T) {
	s := bigTableServer(t)
	pid := s.Pid()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := pgconn.Connect(ctx, s.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	base := procStatusKiB(t, pid, "VmRSS")

	// The first rows arrive while the scan has hardly begun: by then the
	// server's peak memory has grown by a small part of the result's size.
	rr := c.ExecParams(ctx, `SELECT * FROM big`, nil, nil, nil, nil)
	n := 0
	for n < 1000 && rr.NextRow() {
		n++
		if n == 1 {
			if got := string(rr.Values()[0]); got != "1" {
				t.Fatalf("first row id %s, want 1", got)
			}
		}
	}
	if n != 1000 {
		_, err := rr.Close()
		t.Fatalf("got %d rows, then %v", n, err)
	}
	// Measured: +5 MiB streaming; +239 MiB when the result was collected.
	const firstBound = 64 << 10 // KiB
	if grew := procStatusKiB(t, pid, "VmHWM") - base; grew > firstBound {
		t.Errorf("after the first rows the server's peak memory grew by %d MiB (bound %d MiB): the result was collected before it was sent",
			grew>>10, firstBound>>10)
	}

	// Read the rest: every row once, in key order, at bounded memory.
	var sum int64
	for rr.NextRow() {
		n++
		id, err := strconv.ParseInt(string(rr.Values()[0]), 10, 64)
		if err != nil || id != int64(n) {
			t.Fatalf("row %d has id %s", n, rr.Values()[0])
		}
		sum += id
	}
	tag, err := rr.Close()
	if err != nil {
		t.Fatal(err)
	}
	if n != streamRows || tag.String() != "SELECT "+strconv.Itoa(streamRows) {
		t.Fatalf("got %d rows, tag %q; want %d", n, tag, streamRows)
	}
	// Measured: +106 MiB streaming (the store's block cache fills too);
	// +279 MiB collected.
	const allBound = 200 << 10 // KiB
	if grew := procStatusKiB(t, pid, "VmHWM") - base; grew > allBound {
		t.Errorf("the whole scan grew the server's peak memory by %d MiB (bound %d MiB)", grew>>10, allBound>>10)
	}

	// LIMIT stops the scan; ORDER BY … LIMIT keeps a bounded heap.
	conn := s.ConnectSimple(t)
	res, err := QueryText(ctx, conn, `SELECT id, v FROM big WHERE id % 1000 = 7 LIMIT 3`)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Lines(), "|"); got != "7 row number 7|1007 row number 1007|2007 row number 2007" {
		t.Errorf("LIMIT: %s", got)
	}
	res, err = QueryText(ctx, conn, `SELECT id FROM big ORDER BY x DESC LIMIT 3 OFFSET 1`)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(res.Lines(), "|"); got != fmt.Sprintf("%d|%d|%d", streamRows-1, streamRows-2, streamRows-3) {
		t.Errorf("ORDER BY … LIMIT: %s", got)
	}
	if grew := procStatusKiB(t, pid, "VmHWM") - base; grew > allBound {
		t.Errorf("ORDER BY … LIMIT grew the server's peak memory by %d MiB (bound %d MiB)", grew>>10, allBound>>10)
	}
}

// TestStreamCancel cancels a large scan after its first rows: the client
// gets 57014 instead of the rest, and the connection serves the next query.
// A server that collected the result before sending it would have sent it
// all, since nothing is left to cancel by then.
func TestStreamCancel(t *testing.T) {
	s := bigTableServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, proto := range []string{"simple", "extended"} {
		c, err := pgconn.Connect(ctx, s.ConnString())
		if err != nil {
			t.Fatal(err)
		}
		var rr *pgconn.ResultReader
		var mrr *pgconn.MultiResultReader
		if proto == "simple" {
			mrr = c.Exec(ctx, `SELECT * FROM big`)
			if !mrr.NextResult() {
				t.Fatalf("%s: no result: %v", proto, mrr.Close())
			}
			rr = mrr.ResultReader()
		} else {
			rr = c.ExecParams(ctx, `SELECT * FROM big WHERE x >= $1`, [][]byte{[]byte("0")}, nil, nil, nil)
		}
		n := 0
		for n < 10 && rr.NextRow() {
			n++
		}
		if err := c.CancelRequest(ctx); err != nil {
			t.Fatal(err)
		}
		for rr.NextRow() {
			n++
		}
		_, err = rr.Close()
		if code := PgCode(err); code != "57014" {
			t.Fatalf("%s: after cancelling, %d rows and error %v (code %q), want 57014", proto, n, err, code)
		}
		if n >= streamRows {
			t.Fatalf("%s: a cancelled scan sent all %d rows", proto, n)
		}
		if mrr != nil {
			mrr.Close() // up to the simple query's ReadyForQuery
		}
		res := c.ExecParams(ctx, `SELECT count(*) FROM big WHERE id <= 10`, nil, nil, nil, nil).Read()
		if res.Err != nil || len(res.Rows) != 1 || string(res.Rows[0][0]) != "10" {
			t.Fatalf("%s: the connection after a cancel: %v %q", proto, res.Err, res.Rows)
		}
		c.Close(ctx)
	}
}
