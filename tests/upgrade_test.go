package tests

// Upgrades (issue 16, items 1 and 2; README "Upgrades and formats"): a
// data directory written by an earlier build is started by this one. The
// earlier build is built from a fixed commit of this repository through
// `git worktree` and cached under the user's cache directory
// (sluice-upgrade/<commit>/sluice), so reruns start at once.
//
//	go test -run 'TestUpgrade|TestStoredPlanRefused|TestVersionFlag' -v ./tests/
//
// upgradeFrom is the first commit with the versioned formats and the vnode
// state layout; when a release is cut, it becomes the previous release
// (each release reads the directories of the one before). A change of a
// format after it must bump that format's number and teach this build to
// read the old one, or this test fails.

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"sluice/exec/spec"
	"sluice/storage"
)

const (
	// upgradeFrom is the earlier build TestUpgrade starts from.
	upgradeFrom = "6240167b04d9a143a886e338f714bdb585dc0db7"
	// unversionedBuild is a build from before the versioned formats.
	unversionedBuild = "bb0dbe574e0b6d52a0dcb0fd97d94f143a069c12"
)

// earlierBuild returns a sluice binary built from commit of this
// repository, building it (in a temporary git worktree) if the cache
// lacks it.
func earlierBuild(t *testing.T, commit string) string {
	t.Helper()
	if os.Getenv(envBinary) != "" {
		t.Skipf("%s is set: this checkout's source is not what runs", envBinary)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "sluice-upgrade", commit)
	bin := filepath.Join(dir, "sluice")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "src")
	run := func(dir string, name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run(root, "git", "worktree", "add", "--detach", src, commit)
	defer run(root, "git", "worktree", "remove", "--force", src)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	tmp := bin + fmt.Sprintf(".tmp%d", os.Getpid())
	run(src, "go", "build", "-ldflags", StampFlag(src), "-o", tmp, "./cmd/sluice")
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("built %s at %s in %v", bin, commit[:12], time.Since(start).Round(time.Second))
	return bin
}

// TestVersionFlag: --version prints the build (stamped at link time, not
// "devel" nor "unknown") and the formats it reads and writes; the data
// directory records the build that last wrote it, which the next start
// logs.
func TestVersionFlag(t *testing.T) {
	bin := Binary(t)
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("sluice --version: %v\n%s", err, out)
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	stamp := BuildStamp(root)
	if os.Getenv(envBinary) != "" {
		stamp = strings.TrimPrefix(strings.SplitN(string(out), "\n", 2)[0], "sluice ")
	}
	want := "sluice " + stamp + "\nwrites formats: catalog 1, plan 1, state 1\nreads formats: catalog 1-1, plan 1-1, state 1-1\n"
	if string(out) != want {
		t.Fatalf("sluice --version printed\n%s\nwant\n%s", out, want)
	}
	if stamp == "" || stamp == "devel" || stamp == "unknown" {
		t.Fatalf("build stamp %q names no build", stamp)
	}
	srv := StartServer(t, Options{})
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("data directory %s: formats catalog 1, plan 1, state 1, last written by build %s; this build is %s", srv.DataDir, stamp, stamp)
	if !strings.Contains(srv.Logs(), line) {
		t.Fatalf("the second start did not log %q:\n%s", line, capLines(srv.Logs(), 40))
	}
}

// TestUpgradeRefusesUnversioned: a data directory of a build from before
// the versioned formats is refused with both versions named, exit status
// 3, and nothing changed: the build that wrote it starts on it again.
func TestUpgradeRefusesUnversioned(t *testing.T) {
	old := earlierBuild(t, unversionedBuild)
	srv := StartServer(t, Options{Binary: old})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)`,
		`INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c')`,
		`CREATE MATERIALIZED VIEW c AS SELECT count(*) AS n FROM t`)
	conn.Close(context.Background())
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, Binary(t), "--listen", FreeAddr(t), "--data-dir", srv.DataDir, "--unix-socket-dir", "")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("today's build on an unversioned directory: %v, want exit status 3; output:\n%s", err, out)
	}
	root, _ := ModuleRoot()
	for _, want := range []string{
		"refusing to start: data directory " + srv.DataDir + " was written by a build before versioned formats (format 0); this build (" +
			BuildStamp(root) + ") reads formats catalog 1, plan 1, state 1 and later only",
		"hint: Nothing was changed.",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	if err := srv.Start(); err != nil {
		t.Fatalf("the build that wrote the directory cannot start on it after the refusal: %v", err)
	}
	conn = srv.Connect(t)
	if got := queryLines(t, conn, "SELECT n FROM c"); strings.Join(got, ",") != "3" {
		t.Fatalf("after the refusal the old build reads c = %v, want 3", got)
	}
}

