package tests

// COPY over the wire (issue 14, acceptance 3): pgx CopyFrom (binary) and
// PgConn CopyFrom/CopyTo with text and CSV, errors that name the line and
// load nothing, CopyFail, the exact bytes of COPY TO in every format
// compared with the machine's PostgreSQL and loaded back, the extended
// protocol's message flow compared with PostgreSQL's, and server files
// refused. psql's \copy and the Python drivers are in copy_clients_test.go.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
)

func copyCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pgErrOf returns err as a *pgconn.PgError, failing the test if it is not one.
func pgErrOf(t *testing.T, err error) *pgconn.PgError {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		t.Fatalf("want a PostgreSQL error, got %v", err)
	}
	return pe
}

func countRows(t *testing.T, conn *pgx.Conn, table string) int64 {
	t.Helper()
	var n int64
	if err := conn.QueryRow(copyCtx(t), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("count(*) of %s: %s", table, describeErr(err))
	}
	return n
}

func copyOut(t *testing.T, conn *pgx.Conn, sql string) string {
	t.Helper()
	var buf bytes.Buffer
	tag, err := conn.PgConn().CopyTo(copyCtx(t), &buf, sql)
	if err != nil {
		t.Fatalf("%s: %s", sql, describeErr(err))
	}
	if !strings.HasPrefix(tag.String(), "COPY ") {
		t.Fatalf("%s: tag %q", sql, tag)
	}
	return buf.String()
}

func copyIn(t *testing.T, conn *pgx.Conn, sql, data string) (pgconn.CommandTag, error) {
	t.Helper()
	return conn.PgConn().CopyFrom(copyCtx(t), strings.NewReader(data), sql)
}

