// Tests of the datagen source connector: option validation (unknown
// options, bad kinds and numbers, min > max, end < start) fails with
// SQLSTATE 22023; rows are a pure function of their index, so two readers
// agree and Seek(Position()) continues identically; sequence columns with
// an end bound the source (io.EOF after exactly end-start+1 rows);
// datagen.rows.per.second = '0' is unthrottled while a rate limits a
// Read; random values respect min/max and text length.
package datagen_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"sluice/connectors/datagen"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func cols(spec ...string) []types.Column {
	byName := map[string]types.T{
		"int": types.TInt8, "int4": types.TInt4, "int2": types.TInt2, "float": types.TFloat8, "real": types.TFloat4,
		"numeric": types.TNumeric, "text": types.TText, "varchar": types.TVarchar, "bool": types.TBool,
		"ts": types.TTimestamp, "tstz": types.TTimestampTZ, "date": types.TDate,
	}
	var out []types.Column
	for _, s := range spec {
		name, typ, _ := strings.Cut(s, " ")
		t, ok := byName[typ]
		if !ok {
			panic(typ)
		}
		out = append(out, types.Column{Name: name, Type: t})
	}
	return out
}

func open(t *testing.T, columns []types.Column, opts map[string]string) connector.Source {
	t.Helper()
	src, err := datagen.Factory{}.Open(context.Background(), connector.SourceConfig{Name: "g", Columns: columns, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	return src
}

// readN reads exactly n rows (failing on EOF or after many empty reads).
func readN(t *testing.T, src connector.Source, n int) []types.Row {
	t.Helper()
	var rows []types.Row
	for empty := 0; len(rows) < n; {
		b := types.NewBatch(64)
		k, err := src.Read(context.Background(), b, min(64, n-len(rows)))
		if err != nil {
			t.Fatalf("Read after %d rows: %v", len(rows), err)
		}
		if k != b.Len() {
			t.Fatalf("Read returned %d, added %d", k, b.Len())
		}
		for i, r := range b.Rows {
			if b.Diffs[i] != 1 {
				t.Fatalf("diff %d", b.Diffs[i])
			}
			rows = append(rows, r)
		}
		if k == 0 {
			if empty++; empty > 1000 {
				t.Fatal("no rows from an unthrottled source")
			}
		}
	}
	return rows
}

func fmtRow(r types.Row) string {
	s := make([]string, len(r))
	for i, d := range r {
		s[i] = fmt.Sprintf("%d/%v/%d/%d/%d/%q", d.K, d.Float(), d.I, d.X, d.M, d.S)
	}
	return strings.Join(s, " ")
}

func TestValidate(t *testing.T) {
	two := cols("id int", "v text")
	for _, tc := range []struct {
		name string
		cols []types.Column
		opts map[string]string
		code pgcode.Code // "" = valid
		msg  string
	}{
		{"defaults", two, nil, "", ""},
		{"full", two, map[string]string{
			"connector": "datagen", "datagen.rows.per.second": "0", "datagen.split.num": "1",
			"fields.id.kind": "sequence", "fields.id.start": "1", "fields.id.end": "10",
			"fields.v.kind": "random", "fields.v.length": "3", "fields.v.seed": "9",
			"format": "plain", "encode": "json",
		}, "", ""},
		{"kind is case-insensitive", two, map[string]string{"fields.id.kind": "SEQUENCE"}, "", ""},
		{"unknown option", two, map[string]string{"datagen.rows.per.minute": "1"}, pgcode.InvalidParameterValue, "datagen.rows.per.minute"},
		{"option of an undeclared column", two, map[string]string{"fields.nope.kind": "random"}, pgcode.InvalidParameterValue, "fields.nope.kind"},
		{"bad kind", two, map[string]string{"fields.id.kind": "zipf"}, pgcode.InvalidParameterValue, "fields.id.kind"},
		{"sequence of booleans", cols("b bool"), map[string]string{"fields.b.kind": "sequence"}, pgcode.InvalidParameterValue, "fields.b.kind"},
		{"min above max", two, map[string]string{"fields.id.min": "10", "fields.id.max": "5"}, pgcode.InvalidParameterValue, "fields.id.min"},
		{"end below start", two, map[string]string{"fields.id.kind": "sequence", "fields.id.start": "10", "fields.id.end": "9"}, pgcode.InvalidParameterValue, "fields.id.end"},
		{"end equal to start", two, map[string]string{"fields.id.kind": "sequence", "fields.id.start": "10", "fields.id.end": "10"}, "", ""},
		{"start not an integer", two, map[string]string{"fields.id.start": "1.5"}, pgcode.InvalidParameterValue, "fields.id.start"},
		{"max not a number", two, map[string]string{"fields.id.max": "lots"}, pgcode.InvalidParameterValue, "fields.id.max"},
		{"negative seed", two, map[string]string{"fields.id.seed": "-1"}, pgcode.InvalidParameterValue, "fields.id.seed"},
		{"negative length", two, map[string]string{"fields.v.length": "-1"}, pgcode.InvalidParameterValue, "fields.v.length"},
		{"huge length", two, map[string]string{"fields.v.length": "100000000"}, pgcode.InvalidParameterValue, "fields.v.length"},
		{"negative rate", two, map[string]string{"datagen.rows.per.second": "-1"}, pgcode.InvalidParameterValue, "datagen.rows.per.second"},
		{"rate not a number", two, map[string]string{"datagen.rows.per.second": "fast"}, pgcode.InvalidParameterValue, "datagen.rows.per.second"},
		{"no columns", nil, nil, pgcode.InvalidObjectDefinition, "columns"},
		{"smallint max out of range", cols("a int2"), map[string]string{"fields.a.max": "100000"}, pgcode.InvalidParameterValue, "fields.a.min"},
		{"int min out of range", cols("a int4"), map[string]string{"fields.a.min": "-3000000000"}, pgcode.InvalidParameterValue, "fields.a.min"},
		{"int at its limits", cols("a int4"), map[string]string{"fields.a.min": "-2147483648", "fields.a.max": "2147483647"}, "", ""},
		{"bigint at its limits", cols("a int"), map[string]string{"fields.a.min": "-9223372036854775808", "fields.a.max": "9223372036854775807"}, "", ""},
		{"bigint max out of range", cols("a int"), map[string]string{"fields.a.max": "1e19"}, pgcode.InvalidParameterValue, "fields.a.min"},
		{"smallint sequence start out of range", cols("a int2"), map[string]string{"fields.a.kind": "sequence", "fields.a.start": "40000"}, pgcode.InvalidParameterValue, "fields.a.start"},
		{"int sequence end out of range", cols("a int4"), map[string]string{"fields.a.kind": "sequence", "fields.a.start": "2147483647", "fields.a.end": "2147483648"}, pgcode.InvalidParameterValue, "fields.a.end"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := connector.SourceConfig{Name: "g", Columns: tc.cols, Options: tc.opts}
			got, err := datagen.Factory{}.Validate(cfg)
			_, openErr := datagen.Factory{}.Open(context.Background(), cfg)
			if tc.code == "" {
				if err != nil || openErr != nil {
					t.Fatalf("Validate = %v, Open = %v", err, openErr)
				}
				if len(got) != len(tc.cols) {
					t.Fatalf("Validate returned %v", got)
				}
				return
			}
			for _, e := range []error{err, openErr} {
				if c := pgerror.GetCode(e); c != tc.code {
					t.Fatalf("error %v has code %s, want %s", e, c, tc.code)
				}
				if !strings.Contains(e.Error(), tc.msg) {
					t.Fatalf("error %q does not name %q", e, tc.msg)
				}
			}
		})
	}
}

var allKinds = cols("id int", "i int", "i4 int4", "f float", "r real", "n numeric", "s text", "vc varchar", "b bool", "ts ts", "tz tstz", "d date")

func TestRowsArePureFunctionOfIndex(t *testing.T) {
	opts := map[string]string{
		"datagen.rows.per.second": "0",
		"fields.id.kind":          "sequence", "fields.id.start": "100",
		"fields.i.min": "-5", "fields.i.max": "5", "fields.s.length": "25",
	}
	a := readN(t, open(t, allKinds, opts), 500)
	b := readN(t, open(t, allKinds, opts), 500)
	for i := range a {
		if fmtRow(a[i]) != fmtRow(b[i]) {
			t.Fatalf("row %d differs between readers:\n%s\n%s", i, fmtRow(a[i]), fmtRow(b[i]))
		}
		if a[i][0].I != int64(100+i) {
			t.Fatalf("row %d: id %d", i, a[i][0].I)
		}
	}
	// Random columns vary from row to row.
	distinct := map[string]bool{}
	for _, r := range a {
		distinct[r[6].S] = true
	}
	if len(distinct) < 490 {
		t.Fatalf("only %d distinct random texts in 500 rows", len(distinct))
	}

	// Seek(Position()) on a new reader continues exactly where another is.
	src := open(t, allKinds, opts)
	readN(t, src, 137)
	pos := src.(connector.Seekable).Position()
	other := open(t, allKinds, opts)
	if err := other.(connector.Seekable).Seek(pos); err != nil {
		t.Fatal(err)
	}
	x, y := readN(t, src, 100), readN(t, other, 100)
	for i := range x {
		if fmtRow(x[i]) != fmtRow(y[i]) || fmtRow(x[i]) != fmtRow(a[137+i]) {
			t.Fatalf("row %d after seek differs", 137+i)
		}
	}
	// Seeking back replays.
	if err := other.(connector.Seekable).Seek(pos); err != nil {
		t.Fatal(err)
	}
	if z := readN(t, other, 1); fmtRow(z[0]) != fmtRow(a[137]) {
		t.Fatal("seeking back does not replay")
	}
	if err := other.(connector.Seekable).Seek([]byte{1, 2}); pgerror.GetCode(err) != pgcode.DataCorrupted {
		t.Fatalf("Seek of a bad position: %v", err)
	}

	// A different seed gives different values.
	opts2 := map[string]string{"datagen.rows.per.second": "0", "fields.i.seed": "12345", "fields.i.min": "-5", "fields.i.max": "5", "fields.id.kind": "sequence", "fields.id.start": "100"}
	c := readN(t, open(t, allKinds, opts2), 100)
	same := 0
	for i := range c {
		if c[i][1].I == a[i][1].I {
			same++
		}
	}
	if same > 50 {
		t.Fatalf("%d of 100 values equal under another seed", same)
	}
}

func TestBoundedSequence(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  map[string]string
		first int64
		rows  int
	}{
		{"one column", map[string]string{"fields.a.kind": "sequence", "fields.a.start": "5", "fields.a.end": "1004"}, 5, 1000},
		{"single row", map[string]string{"fields.a.kind": "sequence", "fields.a.start": "-3", "fields.a.end": "-3"}, -3, 1},
		{"shortest sequence bounds", map[string]string{
			"fields.a.kind": "sequence", "fields.a.start": "1", "fields.a.end": "300",
			"fields.b.kind": "sequence", "fields.b.start": "0", "fields.b.end": "99",
		}, 1, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts["datagen.rows.per.second"] = "0"
			src := open(t, cols("a int", "b int"), tc.opts)
			rows := readN(t, src, tc.rows)
			for i, r := range rows {
				if r[0].I != tc.first+int64(i) {
					t.Fatalf("row %d: a = %d", i, r[0].I)
				}
			}
			for i := 0; i < 3; i++ {
				n, err := src.Read(context.Background(), types.NewBatch(8), 8)
				if n != 0 || !errors.Is(err, io.EOF) {
					t.Fatalf("Read after the last row = %d, %v; want io.EOF", n, err)
				}
			}
			// A reader seeked to the end is exhausted too.
			other := open(t, cols("a int", "b int"), tc.opts)
			if err := other.(connector.Seekable).Seek(src.(connector.Seekable).Position()); err != nil {
				t.Fatal(err)
			}
			if _, err := other.Read(context.Background(), types.NewBatch(8), 8); !errors.Is(err, io.EOF) {
				t.Fatalf("Read after seeking to the end = %v", err)
			}
		})
	}

	// Without an end the source does not stop.
	src := open(t, cols("a int"), map[string]string{"datagen.rows.per.second": "0", "fields.a.kind": "sequence"})
	if rows := readN(t, src, 5000); rows[4999][0].I != 4999 {
		t.Fatalf("last row %d", rows[4999][0].I)
	}
}

