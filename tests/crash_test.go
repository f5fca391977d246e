package tests

// The durability test of issue 2 (acceptance 8): a real sluice process is
// SIGKILLed at random moments while four connections write, and restarted.
// Afterwards every acknowledged write is in the tables, no write that was
// not acknowledged is half-applied, every view equals its query run in batch
// over the recovered tables (and the same computed here from the model), and
// the datagen-fed view has every id from 1 to its max exactly once.
//
// Each write is uniquely identifiable (fresh ids, and a balance or v value
// never used before), so a write whose outcome the client could not see
// (an error, or a connection that died mid-statement) is "unknown" and is
// decided by reading its rows once the server is back: they must be exactly
// as before the write or exactly as after it.
//
//	go test -run TestCrashRecovery -v ./tests/              # 20 kills
//	SLUICE_CRASH_KILLS=200 go test -run TestCrashRecovery ./tests/

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

const (
	crashWriters      = 4
	crashOwners       = 5
	crashMinKills     = 20
	crashKillsEnv     = "SLUICE_CRASH_KILLS"
	crashStmtTimeout  = 30 * time.Second
	crashConvergeWait = 10 * time.Second
	// Every crashEarlyKillEvery-th restart is killed again 0–50 ms after the
	// process starts, before it is ready, so recovery itself gets crashed.
	crashEarlyKillEvery = 5
)

// crashSystem is what the crash test runs against: Sluice, or (to check
// the test itself) PostgreSQL, which has no sources, no FLUSH and computes
// its views on read.
type crashSystem struct {
	name    string
	schema  []string
	flush   bool // FLUSH before reads that must see acknowledged writes
	datagen bool // the datagen source and gview exist
}

var crashTables = []string{
	`CREATE TABLE acct (id BIGINT PRIMARY KEY, owner TEXT, balance BIGINT)`,
	`CREATE TABLE ev (k BIGINT, v BIGINT)`,
}

const (
	crashPerOwner = `per_owner AS SELECT owner, count(*) n, sum(balance) s, min(balance) lo, max(balance) hi FROM acct GROUP BY owner`
	crashEvSum    = `ev_sum AS SELECT k, count(*) c, sum(v) s FROM ev GROUP BY k`
	crashJoined   = `joined AS SELECT a.owner, count(*) c FROM acct a JOIN ev e ON a.id = e.k GROUP BY a.owner`
)

var sluiceCrashSystem = crashSystem{
	name: "sluice",
	schema: append(append([]string{}, crashTables...),
		`CREATE SOURCE g (id BIGINT, v BIGINT) WITH (connector = 'datagen',
			fields.id.kind = 'sequence', fields.id.start = '1',
			fields.v.kind = 'random', fields.v.min = '0', fields.v.max = '1000000', fields.v.seed = '42',
			datagen.rows.per.second = '2000')`,
		`CREATE MATERIALIZED VIEW `+crashPerOwner,
		`CREATE MATERIALIZED VIEW `+crashEvSum,
		`CREATE MATERIALIZED VIEW `+crashJoined,
		`CREATE MATERIALIZED VIEW gview AS SELECT id, v FROM g`,
	),
	flush:   true,
	datagen: true,
}

// crashViews pairs each view with the same query for a batch SELECT.
var crashViews = []struct{ name, view, batch string }{
	{"per_owner",
		`SELECT owner, n, s, lo, hi FROM per_owner`,
		`SELECT owner, count(*), sum(balance), min(balance), max(balance) FROM acct GROUP BY owner`},
	{"ev_sum",
		`SELECT k, c, s FROM ev_sum`,
		`SELECT k, count(*), sum(v) FROM ev GROUP BY k`},
	{"joined",
		`SELECT owner, c FROM joined`,
		`SELECT a.owner, count(*) FROM acct a JOIN ev e ON a.id = e.k GROUP BY a.owner`},
}

func crashKillTarget(t *testing.T) int {
	n := crashMinKills
	if s := os.Getenv(crashKillsEnv); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("%s=%q is not a positive number", crashKillsEnv, s)
		}
		n = max(n, v)
	}
	return n
}