func TestCopyPgx(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ctx := copyCtx(t)
	ExecAll(t, conn, `CREATE TABLE px (id BIGINT PRIMARY KEY, b BOOLEAN, i4 INT, f8 DOUBLE PRECISION,
		n NUMERIC(12,2), t TEXT, bt BYTEA, d DATE, ts TIMESTAMP, tz TIMESTAMPTZ, iv INTERVAL)`)

	t.Run("CopyFrom binary", func(t *testing.T) {
		ts := time.Date(2024, 3, 5, 10, 20, 30, 123456000, time.UTC)
		n := pgtype.Numeric{}
		_ = n.Scan("12345.67")
		rows := [][]any{
			{int64(1), true, int32(-7), 1.5, n, "tab\there \\ \"q\" é", []byte{0, 1, 0xff},
				pgtype.Date{Time: time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC), Valid: true},
				pgtype.Timestamp{Time: ts, Valid: true}, ts.Add(time.Hour),
				pgtype.Interval{Months: 14, Days: 3, Microseconds: 5_000_000, Valid: true}},
			{int64(2), nil, nil, nil, nil, nil, nil, nil, nil, nil, nil},
			{int64(3), false, int32(0), -0.25, nil, "", []byte{}, nil, nil, nil, nil},
		}
		cols := []string{"id", "b", "i4", "f8", "n", "t", "bt", "d", "ts", "tz", "iv"}
		got, err := conn.CopyFrom(ctx, pgx.Identifier{"px"}, cols, pgx.CopyFromRows(rows))
		if err != nil || got != 3 {
			t.Fatalf("CopyFrom: %d rows, %s", got, errText(err))
		}
		ExecAll(t, conn, "FLUSH")
		text := copyOut(t, conn, "COPY px TO STDOUT")
		want := "1\tt\t-7\t1.5\t12345.67\ttab\\there \\\\ \"q\" é\t\\\\x0001ff\t2024-02-29\t2024-03-05 10:20:30.123456\t2024-03-05 11:20:30.123456+00\t1 year 2 mons 3 days 00:00:05\n" +
			"2\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\n" +
			"3\tf\t0\t-0.25\t\\N\t\t\\\\x\t\\N\t\\N\t\\N\t\\N\n"
		if text != want {
			t.Errorf("COPY TO after pgx CopyFrom:\n got %q\nwant %q", text, want)
		}
	})

	t.Run("text and CSV readers", func(t *testing.T) {
		ExecAll(t, conn, "CREATE TABLE rd (id INT PRIMARY KEY, v TEXT, x NUMERIC)")
		tag, err := copyIn(t, conn, "COPY rd FROM STDIN", "1\tone\t1.5\n2\t\\N\t\\N\n3\ta\\tb\\\\c\\nd\t-0\n\\.\n")
		if err != nil || tag.String() != "COPY 3" {
			t.Fatalf("text COPY: %q, %s", tag, errText(err))
		}
		tag, err = copyIn(t, conn, "COPY rd (v, id) FROM STDIN WITH CSV HEADER DELIMITER ';'",
			"v;id\r\n\"x;y\"\"z\";4\r\n;5\r\n\"\";6\r\n\"multi\r\nline\";7\r\n")
		if err != nil || tag.String() != "COPY 4" {
			t.Fatalf("CSV COPY: %q, %s", tag, errText(err))
		}
		tag, err = copyIn(t, conn, "COPY rd FROM STDIN (FORMAT csv, NULL 'NULL', FORCE_NULL (v), FORCE_NOT_NULL (v))",
			"8,\"NULL\",NULL\n9,NULL,1e3\n")
		if err != nil || tag.String() != "COPY 2" {
			t.Fatalf("CSV COPY with FORCE_*: %q, %s", tag, errText(err))
		}
		ExecAll(t, conn, "FLUSH")
		got := copyOut(t, conn, "COPY rd TO STDOUT (FORMAT csv, HEADER)")
		want := "id,v,x\n1,one,1.5\n2,,\n3,\"a\tb\\c\nd\",0\n4,\"x;y\"\"z\",\n5,,\n6,\"\",\n7,\"multi\r\nline\",\n8,,\n9,NULL,1000\n"
		if got != want {
			t.Errorf("COPY rd TO csv:\n got %q\nwant %q", got, want)
		}
	})

	t.Run("errors load nothing", func(t *testing.T) {
		ExecAll(t, conn, "CREATE TABLE er (id INT PRIMARY KEY, v INT, s TEXT)")
		cases := []struct {
			sql, data, code, msg, where string
		}{
			{"COPY er FROM STDIN", "1\t1\ta\n2\t2\tb\n3\tabc\tc\n", "22P02",
				`invalid input syntax for type integer: "abc"`, `COPY er, line 3, column v: "abc"`},
			{"COPY er FROM STDIN (FORMAT csv)", "1,1,a\n2,99999999999,b\n", "22003",
				`value "99999999999" is out of range for type integer`, `COPY er, line 2, column v: "99999999999"`},
			{"COPY er FROM STDIN (FORMAT csv, HEADER)", "id,v,s\n1,1,a\n2,2\n", "22P04",
				`missing data for column "s"`, `COPY er, line 3: "2,2"`},
			{"COPY er FROM STDIN", "1\t1\ta\textra\n", "22P04",
				"extra data after last expected column", "COPY er, line 1: \"1\t1\ta\textra\""},
			{"COPY er FROM STDIN (FORMAT csv)", "1,1,\"open\n2,2,b\n", "22P04",
				"unterminated CSV quoted field", "COPY er, line 1: \"1,1,\"open\n2,2,b\n\""},
			{"COPY er FROM STDIN", "1\t1\ta\n1\t2\tb\n", "23505",
				`duplicate key value violates unique constraint "er_pkey"`, ""},
			{"COPY er FROM STDIN (FORMAT binary)", "PGCOPY\nxx", "22P04", "COPY file signature not recognized", ""},
		}
		for _, c := range cases {
			_, err := copyIn(t, conn, c.sql, c.data)
			pe := pgErrOf(t, err)
			if pe.Code != c.code || pe.Message != c.msg || pe.Where != c.where {
				t.Errorf("%s with %q:\n got %s %q where %q\nwant %s %q where %q", c.sql, c.data, pe.Code, pe.Message, pe.Where, c.code, c.msg, c.where)
			}
		}
		// CopyFail: the reader's error goes to the server as CopyFail.
		_, err := conn.PgConn().CopyFrom(ctx, &failingReader{data: "1\t1\ta\n"}, "COPY er FROM STDIN")
		pe := pgErrOf(t, err)
		if pe.Code != "57014" || pe.Message != "COPY from stdin failed: disk on fire" {
			t.Errorf("CopyFail: got %s %q", pe.Code, pe.Message)
		}
		ExecAll(t, conn, "FLUSH")
		if n := countRows(t, conn, "er"); n != 0 {
			t.Errorf("after failed COPYs the table has %d rows, want 0", n)
		}
		// The connection is still in step.
		tag, err := copyIn(t, conn, "COPY er FROM STDIN", "1\t1\ta\n")
		if err != nil || tag.String() != "COPY 1" {
			t.Fatalf("COPY after the failures: %q, %s", tag, errText(err))
		}
	})

	t.Run("server files refused", func(t *testing.T) {
		for sql, msg := range map[string]string{
			"COPY px FROM '/etc/passwd'":      "must be superuser or have privileges of the pg_read_server_files role to COPY from a file",
			"COPY px TO '/tmp/x'":             "must be superuser or have privileges of the pg_write_server_files role to COPY to a file",
			"COPY px FROM PROGRAM 'cat /x'":   "must be superuser or have privileges of the pg_execute_server_program role to COPY to or from an external program",
			"COPY (SELECT 1) TO PROGRAM 'sh'": "must be superuser or have privileges of the pg_execute_server_program role to COPY to or from an external program",
		} {
			_, err := conn.Exec(ctx, sql)
			pe := pgErrOf(t, err)
			if pe.Code != "42501" || pe.Message != msg || !strings.Contains(pe.Hint, `\copy`) {
				t.Errorf("%s: got %s %q hint %q", sql, pe.Code, pe.Message, pe.Hint)
			}
		}
	})
}

