package file

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

var srcCols = []types.Column{{Name: "id", Type: types.TInt8}, {Name: "v", Type: types.TText}}

func openSrc(t *testing.T, dir string, kv ...string) *Source {
	t.Helper()
	opts := map[string]string{"connector": "file", "path": dir, "poll.interval.ms": "10"}
	for i := 0; i+1 < len(kv); i += 2 {
		opts[kv[i]] = kv[i+1]
	}
	cfg := connector.SourceConfig{Name: "fs", Columns: srcCols, Options: opts}
	if _, err := (SourceFactory{}).Validate(cfg); err != nil {
		t.Fatal(err)
	}
	s, err := SourceFactory{}.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*Source)
}

func srcRow(r types.Row) string {
	v := "NULL"
	if !r[1].IsNull() {
		v = r[1].S
	}
	return fmt.Sprintf("%d:%s", r[0].I, v)
}

// readUntil reads until want rows came (or the deadline passes).
func readUntil(t *testing.T, s *Source, want int) ([]string, error) {
	t.Helper()
	var got []string
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < want && time.Now().Before(deadline) {
		b := types.NewBatch(16)
		n, err := s.Read(context.Background(), b, min(16, want-len(got)))
		for _, r := range b.Rows[:n] {
			got = append(got, srcRow(r))
		}
		if err != nil {
			return got, err
		}
		if n == 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	return got, nil
}

// readFor reads for d and returns what came.
func readFor(t *testing.T, s *Source, d time.Duration) ([]string, error) {
	t.Helper()
	var got []string
	for deadline := time.Now().Add(d); time.Now().Before(deadline); {
		b := types.NewBatch(16)
		n, err := s.Read(context.Background(), b, 16)
		for _, r := range b.Rows[:n] {
			got = append(got, srcRow(r))
		}
		if err != nil {
			return got, err
		}
		time.Sleep(2 * time.Millisecond)
	}
	return got, nil
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func jsonLines(from, to int) string {
	var sb strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&sb, "{\"id\":%d,\"v\":\"r%d\"}\n", i, i)
	}
	return sb.String()
}

func want(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%d:r%d", i, i))
	}
	return out
}

func TestSourceFilesInOrderAndResume(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.jsonl"), jsonLines(0, 50))
	write(t, filepath.Join(dir, "b.jsonl"), jsonLines(50, 100))
	write(t, filepath.Join(dir, "ignored.txt"), "not json\n")
	s := openSrc(t, dir, "pattern", "*.jsonl")
	got, err := readUntil(t, s, 70)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want(0, len(got))) || len(got) < 70 {
		t.Fatalf("got %d rows %v", len(got), got[:min(5, len(got))])
	}
	pos := s.Position()
	k := len(got)
	s.Close()
	// A new reader from the position reads the rest exactly once, and a
	// file appearing later is picked up.
	s2 := openSrc(t, dir, "pattern", "*.jsonl")
	if err := s2.Seek(pos); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "c.jsonl"), jsonLines(100, 120))
	rest, err := readUntil(t, s2, 120-k)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rest, want(k, 120)) {
		t.Fatalf("after seek got %v", rest)
	}
}

func TestSourceGzipAndCSVHeader(t *testing.T) {
	dir := t.TempDir()
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte("id,v\n1,\"a,b\"\n2,\n"))
	zw.Close()
	write(t, filepath.Join(dir, "1.csv.gz"), zb.String())
	write(t, filepath.Join(dir, "2.csv"), "ID,V\r\n3,c\r\n")
	s := openSrc(t, dir, "encode", "CSV")
	got, err := readUntil(t, s, 3)
	if err != nil {
		t.Fatal(err)
	}
	if w := []string{"1:a,b", "2:NULL", "3:c"}; !slices.Equal(got, w) {
		t.Fatalf("got %v, want %v", got, w)
	}
	// Resume in the middle of the gzip file.
	s2 := openSrc(t, dir, "encode", "CSV")
	if _, err := readUntil(t, s2, 1); err != nil {
		t.Fatal(err)
	}
	pos := s2.Position()
	s3 := openSrc(t, dir, "encode", "CSV")
	if err := s3.Seek(pos); err != nil {
		t.Fatal(err)
	}
	got, err = readUntil(t, s3, 2)
	if err != nil || !slices.Equal(got, []string{"2:NULL", "3:c"}) {
		t.Fatalf("after seek in gzip: %v %v", got, err)
	}
	// A header naming other columns stops the source with a clear error.
	write(t, filepath.Join(dir, "3.csv"), "v,id\nx,4\n")
	_, err = readUntil(t, s3, 1)
	if e := pgerror.Flatten(err); e == nil || e.Code != pgcode.InvalidTextRepresentation || !strings.Contains(e.Message, "3.csv") {
		t.Fatalf("wrong header: %v", err)
	}
}