func TestRate(t *testing.T) {
	// Unthrottled: a Read fills the batch.
	src := open(t, cols("a int"), map[string]string{"datagen.rows.per.second": "0"})
	b := types.NewBatch(1000)
	if n, err := src.Read(context.Background(), b, 1000); n != 1000 || err != nil {
		t.Fatalf("unthrottled Read = %d, %v", n, err)
	}

	// One row per thousand seconds: the first Read gets the row due at
	// time zero, and nothing more is due for the rest of the test.
	src = open(t, cols("a int"), map[string]string{"datagen.rows.per.second": "0.001"})
	b = types.NewBatch(100)
	if n, err := src.Read(context.Background(), b, 100); n != 1 || err != nil {
		t.Fatalf("first throttled Read = %d, %v", n, err)
	}
	for i := 0; i < 3; i++ {
		if n, err := src.Read(context.Background(), b, 100); n != 0 || err != nil {
			t.Fatalf("throttled Read = %d, %v; want 0, nil", n, err)
		}
	}
	// The default rate (10 rows/s) is throttled too.
	src = open(t, cols("a int"), nil)
	if n, _ := src.Read(context.Background(), types.NewBatch(1000), 1000); n >= 1000 {
		t.Fatalf("default rate gave %d rows at once", n)
	}
	// After a Seek the budget restarts from the new position.
	src = open(t, cols("a int"), map[string]string{"datagen.rows.per.second": "0.001", "fields.a.kind": "sequence"})
	if err := src.(connector.Seekable).Seek([]byte{0, 0, 0, 0, 0, 0, 0, 50}); err != nil {
		t.Fatal(err)
	}
	b = types.NewBatch(10)
	if n, _ := src.Read(context.Background(), b, 10); n != 1 || b.Rows[0][0].I != 50 {
		t.Fatalf("after Seek: %d rows, first %v", n, b.Rows)
	}
}