func TestCrashRecovery(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	runCrashTest(t, srv, sluiceCrashSystem, crashKillTarget(t))
}

// runCrashTest writes, kills and verifies; srv is running.
func runCrashTest(t *testing.T, srv *Server, sys crashSystem, targetKills int) {
	seed := time.Now().UnixNano()
	t.Logf("%s: seed %d, %d kills", sys.name, seed, targetKills)
	rng := rand.New(rand.NewSource(seed))

	setup := srv.Connect(t)
	ExecAll(t, setup, sys.schema...)
	var sample []string
	if sys.datagen {
		sample = crashWaitDatagen(t, setup)
	}
	_ = setup.Close(context.Background())

	var stop atomic.Bool
	var finalRestartDone atomic.Bool
	writers := make([]*crashWriter, crashWriters)
	var wg sync.WaitGroup
	for i := range writers {
		w := &crashWriter{
			t: t, id: i, srv: srv, simple: i%2 == 1,
			rng:  rand.New(rand.NewSource(seed + int64(i) + 1)),
			acct: map[int64]acctRow{}, ev: map[int64]evRow{},
			stop: &stop, final: &finalRestartDone, flush: sys.flush,
		}
		writers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.loop()
		}()
	}

	// The killer runs on this goroutine.
	// targetKills counts kills of a serving server; the kills during
	// recovery come on top.
	kills, earlyKills := 0, 0
	killErr := func() error {
		for restarts := 1; kills-earlyKills < targetKills; restarts++ {
			time.Sleep(time.Duration(50+rng.Intn(651)) * time.Millisecond) // a random moment, not a wait for a condition
			if err := srv.Kill(); err != nil {
				return fmt.Errorf("kill %d: %w", kills+1, err)
			}
			kills++
			if restarts%crashEarlyKillEvery == 0 {
				if err := srv.StartNoWait(); err != nil {
					return fmt.Errorf("restart %d: %w", restarts, err)
				}
				time.Sleep(time.Duration(rng.Intn(51)) * time.Millisecond)
				if err := srv.Kill(); err != nil {
					return fmt.Errorf("early kill after restart %d: %w", restarts, err)
				}
				kills++
				earlyKills++
			}
			if err := srv.Restart(); err != nil {
				return fmt.Errorf("restart %d: %w", restarts, err)
			}
		}
		return nil
	}()
	finalRestartDone.Store(true)
	if killErr == nil {
		// Let every writer get some writes acknowledged by the last incarnation.
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			done := true
			for _, w := range writers {
				done = done && w.ackedAfterFinal.Load() >= 20
			}
			if done {
				break
			}
			time.Sleep(20 * time.Millisecond) // polling, bounded by deadline
		}
	}
	stop.Store(true)
	wg.Wait()
	if killErr != nil {
		t.Fatalf("killer: %v", killErr)
	}

	// Merge the writers' models (their keys are disjoint).
	m := &crashModel{sys: sys, acct: map[int64]acctRow{}, ev: map[int64]evRow{}}
	var writes, acked, unknown int
	for _, w := range writers {
		for id, r := range w.acct {
			m.acct[id] = r
		}
		for v, r := range w.ev {
			m.ev[v] = r
		}
		writes += w.writes
		acked += w.acked
		unknown += w.unknown
		m.mismatches = append(m.mismatches, w.mismatches...)
	}
	if acked == 0 {
		m.mismatch("no write was acknowledged")
	}

	conn := srv.Connect(t)
	m.verify(t, conn, sample, "after the kills")
	_ = conn.Close(context.Background())

	// A clean shutdown keeps everything too.
	if err := srv.Stop(); err != nil {
		m.mismatch("clean shutdown: %v", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatalf("restart after clean shutdown: %v", err)
	}
	conn2 := srv.Connect(t)
	m.verify(t, conn2, sample, "after a clean restart")

	summary := fmt.Sprintf("kills=%d writes=%d acked=%d unknown=%d mismatches=%d", kills, writes, acked, unknown, len(m.mismatches))
	t.Logf("%s", summary)
	t.Logf("details: %d of the kills hit a server still recovering; %d rows in acct, %d distinct v in ev",
		earlyKills, len(m.acct), len(m.ev))
	fmt.Println(summary)
	for i, s := range m.mismatches {
		if i == 50 {
			t.Errorf("… and %d more mismatches", len(m.mismatches)-50)
			break
		}
		t.Errorf("mismatch: %s", s)
	}
}

