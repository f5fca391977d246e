package tests

// Transactions across sessions and crashes, over the real wire against a
// real sluice process: a block's writes become visible at one epoch (a
// reader never sees half of one), conflicting blocks fail with 40001 and no
// update is lost, ROLLBACK and a dropped connection discard, DDL in a block
// runs at COMMIT, a multi-statement query string is one transaction, and a
// kill -9 leaves every block all there or not at all.

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func txQueryInt(t testing.TB, conn *pgx.Conn, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// TestTxnAtomicVisibility moves money between accounts in blocks while
// readers poll the table and a view over it: every read sees the same
// total, and a block writing two tables shows both or neither.
func TestTxnAtomicVisibility(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 50 * time.Millisecond})
	ctx := context.Background()
	c := srv.Connect(t)
	ExecAll(t, c,
		`CREATE TABLE acct (id INT PRIMARY KEY, balance BIGINT)`,
		`CREATE TABLE journal (id BIGINT PRIMARY KEY, amount BIGINT)`,
		`CREATE TABLE journal2 (id BIGINT PRIMARY KEY, amount BIGINT)`,
		`CREATE MATERIALIZED VIEW total AS SELECT sum(balance) AS s, count(*) AS n FROM acct`,
		`CREATE MATERIALIZED VIEW j1 AS SELECT count(*) AS n FROM journal`,
		`CREATE MATERIALIZED VIEW jboth AS SELECT count(*) AS n FROM journal j JOIN journal2 k ON j.id = k.id`,
	)
	var vals []string
	for i := 0; i < 20; i++ {
		vals = append(vals, fmt.Sprintf("(%d, 1000)", i))
	}
	ExecAll(t, c, `INSERT INTO acct VALUES `+strings.Join(vals, ","), `FLUSH`)

	var stop atomic.Bool
	var wg sync.WaitGroup
	var commits, reads atomic.Int64
	errs := make(chan error, 16)
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			conn := srv.Connect(t)
			defer conn.Close(ctx)
			rng := rand.New(rand.NewSource(int64(w)))
			for i := 0; !stop.Load(); i++ {
				a, b := rng.Intn(20), rng.Intn(20)
				if a == b {
					continue
				}
				amt := rng.Intn(50)
				jid := int64(w)<<32 | int64(i)
				err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
					if _, err := tx.Exec(ctx, `UPDATE acct SET balance = balance - $1 WHERE id = $2`, amt, a); err != nil {
						return err
					}
					if _, err := tx.Exec(ctx, `UPDATE acct SET balance = balance + $1 WHERE id = $2`, amt, b); err != nil {
						return err
					}
					if _, err := tx.Exec(ctx, `INSERT INTO journal VALUES ($1, $2)`, jid, amt); err != nil {
						return err
					}
					_, err := tx.Exec(ctx, `INSERT INTO journal2 VALUES ($1, $2)`, jid, amt)
					return err
				})
				switch {
				case err == nil:
					commits.Add(1)
				case pgCode(err) == "40001":
				default:
					errs <- fmt.Errorf("writer %d: %v", w, err)
					return
				}
			}
		}(w)
	}
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := srv.Connect(t)
			defer conn.Close(ctx)
			for !stop.Load() {
				var s, n int64
				if err := conn.QueryRow(ctx, `SELECT s, n FROM total`).Scan(&s, &n); err != nil {
					errs <- err
					return
				}
				var ts int64
				if err := conn.QueryRow(ctx, `SELECT sum(balance) FROM acct`).Scan(&ts); err != nil {
					errs <- err
					return
				}
				var ja, jb int64
				if err := conn.QueryRow(ctx, `SELECT (SELECT n FROM j1), (SELECT n FROM jboth)`).Scan(&ja, &jb); err != nil {
					errs <- err
					return
				}
				if s != 20000 || n != 20 || ts != 20000 || ja != jb {
					errs <- fmt.Errorf("a reader saw part of a transaction: view total %d over %d rows, table total %d, journals %d and %d", s, n, ts, ja, jb)
					return
				}
				reads.Add(1)
			}
		}()
	}
	time.Sleep(3 * time.Second)
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if commits.Load() == 0 || reads.Load() == 0 {
		t.Fatalf("no work done: %d commits, %d reads", commits.Load(), reads.Load())
	}
	ExecAll(t, c, `FLUSH`)
	if got := txQueryInt(t, c, `SELECT count(*) FROM journal`); got != commits.Load() {
		t.Errorf("journal has %d rows, %d blocks committed", got, commits.Load())
	}
	t.Logf("%d blocks committed, %d consistent reads", commits.Load(), reads.Load())
}

