package tests

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestConstraintErrorFields checks what the logic files cannot: the
// DETAIL and HINT of constraint errors and the NOTICE of CREATE INDEX, over
// the wire, against PostgreSQL's text.
func TestConstraintErrorFields(t *testing.T) {
	srv := StartServer(t, Options{})
	notices := make(chan string, 16)
	cfg, err := pgx.ParseConfig(srv.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { notices <- n.Code + " " + n.Message }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	ExecAll(t, conn,
		`CREATE TABLE zz (id serial PRIMARY KEY, a int CHECK (a > 0), b int UNIQUE, c text NOT NULL DEFAULT 'x', d int GENERATED ALWAYS AS IDENTITY)`,
		`INSERT INTO zz (a, b) VALUES (1, 7)`)
	for _, c := range []struct {
		sql, code, msg, detail, hint string
	}{
		{`INSERT INTO zz (a, c) VALUES (2, NULL)`, "23502", `null value in column "c" of relation "zz" violates not-null constraint`,
			"Failing row contains (2, 2, null, null, 2).", ""},
		{`INSERT INTO zz (a) VALUES (0)`, "23514", `new row for relation "zz" violates check constraint "zz_a_check"`,
			"Failing row contains (3, 0, null, x, 3).", ""},
		{`INSERT INTO zz (a, b) VALUES (5, 7)`, "23505", `duplicate key value violates unique constraint "zz_b_key"`,
			"Key (b)=(7) already exists.", ""},
		{`INSERT INTO zz (a, d) VALUES (5, 1)`, "428C9", `cannot insert a non-DEFAULT value into column "d"`,
			`Column "d" is an identity column defined as GENERATED ALWAYS.`, "Use OVERRIDING SYSTEM VALUE to override."},
	} {
		_, err := QueryText(ctx, conn, c.sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			t.Fatalf("%s: want an error, got %v", c.sql, err)
		}
		if pe.Code != c.code || pe.Message != c.msg || pe.Detail != c.detail || pe.Hint != c.hint {
			t.Errorf("%s:\n got %s %q detail %q hint %q\nwant %s %q detail %q hint %q", c.sql,
				pe.Code, pe.Message, pe.Detail, pe.Hint, c.code, c.msg, c.detail, c.hint)
		}
	}
	ExecAll(t, conn, `CREATE INDEX zz_c_idx ON zz (c)`)
	select {
	case n := <-notices:
		if n != `00000 index "zz_c_idx" is recorded but not built: Sluice reads by primary key or scans, so it does not need it` {
			t.Errorf("CREATE INDEX notice: %s", n)
		}
	case <-time.After(10 * time.Second):
		t.Error("CREATE INDEX sent no NOTICE")
	}
}
