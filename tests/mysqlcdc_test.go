package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// mariaDB is a private mariadbd for the mysql-cdc tests: its own
// temporary data directory and port (the machine's shared MariaDB runs
// without a binary log, and its configuration is not ours to change),
// killed and deleted when the test ends.
type mariaDB struct {
	t      testing.TB
	dir    string
	addr   string
	binlog bool
	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{}
}

// startMariaDB initialises a data directory (root without a password)
// and starts mariadbd on a free port, with a binary log in ROW format
// when binlog is set.
func startMariaDB(t testing.TB, binlog bool) *mariaDB {
	t.Helper()
	if _, err := exec.LookPath("mariadb-install-db"); err != nil {
		t.Skip("mariadb-install-db is not installed")
	}
	dir, err := os.MkdirTemp("", "sluice-mcdc-")
	if err != nil {
		t.Fatal(err)
	}
	m := &mariaDB{t: t, dir: dir, addr: FreeAddr(t), binlog: binlog}
	t.Cleanup(func() {
		m.kill()
		_ = os.RemoveAll(dir)
	})
	out, err := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+filepath.Join(dir, "data"), "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve").CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	if err := m.start(); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *mariaDB) start() error {
	args := []string{"--no-defaults", "--datadir=" + filepath.Join(m.dir, "data"), "--user=root", "--port=" + portOf(m.addr),
		"--bind-address=127.0.0.1", "--socket=" + filepath.Join(m.dir, "sock"), "--pid-file=" + filepath.Join(m.dir, "pid"),
		"--skip-name-resolve", "--innodb-buffer-pool-size=32M", "--max-connections=60", "--default-time-zone=+00:00",
		"--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
		"--log-error=" + filepath.Join(m.dir, "error.log")}
	if m.binlog {
		args = append(args, "--log-bin="+filepath.Join(m.dir, "data", "binlog"), "--binlog-format=ROW", "--server-id=1",
			"--sync-binlog=1", "--max-binlog-size=1M")
	}
	cmd := exec.Command("mariadbd", args...)
	cmd.SysProcAttr = sysProcAttr(nil)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	m.mu.Lock()
	m.cmd, m.done = cmd, done
	m.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := client.ConnectWithTimeout(m.addr, "root", "", "", 2*time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(m.dir, "error.log"))
			return fmt.Errorf("mariadbd exited at start:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mariadbd did not accept connections: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kill ends mariadbd with SIGKILL and waits for it.
func (m *mariaDB) kill() { m.signal(syscall.SIGKILL) }

// stop shuts mariadbd down cleanly.
func (m *mariaDB) stop() { m.signal(syscall.SIGTERM) }

func (m *mariaDB) signal(sig syscall.Signal) {
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
	<-done
}

// connect returns a root connection speaking UTC.
func (m *mariaDB) connect(t testing.TB) *client.Conn {
	t.Helper()
	c, err := client.ConnectWithTimeout(m.addr, "root", "", "", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	mysqlExec(t, c, "SET NAMES utf8mb4", "SET time_zone = '+00:00'")
	return c
}

func mysqlExec(t testing.TB, c *client.Conn, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := c.Execute(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// withOpts returns the WITH options of a mysql-cdc source on m.
func (m *mariaDB) withOpts(user, password, table string) string {
	return fmt.Sprintf(`connector = 'mysql-cdc', hostname = '127.0.0.1', port = '%s', username = '%s', password = '%s',
		database.name = 'mcdc_db', table.name = '%s'`, portOf(m.addr), user, password, table)
}

// mysqlLines runs q on MariaDB and renders each row like RenderValue
// renders Sluice's text: kinds has one letter a column, 'f' for a FLOAT
// read as a double (printed as float4), 'j' for JSON (canonicalised).
func mysqlLines(c *client.Conn, q, kinds string) ([]string, error) {
	res, err := c.Execute(q)
	if err != nil {
		return nil, err
	}
	lines := make([]string, 0, res.RowNumber())
	for _, row := range res.Values {
		vals := make([]string, len(row))
		for i := range row {
			k := byte('s')
			if i < len(kinds) {
				k = kinds[i]
			}
			var s string
			switch v := row[i].Value().(type) {
			case nil:
				vals[i] = "NULL"
				continue
			case int64:
				s = strconv.FormatInt(v, 10)
			case uint64:
				s = strconv.FormatUint(v, 10)
			case float64:
				if k == 'f' {
					s = strconv.FormatFloat(v, 'g', -1, 32)
				} else {
					s = strconv.FormatFloat(v, 'g', -1, 64)
				}
			case []byte:
				s = string(v)
			}
			if k == 'j' {
				s = canonJSON(s)
			}
			vals[i] = RenderValue([]byte(s))
		}
		lines = append(lines, strings.Join(vals, " "))
	}
	return lines, nil
}

// canonJSON re-encodes a JSON text with sorted keys (as is when it does
// not parse).
func canonJSON(s string) string {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// sluiceLines runs q on Sluice and renders its rows, canonicalising the
// columns kinds marks 'j'.
func sluiceLines(ctx context.Context, conn *pgx.Conn, q, kinds string) ([]string, error) {
	res, err := QueryText(ctx, conn, q)
	if err != nil {
		return nil, err
	}
	lines := make([]string, len(res.Rows))
	for r, row := range res.Rows {
		for i := range row {
			if i < len(kinds) && kinds[i] == 'j' && row[i] != "NULL" {
				row[i] = canonJSON(row[i])
			}
		}
		lines[r] = strings.Join(row, " ")
	}
	return lines, nil
}

// waitSameMySQL polls until q on Sluice returns what mq returns on MariaDB.
func waitSameMySQL(t *testing.T, sl *pgx.Conn, up *client.Conn, q, mq, kinds string, timeout time.Duration) []string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		want, err := mysqlLines(up, mq, kinds)
		if err != nil {
			t.Fatalf("upstream %s: %v", mq, err)
		}
		got, err := sluiceLines(context.Background(), sl, q, kinds)
		if err == nil && strings.Join(got, "\n") == strings.Join(want, "\n") {
			return got
		}
		if time.Now().After(deadline) {
			n := min(len(got), len(want))
			for i := range n {
				if got[i] != want[i] {
					t.Fatalf("%s: row %d differs (err %v):\nsluice   %s\nupstream %s\n(%d rows in sluice, %d upstream)", q, i, err, got[i], want[i], len(got), len(want))
				}
			}
			t.Fatalf("%s: %d rows in sluice (err %v), %d upstream", q, len(got), err, len(want))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mcdcTypesTable has a column of every upstream type the source maps.
const mcdcTypesTable = `CREATE TABLE mcdc_db.mcdc_items (id BIGINT PRIMARY KEY, i INT, si SMALLINT, u INT UNSIGNED, ub BIGINT UNSIGNED,
	b BOOL, n DECIMAL(12,3), d DOUBLE, f FLOAT, vc VARCHAR(40), t TEXT, dt DATETIME, dt6 DATETIME(6), ts TIMESTAMP NULL,
	dd DATE, tm TIME, j JSON, bl BLOB, vb VARBINARY(16)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`

const mcdcTypesCols = `(id BIGINT PRIMARY KEY, i INT, si SMALLINT, u BIGINT, ub NUMERIC, b BOOLEAN, n NUMERIC, d DOUBLE PRECISION,
	f REAL, vc VARCHAR, t TEXT, dt TIMESTAMP, dt6 TIMESTAMP, ts TIMESTAMPTZ, dd DATE, tm TIME, j JSONB, bl BYTEA, vb BYTEA)`

// mcdcTypesQuery selects mcdc_items on MariaDB in PostgreSQL's text forms.
const mcdcTypesQuery = `SELECT id, i, si, u, ub, IF(b IS NULL, NULL, IF(b, 't', 'f')), n, d, CAST(f AS DOUBLE), vc, t, dt,
	TRIM(TRAILING '.' FROM TRIM(TRAILING '0' FROM dt6)), CONCAT(ts, '+00'), dd, tm, j,
	CONCAT('\\x', LOWER(HEX(bl))), CONCAT('\\x', LOWER(HEX(vb))) FROM mcdc_db.mcdc_items ORDER BY id`

const mcdcTypesKinds = "ssssssssfsssssssjss"

// mcdcInsertItems inserts rows lo..hi of mcdc_items.
func mcdcInsertItems(lo, hi int) string {
	return fmt.Sprintf(`INSERT INTO mcdc_db.mcdc_items SELECT seq, seq*1000 - 5000, seq %% 300, 4294967295 - seq, 18446744073709551615 - seq,
		seq %% 2, seq * 1.125, seq / 3e0, seq / 4, CONCAT('vc', seq), CONCAT('text ', seq, ' é'), '2026-01-01' + INTERVAL seq HOUR,
		'2026-01-01 00:00:00.5' + INTERVAL seq SECOND, FROM_UNIXTIME(1767225600 + seq * 5400), '2026-01-01' + INTERVAL seq DAY,
		SEC_TO_TIME((seq * 61) %% 86400), JSON_OBJECT('g', seq, 'a', JSON_ARRAY(seq, 'x')), UNHEX(LPAD(HEX(seq), 4, '0')), UNHEX(HEX(seq))
		FROM (SELECT CAST(seq AS SIGNED) AS seq FROM mcdc_db.seq_%d_to_%d) s`, lo, hi)
}

// TestMySQLCDC reads a table of every mapped type from a private
// MariaDB with a binary log: the snapshot, then inserts, updates (one
// moving the key), deletes and a transaction larger than a read, through
// a kill -9 of Sluice; the view equals the table row for row, and SHOW
// SOURCES says exactly once. While Sluice is down the binlog rotates
// (FLUSH BINARY LOGS) and the files read so far are purged: the source
// resumes from its GTID position, and a second source on file positions
// (gtid.enable = 'false') stops with the purged binlog's error.
func TestMySQLCDC(t *testing.T) {
	m := startMariaDB(t, true)
	up := m.connect(t)
	mysqlExec(t, up, `CREATE DATABASE mcdc_db`, mcdcTypesTable, mcdcInsertItems(1, 3000),
		`INSERT INTO mcdc_db.mcdc_items (id) VALUES (0)`) // a row of NULLs
	srv := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	sl := srv.Connect(t)
	ExecAll(t, sl, `SET TIME ZONE 'UTC'`,
		`CREATE TABLE c `+mcdcTypesCols+` WITH (`+m.withOpts("root", "", "mcdc_items")+`)`,
		`CREATE SOURCE cf (id BIGINT PRIMARY KEY, t TEXT) WITH (`+m.withOpts("root", "", "mcdc_items")+`, gtid.enable = 'false')`,
		`CREATE MATERIALIZED VIEW mirror AS SELECT * FROM c`,
		`CREATE MATERIALIZED VIEW mirror_f AS SELECT * FROM cf`,
		`CREATE MATERIALIZED VIEW agg AS SELECT b, count(*) AS n, sum(i) AS s FROM mirror GROUP BY b`)
	q := `SELECT * FROM mirror ORDER BY id`
	aggQ := `SELECT b, n, s FROM agg ORDER BY b`
	aggMQ := `SELECT IF(b IS NULL, NULL, IF(b, 't', 'f')) AS bb, count(*), sum(i) FROM mcdc_db.mcdc_items GROUP BY bb ORDER BY bb IS NULL, bb`
	snap := waitSameMySQL(t, sl, up, q, mcdcTypesQuery, mcdcTypesKinds, 60*time.Second)
	if len(snap) != 3001 {
		t.Fatalf("snapshot: %d rows, want 3001", len(snap))
	}
	t.Logf("snapshot row: %s", snap[7])

	mysqlExec(t, up,
		`UPDATE mcdc_db.mcdc_items SET t = 'changed', j = '{"k": [1, 2.5, null]}', n = -1.5 WHERE id % 7 = 0`,
		`DELETE FROM mcdc_db.mcdc_items WHERE id % 5 = 0`,
		`UPDATE mcdc_db.mcdc_items SET id = id + 100000 WHERE id BETWEEN 1 AND 3`, // moves the key
		`INSERT INTO mcdc_db.mcdc_items (id, i, u, ub, b, d, f, t, vc, bl) VALUES
			(200000, -2147483648, 4294967295, 18446744073709551615, 1, -1e300, 0.5, 'late', '', ''),
			(200001, 2147483647, 0, 0, 0, 1e-7, -2.25, 'quote '' and \\ backslash', 'ünï', x'00ff')`,
		`BEGIN`, `INSERT INTO mcdc_db.mcdc_items (id, t) SELECT seq, 'big txn' FROM mcdc_db.seq_300000_to_302999`,
		`DELETE FROM mcdc_db.mcdc_items WHERE id = 300001`, `UPDATE mcdc_db.mcdc_items SET si = 7 WHERE id BETWEEN 300010 AND 300020`, `COMMIT`)
	waitSameMySQL(t, sl, up, q, mcdcTypesQuery, mcdcTypesKinds, 60*time.Second)
	waitSameMySQL(t, sl, up, aggQ, aggMQ, "", 30*time.Second)
	waitSameMySQL(t, sl, up, `SELECT id, t FROM mirror_f ORDER BY id`, `SELECT id, t FROM mcdc_db.mcdc_items ORDER BY id`, "", 30*time.Second)

	res, err := QueryText(context.Background(), sl, `SHOW SOURCES`)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Lines(); len(got) != 2 || got[0] != "c mysql-cdc 0 0 EXACTLY_ONCE ·" || got[1] != "cf mysql-cdc 0 0 EXACTLY_ONCE ·" {
		t.Fatalf("SHOW SOURCES: %q", got)
	}

	// kill -9; while Sluice is down the binlog rotates, the files it read
	// are purged, changes land in two newer files; restart: nothing lost
	// or doubled.
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	read := mcdcBinlogs(t, up)
	mysqlExec(t, up, `FLUSH BINARY LOGS`)
	mcdcPurge(t, up)
	mysqlExec(t, up, `UPDATE mcdc_db.mcdc_items SET si = -si WHERE id % 3 = 0`, `FLUSH BINARY LOGS`,
		`DELETE FROM mcdc_db.mcdc_items WHERE id % 11 = 0`, `INSERT INTO mcdc_db.mcdc_items (id, t) VALUES (400000, 'while down')`)
	if now := mcdcBinlogs(t, up); len(now) != 2 || now[0] == read[len(read)-1] {
		t.Fatalf("binlogs %q before, %q after the purge: want two newer ones", read, now)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	sl = srv.Connect(t)
	ExecAll(t, sl, `SET TIME ZONE 'UTC'`)
	final := waitSameMySQL(t, sl, up, q, mcdcTypesQuery, mcdcTypesKinds, 60*time.Second)
	waitSameMySQL(t, sl, up, aggQ, aggMQ, "", 30*time.Second)
	t.Logf("%d rows equal after the restart", len(final))
	// The file-position source's checkpoint names a purged binlog: it
	// stops with the upstream's error instead of skipping changes.
	line := waitLine(t, sl, `SHOW MATERIALIZED VIEWS`, "MySQL error 1236", 30*time.Second)
	if !strings.HasPrefix(line, "mirror_f ") {
		t.Fatalf("SHOW MATERIALIZED VIEWS: %q, want mirror_f failed", line)
	}

	// A second view straight over the source would be a second replica
	// with the same server id: refused, naming the way out.
	_, err = QueryText(context.Background(), sl, `CREATE MATERIALIZED VIEW second AS SELECT id FROM c`)
	if PgCode(err) != "55006" || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("a second reader: %v, want 55006", err)
	}
}

// mcdcBinlogs lists the upstream's binlog files, oldest first.
func mcdcBinlogs(t *testing.T, up *client.Conn) []string {
	t.Helper()
	res, err := up.Execute(`SHOW BINARY LOGS`)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for r := range res.RowNumber() {
		f, _ := res.GetString(r, 0)
		files = append(files, f)
	}
	return files
}

// mcdcPurge purges every binlog file but the current one. A dump thread
// of a killed reader may hold its file until MariaDB notices the dead
// connection: retry until the files are gone.
func mcdcPurge(t *testing.T, up *client.Conn) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		files := mcdcBinlogs(t, up)
		if len(files) == 1 {
			return
		}
		_, err := up.Execute(`PURGE BINARY LOGS TO '` + files[len(files)-1] + `'`)
		if time.Now().After(deadline) {
			t.Fatalf("binlogs %q still there after PURGE (%v)", files, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMySQLCDCBadInput: what the source cannot honour is refused at
// CREATE SOURCE with a SQLSTATE and a hint (binary log off, binlog_format
// not ROW, wrong credentials, a missing table, a table without a primary
// key, a declared key that is not the table's, unsupported and mismatched
// types); an upstream down at start is retried with its error in SHOW
// SOURCES; TRUNCATE upstream is reported.
func TestMySQLCDCBadInput(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	sl := srv.Connect(t)

	off := startMariaDB(t, false)
	mysqlExec(t, off.connect(t), `CREATE DATABASE mcdc_db`, `CREATE TABLE mcdc_db.mcdc_r (id INT PRIMARY KEY, v TEXT)`)
	cdcExpect(t, sl, `CREATE SOURCE r (id INT PRIMARY KEY, v TEXT) WITH (`+off.withOpts("root", "", "mcdc_r")+`)`,
		"55000", "binary log is off")

	m := startMariaDB(t, true)
	up := m.connect(t)
	mysqlExec(t, up, `CREATE DATABASE mcdc_db`, `CREATE USER mcdc_user@'127.0.0.1' IDENTIFIED BY 'right-pw'`,
		`CREATE TABLE mcdc_db.mcdc_nokey (id INT, v TEXT)`, `CREATE TABLE mcdc_db.mcdc_kv (id INT PRIMARY KEY, v TEXT, e ENUM('a', 'b'), extra INT)`, `CREATE TABLE mcdc_db.mcdc_bit (id INT PRIMARY KEY, bt BIT(3))`,
		`GRANT SELECT, RELOAD, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO mcdc_user@'127.0.0.1'`,
		`INSERT INTO mcdc_db.mcdc_kv SELECT seq, CONCAT('v', seq), 'a', seq FROM mcdc_db.seq_1_to_50`)
	err := cdcExpect(t, sl, `CREATE SOURCE w (id INT PRIMARY KEY, v TEXT) WITH (`+m.withOpts("mcdc_user", "wrong-pw", "mcdc_kv")+`)`,
		"28P01", "Access denied")
	if strings.Contains(err.Error(), "wrong-pw") {
		t.Fatalf("the error shows the password: %v", err)
	}
	cdcExpect(t, sl, `CREATE SOURCE nt (id INT PRIMARY KEY, v TEXT) WITH (`+m.withOpts("root", "", "mcdc_missing")+`)`,
		"42P01", "mcdc_missing` does not exist")
	cdcExpect(t, sl, `CREATE SOURCE nk (id INT PRIMARY KEY, v TEXT) WITH (`+m.withOpts("root", "", "mcdc_nokey")+`)`,
		"55000", "has no primary key")
	cdcExpect(t, sl, `CREATE SOURCE wk (id INT, v TEXT PRIMARY KEY) WITH (`+m.withOpts("root", "", "mcdc_kv")+`)`,
		"42P17", "is not the upstream key (id)")
	cdcExpect(t, sl, `CREATE SOURCE nodecl (id INT, v TEXT) WITH (`+m.withOpts("root", "", "mcdc_kv")+`)`,
		"42P17", "needs a PRIMARY KEY")
	cdcExpect(t, sl, `CREATE SOURCE badtype (id INT PRIMARY KEY, v BIGINT) WITH (`+m.withOpts("root", "", "mcdc_kv")+`)`,
		"42804", "column v is text upstream")
	err = cdcExpect(t, sl, `CREATE SOURCE narrow (id SMALLINT PRIMARY KEY, v TEXT) WITH (`+m.withOpts("root", "", "mcdc_kv")+`)`,
		"42804", "column id is int(11) upstream")
	if pe, ok := errors.AsType[*pgconn.PgError](err); !ok || pe.Hint != "declare it as INT" {
		t.Fatalf("narrow: hint of %v, want \"declare it as INT\"", err)
	}
	cdcExpect(t, sl, `CREATE SOURCE nocol (id INT PRIMARY KEY, nope TEXT) WITH (`+m.withOpts("root", "", "mcdc_kv")+`)`,
		"42703", "column nope does not exist")
	cdcExpect(t, sl, `CREATE SOURCE bits (id INT PRIMARY KEY, bt TEXT) WITH (`+m.withOpts("root", "", "mcdc_bit")+`)`,
		"42804", "column bt is bit(3) upstream")
	cdcExpect(t, sl, `CREATE SOURCE bits (id INT PRIMARY KEY, bt BOOLEAN) WITH (`+m.withOpts("root", "", "mcdc_bit")+`)`,
		"42804", "column bt is bit(3) upstream")
	cdcExpect(t, sl, `CREATE SOURCE en (id INT PRIMARY KEY, e INT) WITH (`+m.withOpts("root", "", "mcdc_kv")+`)`,
		"42804", "column e is enum('a','b') upstream")
	cdcExpect(t, sl, `CREATE SOURCE iv (id INT PRIMARY KEY, v INTERVAL) WITH (`+m.withOpts("root", "", "mcdc_kv")+`)`,
		"0A000", "cannot read column v of type interval")
	cdcExpect(t, sl, `CREATE SOURCE opt (id INT PRIMARY KEY) WITH (`+m.withOpts("root", "", "mcdc_kv")+`, slot.name = 'x')`,
		"22023", "unknown option")
	cdcExpect(t, sl, `CREATE SOURCE gt (id INT PRIMARY KEY) WITH (`+m.withOpts("root", "", "mcdc_kv")+`, gtid.enable = 'maybe')`,
		"22023", `option gtid.enable: "maybe" is not 'true' or 'false'`)

	// binlog_format changed to STATEMENT: refused.
	mysqlExec(t, up, `SET GLOBAL binlog_format = 'STATEMENT'`)
	cdcExpect(t, sl, `CREATE SOURCE st (id INT PRIMARY KEY, v TEXT) WITH (`+m.withOpts("root", "", "mcdc_kv")+`)`,
		"55000", "binlog_format is STATEMENT, not ROW")
	mysqlExec(t, up, `SET GLOBAL binlog_format = 'ROW'`)

	// The right password, as a user with the replication privileges only.
	ExecAll(t, sl, `CREATE SOURCE kv (id INT PRIMARY KEY, v TEXT, extra INT) WITH (`+m.withOpts("mcdc_user", "right-pw", "mcdc_kv")+`)`,
		`CREATE MATERIALIZED VIEW kv_v AS SELECT * FROM kv`)
	up = m.connect(t) // a new session sees binlog_format ROW
	kvQ, kvMQ := `SELECT * FROM kv_v ORDER BY id`, `SELECT id, v, extra FROM mcdc_db.mcdc_kv ORDER BY id`
	waitSameMySQL(t, sl, up, kvQ, kvMQ, "", 30*time.Second)
	// ADD COLUMN at the end is followed.
	mysqlExec(t, up, `ALTER TABLE mcdc_db.mcdc_kv ADD COLUMN added TEXT DEFAULT 'x'`,
		`INSERT INTO mcdc_db.mcdc_kv VALUES (51, 'v51', 'b', 51, 'new')`, `UPDATE mcdc_db.mcdc_kv SET v = 'u' WHERE id = 2`)
	waitSameMySQL(t, sl, up, kvQ, kvMQ, "", 30*time.Second)
	// Dropping a declared column stops the view with a clear error.
	mysqlExec(t, up, `ALTER TABLE mcdc_db.mcdc_kv DROP COLUMN extra`, `INSERT INTO mcdc_db.mcdc_kv (id, v) VALUES (52, 'x')`)
	waitLine(t, sl, `SHOW MATERIALIZED VIEWS`, "schema change upstream", 30*time.Second)

	// TRUNCATE upstream is reported.
	mysqlExec(t, up, `CREATE TABLE mcdc_db.mcdc_tr (id INT PRIMARY KEY)`, `INSERT INTO mcdc_db.mcdc_tr VALUES (1), (2)`)
	ExecAll(t, sl, `CREATE SOURCE tr (id INT PRIMARY KEY) WITH (`+m.withOpts("root", "", "mcdc_tr")+`)`,
		`CREATE MATERIALIZED VIEW tr_v AS SELECT * FROM tr`)
	waitSameMySQL(t, sl, up, `SELECT * FROM tr_v ORDER BY id`, `SELECT * FROM mcdc_db.mcdc_tr ORDER BY id`, "", 30*time.Second)
	mysqlExec(t, up, `TRUNCATE TABLE mcdc_db.mcdc_tr`)
	waitLine(t, sl, `SHOW MATERIALIZED VIEWS`, "was truncated", 30*time.Second)

	// Upstream down at start: the source retries, SHOW SOURCES shows why,
	// and the rows arrive once MariaDB is up.
	down := startMariaDB(t, true)
	mysqlExec(t, down.connect(t), `CREATE DATABASE mcdc_db`, `CREATE TABLE mcdc_db.mcdc_late (id INT PRIMARY KEY, v TEXT)`,
		`INSERT INTO mcdc_db.mcdc_late VALUES (1, 'a'), (2, 'b')`)
	down.stop()
	ExecAll(t, sl, `CREATE SOURCE late (id INT PRIMARY KEY, v TEXT) WITH (`+down.withOpts("root", "", "mcdc_late")+`)`,
		`CREATE MATERIALIZED VIEW late_v AS SELECT * FROM late`)
	line := waitLine(t, sl, `SHOW SOURCES`, "connection refused", 30*time.Second)
	if !strings.HasPrefix(line, "late mysql-cdc 0 0 EXACTLY_ONCE ") {
		t.Fatalf("SHOW SOURCES: %q", line)
	}
	if err := down.start(); err != nil {
		t.Fatal(err)
	}
	dc := down.connect(t)
	mysqlExec(t, dc, `INSERT INTO mcdc_db.mcdc_late VALUES (3, 'c')`)
	waitSameMySQL(t, sl, dc, `SELECT * FROM late_v ORDER BY id`, `SELECT * FROM mcdc_db.mcdc_late ORDER BY id`, "", 30*time.Second)
	waitLine(t, sl, `SHOW SOURCES`, "late mysql-cdc 0 0 EXACTLY_ONCE ·", 10*time.Second)
}

// TestMySQLCDCCrash: writers insert, update (also moving keys) and
// delete rows of a MariaDB table, in single statements and in
// transactions, while Sluice is killed with SIGKILL at random moments,
// the binlog rotates (FLUSH BINARY LOGS) before each kill and while Sluice
// is down, and MariaDB itself is killed and restarted once. Afterwards the views over
// the CDC table equal the same queries on MariaDB: lost=0, duplicated=0.
// CI runs 12 s of writing; SLUICE_CDC_CRASH_SECONDS runs longer (and
// SLUICE_CDC_CRASH_SEED repeats a run).
func TestMySQLCDCCrash(t *testing.T) {
	dur := 12 * time.Second
	if v, err := strconv.Atoi(os.Getenv("SLUICE_CDC_CRASH_SECONDS")); err == nil && v > 0 {
		dur = time.Duration(v) * time.Second
	}
	seed := time.Now().UnixNano()
	if v, err := strconv.ParseInt(os.Getenv("SLUICE_CDC_CRASH_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("seed %d (SLUICE_CDC_CRASH_SEED), %v of writing", seed, dur)
	rng := rand.New(rand.NewPCG(uint64(seed), 23))

	m := startMariaDB(t, true)
	up := m.connect(t)
	mysqlExec(t, up, `CREATE DATABASE mcdc_db`,
		`CREATE TABLE mcdc_db.mcdc_acct (id INT PRIMARY KEY, grp INT NOT NULL, v BIGINT NOT NULL, note VARCHAR(20))`,
		`INSERT INTO mcdc_db.mcdc_acct SELECT seq, seq % 10, seq * 10, 'seed' FROM mcdc_db.seq_1_to_500`)

	srv := StartServer(t, Options{CheckpointInterval: time.Second})
	sl := srv.Connect(t)
	ExecAll(t, sl, `CREATE TABLE c (id INT PRIMARY KEY, grp INT, v BIGINT, note TEXT) WITH (`+m.withOpts("root", "", "mcdc_acct")+`)`,
		`CREATE MATERIALIZED VIEW mirror AS SELECT * FROM c`,
		`CREATE MATERIALIZED VIEW per_grp AS SELECT grp, count(*) AS n, sum(v) AS s, max(note) AS m FROM mirror GROUP BY grp`)
	_ = sl.Close(context.Background())

	const minKills = 5
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var commits, failed atomic.Int64
	for w := range 2 {
		wrng := rand.New(rand.NewPCG(uint64(seed), uint64(w)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			mcdcWriter(ctx, m.addr, w, wrng, &commits, &failed)
		}()
	}
	kills := 0
	upRestarted := false
	start := time.Now()
	for time.Since(start) < dur || kills < minKills || !upRestarted {
		time.Sleep(time.Duration(500+rng.IntN(2000)) * time.Millisecond)
		if !upRestarted && (time.Since(start) > dur/2 || kills >= minKills) {
			upRestarted = true
			m.kill()
			time.Sleep(time.Duration(rng.IntN(1000)) * time.Millisecond)
			if err := m.start(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		// The binlog rotates while Sluice streams, and again while it is
		// down: the resumed source finds its GTID position in a newer file.
		mcdcFlush(t, m)
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		kills++
		mcdcFlush(t, m)
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	wg.Wait()
	t.Logf("%d upstream transactions committed, %d failed (upstream restart), %d kills of sluice, %d binlog files",
		commits.Load(), failed.Load(), kills, len(mcdcBinlogs(t, m.connect(t))))
	if commits.Load() < 100 {
		t.Fatalf("too little happened: %d commits, %d kills", commits.Load(), kills)
	}
	sl = srv.Connect(t)
	up = m.connect(t)
	var got, want []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		var err error
		if want, err = mysqlLines(up, `SELECT id, grp, v, note FROM mcdc_db.mcdc_acct ORDER BY id`, ""); err != nil {
			t.Fatal(err)
		}
		got, err = sluiceLines(context.Background(), sl, `SELECT * FROM mirror ORDER BY id`, "")
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
	waitSameMySQL(t, sl, up, `SELECT grp, n, s, m FROM per_grp ORDER BY grp`,
		`SELECT grp, count(*), sum(v), max(note) FROM mcdc_db.mcdc_acct GROUP BY grp ORDER BY grp`, "", 30*time.Second)
}

// mcdcFlush rotates m's binlog (FLUSH BINARY LOGS) on a connection of
// its own.
func mcdcFlush(t *testing.T, m *mariaDB) {
	t.Helper()
	c, err := client.ConnectWithTimeout(m.addr, "root", "", "", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mysqlExec(t, c, `FLUSH BINARY LOGS`)
}

// mcdcWriter changes mcdc_acct until ctx ends: inserts, upserts, updates,
// key moves and deletes, alone or several in one transaction, and rows of
// its own ledger that nothing changes again (a loss stays visible).
// Errors (MariaDB restarting) are counted and the connection made again.
func mcdcWriter(ctx context.Context, addr string, w int, rng *rand.Rand, commits, failed *atomic.Int64) {
	ledger := 100000 + w*1000000
	var conn *client.Conn
	defer func() {
		if conn != nil {
			conn.Close()
		}
	}()
	for ctx.Err() == nil {
		if conn == nil {
			c, err := client.ConnectWithTimeout(addr, "root", "", "mcdc_db", 2*time.Second)
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
			stmts = append(stmts, fmt.Sprintf(`INSERT INTO mcdc_acct VALUES (%d, %d, %d, 'ledger')`, ledger, rng.IntN(10), rng.IntN(1000)))
		}
		for range n {
			id := 1 + rng.IntN(1000)
			switch rng.IntN(5) {
			case 0, 1:
				stmts = append(stmts, fmt.Sprintf(`INSERT INTO mcdc_acct VALUES (%d, %d, %d, 'i%d') ON DUPLICATE KEY UPDATE v = v + 1, note = 'c%d'`,
					id, rng.IntN(10), rng.IntN(100000), rng.IntN(100), rng.IntN(100)))
			case 2:
				stmts = append(stmts, fmt.Sprintf(`UPDATE mcdc_acct SET v = v + %d, grp = %d, note = 'u%d' WHERE id = %d`, rng.IntN(100), rng.IntN(10), rng.IntN(100), id))
			case 3:
				stmts = append(stmts, fmt.Sprintf(`UPDATE IGNORE mcdc_acct SET id = %d WHERE id = %d`, 1+rng.IntN(2000), id))
			default:
				stmts = append(stmts, fmt.Sprintf(`DELETE FROM mcdc_acct WHERE id = %d`, id))
			}
		}
		err := func() error {
			if err := conn.Begin(); err != nil {
				return err
			}
			for _, s := range stmts {
				if _, err := conn.Execute(s); err != nil {
					_ = conn.Rollback()
					return err
				}
			}
			return conn.Commit()
		}()
		if err != nil {
			failed.Add(1)
			var my *mysql.MyError
			if !errors.As(err, &my) {
				conn.Close()
				conn = nil
			}
			continue
		}
		commits.Add(1)
	}
}

// TestMySQLCDCEnumSet: ENUM and SET columns read as TEXT, from the
// snapshot (their text) and from the binlog (an ENUM's index, a SET's
// bitmask, turned into the values upstream declares, a quote and upper
// case kept), and BIT columns as BOOLEAN (BIT(1)), BIGINT and BYTEA (the
// snapshot's bytes, the binlog's integer): after the snapshot and after
// inserts, updates and deletes the view equals MariaDB's own values.
func TestMySQLCDCEnumSet(t *testing.T) {
	m := startMariaDB(t, true)
	up := m.connect(t)
	mysqlExec(t, up, `CREATE DATABASE mcdc_db`,
		`CREATE TABLE mcdc_db.mcdc_es (id INT PRIMARY KEY, e ENUM('small', 'Big', 'it''s'), s SET('x', 'Y', 'zw'), n INT, b1 BIT(1), b12 BIT(12), bb BIT(12))`,
		`INSERT INTO mcdc_db.mcdc_es VALUES (1, 'small', 'x', 1, b'1', b'101', b'101'), (2, 'Big', 'x,Y', 2, b'0', b'111111111111', b'111111111111'), (3, NULL, '', 3, NULL, NULL, NULL), (4, 'it''s', 'Y,zw', 4, b'1', 0, 0)`)
	srv := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	sl := srv.Connect(t)
	ExecAll(t, sl, `CREATE SOURCE es (id INT PRIMARY KEY, e TEXT, s VARCHAR, n INT, b1 BOOLEAN, b12 BIGINT, bb BYTEA) WITH (`+m.withOpts("root", "", "mcdc_es")+`)`,
		`CREATE MATERIALIZED VIEW es_v AS SELECT id, e, s, n, b1, b12, bb FROM es`)
	check := func(what string) {
		t.Helper()
		want, err := mysqlLines(up, `SELECT id, CAST(e AS CHAR), CAST(s AS CHAR), n, IF(b1 IS NULL, NULL, IF(b1 = 1, 't', 'f')), CAST(b12 AS UNSIGNED),
			IF(bb IS NULL, NULL, CONCAT('\\x', LPAD(LOWER(HEX(CAST(bb AS UNSIGNED))), 4, '0'))) FROM mcdc_db.mcdc_es ORDER BY id`, "sssssss")
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			got := queryLines(t, sl, `SELECT id, e, s, n, b1, b12, bb FROM es_v ORDER BY id`)
			if strings.Join(got, "\n") == strings.Join(want, "\n") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: view\n%s\nMariaDB\n%s", what, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	check("snapshot")
	mysqlExec(t, up, `INSERT INTO mcdc_db.mcdc_es VALUES (5, 'Big', 'zw,x', 5, b'0', b'100000000001', b'100000000001'), (6, NULL, NULL, 6, NULL, NULL, NULL)`,
		`UPDATE mcdc_db.mcdc_es SET b1 = b'0', b12 = 4095, bb = 7 WHERE id = 4`,
		`UPDATE mcdc_db.mcdc_es SET e = 'it''s', s = 'Y' WHERE id = 1`,
		`UPDATE mcdc_db.mcdc_es SET s = 'x,Y,zw' WHERE id = 3`,
		`DELETE FROM mcdc_db.mcdc_es WHERE id = 2`)
	check("binlog")
}
