package tests

// The Go clients of the matrix: lib/pq and pgx. The common session runs
// through database/sql over each driver (lib/pq: text results, parameters
// as text; pgx's stdlib: the extended protocol with binary results); pgx
// also runs natively (binary parameters and results into pgx's types,
// batches, CopyFrom).

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/lib/pq"
)

var libpqCase = clientCase{
	name:    "libpq",
	steps:   withSteps("binary_parameters"),
	pending: map[string]string{},
	run: func(t *testing.T, tg clientTarget) []stepResult {
		db := openSQL(t, "postgres", tg.url())
		r := &stepRunner{}
		sqlSession(t, r, tg, db, "libpq")
		r.step("binary_parameters", func() error { return libpqBinaryParameters(tg) })
		return r.results
	},
}

var pgxCase = clientCase{
	name:    "pgx",
	steps:   withSteps("native_types", "batch", "copy_from"),
	pending: map[string]string{},
	run: func(t *testing.T, tg clientTarget) []stepResult {
		db := openSQL(t, "pgx", tg.url())
		r := &stepRunner{}
		sqlSession(t, r, tg, db, "pgx")
		conn := MustConnect(t, tg.url())
		r.step("native_types", func() error { return pgxNativeTypes(tg, conn) })
		r.step("batch", func() error { return pgxBatch(tg, conn) })
		r.step("copy_from", func() error { return pgxCopyFrom(tg, conn) })
		return r.results
	},
}

// TestClientLibPQ runs the session through lib/pq.
func TestClientLibPQ(t *testing.T) { runClientCase(t, libpqCase) }

// TestClientPgx runs the session through pgx (database/sql, then native).
func TestClientPgx(t *testing.T) { runClientCase(t, pgxCase) }

var _ = stdlib.GetDefaultDriver // registers the "pgx" database/sql driver

func openSQL(t *testing.T, driver, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// sqlState returns the SQLSTATE of an error from either driver.
func sqlState(err error) string {
	var pqErr *pq.Error
	if errors.As(err, &pqErr) {
		return string(pqErr.Code)
	}
	return PgCode(err)
}

func expectState(err error, code, what string) error {
	if err == nil {
		return fmt.Errorf("%s: no error, want SQLSTATE %s", what, code)
	}
	if got := sqlState(err); got != code {
		return fmt.Errorf("%s: got %s (%v), want SQLSTATE %s", what, got, err, code)
	}
	return nil
}

func expectEq(got, want any, what string) error {
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("%s: got %#v, want %#v", what, got, want)
	}
	return nil
}

