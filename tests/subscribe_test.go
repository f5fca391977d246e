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

// TestSubscribeCursor reads a subscription through DECLARE … CURSOR FOR
// SUBSCRIBE in a transaction block: FETCH returns the snapshot, a FETCH
// with a timeout and nothing new returns 0 rows after the timeout, and a
// FETCH without one waits for the next change.
func TestSubscribeCursor(t *testing.T) {
	s := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	ctx := context.Background()
	w := s.Connect(t)
	ExecAll(t, w, `CREATE TABLE subc (id BIGINT PRIMARY KEY, v TEXT)`, `INSERT INTO subc VALUES (1, 'a'), (2, 'b')`, `FLUSH`)
	for _, mode := range []string{"simple", "extended"} {
		t.Run(mode, func(t *testing.T) {
			c := s.ConnectSimple(t)
			if mode == "extended" {
				c = s.Connect(t)
			}
			defer c.Close(ctx)
			ExecAll(t, c, `BEGIN`, `DECLARE c CURSOR FOR SUBSCRIBE subc`)
			fetch := func(sql string) []string {
				t.Helper()
				rows, err := c.Query(ctx, sql)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				for rows.Next() {
					v, err := rows.Values()
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, fmt.Sprintf("%+d %v,%v", v[1], v[2], v[3]))
				}
				if err := rows.Err(); err != nil {
					t.Fatalf("%s: %v", sql, err)
				}
				slices.Sort(out)
				return out
			}
			want := map[string]string{"simple": "+1 1,a; +1 2,b", "extended": "+1 1,a; +1 2,b; +1 3,x"}[mode]
			if got := strings.Join(fetch(`FETCH ALL c`), "; "); got != want {
				t.Fatalf("snapshot: %s", got)
			}
			start := time.Now()
			if got := fetch(`FETCH 10 c WITH (timeout = '300ms')`); len(got) != 0 {
				t.Fatalf("FETCH with nothing new: %v", got)
			}
			if d := time.Since(start); d < 300*time.Millisecond {
				t.Fatalf("FETCH returned after %v, before its timeout", d)
			}
			done := make(chan []string, 1)
			go func() { done <- fetch(`FETCH 10 c`) }()
			id := map[string]int{"simple": 3, "extended": 4}[mode]
			ExecAll(t, w, fmt.Sprintf(`INSERT INTO subc VALUES (%d, 'x')`, id))
			select {
			case got := <-done:
				if want := fmt.Sprintf("+1 %d,x", id); strings.Join(got, "; ") != want {
					t.Fatalf("FETCH after INSERT: %v, want %s", got, want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("FETCH did not return after an INSERT")
			}
			ExecAll(t, c, `COMMIT`)
		})
	}
}

// TestSubscribeAsOf reconnects AS OF the last epoch a subscriber saw and
// gets exactly the changes after it: none lost, none twice; AS OF before
// the retained history is refused with 55000.
func TestSubscribeAsOf(t *testing.T) {
	s := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	ctx := context.Background()
	w := s.Connect(t)
	ExecAll(t, w,
		`CREATE TABLE sub_a (id BIGINT PRIMARY KEY, v BIGINT)`,
		`CREATE MATERIALIZED VIEW sub_amv AS SELECT id, v * 10 AS v10 FROM sub_a`,
		`ALTER MATERIALIZED VIEW sub_amv SET (retention = '1h')`,
		`FLUSH`)
	// Retention on: history starts now.
	c1 := s.Connect(t)
	rows, err := c1.Query(ctx, `SUBSCRIBE sub_amv WITH (progress)`)
	if err != nil {
		t.Fatal(err)
	}
	snap, last := readSub(t, rows, 0)
	if len(snap) != 0 {
		t.Fatalf("snapshot of an empty view: %v", snap)
	}
	seen := map[string]int{}
	for i := 1; i <= 5; i++ {
		ExecAll(t, w, fmt.Sprintf(`INSERT INTO sub_a VALUES (%d, %d)`, i, i))
	}
	flush(t, w)
	for len(seen) < 5 {
		got, e := readSub(t, rows, last+1)
		last = e
		for _, r := range got {
			seen[r.String()]++
		}
	}
	c1.Close(ctx) // the client goes away
	for i := 6; i <= 10; i++ {
		ExecAll(t, w, fmt.Sprintf(`INSERT INTO sub_a VALUES (%d, %d)`, i, i))
	}
	ExecAll(t, w, `UPDATE sub_a SET v = 0 WHERE id = 1`)
	flush(t, w)

	c2 := s.Connect(t)
	rows2, err := c2.Query(ctx, fmt.Sprintf(`SUBSCRIBE sub_amv AS OF %d WITH (progress)`, last))
	if err != nil {
		t.Fatal(err)
	}
	for {
		got, e := readSub(t, rows2, last+1)
		last = e
		for _, r := range got {
			seen[r.String()]++
		}
		if seen["-1 1,10"] > 0 {
			break
		}
	}
	var keys []string
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s seen %d times", k, n)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := "+1 1,0; +1 1,10; +1 10,100; +1 2,20; +1 3,30; +1 4,40; +1 5,50; +1 6,60; +1 7,70; +1 8,80; +1 9,90; -1 1,10"
	if got := strings.Join(keys, "; "); got != want {
		t.Fatalf("changes:\n got %s\nwant %s", got, want)
	}
	c2.Close(ctx)

	// Before the history: refused.
	_, err = w.Exec(ctx, `SUBSCRIBE sub_amv AS OF 1`)
	if code := pgCode(err); code != "55000" {
		t.Fatalf("AS OF before the history: %v (code %s)", err, code)
	}
	_, err = w.Exec(ctx, `ALTER MATERIALIZED VIEW sub_amv SET (retention = 'soon')`)
	if code := pgCode(err); code != "22023" {
		t.Fatalf("bad retention: %v", err)
	}
	_, err = w.Exec(ctx, `SUBSCRIBE (SELECT 1)`)
	if code := pgCode(err); code != "0A000" {
		t.Fatalf("SUBSCRIBE to a query: %v", err)
	}
}

// TestSubscribePsql streams COPY (SUBSCRIBE …) TO STDOUT through a real
// psql process, read line by line; killing psql ends the subscription.
func TestSubscribePsql(t *testing.T) {
	httpAddr := FreeAddr(t)
	s := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond, ExtraArgs: []string{"--http", httpAddr}})
	w := s.Connect(t)
	ExecAll(t, w, `CREATE TABLE sub_p (id BIGINT PRIMARY KEY, v TEXT)`, `INSERT INTO sub_p VALUES (1, 'one')`, `FLUSH`)
	// stdbuf: psql writes COPY data through stdio, fully buffered on a
	// pipe; line buffering lets each line out as it comes.
	cmd := exec.Command("stdbuf", "-oL", "psql", "-X", "-q", "-h", s.Host(), "-p", s.Port(), "-U", "sluice", "-d", "sluice",
		"-c", "COPY (SUBSCRIBE sub_p) TO STDOUT")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("psql: %v (scripts/test.sh installs the clients)", err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func() []string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("psql ended")
			}
			return strings.Split(l, "\t")
		case <-time.After(10 * time.Second):
			t.Fatal("no line from psql")
		}
		return nil
	}
	f := next()
	if strings.Join(f[1:], "|") != "1|1|one" {
		t.Fatalf("snapshot line %q", f)
	}
	e0, _ := strconv.ParseInt(f[0], 10, 64)
	ExecAll(t, w, `UPDATE sub_p SET v = 'uno' WHERE id = 1`)
	got := []string{strings.Join(next(), "|"), strings.Join(next(), "|")}
	slices.Sort(got)
	e1, _ := strconv.ParseInt(strings.SplitN(got[0], "|", 2)[0], 10, 64)
	if e1 <= e0 || got[0] != fmt.Sprintf("%d|-1|1|one", e1) || got[1] != fmt.Sprintf("%d|1|1|uno", e1) {
		t.Fatalf("update lines %q after epoch %d", got, e0)
	}
	cmd.Process.Kill()
	waitNoSubscription(t, httpAddr)
}

