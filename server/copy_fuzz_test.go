package server

import (
	"context"
	"io"
	"testing"

	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// FuzzCopyDecode feeds arbitrary bytes, cut into arbitrary messages, to
// the COPY FROM decoder in each format: it returns rows or an error with
// a SQLSTATE, never panics, and a row always has the table's width.
func FuzzCopyDecode(f *testing.F) {
	f.Add(byte(0), []byte("1\tx\n2\t\\N\n\\.\n"), uint8(3))
	f.Add(byte(1), []byte("id,v\n1,\"a\"\"b\"\n2,\n\"3\",\"x\ny\"\n"), uint8(5))
	f.Add(byte(2), []byte("PGCOPY\n\xff\r\n\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x04\x00\x00\x00\x01\xff\xff\xff\xff\xff\xff"), uint8(7))
	f.Add(byte(0), []byte("1\t\\x4\\101\\\n\r\n"), uint8(1))
	f.Fuzz(func(t *testing.T, format byte, data []byte, cut uint8) {
		x := &parser.Copy{From: true}
		switch format % 3 {
		case 1:
			x.Options = []parser.CopyOption{{Name: "format", Value: "csv", HasValue: true}, {Name: "header", Value: "match", HasValue: true}}
		case 2:
			x.Options = []parser.CopyOption{{Name: "format", Value: "binary", HasValue: true}}
		}
		opts, err := copyOptions(x)
		if err != nil {
			t.Fatal(err)
		}
		cols := []types.Column{{Name: "id", Type: types.TInt8}, {Name: "v", Type: types.TText}}
		if err := opts.resolveForce("t", cols, cols); err != nil {
			t.Fatal(err)
		}
		src := &fuzzChunks{data: data, cut: int(cut%16) + 1}
		d := &copyDecoder{ctx: context.Background(), in: &chunkReader{src: src}, opts: opts, rel: "t",
			cols: cols, idx: []int{1, 0}, width: 3}
		rows, err := d.decode()
		if err != nil {
			if e, ok := err.(interface{ Error() string }); !ok || e.Error() == "" {
				t.Fatalf("error without a message: %v", err)
			}
			return
		}
		for _, r := range rows {
			if len(r) != 3 {
				t.Fatalf("row of width %d", len(r))
			}
		}
	})
}

// fuzzChunks hands out data in pieces of cut bytes.
type fuzzChunks struct {
	data []byte
	cut  int
}

func (c *fuzzChunks) Next() ([]byte, error) {
	if len(c.data) == 0 {
		return nil, io.EOF
	}
	n := min(len(c.data), c.cut)
	b := c.data[:n]
	c.data = c.data[n:]
	return b, nil
}

func (c *fuzzChunks) Read(p []byte) (int, error) {
	b, err := c.Next()
	return copy(p, b), err
}

// TestCopyValueLimit: a COPY past maxCopyValues is refused with 54000,
// not loaded in part.
func TestCopyValueLimit(t *testing.T) {
	defer func(n int) { maxCopyValues = n }(maxCopyValues)
	maxCopyValues = 6
	opts, err := copyOptions(&parser.Copy{From: true})
	if err != nil {
		t.Fatal(err)
	}
	cols := []types.Column{{Name: "id", Type: types.TInt8}, {Name: "v", Type: types.TText}}
	for _, c := range []struct {
		data string
		ok   bool
	}{{"1\ta\n2\tb\n3\tc\n", true}, {"1\ta\n2\tb\n3\tc\n4\td\n", false}} {
		d := &copyDecoder{ctx: context.Background(), in: &chunkReader{src: &fuzzChunks{data: []byte(c.data), cut: 5}},
			opts: opts, rel: "t", cols: cols, idx: []int{0, 1}, width: 2}
		rows, err := d.decode()
		if c.ok && (err != nil || len(rows) != 3) {
			t.Errorf("%q: %d rows, %v", c.data, len(rows), err)
		}
		if !c.ok && pgerror.GetCode(err) != pgcode.ProgramLimitExceeded {
			t.Errorf("%q: got %v, want 54000", c.data, err)
		}
	}
}
