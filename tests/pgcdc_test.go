package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// cdcPostgres is a private PostgreSQL 15 cluster for the postgres-cdc
// tests: its own temporary directory and port, run as the postgres user
// (PostgreSQL refuses root), killed and deleted when the test ends.
type cdcPostgres struct {
	*Server
}

// startCDCPostgres initialises a cluster with the given wal_level on addr
// ("" picks a free port) and starts it unless start is false. Local
// connections of the postgres role are trusted; every other role logs in
// with a SCRAM password.
func startCDCPostgres(t testing.TB, walLevel, addr string, start bool) *cdcPostgres {
	t.Helper()
	dir, data, cred := initPrivatePGCluster(t, "sluice-cdc-pg-")
	hba := "local all all trust\nhost all postgres 127.0.0.1/32 trust\nhost replication postgres 127.0.0.1/32 trust\n" +
		"host all all 127.0.0.1/32 scram-sha-256\nhost replication all 127.0.0.1/32 scram-sha-256\n"
	if err := os.WriteFile(filepath.Join(data, "pg_hba.conf"), []byte(hba), 0o644); err != nil {
		t.Fatal(err)
	}
	if addr == "" {
		addr = FreeAddr(t)
	}
	srv := NewServer(t, Options{
		Command: []string{filepath.Join(pgBin, "postgres"), "-D", data, "-p", portOf(addr),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir,
			"-c", "wal_level=" + walLevel, "-c", "max_replication_slots=8", "-c", "max_wal_senders=8",
			"-c", "fsync=on", "-c", "max_connections=40", "-c", "shared_buffers=16MB", "-c", "TimeZone=UTC"},
		Addr: addr, DataDir: data, Credential: cred, User: "postgres", Database: "postgres",
	})
	if start {
		if err := srv.Start(); err != nil {
			t.Fatalf("starting PostgreSQL: %v", err)
		}
	}
	return &cdcPostgres{srv}
}

// withOpts returns the WITH options of a postgres-cdc source on pg.
func (pg *cdcPostgres) withOpts(user, password, table, slot string) string {
	return fmt.Sprintf(`connector = 'postgres-cdc', hostname = '127.0.0.1', port = '%s', username = '%s', password = '%s',
		database.name = 'postgres', schema.name = 'public', table.name = '%s', slot.name = '%s', publication.name = '%s_pub'`,
		portOf(pg.Addr), user, password, table, slot, slot)
}

// cdcLines runs q and returns its rows rendered as text.
func cdcLines(ctx context.Context, conn *pgx.Conn, q string) ([]string, error) {
	res, err := QueryText(ctx, conn, q)
	if err != nil {
		return nil, err
	}
	return res.Lines(), nil
}