func TestSourceGrowingFileAndPartialLine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.jsonl")
	write(t, p, jsonLines(0, 3)+`{"id":3,"v":`)
	s := openSrc(t, dir)
	got, _ := readUntil(t, s, 3)
	if !slices.Equal(got, want(0, 3)) {
		t.Fatalf("got %v", got)
	}
	// The partial line is not read until its newline comes.
	if more, _ := readFor(t, s, 50*time.Millisecond); len(more) != 0 {
		t.Fatalf("partial line read: %v", more)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`"r3"}` + "\n" + `{"id":4,"v":"r4"}`) // no final newline
	f.Close()
	got, _ = readUntil(t, s, 1)
	if !slices.Equal(got, want(3, 4)) {
		t.Fatalf("got %v", got)
	}
	// A later file means the writer moved on: the last line is read.
	write(t, filepath.Join(dir, "b.jsonl"), jsonLines(5, 6))
	got, _ = readUntil(t, s, 2)
	if !slices.Equal(got, want(4, 6)) {
		t.Fatalf("got %v", got)
	}
}

func TestSourceBadLines(t *testing.T) {
	dir := t.TempDir()
	long := `{"id":9,"v":"` + strings.Repeat("x", 200) + `"}`
	write(t, filepath.Join(dir, "a.jsonl"), jsonLines(0, 2)+"{broken\n"+`{"id":"x"}`+"\n"+long+"\n\n"+jsonLines(2, 4))
	s := openSrc(t, dir, "on_error", "skip", "max.message.bytes", "100")
	got, err := readUntil(t, s, 4)
	if err != nil || !slices.Equal(got, want(0, 4)) {
		t.Fatalf("got %v %v", got, err)
	}
	dead := s.TakeDeadLetters(nil)
	if len(dead) != 3 {
		t.Fatalf("dead letters %+v", dead)
	}
	for i, line := range []int64{3, 4, 5} {
		if dead[i].Topic != "a.jsonl" || dead[i].Offset != line {
			t.Fatalf("dead letter %d: %+v", i, dead[i])
		}
	}
	// on_error = fail: the rows before the bad line, then an error that
	// names the file and line.
	s2 := openSrc(t, dir)
	got, err = readUntil(t, s2, 4)
	if !slices.Equal(got, want(0, 2)) {
		t.Fatalf("got %v", got)
	}
	if e := pgerror.Flatten(err); e == nil || e.Code != pgcode.InvalidTextRepresentation || !strings.Contains(e.Message, "topic a.jsonl partition 0 offset 3") {
		t.Fatalf("fail: %v", err)
	}
}

func TestSourceCheckpointFileGone(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "a.jsonl"), jsonLines(0, 4))
	s := openSrc(t, dir)
	if _, err := readUntil(t, s, 2); err != nil {
		t.Fatal(err)
	}
	pos := s.Position()
	os.Remove(filepath.Join(dir, "a.jsonl"))
	s2 := openSrc(t, dir)
	err := s2.Seek(pos)
	if e := pgerror.Flatten(err); e == nil || e.Code != pgcode.UndefinedFile {
		t.Fatalf("seek to a gone file: %v", err)
	}
}