// failingReader returns data, then an error (pgx turns it into CopyFail).
type failingReader struct{ data string }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, errors.New("disk on fire")
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// copyTypesDDL and copyTypesRows make a table of every type COPY carries;
// the same statements run on Sluice and on PostgreSQL.
const copyTypesDDL = `CREATE TABLE %s (id BIGINT PRIMARY KEY, b BOOLEAN, i2 SMALLINT, i4 INT, i8 BIGINT,
	f4 REAL, f8 DOUBLE PRECISION, n NUMERIC, n2 NUMERIC(12,2), t TEXT, vc VARCHAR(20), bt BYTEA, d DATE,
	tm TIME, ts TIMESTAMP, tz TIMESTAMPTZ, iv INTERVAL, j JSONB, ta TEXT[])`

var copyTypesRows = []string{
	`(1, true, -32768, 2147483647, -9223372036854775808, 1.5, -2.25e10, 123456789012345678901234567890.123456789, 12345.67,
	  E'tab\there, "quoted" \\ back\nnew line; é', 'varchar', '\x0001ff5c', '2024-02-29', '13:14:15.5',
	  '2024-03-05 10:20:30.123456', '2024-03-05 10:20:30+02', '1 year 2 mons 3 days 04:05:06.7',
	  '"a\"b"', '{a,"b c","d,e",NULL,""}')`,
	`(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`,
	`(3, false, 0, 0, 0, 'NaN', '-Infinity', -0.5, 0, '', '', '\x', '0001-01-01', '00:00:00', '1999-12-31 23:59:59',
	  '2000-01-01 00:00:00+00', '-1 days', '[]', '{}')`,
	`(4, true, 1, 1, 1, 3.4028235e+38, 5e-324, 1e-20, -0.01, E'\\N', E'\\.', '\xdeadbeef', '2262-04-11', '23:59:59.999999',
	  '1970-01-01 00:00:00', '1970-01-01 00:00:00+00', '00:00:00.000001', '"s"', '{"\\\\"}')`,
}

