package tests

import (
	"context"
	"fmt"
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
	ctx := context.Background()
	srv := StartServer(t, Options{})
	conn := MustConnectMode(t, srv.ConnString(), pgx.QueryExecModeSimpleProtocol)
	exec := func(q string) [][]string {
		t.Helper()
		c, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		rows, err := QueryText(c, conn, q)
		if err != nil {
			t.Fatalf("%s: %v\n%s", q, err, srv.Logs())
		}
		return rows.Rows
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