// TestStoredPlanRefused: one object whose stored plan has a format this
// build cannot read is refused alone: SHOW shows why (naming the object
// and both versions), reads of it and of the views over it fail with
// 55000, everything else runs, and DROP … CASCADE removes it and its
// state.
func TestStoredPlanRefused(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE t (id BIGINT PRIMARY KEY, g TEXT, v BIGINT)`,
		`INSERT INTO t VALUES (1, 'a', 10), (2, 'a', 20), (3, 'b', 5)`,
		`CREATE MATERIALIZED VIEW per_g AS SELECT g, sum(v) AS s FROM t GROUP BY g`,
		`CREATE MATERIALIZED VIEW over_g AS SELECT count(*) AS n FROM per_g`,
		`CREATE MATERIALIZED VIEW other AS SELECT g, max(v) AS m FROM t GROUP BY g`,
		`FLUSH`)
	conn.Close(context.Background())
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}

	// What a later build would have stored: per_g's plan in format 2.
	db, err := storage.Open(srv.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	entries, next, err := db.LoadCatalog()
	if err != nil {
		t.Fatal(err)
	}
	var perG *storage.CatalogEntry
	for _, e := range entries {
		if e.Name == "per_g" {
			perG = e
		}
		if (e.Kind == "materialized view") != (len(e.Plan) > 0) {
			t.Errorf("%s %s: stored plan %q", e.Kind, e.Name, e.Plan)
		}
		if len(e.Plan) > 0 && spec.PlanVersion(e.Plan) != 1 {
			t.Errorf("%s stored a plan of format %d, want 1", e.Name, spec.PlanVersion(e.Plan))
		}
	}
	perGState := countState(t, db, perG.ID)
	if perGState == 0 {
		t.Fatal("per_g stored no state")
	}
	perG.Plan = []byte(strings.Replace(string(perG.Plan), `"version":1`, `"version":2`, 1))
	wb := db.NewWriteBatch()
	storage.PutCatalogSync(wb, perG, 0, next)
	if err := db.WriteSync(wb); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if err := srv.Start(); err != nil {
		t.Fatalf("one refused object stopped the server: %v", err)
	}
	conn = srv.Connect(t)
	root, _ := ModuleRoot()
	stamp := BuildStamp(root)
	if os.Getenv(envBinary) != "" {
		stamp = "" // not known; the rest of the message is checked
	}
	why := `the stored plan of materialized view "per_g" has format 2; this build (` + stamp
	show := queryRows(t, conn, "SHOW MATERIALIZED VIEWS")
	want := map[string]string{
		"per_g":  "refused: " + why,
		"over_g": `refused: it reads materialized view "per_g", which is refused: ` + why,
		"other":  "",
	}
	for _, f := range show {
		w, ok := want[f[0]]
		if !ok {
			t.Errorf("SHOW MATERIALIZED VIEWS: unexpected %v", f)
			continue
		}
		// Name, Rows, Errors, Status, Last Error.
		if status, refused := f[3], w != ""; (status == "refused") != refused {
			t.Errorf("SHOW MATERIALIZED VIEWS: %s: status %q", f[0], status)
		}
		last := strings.TrimPrefix(f[4], "·") // the empty string
		if !strings.HasPrefix(last, w) || (w == "") != (last == "") || (w != "" && !strings.HasSuffix(last, ") reads plan formats 1 to 1")) {
			t.Errorf("SHOW MATERIALIZED VIEWS: %s: last error %q, want %q… reads plan formats 1 to 1", f[0], last, w)
		}
		delete(want, f[0])
	}
	if len(want) > 0 {
		t.Errorf("SHOW MATERIALIZED VIEWS lacks %v: %v", want, show)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, v := range []string{"per_g", "over_g"} {
		_, err := QueryText(ctx, conn, "SELECT * FROM "+v)
		if PgCode(err) != "55000" || !strings.Contains(err.Error(), "is refused by this build") {
			t.Errorf("SELECT from refused %s: %v, want 55000", v, err)
		}
	}
	// The rest runs: other answers and follows new writes.
	ExecAll(t, conn, `INSERT INTO t VALUES (4, 'b', 50)`, `FLUSH`)
	if got := strings.Join(queryLines(t, conn, "SELECT g, m FROM other"), ","); got != "a 20,b 50" {
		t.Errorf("other = %s, want a 20,b 50", got)
	}
	ExecAll(t, conn, `DROP MATERIALIZED VIEW per_g CASCADE`, `FLUSH`)
	if got := queryLines(t, conn, "SHOW MATERIALIZED VIEWS"); len(got) != 1 || !strings.HasPrefix(got[0], "other ") {
		t.Errorf("after DROP … CASCADE: SHOW MATERIALIZED VIEWS = %v, want only other", got)
	}
	conn.Close(context.Background())
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	db, err = storage.Open(srv.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if n := countState(t, db, perG.ID); n != 0 {
		t.Errorf("the refused view's %d state and row keys are left after DROP", n)
	}
}

// countState counts the operator state and rows relation id keeps.
func countState(t *testing.T, db *storage.DB, id uint64) int {
	t.Helper()
	n := 0
	count := func(_, _ []byte) error { n++; return nil }
	for _, p := range [][]byte{storage.Key(storage.SpaceRelation, id)} {
		if err := db.Scan(p, count); err != nil {
			t.Fatal(err)
		}
	}
	lo, hi := storage.Key(storage.SpaceState, id<<16), storage.Key(storage.SpaceState, (id+1)<<16)
	err := db.Scan(storage.Key(storage.SpaceState, 0)[:2], func(k, v []byte) error {
		if string(k) >= string(lo) && string(k) < string(hi) {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// queryRows runs sql and returns its rows as text.
func queryRows(t *testing.T, conn *pgx.Conn, sql string) [][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := QueryText(ctx, conn, sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res.Rows
}

// upgradeViews are the views TestUpgrade creates with the earlier build:
// a join, aggregations, a tumbling window, Top-N over a table and over a
// Kafka source, and session windows.
var upgradeViews = []struct{ name, query string }{
	{"per_k", `SELECT k, count(*) AS n, sum(amount) AS total FROM src GROUP BY k`},
	{"joined", `SELECT s.k, count(*) AS n, sum(s.amount + a.bal) AS total FROM src AS s JOIN acct AS a ON s.k = a.owner GROUP BY s.k`},
	{"tumbled", `SELECT owner, window_start, count(*) AS n, sum(amount) AS total FROM TUMBLE(ev, ts, INTERVAL '10' SECOND) GROUP BY owner, window_start`},
	{"top3", `SELECT owner, id, amount FROM (SELECT owner, id, amount, ROW_NUMBER() OVER (PARTITION BY owner ORDER BY amount DESC, id) AS rn FROM ev) AS x WHERE rn <= 3`},
	{"src_top", `SELECT k, id, amount FROM (SELECT k, id, amount, ROW_NUMBER() OVER (PARTITION BY k ORDER BY amount DESC, id DESC) AS rn FROM src) AS x WHERE rn <= 2`},
	{"sessions", `SELECT owner, window_start, window_end, count(*) AS n, sum(amount) AS total FROM SESSION(ev, ts, INTERVAL '3' SECOND, owner) GROUP BY owner, window_start, window_end`},
}

// TestUpgrade: the earlier build (upgradeFrom) creates tables, a Kafka
// source, the upgradeViews and EXACTLY_ONCE Kafka and PostgreSQL sinks,
// takes writes, and is killed (SIGKILL) mid-stream; today's build starts
// on the same directory and runs on. Every view then equals the same
// query built from scratch by today's build (and per_k the count and sum
// the input determines), both sinks hold every input record exactly once,
// and the catalog is as the earlier build left it.
func TestUpgrade(t *testing.T) {
	old := earlierBuild(t, upgradeFrom)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d, upgrading from %s", seed, upgradeFrom[:12])

	broker := StartBroker(t, 2, "in")
	pgURL := FreshPostgresDB(t, "sluice_upgrade")
	srv := StartServer(t, Options{Binary: old, CheckpointInterval: 200 * time.Millisecond})
	setup := srv.Connect(t)
	kafkaWith := fmt.Sprintf(`connector = 'kafka', properties.bootstrap.server = '%s'`, broker.Addr)
	stmts := []string{
		`CREATE TABLE acct (owner TEXT PRIMARY KEY, bal BIGINT)`,
		`CREATE TABLE ev (id BIGINT PRIMARY KEY, owner TEXT, amount BIGINT, ts TIMESTAMP)`,
		`CREATE SOURCE src (id BIGINT, k TEXT, amount BIGINT) WITH (` + kafkaWith + `, topic = 'in', scan.startup.mode = 'earliest') FORMAT PLAIN ENCODE JSON`,
	}
	var accts []string
	for i := 0; i < eoKeys; i++ {
		accts = append(accts, fmt.Sprintf("('k%d', %d)", i, i*100))
	}
	stmts = append(stmts, `INSERT INTO acct VALUES `+strings.Join(accts, ", "))
	for _, v := range upgradeViews {
		stmts = append(stmts, `CREATE MATERIALIZED VIEW `+v.name+` AS `+v.query)
	}
	stmts = append(stmts,
		`CREATE SINK up_kafka FROM src WITH (`+kafkaWith+`, topic = 'out_plain', delivery = 'EXACTLY_ONCE') FORMAT PLAIN ENCODE JSON`,
		`CREATE SINK up_pg FROM src WITH (connector = 'postgres', url = '`+pgURL+`', table = 'eo_plain', write_mode = 'transactional', delivery = 'EXACTLY_ONCE')`)
	ExecAll(t, setup, stmts...)
	catalogBefore := upgradeCatalog(t, setup)
	setup.Close(context.Background())

	prod := newEOProducer(t, broker.Addr)
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		prod.run(ctx, eoRate)
	}()
	tw := &upgradeWriter{srv: srv, rng: rand.New(rand.NewSource(seed + 1))}
	go func() {
		defer wg.Done()
		tw.run(ctx)
	}()
	stopped := false
	stopWriting := func() {
		if !stopped {
			stopped = true
			stop()
			wg.Wait()
		}
	}
	defer stopWriting()

	// The earlier build runs the pipelines, then dies mid-stream.
	eoWaitViewRows(t, srv, 200)
	eoWaitWritten(t, srv)
	time.Sleep(time.Duration(100+rng.Intn(600)) * time.Millisecond) // a random moment
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed the earlier build after %d table writes", tw.count())

	// Today's build on the same directory.
	srv.SetBinary(Binary(t))
	if err := srv.Start(); err != nil {
		t.Fatalf("today's build on the earlier build's directory: %v", err)
	}
	if !strings.Contains(srv.Logs(), "last written by build "+upgradeFrom[:12]) {
		t.Errorf("today's build did not log the directory's build %s:\n%s", upgradeFrom[:12], capLines(srv.Logs(), 40))
	}
	eoWaitWritten(t, srv)
	time.Sleep(2 * time.Second) // writes go on under today's build
	stopWriting()
	acked := prod.finish(t)
	t.Logf("%d records produced, %d table writes", len(acked), tw.count())

	conn := srv.Connect(t)
	if after := upgradeCatalog(t, conn); after != catalogBefore {
		t.Errorf("the catalog changed across the upgrade:\nbefore\n%s\nafter\n%s", catalogBefore, after)
	}

	// Every view against the same query built from scratch by today's
	// build.
	for _, v := range upgradeViews {
		ExecAll(t, conn, `CREATE MATERIALIZED VIEW `+v.name+`_re AS `+v.query)
	}
	in := eoReadInput(t, broker.Addr, acked)
	wantAgg := map[string]eoAgg{}
	records := 0
	for id, n := range in {
		r := eoInput(id)
		records += n
		a := wantAgg[r.k]
		a.n += int64(n)
		a.total += int64(n) * r.amount
		wantAgg[r.k] = a
	}
	deadline := time.Now().Add(90 * time.Second)
	for _, v := range upgradeViews {
		for {
			ExecAll(t, conn, `FLUSH`)
			got := queryLines(t, conn, "SELECT * FROM "+v.name)
			re := queryLines(t, conn, "SELECT * FROM "+v.name+"_re")
			same := strings.Join(got, "\n") == strings.Join(re, "\n")
			if v.name == "per_k" && same {
				gotAgg := map[string]eoAgg{}
				for _, l := range got {
					f := strings.Fields(l)
					gotAgg[f[0]] = eoAgg{mustInt(t, f[1]), mustInt(t, f[2])}
				}
				if r := eoCompareAgg(wantAgg, gotAgg); !r.exact() {
					same = false
					if time.Now().After(deadline) {
						t.Errorf("per_k against the input: lost=%d duplicated=%d wrong=%d: %v", r.lost, r.duplicated, r.wrong, capNotes(r.notes, 10))
					}
				}
			}
			if same {
				t.Logf("view %s: %d rows, equal to a recomputation", v.name, len(got))
				if len(got) == 0 {
					t.Errorf("view %s is empty: the test checks nothing", v.name)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("view %s (%d rows) differs from its recomputation (%d rows):\n%s", v.name, len(got), len(re), diffLines(got, re, 20))
				break
			}
			time.Sleep(200 * time.Millisecond) // polling, bounded by deadline
		}
	}

	// The sinks: every input record once.
	plain := newEOTopicReader(t, broker.Addr, "out_plain")
	pg := MustConnect(t, pgURL)
	checks := []struct {
		name string
		read func() eoResult
	}{
		{"kafka", func() eoResult { return eoCompareRows(in, plain.rows(t)) }},
		{"postgres", func() eoResult { return eoCompareRows(in, eoPGRows(t, pg)) }},
	}
	for _, c := range checks {
		var r eoResult
		for {
			r = c.read()
			if r.exact() || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond) // polling, bounded by deadline
		}
		line := fmt.Sprintf("upgrade sink=%s records=%d lost=%d duplicated=%d wrong=%d", c.name, records, r.lost, r.duplicated, r.wrong)
		t.Log(line)
		if !r.exact() {
			t.Errorf("%s: %s", line, strings.Join(capNotes(r.notes, 20), "; "))
		}
	}
}

// upgradeCatalog describes the catalog: every object's kind, name and
// SHOW CREATE text.
func upgradeCatalog(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var b strings.Builder
	for _, kind := range []string{"TABLE", "SOURCE", "MATERIALIZED VIEW", "SINK"} {
		for _, r := range queryRows(t, conn, "SHOW "+kind+"S") {
			name := r[0]
			if strings.HasSuffix(name, "_re") {
				continue
			}
			fmt.Fprintf(&b, "%s %s: %s\n", kind, name, strings.Join(queryLines(t, conn, "SHOW CREATE "+kind+" "+name), " "))
		}
	}
	return b.String()
}

// diffLines lists up to n lines in one of a, b (sorted) but not the other.
func diffLines(a, b []string, n int) string {
	ca := map[string]int{}
	for _, l := range a {
		ca[l]++
	}
	for _, l := range b {
		ca[l]--
	}
	var out []string
	for l, c := range ca {
		if c > 0 {
			out = append(out, "view only: "+l)
		} else if c < 0 {
			out = append(out, "recomputed only: "+l)
		}
	}
	sort.Strings(out)
	if len(out) > n {
		out = append(out[:n], fmt.Sprintf("… %d more", len(out)-n))
	}
	return strings.Join(out, "\n")
}

// upgradeWriter writes the tables while the servers come and go: rows of
// ev (runs of ten ids per owner, 500 ms apart in event time, so that
// sessions and windows hold several rows), some deleted again, and
// balance updates of acct. A statement cut off by a kill is not retried:
// the recomputation reads what the table holds.
type upgradeWriter struct {
	srv *Server
	rng *rand.Rand

	mu sync.Mutex
	n  int
}

func (w *upgradeWriter) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

func (w *upgradeWriter) run(ctx context.Context) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	for id := int64(1); ctx.Err() == nil; id++ {
		if conn == nil {
			c, err := pgx.Connect(ctx, w.srv.ConnString())
			if err != nil {
				time.Sleep(50 * time.Millisecond) // the server is restarting
				id--
				continue
			}
			conn = c
		}
		ts := base.Add(time.Duration(id)*500*time.Millisecond + time.Duration(id/10)*4*time.Second)
		sqls := []string{fmt.Sprintf("INSERT INTO ev VALUES (%d, 'o%d', %d, '%s')", id, (id/10)%4, w.rng.Intn(1000), ts.Format("2006-01-02 15:04:05.000"))}
		if id%7 == 0 {
			sqls = append(sqls, fmt.Sprintf("DELETE FROM ev WHERE id = %d", id-3))
		}
		if id%3 == 0 {
			sqls = append(sqls, fmt.Sprintf("UPDATE acct SET bal = bal + 1 WHERE owner = 'k%d'", w.rng.Intn(eoKeys)))
		}
		for _, q := range sqls {
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := conn.Exec(sctx, q)
			cancel()
			if err != nil {
				conn.Close(context.Background())
				conn = nil
				break
			}
			w.mu.Lock()
			w.n++
			w.mu.Unlock()
		}
		time.Sleep(5 * time.Millisecond) // about 150 writes a second
	}
}