// TestTxnConflicts: a block that changes a row another open block changed
// fails with 40001; a single statement waits for the block instead; no
// increment is lost; a dropped connection rolls its block back.
func TestTxnConflicts(t *testing.T) {
	srv := StartServer(t, Options{})
	ctx := context.Background()
	a, b := srv.Connect(t), srv.Connect(t)
	ExecAll(t, a, `CREATE TABLE c (id INT PRIMARY KEY, n BIGINT)`, `INSERT INTO c VALUES (1, 0), (2, 0)`)

	ExecAll(t, a, `BEGIN`, `UPDATE c SET n = n + 1 WHERE id = 1`)
	if a.PgConn().TxStatus() != 'T' {
		t.Fatalf("status %c inside a block", a.PgConn().TxStatus())
	}
	ExecAll(t, b, `BEGIN`)
	_, err := b.Exec(ctx, `UPDATE c SET n = n + 10 WHERE id = 1`)
	if pgCode(err) != "40001" {
		t.Fatalf("second block writing the same row: %v, want 40001", err)
	}
	if b.PgConn().TxStatus() != 'E' {
		t.Fatalf("status %c after an error in a block, want E", b.PgConn().TxStatus())
	}
	if _, err := b.Exec(ctx, `SELECT 1`); pgCode(err) != "25P02" {
		t.Fatalf("statement in a failed block: %v, want 25P02", err)
	}
	ExecAll(t, b, `ROLLBACK`)
	// Another row is free.
	ExecAll(t, b, `UPDATE c SET n = n + 5 WHERE id = 2`)

	// A single statement waits for the block that holds the row.
	done := make(chan error, 1)
	go func() {
		_, err := b.Exec(ctx, `UPDATE c SET n = n + 100 WHERE id = 1`)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("statement did not wait for the block: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	ExecAll(t, a, `COMMIT`)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ExecAll(t, a, `FLUSH`)
	if got := txQueryInt(t, a, `SELECT n FROM c WHERE id = 1`); got != 101 {
		t.Fatalf("n = %d after +1 (block) and +100 (statement), want 101", got)
	}

	// Concurrent increments in blocks, retried on 40001: none lost.
	var ok atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn := srv.Connect(t)
			defer conn.Close(ctx)
			for i := 0; i < 25; i++ {
				for {
					err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
						_, err := tx.Exec(ctx, `UPDATE c SET n = n + 1 WHERE id = 2`)
						return err
					})
					if err == nil {
						ok.Add(1)
						break
					}
					if pgCode(err) != "40001" {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	ExecAll(t, a, `FLUSH`)
	if got := txQueryInt(t, a, `SELECT n FROM c WHERE id = 2`); got != 5+ok.Load() || ok.Load() != 100 {
		t.Fatalf("n = %d after %d committed increments (plus 5)", got, ok.Load())
	}

	// A connection that goes away rolls its block back and frees its rows.
	d := srv.Connect(t)
	ExecAll(t, d, `BEGIN`, `UPDATE c SET n = -1 WHERE id = 1`, `INSERT INTO c VALUES (3, 3)`)
	_ = d.Close(ctx)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := b.Exec(ctx, `UPDATE c SET n = n + 1 WHERE id = 1`)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("row still locked after its connection closed: %v", err)
		}
	}
	ExecAll(t, a, `FLUSH`)
	if got := txQueryInt(t, a, `SELECT count(*) FROM c WHERE id = 3`); got != 0 {
		t.Fatalf("a closed connection's block was kept")
	}
	if got := txQueryInt(t, a, `SELECT n FROM c WHERE id = 1`); got != 102 {
		t.Fatalf("n = %d, want 102", got)
	}
}

// TestTxnDDLAndImplicit: DDL inside a block runs at COMMIT and ROLLBACK
// discards it; a block cannot mix DDL and writes (25001); a simple-protocol
// string of several statements is one implicit transaction; implicit_flush
// makes a write visible to other sessions when it is acknowledged.
func TestTxnDDLAndImplicit(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 10 * time.Second})
	ctx := context.Background()
	c := srv.ConnectSimple(t)
	other := srv.Connect(t)

	ExecAll(t, c, `BEGIN`, `CREATE TABLE gone (id INT PRIMARY KEY)`, `ROLLBACK`)
	if _, err := c.Exec(ctx, `SELECT * FROM gone`); pgCode(err) != "42P01" {
		t.Fatalf("a rolled-back CREATE TABLE left a table: %v", err)
	}
	ExecAll(t, c, `BEGIN`, `CREATE TABLE t1 (id INT PRIMARY KEY, v TEXT)`, `CREATE TABLE t2 (id INT PRIMARY KEY)`, `COMMIT`)
	ExecAll(t, c, `INSERT INTO t1 VALUES (1, 'a')`, `INSERT INTO t2 VALUES (1)`)

	ExecAll(t, c, `BEGIN`, `INSERT INTO t1 VALUES (2, 'b')`)
	if _, err := c.Exec(ctx, `CREATE TABLE t3 (id INT)`); pgCode(err) != "25001" {
		t.Fatalf("DDL after a write in a block: %v, want 25001", err)
	}
	ExecAll(t, c, `ROLLBACK`)
	ExecAll(t, c, `BEGIN`, `CREATE TABLE t4 (id INT)`)
	if _, err := c.Exec(ctx, `INSERT INTO t1 VALUES (5, 'e')`); pgCode(err) != "25001" {
		t.Fatalf("a write after DDL in a block: %v, want 25001", err)
	}
	ExecAll(t, c, `ROLLBACK`)

	// One query string, several statements: an error undoes the earlier ones.
	_, err := c.Exec(ctx, `INSERT INTO t1 VALUES (10, 'x'); UPDATE t2 SET id = 20 WHERE id = 1; INSERT INTO t1 VALUES (1, 'dup')`)
	if pgCode(err) != "23505" {
		t.Fatalf("multi-statement string: %v, want 23505", err)
	}
	if n := txQueryInt(t, c, `SELECT count(*) FROM t1 WHERE id = 10`) + txQueryInt(t, c, `SELECT count(*) FROM t2 WHERE id = 20`); n != 0 {
		t.Fatalf("the statements before the error were kept")
	}
	if _, err := c.Exec(ctx, `INSERT INTO t1 VALUES (11, 'y'); INSERT INTO t2 VALUES (11)`); err != nil {
		t.Fatal(err)
	}
	if n := txQueryInt(t, c, `SELECT count(*) FROM t1 WHERE id = 11`) + txQueryInt(t, c, `SELECT count(*) FROM t2 WHERE id = 11`); n != 2 {
		t.Fatalf("multi-statement string committed %d of 2 rows", n)
	}

	// Read-your-writes: with a 10 s checkpoint interval, only the read's
	// own request for the write's epoch can make the first read see it, in
	// the table and in a view over it.
	ExecAll(t, c, `CREATE MATERIALIZED VIEW t1n AS SELECT count(*) AS n FROM t1`)
	before := txQueryInt(t, c, `SELECT n FROM t1n`)
	for i := 0; i < 5; i++ {
		ExecAll(t, c, fmt.Sprintf(`INSERT INTO t1 VALUES (%d, 'ryw')`, 200+i))
		if n := txQueryInt(t, c, `SELECT n FROM t1n`); n != before+int64(i)+1 {
			t.Fatalf("read after an acknowledged insert: view count %d, want %d", n, before+int64(i)+1)
		}
		if n := txQueryInt(t, c, `SELECT count(*) FROM t1 WHERE id = $1`, 200+i); n != 1 {
			t.Fatalf("read after an acknowledged insert does not see the row")
		}
	}
	// Off: the read takes the last committed epoch and does not wait.
	ExecAll(t, c, `SET read_your_writes = off`)
	ExecAll(t, c, `INSERT INTO t1 VALUES (300, 'not yet')`)
	if n := txQueryInt(t, c, `SELECT n FROM t1n`); n != before+5 {
		t.Fatalf("read_your_writes = off: the read waited for the write (count %d, want %d)", n, before+5)
	}
	ExecAll(t, c, `SET read_your_writes = on`, `FLUSH`)

	// implicit_flush: once acknowledged, visible to every session (the
	// checkpoint interval is 10 s, so only the flush can make it so).
	ExecAll(t, c, `SET implicit_flush = on`)
	ExecAll(t, c, `INSERT INTO t1 VALUES (100, 'flushed')`)
	if n := txQueryInt(t, other, `SELECT count(*) FROM t1 WHERE id = 100`); n != 1 {
		t.Fatalf("with implicit_flush a write was not visible to another session on its acknowledgement")
	}
	// RisingWave's spelling, in another session (its setting is its own).
	rw := srv.ConnectSimple(t)
	ExecAll(t, rw, `SET RW_IMPLICIT_FLUSH TO true`)
	ExecAll(t, rw, `INSERT INTO t1 VALUES (101, 'rw flushed')`)
	if n := txQueryInt(t, other, `SELECT count(*) FROM t1 WHERE id = 101`); n != 1 {
		t.Fatalf("with RW_IMPLICIT_FLUSH a write was not visible to another session on its acknowledgement")
	}
	var v string
	if err := rw.QueryRow(ctx, `SHOW rw_implicit_flush`).Scan(&v); err != nil || (v != "true" && v != "on") {
		t.Fatalf("SHOW rw_implicit_flush = %q, %v", v, err)
	}
}

