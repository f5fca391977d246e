package tests

// COPY through the clients people use (issue 14, acceptance 3): psql's
// \copy both ways with a real file, psycopg2's copy_expert and psycopg 3's
// cursor.copy in text and binary, each run as the real program against a
// real server.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestCopyPsql(t *testing.T) {
	psql, err := exec.LookPath("psql")
	if err != nil {
		t.Fatalf("psql is not installed (apt-get install postgresql-client): %v", err)
	}
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn, "CREATE TABLE ps (id BIGINT PRIMARY KEY, name TEXT, amount NUMERIC(10,2), ts TIMESTAMP)")
	dir := t.TempDir()
	in := filepath.Join(dir, "in.csv")
	data := "id,name,amount,ts\n1,ann,10.50,2024-01-02 03:04:05\n2,\"bob, jr\",,2024-01-03 00:00:00\n3,\"say \"\"hi\"\"\",-7,\n"
	if err := os.WriteFile(in, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.txt")
	outCSV := filepath.Join(dir, "out.csv")
	run := func(cmds ...string) string {
		t.Helper()
		args := []string{"-X", "-v", "ON_ERROR_STOP=1", "-h", srv.Host(), "-p", srv.Port(), "-U", "sluice", "sluice"}
		for _, c := range cmds {
			args = append(args, "-c", c)
		}
		b, err := exec.Command(psql, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("psql %q: %v\n%s", cmds, err, b)
		}
		return string(b)
	}
	got := run(`\copy ps from '`+in+`' csv header`, "FLUSH",
		`\copy (select id, name, amount from ps where id >= 2 order by id) to '`+out+`'`,
		`\copy ps to '`+outCSV+`' with (format csv, header)`)
	if !strings.Contains(got, "COPY 3") {
		t.Errorf("psql output %q: want COPY 3", got)
	}
	b, _ := os.ReadFile(out)
	if want := "2\tbob, jr\t\\N\n3\tsay \"hi\"\t-7.00\n"; string(b) != want {
		t.Errorf(`\copy (select ...) to file wrote %q, want %q`, b, want)
	}
	b, _ = os.ReadFile(outCSV)
	if want := "id,name,amount,ts\n1,ann,10.50,2024-01-02 03:04:05\n2,\"bob, jr\",,2024-01-03 00:00:00\n3,\"say \"\"hi\"\"\",-7.00,\n"; string(b) != want {
		t.Errorf(`\copy ps to file wrote %q, want %q`, b, want)
	}
	// A bad line fails the whole \copy with its line number; nothing loads.
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("id,name,amount,ts\n10,x,1,\n11,y,notanumber,\n"), 0o644)
	cmd := exec.Command(psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", srv.Host(), "-p", srv.Port(), "-U", "sluice", "sluice",
		"-c", `\copy ps from '`+bad+`' csv header`)
	b, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), `invalid input syntax for type numeric: "notanumber"`) ||
		!strings.Contains(string(b), `CONTEXT:  COPY ps, line 3, column amount: "notanumber"`) {
		t.Errorf("bad \\copy: %v\n%s", err, b)
	}
	ExecAll(t, conn, "FLUSH")
	if n := countRows(t, conn, "ps"); n != 3 {
		t.Errorf("after the failed \\copy: %d rows, want 3", n)
	}
}

