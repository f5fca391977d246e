package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Issue 15, item 6: statements that run long or grow without bound stop on
// a CancelRequest and on statement_timeout, end with 53200 past
// statement_mem instead of growing the server, idle sessions are closed
// by their timeouts, and a client cannot pile up prepared statements or
// portals. Every case runs against a real sluice process over pgx, while
// another session keeps querying and must notice nothing.

// runawayCases are statements that never end (or not for hours) unless
// stopped.
func runawayCases() []struct{ name, sql string } {
	and := strings.Repeat("g % 7 <> 3 AND ", 2000)
	return []struct{ name, sql string }{
		{"count-huge-series", "SELECT count(*) FROM generate_series(1, 9223372036854775807)"},
		{"cross-join", "SELECT count(*) FROM generate_series(1, 1000000) a, generate_series(1, 1000000) b"},
		{"and-chain", "SELECT count(*) FROM generate_series(1, 9223372036854775807) g WHERE " + and + "true"},
		{"top-n", "SELECT g FROM generate_series(1, 9223372036854775807) g ORDER BY g % 1000, g DESC LIMIT 5"},
		{"numeric-power-series", "SELECT sum(length((g::numeric ^ 3000)::text)) FROM generate_series(1, 9223372036854775807) g"},
		{"srf-in-select-list", "SELECT count(*) FROM (SELECT generate_series(1, g) FROM generate_series(1, 9223372036854775807) g) s"},
		{"string-builder", "SELECT sum(length(repeat(g::text, 1000))) FROM generate_series(1, 9223372036854775807) g"},
	}
}

// serverPid returns the process id of srv's running process.
func serverPid(t *testing.T, srv *Server) int {
	t.Helper()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.mu.proc == nil {
		t.Fatal("server not running")
	}
	return srv.mu.proc.cmd.Process.Pid
}

// peakRSS returns the process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// bystander runs a small query in a loop on its own session until stop,
// and reports any error or wrong answer: other sessions' runaways must
// not disturb it.
func bystander(t *testing.T, srv *Server, stop <-chan struct{}) (wait func() int) {
	conn := srv.Connect(t)
	var wg sync.WaitGroup
	n := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			var got int64
			if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM generate_series(1, 1000) g WHERE g % 2 = 0").Scan(&got); err != nil || got != 500 {
				t.Errorf("bystander session: got %d, %v", got, err)
				return
			}
			n++
		}
	}()
	return func() int { wg.Wait(); return n }
}

func pgErr(err error) *pgconn.PgError {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

func TestLimitsCancelAndTimeout(t *testing.T) {
	srv := StartServer(t, Options{})
	ctx := context.Background()
	stop := make(chan struct{})
	wait := bystander(t, srv, stop)
	var worstCancel, worstTimeout time.Duration
	for i, c := range runawayCases() {
		modes := []string{"extended"}
		if i < 2 { // the simple protocol's path is the same past the first cases
			modes = append(modes, "simple")
		}
		for _, mode := range modes {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				conn := srv.Connect(t)
				if mode == "simple" {
					conn = srv.ConnectSimple(t)
				}
				// A budget that the runaways' growth within a second fits.
				if _, err := conn.Exec(ctx, "SET statement_mem = '512MB'"); err != nil {
					t.Fatal(err)
				}

				// CancelRequest, 300 ms into the statement.
				done := make(chan error, 1)
				go func() {
					_, err := conn.Exec(ctx, c.sql)
					done <- err
				}()
				time.Sleep(300 * time.Millisecond) // let the statement get going
				sent := time.Now()
				if err := conn.PgConn().CancelRequest(ctx); err != nil {
					t.Fatal(err)
				}
				var err error
				select {
				case err = <-done:
				case <-time.After(20 * time.Second):
					t.Fatalf("statement still running 20s after the CancelRequest")
				}
				lat := time.Since(sent)
				if pe := pgErr(err); pe == nil || pe.Code != "57014" || pe.Message != "canceling statement due to user request" {
					t.Fatalf("after CancelRequest: %v, want 57014 canceling statement due to user request", err)
				}
				worstCancel = max(worstCancel, lat)
				t.Logf("cancel → error: %v", lat)

				// statement_timeout.
				if _, err := conn.Exec(ctx, "SET statement_timeout = '400ms'"); err != nil {
					t.Fatal(err)
				}
				start := time.Now()
				_, err = conn.Exec(ctx, c.sql)
				over := time.Since(start) - 400*time.Millisecond
				if pe := pgErr(err); pe == nil || pe.Code != "57014" || pe.Message != "canceling statement due to statement timeout" {
					t.Fatalf("with statement_timeout: %v, want 57014 canceling statement due to statement timeout", err)
				}
				worstTimeout = max(worstTimeout, over)
				t.Logf("timeout → error: %v past the timeout", over)

				// The session goes on.
				if _, err := conn.Exec(ctx, "RESET statement_timeout"); err != nil {
					t.Fatal(err)
				}
				var one int
				if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
					t.Fatalf("SELECT 1 after the cancellations: %d, %v", one, err)
				}
			})
		}
	}
	close(stop)
	n := wait()
	t.Logf("longest cancel → error: %v; longest statement_timeout overshoot: %v; bystander queries: %d", worstCancel, worstTimeout, n)
	if worstCancel > time.Second || worstTimeout > time.Second {
		t.Errorf("cancellation took %v / %v (want well under a second)", worstCancel, worstTimeout)
	}

	// A client that leaves in the middle of a runaway statement: the
	// statement stops, and the server goes back to idle.
	pid := serverPid(t, srv)
	for _, c := range runawayCases()[:3] {
		rc := dialRaw(t, srv.Addr, "sluice", "sluice")
		rc.fe.Send(&pgproto3.Query{String: c.sql})
		if err := rc.fe.Flush(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond) // the statement is running
		rc.close()
	}
	time.Sleep(500 * time.Millisecond) // a client check interval and the stop
	busy := cpuTime(t, pid)
	time.Sleep(time.Second)
	if used := cpuTime(t, pid) - busy; used > 150*time.Millisecond {
		t.Errorf("the server used %v of CPU in the second after its clients left", used)
	} else {
		t.Logf("CPU used in the second after the clients left: %v", used)
	}
}

