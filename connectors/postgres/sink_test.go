// Tests of the postgres sink against the machine's PostgreSQL: option
// validation (no network); append; upsert with updates and deletes (exact
// final table, repeats harmless); transactional writes applied exactly
// once across repeats and a new sink instance, LastEpoch; a cancelled
// write between BEGIN and COMMIT leaves nothing and its retry applies
// once; an unreachable or hung server gives an error within a bounded
// time and the next Write reconnects; writing into an existing table
// whose column types differ from the view's.
package postgres

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func TestRegistered(t *testing.T) {
	f, err := connector.LookupSink("postgres")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.(Factory); !ok {
		t.Fatalf("registered factory is %T", f)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name       string
		mode       string
		keyed      bool
		appendOnly bool
		opts       []string // key, value pairs; value "-" deletes
		wantCode   pgcode.Code
		wantMsg    string
		wantMode   string
		wantG      connector.Guarantee
	}{
		{name: "default transactional, append-only", appendOnly: true, wantMode: "transactional", wantG: connector.ExactlyOnce},
		{name: "default transactional, keyed", keyed: true, wantMode: "transactional", wantG: connector.ExactlyOnce},
		{name: "default needs key over retractions", wantCode: pgcode.InvalidParameterValue, wantMsg: "primary_key"},
		{name: "upsert", mode: "upsert", keyed: true, wantMode: "upsert", wantG: connector.ExactlyOnce},
		{name: "upsert case-insensitive", mode: "UPSERT", keyed: true, wantMode: "upsert", wantG: connector.ExactlyOnce},
		{name: "upsert needs key", mode: "upsert", appendOnly: true, wantCode: pgcode.InvalidParameterValue, wantMsg: "primary_key"},
		{name: "append", mode: "append", appendOnly: true, wantMode: "append", wantG: connector.AtLeastOnce},
		{name: "append over retractions", mode: "append", keyed: true, wantCode: pgcode.FeatureNotSupported, wantMsg: "append"},
		{name: "transactional needs key over retractions", mode: "transactional", wantCode: pgcode.InvalidParameterValue, wantMsg: "primary_key"},
		{name: "bad write_mode", mode: "merge", keyed: true, wantCode: pgcode.InvalidParameterValue, wantMsg: "write_mode"},
		{name: "no url", keyed: true, opts: []string{"url", "-"}, wantCode: pgcode.InvalidParameterValue, wantMsg: "url"},
		{name: "not a postgres url", keyed: true, opts: []string{"url", "mysql://x@y/z"}, wantCode: pgcode.InvalidParameterValue, wantMsg: "url"},
		{name: "bad url", keyed: true, opts: []string{"url", "postgres://h:notaport/db"}, wantCode: pgcode.InvalidParameterValue, wantMsg: "url"},
		{name: "no table", keyed: true, opts: []string{"table", "-"}, wantCode: pgcode.InvalidParameterValue, wantMsg: "table"},
		{name: "bad table", keyed: true, opts: []string{"table", `a.b.c`}, wantCode: pgcode.InvalidParameterValue, wantMsg: "table"},
		{name: "unterminated quote", keyed: true, opts: []string{"table", `"abc`}, wantCode: pgcode.InvalidParameterValue, wantMsg: "table"},
		{name: "bad auto.create", keyed: true, opts: []string{"auto.create", "yes"}, wantCode: pgcode.InvalidParameterValue, wantMsg: "auto.create"},
		{name: "bad write.timeout", keyed: true, opts: []string{"write.timeout", "soon"}, wantCode: pgcode.InvalidParameterValue, wantMsg: "write.timeout"},
		{name: "bad delivery", keyed: true, opts: []string{"delivery", "twice"}, wantCode: pgcode.InvalidParameterValue, wantMsg: "delivery"},
		{name: "unknown option", keyed: true, opts: []string{"auto_create", "false"}, wantCode: pgcode.InvalidParameterValue, wantMsg: "auto_create"},
		{name: "good options", keyed: true, opts: []string{"auto.create", "FALSE", "write.timeout", "5s", "delivery", "at_least_once", "table", `"My Schema".Out`}, wantMode: "transactional", wantG: connector.ExactlyOnce},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := sinkConfig("out", tc.mode, tc.keyed, tc.appendOnly)
			for i := 0; i+1 < len(tc.opts); i += 2 {
				if tc.opts[i+1] == "-" {
					delete(cfg.Options, tc.opts[i])
				} else {
					cfg.Options[tc.opts[i]] = tc.opts[i+1]
				}
			}
			plan, err := Factory{}.Validate(cfg)
			if tc.wantCode != "" {
				if err == nil {
					t.Fatalf("Validate succeeded with %+v, want error %s", plan, tc.wantCode)
				}
				if got := pgerror.GetCode(err); got != tc.wantCode {
					t.Fatalf("error code %s (%v), want %s", got, err, tc.wantCode)
				}
				if !strings.Contains(err.Error(), tc.wantMsg) {
					t.Fatalf("error %q does not mention %q", err, tc.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if plan.WriteMode != tc.wantMode || plan.Guarantee != tc.wantG {
				t.Fatalf("plan %+v, want mode %s guarantee %s", plan, tc.wantMode, tc.wantG)
			}
			if plan.Guarantee == connector.AtLeastOnce && !strings.Contains(plan.Why, "progress row") {
				t.Fatalf("Why %q", plan.Why)
			}
		})
	}
}

func TestValidateFormat(t *testing.T) {
	cfg := sinkConfig("out", "", true, false)
	cfg.Format, cfg.Encode = "PLAIN", "JSON"
	if _, err := (Factory{}).Validate(cfg); pgerror.GetCode(err) != pgcode.FeatureNotSupported {
		t.Errorf("FORMAT … ENCODE: %v, want 0A000", err)
	}
}

func TestParseQualifiedName(t *testing.T) {
	for in, want := range map[string]string{
		"out":                `"out"`,
		"Out":                `"out"`,
		"public.Out":         `"public"."out"`,
		`"My Schema"."Out"`:  `"My Schema"."Out"`,
		`s."a.b"`:            `"s"."a.b"`,
		`"q""uote"`:          `"q""uote"`,
		` sch . tab `:        `"sch"."tab"`,
		`"Ünï"."côde"`:       `"Ünï"."côde"`,
		`"x"."y"`:            `"x"."y"`,
		`UPPER_lower`:        `"upper_lower"`,
		`"with space".plain`: `"with space"."plain"`,
	} {
		id, err := parseQualifiedName(in)
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if got := id.Sanitize(); got != want {
			t.Errorf("%q: got %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"", ".", "a.", ".a", "a.b.c", `"`, `""`, "a b", `a"b"`} {
		if id, err := parseQualifiedName(bad); err == nil {
			t.Errorf("%q: got %v, want an error", bad, id)
		}
	}
}

// progressTable gives a transactional sink its own progress table, dropped
// when the test ends.
func progressTable(t *testing.T, db *pgx.Conn, cfg *connector.SinkConfig) string {
	name := uniqueName(t, db, "progress")
	cfg.Options["progress.table"] = name
	return name
}

func TestAppend(t *testing.T) {
	db := testDB(t)
	table := uniqueName(t, db, "append")
	cfg := sinkConfig(table, "append", false, true)
	s := openSink(t, cfg)
	if _, ok := s.(connector.Progress); ok {
		t.Fatal("an append sink must not claim progress")
	}
	write(t, s, 1, ins(1, "a"), ins(2, "b"), ins(2, "b"))
	write(t, s, 2, ins(3, "c"), connector.Change{Before: row(9, "ignored")})
	equalLines(t, "table", dump(t, db, table), []string{"1|a", "2|b", "2|b", "3|c"})
	// At least once: a repeat appends again.
	write(t, s, 2, ins(3, "c"))
	if n := count(t, db, table); n != 5 {
		t.Fatalf("%d rows, want 5", n)
	}
	// No primary key was created for append mode.
	var hasPK bool
	if err := db.QueryRow(context.Background(),
		"SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p')",
		pgx.Identifier{table}.Sanitize()).Scan(&hasPK); err != nil {
		t.Fatal(err)
	}
	if hasPK {
		t.Fatal("append mode created a primary key")
	}
}

func TestUpsert(t *testing.T) {
	db := testDB(t)
	table := uniqueName(t, db, "upsert")
	s := openSink(t, sinkConfig(table, "upsert", true, false))
	if _, ok := s.(connector.Progress); ok {
		t.Fatal("an upsert sink must not claim progress")
	}
	write(t, s, 1, ins(1, "a"), ins(2, "b"), ins(3, "c"), ins(4, "d"))
	equalLines(t, "after epoch 1", dump(t, db, table), []string{"1|a", "2|b", "3|c", "4|d"})
	epoch2 := []connector.Change{
		upd(2, "b", "B"),
		del(3, "c"),
		ins(5, "e"),
		del(42, "never existed"),
		// The same key twice in one epoch: the last change wins.
		upd(4, "d", "x"), upd(4, "x", "D"),
		ins(6, "f"), del(6, "f"),
		del(1, "a"), ins(1, "A"),
	}
	write(t, s, 2, epoch2...)
	want := []string{"1|A", "2|B", "4|D", "5|e"}
	equalLines(t, "after epoch 2", dump(t, db, table), want)
	// A repeat (a retry after a lost confirmation) changes nothing.
	write(t, s, 2, epoch2...)
	equalLines(t, "after repeating epoch 2", dump(t, db, table), want)
	// Deletes only.
	write(t, s, 3, del(5, "e"), del(4, "D"))
	equalLines(t, "after epoch 3", dump(t, db, table), []string{"1|A", "2|B"})
}

func TestUpsertAllKeyColumns(t *testing.T) {
	db := testDB(t)
	table := uniqueName(t, db, "allkey")
	cfg := sinkConfig(table, "upsert", true, false)
	cfg.Key = []int{0, 1}
	s := openSink(t, cfg)
	write(t, s, 1, ins(1, "a"), ins(1, "b"), ins(2, "a"))
	write(t, s, 2, ins(1, "a"), del(2, "a"))
	equalLines(t, "table", dump(t, db, table), []string{"1|a", "1|b"})
}

func TestTransactionalExactlyOnce(t *testing.T) {
	db := testDB(t)
	table := uniqueName(t, db, "tx")
	cfg := sinkConfig(table, "", false, true)
	progressTable(t, db, &cfg)
	s := openSink(t, cfg)
	p, ok := s.(connector.Progress)
	if !ok {
		t.Fatalf("a transactional sink must implement connector.Progress (%T)", s)
	}
	ctx := context.Background()
	if e, err := p.LastEpoch(ctx); err != nil || e != 0 {
		t.Fatalf("LastEpoch before any write = %d, %v; want 0", e, err)
	}
	epoch5 := []connector.Change{ins(1, "a"), ins(1, "a"), ins(2, "b")}
	write(t, s, 5, epoch5...)
	write(t, s, 5, epoch5...) // a retry: skipped
	if n := count(t, db, table); n != 3 {
		t.Fatalf("%d rows after writing epoch 5 twice, want 3", n)
	}
	if e, err := p.LastEpoch(ctx); err != nil || e != 5 {
		t.Fatalf("LastEpoch = %d, %v; want 5", e, err)
	}
	_ = s.Close()

	// Recovery: a new instance of the same sink gets epoch 5 again.
	s2 := openSink(t, cfg)
	if e, err := s2.(connector.Progress).LastEpoch(ctx); err != nil || e != 5 {
		t.Fatalf("LastEpoch of a new instance = %d, %v; want 5", e, err)
	}
	write(t, s2, 5, epoch5...)
	write(t, s2, 3, ins(99, "old epoch"))
	if n := count(t, db, table); n != 3 {
		t.Fatalf("%d rows after replaying epochs 5 and 3, want 3", n)
	}
	write(t, s2, 6, ins(3, "c"))
	write(t, s2, 7) // an epoch with no rows still advances
	equalLines(t, "table", dump(t, db, table), []string{"1|a", "1|a", "2|b", "3|c"})
	if e, err := s2.(connector.Progress).LastEpoch(ctx); err != nil || e != 7 {
		t.Fatalf("LastEpoch = %d, %v; want 7", e, err)
	}
	var name string
	if err := db.QueryRow(ctx, "SELECT sink_name FROM "+pgx.Identifier{cfg.Options["progress.table"]}.Sanitize()+
		" WHERE sink_id = $1", int64(cfg.ID)).Scan(&name); err != nil || name != cfg.Name {
		t.Fatalf("progress row names %q (%v), want %q", name, err, cfg.Name)
	}
}

func TestTransactionalKeyed(t *testing.T) {
	db := testDB(t)
	table := uniqueName(t, db, "txkey")
	cfg := sinkConfig(table, "transactional", true, false)
	progressTable(t, db, &cfg)
	s := openSink(t, cfg)
	write(t, s, 1, ins(1, "a"), ins(2, "b"), ins(3, "c"))
	write(t, s, 2, upd(1, "a", "A"), del(2, "b"), ins(4, "d"))
	write(t, s, 1, del(1, "A"), del(3, "c")) // an old epoch: skipped
	equalLines(t, "table", dump(t, db, table), []string{"1|A", "3|c", "4|d"})
}

// TestProgressTableInTargetSchema: by default the progress table lives in
// the target's schema.
func TestProgressTableInTargetSchema(t *testing.T) {
	db := testDB(t)
	schema := uniqueName(t, db, "Sch") // mixed case: quoted
	exec1(t, db, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize())
	t.Cleanup(func() { exec1(t, db, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE") })
	cfg := sinkConfig(`"`+schema+`".Target`, "", true, false)
	s := openSink(t, cfg)
	write(t, s, 3, ins(1, "a"))
	var n int64
	if err := db.QueryRow(context.Background(), "SELECT epoch FROM "+pgx.Identifier{schema, "sluice_sink_progress"}.Sanitize()).Scan(&n); err != nil || n != 3 {
		t.Fatalf("progress row in %s: epoch %d, %v", schema, n, err)
	}
	if err := db.QueryRow(context.Background(), "SELECT count(*) FROM "+pgx.Identifier{schema, "target"}.Sanitize()).Scan(&n); err != nil || n != 1 {
		t.Fatalf("target: %d rows, %v", n, err)
	}
}

// TestCrashBeforeCommit cancels a write after its statements ran and
// before COMMIT: nothing is applied, and the retry applies the epoch once.
func TestCrashBeforeCommit(t *testing.T) {
	for _, keyed := range []bool{false, true} {
		t.Run(fmt.Sprintf("keyed=%v", keyed), func(t *testing.T) {
			db := testDB(t)
			table := uniqueName(t, db, "crash")
			cfg := sinkConfig(table, "transactional", keyed, !keyed)
			progressTable(t, db, &cfg)
			s := openSink(t, cfg)
			write(t, s, 1, ins(1, "a"))

			epoch2 := []connector.Change{ins(2, "b"), ins(3, "c")}
			if keyed {
				epoch2 = append(epoch2, upd(1, "a", "A"))
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s.(txSink).beforeCommit = func(context.Context) { cancel() }
			err := s.Write(ctx, 2, epoch2)
			if err == nil {
				t.Fatal("Write with a cancelled context succeeded")
			}
			if got := pgerror.GetCode(err); got != pgcode.QueryCanceled {
				t.Errorf("code %s (%v), want 57014", got, err)
			}
			equalLines(t, "after the cancelled write", dump(t, db, table), []string{"1|a"})
			if e, err := s.(connector.Progress).LastEpoch(context.Background()); err != nil || e != 1 {
				t.Fatalf("LastEpoch = %d, %v; want 1", e, err)
			}

			// The retry, on the same instance (which reconnects) and again on
			// a new one, applies epoch 2 once.
			s.(txSink).beforeCommit = nil
			write(t, s, 2, epoch2...)
			s2 := openSink(t, cfg)
			write(t, s2, 2, epoch2...)
			want := []string{"1|a", "2|b", "3|c"}
			if keyed {
				want[0] = "1|A"
			}
			equalLines(t, "after the retry", dump(t, db, table), want)
		})
	}
}

// TestServerKillsConnection: the sink's backend is terminated; the next
// Write fails or succeeds, and the one after reconnects; rows are exact.
func TestServerKillsConnection(t *testing.T) {
	db := testDB(t)
	table := uniqueName(t, db, "killed")
	cfg := sinkConfig(table, "", false, true)
	progressTable(t, db, &cfg)
	s := openSink(t, cfg)
	write(t, s, 1, ins(1, "a"))
	exec1(t, db, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", "sluice sink "+cfg.Name)
	ctx := context.Background()
	if err := s.Write(ctx, 2, []connector.Change{ins(2, "b")}); err != nil {
		if got := pgerror.GetCode(err); got == pgcode.Internal {
			t.Errorf("a lost connection gives an untagged error: %v", err)
		}
		write(t, s, 2, ins(2, "b"))
	}
	write(t, s, 2, ins(2, "b"))
	equalLines(t, "table", dump(t, db, table), []string{"1|a", "2|b"})
}

func TestUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	cfg := sinkConfig("out", "", true, false, "url", "postgres://postgres@"+addr+"/test?sslmode=disable")
	start := time.Now()
	_, err = Factory{}.Open(context.Background(), cfg)
	if err == nil {
		t.Fatal("Open against a closed port succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("Open took %s to fail", d)
	}
	if got := pgerror.GetCode(err); got != pgcode.ConnectionException {
		t.Fatalf("code %s (%v), want 08000", got, err)
	}
}

// proxy forwards TCP connections to PostgreSQL; while frozen it drops all
// bytes both ways, like a server (or network) that stopped answering.
type proxy struct {
	l      net.Listener
	frozen atomic.Bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
}

func startProxy(t *testing.T, upstream string) *proxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{l: l}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Add(2)
			go func() { defer p.wg.Done(); p.pipe(u, c) }()
			go func() { defer p.wg.Done(); p.pipe(c, u) }()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				return
			}
			dst.Close()
			return
		}
	}
}

// TestHungServer: a server that stops answering makes Write fail within
// write.timeout; once it answers again the next Write reconnects.
func TestHungServer(t *testing.T) {
	db := testDB(t)
	p := startProxy(t, "127.0.0.1:5432")
	table := uniqueName(t, db, "hung")
	cfg := sinkConfig(table, "", true, false,
		"url", "postgres://postgres@"+p.l.Addr().String()+"/test?sslmode=disable",
		"write.timeout", "1s")
	progressTable(t, db, &cfg)
	s := openSink(t, cfg)
	write(t, s, 1, ins(1, "a"))

	p.frozen.Store(true)
	start := time.Now()
	err := s.Write(context.Background(), 2, []connector.Change{ins(2, "b")})
	if err == nil {
		t.Fatal("Write to a hung server succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Write took %s to give up (write.timeout 1s)", d)
	}
	if got := pgerror.GetCode(err); got != pgcode.ConnectionException {
		t.Errorf("code %s (%v), want 08000", got, err)
	}
	// While it stays down, connecting fails in bounded time too.
	start = time.Now()
	if err := s.Write(context.Background(), 2, []connector.Change{ins(2, "b")}); err == nil {
		t.Fatal("Write to a hung server succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("reconnecting took %s to give up", d)
	}

	p.frozen.Store(false)
	write(t, s, 2, ins(2, "b"))
	equalLines(t, "table", dump(t, db, table), []string{"1|a", "2|b"})
}

// TestExistingTable writes into tables the user created, whose column
// types differ from the view's (int4 into bigint, varchar into text,
// extra columns with defaults): rows go through the staging table.
func TestExistingTable(t *testing.T) {
	db := testDB(t)
	for _, mode := range []string{"append", "upsert", "transactional"} {
		t.Run(mode, func(t *testing.T) {
			table := uniqueName(t, db, "existing")
			exec1(t, db, "CREATE TABLE "+table+" (extra TEXT DEFAULT 'dflt', v TEXT, id BIGINT PRIMARY KEY)")
			cfg := connector.SinkConfig{
				Name:       "s_" + table,
				ID:         1,
				Columns:    []types.Column{{Name: "id", Type: types.TInt4}, {Name: "v", Type: types.T{Fam: types.Varchar, Prec: 10}}},
				Key:        []int{0},
				AppendOnly: mode == "append",
				Options:    map[string]string{"url": testURL, "table": table, "auto.create": "false"},
				WriteMode:  mode,
			}
			if mode == "transactional" {
				progressTable(t, db, &cfg)
			}
			s := openSink(t, cfg)
			if s.(interface{ isDirect() bool }).isDirect() {
				t.Fatal("types differ but rows would be copied straight in")
			}
			write(t, s, 1, ins(1, "a"), ins(2, "b"))
			if mode != "append" {
				write(t, s, 2, upd(1, "a", "A"), del(2, "b"))
			}
			want := []string{"dflt|A|1"}
			if mode == "append" {
				want = []string{"dflt|a|1", "dflt|b|2"}
			}
			equalLines(t, "table", dump(t, db, table), want)
		})
	}
}

func TestMissingTableWithoutAutoCreate(t *testing.T) {
	db := testDB(t)
	table := uniqueName(t, db, "missing")
	cfg := sinkConfig(table, "upsert", true, false, "auto.create", "false")
	_, err := Factory{}.Open(context.Background(), cfg)
	if got := pgerror.GetCode(err); got != pgcode.UndefinedTable {
		t.Fatalf("Open: code %s (%v), want 42P01", got, err)
	}
	// A table without the key's unique index cannot take upserts.
	exec1(t, db, "CREATE TABLE "+table+" (id BIGINT, v TEXT)")
	_, err = Factory{}.Open(context.Background(), cfg)
	if got := pgerror.GetCode(err); got != pgcode.InvalidColumnReference {
		t.Fatalf("Open over a table without a unique key: code %s (%v), want 42P10", got, err)
	}
}

// TestEncodeError: a value that cannot be sent keeps its own SQLSTATE
// (not the 57014 PostgreSQL reports for a COPY the client abandoned).
func TestEncodeError(t *testing.T) {
	db := testDB(t)
	for _, mode := range []string{"append", "upsert"} {
		t.Run(mode, func(t *testing.T) {
			table := uniqueName(t, db, "encerr")
			cfg := sinkConfig(table, mode, mode == "upsert", mode == "append")
			cfg.Columns[1].Type = types.TInt4
			s := openSink(t, cfg)
			err := s.Write(context.Background(), 1, []connector.Change{{After: types.Row{types.NewInt(1), types.NewInt(1 << 40)}}})
			if got := pgerror.GetCode(err); got != pgcode.NumericValueOutOfRange {
				t.Fatalf("code %s (%v), want 22003", got, err)
			}
			if n := count(t, db, table); n != 0 {
				t.Fatalf("%d rows written", n)
			}
		})
	}
}
