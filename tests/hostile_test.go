package tests

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// hostileCase is a statement that used to overflow the goroutine stack and
// kill the server (issue 15, item 6), with the SQLSTATE it must now get
// ("" for success) and, on success, the first column of its one row.
type hostileCase struct {
	name string
	sql  string
	code string
	want string
}

func hostileCases() []hostileCase {
	rep := strings.Repeat
	return []hostileCase{
		// A non-recursive CTE does not see itself: the inner t is the table.
		{"cte-shadows-table", "WITH t AS (SELECT * FROM t WHERE id > 1) SELECT count(*) FROM t", "", "2"},
		{"recursive-function", "CREATE FUNCTION f(x INT) RETURNS INT LANGUAGE sql AS 'SELECT f(x)'", "0A000", ""},
		{"mutually-recursive-functions", "CREATE OR REPLACE FUNCTION g(x INT) RETURNS INT LANGUAGE sql AS 'SELECT h(x)'", "0A000", ""},
		{"with-recursive", "WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r", "0A000", ""},
		// Two million bytes of 1+1+…: a million levels of binary operators.
		{"plus-chain-2MB", "SELECT 1" + rep("+1", 1_000_000), "54001", ""},
		{"and-chain-100k", "SELECT 1 WHERE " + strings.Repeat("1 = 1 AND ", 100_000) + "true", "54001", ""},
		{"parens-10000", "SELECT " + rep("(", 10_000) + "1" + rep(")", 10_000), "54001", ""},
		{"not-10000", "SELECT " + rep("NOT ", 10_000) + "true", "54001", ""},
		{"minus-10000", "SELECT " + rep("- ", 10_000) + "1", "54001", ""},
		{"array-10000", "SELECT " + rep("ARRAY[", 10_000) + "1" + rep("]", 10_000), "54001", ""},
		{"case-10000", "SELECT " + rep("CASE WHEN true THEN ", 10_000) + "1" + rep(" END", 10_000), "54001", ""},
		{"subqueries-3000", "SELECT * FROM " + rep("(SELECT * FROM ", 3000) + "t" + rep(") s", 3000), "54001", ""},
		// Ordinary deep-ish statements still work.
		{"parens-500", "SELECT " + rep("(", 500) + "1" + rep(")", 500), "", "1"},
		{"not-500", "SELECT " + rep("NOT ", 500) + "true", "", "t"},
		{"plus-chain-500", "SELECT 1" + rep("+1", 500), "", "501"},
		{"and-chain-500", "SELECT count(*) FROM t WHERE " + rep("id > 1 AND ", 500) + "true", "", "2"},
		{"subqueries-200", "SELECT count(*) FROM " + rep("(SELECT * FROM ", 200) + "t" + rep(") s", 200), "", "3"},
		{"functions-nested", "SELECT h(h(h(h(h(h(h(h(h(h(1))))))))))", "", "3070"},
	}
}

// TestHostileStatements sends each statement over both protocols to a real
// server and checks its SQLSTATE (or its answer), then that the server is
// still up and a new session gets SELECT 1.
func TestHostileStatements(t *testing.T) {
	srv := StartServer(t, Options{})
	ctx := context.Background()
	setup := srv.Connect(t)
	for _, q := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY)",
		"INSERT INTO t VALUES (1), (2), (3)",
		"CREATE FUNCTION g(x INT) RETURNS INT LANGUAGE sql AS 'SELECT x + 1'",
		"CREATE FUNCTION h(x INT) RETURNS INT LANGUAGE sql AS 'SELECT g(x) * 2'",
	} {
		if _, err := setup.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, proto := range []string{"extended", "simple"} {
		for _, c := range hostileCases() {
			t.Run(proto+"/"+c.name, func(t *testing.T) {
				var conn *pgx.Conn
				if proto == "simple" {
					conn = srv.ConnectSimple(t)
				} else {
					conn = srv.Connect(t)
				}
				qctx, cancel := context.WithTimeout(ctx, 60*time.Second)
				defer cancel()
				var got string
				err := readOne(qctx, conn, c.sql, &got)
				var pe *pgconn.PgError
				switch {
				case c.code == "" && err != nil:
					t.Errorf("want success, got %v", err)
				case c.code == "" && got != c.want:
					t.Errorf("got %q, want %q", got, c.want)
				case c.code != "" && !errors.As(err, &pe):
					t.Errorf("want SQLSTATE %s, got %v", c.code, err)
				case c.code != "" && pe.Code != c.code:
					t.Errorf("want SQLSTATE %s, got %s: %s", c.code, pe.Code, pe.Message)
				}
				if !srv.Running() {
					t.Fatalf("server died:\n%s", tail(srv.Logs(), 2000))
				}
				// The same session and a new one both go on.
				for _, cn := range []*pgx.Conn{conn, srv.Connect(t)} {
					var one int
					if err := cn.QueryRow(qctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
						t.Fatalf("SELECT 1 after the statement: %d, %v", one, err)
					}
				}
			})
		}
	}
}

// readOne runs sql and reads the first column of its first row as text (a
// statement without rows leaves got empty).
func readOne(ctx context.Context, conn *pgx.Conn, sql string, got *string) error {
	rows, err := conn.Query(ctx, sql, pgx.QueryResultFormats{pgx.TextFormatCode})
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		*got = string(rows.RawValues()[0])
	}
	rows.Close()
	return rows.Err()
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