// sqlRows runs a query and returns its rows with every value rendered by
// goValueText.
func sqlRows(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) ([][]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out [][]string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]string, len(cols))
		for i, v := range vals {
			row[i] = goValueText(v)
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

// goValueText renders a database/sql value: the drivers differ in the Go
// types they return (lib/pq: []byte for numeric, time.Time for time), not
// in the values.
func goValueText(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return string(v)
	case time.Time:
		return v.UTC().Format("2006-01-02 15:04:05.999999")
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}

// sqlSession runs the common steps over database/sql.
func sqlSession(t *testing.T, r *stepRunner, tg clientTarget, db *sql.DB, driver string) {
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	t.Cleanup(cancel)
	conn, err := db.Conn(ctx) // one session: read_your_writes needs it
	if err != nil {
		t.Fatalf("%s: connecting: %v", driver, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	exec := func(query string, args ...any) (int64, error) {
		res, err := conn.ExecContext(ctx, query, args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	sync := func() error {
		if tg.sluice() { // Sluice: make acknowledged writes visible
			_, err := exec("FLUSH")
			return err
		}
		return nil
	}
	expectRows := func(want [][]string, what, query string, args ...any) error {
		got, err := sqlRows(ctx, conn, query, args...)
		if err != nil {
			return err
		}
		return expectEq(got, want, what)
	}

	r.step("ddl", func() error {
		view := "VIEW" // Sluice's views are materialized (streaming)
		if tg.sluice() {
			view = "MATERIALIZED VIEW"
		}
		for _, stmt := range []string{
			"CREATE TABLE items (id bigint PRIMARY KEY, name text NOT NULL, qty int, price numeric(10,2))",
			"CREATE TABLE notes (id int PRIMARY KEY, body text)",
			"CREATE TABLE types (id int PRIMARY KEY, b boolean, i2 smallint, i4 integer, i8 bigint," +
				" f4 real, f8 double precision, n numeric, t text, vc varchar(20), bt bytea, d date," +
				" tm time, ts timestamp, tz timestamptz, iv interval, j jsonb, ta text[])",
			"CREATE " + view + " items_summary AS SELECT count(*) AS n, sum(qty) AS total_qty FROM items",
		} {
			if _, err := exec(stmt); err != nil {
				return err
			}
		}
		return nil
	})

	r.step("dml", func() error {
		for _, it := range []struct {
			id         int64
			name       string
			qty        int32
			priceCents string
		}{{1, "apple", 10, "1.25"}, {2, "pear", 20, "2.50"}, {3, "fig", 30, "3.75"}} {
			if _, err := exec("INSERT INTO items (id, name, qty, price) VALUES ($1, $2, $3, $4)", it.id, it.name, it.qty, it.priceCents); err != nil {
				return err
			}
		}
		if n, err := exec("UPDATE items SET qty = qty + $1 WHERE id = $2", 5, int64(2)); err != nil || n != 1 {
			return fmt.Errorf("UPDATE: %d rows, %v", n, err)
		}
		if n, err := exec("DELETE FROM items WHERE id = $1", int64(3)); err != nil || n != 1 {
			return fmt.Errorf("DELETE: %d rows, %v", n, err)
		}
		if err := sync(); err != nil {
			return err
		}
		return expectRows([][]string{{"1", "apple", "10", "1.25"}, {"2", "pear", "25", "2.50"}}, "items",
			"SELECT id, name, qty, price FROM items WHERE id >= $1 ORDER BY id", int64(1))
	})

	r.step("read_your_writes", func() error {
		if _, err := exec("INSERT INTO notes VALUES ($1, $2)", 1, "first"); err != nil {
			return err
		}
		return expectRows([][]string{{"first"}}, "the row just inserted, without FLUSH", "SELECT body FROM notes WHERE id = $1", 1)
	})

	r.step("commit", func() error {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // a no-op after Commit
		for _, id := range []int64{4, 5} {
			if _, err := tx.ExecContext(ctx, "INSERT INTO items VALUES ($1, $2, $3, $4)", id, []string{"", "", "", "", "plum", "lime"}[id], int32(id*10), fmt.Sprintf("%d.00", id)); err != nil {
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		if err := sync(); err != nil {
			return err
		}
		return expectRows([][]string{{"1"}, {"2"}, {"4"}, {"5"}}, "ids after COMMIT", "SELECT id FROM items ORDER BY id")
	})

	r.step("view", func() error {
		if err := sync(); err != nil {
			return err
		}
		return expectRows([][]string{{"4", "125"}}, "items_summary", "SELECT n, total_qty FROM items_summary")
	})

	r.step("rollback", func() error {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO items VALUES ($1, $2, $3, $4)", int64(6), "date", 60, "6.00"); err != nil {
			_ = tx.Rollback()
			return err
		}
		if _, err := tx.ExecContext(ctx, "UPDATE items SET qty = 0 WHERE id = $1", int64(1)); err != nil {
			_ = tx.Rollback()
			return err
		}
		if err := tx.Rollback(); err != nil {
			return err
		}
		if err := sync(); err != nil {
			return err
		}
		return expectRows([][]string{{"1", "10"}, {"2", "25"}, {"4", "40"}, {"5", "50"}}, "items after ROLLBACK",
			"SELECT id, qty FROM items ORDER BY id")
	})

	r.step("types", func() error {
		for id, row := range goTypeRows() {
			args := append([]any{id + 1}, row...)
			if _, err := exec("INSERT INTO types (id, "+strings.Join(typeColumns, ", ")+") VALUES ("+placeholders(len(args))+")", args...); err != nil {
				return fmt.Errorf("row %d: %w", id+1, err)
			}
		}
		if err := sync(); err != nil {
			return err
		}
		got, err := sqlRows(ctx, conn, "SELECT id, "+strings.Join(typeColumns, ", ")+" FROM types WHERE id < 10 ORDER BY id")
		if err != nil {
			return err
		}
		want := goTypeTexts(driver)
		if len(got) != len(want) {
			return fmt.Errorf("types: %d rows, want %d", len(got), len(want))
		}
		for i := range want {
			for c := range want[i] {
				name := "id"
				if c > 0 {
					name = typeColumns[c-1]
				}
				if name == "j" && got[i][c] != "NULL" && jsonEqual(got[i][c], want[i][c]) {
					continue // the text form is the jsonb step's
				}
				if got[i][c] != want[i][c] {
					return fmt.Errorf("row %d column %s: got %q, want %q", i+1, name, got[i][c], want[i][c])
				}
			}
		}
		for _, n := range [][2]string{{"1E+20", "100000000000000000000"}, {"-0.000001", "-0.000001"}, {"0.00", "0.00"}, {"-1.5E-10", "-0.00000000015"}} {
			if err := expectRows([][]string{{n[1]}}, "numeric "+n[0], "SELECT $1::numeric::text", n[0]); err != nil {
				return err
			}
		}
		return expectRows([][]string{{"1 year 2 mons 3 days 04:05:06.789"}}, "interval with months",
			"SELECT $1::interval::text", "1 year 2 mons 3 days 04:05:06.789")
	})

	r.step("jsonb", func() error {
		return expectRows([][]string{{`{"a": 1, "b": [true, null, "x"], "c": {"d": "é"}}`, "é", "true", "array"}}, "jsonb",
			`SELECT j::text, j->'c'->>'d', j @> '{"a": 1}', jsonb_typeof(j->'b') FROM types WHERE id = 1`)
	})

	r.step("errors", func() error {
		for _, e := range clientErrors {
			// lib/pq sends a statement without arguments as a simple
			// query; pgx's stdlib always prepares it.
			if _, err := exec(e[0]); expectState(err, e[1], e[0]) != nil {
				return expectState(err, e[1], e[0])
			}
		}
		return expectRows([][]string{{"1"}}, "the session after errors", "SELECT 1")
	})

	r.step("failed_tx", func() error {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck
		_, err = tx.ExecContext(ctx, "SELECT * FROM no_such_table")
		if err := expectState(err, "42P01", "error in a block"); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "SELECT 1")
		if err := expectState(err, "25P02", "statement after the error"); err != nil {
			return err
		}
		if err := tx.Rollback(); err != nil {
			return err
		}
		return expectRows([][]string{{"1"}}, "after ROLLBACK", "SELECT 1")
	})
}

// clientErrors are the errors the errors step provokes, with their SQLSTATEs.
var clientErrors = [][2]string{
	{"SELECT * FROM no_such_table", "42P01"},
	{"SELECT no_such_column FROM items", "42703"},
	{"INSERT INTO items (id, name) VALUES (1, 'again')", "23505"},
	{"SELEC 1", "42601"},
	{"SELECT qty / 0 FROM items WHERE id = 1", "22012"},
}

var typeColumns = []string{"b", "i2", "i4", "i8", "f4", "f8", "n", "t", "vc", "bt", "d", "tm", "ts", "tz", "iv", "j", "ta"}

const typesText = "héllo wörld ☃ 𝄞 \t'q' \"dq\" \\ back"

func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// goTypeRows are the parameters of the types rows 1–3 (3 is all NULL).
func goTypeRows() [][]any {
	plus2 := time.FixedZone("+02", 2*3600)
	return [][]any{
		{true, int16(-32768), int32(-2147483648), int64(math.MinInt64), float32(1.5), -2.25e10, "-123.4500", typesText,
			"varchar", allBytes(), time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), "13:14:15.123456",
			time.Date(2024, 3, 5, 10, 20, 30, 123456000, time.UTC), time.Date(2024, 3, 5, 10, 20, 30, 123456000, plus2),
			"3 days 04:05:06.789", `{"a": 1, "b": [true, null, "x"], "c": {"d": "é"}}`, `{a,"b c",NULL,"é\"\\"}`},
		{false, int16(32767), int32(2147483647), int64(math.MaxInt64), float32(0.1), 1e300,
			"12345678901234567890123456789.123456789012345678", "", "", []byte{}, time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC),
			"00:00:00", time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
			"-00:00:01", `[1, "two", {"three": 3.5}]`, `{}`},
		make([]any, len(typeColumns)),
	}
}

// goTypeTexts are the rows of the types table as goValueText renders what
// each driver returns.
func goTypeTexts(driver string) [][]string {
	f4, tm1, tm2 := "0.1", "0000-01-01 13:14:15.123456", "0000-01-01 00:00:00"
	if driver == "pgx" {
		// pgx decodes float4 in binary (the float32 widened) and returns
		// time as text.
		f4 = strconv.FormatFloat(float64(float32(0.1)), 'g', -1, 64)
		tm1, tm2 = "13:14:15.123456", "00:00:00"
	}
	null := make([]string, len(typeColumns)+1)
	for i := range null {
		null[i] = "NULL"
	}
	null[0] = "3"
	return [][]string{
		{"1", "true", "-32768", "-2147483648", "-9223372036854775808", "1.5", "-2.25e+10", "-123.4500", typesText,
			"varchar", string(allBytes()), "2024-02-29 00:00:00", tm1, "2024-03-05 10:20:30.123456", "2024-03-05 08:20:30.123456",
			"3 days 04:05:06.789", `{"a": 1, "b": [true, null, "x"], "c": {"d": "é"}}`, `{a,"b c",NULL,"é\"\\"}`},
		{"2", "false", "32767", "2147483647", "9223372036854775807", f4, "1e+300",
			"12345678901234567890123456789.123456789012345678", "", "", "", "1999-12-31 00:00:00", tm2,
			"1970-01-01 00:00:00", "2000-01-01 00:00:00", "-00:00:01", `[1, "two", {"three": 3.5}]`, "{}"},
		null,
	}
}

func placeholders(n int) string {
	p := make([]string, n)
	for i := range p {
		p[i] = "$" + strconv.Itoa(i+1)
	}
	return strings.Join(p, ", ")
}

// libpqBinaryParameters sends a bytea parameter in binary
// (binary_parameters=yes) and reads it back.
func libpqBinaryParameters(tg clientTarget) error {
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	db, err := sql.Open("postgres", tg.url()+"&binary_parameters=yes")
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "INSERT INTO types (id, bt, t) VALUES ($1, $2, $3)", 50, allBytes(), []byte("bytes as text")); err != nil {
		return err
	}
	if tg.sluice() {
		if _, err := conn.ExecContext(ctx, "FLUSH"); err != nil {
			return err
		}
	}
	var bt []byte
	var txt string
	if err := conn.QueryRowContext(ctx, "SELECT bt, t FROM types WHERE id = $1", 50).Scan(&bt, &txt); err != nil {
		return err
	}
	if hex.EncodeToString(bt) != hex.EncodeToString(allBytes()) || txt != "bytes as text" {
		return fmt.Errorf("got %x, %q", bt, txt)
	}
	return nil
}

// pgxNativeTypes reads the types rows with pgx's binary formats into its
// own types, and writes them back with binary parameters.
func pgxNativeTypes(tg clientTarget, conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	type typesRow struct {
		b       *bool
		i2      *int16
		i4      *int32
		i8      *int64
		f4      *float32
		f8      *float64
		n       pgtype.Numeric
		t, vc   *string
		bt      []byte
		d       pgtype.Date
		tm      pgtype.Time
		tz      pgtype.Timestamptz
		tsNaive pgtype.Timestamp
		iv      pgtype.Interval
		j       map[string]any
		ta      []*string
	}
	a, bc, esc := "a", "b c", "é\"\\"
	wantTA := []*string{&a, &bc, nil, &esc}
	// Write row 1 again as row 21, from pgx's own types, in binary.
	_, err := conn.Exec(ctx, "INSERT INTO types (id, "+strings.Join(typeColumns, ", ")+") VALUES ("+placeholders(18)+")",
		int32(21), true, int16(-32768), int32(-2147483648), int64(math.MinInt64), float32(1.5), -2.25e10,
		pgtype.Numeric{Int: bigInt("-1234500"), Exp: -4, Valid: true}, typesText, "varchar", allBytes(),
		pgtype.Date{Time: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), Valid: true},
		pgtype.Time{Microseconds: (13*3600+14*60+15)*1_000_000 + 123456, Valid: true},
		pgtype.Timestamp{Time: time.Date(2024, 3, 5, 10, 20, 30, 123456000, time.UTC), Valid: true},
		time.Date(2024, 3, 5, 8, 20, 30, 123456000, time.UTC),
		pgtype.Interval{Days: 3, Microseconds: (4*3600+5*60+6)*1_000_000 + 789000, Valid: true},
		map[string]any{"a": 1, "b": []any{true, nil, "x"}, "c": map[string]any{"d": "é"}}, wantTA)
	if err != nil {
		return err
	}
	if tg.sluice() {
		if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
			return err
		}
	}
	for _, id := range []int32{1, 21} {
		var r typesRow
		err := conn.QueryRow(ctx, "SELECT "+strings.Join(typeColumns, ", ")+" FROM types WHERE id = $1", id).Scan(
			&r.b, &r.i2, &r.i4, &r.i8, &r.f4, &r.f8, &r.n, &r.t, &r.vc, &r.bt, &r.d, &r.tm, &r.tsNaive, &r.tz, &r.iv, &r.j, &r.ta)
		if err != nil {
			return fmt.Errorf("row %d: %w", id, err)
		}
		nv, _ := r.n.Value()
		checks := []struct {
			name string
			ok   bool
			got  any
		}{
			{"b", r.b != nil && *r.b, r.b},
			{"i2", r.i2 != nil && *r.i2 == -32768, r.i2},
			{"i4", r.i4 != nil && *r.i4 == -2147483648, r.i4},
			{"i8", r.i8 != nil && *r.i8 == math.MinInt64, r.i8},
			{"f4", r.f4 != nil && *r.f4 == 1.5, r.f4},
			{"f8", r.f8 != nil && *r.f8 == -2.25e10, r.f8},
			{"n", nv == "-123.4500", nv},
			{"t", r.t != nil && *r.t == typesText, r.t},
			{"vc", r.vc != nil && *r.vc == "varchar", r.vc},
			{"bt", reflect.DeepEqual(r.bt, allBytes()), r.bt},
			{"d", r.d.Valid && r.d.Time.Equal(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)), r.d},
			{"tm", r.tm == pgtype.Time{Microseconds: (13*3600+14*60+15)*1_000_000 + 123456, Valid: true}, r.tm},
			{"ts", r.tsNaive.Valid && r.tsNaive.Time.Equal(time.Date(2024, 3, 5, 10, 20, 30, 123456000, time.UTC)), r.tsNaive},
			{"tz", r.tz.Valid && r.tz.Time.Equal(time.Date(2024, 3, 5, 8, 20, 30, 123456000, time.UTC)), r.tz},
			{"iv", r.iv == pgtype.Interval{Days: 3, Microseconds: (4*3600+5*60+6)*1_000_000 + 789000, Valid: true}, r.iv},
			{"j", fmt.Sprint(r.j) == "map[a:1 b:[true <nil> x] c:map[d:é]]", r.j},
			{"ta", reflect.DeepEqual(r.ta, wantTA), r.ta},
		}
		for _, c := range checks {
			if !c.ok {
				return fmt.Errorf("row %d column %s: got %v", id, c.name, describeValue(c.got))
			}
		}
	}
	return nil
}

