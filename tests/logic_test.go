package tests

// A sqllogictest-style runner, modelled on CockroachDB's logic tests.
//
// A file is a sequence of records separated by blank lines; lines starting
// with # between records are comments. Records:
//
//	statement ok
//	<SQL, one or more lines>
//
//	statement count N             the statement reports N rows affected
//	statement error pgcode XXXXX [position N] [regexp]
//	statement error [regexp]      (query error … is the same thing)
//
//	query <types> [rowsort|nosort] [colnames] [retry]
//	<SQL>
//	----
//	<expected rows>
//
//	halt                          stop reading the file here
//	user NAME                     run what follows as role NAME (sluice: the
//	                              bootstrap superuser); privileges.slt
//
// A record may be preceded by `onlyif sluice` (it runs only against Sluice:
// SHOW, DESCRIBE, CREATE SOURCE, behaviour PostgreSQL does not share) or
// `onlyif postgres`.
//
// <types> has one letter per result column: I integer (int2/int4/int8),
// R real (float4/float8/numeric), B boolean, T anything else. Every value is
// fetched in Postgres text format; a row is its values joined by single
// spaces, NULL is NULL and the empty string is ·. Results are compared in
// order unless rowsort sorts both sides; colnames adds a header line.
// position N is PostgreSQL's 1-based character position of a syntax error.
//
// Views are maintained asynchronously, so against Sluice every query that
// does not match is re-run until it does or -logic-retry (10s) passes, and
// only then reported with a diff. Files use FLUSH after writes anyway.
//
// Each file runs against a fresh server once over the extended protocol
// (pgx, Parse/Describe/Bind/Execute for every statement) and once over the
// simple protocol. TestLogicPostgres runs the same files against the
// machine's PostgreSQL 15 (CREATE MATERIALIZED VIEW becomes CREATE VIEW,
// FLUSH is dropped, onlyif sluice records are skipped): the expectations are
// PostgreSQL's answers, and `go test -run TestLogicPostgres -rewrite`
// regenerates them from PostgreSQL. `-run TestLogic/ -rewrite` rewrites only
// the onlyif sluice records, from Sluice: review that diff like code.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var (
	flagRewrite = flag.Bool("rewrite", false,
		"rewrite the expected results of logic test files (from PostgreSQL in TestLogicPostgres, "+
			"and only the onlyif sluice records from Sluice in TestLogic)")
	flagLogicRetry = flag.Duration("logic-retry", 10*time.Second,
		"how long a mismatching logic-test query is retried against Sluice before it fails")
)

const (
	logicStmtTimeout = 60 * time.Second
	logicMaxFailures = 25 // per file and protocol, so a broken server does not flood the log
)

func logicFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "logic", "*.slt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no logic test files in testdata/logic")
	}
	return files
}

// TestLogic runs every logic test file against a fresh Sluice server, once
// per protocol.
func TestLogic(t *testing.T) {
	for _, path := range logicFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			t.Parallel()
			file := mustParseLogicFile(t, path)
			for _, proto := range []string{"extended", "simple"} {
				t.Run(proto, func(t *testing.T) {
					srv := StartServer(t, Options{})
					var conn *pgx.Conn
					if proto == "simple" {
						conn = srv.ConnectSimple(t)
					} else {
						// DescribeExec sends every statement, DDL included, through
						// Parse/Describe/Bind/Execute without caching statements
						// across schema changes.
						conn = srv.ConnectMode(t, pgx.QueryExecModeDescribeExec)
					}
					conns := map[string]*pgx.Conn{"sluice": conn}
					runLogicFile(t, file, logicTarget{
						name:    "sluice",
						conn:    conn,
						retry:   *flagLogicRetry,
						rewrite: *flagRewrite && proto == "extended",
						asUser: func(user string) (*pgx.Conn, error) {
							if conns[user] == nil {
								// The role exists first, as the directive's
								// PostgreSQL side creates it (postgresSetRole).
								if _, err := conn.Exec(context.Background(), "CREATE ROLE "+pgx.Identifier{user}.Sanitize()+" LOGIN"); err != nil && PgCode(err) != "42710" {
									return nil, err
								}
								url := strings.Replace(srv.ConnString(), "://sluice@", "://"+user+"@", 1)
								mode := pgx.QueryExecModeDescribeExec
								if proto == "simple" {
									mode = pgx.QueryExecModeSimpleProtocol
								}
								conns[user] = MustConnectMode(t, url, mode)
							}
							return conns[user], nil
						},
					})
				})
			}
		})
	}
}