func TestCopyRoundTripPostgres(t *testing.T) {
	srv := StartServer(t, Options{})
	sl := srv.Connect(t)
	pg := MustConnect(t, FreshPostgresDB(t, "sluice_copy_roundtrip"))
	ExecAll(t, pg, "SET TimeZone = 'UTC'")
	for _, conn := range []*pgx.Conn{sl, pg} {
		ExecAll(t, conn, fmt.Sprintf(copyTypesDDL, "ty"), "INSERT INTO ty VALUES "+strings.Join(copyTypesRows, ", "))
		ExecAll(t, conn, fmt.Sprintf(copyTypesDDL, "ty2"))
	}
	ExecAll(t, sl, "FLUSH")
	for _, opts := range []string{"", "(FORMAT csv)", "(FORMAT csv, HEADER, FORCE_QUOTE *)", "(FORMAT binary)",
		"(DELIMITER '|', NULL '<null>', HEADER true)", "WITH CSV QUOTE '''' ESCAPE '\\' NULL 'NIL' FORCE QUOTE t, vc"} {
		t.Run(opts, func(t *testing.T) {
			want := copyOut(t, pg, "COPY ty TO STDOUT "+opts)
			got := copyOut(t, sl, "COPY ty TO STDOUT "+opts)
			if got != want {
				t.Fatalf("COPY ty TO STDOUT %s differs from PostgreSQL's:\n got %q\nwant %q", opts, got, want)
			}
			q := copyOut(t, sl, "COPY (SELECT * FROM ty ORDER BY id) TO STDOUT "+opts)
			if q != want {
				t.Fatalf("COPY (SELECT ...) TO STDOUT %s:\n got %q\nwant %q", opts, q, want)
			}
			// Load PostgreSQL's bytes back into Sluice: the same bytes come out.
			in := strings.Replace(opts, ", FORCE_QUOTE *", "", 1)
			in = strings.Replace(in, "FORCE QUOTE t, vc", "", 1)
			ExecAll(t, sl, "DELETE FROM ty2")
			tag, err := copyIn(t, sl, "COPY ty2 FROM STDIN "+in, want)
			if err != nil || tag.String() != fmt.Sprintf("COPY %d", len(copyTypesRows)) {
				t.Fatalf("COPY ty2 FROM STDIN %s: %q, %s", in, tag, errText(err))
			}
			ExecAll(t, sl, "FLUSH")
			if back := copyOut(t, sl, "COPY ty2 TO STDOUT "+opts); back != want {
				t.Fatalf("after the round trip:\n got %q\nwant %q", back, want)
			}
		})
	}
}

// TestCopyColumnListDefaults: COPY t (cols) FROM gives every column left
// out of the list its default, evaluated per row in input order (a
// serial numbers the rows as they came), in text, CSV and binary, small
// and bulk, inside and outside a transaction block: the same rows as
// PostgreSQL's.
func TestCopyColumnListDefaults(t *testing.T) {
	srv := StartServer(t, Options{})
	sl := srv.Connect(t)
	pg := MustConnect(t, FreshPostgresDB(t, "sluice_copy_defaults"))
	var big strings.Builder
	for i := 1000; i < 1600; i++ {
		fmt.Fprintf(&big, "%d\n", i)
	}
	for _, conn := range []*pgx.Conn{sl, pg} {
		ExecAll(t, conn, `CREATE TABLE cd (a INT PRIMARY KEY, b INT DEFAULT 42, c TEXT DEFAULT 'x' || 'y',
			d SERIAL, e TIMESTAMPTZ DEFAULT now(), f INT)`)
		for _, c := range []struct{ sql, data string }{
			{"COPY cd (a) FROM STDIN", "1\n2\n"},
			{"COPY cd (a, b) FROM STDIN (FORMAT csv)", "3,7\n4,\n"},
			{"COPY cd (f, a) FROM STDIN (FORMAT csv, HEADER)", "f,a\n9,5\n"},
			{"COPY cd (a) FROM STDIN", big.String()},
		} {
			if _, err := copyIn(t, conn, c.sql, c.data); err != nil {
				t.Fatalf("%s: %s", c.sql, errText(err))
			}
		}
		ExecAll(t, conn, "BEGIN")
		if _, err := copyIn(t, conn, "COPY cd (a, c) FROM STDIN", "6\tz\n7\t\\N\n"); err != nil {
			t.Fatalf("COPY in a block: %s", errText(err))
		}
		ExecAll(t, conn, "COMMIT")
		rows := [][]any{{int32(8)}, {int32(9)}}
		if _, err := conn.CopyFrom(copyCtx(t), pgx.Identifier{"cd"}, []string{"a"}, pgx.CopyFromRows(rows)); err != nil {
			t.Fatalf("binary CopyFrom: %s", errText(err))
		}
	}
	ExecAll(t, sl, "FLUSH")
	q := "COPY (SELECT a, b, c, d, e IS NOT NULL AND e > now() - interval '1 hour', f FROM cd ORDER BY a) TO STDOUT"
	want, got := copyOut(t, pg, q), copyOut(t, sl, q)
	if got != want {
		t.Fatalf("rows differ from PostgreSQL's:\n got %q\nwant %q", got, want)
	}
	if n := strings.Count(got, "\n"); n != 609 {
		t.Fatalf("%d rows, want 609", n)
	}
}