// TestSubscribeLatency measures, over 200 INSERTs at 100 ms checkpoints,
// the time from an INSERT's acknowledgement to a subscriber (pgx) having
// the row.
func TestSubscribeLatency(t *testing.T) {
	s := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	ctx := context.Background()
	w := s.Connect(t)
	ExecAll(t, w, `CREATE TABLE sub_l (id BIGINT PRIMARY KEY)`, `FLUSH`)
	sc := s.Connect(t)
	// WITH (progress): the first row (the snapshot's progress) comes at
	// once, so the subscription is open before the first INSERT.
	// The reading goroutine owns the connection until qctx is cancelled
	// and it has returned: only then is the connection closed.
	qctx, qcancel := context.WithCancel(ctx)
	defer qcancel()
	rows, err := sc.Query(qctx, `SUBSCRIBE sub_l WITH (progress)`)
	if err != nil {
		t.Fatal(err)
	}
	if _, e := readSub(t, rows, 0); e <= 0 {
		t.Fatalf("progress epoch %d", e)
	}
	const n = 200
	got := make(chan [2]int64, n)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for rows.Next() {
			v, err := rows.Values()
			if err != nil {
				return
			}
			if !v[1].(bool) {
				got <- [2]int64{v[3].(int64), time.Now().UnixNano()}
			}
		}
	}()
	acked := make([]int64, n)
	for i := range n {
		ExecAll(t, w, fmt.Sprintf(`INSERT INTO sub_l VALUES (%d)`, i))
		acked[i] = time.Now().UnixNano()
		time.Sleep(time.Duration(i%7) * 5 * time.Millisecond) // spread over the checkpoint interval
	}
	var lat []time.Duration
	for len(lat) < n {
		select {
		case g := <-got:
			lat = append(lat, time.Duration(g[1]-acked[g[0]]))
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d rows received", len(lat), n)
		}
	}
	slices.Sort(lat)
	t.Logf("commit-to-client latency over %d inserts at 100 ms checkpoints: p50 %v, p99 %v, max %v",
		n, lat[n/2].Round(time.Millisecond), lat[n*99/100].Round(time.Millisecond), lat[n-1].Round(time.Millisecond))
	qcancel()
	<-readerDone
	sc.Close(ctx)
}