// TestLogicPostgres runs every logic test file against the machine's
// PostgreSQL, showing that the expectations are PostgreSQL's answers.
func TestLogicPostgres(t *testing.T) {
	EnsurePostgres(t)
	for _, path := range logicFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			file := mustParseLogicFile(t, path)
			for _, proto := range []string{"extended", "simple"} {
				t.Run(proto, func(t *testing.T) {
					db := "sluice_logic_" + strings.TrimSuffix(filepath.Base(path), ".slt") + "_" + proto
					url := FreshPostgresDB(t, db)
					var conn *pgx.Conn
					if proto == "simple" {
						conn = MustConnectMode(t, url, pgx.QueryExecModeSimpleProtocol)
					} else {
						conn = MustConnectMode(t, url, pgx.QueryExecModeDescribeExec)
					}
					// Create the file's roles up front: a record may grant to a
					// role before it runs as that role.
					for _, rec := range file.records {
						if rec.kind == recUser {
							if err := postgresSetRole(conn, rec.sql); err != nil {
								t.Fatalf("role %s: %v", rec.sql, err)
							}
						}
					}
					if err := postgresSetRole(conn, "sluice"); err != nil {
						t.Fatal(err)
					}
					runLogicFile(t, file, logicTarget{
						name:      "postgres",
						conn:      conn,
						translate: translateForPostgres,
						rewrite:   *flagRewrite && proto == "extended",
						asUser:    func(user string) (*pgx.Conn, error) { return conn, postgresSetRole(conn, user) },
					})
				})
			}
		})
	}
}

var (
	reFlush       = regexp.MustCompile(`(?is)^\s*FLUSH\s*;?\s*$`)
	reCreateMView = regexp.MustCompile(`(?i)\bCREATE\s+MATERIALIZED\s+VIEW\b`)
	reDropMView   = regexp.MustCompile(`(?i)\bDROP\s+MATERIALIZED\s+VIEW\b`)
)

// translateForPostgres maps Sluice SQL to PostgreSQL SQL with the same
// answers: a plain view computes what a materialized view maintains, and
// PostgreSQL has nothing to flush. ok=false skips the statement.
func translateForPostgres(sql string) (string, bool) {
	if reFlush.MatchString(sql) {
		return "", false
	}
	sql = reCreateMView.ReplaceAllString(sql, "CREATE VIEW")
	sql = reDropMView.ReplaceAllString(sql, "DROP VIEW")
	return sql, true
}

// ---------------------------------------------------------------------------
// Parsing.

type logicRecordKind int

const (
	recStatement logicRecordKind = iota
	recQuery
	recHalt
	recUser // sql holds the role name
)

type logicRecord struct {
	kind   logicRecordKind
	line   int    // 1-based line of the directive
	onlyif string // "", "sluice" or "postgres"
	sql    string

	// statement
	expectError bool
	pgcode      string
	position    int            // 0: not checked
	errRe       *regexp.Regexp // nil: any message
	count       int64          // -1: not checked

	// query
	types    string
	rowsort  bool
	colnames bool
	expected []string
	// Lines (0-based, in logicFile.lines) for rewriting: sep is the ----
	// line or -1, and the expected rows are [expFrom, expTo).
	sep, expFrom, expTo int
	sqlEnd              int // line index after the SQL
}

type logicFile struct {
	path    string
	lines   []string
	records []*logicRecord
}