// cpuTime returns the user+system CPU time process pid has used.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// Fields after the command name (which ends with ')'): utime is the
	// 12th, stime the 13th, in clock ticks (100 Hz on Linux).
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func TestLimitsStatementMem(t *testing.T) {
	srv := StartServer(t, Options{})
	ctx := context.Background()
	pid := serverPid(t, srv)
	stop := make(chan struct{})
	wait := bystander(t, srv, stop)
	conn := srv.Connect(t)
	var show string
	if err := conn.QueryRow(ctx, "SHOW statement_mem").Scan(&show); err != nil || !strings.HasSuffix(show, "B") {
		t.Fatalf("SHOW statement_mem = %q, %v", show, err)
	}
	if _, err := conn.Exec(ctx, "SET statement_mem = '64MB'"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "CREATE TABLE sink (v BIGINT)"); err != nil {
		t.Fatal(err)
	}
	base := peakRSS(t, pid)
	const big = "generate_series(1, 9223372036854775807)"
	for _, c := range []struct{ name, sql string }{
		{"sort", "SELECT g FROM " + big + " g ORDER BY g DESC"},
		{"group-by", "SELECT g, count(*) FROM " + big + " g GROUP BY g"},
		{"string-agg", "SELECT length(string_agg(g::text, ',')) FROM " + big + " g"},
		{"join", "SELECT count(*) FROM generate_series(1, 10) a JOIN " + big + " b ON a = b"},
		{"srf-in-select-list", "SELECT generate_series(1, 9223372036854775807)"},
		{"repeat", "SELECT length(repeat('x', 100000000))"},
		{"insert-select", "INSERT INTO sink SELECT g FROM " + big + " g"},
		{"subquery", "SELECT 1 WHERE 5 IN (SELECT g FROM " + big + " g WHERE g % 2 = 0)"},
		{"lpad", "SELECT length(lpad('x', 100000000, 'ab'))"},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := conn.Exec(ctx, c.sql)
			pe := pgErr(err)
			if pe == nil || pe.Code != "53200" || pe.Message != "out of memory" || !strings.Contains(pe.Detail, "statement_mem = 64MB") {
				t.Fatalf("%s: %v, want 53200 out of memory naming statement_mem", c.sql, err)
			}
			t.Logf("53200 after %v: %s", time.Since(start), pe.Detail)
		})
	}
	peak := peakRSS(t, pid)
	t.Logf("server peak RSS: %d MiB before, %d MiB after the runaways (statement_mem 64MB)", base>>20, peak>>20)
	// The Go heap may reach 4× the live data (GOGC 300, see the README),
	// so the bound is 1.5 GiB: far below the machine these runaways fill;
	// a race build's shadow memory multiplies it again, so it is only
	// logged there.
	if peak-base > 3<<29 && !strings.Contains(os.Getenv("SLUICE_BUILD_FLAGS"), "-race") {
		t.Errorf("peak RSS grew by %d MiB under a 64MB statement budget", (peak-base)>>20)
	}
	// A statement within the budget still runs, and the session goes on.
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM (SELECT g FROM generate_series(1, 100000) g ORDER BY g DESC) s").Scan(&n); err != nil || n != 100000 {
		t.Fatalf("a statement within budget: %d, %v", n, err)
	}
	for _, v := range []struct{ set, show string }{{"'1GB'", "1GB"}, {"2048", "2MB"}, {"'1536kB'", "1536kB"}} {
		if _, err := conn.Exec(ctx, "SET statement_mem = "+v.set); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, "SHOW statement_mem").Scan(&show); err != nil || show != v.show {
			t.Errorf("SET statement_mem = %s; SHOW = %q, %v; want %s", v.set, show, err, v.show)
		}
	}
	_, err := conn.Exec(ctx, "SET statement_mem = '10 parsecs'")
	if pe := pgErr(err); pe == nil || pe.Code != "22023" {
		t.Errorf("SET statement_mem = '10 parsecs': %v, want 22023", err)
	}
	close(stop)
	t.Logf("bystander queries: %d", wait())
}

