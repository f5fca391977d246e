package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// uuidPgx runs the pgx half of TestUUIDClients against conn and returns
// what it saw, one line per check.
func uuidPgx(t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out []string
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := conn.Exec(ctx, "CREATE TABLE types17_pgx (id uuid PRIMARY KEY, n int)")
	must(err)
	a := pgtype.UUID{Bytes: [16]byte{0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11}, Valid: true}
	// pgx sends a uuid parameter in binary (16 bytes).
	_, err = conn.Exec(ctx, "INSERT INTO types17_pgx VALUES ($1, 1)", a)
	must(err)
	// Binary COPY FROM (pgx's CopyFrom).
	n, err := conn.CopyFrom(ctx, pgx.Identifier{"types17_pgx"}, []string{"id", "n"}, pgx.CopyFromRows([][]any{
		{[16]byte{0: 0x10, 15: 0x01}, int32(2)},
		{[16]byte{0: 0xff}, int32(3)},
	}))
	must(err)
	out = append(out, "copy binary rows "+itoa(n))
	// Text and CSV COPY FROM, in the input forms uuid_in accepts.
	for _, c := range []struct{ opts, data string }{
		{"", "{C0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}\t4\nc0eebc999c0b4ef8bb6d6bb9bd380a12\t5\n"},
		{"(FORMAT CSV)", "\"d0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\",6\n"},
	} {
		tag, err := conn.PgConn().CopyFrom(ctx, strings.NewReader(c.data), "COPY types17_pgx FROM STDIN "+c.opts)
		must(err)
		out = append(out, "copy "+c.opts+" "+tag.String())
	}
	_, err = conn.PgConn().CopyFrom(ctx, strings.NewReader("nope\t7\n"), "COPY types17_pgx FROM STDIN")
	out = append(out, "copy bad input "+PgCode(err))
	// Results in binary (pgx asks for binary for uuid): scanned into [16]byte.
	rows, err := conn.Query(ctx, "SELECT id, n FROM types17_pgx ORDER BY id")
	must(err)
	for rows.Next() {
		var id pgtype.UUID
		var k int32
		must(rows.Scan(&id, &k))
		v, _ := id.Value()
		out = append(out, "binary row "+v.(string)+" "+itoa(int64(k)))
	}
	must(rows.Err())
	var k int32
	must(conn.QueryRow(ctx, "SELECT n FROM types17_pgx WHERE id = $1", [16]byte{0: 0xff}).Scan(&k))
	out = append(out, "lookup by binary parameter "+itoa(int64(k)))
	var typ string
	must(conn.QueryRow(ctx, "SELECT pg_typeof(id)::text FROM types17_pgx LIMIT 1").Scan(&typ))
	out = append(out, "pg_typeof "+typ)
	// A record holding a uuid, in binary (record_send: field oids and values).
	var rec any
	must(conn.QueryRow(ctx, "SELECT ROW(1, 'x'::text, NULL::int, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid)").Scan(&rec))
	out = append(out, fmt.Sprintf("binary record %v", rec))
	// COPY TO in text.
	var sb strings.Builder
	_, err = conn.PgConn().CopyTo(ctx, &sb, "COPY (SELECT id FROM types17_pgx WHERE n < 3 ORDER BY id) TO STDOUT")
	must(err)
	out = append(out, "copy out "+strings.ReplaceAll(sb.String(), "\n", "|"))
	return out
}

// TestUUIDClients: uuid values through pgx (binary parameters and results,
// binary/text/CSV COPY), psycopg 3 (uuid.UUID both ways, binary cursors,
// binary COPY in and out, TypeInfo), psycopg2 (register_uuid) and
// SQLAlchemy (reflection as UUID, uuid.UUID values), against
// Sluice and against the machine's PostgreSQL: the outputs must be equal.
func TestUUIDClients(t *testing.T) {
	if _, err := exec.LookPath(debianPython); err != nil {
		t.Fatalf("%s is missing: %v", debianPython, err)
	}
	srv := StartServer(t, Options{})
	pgURL := FreshPostgresDB(t, "types17_uuid")
	run := func(url string) []string {
		conn := MustConnect(t, url)
		defer conn.Close(context.Background())
		out := uuidPgx(t, conn)
		script := filepath.Join(clientDir(t), "uuid_roundtrip.py")
		py, err := exec.Command(debianPython, script, url, "types17_py").CombinedOutput()
		if err != nil {
			t.Fatalf("uuid_roundtrip.py against %s: %v\n%s", url, err, py)
		}
		return append(out, strings.Split(strings.TrimSpace(string(py)), "\n")...)
	}
	got := run(srv.ConnString())
	want := run(pgURL)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("Sluice:\n%s\nPostgreSQL:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, must := range []string{
		"binary row a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11 1",
		"copy bad input 22P02",
		"psycopg2 UUID a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
		"psycopg3 typeinfo 2950 2951",
		"sqlalchemy [('id', 'UUID()'), ('n', 'INTEGER()')]",
	} {
		if !strings.Contains(strings.Join(got, "\n"), must) {
			t.Errorf("missing %q in:\n%s", must, strings.Join(got, "\n"))
		}
	}
	t.Logf("\n%s", strings.Join(got, "\n"))
}

// TestUUIDSourceSink: a JSON file source decodes uuid columns from JSON
// strings in every input form; a view groups by them; a Postgres sink
// creates its table with a uuid column and writes the values, and a JSON
// file sink writes them as strings.
func TestUUIDSourceSink(t *testing.T) {
	root := t.TempDir()
	in, out := filepath.Join(root, "in"), filepath.Join(root, "out")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	lines := `{"id":"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11","n":1}
{"id":"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}","n":2}
{"id":"b0eebc999c0b4ef8bb6d6bb9bd380a11","n":3}
{"id":null,"n":4}
`
	if err := os.WriteFile(filepath.Join(in, "a.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	pgURL := FreshPostgresDB(t, "types17_uuid_sink")
	srv := StartServer(t, Options{ExtraArgs: []string{"--file-root", root}})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE SOURCE types17_src (id UUID, n INT) WITH (connector = 'file', path = 'in', pattern = '*.jsonl', poll.interval.ms = '50') FORMAT PLAIN ENCODE JSON`,
		`CREATE MATERIALIZED VIEW types17_by_id AS SELECT id, count(*) AS c, sum(n) AS s FROM types17_src WHERE id IS NOT NULL GROUP BY id`,
		`CREATE SINK types17_pg FROM types17_by_id WITH (connector = 'postgres', url = '`+pgURL+`', table = 'types17_out', primary_key = 'id')`,
		`CREATE SINK types17_file FROM types17_src WITH (connector = 'file', path = 'out') FORMAT PLAIN ENCODE JSON`,
	)
	want := "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11 uuid 2 3|b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11 uuid 1 3"
	pg := MustConnect(t, pgURL)
	defer pg.Close(context.Background())
	var got string
	for deadline := time.Now().Add(30 * time.Second); ; {
		res, err := QueryText(context.Background(), pg, "SELECT id, pg_typeof(id), c, s FROM types17_out ORDER BY id")
		if err == nil {
			if got = strings.Join(res.Lines(), "|"); got == want {
				break
			}
		} else {
			got = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("PostgreSQL sink table: %s, want %s", got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		var all strings.Builder
		files, _ := filepath.Glob(filepath.Join(out, "*"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			all.Write(b)
		}
		s := all.String()
		if strings.Count(s, `"id":"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"`) == 2 &&
			strings.Count(s, `"id":"b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"`) == 1 && strings.Count(s, `"id":null`) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("JSON file sink wrote:\n%s", s)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