// crashWaitDatagen waits for the datagen view to have 100 rows and returns
// them, to check after the kills that replay regenerated the same values.
func crashWaitDatagen(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), crashStmtTimeout)
		var res *TextResult
		_, err := conn.Exec(ctx, "FLUSH")
		if err == nil {
			res, err = QueryText(ctx, conn, "SELECT id, v FROM gview WHERE id <= 100 ORDER BY id")
		}
		cancel()
		if err != nil {
			t.Fatalf("reading gview: %s", describeErr(err))
		}
		if len(res.Rows) == 100 {
			return res.Lines()
		}
		if time.Now().After(deadline) {
			t.Fatalf("gview has %d of its first 100 rows after 30s", len(res.Rows))
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by deadline
	}
}

// ---------------------------------------------------------------------------
// The model.

type acctRow struct {
	owner   string
	balance int64
}

// evRow is every copy of the rows of ev holding one v (all have the same k).
type evRow struct {
	k, n int64
}

type crashModel struct {
	sys        crashSystem
	acct       map[int64]acctRow
	ev         map[int64]evRow
	mismatches []string
}

func (m *crashModel) mismatch(format string, args ...any) {
	m.mismatches = append(m.mismatches, fmt.Sprintf(format, args...))
}

// verify compares the server with the model: tables, views, datagen view.
func (m *crashModel) verify(t *testing.T, conn *pgx.Conn, sample []string, phase string) {
	t.Helper()
	before := len(m.mismatches)
	defer func() {
		for i := before; i < len(m.mismatches); i++ {
			m.mismatches[i] = phase + ": " + m.mismatches[i]
		}
	}()
	query := func(sql string) [][]string {
		ctx, cancel := context.WithTimeout(context.Background(), crashStmtTimeout)
		defer cancel()
		res, err := QueryText(ctx, conn, sql)
		if err != nil {
			t.Fatalf("%s: %s", sql, describeErr(err))
		}
		return res.Rows
	}
	flush := func() {
		if !m.sys.flush {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), crashStmtTimeout)
		defer cancel()
		if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
			t.Fatalf("FLUSH: %s", describeErr(err))
		}
	}
	flush()

	// acct: every acknowledged write and nothing else.
	got := map[int64]acctRow{}
	for _, r := range query("SELECT id, owner, balance FROM acct") {
		id, bal := mustInt(t, r[0]), mustInt(t, r[2])
		if _, dup := got[id]; dup {
			m.mismatch("acct: primary key %d appears twice", id)
		}
		got[id] = acctRow{r[1], bal}
	}
	for id, want := range m.acct {
		if g, ok := got[id]; !ok {
			m.mismatch("acct: row %d %v lost", id, want)
		} else if g != want {
			m.mismatch("acct: row %d is %v, want %v", id, g, want)
		}
	}
	for id, g := range got {
		if _, ok := m.acct[id]; !ok {
			m.mismatch("acct: row %d %v was never acknowledged (or was deleted)", id, g)
		}
	}

	// ev: the multiset of rows.
	gotEv := map[int64]evRow{}
	for _, r := range query("SELECT k, v FROM ev") {
		k, v := mustInt(t, r[0]), mustInt(t, r[1])
		e := gotEv[v]
		if e.n > 0 && e.k != k {
			m.mismatch("ev: v=%d appears with k=%d and k=%d", v, e.k, k)
		}
		gotEv[v] = evRow{k, e.n + 1}
	}
	for v, want := range m.ev {
		if g := gotEv[v]; g != want {
			m.mismatch("ev: v=%d has %d rows with k=%d, want %d with k=%d", v, g.n, g.k, want.n, want.k)
		}
	}
	for v, g := range gotEv {
		if _, ok := m.ev[v]; !ok {
			m.mismatch("ev: %d rows (k=%d, v=%d) were never acknowledged (or were deleted)", g.n, g.k, v)
		}
	}

	// Views: equal to the batch query, and to the model. They may take a
	// moment to converge after recovery; FLUSH and poll with a deadline.
	expected := m.expectedViews()
	for _, cv := range crashViews {
		deadline := time.Now().Add(crashConvergeWait)
		for {
			view := sortedLines(query(cv.view))
			batch := sortedLines(query(cv.batch))
			model := expected[cv.name]
			if equalLines(view, batch) && equalLines(view, model) {
				break
			}
			if time.Now().After(deadline) {
				if !equalLines(view, batch) {
					m.mismatch("view %s differs from its batch query (-view +batch):\n%s", cv.name, capLines(lineDiff(view, batch), 40))
				}
				if !equalLines(view, model) {
					m.mismatch("view %s differs from the model (-view +model):\n%s", cv.name, capLines(lineDiff(view, model), 40))
				}
				break
			}
			time.Sleep(50 * time.Millisecond) // polling, bounded by deadline
			flush()
		}
	}

	if !m.sys.datagen {
		return
	}
	// gview: ids 1..max, each once, with the values first seen.
	r := query("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM gview")[0]
	n, distinct, hi := mustInt(t, r[0]), mustInt(t, r[1]), mustIntOr(r[3], 0)
	lo := mustIntOr(r[2], 1)
	if n == 0 || n != distinct || n != hi || lo != 1 {
		m.mismatch("gview: count=%d count(DISTINCT id)=%d min=%s max=%s, want count = distinct = max and min 1", n, distinct, r[2], r[3])
	}
	if again := lines(query("SELECT id, v FROM gview WHERE id <= 100 ORDER BY id")); !equalLines(again, sample) {
		m.mismatch("gview: replay changed the first 100 rows (-before +now):\n%s", capLines(lineDiff(sample, again), 40))
	}
	// The source is still producing.
	deadline := time.Now().Add(crashConvergeWait)
	for {
		flush()
		now := mustIntOr(query("SELECT max(id) FROM gview")[0][0], 0)
		if now > hi {
			break
		}
		if time.Now().After(deadline) {
			m.mismatch("gview: max(id) stuck at %d for %v after recovery", hi, crashConvergeWait)
			break
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by deadline
	}
}