func TestLimitsSettings(t *testing.T) {
	srv := StartServer(t, Options{})
	ctx := context.Background()
	conn := srv.Connect(t)
	for _, c := range []struct{ name, set, show string }{
		{"statement_timeout", "'5s'", "5s"},
		{"statement_timeout", "'250ms'", "250ms"},
		{"statement_timeout", "'1min'", "1min"},
		{"statement_timeout", "1500", "1500ms"},
		{"statement_timeout", "0", "0"},
		{"idle_in_transaction_session_timeout", "'2h'", "2h"},
		{"idle_session_timeout", "'1d'", "1d"},
		{"idle_session_timeout", "DEFAULT", "0"},
	} {
		if _, err := conn.Exec(ctx, "SET "+c.name+" = "+c.set); err != nil {
			t.Fatalf("SET %s = %s: %v", c.name, c.set, err)
		}
		var got string
		if err := conn.QueryRow(ctx, "SHOW "+c.name).Scan(&got); err != nil || got != c.show {
			t.Errorf("SET %s = %s; SHOW = %q, %v; want %q", c.name, c.set, got, err, c.show)
		}
	}
	for _, bad := range []string{"'5 fortnights'", "'-1'", "'abc'"} {
		_, err := conn.Exec(ctx, "SET statement_timeout = "+bad)
		if pe := pgErr(err); pe == nil || pe.Code != "22023" {
			t.Errorf("SET statement_timeout = %s: %v, want 22023", bad, err)
		}
	}
	// From the startup packet, as a parameter and in options.
	for _, cs := range []string{srv.ConnString() + "&options=-c%20statement_timeout%3D250ms", srv.ConnString() + "&statement_timeout=250"} {
		c2 := MustConnect(t, cs)
		var got string
		if err := c2.QueryRow(ctx, "SHOW statement_timeout").Scan(&got); err != nil || got != "250ms" {
			t.Errorf("%s: SHOW statement_timeout = %q, %v", cs, got, err)
		}
		_, err := c2.Exec(ctx, "SELECT count(*) FROM generate_series(1, 9223372036854775807)")
		if pe := pgErr(err); pe == nil || pe.Code != "57014" {
			t.Errorf("statement_timeout from the startup packet: %v, want 57014", err)
		}
	}
	if _, err := Connect(ctx, srv.ConnString()+"&statement_timeout=soon"); err == nil {
		t.Errorf("a startup packet with statement_timeout=soon was accepted")
	}
}

