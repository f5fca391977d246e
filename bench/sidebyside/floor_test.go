package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sluice/connectors/nexmark"
)

// The floor's scanner decodes what encoding/json decodes: generated
// lines and hand-made variants (spaces, key order, escapes, unknown keys).
func TestDecodeBidMatchesJSON(t *testing.T) {
	g, err := nexmark.NewGenerator(nexmark.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	var lines [][]byte
	var b nexmark.Bid
	for i := int64(0); len(lines) < 5000; i++ {
		if g.Kind(i) == nexmark.KindBid {
			g.Bid(i, &b)
			lines = append(lines, appendBid(nil, &b))
		}
	}
	lines = append(lines,
		[]byte(` { "date_time" : "2026-02-28T23:59:59.999Z" , "price": 10001,"auction":-5, "bidder":7 } `),
		[]byte(`{"auction":1,"bidder":2,"price":3,"channel":"a\"b\\c","date_time":"1969-12-31T23:59:59.500Z","extra":"\u00e9"}`),
		[]byte(`{"auction":1,"bidder":2,"price":3,"date_time":"2024-02-29T12:00:00.123456+02:00"}`),
		[]byte(`{"extra":"x\ty","date_time":"2000-01-01T00:00:00.000Z","auction":9223372036854775807,"bidder":0,"price":0}`),
	)
	for _, line := range lines {
		var got floorBid
		if err := decodeBid(line, &got); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var want struct {
			Auction, Bidder, Price int64
			DateTime               string `json:"date_time"`
		}
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatal(err)
		}
		ts, err := time.Parse(time.RFC3339Nano, want.DateTime)
		if err != nil {
			t.Fatal(err)
		}
		if got.auction != want.Auction || got.bidder != want.Bidder || got.price != want.Price ||
			got.micros != ts.UnixMicro() || string(got.dateTime) != want.DateTime {
			t.Fatalf("%s: decoded %+v (date_time %q), encoding/json %+v (%d µs)", line, got, got.dateTime, want, ts.UnixMicro())
		}
	}
	for _, bad := range []string{``, `[]`, `{"auction":1`, `{"auction":1,"bidder":2}`, `{"auction":"x","date_time":"2000-01-01T00:00:00.000Z"}`,
		`{"date_time":"2000-13-01T00:00:00.000Z"}`} {
		var got floorBid
		if err := decodeBid([]byte(bad), &got); err == nil {
			t.Errorf("%q decoded as %+v, want an error", bad, got)
		}
	}
}

// The floor's outputs, read back, equal the reference computed from the
// generator; a changed row is caught.
func TestFloorMatchesReference(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "bids.jsonl")
	ref, err := generate(input, 250_000) // 27 s of event time: 3 windows
	if err != nil {
		t.Fatal(err)
	}
	if ref.w1.rows == 0 || ref.w1.rows == ref.bids || len(ref.w2Closed.windows) == 0 || len(ref.w2Closed.windows) == len(ref.w2.windows) {
		t.Fatalf("degenerate reference: %d bids, W1 %d rows, W2 %d windows, %d closed", ref.bids, ref.w1.rows, ref.w2.rows, ref.w2Closed.rows)
	}
	for _, c := range []struct {
		name string
		run  func(*os.File, *bufio.Writer) (int64, error)
		want results
	}{
		{"w1", func(f *os.File, w *bufio.Writer) (int64, error) { return floorW1(f, w) }, ref.w1},
		{"w2", func(f *os.File, w *bufio.Writer) (int64, error) { return floorW2(f, w) }, ref.w2},
	} {
		in, err := os.Open(input)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		w := bufio.NewWriter(&out)
		n, err := c.run(in, w)
		in.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if n != ref.bids {
			t.Fatalf("%s read %d bids, want %d", c.name, n, ref.bids)
		}
		outPath := filepath.Join(dir, c.name+".jsonl")
		if err := os.WriteFile(outPath, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := readResults(c.name, []string{outPath})
		if err != nil {
			t.Fatal(err)
		}
		if d := diff(c.want, got); d != "" {
			t.Fatalf("%s: %s", c.name, d)
		}
		// One changed value must show.
		text := out.String()
		first := text[:strings.IndexByte(text, '\n')]
		changed := strings.Replace(first, `"auction":`, `"auction":1`, 1)
		if err := os.WriteFile(outPath, []byte(changed+text[len(first):]), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err = readResults(c.name, []string{outPath}); err != nil {
			t.Fatal(err)
		}
		if diff(c.want, got) == "" {
			t.Fatalf("%s: a changed row went unnoticed", c.name)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	for _, s := range []string{"1970-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999Z", "2000-02-29T10:20:30.456Z",
		"1900-03-01T00:00:00.000Z", "2100-12-31T23:59:59.001Z", "0001-01-01T00:00:00.000Z", "2015-07-15T00:00:00.5+01:00"} {
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseTimestamp([]byte(s))
		if err != nil || got != want.UnixMicro() {
			t.Errorf("%s: %d, %v; want %d", s, got, err, want.UnixMicro())
		}
	}
}
