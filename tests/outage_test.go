package tests

// Sink outages (issue acceptance 4) and the delivery guarantee a sink
// declares (design.md §1, fact 4).
//
// TestSinkOutage makes a sink's external system unreachable (a private
// PostgreSQL, a private Redis, the Kafka test broker: each killed and later
// started again on the same port and data), writes into a Sluice table
// meanwhile, and checks that the sink retries and keeps its pending epochs
// (SHOW SINKS: Pending Epochs > 0, Last Error set), that checkpoints, the
// view, SELECT and FLUSH go on, that the pending epochs survive a kill -9
// of sluice during the outage, and that once the system is back the
// output is complete and exact.
//
//	go test -run 'TestSinkOutage|TestSinkDeliveryGuarantee' -v ./tests/

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	// outageErrorWait bounds the wait for a sink to report the outage:
	// the Kafka sink gives up on a stalled transaction after 15 s.
	outageErrorWait = 45 * time.Second
	// outageRestartWait bounds the wait for a sink restarted during the
	// outage to report it (it fails to connect at once).
	outageRestartWait = 20 * time.Second
	// outageConvergeWait bounds the wait for a sink to catch up once its
	// system is back (the retry backoff reaches 5 s).
	outageConvergeWait = 60 * time.Second
)

// outageSystem is the external system of one subtest.
type outageSystem struct {
	// sink is the WITH options of a sink of the view agg (k, n, total)
	// keyed by k, and the FORMAT clause if any.
	with, format string
	stop, start  func() error
	// read returns what the sink holds, keyed by k.
	read func(t *testing.T) (map[string]eoAgg, eoResult)
}

func TestSinkOutage(t *testing.T) {
	t.Run("postgres", func(t *testing.T) {
		pg := startPrivatePostgres(t)
		url := "postgres://postgres@" + pg.Addr + "/postgres?sslmode=disable&connect_timeout=5"
		runOutage(t, outageSystem{
			with:  `connector = 'postgres', url = '` + url + `', table = 'out_agg', write_mode = 'transactional', primary_key = 'k'`,
			stop:  pg.Kill,
			start: pg.Start,
			read: func(t *testing.T) (map[string]eoAgg, eoResult) {
				// A connection of its own each time: PostgreSQL restarts.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				conn, err := pgx.Connect(ctx, url)
				if err != nil {
					t.Fatalf("connecting to the private PostgreSQL: %v", err)
				}
				defer conn.Close(ctx)
				got := map[string]eoAgg{}
				var r eoResult
				eoPGQuery(t, conn, "SELECT k, n, total FROM out_agg", func(row []string) {
					if _, dup := got[row[0]]; dup {
						r.duplicated++
						r.note("key %s twice", row[0])
					}
					got[row[0]] = eoAgg{mustIntOr(row[1], -1), mustIntOr(row[2], -1)}
				})
				return got, r
			},
		})
	})
	t.Run("redis", func(t *testing.T) {
		// Appended and fsynced on every write, so that a killed Redis
		// comes back with what it acknowledged, like the other systems.
		rp, addr := startPrivateRedisAOF(t)
		rdb := eoRedis(t, addr, 0)
		runOutage(t, outageSystem{
			with:  `connector = 'redis', redis.url = 'redis://` + addr + `/0', primary_key = 'k'`,
			stop:  rp.Kill,
			start: rp.Start,
			read: func(t *testing.T) (map[string]eoAgg, eoResult) {
				return eoRedisAgg(t, rdb, "outage_sink"), eoResult{}
			},
		})
	})
	t.Run("kafka", func(t *testing.T) {
		broker := StartBroker(t, 2)
		var reader *eoTopicReader
		runOutage(t, outageSystem{
			with:   `connector = 'kafka', properties.bootstrap.server = '` + broker.Addr + `', topic = 'out_agg', primary_key = 'k'`,
			format: `FORMAT UPSERT ENCODE JSON`,
			stop:   broker.Kill,
			start:  broker.Start,
			read: func(t *testing.T) (map[string]eoAgg, eoResult) {
				if reader == nil {
					reader = newEOTopicReader(t, broker.Addr, "out_agg")
				}
				return reader.lastValues(t)
			},
		})
	})
}