func mustParseLogicFile(t *testing.T, path string) *logicFile {
	t.Helper()
	f, err := parseLogicFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func parseLogicFile(path string) (*logicFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	text := strings.TrimSuffix(string(data), "\n")
	f := &logicFile{path: path, lines: strings.Split(text, "\n")}
	lines := f.lines
	errf := func(i int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", path, i+1, fmt.Sprintf(format, args...))
	}
	blank := func(s string) bool { return strings.TrimSpace(s) == "" }
	i := 0
	onlyif := ""
	for i < len(lines) {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			i++
			continue
		}
		fields := strings.Fields(line)
		switch fields[0] {
		case "onlyif":
			if len(fields) != 2 || (fields[1] != "sluice" && fields[1] != "postgres") {
				return nil, errf(i, "onlyif wants sluice or postgres")
			}
			onlyif = fields[1]
			i++
			continue
		case "halt":
			f.records = append(f.records, &logicRecord{kind: recHalt, line: i + 1, onlyif: onlyif})
			onlyif = ""
			i++
			continue
		case "user":
			if len(fields) != 2 {
				return nil, errf(i, "user wants one role name")
			}
			f.records = append(f.records, &logicRecord{kind: recUser, line: i + 1, onlyif: onlyif, sql: fields[1]})
			onlyif = ""
			i++
			continue
		case "statement", "query":
		default:
			return nil, errf(i, "unknown directive %q", fields[0])
		}
		rec := &logicRecord{line: i + 1, onlyif: onlyif, count: -1, sep: -1}
		onlyif = ""
		isError := len(fields) >= 2 && fields[1] == "error"
		switch {
		case fields[0] == "statement" && len(fields) == 2 && fields[1] == "ok":
			rec.kind = recStatement
		case fields[0] == "statement" && len(fields) == 3 && fields[1] == "count":
			n, err := strconv.ParseInt(fields[2], 10, 64)
			if err != nil {
				return nil, errf(i, "bad count: %v", err)
			}
			rec.kind, rec.count = recStatement, n
		case isError:
			rec.kind, rec.expectError = recStatement, true
			rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), fields[0]))
			rest = strings.TrimSpace(strings.TrimPrefix(rest, "error"))
			if strings.HasPrefix(rest, "pgcode ") {
				parts := strings.SplitN(rest, " ", 3)
				rec.pgcode = parts[1]
				if len(rec.pgcode) != 5 {
					return nil, errf(i, "pgcode %q is not a SQLSTATE", rec.pgcode)
				}
				rest = ""
				if len(parts) == 3 {
					rest = strings.TrimSpace(parts[2])
				}
			}
			if strings.HasPrefix(rest, "position ") {
				parts := strings.SplitN(rest, " ", 3)
				n, err := strconv.Atoi(parts[1])
				if err != nil || n <= 0 {
					return nil, errf(i, "bad position %q", parts[1])
				}
				rec.position = n
				rest = ""
				if len(parts) == 3 {
					rest = strings.TrimSpace(parts[2])
				}
			}
			if rest != "" {
				re, err := regexp.Compile(rest)
				if err != nil {
					return nil, errf(i, "bad error regexp: %v", err)
				}
				rec.errRe = re
			}
		case fields[0] == "query" && len(fields) >= 2:
			rec.kind, rec.types = recQuery, fields[1]
			for _, c := range rec.types {
				if !strings.ContainsRune("IRBT", c) {
					return nil, errf(i, "column type %q is not one of I R B T", c)
				}
			}
			for _, opt := range fields[2:] {
				switch opt {
				case "rowsort":
					rec.rowsort = true
				case "nosort":
					rec.rowsort = false
				case "colnames":
					rec.colnames = true
				case "retry": // every query retries; accepted for readability
				default:
					return nil, errf(i, "unknown query option %q", opt)
				}
			}
		default:
			return nil, errf(i, "malformed directive %q", line)
		}
		i++
		var sql []string
		for i < len(lines) && !blank(lines[i]) && strings.TrimSpace(lines[i]) != "----" {
			sql = append(sql, lines[i])
			i++
		}
		if len(sql) == 0 {
			return nil, errf(rec.line-1, "record without SQL")
		}
		rec.sql = strings.Join(sql, "\n")
		rec.sqlEnd = i
		if i < len(lines) && strings.TrimSpace(lines[i]) == "----" {
			if rec.kind != recQuery {
				return nil, errf(i, "---- after a statement")
			}
			rec.sep = i
			i++
			rec.expFrom = i
			for i < len(lines) && !blank(lines[i]) {
				rec.expected = append(rec.expected, strings.TrimRight(lines[i], " \t"))
				i++
			}
			rec.expTo = i
		}
		f.records = append(f.records, rec)
	}
	return f, nil
}