// expectedViews computes each view's rows from the model.
func (m *crashModel) expectedViews() map[string][]string {
	type agg struct{ n, s, lo, hi int64 }
	owners := map[string]*agg{}
	for _, r := range m.acct {
		a := owners[r.owner]
		if a == nil {
			a = &agg{lo: r.balance, hi: r.balance}
			owners[r.owner] = a
		}
		a.n++
		a.s += r.balance
		a.lo = min(a.lo, r.balance)
		a.hi = max(a.hi, r.balance)
	}
	evs := map[int64]*agg{}
	joined := map[string]int64{}
	for v, r := range m.ev {
		a := evs[r.k]
		if a == nil {
			a = &agg{}
			evs[r.k] = a
		}
		a.n += r.n
		a.s += v * r.n
		if acct, ok := m.acct[r.k]; ok {
			joined[acct.owner] += r.n
		}
	}
	out := map[string][]string{}
	for o, a := range owners {
		out["per_owner"] = append(out["per_owner"], fmt.Sprintf("%s %d %d %d %d", o, a.n, a.s, a.lo, a.hi))
	}
	for k, a := range evs {
		out["ev_sum"] = append(out["ev_sum"], fmt.Sprintf("%d %d %d", k, a.n, a.s))
	}
	for o, c := range joined {
		out["joined"] = append(out["joined"], fmt.Sprintf("%s %d", o, c))
	}
	for _, l := range out {
		sort.Strings(l)
	}
	return out
}

// capLines keeps the first n lines of s.
func capLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) <= n {
		return s
	}
	return strings.Join(lines[:n], "") + fmt.Sprintf("    … %d more lines\n", len(lines)-n)
}

func lines(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = strings.Join(r, " ")
	}
	return out
}