func describeValue(v any) string {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Pointer && !rv.IsNil() {
		return fmt.Sprintf("%#v", rv.Elem().Interface())
	}
	if s, ok := v.([]*string); ok {
		out := make([]string, len(s))
		for i, p := range s {
			if p == nil {
				out[i] = "NULL"
			} else {
				out[i] = strconv.Quote(*p)
			}
		}
		return "[" + strings.Join(out, " ") + "]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return string(b)
}

// pgxBatch sends several statements in one round trip (pgx pipelines a
// batch: Parse/Bind/Execute for each, one Sync).
func pgxBatch(tg clientTarget, conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	b := &pgx.Batch{}
	b.Queue("INSERT INTO notes VALUES ($1, $2)", 60, "b1")
	b.Queue("INSERT INTO notes VALUES ($1, $2)", 61, "b2")
	b.Queue("SELECT $1::int + 1", 41)
	res := conn.SendBatch(ctx, b)
	for i := 0; i < 2; i++ {
		tag, err := res.Exec()
		if err != nil {
			return err
		}
		if tag.String() != "INSERT 0 1" {
			return fmt.Errorf("batch INSERT: tag %q", tag)
		}
	}
	var n int32
	if err := res.QueryRow().Scan(&n); err != nil || n != 42 {
		return fmt.Errorf("batch SELECT: %d, %v", n, err)
	}
	if err := res.Close(); err != nil {
		return err
	}
	if tg.sluice() {
		if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
			return err
		}
	}
	rows, err := conn.Query(ctx, "SELECT id, body FROM notes WHERE id BETWEEN 60 AND 69 ORDER BY id")
	if err != nil {
		return err
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var id int32
		var body string
		err := r.Scan(&id, &body)
		return fmt.Sprintf("%d %s", id, body), err
	})
	if err != nil {
		return err
	}
	return expectEq(got, []string{"60 b1", "61 b2"}, "rows written by the batch")
}

// pgxCopyFrom loads rows with CopyFrom (COPY FROM STDIN, binary format).
func pgxCopyFrom(tg clientTarget, conn *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"notes"}, []string{"id", "body"},
		pgx.CopyFromRows([][]any{{int32(70), "c1"}, {int32(71), nil}, {int32(72), "tab\there"}}))
	if err != nil {
		return err
	}
	if n != 3 {
		return fmt.Errorf("CopyFrom: %d rows, want 3", n)
	}
	if tg.sluice() {
		if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
			return err
		}
	}
	res, err := QueryText(ctx, conn, "SELECT id, body FROM notes WHERE id BETWEEN 70 AND 79 ORDER BY id")
	if err != nil {
		return err
	}
	return expectEq(res.Lines(), []string{"70 c1", "71 NULL", "72 tab\there"}, "rows loaded by CopyFrom")
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(a, b string) bool {
	var va, vb any
	return json.Unmarshal([]byte(a), &va) == nil && json.Unmarshal([]byte(b), &vb) == nil && reflect.DeepEqual(va, vb)
}

func bigInt(s string) *big.Int {
	n, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic("bad integer " + s)
	}
	return n
}