// runOutage runs the outage scenario against one system, which is up.
func runOutage(t *testing.T, sys outageSystem) {
	srv := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE t (id BIGINT PRIMARY KEY, k TEXT, v BIGINT)`,
		`CREATE MATERIALIZED VIEW agg AS SELECT k, count(*) AS n, sum(v) AS total FROM t GROUP BY k`,
		`CREATE SINK outage_sink FROM agg WITH (`+sys.with+`, delivery = 'EXACTLY_ONCE') `+sys.format,
	)
	model := map[int64]eoRecord{}
	next := int64(0)
	insert := func(conn *pgx.Conn, n int) {
		t.Helper()
		var vals []string
		for range n {
			next++
			r := eoRecord{id: next, k: "k" + strconv.FormatInt(next%7, 10), amount: next%100 + 1}
			model[r.id] = r
			vals = append(vals, fmt.Sprintf("(%d, '%s', %d)", r.id, r.k, r.amount))
		}
		ExecAll(t, conn, "INSERT INTO t VALUES "+strings.Join(vals, ", "))
	}
	want := func() map[string]eoAgg {
		out := map[string]eoAgg{}
		for _, r := range model {
			a := out[r.k]
			a.n++
			a.total += r.amount
			out[r.k] = a
		}
		return out
	}
	// checkView checks that FLUSH and SELECT on the view work and see
	// every write.
	checkView := func(conn *pgx.Conn, when string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
			t.Fatalf("%s: FLUSH: %v", when, err)
		}
		res, err := QueryText(ctx, conn, "SELECT k, n, total FROM agg")
		if err != nil {
			t.Fatalf("%s: SELECT: %v", when, err)
		}
		got := map[string]eoAgg{}
		for _, r := range res.Rows {
			got[r[0]] = eoAgg{mustInt(t, r[1]), mustInt(t, r[2])}
		}
		if r := eoCompareAgg(want(), got); !r.exact() {
			t.Errorf("%s: the view differs from the model: %s", when, strings.Join(capNotes(r.notes, 10), "; "))
		}
	}
	// converge waits until the sink holds exactly the model.
	converge := func(conn *pgx.Conn, when string) {
		t.Helper()
		deadline := time.Now().Add(outageConvergeWait)
		for {
			got, r := sys.read(t)
			r2 := eoCompareAgg(want(), got)
			r.lost, r.duplicated, r.wrong = r.lost+r2.lost, r.duplicated+r2.duplicated, r.wrong+r2.wrong
			r.notes = append(r.notes, r2.notes...)
			st := eoShowSinks(t, conn)["outage_sink"]
			if r.exact() && st.pending == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the sink did not converge within %v: lost=%d duplicated=%d wrong=%d (%s); SHOW SINKS: %+v",
					when, outageConvergeWait, r.lost, r.duplicated, r.wrong, strings.Join(capNotes(r.notes, 10), "; "), st)
			}
			time.Sleep(100 * time.Millisecond) // polling, bounded by deadline
		}
	}
	// waitStatus polls SHOW SINKS until ok holds.
	waitStatus := func(conn *pgx.Conn, what string, wait time.Duration, ok func(eoSinkStatus) bool) eoSinkStatus {
		t.Helper()
		deadline := time.Now().Add(wait)
		for {
			st := eoShowSinks(t, conn)["outage_sink"]
			if ok(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Errorf("SHOW SINKS never showed %s within %v; last: %+v", what, wait, st)
				return st
			}
			time.Sleep(100 * time.Millisecond) // polling, bounded by deadline
		}
	}

	insert(conn, 50)
	converge(conn, "before the outage")
	checkView(conn, "before the outage")

	if err := sys.stop(); err != nil {
		t.Fatalf("stopping the system: %v", err)
	}
	insert(conn, 50)
	st := waitStatus(conn, "pending epochs and an error", outageErrorWait, func(s eoSinkStatus) bool { return s.pending > 0 && s.lastErr != "" })
	t.Logf("during the outage: %+v", st)
	checkView(conn, "during the outage")
	// Checkpoints go on: new writes are logged for the sink in new epochs.
	logged := st.logged
	insert(conn, 20)
	checkView(conn, "during the outage")
	waitStatus(conn, "the logged epoch advance", outageErrorWait, func(s eoSinkStatus) bool { return s.logged > logged && s.pending > 0 })

	// A kill -9 during the outage keeps the pending epochs.
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatalf("restart during the outage: %v", err)
	}
	conn = srv.Connect(t)
	st = waitStatus(conn, "pending epochs and an error after a restart", outageRestartWait, func(s eoSinkStatus) bool { return s.pending > 0 && s.lastErr != "" })
	t.Logf("after a restart during the outage: %+v", st)
	checkView(conn, "after a restart during the outage")
	insert(conn, 30)
	checkView(conn, "after a restart during the outage")

	if err := sys.start(); err != nil {
		t.Fatalf("starting the system again: %v", err)
	}
	converge(conn, "after the outage")
	insert(conn, 10)
	converge(conn, "after more writes")
	checkView(conn, "at the end")
	got, _ := sys.read(t)
	t.Logf("records=%d keys=%d: exact", len(model), len(got))
}

// lastValues reads an upsert topic of agg: the last value of every key,
// with a key deleted or going back counted as wrong.
func (r *eoTopicReader) lastValues(t *testing.T) (map[string]eoAgg, eoResult) {
	t.Helper()
	r.poll(t)
	last := map[string]eoAgg{}
	var res eoResult
	for _, rec := range r.recs {
		if rec.Value == nil {
			res.wrong++
			res.note("key %s deleted at %d/%d", rec.Key, rec.Partition, rec.Offset)
			continue
		}
		k, a := eoDecodeAgg(rec.Value)
		if prev, ok := last[k]; ok && a.n < prev.n {
			res.wrong++
			res.note("key %s jumped back from %+v to %+v at %d/%d", k, prev, a, rec.Partition, rec.Offset)
		}
		last[k] = a
	}
	return last, res
}

// startPrivatePostgres runs a PostgreSQL 15 instance of the machine in a
// temporary directory on a free port (as the postgres user when the test
// runs as root), like TestCrashRecoveryPostgres. Kill and Start stop and
// start it on the same port and data.
func startPrivatePostgres(t *testing.T) *Server {
	t.Helper()
	dir, data, cred := initPrivatePGCluster(t, "sluice-private-pg-")
	addr := FreeAddr(t)
	srv := NewServer(t, Options{
		Command: []string{filepath.Join(pgBin, "postgres"), "-D", data, "-p", portOf(addr),
			"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + dir,
			"-c", "fsync=on", "-c", "max_connections=40", "-c", "shared_buffers=16MB"},
		Addr: addr, DataDir: data, Credential: cred, User: "postgres", Database: "postgres",
	})
	if err := srv.Start(); err != nil {
		t.Fatalf("starting PostgreSQL: %v", err)
	}
	return srv
}

// startPrivateRedisAOF starts a redis-server of the machine on a free port
// that appends every write to its log and fsyncs it before answering.
func startPrivateRedisAOF(t *testing.T) (*Proc, string) {
	t.Helper()
	addr := FreeAddr(t)
	argv := []string{"redis-server", "--port", portOf(addr), "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "yes", "--appendfsync", "always", "--dir", t.TempDir()}
	p := NewProc(t, "redis-server "+addr, argv, func() error { return pingRedisAt(addr) })
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	return p, addr
}

// TestSinkDeliveryGuarantee checks that a sink declared EXACTLY_ONCE is
// refused when a link of its pipeline cannot give it, naming that link,
// and that SHOW SINKS shows the guarantee accepted instead.
func TestSinkDeliveryGuarantee(t *testing.T) {
	pgURL := FreshPostgresDB(t, "sluice_delivery_guarantee")
	dir := t.TempDir()
	srv := StartServer(t, Options{ExtraArgs: []string{"--file-root", dir}})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE SOURCE sock (id BIGINT, v TEXT) WITH (connector = 'socket', port = '0')`,
		`CREATE MATERIALIZED VIEW sock_v AS SELECT id, v FROM sock`,
		// Append-only and replayable, for the append sink.
		`CREATE SOURCE g (id BIGINT) WITH (connector = 'datagen', fields.id.kind = 'sequence',
			fields.id.start = '1', datagen.rows.per.second = '10')`,
	)
	expectErr := func(stmt, code string, mentions ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, err := QueryText(ctx, conn, stmt)
		if err == nil {
			t.Errorf("%s: succeeded, want SQLSTATE %s", stmt, code)
			return
		}
		if PgCode(err) != code {
			t.Errorf("%s: %v (SQLSTATE %s), want SQLSTATE %s", stmt, err, PgCode(err), code)
		}
		for _, m := range mentions {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: error %q does not mention %q", stmt, err, m)
			}
		}
	}
	fileSink := func(name, from, delivery string) string {
		return fmt.Sprintf(`CREATE SINK %s FROM %s WITH (connector = 'file', path = '%s'%s)`,
			name, from, filepath.Join(dir, name), delivery)
	}
	// A socket cannot replay: at most once, whatever the sink.
	expectErr(fileSink("s_eo", "sock", ", delivery = 'EXACTLY_ONCE'"), "22023", "sock", "socket")
	expectErr(fileSink("s_default", "sock_v", ""), "22023", "sock", "socket")
	expectErr(fileSink("s_alo", "sock_v", ", delivery = 'AT_LEAST_ONCE'"), "22023", "sock")
	ExecAll(t, conn, fileSink("s_amo", "sock_v", ", delivery = 'at_most_once'"))

	// PostgreSQL append writes repeat after a crash: at least once.
	pgSink := func(name, delivery string) string {
		return fmt.Sprintf(`CREATE SINK %s FROM g WITH (connector = 'postgres', url = '%s', table = '%s', write_mode = 'append'%s)`,
			name, pgURL, name, delivery)
	}
	expectErr(pgSink("pg_eo", ", delivery = 'EXACTLY_ONCE'"), "22023", "sink connector postgres", "append")
	ExecAll(t, conn, pgSink("pg_alo", ", delivery = 'AT_LEAST_ONCE'"))

	st := eoShowSinks(t, conn)
	if _, ok := st["s_eo"]; ok {
		t.Errorf("SHOW SINKS lists the refused sink s_eo")
	}
	s := st["s_amo"]
	if s.delivery != "AT_MOST_ONCE" || s.effective != "AT_MOST_ONCE" || !strings.Contains(s.link, "sock") {
		t.Errorf("SHOW SINKS s_amo: %+v, want delivery and effective AT_MOST_ONCE and the socket source as weakest link", s)
	}
	p := st["pg_alo"]
	if p.delivery != "AT_LEAST_ONCE" || p.effective != "AT_LEAST_ONCE" || p.writeMode != "append" || !strings.Contains(p.link, "postgres") {
		t.Errorf("SHOW SINKS pg_alo: %+v, want AT_LEAST_ONCE, write mode append and the postgres sink as weakest link", p)
	}
	t.Logf("s_amo weakest link: %s", s.link)
	t.Logf("pg_alo weakest link: %s", p.link)
}

// pgBin holds the machine's PostgreSQL 15 programs.
const pgBin = "/usr/lib/postgresql/15/bin"

// initPrivatePGCluster runs initdb in a new temporary directory (removed
// with the test) named by prefix, as the postgres user when the test runs
// as root; it returns the directory, the cluster's data directory and the
// credential to run postgres with (nil: the test's own user).
func initPrivatePGCluster(t testing.TB, prefix string) (dir, data string, cred *syscall.Credential) {
	t.Helper()
	pgUser, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("the machine's postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(pgUser.Uid)
	gid, _ := strconv.Atoi(pgUser.Gid)
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if cred != nil {
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data = filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(pgBin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	return dir, data, cred
}
