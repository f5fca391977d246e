package tests

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// subRow is one row of a SUBSCRIBE: epoch, progress, diff and the view's
// columns as text.
type subRow struct {
	ts       int64
	progress bool
	diff     int64
	cols     string
}

func (r subRow) String() string {
	if r.progress {
		return fmt.Sprintf("progress@%d", r.ts)
	}
	return fmt.Sprintf("%+d %s", r.diff, r.cols)
}

// readSub reads a SUBSCRIBE … WITH (progress) from rows until a progress
// row at or after epoch min; it returns the data rows read, sorted within
// each epoch, and the progress epoch.
func readSub(t *testing.T, rows pgx.Rows, min int64) ([]subRow, int64) {
	t.Helper()
	var out []subRow
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		r := subRow{ts: vals[0].(int64), progress: vals[1].(bool)}
		if r.progress {
			if r.ts >= min {
				sortSub(out)
				return out, r.ts
			}
			continue
		}
		r.diff = vals[2].(int64)
		var parts []string
		for _, v := range vals[3:] {
			parts = append(parts, fmt.Sprint(v))
		}
		r.cols = strings.Join(parts, ",")
		out = append(out, r)
	}
	t.Fatalf("subscription ended: %v", rows.Err())
	return nil, 0
}

func sortSub(rs []subRow) {
	slices.SortFunc(rs, func(a, b subRow) int {
		if a.ts != b.ts {
			return int(a.ts - b.ts)
		}
		return strings.Compare(a.String(), b.String())
	})
}

func subStrings(rs []subRow) string {
	var s []string
	for _, r := range rs {
		s = append(s, r.String())
	}
	return strings.Join(s, "; ")
}

// committedEpoch waits for a write's epoch to commit (FLUSH) and returns
// nothing: a subscription's next progress row covers it.
func flush(t *testing.T, c *pgx.Conn) {
	t.Helper()
	if _, err := c.Exec(context.Background(), "FLUSH"); err != nil {
		t.Fatal(err)
	}
}

// TestSubscribePgx subscribes to a view over the extended protocol (pgx):
// the snapshot's exact rows, then INSERT, UPDATE and DELETE as +1/-1 at
// increasing epochs; then cancel ends it and no goroutine of it is left.
func TestSubscribePgx(t *testing.T) {
	httpAddr := FreeAddr(t)
	s := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond, ExtraArgs: []string{"--http", httpAddr}})
	ctx := context.Background()
	w := s.Connect(t)
	ExecAll(t, w,
		`CREATE TABLE sub_t (id BIGINT PRIMARY KEY, v TEXT)`,
		`INSERT INTO sub_t VALUES (1, 'a'), (2, 'b')`,
		`CREATE MATERIALIZED VIEW sub_mv AS SELECT id, v FROM sub_t WHERE id < 100`,
		`FLUSH`)

	sc := s.Connect(t)
	qctx, cancel := context.WithCancel(ctx)
	rows, err := sc.Query(qctx, `SUBSCRIBE sub_mv WITH (progress)`)
	if err != nil {
		t.Fatal(err)
	}
	fds := rows.FieldDescriptions()
	var names []string
	for _, f := range fds {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "mz_timestamp,mz_progressed,mz_diff,id,v" {
		t.Fatalf("columns %s", got)
	}
	snap, e0 := readSub(t, rows, 0)
	if got := subStrings(snap); got != "+1 1,a; +1 2,b" {
		t.Fatalf("snapshot: %s", got)
	}
	for _, r := range snap {
		if r.ts != e0 {
			t.Fatalf("snapshot row at epoch %d, progress at %d", r.ts, e0)
		}
	}
	last := e0
	step := func(sql, want string) {
		t.Helper()
		ExecAll(t, w, sql)
		flush(t, w)
		var got []subRow
		for len(got) == 0 {
			var e int64
			got, e = readSub(t, rows, last+1)
			last = e
		}
		ts := got[0].ts
		for _, r := range got {
			if r.ts != ts || ts <= e0 {
				t.Fatalf("%s: rows at epochs %v", sql, got)
			}
		}
		if s := subStrings(got); s != want {
			t.Fatalf("%s: got %s, want %s", sql, s, want)
		}
	}
	step(`INSERT INTO sub_t VALUES (3, 'c'), (200, 'x')`, "+1 3,c")
	step(`UPDATE sub_t SET v = 'z' WHERE id = 1`, "+1 1,z; -1 1,a")
	step(`DELETE FROM sub_t WHERE id = 2`, "-1 2,b")

	cancel()
	rows.Close()
	sc.Close(ctx)
	waitNoSubscription(t, httpAddr)
}

// waitNoSubscription waits until the server runs no subscription
// goroutine (its goroutine profile names no frame of subscribe.go).
func waitNoSubscription(t *testing.T, httpAddr string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + httpAddr + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), "server/subscribe.go") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a subscription goroutine is left:\n%s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var _ = bufio.NewReader
var _ = exec.Command
var _ = strconv.Itoa
