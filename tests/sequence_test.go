package tests

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Constraints, defaults, identity columns and sequences are catalog state:
// they hold after a restart of a real sluice process, and a sequence never
// hands out a value twice, even across kill -9.

func queryInt(t *testing.T, conn *pgx.Conn, sql string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var v int64
	if err := conn.QueryRow(ctx, sql).Scan(&v); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

func expectCode(t *testing.T, conn *pgx.Conn, code, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := QueryText(ctx, conn, sql)
	if got := PgCode(err); got != code {
		t.Fatalf("%s: want SQLSTATE %s, got %v", sql, code, err)
	}
}

func TestConstraintsSurviveRestart(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE c (id SERIAL PRIMARY KEY, name TEXT NOT NULL, qty INT CHECK (qty >= 0), code TEXT UNIQUE,
		   note TEXT DEFAULT 'n/' || 'a', g BIGINT GENERATED ALWAYS AS IDENTITY)`,
		`CREATE SEQUENCE other START 100`,
		`INSERT INTO c (name, qty, code) VALUES ('a', 1, 'A'), ('b', 2, 'B')`,
		`SELECT nextval('other')`,
		`CREATE UNIQUE INDEX c_qty_key ON c (qty)`,
		`ALTER TABLE c ADD COLUMN extra INT DEFAULT 42`,
	)
	conn = srv.StopRestart(t, conn)
	expectCode(t, conn, "23502", `INSERT INTO c (name) VALUES (NULL)`)
	expectCode(t, conn, "23514", `INSERT INTO c (name, qty) VALUES ('x', -1)`)
	expectCode(t, conn, "23505", `INSERT INTO c (name, code) VALUES ('x', 'A')`)
	expectCode(t, conn, "23505", `INSERT INTO c (name, qty) VALUES ('x', 2)`)
	expectCode(t, conn, "428C9", `INSERT INTO c (name, g) VALUES ('x', 5)`)
	ExecAll(t, conn, `INSERT INTO c (name, qty) VALUES ('c', 3)`, `FLUSH`)
	ctx := context.Background()
	var id, g, extra int64
	var note string
	if err := conn.QueryRow(ctx, `SELECT id, note, g, extra FROM c WHERE name = 'c'`).Scan(&id, &note, &g, &extra); err != nil {
		t.Fatal(err)
	}
	// The failed inserts consumed serial values too; after the restart
	// the sequences only move forward.
	if id <= 2 || g <= 2 || note != "n/a" || extra != 42 {
		t.Fatalf("after restart: id=%d g=%d note=%q extra=%d", id, g, note, extra)
	}
	if v := queryInt(t, conn, `SELECT nextval('other')`); v <= 100 {
		t.Fatalf("nextval('other') after restart = %d, want > 100", v)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM c`); n != 3 {
		t.Fatalf("count = %d, want 3", n)
	}
}

