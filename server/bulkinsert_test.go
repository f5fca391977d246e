package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sluice/server/pgwire"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// rowsWriter collects a statement's rows as text and its command tag.
type rowsWriter struct {
	discard
	rows []string
	tag  string
}

func (w *rowsWriter) Row(r types.Row) error {
	var f []string
	for _, d := range r {
		f = append(f, fmt.Sprintf("%v", d))
	}
	w.rows = append(w.rows, strings.Join(f, "|"))
	return nil
}

func (w *rowsWriter) Complete(tag string) error { w.tag = tag; return nil }

// openTest opens an engine in a temporary directory and a session on it.
func openTest(t *testing.T) (*Engine, pgwire.Session) {
	t.Helper()
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	s, err := e.Connect(context.Background(), pgwire.StartupInfo{User: "sluice", Database: "sluice"})
	if err != nil {
		t.Fatal(err)
	}
	return e, s
}

// outcome is what a statement did: its tag or its error's fields.
func outcome(tag string, err error) string {
	if err == nil {
		return tag
	}
	e := pgerror.Flatten(err)
	return fmt.Sprintf("%s %s | %s | %s", e.Code, e.Message, e.Detail, e.Where)
}

// TestBulkInsertMatchesRowPath runs the same statements on two engines:
// on one outside a transaction block (the bulk path for COPY and INSERT of
// at least bulkMin rows), on the other inside BEGIN … COMMIT (the row
// path). Every statement must end the same way (the same tag, or the same
// error with the same code, message, detail and context: NOT NULL, CHECK,
// UNIQUE, primary-key duplicates within the statement and against
// committed rows, bad input, whichever comes first), and afterwards the
// tables must hold the same rows and the same write-set bytes.
func TestBulkInsertMatchesRowPath(t *testing.T) {
	eb, bulk := openTest(t)
	er, row := openTest(t)
	ctx := context.Background()
	run := func(s pgwire.Session, sql string, data []byte, block bool) string {
		t.Helper()
		if block {
			if err := s.SimpleQuery(ctx, "BEGIN", &discard{}); err != nil {
				t.Fatal(err)
			}
		}
		w := &copyWriter{data: data}
		err := s.SimpleQuery(ctx, sql, w)
		if block {
			end := "COMMIT"
			if err != nil {
				end = "ROLLBACK"
			}
			if err := s.SimpleQuery(ctx, end, &discard{}); err != nil {
				t.Fatal(err)
			}
		}
		return outcome(w.tag, err)
	}
	ddl := []string{
		`CREATE TABLE k (id BIGINT PRIMARY KEY, code TEXT UNIQUE, qty INT NOT NULL CHECK (qty >= 0), note TEXT DEFAULT 'none', n NUMERIC(8,2))`,
		`CREATE TABLE h (a INT NOT NULL, b TEXT)`,
		// k2 has no UNIQUE: its COPYs take the spilled path (copyspill.go)
		`CREATE TABLE k2 (id BIGINT PRIMARY KEY, code TEXT, qty INT NOT NULL CHECK (qty >= 0), note TEXT DEFAULT 'none', n NUMERIC(8,2))`,
		`INSERT INTO k2 VALUES (5000, 'c5000', 1, 'old', 1.5), (5001, NULL, 2, NULL, NULL)`,
		`CREATE TABLE c2 (x INT, y TEXT, z INT, PRIMARY KEY (y, x))`,
		`INSERT INTO k VALUES (5000, 'c5000', 1, 'old', 1.5), (5001, NULL, 2, NULL, NULL)`,
	}
	for _, q := range ddl {
		for _, s := range []pgwire.Session{bulk, row} {
			if err := s.SimpleQuery(ctx, q, &discard{}); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	// csv builds n rows of k from id base; edit changes line i (1-based).
	csv := func(base, n int, edit map[int]string) []byte {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			if l, ok := edit[i]; ok {
				b.WriteString(l + "\n")
				continue
			}
			fmt.Fprintf(&b, "%d,c%d,%d,note %d,%d.%02d\n", base+i, base+i, i%7, i, i, i%100)
		}
		return []byte(b.String())
	}
	values := func(base, n int, edit map[int]string) string {
		var v []string
		for i := 1; i <= n; i++ {
			if l, ok := edit[i]; ok {
				v = append(v, l)
				continue
			}
			v = append(v, fmt.Sprintf("(%d, 'v%d', %d)", base+i, base+i, i%5))
		}
		return strings.Join(v, ", ")
	}
	copyK := "COPY k FROM STDIN (FORMAT csv)"
	copyK2 := "COPY k2 FROM STDIN (FORMAT csv)"
	// Many small runs, merged: keys out of order across runs.
	defer func(n int) { spillRunBytes = n }(spillRunBytes)
	spillRunBytes = 4000
	// Rows in key order go to many small sstables.
	defer func(n uint64) { spillFileBytes = n }(spillFileBytes)
	spillFileBytes = 4000
	shuffled := func(b []byte) []byte {
		lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		for i := range lines {
			j := (i * 7919) % len(lines)
			lines[i], lines[j] = lines[j], lines[i]
		}
		return []byte(strings.Join(lines, "\n") + "\n")
	}
	cases := []struct {
		name, sql string
		data      []byte
		ok        bool
	}{
		{"good", copyK, csv(0, 3000, nil), true},
		{"null at 300, dup at 400", copyK, csv(10000, 900, map[int]string{300: "10300,x300,,n,1", 400: "10001,x400,1,n,1"}), false},
		{"dup in statement at 280, null at 500", copyK, csv(20000, 900, map[int]string{280: "20010,x280,1,n,1", 500: "20500,x500,,n,1"}), false},
		{"dup of committed at 290", copyK, csv(30000, 900, map[int]string{290: "5000,x290,1,n,1"}), false},
		{"check at 270, dup at 270", copyK, csv(40000, 900, map[int]string{270: "40001,x270,-1,n,1"}), false},
		{"dup at 260, check at 261", copyK, csv(45000, 900, map[int]string{260: "45001,x260,1,n,1", 261: "45261,x261,-3,n,1"}), false},
		{"unique code in statement", copyK, csv(50000, 900, map[int]string{600: "50600,c50002,1,n,1", 100: "50100,x,,n,1"}), false},
		{"unique code committed", copyK, csv(60000, 900, map[int]string{700: "60700,c5000,1,n,1"}), false},
		{"bad input after a null", copyK, csv(70000, 900, map[int]string{10: "70010,x,,n,1", 850: "70850,x,abc,n,1"}), false},
		{"bad numeric", copyK, csv(75000, 900, map[int]string{333: "75333,x,1,n,1234567.5"}), false},
		{"missing column", copyK, csv(80000, 900, map[int]string{444: "80444,x,1"}), false},
		{"good after failures", copyK, csv(90000, 5000, nil), true},
		{"spill: good", copyK2, csv(0, 3000, nil), true},
		{"spill: shuffled", copyK2, shuffled(csv(200000, 3000, nil)), true},
		{"spill: null at 300, dup at 400", copyK2, csv(10000, 900, map[int]string{300: "10300,x300,,n,1", 400: "10001,x400,1,n,1"}), false},
		{"spill: dup in statement at 280, null at 500", copyK2, csv(20000, 900, map[int]string{280: "20010,x280,1,n,1", 500: "20500,x500,,n,1"}), false},
		{"spill: dup of committed at 290", copyK2, csv(30000, 900, map[int]string{290: "5000,x290,1,n,1"}), false},
		{"spill: dup of copied, shuffled", copyK2, shuffled(csv(300000, 900, map[int]string{290: "200017,x290,1,n,1"})), false},
		{"spill: dup late in statement, first across runs", copyK2, csv(310000, 2000, map[int]string{1900: "310003,x,1,n,1", 1950: "310001,x,1,n,1"}), false},
		{"spill: check at 270, dup at 270", copyK2, csv(40000, 900, map[int]string{270: "40001,x270,-1,n,1"}), false},
		{"spill: dup at 260, check at 261", copyK2, csv(45000, 900, map[int]string{260: "45001,x260,1,n,1", 261: "45261,x261,-3,n,1"}), false},
		{"spill: bad input after a null", copyK2, csv(70000, 900, map[int]string{10: "70010,x,,n,1", 850: "70850,x,abc,n,1"}), false},
		{"spill: small", copyK2, csv(400000, 100, nil), true},
		{"spill: in key order, dup of committed at 301", copyK2, csv(399700, 900, nil), false},
		{"spill: in key order, null at 500, dup of committed at 301", copyK2, csv(399700, 900, map[int]string{500: "400200,x,,n,1"}), false},
		{"spill: in key order, check at 200, dup of committed at 301", copyK2, csv(399700, 900, map[int]string{200: "399900,x,-1,n,1"}), false},
		{"spill: in key order, then one out of order", copyK2, csv(710000, 3000, map[int]string{2900: "709999,x,1,n,1"}), true},
		{"spill: in key order, then a dup out of order", copyK2, csv(720000, 3000, map[int]string{2500: "720005,x,1,n,1"}), false},
		{"spill: in key order, equal keys", copyK2, csv(730000, 3000, map[int]string{2: "730001,x,1,n,1"}), false},
		{"insert with defaults", "INSERT INTO k (id, code, qty) VALUES " + values(100000, 400, nil), nil, true},
		{"insert null at 399", "INSERT INTO k (id, code, qty) VALUES " + values(110000, 400, map[int]string{399: "(110399, 'q', NULL)"}), nil, false},
		{"insert dup of copied", "INSERT INTO k (id, code, qty) VALUES " + values(120000, 400, map[int]string{300: "(90001, 'q', 1)"}), nil, false},
		// INSERT … SELECT into k2 takes the spilled path, several chunks
		{"insert select: spill", "INSERT INTO k2 (id, code, qty) SELECT g + 500000, 's' || g, g % 9 FROM generate_series(1, 9000) g", nil, true},
		{"insert select: spill, defaults and all columns", "INSERT INTO k2 SELECT g + 520000, NULL, 1, CASE WHEN g % 2 = 0 THEN 'even' END, g / 100.0 FROM generate_series(1, 5000) g", nil, true},
		{"insert select: dup of committed at 6000", "INSERT INTO k2 (id, code, qty) SELECT CASE WHEN g = 6000 THEN 5001 ELSE g + 540000 END, 'd', 1 FROM generate_series(1, 7000) g", nil, false},
		{"insert select: dup in statement, across chunks", "INSERT INTO k2 (id, code, qty) SELECT (g % 5000) + 560000, 'd', 1 FROM generate_series(1, 6000) g", nil, false},
		{"insert select: null at 4500", "INSERT INTO k2 (id, code, qty) SELECT g + 580000, 'n', CASE WHEN g = 4500 THEN NULL ELSE 1 END FROM generate_series(1, 6000) g", nil, false},
		{"insert select: check at 300", "INSERT INTO k2 (id, code, qty) SELECT g + 600000, 'n', CASE WHEN g = 300 THEN -1 ELSE 1 END FROM generate_series(1, 600) g", nil, false},
		{"insert select: error in the query at 5000", "INSERT INTO k2 (id, code, qty) SELECT g + 620000, 'n', 10 / (g - 5000) FROM generate_series(1, 6000) g", nil, false},
		{"insert select: from itself", "INSERT INTO k2 (id, code, qty, note) SELECT id + 1000000, code, qty, 'copy' FROM k2 WHERE id < 600000", nil, true},
		{"insert select: small", "INSERT INTO k2 (id, code, qty) SELECT g + 640000, 's', 1 FROM generate_series(1, 100) g", nil, true},
		{"no key", "COPY h FROM STDIN (FORMAT csv)", []byte(strings.Repeat("1,a\n2,b\n2,b\n", 200)), true},
		{"no key, null at 500", "COPY h FROM STDIN (FORMAT csv)", []byte(strings.Repeat("1,a\n", 499) + ",b\n" + strings.Repeat("3,c\n", 10)), false},
		{"composite key dup", "COPY c2 FROM STDIN (FORMAT csv)", []byte(func() string {
			var b strings.Builder
			for i := 0; i < 600; i++ {
				fmt.Fprintf(&b, "%d,y%d,%d\n", i%300, i/300, i)
			}
			b.WriteString("7,y1,0\n")
			return b.String()
		}()), false},
		{"composite key", "COPY c2 FROM STDIN (FORMAT csv)", []byte(func() string {
			var b strings.Builder
			for i := 0; i < 600; i++ {
				fmt.Fprintf(&b, "%d,y%d,%d\n", i%300, i/300, i)
			}
			return b.String()
		}()), true},
	}
	for _, c := range cases {
		before := bulkCommits.Load()
		got := run(bulk, c.sql, c.data, false)
		want := run(row, c.sql, c.data, true)
		if got != want {
			t.Errorf("%s:\n bulk: %s\n  row: %s", c.name, got, want)
		}
		if ok := !strings.Contains(got, "|"); ok != c.ok {
			t.Errorf("%s: %s (want success %v)", c.name, got, c.ok)
		}
		if c.ok && !strings.HasSuffix(c.name, "small") && bulkCommits.Load() != before+1 {
			t.Errorf("%s: the statement did not take the bulk path", c.name)
		}
	}
	for _, tab := range []string{"k", "k2", "h", "c2"} {
		q := "SELECT * FROM " + tab + " ORDER BY 1, 2"
		wb, wr := &rowsWriter{}, &rowsWriter{}
		if err := bulk.SimpleQuery(ctx, q, wb); err != nil {
			t.Fatal(err)
		}
		if err := row.SimpleQuery(ctx, q, wr); err != nil {
			t.Fatal(err)
		}
		if strings.Join(wb.rows, "\n") != strings.Join(wr.rows, "\n") {
			t.Errorf("%s: %d rows on the bulk path, %d on the row path, or different rows", tab, len(wb.rows), len(wr.rows))
		}
		if len(wb.rows) == 0 {
			t.Errorf("%s: empty", tab)
		}
	}
	// The exact row counts: k holds the 2 first rows, 3000 + 5000 copied
	// and 400 inserted; k2 the 2 first, 3000 + 3000 + 100 copied, 9000 +
	// 5000 inserted by a SELECT, those 20,102 again from itself, 100, and
	// 3000 copied in key order with one key out of order; h 600; c2 600.
	for tab, n := range map[string]int64{"k": 8402, "k2": 43304, "h": 600, "c2": 600} {
		w := &rowsWriter{}
		if err := bulk.SimpleQuery(ctx, "SELECT count(*) FROM "+tab, w); err != nil || len(w.rows) != 1 || w.rows[0] != fmt.Sprintf("%v", types.NewInt(n)) {
			t.Errorf("%s: count %v, %v; want %d", tab, w.rows, err, n)
		}
	}
	// The write sets hold the same bytes (keys and encoded rows); rows
	// without a key take the same row ids.
	for _, tab := range []string{"k", "k2", "h", "c2"} {
		dump := func(e *Engine) string {
			id := tableID(t, e, tab)
			var b strings.Builder
			if err := e.db.Scan(storage.Key(storage.SpaceWrite, id), func(k, v []byte) error {
				fmt.Fprintf(&b, "%x=%x\n", k, v)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			return b.String()
		}
		if a, b := dump(eb), dump(er); a != b {
			t.Errorf("%s: the write sets differ (%d and %d bytes of dump)", tab, len(a), len(b))
		}
	}
}

func tableID(t *testing.T, e *Engine, name string) uint64 {
	t.Helper()
	e.tablesMu.Lock()
	defer e.tablesMu.Unlock()
	for id, tw := range e.tables {
		if tw.name == name {
			return id
		}
	}
	t.Fatalf("no table %s", name)
	return 0
}

// gatedCopy is a COPY's input that stops after its first message until
// gate closes (reached closes when it stops).
type gatedCopy struct {
	copyWriter
	gate, reached chan struct{}
}

func (w *gatedCopy) CopyIn(ctx context.Context, format int16, ncols int) (pgwire.CopyReader, error) {
	return &gatedChunks{chunks: chunks{data: w.data}, w: w}, nil
}

type gatedChunks struct {
	chunks
	w    *gatedCopy
	sent int
}

func (c *gatedChunks) Next() ([]byte, error) {
	if c.sent == 1 {
		close(c.w.reached)
		<-c.w.gate
	}
	c.sent++
	return c.chunks.Next()
}

// TestCopySpillRebasesLog: statements that write the table while a
// spilled COPY (rows in key order) is reading move the table's log on;
// the COPY's log entries go after theirs, so a view over the table sees
// every row once.
func TestCopySpillRebasesLog(t *testing.T) {
	e, s := openTest(t)
	ctx := context.Background()
	s2, err := e.Connect(ctx, pgwire.StartupInfo{User: "sluice", Database: "sluice"})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE rb (id BIGINT PRIMARY KEY, v TEXT)`,
		`CREATE MATERIALIZED VIEW rbv AS SELECT count(*) AS n, sum(id) AS s FROM rb`,
		`INSERT INTO rb VALUES (-1, 'before')`,
	} {
		if err := s.SimpleQuery(ctx, q, &discard{}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	const rows = 20000
	var data strings.Builder
	want := int64(-1)
	for i := 1; i <= rows; i++ {
		fmt.Fprintf(&data, "%d,row %d\n", i, i)
		want += int64(i)
	}
	w := &gatedCopy{copyWriter: copyWriter{data: []byte(data.String())}, gate: make(chan struct{}), reached: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- s.SimpleQuery(ctx, "COPY rb FROM STDIN (FORMAT csv)", w) }()
	<-w.reached
	for i := 2; i <= 4; i++ {
		q := fmt.Sprintf("INSERT INTO rb VALUES (%d, 'during')", -i)
		if err := s2.SimpleQuery(ctx, q, &discard{}); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		want -= int64(i)
	}
	close(w.gate)
	if err := <-done; err != nil || w.tag != fmt.Sprintf("COPY %d", rows) {
		t.Fatalf("COPY: %q %v", w.tag, err)
	}
	for _, q := range []string{"SELECT count(*), sum(id)::bigint FROM rb", "SELECT n, s::bigint FROM rbv"} {
		rw := &rowsWriter{}
		if err := s.SimpleQuery(ctx, q, rw); err != nil {
			t.Fatal(err)
		}
		if got, exp := strings.Join(rw.rows, ";"), fmt.Sprintf("%v|%v", types.NewInt(rows+4), types.NewInt(want)); got != exp {
			t.Errorf("%s: %s, want %s", q, got, exp)
		}
	}
}
