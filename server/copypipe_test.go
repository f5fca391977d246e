package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"sluice/sql/parser"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// pipeDecode decodes data (COPY t (id BIGINT, v TEXT) FROM STDIN with
// options) handed over in messages of cut bytes.
func pipeDecode(t *testing.T, options []parser.CopyOption, data string, cut int) ([]types.Row, error) {
	t.Helper()
	opts, err := copyOptions(&parser.Copy{From: true, Options: options})
	if err != nil {
		t.Fatal(err)
	}
	cols := []types.Column{{Name: "id", Type: types.TInt8}, {Name: "v", Type: types.TText}}
	if err := opts.resolveForce("t", cols, cols); err != nil {
		t.Fatal(err)
	}
	d := &copyDecoder{ctx: context.Background(), in: &chunkReader{src: &fuzzChunks{data: []byte(data), cut: cut}},
		opts: opts, rel: "t", cols: cols, idx: []int{0, 1}, width: 2}
	return d.decode()
}

// TestCopyPipelineOrder: the decode pipeline returns every row in input
// order across many chunks and message cuts, and of several bad lines it
// reports the first, with its line number, whether a worker (a bad value)
// or the reader (bad UTF-8, a stray carriage return) finds it, counting
// the lines a quoted CSV field spans.
func TestCopyPipelineOrder(t *testing.T) {
	n := 3*copyChunkLines + 17
	csv := []parser.CopyOption{{Name: "format", Value: "csv", HasValue: true}}
	lines := func(edit map[int]string) string {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			if l, ok := edit[i]; ok {
				b.WriteString(l + "\n")
				continue
			}
			fmt.Fprintf(&b, "%d\tv%d\n", i, i)
		}
		return b.String()
	}
	for _, cut := range []int{7, 4093, 1 << 16} {
		rows, err := pipeDecode(t, nil, lines(nil), cut)
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		if len(rows) != n {
			t.Fatalf("cut %d: %d rows, want %d", cut, len(rows), n)
		}
		for i, r := range rows {
			if r[0].I != int64(i+1) || r[1].S != fmt.Sprintf("v%d", i+1) {
				t.Fatalf("cut %d: row %d is (%d, %s)", cut, i, r[0].I, r[1].S)
			}
		}
	}
	// CSV: row 100's quoted field spans two lines, so row k is on line k+1
	// after it; the bad value of row 5000 is on line 5001.
	var b strings.Builder
	for i := 1; i <= n; i++ {
		switch i {
		case 100:
			fmt.Fprintf(&b, "%d,\"two\nlines\"\n", i)
		case 5000:
			b.WriteString("abc,x\n")
		default:
			fmt.Fprintf(&b, "%d,v%d\n", i, i)
		}
	}
	_, err := pipeDecode(t, csv, b.String(), 4096)
	wantErr(t, "csv", err, `22P02 invalid input syntax for type bigint: "abc" | COPY t, line 5001, column id: "abc"`)
	rows, err := pipeDecode(t, csv, strings.Replace(b.String(), "abc,x", "5000,x", 1), 333)
	if err != nil || len(rows) != n || rows[99][1].S != "two\nlines" || rows[n-1][0].I != int64(n) {
		t.Fatalf("csv: %d rows, %v", len(rows), err)
	}

	for _, c := range []struct {
		name string
		edit map[int]string
		want string
	}{
		{"two bad values", map[int]string{9000: "x9000\tv", 3000: "x3000\tv"},
			`22P02 invalid input syntax for type bigint: "x3000" | COPY t, line 3000, column id: "x3000"`},
		{"bad value before bad UTF-8", map[int]string{9000: "9000\tv\xff", 3000: "x3000\tv"},
			`22P02 invalid input syntax for type bigint: "x3000" | COPY t, line 3000, column id: "x3000"`},
		{"bad UTF-8 before a bad value", map[int]string{5000: "5000\tv\xff", 5001: "x5001\tv"},
			`22021 invalid byte sequence for encoding "UTF8": 0xff | COPY t, line 5000`},
		{"bad value just before a carriage return", map[int]string{copyChunkLines: "x\tv", copyChunkLines + 1: "1\tv\r"},
			fmt.Sprintf(`22P02 invalid input syntax for type bigint: "x" | COPY t, line %d, column id: "x"`, copyChunkLines)},
		{"carriage return then bad value", map[int]string{copyChunkLines: "1\tv\r", copyChunkLines + 1: "x\tv"},
			fmt.Sprintf(`22P04 literal carriage return found in data | COPY t, line %d`, copyChunkLines)},
		{"extra column in the last chunk", map[int]string{n: "1\tv\tw"},
			fmt.Sprintf(`22P04 extra data after last expected column | COPY t, line %d: "1	v	w"`, n)},
	} {
		_, err := pipeDecode(t, nil, lines(c.edit), 1000)
		wantErr(t, c.name, err, c.want)
	}
}

func wantErr(t *testing.T, name string, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want %s", name, want)
		return
	}
	e := pgerror.Flatten(err)
	if got := fmt.Sprintf("%s %s | %s", e.Code, e.Message, e.Where); got != want {
		t.Errorf("%s:\n got %s\nwant %s", name, got, want)
	}
}