// TestCopyExtendedProtocol drives COPY through Parse/Bind/Execute with a
// raw frontend, as libpq does (Sync right after Execute, another after
// CopyDone), against Sluice and PostgreSQL, and compares the message
// flows.
func TestCopyExtendedProtocol(t *testing.T) {
	srv := StartServer(t, Options{})
	pgURL := FreshPostgresDB(t, "sluice_copy_extended")
	targets := []struct {
		name, addr, user, db string
		conn                 *pgx.Conn
	}{
		{"sluice", srv.Addr, "sluice", "sluice", srv.Connect(t)},
		{"postgres", PostgresAddr, "postgres", "sluice_copy_extended", MustConnect(t, pgURL)},
	}
	var flows [][]string
	for _, tg := range targets {
		ExecAll(t, tg.conn, "CREATE TABLE ex (id INT PRIMARY KEY, v TEXT)")
		t.Logf("target %s", tg.name)
		rc := dialRaw(t, tg.addr, tg.user, tg.db)
		var flow []string
		step := func(msgs ...any) {
			t.Helper()
			flow = append(flow, rc.exchange(t, msgs...)...)
		}
		// COPY FROM in the extended protocol; Sync and Flush during the
		// copy are ignored; the final Sync ends it.
		step(parse("COPY ex FROM STDIN"), bind(), describePortal(), execute(), syncMsg(), copyData("1\tone\n"), flushMsg(),
			copyData("2\ttwo\n"), copyDone(), syncMsg())
		// A bad row: the error, then everything up to Sync is discarded.
		step(parse("COPY ex FROM STDIN"), bind(), execute(), syncMsg(), copyData("3\tx\nbad\ty\n"), copyData("4\tz\n"), copyDone(), syncMsg())
		// CopyFail in the simple protocol.
		step(query("COPY ex FROM STDIN"), copyData("5\tv\n"), copyFail("client gave up"))
		if tg.name == "sluice" {
			ExecAll(t, tg.conn, "FLUSH")
		}
		// COPY TO in the extended protocol.
		step(parse("COPY (SELECT id, v FROM ex ORDER BY id) TO STDOUT (FORMAT csv)"), bind(), describePortal(), execute(), syncMsg())
		// A message other than a copy message during copy-in ends the
		// connection: the protocol is out of step.
		flow = append(flow, rc.exchangeToEOF(t, query("COPY ex FROM STDIN"), copyData("6\tv\n"), query("SELECT 1"))...)
		rc.close()
		flows = append(flows, flow)
		if tg.name == "sluice" {
			ExecAll(t, tg.conn, "FLUSH")
		}
		if n := countRows(t, tg.conn, "ex"); n != 2 {
			t.Errorf("%s: %d rows, want 2", tg.name, n)
		}
	}
	t.Logf("message flow: %q", flows[0])
	if !reflect.DeepEqual(flows[0], flows[1]) {
		t.Errorf("message flows differ:\nsluice:   %q\npostgres: %q", flows[0], flows[1])
	}
}

// rawClient is a bare protocol-3 frontend.
type rawClient struct {
	nc net.Conn
	fe *pgproto3.Frontend
}