func TestSourceValidate(t *testing.T) {
	for _, tc := range []struct {
		kv   []string
		code pgcode.Code
	}{
		{[]string{"pattern", "a/*.jsonl"}, pgcode.InvalidParameterValue},
		{[]string{"pattern", "["}, pgcode.InvalidParameterValue},
		{[]string{"on_error", "ignore"}, pgcode.InvalidParameterValue},
		{[]string{"format", "UPSERT"}, pgcode.FeatureNotSupported},
		{[]string{"encode", "AVRO"}, pgcode.FeatureNotSupported},
		{[]string{"bogus", "1"}, pgcode.InvalidParameterValue},
	} {
		opts := map[string]string{"connector": "file", "path": t.TempDir()}
		opts[tc.kv[0]] = tc.kv[1]
		_, err := (SourceFactory{}).Validate(connector.SourceConfig{Name: "fs", Columns: srcCols, Options: opts})
		if e := pgerror.Flatten(err); e == nil || e.Code != tc.code {
			t.Errorf("%v: got %v, want %s", tc.kv, err, tc.code)
		}
	}
}

// TestSourceParallelDecode: Reads of thousands of lines decode them on
// several goroutines; the rows still come in line order across files,
// bad lines in any decoder's share are passed by in order (skip) or end
// the rows exactly there (fail), and a source resumed from the position
// after a failure reads on from the line after the bad one.
func TestSourceParallelDecode(t *testing.T) {
	if srcDecoders < 2 {
		old := srcDecoders
		srcDecoders = 2
		defer func() { srcDecoders = old }()
	}
	dir := t.TempDir()
	long := `{"id":-1,"v":"` + strings.Repeat("x", 300) + `"}`
	// a.jsonl: rows 0-2999; b.jsonl: rows 3000-5999 with a broken line
	// after row 4200 and a too-long one after row 5100; c.jsonl: 6000-8999.
	write(t, filepath.Join(dir, "a.jsonl"), jsonLines(0, 3000))
	write(t, filepath.Join(dir, "b.jsonl"), jsonLines(3000, 4201)+"{\"id\":oops}\n"+jsonLines(4201, 5101)+long+"\n"+jsonLines(5101, 6000))
	write(t, filepath.Join(dir, "c.jsonl"), jsonLines(6000, 9000))
	readAll := func(s *Source, want int) ([]string, error) {
		var got []string
		deadline := time.Now().Add(10 * time.Second)
		for len(got) < want && time.Now().Before(deadline) {
			b := types.NewBatch(4096)
			n, err := s.Read(context.Background(), b, 4096)
			if n != b.Len() {
				t.Fatalf("Read said %d rows, added %d", n, b.Len())
			}
			for _, r := range b.Rows[:n] {
				got = append(got, srcRow(r))
			}
			if err != nil {
				return got, err
			}
		}
		return got, nil
	}

	s := openSrc(t, dir, "on_error", "skip", "max.message.bytes", "200")
	got, err := readAll(s, 9000)
	if err != nil || !slices.Equal(got, want(0, 9000)) {
		t.Fatalf("skip: %d rows, %v", len(got), err)
	}
	dead := s.TakeDeadLetters(nil)
	if len(dead) != 2 || dead[0].Topic != "b.jsonl" || dead[0].Offset != 1202 || dead[1].Topic != "b.jsonl" || dead[1].Offset != 2103 {
		t.Fatalf("dead letters %+v", dead)
	}

	s2 := openSrc(t, dir, "max.message.bytes", "200")
	got, err = readAll(s2, 9000)
	if !slices.Equal(got, want(0, 4201)) {
		t.Fatalf("fail: %d rows before the error, want 4201", len(got))
	}
	if e := pgerror.Flatten(err); e == nil || !strings.Contains(e.Message, "topic b.jsonl partition 0 offset 1202") {
		t.Fatalf("fail: %v", err)
	}
	if _, err := s2.Read(context.Background(), types.NewBatch(16), 16); err == nil {
		t.Fatal("a Read after the failure succeeded")
	}
	s3 := openSrc(t, dir, "max.message.bytes", "200")
	if err := s3.Seek(s2.Position()); err != nil {
		t.Fatal(err)
	}
	got, err = readAll(s3, 9000)
	if !slices.Equal(got, want(4201, 5101)) {
		t.Fatalf("resumed: rows %d..., %d of them", len(got), len(got))
	}
	if e := pgerror.Flatten(err); e == nil || !strings.Contains(e.Message, "topic b.jsonl partition 0 offset 2103") {
		t.Fatalf("resumed: %v", err)
	}
}