func TestRandomRanges(t *testing.T) {
	opts := map[string]string{
		"datagen.rows.per.second": "0",
		"fields.i.min":            "-3", "fields.i.max": "4",
		"fields.i4.min": "7", "fields.i4.max": "7",
		"fields.f.min": "-1.5", "fields.f.max": "2.5",
		"fields.n.min": "10", "fields.n.max": "20",
		"fields.s.length": "13", "fields.vc.length": "0",
	}
	rows := readN(t, open(t, allKinds, opts), 3000)
	seen := map[int64]int{}
	bools := map[bool]int{}
	for idx, r := range rows {
		i, i4, f, n, s, vc := r[1], r[2], r[3], r[5], r[6], r[7]
		if i.K != types.KInt || i.I < -3 || i.I > 4 {
			t.Fatalf("row %d: i = %+v outside [-3, 4]", idx, i)
		}
		seen[i.I]++
		if i4.I != 7 {
			t.Fatalf("row %d: i4 = %d with min = max = 7", idx, i4.I)
		}
		if f.K != types.KFloat || f.Float() < -1.5 || f.Float() > 2.5 {
			t.Fatalf("row %d: f = %v outside [-1.5, 2.5]", idx, f.Float())
		}
		if n.K != types.KDecimal {
			t.Fatalf("row %d: numeric is %+v", idx, n)
		}
		if v := types.DecToFloat(n); v < 10 || v > 20 {
			t.Fatalf("row %d: n = %s outside [10, 20]", idx, types.DecString(n))
		}
		if s.K != types.KString || len(s.S) != 13 {
			t.Fatalf("row %d: s = %q, want 13 characters", idx, s.S)
		}
		for _, c := range s.S {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				t.Fatalf("row %d: s = %q has %q", idx, s.S, c)
			}
		}
		if vc.S != "" {
			t.Fatalf("row %d: vc = %q with length 0", idx, vc.S)
		}
		bools[r[8].Bool()]++
		if r[9].K != types.KTimestamp || r[10].K != types.KTimestampTZ || r[11].K != types.KDate {
			t.Fatalf("row %d: date/time kinds %d %d %d", idx, r[9].K, r[10].K, r[11].K)
		}
		if idx > 0 && r[9].I <= rows[idx-1][9].I {
			t.Fatalf("row %d: timestamps do not increase", idx)
		}
	}
	// Every value of the range shows up, both ends included.
	for v := int64(-3); v <= 4; v++ {
		if seen[v] == 0 {
			t.Fatalf("value %d never generated: %v", v, seen)
		}
	}
	if bools[true] == 0 || bools[false] == 0 {
		t.Fatalf("booleans %v", bools)
	}
	// Bounds at the ends of bigint: values spread over the range, never
	// outside it (float64 cannot hold 2^63-1 exactly).
	for _, tc := range []struct{ min, max string }{
		{"-9223372036854775808", "9223372036854775807"},
		{"0", "9223372036854775807"},
		{"-9223372036854775808", "-1"},
	} {
		r := readN(t, open(t, cols("a int"), map[string]string{"datagen.rows.per.second": "0", "fields.a.min": tc.min, "fields.a.max": tc.max}), 200)
		var neg, pos int
		for _, x := range r {
			if (tc.min == "0" && x[0].I < 0) || (tc.max == "-1" && x[0].I > -1) {
				t.Fatalf("[%s, %s] gave %d", tc.min, tc.max, x[0].I)
			}
			if x[0].I < 0 {
				neg++
			} else {
				pos++
			}
		}
		if tc.max == "9223372036854775807" && tc.min != "0" && (neg == 0 || pos == 0) {
			t.Fatalf("full bigint range: %d negative, %d positive", neg, pos)
		}
	}

	// Default text length is 10, default ints in [0, 1000].
	r := readN(t, open(t, cols("s text", "i int"), map[string]string{"datagen.rows.per.second": "0"}), 200)
	for _, x := range r {
		if len(x[0].S) != 10 || x[1].I < 0 || x[1].I > 1000 {
			t.Fatalf("defaults: %q %d", x[0].S, x[1].I)
		}
	}
}

func TestSequenceKinds(t *testing.T) {
	src := open(t, cols("a int2", "b numeric", "c text", "d float"), map[string]string{
		"datagen.rows.per.second": "0",
		"fields.a.kind":           "sequence", "fields.a.start": "-2",
		"fields.b.kind": "sequence", "fields.b.start": "10",
		"fields.c.kind": "sequence", "fields.c.start": "7",
		"fields.d.kind": "sequence",
	})
	rows := readN(t, src, 3)
	got := make([]string, len(rows))
	for i, r := range rows {
		got[i] = fmt.Sprintf("%d %s %s %v", r[0].I, types.DecString(r[1]), r[2].S, r[3].Float())
	}
	if want := "[-2 10 7 0 -1 11 8 1 0 12 9 2]"; fmt.Sprint(got) != want {
		t.Fatalf("got %v, want %s", got, want)
	}
}