func dialRaw(t *testing.T, addr, user, db string) *rawClient {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	rc := &rawClient{nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
	rc.fe.Send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersionNumber,
		Parameters: map[string]string{"user": user, "database": db}})
	if err := rc.fe.Flush(); err != nil {
		t.Fatalf("startup: %v", err)
	}
	for {
		m := rc.receive(t)
		if _, ok := m.(*pgproto3.ReadyForQuery); ok {
			return rc
		}
		if e, ok := m.(*pgproto3.ErrorResponse); ok {
			t.Fatalf("startup: %s %s", e.Code, e.Message)
		}
	}
}

func (rc *rawClient) receive(t *testing.T) pgproto3.BackendMessage {
	t.Helper()
	rc.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	m, err := rc.fe.Receive()
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	return m
}

func (rc *rawClient) close() { rc.nc.Close() }

// exchangeToEOF sends msgs and returns the server's messages until it
// closes the connection.
func (rc *rawClient) exchangeToEOF(t *testing.T, msgs ...any) []string {
	t.Helper()
	for _, m := range msgs {
		rc.fe.Send(m.(pgproto3.FrontendMessage))
	}
	if err := rc.fe.Flush(); err != nil {
		t.Fatalf("send: %v", err)
	}
	var out []string
	for {
		rc.nc.SetReadDeadline(time.Now().Add(30 * time.Second))
		m, err := rc.fe.Receive()
		if err != nil {
			return append(out, "EOF")
		}
		switch m := m.(type) {
		case *pgproto3.ErrorResponse:
			out = append(out, m.Severity+" "+m.Code+" "+m.Message)
		default:
			out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3."))
		}
	}
}

// exchange sends msgs, then a marker query, and returns the server's
// messages up to the marker's, rendered as short strings.
func (rc *rawClient) exchange(t *testing.T, msgs ...any) []string {
	t.Helper()
	for _, m := range msgs {
		rc.fe.Send(m.(pgproto3.FrontendMessage))
	}
	rc.fe.Send(&pgproto3.Query{String: "SELECT 'end of step'"})
	if err := rc.fe.Flush(); err != nil {
		t.Fatalf("send: %v", err)
	}
	var out []string
	for {
		switch m := rc.receive(t).(type) {
		case *pgproto3.DataRow:
			if len(m.Values) == 1 && string(m.Values[0]) == "end of step" {
				for {
					if _, ok := rc.receive(t).(*pgproto3.ReadyForQuery); ok {
						// drop the marker's RowDescription
						if n := len(out); n > 0 && out[n-1] == "RowDescription" {
							out = out[:n-1]
						}
						return out
					}
				}
			}
			out = append(out, fmt.Sprintf("DataRow%q", m.Values))
		case *pgproto3.ErrorResponse:
			out = append(out, "Error "+m.Code+" "+m.Message)
		case *pgproto3.CommandComplete:
			out = append(out, "CommandComplete "+string(m.CommandTag))
		case *pgproto3.ReadyForQuery:
			out = append(out, "ReadyForQuery "+string(m.TxStatus))
		case *pgproto3.CopyData:
			out = append(out, fmt.Sprintf("CopyData %q", m.Data))
		case *pgproto3.CopyInResponse:
			out = append(out, fmt.Sprintf("CopyInResponse %d %v", m.OverallFormat, m.ColumnFormatCodes))
		case *pgproto3.CopyOutResponse:
			out = append(out, fmt.Sprintf("CopyOutResponse %d %v", m.OverallFormat, m.ColumnFormatCodes))
		case *pgproto3.NoticeResponse, *pgproto3.ParameterStatus:
		default:
			out = append(out, strings.TrimPrefix(fmt.Sprintf("%T", m), "*pgproto3."))
		}
	}
}

func parse(sql string) any    { return &pgproto3.Parse{Query: sql} }
func bind() any               { return &pgproto3.Bind{} }
func describePortal() any     { return &pgproto3.Describe{ObjectType: 'P'} }
func execute() any            { return &pgproto3.Execute{} }
func syncMsg() any            { return &pgproto3.Sync{} }
func flushMsg() any           { return &pgproto3.Flush{} }
func query(sql string) any    { return &pgproto3.Query{String: sql} }
func copyData(s string) any   { return &pgproto3.CopyData{Data: []byte(s)} }
func copyDone() any           { return &pgproto3.CopyDone{} }
func copyFail(msg string) any { return &pgproto3.CopyFail{Message: msg} }