func sortedLines(rows [][]string) []string {
	out := lines(rows)
	sort.Strings(out)
	return out
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("expected an integer, got %q", s)
	}
	return n
}

func mustIntOr(s string, def int64) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return def
	}
	return n
}

// ---------------------------------------------------------------------------
// Writers.

// crashWriter owns a slice of the key space: acct ids (id+1)·10⁹ + n, and
// balance and v values ≡ id mod crashWriters, never reused. Nothing else
// writes its rows, so its model of them is exact once unknowns are decided.
type crashWriter struct {
	t      *testing.T
	id     int
	srv    *Server
	simple bool
	rng    *rand.Rand
	stop   *atomic.Bool
	final  *atomic.Bool
	flush  bool

	conn    *pgx.Conn
	acct    map[int64]acctRow
	acctIDs []int64 // the keys of acct, for picking one at random
	ev      map[int64]evRow
	evVs    []int64
	nextID  int64
	nextVal int64

	writes, acked, unknown int
	ackedAfterFinal        atomic.Int64
	mismatches             []string
}

// crashOp is one write: its statement, and the state of the rows it touches
// before and after (nil = absent). Exactly one of acct*/ev* is set.
type crashOp struct {
	desc       string
	sql        string
	args       []any
	rows       int64 // rows affected when it succeeds
	acctBefore map[int64]*acctRow
	acctAfter  map[int64]*acctRow
	evBefore   map[int64]*evRow
	evAfter    map[int64]*evRow
}

func (w *crashWriter) mismatch(format string, args ...any) {
	w.mismatches = append(w.mismatches, fmt.Sprintf("writer %d: ", w.id)+fmt.Sprintf(format, args...))
}

func (w *crashWriter) loop() {
	defer func() {
		if w.conn != nil {
			_ = w.conn.Close(context.Background())
		}
	}()
	for !w.stop.Load() {
		w.run(w.nextOp())
	}
}

func (w *crashWriter) val() int64 {
	w.nextVal++
	return w.nextVal*crashWriters + int64(w.id)
}

func (w *crashWriter) owner() string { return fmt.Sprintf("o%d", w.rng.Intn(crashOwners)) }

func (w *crashWriter) nextOp() *crashOp {
	p := w.rng.Intn(100)
	switch {
	case p < 30 || len(w.acctIDs) < 5:
		return w.opInsertAcct()
	case p < 55:
		return w.opUpdateAcct()
	case p < 65:
		return w.opDeleteAcct()
	case p < 90 || len(w.evVs) == 0:
		return w.opInsertEv()
	default:
		return w.opDeleteEv()
	}
}

func (w *crashWriter) opInsertAcct() *crashOp {
	n := 1 + w.rng.Intn(3)
	op := &crashOp{rows: int64(n), acctBefore: map[int64]*acctRow{}, acctAfter: map[int64]*acctRow{}}
	var vals []string
	for i := 0; i < n; i++ {
		w.nextID++
		id := int64(w.id+1)*1_000_000_000 + w.nextID
		r := acctRow{w.owner(), w.val()}
		op.acctBefore[id] = nil
		op.acctAfter[id] = &r
		op.args = append(op.args, id, r.owner, r.balance)
		vals = append(vals, fmt.Sprintf("($%d, $%d, $%d)", 3*i+1, 3*i+2, 3*i+3))
	}
	op.sql = "INSERT INTO acct VALUES " + strings.Join(vals, ", ")
	op.desc = fmt.Sprintf("insert %d acct rows %v", n, op.args)
	return op
}

func (w *crashWriter) opUpdateAcct() *crashOp {
	id := w.acctIDs[w.rng.Intn(len(w.acctIDs))]
	old := w.acct[id]
	r := acctRow{w.owner(), w.val()}
	return &crashOp{
		desc: fmt.Sprintf("update acct %d to %v", id, r),
		sql:  "UPDATE acct SET owner = $1, balance = $2 WHERE id = $3", args: []any{r.owner, r.balance, id},
		rows:       1,
		acctBefore: map[int64]*acctRow{id: &old}, acctAfter: map[int64]*acctRow{id: &r},
	}
}

