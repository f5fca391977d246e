package tests

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestTemporalFilterExpiry runs temporal filters on the real clock in a
// real server: rows whose times are 400 ms apart, a view of the last 3
// seconds (rows leave as time passes) and one of the rows at least 1 s old
// (rows come in as time passes). After each FLUSH the views are as of a
// barrier taken between the FLUSH's start and the read's end, so every
// row whose boundary is before that window must already have left (or come
// in), and every row whose boundary is after it must not have; the rows in
// the window are skipped. Halfway the server is SIGKILLed and restarted.
// Each row must be seen on both sides of its boundary in each view.
func TestTemporalFilterExpiry(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := MustConnectMode(t, srv.ConnString(), pgx.QueryExecModeSimpleProtocol)
	exec := func(q string) [][]string {
		t.Helper()
		return serverRows(t, srv, conn, q)
	}
	exec("CREATE TABLE ev (id INT PRIMARY KEY, ts TIMESTAMPTZ)")
	exec("CREATE MATERIALIZED VIEW recent AS SELECT id FROM ev WHERE ts > now() - INTERVAL '3 seconds'")
	exec("CREATE MATERIALIZED VIEW settled AS SELECT id FROM ev WHERE now() - INTERVAL '1 second' >= ts")
	const n = 8
	base := time.Now().Add(200 * time.Millisecond).Truncate(time.Millisecond)
	ts := make([]time.Time, n)
	var vals []string
	for i := range ts {
		ts[i] = base.Add(time.Duration(i) * 400 * time.Millisecond)
		vals = append(vals, fmt.Sprintf("(%d, '%s')", i, ts[i].UTC().Format("2006-01-02 15:04:05.999999+00")))
	}
	exec("INSERT INTO ev VALUES " + strings.Join(vals, ", "))
	type view struct {
		name string
		// boundary of row i, and whether the row is in the view before it
		boundary func(i int) time.Time
		before   bool
		seen     [n][2]bool // [i][in view]
	}
	views := []*view{
		{name: "recent", boundary: func(i int) time.Time { return ts[i].Add(3 * time.Second) }, before: true},
		{name: "settled", boundary: func(i int) time.Time { return ts[i].Add(time.Second) }, before: false},
	}
	end := views[0].boundary(n - 1).Add(500 * time.Millisecond)
	restarted := false
	checks := 0
	for time.Now().Before(end) {
		if !restarted && time.Now().After(ts[n/2].Add(3*time.Second)) {
			restarted = true
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			conn = MustConnectMode(t, srv.ConnString(), pgx.QueryExecModeSimpleProtocol)
		}
		from := time.Now()
		exec("FLUSH")
		got := make([]map[string]bool, len(views))
		for k, v := range views {
			got[k] = map[string]bool{}
			for _, r := range exec("SELECT id FROM " + v.name) {
				got[k][r[0]] = true
			}
		}
		to := time.Now()
		for k, v := range views {
			for i := 0; i < n; i++ {
				b := v.boundary(i)
				var want bool
				switch {
				case !b.After(from): // passed before the FLUSH began
					want = !v.before
				case b.After(to): // still to come when the read ended
					want = v.before
				default:
					continue
				}
				in := got[k][fmt.Sprint(i)]
				checks++
				if in != want {
					t.Fatalf("%s: row %d (boundary %s) in view = %t, want %t (FLUSH at %s, read by %s)",
						v.name, i, b.Format("15:04:05.000000"), in, want, from.Format("15:04:05.000000"), to.Format("15:04:05.000000"))
				}
				v.seen[i][btoi(in)] = true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, v := range views {
		for i := 0; i < n; i++ {
			if !v.seen[i][0] || !v.seen[i][1] {
				t.Errorf("%s: row %d was not seen on both sides of its boundary (%v)", v.name, i, v.seen[i])
			}
		}
	}
	if !restarted {
		t.Error("the server was not restarted")
	}
	t.Logf("temporal filters: %d rows, %d exact membership checks, restarted=%t", n, checks, restarted)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestClockSeriesView: generate_series(start, now(), step) in a view, on
// a real server with the wall clock. At every check (a FLUSH, then the
// reads): the growing series holds every point up to the FLUSH (less the
// source's 50 ms of polling) and none after the reads ended, each once
// and contiguous from the start; the sliding view (WHERE ts > now() -
// INTERVAL '2 seconds') holds exactly the points inside its bounds on
// both sides; an aggregate over the series counts them. Midway the
// server is killed (SIGKILL) and restarted: the series goes on from its
// last committed point, with nothing lost or doubled. The view over a
// series whose stop is not now() is refused.
func TestClockSeriesView(t *testing.T) {
	ctx := context.Background()
	srv := StartServer(t, Options{})
	conn := MustConnectMode(t, srv.ConnString(), pgx.QueryExecModeSimpleProtocol)
	exec := func(q string) [][]string {
		t.Helper()
		return serverRows(t, srv, conn, q)
	}
	const step = 250 * time.Millisecond
	start := time.Now().Add(-3 * time.Second).Truncate(time.Second).UTC()
	lit := start.Format("2006-01-02 15:04:05+00")
	exec(fmt.Sprintf("CREATE MATERIALIZED VIEW series AS SELECT ts FROM generate_series(TIMESTAMPTZ '%s', now(), INTERVAL '250 milliseconds') AS ts", lit))
	exec(fmt.Sprintf("CREATE MATERIALIZED VIEW sliding AS SELECT g FROM generate_series(TIMESTAMPTZ '%s', now(), INTERVAL '250 milliseconds') AS g WHERE g > now() - INTERVAL '2 seconds'", lit))
	exec(fmt.Sprintf("CREATE MATERIALIZED VIEW closed AS WITH s AS (SELECT ts FROM generate_series(TIMESTAMPTZ '%s', now(), INTERVAL '250 milliseconds') AS ts) SELECT window_start, count(*) AS n FROM TUMBLE(s, ts, INTERVAL '1 second') GROUP BY window_start EMIT ON WINDOW CLOSE", lit))
	exec(fmt.Sprintf("CREATE MATERIALIZED VIEW counted AS SELECT count(*) AS n, max(ts) AS last FROM generate_series(TIMESTAMPTZ '%s', now(), INTERVAL '250 milliseconds') AS ts", lit))
	if _, err := QueryText(ctx, conn, "CREATE MATERIALIZED VIEW bad AS SELECT ts FROM generate_series(TIMESTAMPTZ '2024-01-01', TIMESTAMPTZ '2024-01-02', INTERVAL '1 hour') AS ts"); err == nil || !strings.Contains(err.Error(), "0A000") {
		t.Fatalf("a series without now() as its stop: %v", err)
	}
	if _, err := QueryText(ctx, conn, "CREATE MATERIALIZED VIEW bad AS SELECT ts FROM generate_series(now() - INTERVAL '1 hour', now(), INTERVAL '1 minute') AS ts"); err == nil || !strings.Contains(err.Error(), "0A000") {
		t.Fatalf("a series starting at now(): %v", err)
	}
	parse := func(s string) time.Time {
		v, err := time.Parse("2006-01-02 15:04:05.999999-07", s)
		if err != nil {
			t.Fatalf("parse %q: %v", s, err)
		}
		return v
	}
	const poll = 50 * time.Millisecond // the source's polling, and the scheduler's slack
	end := time.Now().Add(6 * time.Second)
	restarted, checks := false, 0
	for time.Now().Before(end) {
		if !restarted && time.Until(end) < 3*time.Second {
			restarted = true
			if err := srv.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			conn = MustConnectMode(t, srv.ConnString(), pgx.QueryExecModeSimpleProtocol)
		}
		from := time.Now()
		exec("FLUSH")
		series := exec("SELECT ts FROM series ORDER BY ts")
		sliding := map[int64]bool{} // Unix microseconds
		for _, r := range exec("SELECT g FROM sliding") {
			sliding[parse(r[0]).UnixMicro()] = true
		}
		counted := exec("SELECT n, last FROM counted")
		to := time.Now()
		// The growing series: start, start+step, … contiguous, each once.
		for i, r := range series {
			if got, want := parse(r[0]), start.Add(time.Duration(i)*step); !got.Equal(want) {
				t.Fatalf("series row %d = %s, want %s (a point lost or doubled)", i, got, want)
			}
		}
		last := start.Add(time.Duration(len(series)-1) * step)
		if last.After(to) {
			t.Fatalf("series holds %s, after the read ended at %s", last, to)
		}
		if next := last.Add(step); !next.After(from.Add(-poll)) {
			t.Fatalf("series ends at %s, but %s was due before the FLUSH at %s", last, next, from)
		}
		// Each view reads its own series (its own source reader), so the
		// aggregate may be a point ahead or behind; it must be exact for
		// its own points: n of them, the last start + (n-1)*step, within
		// the same bounds as the series.
		if len(counted) != 1 {
			t.Fatalf("counted = %v", counted)
		}
		n, err := strconv.Atoi(counted[0][0])
		cl := parse(counted[0][1])
		if err != nil || !cl.Equal(start.Add(time.Duration(n-1)*step)) || cl.After(to) || !cl.Add(step).After(from.Add(-poll)) {
			t.Fatalf("counted = %v: not the %d points of the series from %s up to the read (FLUSH at %s, read by %s)", counted, n, start, from, to)
		}
		// The sliding view: p is in while p <= clock (read) and p > clock - 2s (barrier).
		for p := start; !p.After(to.Add(time.Second)); p = p.Add(step) {
			var want bool
			switch {
			case p.After(to), !p.Add(2 * time.Second).After(from):
				want = false
			case !p.After(from.Add(-poll)) && p.Add(2*time.Second).After(to):
				want = true
			default:
				continue
			}
			checks++
			if sliding[p.UnixMicro()] != want {
				var in []string
				for q := range sliding {
					in = append(in, time.UnixMicro(q).UTC().Format("05.000"))
				}
				sort.Strings(in)
				t.Fatalf("sliding: point %s in view = %t, want %t (FLUSH at %s, read by %s; the view holds %v)", p.Format("15:04:05.000"), sliding[p.UnixMicro()], want,
					from.Format("15:04:05.000"), to.Format("15:04:05.000"), in)
			}
		}
		for p := range sliding {
			if (p-start.UnixMicro())%step.Microseconds() != 0 {
				t.Fatalf("sliding holds %s, not a point of the series", time.UnixMicro(p).UTC())
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !restarted {
		t.Fatal("the server was not restarted")
	}
	// The series' points carry a watermark: EMIT ON WINDOW CLOSE emits
	// each second's window once the clock has passed it, with its four
	// points, once (across the SIGKILL too).
	exec("FLUSH")
	closed := exec("SELECT window_start, n FROM closed ORDER BY window_start")
	read := time.Now()
	if len(closed) < 5 {
		t.Fatalf("closed windows: %v", closed)
	}
	for i, r := range closed {
		ws := parse(r[0])
		if !ws.Equal(start.Add(time.Duration(i)*time.Second)) || r[1] != "4" || ws.Add(time.Second).After(read) {
			t.Fatalf("closed window %d = %v (start %s, read at %s)", i, r, start, read)
		}
	}
	n := exec("SELECT count(*), count(DISTINCT ts) FROM series")
	t.Logf("generate_series over now(): %s points, %d exact membership checks of the sliding view, restarted=%t", n[0][0], checks, restarted)
	if n[0][0] != n[0][1] {
		t.Fatalf("series: %s rows, %s distinct", n[0][0], n[0][1])
	}
}

// serverRows runs q on conn (30 s at most) and returns its rows as text;
// an error fails the test with the server's log.
func serverRows(t *testing.T, srv *Server, conn *pgx.Conn, q string) [][]string {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := QueryText(c, conn, q)
	if err != nil {
		t.Fatalf("%s: %v\n%s", q, err, srv.Logs())
	}
	return rows.Rows
}