// waitSame polls until q on Sluice returns what pgq returns on pg.
func waitSame(t *testing.T, sl, pg *pgx.Conn, q, pgq string, timeout time.Duration) []string {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for {
		want, err := cdcLines(ctx, pg, pgq)
		if err != nil {
			t.Fatalf("upstream %s: %v", pgq, err)
		}
		got, err := cdcLines(ctx, sl, q)
		if err == nil && strings.Join(got, "\n") == strings.Join(want, "\n") {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: sluice has\n%s\n(err %v), upstream has\n%s", q, strings.Join(got, "\n"), err, strings.Join(want, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cdcTypesTable has a column of every type Sluice maps.
const cdcTypesTable = `CREATE TABLE items (id bigint PRIMARY KEY, i2 smallint, i4 int, n numeric(12,3), f4 real, f8 double precision,
	t text, vc varchar(20), b boolean, d date, tm time, ts timestamp, tstz timestamptz, iv interval, j jsonb, by bytea,
	u uuid, arr int[])`

const cdcTypesCols = `(id BIGINT PRIMARY KEY, i2 SMALLINT, i4 INT, n NUMERIC, f4 REAL, f8 DOUBLE PRECISION,
	t TEXT, vc VARCHAR, b BOOLEAN, d DATE, tm TIME, ts TIMESTAMP, tstz TIMESTAMPTZ, iv INTERVAL, j JSONB, by BYTEA,
	u TEXT, arr TEXT)`

// TestPostgresCDC reads a table of every mapped type from a private
// PostgreSQL: the snapshot, then inserts, updates (one moving the key)
// and deletes, through a kill -9 of Sluice; the view equals the table,
// SHOW SOURCES says exactly once, and the slot's confirmed position moves
// only once checkpoints are durable.
func TestPostgresCDC(t *testing.T) {
	pg := startCDCPostgres(t, "logical", "", true)
	up := pg.Connect(t)
	ExecAll(t, up, cdcTypesTable,
		`INSERT INTO items SELECT g, g, g*1000, g*1.125, g/4.0, g/3.0, 'text '||g, 'vc'||g, g%2=0, date '2026-01-01'+g,
			time '10:00:00' + g*interval '1 minute', timestamp '2026-01-01 00:00:00' + g*interval '1 hour',
			timestamptz '2026-01-01 00:00:00+00' + g*interval '90 minutes', g*interval '1 day 2 hours',
			jsonb_build_object('g', g, 'a', jsonb_build_array(g, 'x')), decode(lpad(to_hex(g), 4, '0'), 'hex'),
			md5(g::text)::uuid, ARRAY[g, g+1] FROM generate_series(1, 3000) g`,
		`INSERT INTO items (id) VALUES (0)`) // a row of NULLs
	srv := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	sl := srv.Connect(t)
	ExecAll(t, sl, `SET TIME ZONE 'UTC'`,
		`CREATE TABLE c `+cdcTypesCols+` WITH (`+pg.withOpts("postgres", "", "items", "s_types")+`)`,
		`CREATE MATERIALIZED VIEW mirror AS SELECT * FROM c`,
		`CREATE MATERIALIZED VIEW agg AS SELECT b, count(*) AS n, sum(i4) AS s FROM mirror GROUP BY b`)
	q := `SELECT * FROM mirror ORDER BY id`
	pgq := `SELECT * FROM items ORDER BY id`
	ExecAll(t, up, `SET TIME ZONE 'UTC'`)
	snap := waitSame(t, sl, up, q, pgq, 60*time.Second)
	if len(snap) != 3001 {
		t.Fatalf("snapshot: %d rows, want 3001", len(snap))
	}
	t.Logf("snapshot row: %s", snap[7])

	var consistent string
	if err := up.QueryRow(context.Background(), `SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 's_types'`).Scan(&consistent); err != nil {
		t.Fatal(err)
	}
	ExecAll(t, up,
		`UPDATE items SET t = 'changed', j = '{"k": [1, 2.5, null]}', n = -1.5 WHERE id % 7 = 0`,
		`DELETE FROM items WHERE id % 5 = 0`,
		`UPDATE items SET id = id + 100000 WHERE id BETWEEN 1 AND 3`, // moves the key
		`INSERT INTO items (id, t, f8, iv) VALUES (200000, 'late', 'NaN', '-3 days 04:05:06.5'), (200001, '', '-Infinity', '1 year 2 mons')`,
		`BEGIN`, `INSERT INTO items (id, t) SELECT g, 'big txn' FROM generate_series(300000, 302999) g`, `DELETE FROM items WHERE id = 300001`, `COMMIT`)
	waitSame(t, sl, up, q, pgq, 60*time.Second)
	waitSame(t, sl, up, `SELECT * FROM agg ORDER BY b`, `SELECT b, count(*) AS n, sum(i4) AS s FROM items GROUP BY b ORDER BY b`, 30*time.Second)

	// The slot's confirmed position follows the durable checkpoints.
	ExecAll(t, sl, `FLUSH`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var moved bool
		if err := up.QueryRow(context.Background(), `SELECT confirmed_flush_lsn > $1::pg_lsn FROM pg_replication_slots WHERE slot_name = 's_types'`, consistent).Scan(&moved); err != nil {
			t.Fatal(err)
		}
		if moved {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot's confirmed_flush_lsn stayed at the consistent point %s", consistent)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Writes to other tables only: the slot's confirmed position passes
	// them once a checkpoint holds a position after them.
	var walAfter string
	ExecAll(t, up, `CREATE TABLE other (x int)`, `INSERT INTO other SELECT generate_series(1, 10000)`)
	if err := up.QueryRow(context.Background(), `SELECT pg_current_wal_lsn()::text`).Scan(&walAfter); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		var passed bool
		if err := up.QueryRow(context.Background(), `SELECT confirmed_flush_lsn >= $1::pg_lsn FROM pg_replication_slots WHERE slot_name = 's_types'`, walAfter).Scan(&passed); err != nil {
			t.Fatal(err)
		}
		if passed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot's confirmed_flush_lsn stayed before %s (other tables' writes)", walAfter)
		}
		time.Sleep(100 * time.Millisecond)
	}
	res, err := QueryText(context.Background(), sl, `SHOW SOURCES`)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Lines(); len(got) != 1 || got[0] != "c postgres-cdc 0 0 EXACTLY_ONCE ·" {
		t.Fatalf("SHOW SOURCES: %q", got)
	}

	// kill -9, changes while Sluice is down, restart: nothing lost or doubled.
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	ExecAll(t, up, `UPDATE items SET i2 = -i2 WHERE id % 3 = 0`, `DELETE FROM items WHERE id % 11 = 0`,
		`INSERT INTO items (id, t) VALUES (400000, 'while down')`)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	sl = srv.Connect(t)
	ExecAll(t, sl, `SET TIME ZONE 'UTC'`)
	waitSame(t, sl, up, q, pgq, 60*time.Second)
	waitSame(t, sl, up, `SELECT * FROM agg ORDER BY b`, `SELECT b, count(*) AS n, sum(i4) AS s FROM items GROUP BY b ORDER BY b`, 30*time.Second)

	// A second view straight over the source would be a second reader of
	// the slot: refused, naming the way out.
	_, err = QueryText(context.Background(), sl, `CREATE MATERIALIZED VIEW second AS SELECT id FROM c`)
	if PgCode(err) != "55006" || !strings.Contains(err.Error(), "already read") {
		t.Fatalf("a second reader of the slot: %v, want 55006", err)
	}
}

// cdcExpect runs stmt on conn and fails unless it errs with code and a
// message holding every one of mentions.
func cdcExpect(t *testing.T, conn *pgx.Conn, stmt, code string, mentions ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := QueryText(ctx, conn, stmt)
	if err == nil {
		t.Fatalf("%s: succeeded, want SQLSTATE %s", stmt, code)
	}
	if PgCode(err) != code {
		t.Fatalf("%s: %v, want SQLSTATE %s", stmt, err, code)
	}
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Fatalf("%s: %v, want it to mention %q", stmt, err, m)
		}
	}
	return err
}