// ---------------------------------------------------------------------------
// Running.

type logicTarget struct {
	name      string // "sluice" or "postgres"
	conn      *pgx.Conn
	retry     time.Duration // how long to re-run a mismatching query
	translate func(string) (string, bool)
	rewrite   bool
	// asUser returns the connection that runs statements as role user
	// (the `user` directive).
	asUser func(user string) (*pgx.Conn, error)
}

// runs reports whether rec runs against this target, and whether a rewrite
// may take its expectations from this target.
func (tg logicTarget) runs(rec *logicRecord) (run, rewritable bool) {
	switch rec.onlyif {
	case "":
		return true, tg.name == "postgres"
	case tg.name:
		return true, true
	default:
		return false, false
	}
}

func runLogicFile(t *testing.T, f *logicFile, tg logicTarget) {
	t.Helper()
	failures := 0
	rewrites := map[*logicRecord][]string{}
	fail := func(rec *logicRecord, format string, args ...any) {
		t.Helper()
		failures++
		t.Errorf("%s:%d: %s\n%s", f.path, rec.line, indent(rec.sql), fmt.Sprintf(format, args...))
		if failures >= logicMaxFailures {
			t.Fatalf("%s: stopping after %d failures", f.path, failures)
		}
	}
	// Every role a user directive names exists before the first record
	// runs, as a file may grant to a role before switching to it.
	if tg.asUser != nil {
		seen := map[string]bool{}
		for _, rec := range f.records {
			if rec.kind == recUser && rec.sql != "sluice" && !seen[rec.sql] {
				seen[rec.sql] = true
				if _, err := tg.asUser(rec.sql); err != nil {
					t.Fatalf("%s:%d: user %s: %v", f.path, rec.line, rec.sql, err)
				}
			}
		}
		if len(seen) > 0 {
			if _, err := tg.asUser("sluice"); err != nil {
				t.Fatalf("%s: user sluice: %v", f.path, err)
			}
		}
	}
	for _, rec := range f.records {
		run, rewritable := tg.runs(rec)
		if !run {
			continue
		}
		if rec.kind == recHalt {
			break
		}
		if rec.kind == recUser {
			conn, err := tg.asUser(rec.sql)
			if err != nil {
				t.Fatalf("%s:%d: user %s: %v", f.path, rec.line, rec.sql, err)
			}
			tg.conn = conn
			continue
		}
		sql := rec.sql
		if tg.translate != nil {
			var ok bool
			if sql, ok = tg.translate(sql); !ok {
				continue
			}
		}
		switch rec.kind {
		case recStatement:
			res, err := logicExec(tg.conn, sql)
			if rec.expectError {
				checkLogicError(rec, err, fail)
			} else if err != nil {
				fail(rec, "unexpected error: %s", describeErr(err))
			} else if rec.count >= 0 && res.CommandTag.RowsAffected() != rec.count {
				fail(rec, "expected %d rows affected, got %d (%s)", rec.count, res.CommandTag.RowsAffected(), res.CommandTag)
			}
		case recQuery:
			got, err := runLogicQuery(tg, rec, sql, rewritable)
			if err != nil {
				fail(rec, "%v", err)
			} else if got != nil {
				rewrites[rec] = got
			}
		}
		if tg.conn.IsClosed() {
			t.Fatalf("%s:%d: the connection is closed (did the server crash?)", f.path, rec.line)
		}
	}
	if tg.rewrite && len(rewrites) > 0 {
		if err := rewriteLogicFile(f, rewrites); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote %d records of %s from %s", len(rewrites), f.path, tg.name)
	}
}