func (w *crashWriter) opDeleteAcct() *crashOp {
	op := &crashOp{acctBefore: map[int64]*acctRow{}, acctAfter: map[int64]*acctRow{}}
	n := 1 + w.rng.Intn(2)
	var ph []string
	for i := 0; i < n; i++ {
		id := w.acctIDs[w.rng.Intn(len(w.acctIDs))]
		if _, dup := op.acctBefore[id]; dup {
			continue
		}
		old := w.acct[id]
		op.acctBefore[id] = &old
		op.acctAfter[id] = nil
		op.args = append(op.args, id)
		ph = append(ph, fmt.Sprintf("$%d", len(op.args)))
	}
	op.rows = int64(len(op.args))
	op.sql = "DELETE FROM acct WHERE id IN (" + strings.Join(ph, ", ") + ")"
	op.desc = fmt.Sprintf("delete acct rows %v", op.args)
	return op
}

func (w *crashWriter) opInsertEv() *crashOp {
	op := &crashOp{evBefore: map[int64]*evRow{}, evAfter: map[int64]*evRow{}}
	n := 1 + w.rng.Intn(3)
	var vals []string
	add := func(k, v int64) {
		op.args = append(op.args, k, v)
		vals = append(vals, fmt.Sprintf("($%d, $%d)", len(op.args)-1, len(op.args)))
		if r := op.evAfter[v]; r != nil {
			r.n++
		} else {
			op.evBefore[v] = nil
			op.evAfter[v] = &evRow{k, 1}
		}
	}
	var first [2]int64
	for i := 0; i < n; i++ {
		var k int64
		if len(w.acctIDs) > 0 && w.rng.Intn(10) < 7 {
			k = w.acctIDs[w.rng.Intn(len(w.acctIDs))]
		} else {
			// Someone's id, maybe not (or no longer) in acct.
			k = int64(w.rng.Intn(crashWriters)+1)*1_000_000_000 + int64(1+w.rng.Intn(int(w.nextID)+1))
		}
		v := w.val()
		if i == 0 {
			first = [2]int64{k, v}
		}
		add(k, v)
	}
	if w.rng.Intn(4) == 0 { // a duplicate row in the same statement
		add(first[0], first[1])
	}
	op.rows = int64(len(vals))
	op.sql = "INSERT INTO ev VALUES " + strings.Join(vals, ", ")
	op.desc = fmt.Sprintf("insert ev rows %v", op.args)
	return op
}

func (w *crashWriter) opDeleteEv() *crashOp {
	v := w.evVs[w.rng.Intn(len(w.evVs))]
	old := w.ev[v]
	return &crashOp{
		desc: fmt.Sprintf("delete ev v=%d (%d rows)", v, old.n),
		sql:  "DELETE FROM ev WHERE v = $1", args: []any{v},
		rows:     old.n,
		evBefore: map[int64]*evRow{v: &old}, evAfter: map[int64]*evRow{v: nil},
	}
}

// connect (re)opens the writer's connection, retrying while the server
// restarts. It returns false if the test is stopping or the server stays
// unreachable.
func (w *crashWriter) connect() bool {
	if w.conn != nil && !w.conn.IsClosed() {
		return true
	}
	w.conn = nil
	connString := w.srv.ConnString()
	if w.simple {
		connString = w.srv.SimpleConnString()
	}
	deadline := time.Now().Add(2 * startTimeout)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, connString)
		cancel()
		if err == nil {
			w.conn = conn
			return true
		}
		if w.stop.Load() {
			return false
		}
		time.Sleep(20 * time.Millisecond) // polling a restarting server, bounded by deadline
	}
	w.mismatch("server unreachable for %v", 2*startTimeout)
	w.stop.Store(true)
	return false
}

func (w *crashWriter) dropConn() {
	if w.conn != nil {
		_ = w.conn.Close(context.Background())
		w.conn = nil
	}
}