func TestLimitsIdleTimeouts(t *testing.T) {
	srv := StartServer(t, Options{})
	for _, c := range []struct {
		name  string
		setup []string
		want  string
	}{
		{"idle-session", []string{"SET idle_session_timeout = '200ms'"},
			"FATAL 57P05 terminating connection due to idle-session timeout"},
		{"idle-in-transaction", []string{"SET idle_in_transaction_session_timeout = '200ms'", "BEGIN", "SELECT 1"},
			"FATAL 25P03 terminating connection due to idle-in-transaction timeout"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rc := dialRaw(t, srv.Addr, "sluice", "sluice")
			defer rc.close()
			for _, q := range c.setup {
				rc.exchange(t, &pgproto3.Query{String: q})
			}
			start := time.Now()
			got := rc.exchangeToEOF(t)
			if len(got) != 2 || got[0] != c.want || got[1] != "EOF" {
				t.Fatalf("after idling: %q, want [%q EOF]", got, c.want)
			}
			if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
				t.Errorf("closed after %v, want about 200ms", d)
			}
		})
	}
	// A session that keeps working is not closed: the timeout counts idle
	// time only.
	conn := srv.Connect(t)
	ctx := context.Background()
	if _, err := conn.Exec(ctx, "SET idle_session_timeout = '300ms'"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 4; i++ {
		if _, err := conn.Exec(ctx, "SELECT count(*) FROM generate_series(1, 1000)"); err != nil {
			t.Fatalf("busy session: %v", err)
		}
		time.Sleep(100 * time.Millisecond) // idle, but under the timeout
	}
	// A statement that runs longer than the idle timeout is not idle time.
	start := time.Now()
	if _, err := conn.Exec(ctx, "SELECT count(*) FROM generate_series(1, 2000000)"); err != nil {
		t.Fatalf("long statement under idle_session_timeout: %v", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Logf("the long statement took only %v: it did not outlast the idle timeout", d)
	}
}

func TestLimitsPreparedStatementAndPortalCaps(t *testing.T) {
	srv := StartServer(t, Options{})
	ctx := context.Background()
	conn := srv.Connect(t)
	const limit = 10000
	for i := 0; i < limit; i++ {
		if _, err := conn.Prepare(ctx, fmt.Sprintf("s%d", i), "SELECT 1"); err != nil {
			t.Fatalf("prepare %d: %v", i, err)
		}
	}
	_, err := conn.Prepare(ctx, "one-too-many", "SELECT 1")
	if pe := pgErr(err); pe == nil || pe.Code != "53400" || pe.Hint == "" {
		t.Fatalf("prepared statement %d: %v, want 53400 with a hint", limit+1, err)
	}
	// The session keeps working, and room comes back with DEALLOCATE.
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1", pgx.QueryExecModeSimpleProtocol).Scan(&one); err != nil || one != 1 {
		t.Fatalf("after the cap: %d, %v", one, err)
	}
	if err := conn.Deallocate(ctx, "s0"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Prepare(ctx, "one-more", "SELECT 1"); err != nil {
		t.Fatalf("prepare after Close: %v", err)
	}

	// Portals: named Binds inside a transaction block, in one pipeline.
	rc := dialRaw(t, srv.Addr, "sluice", "sluice")
	defer rc.close()
	rc.exchange(t, &pgproto3.Query{String: "BEGIN"})
	rc.fe.Send(&pgproto3.Parse{Name: "q", Query: "SELECT 1"})
	for i := 0; i <= limit; i++ {
		rc.fe.Send(&pgproto3.Bind{DestinationPortal: fmt.Sprintf("p%d", i), PreparedStatement: "q"})
	}
	rc.fe.Send(&pgproto3.Sync{})
	if err := rc.fe.Flush(); err != nil {
		t.Fatal(err)
	}
	binds, errs := 0, []string{}
	for {
		m := rc.receive(t)
		switch m := m.(type) {
		case *pgproto3.BindComplete:
			binds++
		case *pgproto3.ErrorResponse:
			errs = append(errs, m.Code+" "+m.Message)
		}
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			break
		}
	}
	if binds != limit || len(errs) != 1 || !strings.HasPrefix(errs[0], "53400 too many portals") {
		t.Fatalf("%d Binds: %d bound, errors %q; want %d and one 53400", limit+1, binds, errs, limit)
	}
	got := rc.exchange(t, &pgproto3.Query{String: "ROLLBACK"})
	t.Logf("after the portal cap, ROLLBACK: %q", got)

	// SQL cursors (portals in PostgreSQL) have the same cap, in one
	// simple-protocol string per thousand.
	rc.exchange(t, &pgproto3.Query{String: "BEGIN"})
	for i := 0; i < limit; i += 1000 {
		var b strings.Builder
		for j := i; j < i+1000; j++ {
			fmt.Fprintf(&b, "DECLARE c%d CURSOR FOR SELECT 1;", j)
		}
		for _, m := range rc.exchange(t, &pgproto3.Query{String: b.String()}) {
			if strings.HasPrefix(m, "Error ") {
				t.Fatalf("DECLARE %d..%d: %s", i, i+999, m)
			}
		}
	}
	_, err = conn.Exec(ctx, "SELECT 1") // the other session is unaffected
	if err != nil {
		t.Fatal(err)
	}
	got = rc.exchangeToEOFOrReady(t, &pgproto3.Query{String: "DECLARE one_too_many CURSOR FOR SELECT 1"})
	if len(got) == 0 || !strings.HasPrefix(got[0], "ERROR 53400 too many cursors") {
		t.Fatalf("cursor %d: %q, want 53400", limit+1, got)
	}
}

// exchangeToEOFOrReady sends msgs and returns the server's errors and
// message types up to ReadyForQuery.
func (rc *rawClient) exchangeToEOFOrReady(t *testing.T, msgs ...pgproto3.FrontendMessage) []string {
	t.Helper()
	for _, m := range msgs {
		rc.fe.Send(m)
	}
	if err := rc.fe.Flush(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		switch m := rc.receive(t).(type) {
		case *pgproto3.ErrorResponse:
			out = append(out, m.Severity+" "+m.Code+" "+m.Message)
		case *pgproto3.ReadyForQuery:
			return out
		default:
			out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3."))
		}
	}
}