func logicExec(conn *pgx.Conn, sql string) (*TextResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), logicStmtTimeout)
	defer cancel()
	return QueryText(ctx, conn, sql)
}

func checkLogicError(rec *logicRecord, err error, fail func(*logicRecord, string, ...any)) {
	if err == nil {
		fail(rec, "expected an error (pgcode %s), got success", orAny(rec.pgcode))
		return
	}
	var pgErr *pgconn.PgError
	if !asPgError(err, &pgErr) {
		fail(rec, "expected a server error, got %v", err)
		return
	}
	if rec.pgcode != "" && pgErr.Code != rec.pgcode {
		fail(rec, "expected pgcode %s, got %s", rec.pgcode, describeErr(err))
		return
	}
	if rec.position != 0 && int(pgErr.Position) != rec.position {
		fail(rec, "expected error position %d, got %d (%s)", rec.position, pgErr.Position, describeErr(err))
		return
	}
	if rec.errRe != nil && !rec.errRe.MatchString(pgErr.Message) {
		fail(rec, "error message %q does not match %q", pgErr.Message, rec.errRe)
	}
}

// runLogicQuery runs a query record. It returns the rendered result when the
// target is rewriting this record, otherwise nil.
func runLogicQuery(tg logicTarget, rec *logicRecord, sql string, rewritable bool) ([]string, error) {
	want := append([]string(nil), rec.expected...)
	if rec.rowsort {
		sortRows(want, rec.colnames)
	}
	rewriting := tg.rewrite && rewritable
	deadline := time.Now().Add(tg.retry)
	wait := 20 * time.Millisecond
	attempts := 0
	var stable []string // rewriting: the result seen since stableSince
	var stableSince time.Time
	for {
		attempts++
		res, err := logicExec(tg.conn, sql)
		if err != nil {
			return nil, fmt.Errorf("unexpected error: %s", describeErr(err))
		}
		if err := checkColumnTypes(rec.types, res.Fields); err != nil {
			return nil, err
		}
		got := res.Lines()
		if rec.colnames {
			got = append([]string{strings.Join(res.ColumnNames(), " ")}, got...)
		}
		if rec.rowsort {
			sortRows(got, rec.colnames)
		}
		if rewriting {
			// Sluice's views converge asynchronously: take a result only
			// once it has held for a second (PostgreSQL's retry is 0).
			if tg.retry == 0 || (stable != nil && equalLines(stable, got) && time.Since(stableSince) >= time.Second) {
				return got, nil
			}
			if stable == nil || !equalLines(stable, got) {
				stable, stableSince = got, time.Now()
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("result did not settle within %v; not rewritten", tg.retry)
			}
			time.Sleep(100 * time.Millisecond) // polling, bounded by deadline
			continue
		}
		if equalLines(want, got) {
			return nil, nil
		}
		if tg.conn.IsClosed() || time.Now().After(deadline) {
			return nil, fmt.Errorf("result mismatch (after %d attempts over %v)\nexpected:\n%s\ngot:\n%s\ndiff (-expected +got):\n%s",
				attempts, tg.retry, indent(strings.Join(want, "\n")), indent(strings.Join(got, "\n")), lineDiff(want, got))
		}
		time.Sleep(wait) // polling a converging view, bounded by deadline
		if wait < 500*time.Millisecond {
			wait *= 2
		}
	}
}

var typeOIDs = map[rune][]uint32{
	'I': {20, 21, 23},     // int8, int2, int4
	'R': {700, 701, 1700}, // float4, float8, numeric
	'B': {16},             // bool
	'T': nil,              // anything
}

func checkColumnTypes(types string, fields []pgconn.FieldDescription) error {
	if len(types) != len(fields) {
		return fmt.Errorf("expected %d columns (%s), got %d (%s)", len(types), types, len(fields), fieldList(fields))
	}
	for i, c := range types {
		oids := typeOIDs[c]
		if oids == nil {
			continue
		}
		ok := false
		for _, oid := range oids {
			ok = ok || fields[i].DataTypeOID == oid
		}
		if !ok {
			return fmt.Errorf("column %d (%s) has type OID %d, which is not %c", i+1, fields[i].Name, fields[i].DataTypeOID, c)
		}
	}
	return nil
}