// run executes op, and decides its outcome if the client cannot tell.
func (w *crashWriter) run(op *crashOp) {
	for {
		if !w.connect() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), crashStmtTimeout)
		tag, err := w.conn.Exec(ctx, op.sql, op.args...)
		cancel()
		if err != nil && pgconn.SafeToRetry(err) {
			// Nothing reached the server: not a write yet.
			w.dropConn()
			continue
		}
		w.writes++
		if err == nil {
			w.acked++
			if w.final.Load() {
				w.ackedAfterFinal.Add(1)
			}
			w.apply(op, true)
			if tag.RowsAffected() != op.rows {
				w.mismatch("%s: %d rows affected, want %d (was an earlier acknowledged write to these rows lost?)",
					op.desc, tag.RowsAffected(), op.rows)
				w.resync(op)
			}
			return
		}
		w.unknown++
		if pgconn.Timeout(err) {
			w.mismatch("%s: no answer within %v", op.desc, crashStmtTimeout)
		}
		// Every write is valid, so the server may refuse one only for a
		// transient reason (connection, rollback, resources, shutdown).
		if code := PgCode(err); code != "" && !transientCode(code) {
			w.mismatch("%s: refused with %s", op.desc, describeErr(err))
		}
		if w.conn.IsClosed() || PgCode(err) == "" {
			w.dropConn()
		}
		w.reconcile(op)
		return
	}
}

// transientCode reports whether a SQLSTATE may refuse a valid write:
// connection trouble, a rolled-back transaction, lack of resources, a
// shutdown or a system error.
func transientCode(code string) bool {
	switch code[:2] {
	case "08", "40", "53", "57", "58":
		return true
	}
	return false
}

// apply makes the op's after-state (or, when the op did not apply, nothing)
// the model's state of its rows.
func (w *crashWriter) apply(op *crashOp, applied bool) {
	if !applied {
		return
	}
	for id, r := range op.acctAfter {
		w.setAcct(id, r)
	}
	for v, r := range op.evAfter {
		w.setEv(v, r)
	}
}

func (w *crashWriter) setAcct(id int64, r *acctRow) {
	_, had := w.acct[id]
	switch {
	case r != nil && !had:
		w.acctIDs = append(w.acctIDs, id)
		w.acct[id] = *r
	case r != nil:
		w.acct[id] = *r
	case had:
		delete(w.acct, id)
		w.acctIDs = removeID(w.acctIDs, id)
	}
}

func (w *crashWriter) setEv(v int64, r *evRow) {
	_, had := w.ev[v]
	switch {
	case r != nil && !had:
		w.evVs = append(w.evVs, v)
		w.ev[v] = *r
	case r != nil:
		w.ev[v] = *r
	case had:
		delete(w.ev, v)
		w.evVs = removeID(w.evVs, v)
	}
}

func removeID(ids []int64, id int64) []int64 {
	for i, x := range ids {
		if x == id {
			ids[i] = ids[len(ids)-1]
			return ids[:len(ids)-1]
		}
	}
	return ids
}

// reconcile reads the rows an unknown op touched, once the server answers
// again, and decides whether it applied: they must be entirely as before or
// entirely as after. Anything else is a half-applied write; the model then
// takes the rows as they are, so that one fault is reported once.
func (w *crashWriter) reconcile(op *crashOp) {
	deadline := time.Now().Add(2 * startTimeout)
	for time.Now().Before(deadline) {
		if !w.connect() {
			w.mismatch("%s: outcome never decided", op.desc)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), crashStmtTimeout)
		err := w.decide(ctx, op)
		cancel()
		if err == nil {
			return
		}
		w.dropConn()
	}
	w.mismatch("%s: outcome never decided", op.desc)
}

func (w *crashWriter) decide(ctx context.Context, op *crashOp) error {
	if op.acctAfter != nil {
		got, err := w.readAcct(ctx, op.acctAfter)
		if err != nil {
			return err
		}
		switch {
		case sameAcct(got, op.acctAfter):
			w.apply(op, true)
		case sameAcct(got, op.acctBefore):
		default:
			w.mismatch("%s: half-applied: rows are %s", op.desc, fmtAcct(got))
			for id, r := range got {
				w.setAcct(id, r)
			}
		}
		return nil
	}
	got, err := w.readEv(ctx, op.evAfter)
	if err != nil {
		return err
	}
	switch {
	case sameEv(got, op.evAfter):
		w.apply(op, true)
	case sameEv(got, op.evBefore):
	default:
		w.mismatch("%s: half-applied: rows are %v", op.desc, fmtEv(got))
		for v, r := range got {
			w.setEv(v, r)
		}
	}
	return nil
}