// waitLine polls q on conn until a row holds want.
func waitLine(t *testing.T, conn *pgx.Conn, q, want string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got, err := cdcLines(context.Background(), conn, q)
		for _, l := range got {
			if strings.Contains(l, want) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %q (err %v), want a row holding %q", q, got, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestPostgresCDCBadInput: what the source cannot honour is refused with
// a SQLSTATE and a hint (wal_level not logical, a wrong password, a table
// without a key, a declared key that is not the table's), an upstream
// down at start is retried with its error shown in SHOW SOURCES, and
// schema changes upstream are followed (ADD COLUMN) or reported (DROP
// COLUMN, TRUNCATE).
func TestPostgresCDCBadInput(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	sl := srv.Connect(t)

	replica := startCDCPostgres(t, "replica", "", true)
	ExecAll(t, replica.Connect(t), `CREATE TABLE r (id int PRIMARY KEY, v text)`)
	err := cdcExpect(t, sl, `CREATE SOURCE r (id INT PRIMARY KEY, v TEXT) WITH (`+replica.withOpts("postgres", "", "r", "s_r")+`)`,
		"55000", "wal_level is replica, not logical")
	if !strings.Contains(fmt.Sprintf("%+v", err), "wal_level = logical") {
		t.Logf("error detail: %+v", err)
	}

	pg := startCDCPostgres(t, "logical", "", true)
	up := pg.Connect(t)
	ExecAll(t, up, `CREATE ROLE cdc LOGIN REPLICATION PASSWORD 'right-pw'`,
		`CREATE TABLE nokey (id int, v text)`, `CREATE TABLE kv (id int PRIMARY KEY, v text, extra int)`,
		`GRANT SELECT ON nokey, kv TO cdc`, `GRANT CREATE ON DATABASE postgres TO cdc`, `ALTER TABLE kv OWNER TO cdc`,
		`INSERT INTO kv SELECT g, 'v'||g, g FROM generate_series(1, 50) g`)
	err = cdcExpect(t, sl, `CREATE SOURCE w (id INT PRIMARY KEY, v TEXT) WITH (`+pg.withOpts("cdc", "wrong-pw", "kv", "s_w")+`)`,
		"28P01", "password authentication failed")
	if strings.Contains(err.Error(), "wrong-pw") {
		t.Fatalf("the error shows the password: %v", err)
	}
	cdcExpect(t, sl, `CREATE SOURCE nk (id INT PRIMARY KEY, v TEXT) WITH (`+pg.withOpts("postgres", "", "nokey", "s_nk")+`)`,
		"55000", "no primary key and no replica identity")
	cdcExpect(t, sl, `CREATE SOURCE wk (id INT, v TEXT PRIMARY KEY) WITH (`+pg.withOpts("postgres", "", "kv", "s_wk")+`)`,
		"42P17", "is not the upstream key (id)")
	cdcExpect(t, sl, `CREATE SOURCE nodecl (id INT, v TEXT) WITH (`+pg.withOpts("postgres", "", "kv", "s_nd")+`)`,
		"42P17", "needs a PRIMARY KEY")
	cdcExpect(t, sl, `CREATE SOURCE badtype (id INT PRIMARY KEY, v BIGINT) WITH (`+pg.withOpts("postgres", "", "kv", "s_bt")+`)`,
		"42804", "column v is text upstream")
	cdcExpect(t, sl, `CREATE SOURCE nocol (id INT PRIMARY KEY, nope TEXT) WITH (`+pg.withOpts("postgres", "", "kv", "s_nc")+`)`,
		"42703", "column nope does not exist")

	// The right password, as a role that is not a superuser (it owns the
	// table, so it may create the publication).
	ExecAll(t, sl, `CREATE SOURCE kv (id INT PRIMARY KEY, v TEXT) WITH (`+pg.withOpts("cdc", "right-pw", "kv", "s_kv")+`)`,
		`CREATE MATERIALIZED VIEW kv_v AS SELECT * FROM kv`)
	waitSame(t, sl, up, `SELECT * FROM kv_v ORDER BY id`, `SELECT id, v FROM kv ORDER BY id`, 30*time.Second)
	// ADD COLUMN is followed: the source keeps its declared columns.
	ExecAll(t, up, `ALTER TABLE kv ADD COLUMN added text DEFAULT 'x'`, `INSERT INTO kv VALUES (51, 'v51', 51, 'new')`, `UPDATE kv SET v = 'u' WHERE id = 2`)
	waitSame(t, sl, up, `SELECT * FROM kv_v ORDER BY id`, `SELECT id, v FROM kv ORDER BY id`, 30*time.Second)
	// Dropping a declared column stops the view with a clear error.
	ExecAll(t, up, `ALTER TABLE kv DROP COLUMN v`, `INSERT INTO kv (id) VALUES (52)`)
	waitLine(t, sl, `SHOW MATERIALIZED VIEWS`, "schema change upstream: column v of \"public\".\"kv\" was dropped or renamed", 30*time.Second)

	// TRUNCATE upstream is reported.
	ExecAll(t, up, `CREATE TABLE tr (id int PRIMARY KEY)`, `INSERT INTO tr VALUES (1), (2)`)
	ExecAll(t, sl, `CREATE SOURCE tr (id INT PRIMARY KEY) WITH (`+pg.withOpts("postgres", "", "tr", "s_tr")+`)`,
		`CREATE MATERIALIZED VIEW tr_v AS SELECT * FROM tr`)
	waitSame(t, sl, up, `SELECT * FROM tr_v ORDER BY id`, `SELECT * FROM tr ORDER BY id`, 30*time.Second)
	ExecAll(t, up, `TRUNCATE tr`)
	waitLine(t, sl, `SHOW MATERIALIZED VIEWS`, "was truncated", 30*time.Second)

	// Upstream down at start: the source retries, SHOW SOURCES shows why,
	// and the rows arrive once PostgreSQL is up.
	down := startCDCPostgres(t, "logical", "", true)
	dc := down.Connect(t)
	ExecAll(t, dc, `CREATE TABLE late (id int PRIMARY KEY, v text)`, `INSERT INTO late VALUES (1, 'a'), (2, 'b')`)
	_ = dc.Close(context.Background()) // a smart shutdown waits for every client
	if err := down.Stop(); err != nil {
		t.Fatal(err)
	}
	ExecAll(t, sl, `CREATE SOURCE late (id INT PRIMARY KEY, v TEXT) WITH (`+down.withOpts("postgres", "", "late", "s_late")+`)`,
		`CREATE MATERIALIZED VIEW late_v AS SELECT * FROM late`)
	line := waitLine(t, sl, `SHOW SOURCES`, "connection refused", 30*time.Second)
	if !strings.HasPrefix(line, "late postgres-cdc 0 0 EXACTLY_ONCE ") {
		t.Fatalf("SHOW SOURCES: %q", line)
	}
	if err := down.Restart(); err != nil {
		t.Fatal(err)
	}
	waitSame(t, sl, down.Connect(t), `SELECT * FROM late_v ORDER BY id`, `SELECT * FROM late ORDER BY id`, 30*time.Second)
	waitLine(t, sl, `SHOW SOURCES`, "late postgres-cdc 0 0 EXACTLY_ONCE ·", 10*time.Second)
}

// TestPostgresCDCCrash: writers insert, update (also moving keys) and
// delete rows of an upstream table, in single statements and in
// transactions, while Sluice is killed with SIGKILL at random moments and
// PostgreSQL itself is killed and restarted once. Afterwards the views
// over the CDC table equal the same queries on PostgreSQL: lost=0,
// duplicated=0. Checkpoints every second leave a wide window between a
// position read and its checkpoint being durable, so confirming the slot
// too early loses rows here (seen: a worker confirming what it had read
// failed this test). CI runs 12 s of writing; SLUICE_CDC_CRASH_SECONDS runs
// longer (and SLUICE_CDC_CRASH_SEED repeats a run).
func TestPostgresCDCCrash(t *testing.T) {
	dur := 12 * time.Second
	if v, err := strconv.Atoi(os.Getenv("SLUICE_CDC_CRASH_SECONDS")); err == nil && v > 0 {
		dur = time.Duration(v) * time.Second
	}
	seed := time.Now().UnixNano()
	if v, err := strconv.ParseInt(os.Getenv("SLUICE_CDC_CRASH_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (SLUICE_CDC_CRASH_SEED), %v of writing", seed, dur)
	rng := rand.New(rand.NewPCG(uint64(seed), 19))

	pg := startCDCPostgres(t, "logical", "", true)
	up := pg.Connect(t)
	ExecAll(t, up, `CREATE TABLE acct (id int PRIMARY KEY, grp int NOT NULL, v bigint NOT NULL, note text)`,
		`INSERT INTO acct SELECT g, g % 10, g * 10, 'seed' FROM generate_series(1, 500) g`)
	_ = up.Close(context.Background())

	srv := StartServer(t, Options{CheckpointInterval: time.Second})
	sl := srv.Connect(t)
	ExecAll(t, sl, `CREATE TABLE c (id INT PRIMARY KEY, grp INT, v BIGINT, note TEXT) WITH (`+pg.withOpts("postgres", "", "acct", "s_crash")+`)`,
		`CREATE MATERIALIZED VIEW mirror AS SELECT * FROM c`,
		`CREATE MATERIALIZED VIEW per_grp AS SELECT grp, count(*) AS n, sum(v) AS s, max(note) AS m FROM mirror GROUP BY grp`)
	_ = sl.Close(context.Background())

	// The writers run until the killer is done: dur, and at least
	// minKills kills of sluice and the restart of PostgreSQL (a loaded
	// machine restarts slowly).
	const minKills = 4
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var commits, failed atomic.Int64
	for w := range 2 {
		wrng := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			cdcWriter(ctx, pg.ConnString(), w, wrng, &commits, &failed)
		}()
	}
	kills := 0
	pgRestarted := false
	start := time.Now()
	for time.Since(start) < dur || kills < minKills || !pgRestarted {
		time.Sleep(time.Duration(500+rng.IntN(2000)) * time.Millisecond)
		if !pgRestarted && (time.Since(start) > dur/2 || kills >= minKills) {
			pgRestarted = true
			if err := pg.Kill(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
			if err := pg.Restart(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		kills++
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	if !pgRestarted {
		t.Fatal("PostgreSQL was not restarted")
	}
	t.Logf("%d upstream transactions committed, %d failed (upstream restart), %d kills of sluice", commits.Load(), failed.Load(), kills)
	if commits.Load() < 100 {
		t.Fatalf("too little happened: %d commits, %d kills", commits.Load(), kills)
	}
	sl = srv.Connect(t)
	up = pg.Connect(t)
	// The mirror converges to the table (or the deadline passes), then
	// the rows are compared one by one.
	var got, want []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		if want, err = cdcLines(context.Background(), up, `SELECT * FROM acct ORDER BY id`); err != nil {
			t.Fatal(err)
		}
		got, err = cdcLines(context.Background(), sl, `SELECT * FROM mirror ORDER BY id`)
		if err == nil && strings.Join(got, "\n") == strings.Join(want, "\n") || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	have := map[string]int{}
	for _, l := range got {
		have[l]++
	}
	lost, dup := 0, 0
	for _, l := range want {
		if have[l] == 0 {
			lost++
		} else {
			have[l]--
		}
	}
	for _, n := range have {
		dup += n
	}
	t.Logf("%d rows upstream, %d in the view: lost=%d duplicated=%d", len(want), len(got), lost, dup)
	if lost != 0 || dup != 0 {
		t.Fatalf("lost=%d duplicated=%d", lost, dup)
	}
	waitSame(t, sl, up, `SELECT grp, n, s, m FROM per_grp ORDER BY grp`,
		`SELECT grp, count(*), sum(v), max(note) FROM acct GROUP BY grp ORDER BY grp`, 30*time.Second)
}

// cdcWriter changes acct until ctx ends: inserts, updates, key moves and
// deletes, alone or several in one transaction, and rows of its own ledger
// that nothing changes again (a failed transaction's ledger id is not
// reused). Errors (PostgreSQL
// restarting) are counted and the connection is made again.
func cdcWriter(ctx context.Context, url string, w int, rng *rand.Rand, commits, failed *atomic.Int64) {
	ledger := 100000 + w*1000000 // rows written once and never changed: a loss stays visible
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			_ = conn.Close(context.Background())
		}
	}()
	for ctx.Err() == nil {
		if conn == nil {
			c, err := pgx.Connect(ctx, url)
			if err != nil {
				failed.Add(1)
				time.Sleep(50 * time.Millisecond)
				continue
			}
			conn = c
		}
		n := 1
		if rng.IntN(4) == 0 {
			n = 2 + rng.IntN(20)
		}
		stmts := make([]string, 0, n+1)
		if rng.IntN(2) == 0 {
			ledger++
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO acct VALUES (%d, %d, %d, 'ledger')`, ledger, rng.IntN(10), rng.IntN(1000)))
		}
		for range n {
			id := 1 + rng.IntN(1000)
			switch rng.IntN(5) {
			case 0, 1:
				stmts = append(stmts, fmt.Sprintf(`INSERT INTO acct VALUES (%d, %d, %d, 'i%d') ON CONFLICT (id) DO UPDATE SET v = acct.v + 1, note = 'c%d'`,
					id, rng.IntN(10), rng.IntN(100000), rng.IntN(100), rng.IntN(100)))
			case 2:
				stmts = append(stmts, fmt.Sprintf(`UPDATE acct SET v = v + %d, grp = %d, note = 'u%d' WHERE id = %d`, rng.IntN(100), rng.IntN(10), rng.IntN(100), id))
			case 3:
				to := 1 + rng.IntN(2000)
				stmts = append(stmts, fmt.Sprintf(`UPDATE acct SET id = %d WHERE id = %d AND NOT EXISTS (SELECT 1 FROM acct WHERE id = %d)`, to, id, to))
			default:
				stmts = append(stmts, fmt.Sprintf(`DELETE FROM acct WHERE id = %d`, id))
			}
		}
		wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := pgx.BeginFunc(wctx, conn, func(tx pgx.Tx) error {
			for _, s := range stmts {
				if _, err := tx.Exec(wctx, s); err != nil {
					return err
				}
			}
			return nil
		})
		cancel()
		if err != nil {
			failed.Add(1)
			if conn.IsClosed() || PgCode(err) == "" || strings.HasPrefix(PgCode(err), "57") || strings.HasPrefix(PgCode(err), "08") {
				_ = conn.Close(context.Background())
				conn = nil
			}
			continue
		}
		commits.Add(1)
	}
}

// BenchmarkPostgresCDC measures rows/s through a postgres-cdc source into a
// materialized view: the snapshot of 200,000 rows, then 200,000 rows
// inserted upstream in one transaction and streamed.
//
//	go test ./tests/ -run '^$' -bench PostgresCDC -benchtime 1x -count 5
func BenchmarkPostgresCDC(b *testing.B) {
	const rows = 200000
	for range b.N {
		b.StopTimer()
		pg := startCDCPostgres(b, "logical", "", true)
		up := pg.Connect(b)
		ExecAll(b, up, `CREATE TABLE bench (id bigint PRIMARY KEY, grp int, v numeric, note text, ts timestamptz)`,
			fmt.Sprintf(`INSERT INTO bench SELECT g, g %% 100, g * 1.5, 'note ' || g, now() FROM generate_series(1, %d) g`, rows))
		srv := StartServer(b, Options{})
		sl := srv.Connect(b)
		b.StartTimer()
		start := time.Now()
		ExecAll(b, sl, `CREATE TABLE c (id BIGINT PRIMARY KEY, grp INT, v NUMERIC, note TEXT, ts TIMESTAMPTZ) WITH (`+pg.withOpts("postgres", "", "bench", "s_bench")+`)`,
			`CREATE MATERIALIZED VIEW m AS SELECT * FROM c`)
		waitCount := func(n int) {
			for {
				var got int
				if err := sl.QueryRow(context.Background(), `SELECT count(*) FROM m`).Scan(&got); err == nil && got == n {
					return
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		waitCount(rows)
		snap := time.Since(start)
		start = time.Now()
		ExecAll(b, up, fmt.Sprintf(`INSERT INTO bench SELECT g, g %% 100, g * 1.5, 'note ' || g, now() FROM generate_series(%d, %d) g`, rows+1, 2*rows))
		waitCount(2 * rows)
		stream := time.Since(start)
		b.ReportMetric(rows/snap.Seconds(), "snapshot-rows/s")
		b.ReportMetric(rows/stream.Seconds(), "stream-rows/s")
	}
}
