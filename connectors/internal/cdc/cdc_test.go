package cdc

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"sluice/exec/connector"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// TestPositionFraming: the framing round-trips every field kind, and a
// truncated, extended or foreign encoding is refused.
func TestPositionFraming(t *testing.T) {
	k1, k2 := "42", ""
	enc := func(key []*string) []byte {
		b := AppendHeader(3, Snapshot)
		b = AppendString(b, "binlog.000002")
		b = AppendUvarint(b, 1<<40)
		return AppendKey(b, key)
	}
	for _, key := range [][]*string{nil, {}, {&k1, nil, &k2}} {
		b := enc(key)
		d, v, ph, ok := NewDecoder(b, 3)
		if !ok || v != 3 || ph != Snapshot {
			t.Fatalf("header: %d %d %v", v, ph, ok)
		}
		if s, n, k := d.String(), d.Uvarint(), d.Key(); s != "binlog.000002" || n != 1<<40 || !reflect.DeepEqual(k, key) || !d.End() {
			t.Fatalf("decoded %q %d %v (end %v), want key %v", s, n, k, d.End(), key)
		}
		for n := range len(b) {
			d, _, _, ok := NewDecoder(b[:n], 3)
			if ok {
				_, _, _ = d.String(), d.Uvarint(), d.Key()
				if d.End() {
					t.Fatalf("a %d-byte prefix of %v decoded", n, b)
				}
			}
		}
		d, _, _, _ = NewDecoder(append(b, 0), 3)
		if _, _, _ = d.String(), d.Uvarint(), d.Key(); d.End() {
			t.Fatal("a trailing byte was accepted")
		}
	}
	for _, bad := range [][]byte{nil, {1}, {0, 0}, {4, 0}, {1, 3}} {
		if _, _, _, ok := NewDecoder(bad, 3); ok {
			t.Errorf("header %v accepted", bad)
		}
	}
	// A key count past the column limit is refused before allocating.
	d, _, _, _ := NewDecoder(AppendUvarint(AppendHeader(1, Stream), maxKeyColumns+2), 1)
	if d.Key(); d.End() {
		t.Fatal("a huge key count decoded")
	}
	if err := BadPosition("x-cdc"); pgerror.GetCode(err) != "XX001" || err.Error() != "bad x-cdc source position" {
		t.Fatalf("BadPosition: %v", err)
	}
}

var testSpec = &Spec{
	Connector: "x-cdc", Upstream: "X", DefaultPort: 9,
	Known:    []string{"hostname", "port", "username", "password", "database.name", "table.name", "flag"},
	Allowed:  func(f types.Family) bool { return f != types.Interval },
	TypeHint: "declare it as TEXT",
}

// TestParse: the shared options, their defaults and each refusal with
// its SQLSTATE.
func TestParse(t *testing.T) {
	cols := []types.Column{{Name: "id", Type: types.TInt8}, {Name: "v", Type: types.TText}}
	base := func() map[string]string {
		return map[string]string{"connector": "x-cdc", "hostname": " h ", "username": "u", "database.name": "d", "table.name": "t", "password": " p "}
	}
	o, err := Parse(connector.SourceConfig{Name: "s", Columns: cols, Key: []int{0}, Options: base()}, testSpec)
	if err != nil {
		t.Fatal(err)
	}
	if o.Host != "h" || o.Port != 9 || o.User != "u" || o.Password != " p " || o.Database != "d" || o.Table != "t" || !reflect.DeepEqual(o.KeyNames(), []string{"id"}) {
		t.Fatalf("parsed %+v", o)
	}
	if v, err := testSpec.ParseBool(o, "flag", true); !v || err != nil {
		t.Fatalf("flag default: %v, %v", v, err)
	}
	for _, tc := range []struct {
		set     map[string]string
		cols    []types.Column
		key     []int
		code    string
		mention string
	}{
		{map[string]string{"hostname": ""}, cols, []int{0}, "22023", "x-cdc option hostname: is required"},
		{map[string]string{"table.name": " "}, cols, []int{0}, "22023", "option table.name: is required"},
		{map[string]string{"port": "65536"}, cols, []int{0}, "22023", `"65536" is not a port`},
		{map[string]string{"nope": "x"}, cols, []int{0}, "22023", "option nope: unknown option"},
		{map[string]string{"format": "DEBEZIUM"}, cols, []int{0}, "0A000", "does not take FORMAT DEBEZIUM"},
		{map[string]string{"encode": "AVRO"}, cols, []int{0}, "0A000", "does not take ENCODE AVRO"},
		{nil, cols, nil, "42P17", "a x-cdc source needs a PRIMARY KEY"},
		{nil, nil, nil, "42P17", "a x-cdc source needs declared columns"},
		{nil, []types.Column{{Name: "i", Type: types.TInterval}}, []int{0}, "0A000", "cannot read column i of type interval"},
	} {
		opts := base()
		for k, v := range tc.set {
			opts[k] = v
		}
		_, err := Parse(connector.SourceConfig{Name: "s", Columns: tc.cols, Key: tc.key, Options: opts}, testSpec)
		if err == nil || string(pgerror.GetCode(err)) != tc.code || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%v: %v, want %s mentioning %q", tc.set, err, tc.code, tc.mention)
		}
	}
	opts := base()
	opts["flag"] = "maybe"
	o, _ = Parse(connector.SourceConfig{Name: "s", Columns: cols, Key: []int{0}, Options: opts}, testSpec)
	if _, err := testSpec.ParseBool(o, "flag", true); err == nil || !strings.Contains(err.Error(), `"maybe" is not 'true' or 'false'`) {
		t.Fatalf("ParseBool: %v", err)
	}
	if !SameSet([]string{"a", "b"}, []string{"b", "a"}) || SameSet([]string{"a"}, []string{"b"}) || SameSet([]string{"a"}, nil) {
		t.Fatal("SameSet")
	}
}