// TestSequenceKill takes nextval from a sequence and from a SERIAL column
// in several sessions while the server is SIGKILLed at random moments:
// every value acknowledged to a client is distinct, across all runs.
func TestSequenceKill(t *testing.T) {
	kills := 5
	if testing.Short() {
		kills = 2
	}
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn, `CREATE SEQUENCE s`, `CREATE TABLE r (id BIGSERIAL PRIMARY KEY, w INT)`)
	conn.Close(context.Background())
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var mu sync.Mutex
	seen := map[int64]bool{}
	rowIDs := map[int64]bool{}
	var acked, rows int
	for k := 0; k < kills; k++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < 3; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				c, err := Connect(context.Background(), srv.ConnString())
				if err != nil {
					return
				}
				defer c.Close(context.Background())
				for {
					select {
					case <-stop:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					var v int64
					var err error
					if w == 0 {
						err = c.QueryRow(ctx, `INSERT INTO r (w) VALUES ($1) RETURNING id`, k).Scan(&v)
					} else {
						err = c.QueryRow(ctx, `SELECT nextval('s')`).Scan(&v)
					}
					cancel()
					if err != nil {
						return
					}
					mu.Lock()
					if w == 0 {
						if rowIDs[v] {
							t.Errorf("serial id %d handed out twice", v)
						}
						rowIDs[v] = true
						rows++
					} else {
						if seen[v] {
							t.Errorf("nextval value %d handed out twice", v)
						}
						seen[v] = true
						acked++
					}
					mu.Unlock()
				}
			}(w)
		}
		time.Sleep(time.Duration(100+rng.Intn(400)) * time.Millisecond)
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	conn = srv.Connect(t)
	ExecAll(t, conn, `FLUSH`)
	// Every acknowledged row is there, with its id.
	n := queryInt(t, conn, `SELECT count(*) FROM r`)
	if int(n) < rows {
		t.Fatalf("%d rows acknowledged, %d in the table", rows, n)
	}
	maxSeen := int64(0)
	for v := range seen {
		if v > maxSeen {
			maxSeen = v
		}
	}
	if v := queryInt(t, conn, `SELECT nextval('s')`); v <= maxSeen {
		t.Fatalf("nextval after the kills = %d, not above %d", v, maxSeen)
	}
	fmt.Printf("kills=%d nextval_acked=%d serial_rows=%d duplicates=0\n", kills, acked, rows)
}

// TestAlterTableKill adds and drops columns of a table with rows and kills
// the server right after each acknowledgement: after the restart the table
// has the new shape and every row, with the new column's default.
func TestAlterTableKill(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE a (id INT PRIMARY KEY, v TEXT UNIQUE)`,
		`INSERT INTO a SELECT g, 'v' || g FROM generate_series(1, 500) AS g`,
		`ALTER TABLE a ADD COLUMN n INT NOT NULL DEFAULT 7`)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	conn = srv.Connect(t)
	ExecAll(t, conn, `FLUSH`)
	if n := queryInt(t, conn, `SELECT count(*) FROM a WHERE n = 7`); n != 500 {
		t.Fatalf("after ADD COLUMN and kill: %d rows with the default, want 500", n)
	}
	expectCode(t, conn, "23505", `INSERT INTO a VALUES (501, 'v1', 1)`)
	expectCode(t, conn, "23502", `INSERT INTO a VALUES (501, 'new', NULL)`)
	ExecAll(t, conn, `ALTER TABLE a DROP COLUMN v`)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	conn = srv.Connect(t)
	ExecAll(t, conn, `INSERT INTO a VALUES (501, 8)`, `FLUSH`)
	if n := queryInt(t, conn, `SELECT sum(n) FROM a`); n != 500*7+8 {
		t.Fatalf("after DROP COLUMN and kill: sum(n) = %d, want %d", n, 500*7+8)
	}
	expectCode(t, conn, "42703", `SELECT v FROM a`)
}

// TestDroppedFunctionInDefault: a default calling a SQL function that is
// later dropped must not keep the server from starting again; writes to
// the table then fail with the reason, reads work.
func TestDroppedFunctionInDefault(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE FUNCTION seven() RETURNS int LANGUAGE SQL AS $$SELECT 7$$`,
		`CREATE TABLE fd (id INT PRIMARY KEY, n INT DEFAULT seven())`,
		`INSERT INTO fd (id) VALUES (1)`,
		`DROP FUNCTION seven`)
	conn = srv.StopRestart(t, conn)
	ExecAll(t, conn, `FLUSH`)
	if n := queryInt(t, conn, `SELECT n FROM fd WHERE id = 1`); n != 7 {
		t.Fatalf("n = %d, want 7", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := QueryText(ctx, conn, `INSERT INTO fd (id) VALUES (2)`); err == nil || PgCode(err) == "" || PgCode(err) == "XX000" {
		t.Fatalf("INSERT into a table whose default no longer binds: %v", err)
	}
}