func fieldList(fields []pgconn.FieldDescription) string {
	var parts []string
	for _, f := range fields {
		parts = append(parts, fmt.Sprintf("%s:%d", f.Name, f.DataTypeOID))
	}
	return strings.Join(parts, ", ")
}

func sortRows(lines []string, header bool) {
	if header && len(lines) > 0 {
		lines = lines[1:]
	}
	sort.Strings(lines)
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// lineDiff is a small LCS diff, enough for result sets. Large inputs get a
// multiset difference instead, to keep memory linear.
func lineDiff(a, b []string) string {
	n, m := len(a), len(b)
	if n*m > 1_000_000 {
		return multisetDiff(a, b)
	}
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var sb strings.Builder
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			sb.WriteString("      " + a[i] + "\n")
			i++
			j++
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			sb.WriteString("    - " + a[i] + "\n")
			i++
		default:
			sb.WriteString("    + " + b[j] + "\n")
			j++
		}
	}
	return sb.String()
}

func multisetDiff(a, b []string) string {
	count := map[string]int{}
	for _, l := range a {
		count[l]++
	}
	for _, l := range b {
		count[l]--
	}
	var out []string
	for l, c := range count {
		for ; c > 0; c-- {
			out = append(out, "    - "+l)
		}
		for ; c < 0; c++ {
			out = append(out, "    + "+l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][6:] < out[j][6:] })
	return strings.Join(out, "\n") + "\n"
}

func indent(s string) string {
	if s == "" {
		return "    (nothing)"
	}
	return "    " + strings.ReplaceAll(s, "\n", "\n    ")
}

func orAny(code string) string {
	if code == "" {
		return "any"
	}
	return code
}

func asPgError(err error, target **pgconn.PgError) bool {
	return errors.As(err, target)
}

// describeErr renders an error with its SQLSTATE and position when it has them.
func describeErr(err error) string {
	var pgErr *pgconn.PgError
	if asPgError(err, &pgErr) {
		s := fmt.Sprintf("ERROR %s: %s", pgErr.Code, pgErr.Message)
		if pgErr.Position != 0 {
			s += fmt.Sprintf(" (position %d)", pgErr.Position)
		}
		if pgErr.Detail != "" {
			s += " DETAIL: " + pgErr.Detail
		}
		return s
	}
	return err.Error()
}

// rewriteLogicFile replaces the expected rows of the given records and
// writes the file back.
func rewriteLogicFile(f *logicFile, rewrites map[*logicRecord][]string) error {
	recs := make([]*logicRecord, 0, len(rewrites))
	for rec := range rewrites {
		recs = append(recs, rec)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].line > recs[j].line })
	lines := append([]string(nil), f.lines...)
	for _, rec := range recs {
		got := rewrites[rec]
		var repl []string
		var from, to int
		if rec.sep >= 0 {
			from, to = rec.sep+1, rec.expTo
		} else {
			from, to = rec.sqlEnd, rec.sqlEnd
			repl = append(repl, "----")
		}
		repl = append(repl, got...)
		lines = append(lines[:from], append(repl, lines[to:]...)...)
	}
	return os.WriteFile(f.path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// postgresSetRole makes PostgreSQL's session run as role user, creating
// the role when it is missing (roles are cluster-wide); "sluice", Sluice's
// bootstrap superuser, is the connection's own superuser.
func postgresSetRole(conn *pgx.Conn, user string) error {
	ctx, cancel := context.WithTimeout(context.Background(), logicStmtTimeout)
	defer cancel()
	if user == "sluice" {
		_, err := conn.Exec(ctx, "RESET ROLE")
		return err
	}
	ident := pgx.Identifier{user}.Sanitize()
	if _, err := conn.Exec(ctx, "RESET ROLE"); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "CREATE ROLE "+ident+" LOGIN"); err != nil && PgCode(err) != "42710" {
		return err
	}
	_, err := conn.Exec(ctx, "SET ROLE "+ident)
	return err
}