// TestSubscribePsycopg reads a subscription with psycopg 3 (when
// installed): cursor.stream over SUBSCRIBE.
func TestSubscribePsycopg(t *testing.T) {
	if err := exec.Command("/usr/bin/python3", "-c", "import psycopg").Run(); err != nil {
		t.Fatalf("psycopg 3 is missing (apt-get install python3-psycopg; scripts/test.sh installs it): %v", err)
	}
	s := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	w := s.Connect(t)
	ExecAll(t, w, `CREATE TABLE sub_y (id BIGINT PRIMARY KEY, v TEXT)`, `INSERT INTO sub_y VALUES (1, 'a')`, `FLUSH`)
	script := `
import sys, psycopg
conn = psycopg.connect(sys.argv[1], autocommit=True)
cur = conn.cursor()
n = 0
for row in cur.stream("SUBSCRIBE sub_y"):
    print(row[1], row[2], row[3], flush=True)
    n += 1
    if n == 2:
        break
`
	cmd := exec.Command("/usr/bin/python3", "-c", script, "host="+s.Host()+" port="+s.Port()+" user=sluice dbname=sluice")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &strings.Builder{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(out)
	l1, _ := br.ReadString('\n')
	ExecAll(t, w, `INSERT INTO sub_y VALUES (2, 'b')`)
	l2, _ := br.ReadString('\n')
	cmd.Process.Kill()
	cmd.Wait()
	if l1 != "1 1 a\n" || l2 != "1 2 b\n" {
		t.Fatalf("psycopg read %q %q (stderr %s)", l1, l2, cmd.Stderr)
	}
}

// TestSubscribeAsOfRestart: a table's retained history survives a kill -9
// of the server: a client that saw the changes up to an epoch subscribes
// AS OF it after the restart and gets exactly the later changes, those
// acknowledged before the kill and after the restart, each once. A
// subscription whose relation is dropped ends with 42P01.
func TestSubscribeAsOfRestart(t *testing.T) {
	s := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	ctx := context.Background()
	w := s.Connect(t)
	ExecAll(t, w,
		`CREATE TABLE sub_r (id BIGINT PRIMARY KEY, v BIGINT)`,
		`ALTER TABLE sub_r SET (retention = '1h')`,
		`INSERT INTO sub_r VALUES (1, 1), (2, 2)`,
		`FLUSH`)
	c1 := s.Connect(t)
	rows, err := c1.Query(ctx, `SUBSCRIBE sub_r WITH (progress)`)
	if err != nil {
		t.Fatal(err)
	}
	snap, last := readSub(t, rows, 0)
	if got := subStrings(snap); got != "+1 1,1; +1 2,2" {
		t.Fatalf("snapshot: %s", got)
	}
	c1.Close(ctx)
	// Acknowledged after the client left, before the kill.
	ExecAll(t, w, `INSERT INTO sub_r VALUES (3, 3)`, `UPDATE sub_r SET v = 20 WHERE id = 2`, `FLUSH`)
	if err := s.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	w = s.Connect(t)
	ExecAll(t, w, `DELETE FROM sub_r WHERE id = 1`, `INSERT INTO sub_r VALUES (4, 4)`, `FLUSH`)

	c2 := s.Connect(t)
	rows2, err := c2.Query(ctx, fmt.Sprintf(`SUBSCRIBE sub_r AS OF %d WITH (progress)`, last))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for seen["+1 4,4"] == 0 {
		got, e := readSub(t, rows2, last+1)
		last = e
		for _, r := range got {
			seen[r.String()]++
		}
	}
	var keys []string
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s seen %d times", k, n)
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := "+1 2,20; +1 3,3; +1 4,4; -1 1,1; -1 2,2"
	if got := strings.Join(keys, "; "); got != want {
		t.Fatalf("changes after the restart:\n got %s\nwant %s", got, want)
	}

	// DROP ends the running subscription with 42P01.
	ExecAll(t, w, `DROP TABLE sub_r`)
	for rows2.Next() {
	}
	if code := pgCode(rows2.Err()); code != "42P01" {
		t.Fatalf("subscription after DROP: %v (code %s)", rows2.Err(), code)
	}
	c2.Close(ctx)
}