// resync makes the model's state of op's rows what the server has, after a
// mismatch, so that one fault is reported once rather than by every later
// write to the same rows.
func (w *crashWriter) resync(op *crashOp) {
	ctx, cancel := context.WithTimeout(context.Background(), crashStmtTimeout)
	defer cancel()
	if op.acctAfter != nil {
		if got, err := w.readAcct(ctx, op.acctAfter); err == nil {
			for id, r := range got {
				w.setAcct(id, r)
			}
		}
		return
	}
	if got, err := w.readEv(ctx, op.evAfter); err == nil {
		for v, r := range got {
			w.setEv(v, r)
		}
	}
}

// readAcct reads the acct rows with the keys of ids (nil = absent).
func (w *crashWriter) readAcct(ctx context.Context, ids map[int64]*acctRow) (map[int64]*acctRow, error) {
	if w.flush {
		if _, err := w.conn.Exec(ctx, "FLUSH"); err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(ids))
	got := map[int64]*acctRow{}
	for id := range ids {
		keys = append(keys, itoa(id))
		got[id] = nil
	}
	res, err := QueryText(ctx, w.conn, "SELECT id, owner, balance FROM acct WHERE id IN ("+strings.Join(keys, ", ")+")")
	if err != nil {
		return nil, err
	}
	for _, r := range res.Rows {
		id, _ := strconv.ParseInt(r[0], 10, 64)
		bal, _ := strconv.ParseInt(r[2], 10, 64)
		got[id] = &acctRow{r[1], bal}
	}
	return got, nil
}

// readEv reads the ev rows with the v values of vs (nil = none).
func (w *crashWriter) readEv(ctx context.Context, vs map[int64]*evRow) (map[int64]*evRow, error) {
	if w.flush {
		if _, err := w.conn.Exec(ctx, "FLUSH"); err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(vs))
	got := map[int64]*evRow{}
	for v := range vs {
		keys = append(keys, itoa(v))
		got[v] = nil
	}
	res, err := QueryText(ctx, w.conn, "SELECT k, v FROM ev WHERE v IN ("+strings.Join(keys, ", ")+")")
	if err != nil {
		return nil, err
	}
	for _, r := range res.Rows {
		k, _ := strconv.ParseInt(r[0], 10, 64)
		v, _ := strconv.ParseInt(r[1], 10, 64)
		if e := got[v]; e != nil {
			e.n++
		} else {
			got[v] = &evRow{k, 1}
		}
	}
	return got, nil
}

func sameAcct(a, b map[int64]*acctRow) bool {
	if len(a) != len(b) {
		return false
	}
	for id, x := range a {
		y, ok := b[id]
		if !ok || (x == nil) != (y == nil) || (x != nil && *x != *y) {
			return false
		}
	}
	return true
}

func sameEv(a, b map[int64]*evRow) bool {
	if len(a) != len(b) {
		return false
	}
	for v, x := range a {
		y, ok := b[v]
		if !ok || (x == nil) != (y == nil) || (x != nil && *x != *y) {
			return false
		}
	}
	return true
}

func fmtAcct(m map[int64]*acctRow) string {
	var parts []string
	for id, r := range m {
		if r == nil {
			parts = append(parts, fmt.Sprintf("%d:absent", id))
		} else {
			parts = append(parts, fmt.Sprintf("%d:%v", id, *r))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func fmtEv(m map[int64]*evRow) string {
	var parts []string
	for v, r := range m {
		if r == nil {
			parts = append(parts, fmt.Sprintf("v=%d:absent", v))
		} else {
			parts = append(parts, fmt.Sprintf("v=%d:k=%d×%d", v, r.k, r.n))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