// pos is a test position: transactions committed and rows of the next
// one emitted.
type pos struct{ txns, skip uint64 }

func encodePos(p pos) []byte {
	return AppendUvarint(AppendUvarint(AppendHeader(1, Stream), p.txns), p.skip)
}

func decodePos(b []byte) (pos, error) {
	d, _, _, ok := NewDecoder(b, 1)
	p := pos{txns: d.Uvarint(), skip: d.Uvarint()}
	if !ok || !d.End() {
		return pos{}, BadPosition("test")
	}
	return p, nil
}

// upstream is an in-process log of transactions (each a list of row
// values) that a session streams through Txn from the worker's position.
type upstream struct {
	txns  [][]int64
	fails int // sessions that fail with a transient error first
}

var errTransient = errors.New("connection reset")

func (u *upstream) session(ctx context.Context, w *Worker[pos]) error {
	if u.fails > 0 {
		u.fails--
		return errTransient
	}
	w.Healthy()
	start := w.Pos()
	txn := NewTxn(w, start.skip)
	done := start.txns
	at := func(skip uint64) pos { return pos{txns: done, skip: skip} }
	for _, vals := range u.txns[start.txns:] {
		txn.Begin()
		for _, v := range vals {
			if err := txn.Add(ctx, []types.Row{{types.NewInt(v)}}, []int64{1}, at); err != nil {
				return err
			}
		}
		done++
		if err := txn.Commit(ctx, at(0)); err != nil {
			return err
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

// readAll reads r until it has n rows (or a deadline passes).
func readAll(t *testing.T, r *Reader[pos], n int) []int64 {
	t.Helper()
	var got []int64
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < n {
		var b types.Batch
		k, err := r.Read(context.Background(), &b, 700)
		if err != nil {
			t.Fatal(err)
		}
		for i := range k {
			got = append(got, b.Rows[i][0].I)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d rows, want %d", len(got), n)
		}
	}
	return got
}

// TestReaderResume: rows arrive in order through retries; a position
// taken mid-transaction (a transaction larger than a chunk) resumes
// without losing or repeating a row; a fatal error ends the source.
func TestReaderResume(t *testing.T) {
	var big []int64
	for i := range 2500 {
		big = append(big, int64(100+i))
	}
	u := &upstream{txns: [][]int64{{1, 2, 3}, big, {4}}, fails: 2}
	released := 0
	cfg := Config[pos]{Session: u.session, Transient: func(err error) bool { return errors.Is(err, errTransient) },
		Encode: encodePos, Decode: decodePos, Release: func() { released++ }}
	r := NewReader(cfg)
	first := readAll(t, r, 3+1024)
	mid := r.Position()
	if p, _ := decodePos(mid); p != (pos{txns: 1, skip: 1024}) {
		t.Fatalf("position after %d rows: %+v", len(first), p)
	}
	rest := readAll(t, r, 2500-1024+1)
	all := append(first, rest...)
	// Seek back to the middle of the big transaction: the rest again, once.
	if err := r.Seek(mid); err != nil {
		t.Fatal(err)
	}
	again := readAll(t, r, 2500-1024+1)
	if !reflect.DeepEqual(again, rest) {
		t.Fatalf("after Seek: %d rows, first %v, want %d from %v", len(again), again[:3], len(rest), rest[:3])
	}
	want := append(append([]int64{1, 2, 3}, big...), 4)
	if !reflect.DeepEqual(all, want) {
		t.Fatalf("read %d rows, want %d", len(all), len(want))
	}
	if err := r.Seek([]byte{9}); err == nil {
		t.Fatal("a bad position was accepted")
	}
	if err := r.Close(); err != nil || r.Close() != nil || released != 1 {
		t.Fatalf("Close: released %d times", released)
	}

	// A fatal error reaches Read and stays.
	fatal := errors.New("schema change")
	r = NewReader(Config[pos]{Session: func(context.Context, *Worker[pos]) error { return fatal },
		Transient: func(error) bool { return false }, Encode: encodePos, Decode: decodePos})
	defer r.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var b types.Batch
		_, err := r.Read(context.Background(), &b, 10)
		if errors.Is(err, fatal) {
			break
		}
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("Read: %v, want %v", err, fatal)
		}
	}
	var b types.Batch
	if _, err := r.Read(context.Background(), &b, 10); !errors.Is(err, fatal) {
		t.Fatalf("Read after the error: %v", err)
	}
}