// TestTxnCrashAtomicity SIGKILLs the server while writers commit blocks
// spanning two tables: after every restart each block is wholly there or
// wholly absent, and every acknowledged COMMIT is there.
func TestTxnCrashAtomicity(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	ctx := context.Background()
	setup := srv.Connect(t)
	ExecAll(t, setup, `CREATE TABLE ta (tx BIGINT, i INT, PRIMARY KEY (tx, i))`, `CREATE TABLE tb (tx BIGINT, i INT, PRIMARY KEY (tx, i))`,
		`CREATE MATERIALIZED VIEW per_tx AS SELECT tx, count(*) AS n FROM (SELECT tx FROM ta UNION ALL SELECT tx FROM tb) u GROUP BY tx`)
	_ = setup.Close(ctx)

	var mu sync.Mutex
	acked := map[int64]bool{}
	var stop atomic.Bool
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				conn, err := Connect(ctx, srv.ConnString())
				if err != nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				for !stop.Load() {
					id := next.Add(1)
					err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
						for i := 0; i < 3; i++ {
							if _, err := tx.Exec(ctx, `INSERT INTO ta VALUES ($1, $2)`, id, i); err != nil {
								return err
							}
							if _, err := tx.Exec(ctx, `INSERT INTO tb VALUES ($1, $2)`, id, i); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						break
					}
					mu.Lock()
					acked[id] = true
					mu.Unlock()
				}
				conn.Close(ctx)
			}
		}()
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	kills := 6
	for k := 0; k < kills; k++ {
		time.Sleep(time.Duration(200+rng.Intn(500)) * time.Millisecond)
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	c := srv.Connect(t)
	counts := map[int64][2]int64{}
	for i, tab := range []string{"ta", "tb"} {
		rows, err := c.Query(ctx, `SELECT tx, count(*) FROM `+tab+` GROUP BY tx`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var tx, n int64
			if err := rows.Scan(&tx, &n); err != nil {
				t.Fatal(err)
			}
			v := counts[tx]
			v[i] = n
			counts[tx] = v
		}
		rows.Close()
	}
	partial := 0
	for tx, v := range counts {
		if v != [2]int64{3, 3} {
			partial++
			t.Errorf("block %d is partly there: %d rows in ta, %d in tb", tx, v[0], v[1])
		}
	}
	lost := 0
	for id := range acked {
		if _, ok := counts[id]; !ok {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d acknowledged blocks lost", lost)
	}
	ExecAll(t, c, `FLUSH`)
	if n := txQueryInt(t, c, `SELECT count(*) FROM per_tx WHERE n <> 6`); n != 0 {
		t.Errorf("the view shows %d partial blocks", n)
	}
	if n := txQueryInt(t, c, `SELECT count(*) FROM per_tx`); n != int64(len(counts)) {
		t.Errorf("the view has %d blocks, the tables %d", n, len(counts))
	}
	t.Logf("txn crash: kills=%d acked=%d present=%d partial=%d lost=%d", kills+1, len(acked), len(counts), partial, lost)
}