// copyPython is run by /usr/bin/python3 with the connection string as its
// argument; it prints what the drivers report and read.
const copyPython = `
import io, sys
try:
    import psycopg2
    import psycopg
except ImportError as e:
    print("MISSING PYTHON MODULE:", e)
    sys.exit(3)

dsn = sys.argv[1]

# psycopg2: copy_expert in a transaction, committed, both ways.
c2 = psycopg2.connect(dsn)
cur = c2.cursor()
cur.copy_expert("COPY py (id, v, n) FROM STDIN WITH (FORMAT csv, HEADER)", io.StringIO("id,v,n\n1,one,1.5\n2,,\n3,\"a,b\",-2\n"))
print("psycopg2 copy_expert from:", cur.rowcount)
c2.commit()
c2.autocommit = True
cur.execute("FLUSH")
buf = io.StringIO()
cur.copy_expert("COPY (SELECT id, v, n FROM py ORDER BY id) TO STDOUT WITH CSV HEADER", buf)
print("psycopg2 copy_expert to:", repr(buf.getvalue()))
try:
    cur.copy_expert("COPY py FROM STDIN", io.StringIO("4\tx\t1\n5\ty\tz\n"))
except psycopg2.Error as e:
    print("psycopg2 bad row:", e.pgcode, e.diag.message_primary, "|", e.diag.context.strip())
c2.close()

# psycopg 3: cursor.copy, text and binary, rows written and read.
with psycopg.connect(dsn, autocommit=True) as c3:
    with c3.cursor() as cur:
        with cur.copy("COPY py (id, v, n) FROM STDIN") as cp:
            cp.write_row((10, "tab\tand\nnewline \\ é", 1.25))
            cp.write_row((11, None, None))
        print("psycopg3 text copy:", cur.rowcount)
        with cur.copy("COPY py (id, v, n) FROM STDIN (FORMAT BINARY)") as cp:
            cp.set_types(["int8", "text", "numeric"])
            cp.write_row((12, "binary", 3))
            cp.write_row((13, "", None))
        print("psycopg3 binary copy:", cur.rowcount)
        cur.execute("FLUSH")
        with cur.copy("COPY (SELECT id, v, n FROM py WHERE id >= 10 ORDER BY id) TO STDOUT") as cp:
            print("psycopg3 text rows:", list(cp.rows()))
        with cur.copy("COPY (SELECT id, v, n FROM py WHERE id >= 10 ORDER BY id) TO STDOUT (FORMAT BINARY)") as cp:
            cp.set_types(["int8", "text", "numeric"])
            print("psycopg3 binary rows:", list(cp.rows()))
        try:
            with cur.copy("COPY py (id, v) FROM STDIN") as cp:
                cp.write_row((20, "a"))
                raise RuntimeError("client side failure")
        except psycopg.errors.QueryCanceled as e:
            print("psycopg3 CopyFail:", e.sqlstate, e)
        cur.execute("FLUSH")
        cur.execute("SELECT count(*) FROM py")
        print("rows after a failed copy:", cur.fetchone()[0])
`

func TestCopyPython(t *testing.T) {
	const py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("%s is missing (apt-get install python3 python3-psycopg2 python3-psycopg): %v", py, err)
	}
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn, "CREATE TABLE py (id BIGINT PRIMARY KEY, v TEXT, n NUMERIC)")
	script := filepath.Join(t.TempDir(), "copy_drivers.py")
	if err := os.WriteFile(script, []byte(copyPython), 0o644); err != nil {
		t.Fatal(err)
	}
	dsn := "host=" + srv.Host() + " port=" + srv.Port() + " user=sluice dbname=sluice"
	b, err := exec.Command(py, script, dsn).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, b)
	}
	want := `psycopg2 copy_expert from: 3
psycopg2 copy_expert to: 'id,v,n\n1,one,1.5\n2,,\n3,"a,b",-2\n'
psycopg2 bad row: 22P02 invalid input syntax for type numeric: "z" | COPY py, line 2, column n: "z"
psycopg3 text copy: 2
psycopg3 binary copy: 2
psycopg3 text rows: [('10', 'tab\tand\nnewline \\ é', '1.25'), ('11', None, None), ('12', 'binary', '3'), ('13', '', None)]
psycopg3 binary rows: [(10, 'tab\tand\nnewline \\ é', Decimal('1.25')), (11, None, None), (12, 'binary', Decimal('3')), (13, '', None)]
psycopg3 CopyFail: 57014 COPY from stdin failed: error from Python: RuntimeError - client side failure
rows after a failed copy: 7
`
	if string(b) != want {
		t.Errorf("python output:\n%s\nwant:\n%s", b, want)
	}
}
