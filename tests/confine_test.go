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

// wantCode runs sql and checks it fails with SQLSTATE code and a message
// holding every one of mentions; it returns the error.
func wantCode(t *testing.T, conn *pgx.Conn, sql, code string, mentions ...string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := QueryText(ctx, conn, sql)
	if err == nil {
		t.Errorf("%s: succeeded, want SQLSTATE %s", sql, code)
		return nil
	}
	if PgCode(err) != code {
		t.Errorf("%s: %v (SQLSTATE %s), want SQLSTATE %s", sql, err, PgCode(err), code)
	}
	for _, m := range mentions {
		if !strings.Contains(errorText(err), m) {
			t.Errorf("%s: error %q does not mention %q", sql, errorText(err), m)
		}
	}
	return err
}

// errorText is an error's message with its detail and hint.
func errorText(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Message + "\n" + pe.Detail + "\n" + pe.Hint
	}
	return err.Error()
}

// TestFunctionNoShadowing: one session's CREATE FUNCTION abs(…) never
// changes what abs(-5) returns for another (built-ins win for unqualified
// names, as if pg_catalog came first on every search path); the user's
// function is public.abs; functions live in schemas (pg_proc.pronamespace)
// and are dropped by their qualified name.
func TestFunctionNoShadowing(t *testing.T) {
	srv := StartServer(t, Options{})
	mallory, victim := srv.Connect(t), srv.Connect(t)
	ExecAll(t, mallory,
		`CREATE FUNCTION abs(x int) RETURNS int LANGUAGE SQL AS $$ SELECT 42 $$`,
		`CREATE FUNCTION lower(x text) RETURNS text LANGUAGE SQL AS $$ SELECT 'pwned' $$`,
		`CREATE SCHEMA s`,
		`CREATE FUNCTION s.twice(x int) RETURNS int LANGUAGE SQL AS $$ SELECT x * 2 $$`,
	)
	for _, conn := range []*pgx.Conn{victim, mallory} {
		if got := queryLines(t, conn, `SELECT abs(-5), lower('ABC'), pg_catalog.abs(-7)`); strings.Join(got, "|") != "5 abc 7" {
			t.Errorf("built-ins after a user's abs/lower: got %q, want [5 abc 7]", got)
		}
	}
	if got := queryLines(t, victim, `SELECT public.abs(-5), public.lower('ABC'), s.twice(21)`); strings.Join(got, "|") != "42 pwned 42" {
		t.Errorf("qualified user functions: got %q, want [42 pwned 42]", got)
	}
	// A view planned after the user's abs still uses the built-in.
	ExecAll(t, victim, `CREATE TABLE n (v INT)`, `INSERT INTO n VALUES (-3)`,
		`CREATE MATERIALIZED VIEW nv AS SELECT abs(v) AS a FROM n`, `FLUSH`)
	if got := queryLines(t, victim, `SELECT a FROM nv`); strings.Join(got, "|") != "3" {
		t.Errorf("view over abs: got %q, want [3]", got)
	}
	got := queryLines(t, victim, `SELECT p.proname, n.nspname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE p.proname IN ('twice', 'abs') AND p.prolang = 14 ORDER BY 1`)
	if strings.Join(got, "|") != "abs public|twice s" {
		t.Errorf("pg_proc of user functions: got %q, want [abs public, twice s]", got)
	}
	wantCode(t, victim, `SELECT s.nosuch(1)`, "42883")
	wantCode(t, victim, `CREATE FUNCTION abs(x int) RETURNS int LANGUAGE SQL AS $$ SELECT 1 $$`, "42723", "already exists")
	ExecAll(t, mallory, `DROP FUNCTION s.twice`, `DROP FUNCTION abs`)
	wantCode(t, victim, `SELECT s.twice(1)`, "42883")
	wantCode(t, victim, `SELECT public.abs(1)`, "42883")
	if got := queryLines(t, victim, `SELECT abs(-5)`); strings.Join(got, "|") != "5" {
		t.Errorf("abs after DROP: got %q", got)
	}
}
