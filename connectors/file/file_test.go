// Tests of the file sink: option validation (path and primary_key 22023,
// FORMAT PLAIN over a retracting input and CSV with DEBEZIUM/UPSERT
// 0A000, write modes); the exact lines of JSON, CSV (with quoting of
// commas, quotes and newlines, and a header in every file), DEBEZIUM and
// UPSERT files; a replayed epoch, from the same or a new instance, leaves
// its file as it was; leftover temporary files are removed at Open;
// LastEpoch is the highest part file; reading all part files in name
// order gives every change exactly once, in epoch order.
package file_test

import (
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sluice/connectors/file"
	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

var columns = []types.Column{
	{Name: "id", Type: types.TInt8},
	{Name: "name", Type: types.TText},
	{Name: "ok", Type: types.TBool},
}

func row(id int64, name string, ok bool) types.Row {
	return types.Row{types.NewInt(id), types.NewString(name), types.NewBool(ok)}
}

func config(dir string) connector.SinkConfig {
	return connector.SinkConfig{
		Name: "f", ID: 7, Columns: columns, AppendOnly: true,
		Options: map[string]string{"connector": "file", "path": dir},
	}
}

func open(t *testing.T, cfg connector.SinkConfig) *file.Sink {
	t.Helper()
	s, err := file.Factory{}.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*file.Sink)
}

func write(t *testing.T, s *file.Sink, epoch uint64, changes ...connector.Change) {
	t.Helper()
	if err := s.Write(context.Background(), epoch, changes); err != nil {
		t.Fatalf("Write(epoch %d): %v", epoch, err)
	}
}

func appends(rows ...types.Row) []connector.Change {
	var cs []connector.Change
	for _, r := range rows {
		cs = append(cs, connector.Change{After: r})
	}
	return cs
}

// listDir returns the names in dir but the owner record.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Name() == ".sluice-sink" { // the owner record (owner.go)
			continue
		}
		names = append(names, e.Name())
	}
	return names
}

func checkFile(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("%s:\n%s\nwant:\n%s", filepath.Base(path), got, want)
	}
}

func checkLastEpoch(t *testing.T, s *file.Sink, want uint64) {
	t.Helper()
	got, err := s.LastEpoch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("LastEpoch = %d, want %d", got, want)
	}
}

func TestValidate(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		format, encode, mode string
		appendOnly, key      bool
		wantMode             string // "" when an error is expected
		code                 pgcode.Code
		mention              string
	}{
		{appendOnly: true, wantMode: "append"},
		{format: "plain", encode: "csv", appendOnly: true, wantMode: "append"},
		{format: "DEBEZIUM", wantMode: "append"},
		{format: "UPSERT", key: true, wantMode: "upsert"},
		{format: "UPSERT", key: true, mode: "upsert", wantMode: "upsert"},
		{appendOnly: false, code: pgcode.FeatureNotSupported, mention: "FORMAT DEBEZIUM"},
		{format: "UPSERT", code: pgcode.InvalidParameterValue, mention: "primary_key"},
		{format: "DEBEZIUM", encode: "CSV", code: pgcode.FeatureNotSupported, mention: "CSV"},
		{format: "UPSERT", encode: "CSV", key: true, code: pgcode.FeatureNotSupported, mention: "CSV"},
		{encode: "AVRO", appendOnly: true, code: pgcode.FeatureNotSupported, mention: "AVRO"},
		{appendOnly: true, mode: "upsert", code: pgcode.InvalidParameterValue, mention: "write_mode"},
		{format: "UPSERT", key: true, mode: "append", code: pgcode.InvalidParameterValue, mention: "write_mode"},
	} {
		cfg := config(dir)
		cfg.Format, cfg.Encode, cfg.WriteMode, cfg.AppendOnly = tc.format, tc.encode, tc.mode, tc.appendOnly
		if tc.key {
			cfg.Key = []int{0}
		}
		plan, err := file.Factory{}.Validate(cfg)
		if tc.wantMode != "" {
			if err != nil {
				t.Errorf("%+v: %v", tc, err)
			} else if plan.WriteMode != tc.wantMode || plan.Guarantee != connector.ExactlyOnce {
				t.Errorf("%+v: plan %+v", tc, plan)
			}
			continue
		}
		if err == nil {
			t.Errorf("%+v: no error", tc)
		} else if code := pgerror.GetCode(err); code != tc.code || !strings.Contains(err.Error()+pgerror.Flatten(err).Hint, tc.mention) {
			t.Errorf("%+v: error %q (%s, hint %q)", tc, err, code, pgerror.Flatten(err).Hint)
		}
	}
	cfg := config("")
	delete(cfg.Options, "path")
	if _, err := (file.Factory{}).Validate(cfg); pgerror.GetCode(err) != pgcode.InvalidParameterValue || !strings.Contains(err.Error(), "path") {
		t.Errorf("no path: %v", err)
	}
	// Open fails when path is a regular file.
	p := filepath.Join(dir, "plain-file")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (file.Factory{}).Open(context.Background(), config(p)); pgerror.GetCode(err) != pgcode.IOError {
		t.Errorf("path is a file: %v", err)
	}
}

func TestJSONLines(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b") // created by Open
	s := open(t, config(dir))
	checkLastEpoch(t, s, 0)
	write(t, s, 1, appends(row(1, "x", true), row(2, `q"uote`, false),
		types.Row{types.NewInt(3), types.Null, types.Null})...)
	write(t, s, 2, appends(row(4, "é\n", true))...)
	if got, want := listDir(t, dir), []string{"part-00000000000000000001.jsonl", "part-00000000000000000002.jsonl"}; !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	checkFile(t, filepath.Join(dir, "part-00000000000000000001.jsonl"),
		`{"id":1,"name":"x","ok":true}`+"\n"+
			`{"id":2,"name":"q\"uote","ok":false}`+"\n"+
			`{"id":3,"name":null,"ok":null}`+"\n")
	checkFile(t, filepath.Join(dir, "part-00000000000000000002.jsonl"), `{"id":4,"name":"é\n","ok":true}`+"\n")
	checkLastEpoch(t, s, 2)
}

func TestCSVQuoting(t *testing.T) {
	dir := t.TempDir()
	cfg := config(dir)
	cfg.Encode = "CSV"
	cfg.Columns = []types.Column{{Name: "id", Type: types.TInt8}, {Name: "a,b", Type: types.TText}, {Name: "ok", Type: types.TBool}}
	s := open(t, cfg)
	rows := []types.Row{
		row(1, "plain", true),
		row(2, "with,comma", false),
		row(3, `say "hi"`, true),
		row(4, "two\nlines", true),
		row(5, "", false),
		{types.NewInt(6), types.Null, types.Null},
	}
	write(t, s, 1, appends(rows...)...)
	write(t, s, 2, appends(row(7, "cr\rhere", true))...)
	p1 := filepath.Join(dir, "part-00000000000000000001.csv")
	checkFile(t, p1, "id,\"a,b\",ok\n"+
		"1,plain,t\n"+
		"2,\"with,comma\",f\n"+
		"3,\"say \"\"hi\"\"\",t\n"+
		"4,\"two\nlines\",t\n"+
		"5,\"\",f\n"+
		"6,,\n")
	checkFile(t, filepath.Join(dir, "part-00000000000000000002.csv"), "id,\"a,b\",ok\n7,\"cr\rhere\",t\n")

	// A standard CSV reader gets the values back.
	f, err := os.Open(p1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"id", "a,b", "ok"}, {"1", "plain", "t"}, {"2", "with,comma", "f"}, {"3", `say "hi"`, "t"},
		{"4", "two\nlines", "t"}, {"5", "", "f"}, {"6", "", ""}}
	if !slices.EqualFunc(recs, want, slices.Equal) {
		t.Errorf("csv records %q, want %q", recs, want)
	}
}

func TestDebeziumAndUpsert(t *testing.T) {
	changes := []connector.Change{
		{After: row(1, "a", true)},
		{Before: row(1, "a", true), After: row(1, "b", true)},
		{Before: row(2, "c", false)},
	}
	dir := t.TempDir()
	cfg := config(dir)
	cfg.AppendOnly, cfg.Format = false, "DEBEZIUM"
	write(t, open(t, cfg), 9, changes...)
	checkFile(t, filepath.Join(dir, "part-00000000000000000009.jsonl"),
		`{"before":null,"after":{"id":1,"name":"a","ok":true},"op":"c","source":{"epoch":9}}`+"\n"+
			`{"before":{"id":1,"name":"a","ok":true},"after":{"id":1,"name":"b","ok":true},"op":"u","source":{"epoch":9}}`+"\n"+
			`{"before":{"id":2,"name":"c","ok":false},"after":null,"op":"d","source":{"epoch":9}}`+"\n")

	dir = t.TempDir()
	cfg = config(dir)
	cfg.AppendOnly, cfg.Format, cfg.Key = false, "UPSERT", []int{0, 1}
	write(t, open(t, cfg), 9, changes...)
	checkFile(t, filepath.Join(dir, "part-00000000000000000009.jsonl"),
		`{"id":1,"name":"a","ok":true}`+"\n"+
			`{"id":1,"name":"b","ok":true}`+"\n"+
			`{"__op":"delete","id":2,"name":"c"}`+"\n")

	// FORMAT PLAIN refuses a retraction rather than writing it as a row.
	dir = t.TempDir()
	s := open(t, config(dir))
	if err := s.Write(context.Background(), 1, changes[2:]); err == nil {
		t.Error("FORMAT PLAIN wrote a delete")
	}
	if names := listDir(t, dir); len(names) != 0 {
		t.Errorf("files after a failed Write: %v", names)
	}
}

func TestReplayIsHarmless(t *testing.T) {
	dir := t.TempDir()
	s := open(t, config(dir))
	write(t, s, 3, appends(row(1, "A", true))...)
	p := filepath.Join(dir, "part-00000000000000000003.jsonl")
	want := `{"id":1,"name":"A","ok":true}` + "\n"
	write(t, s, 3, appends(row(1, "B", true), row(2, "B", true))...)
	checkFile(t, p, want)

	s2 := open(t, config(dir))
	checkLastEpoch(t, s2, 3)
	write(t, s2, 3, appends(row(1, "C", true))...)
	checkFile(t, p, want)
	if names := listDir(t, dir); len(names) != 1 {
		t.Errorf("files %v, want only the part file of epoch 3", names)
	}
}

func TestLeftoverTmpRemoved(t *testing.T) {
	dir := t.TempDir()
	s := open(t, config(dir))
	write(t, s, 1, appends(row(1, "x", true))...)
	// A crash between writing and renaming epoch 2's file.
	for _, name := range []string{".tmp-2-123456", ".tmp-3-abc"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(`{"id":99}`+"\n{partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkLastEpoch(t, s, 1)
	s2 := open(t, config(dir))
	if got, want := listDir(t, dir), []string{"part-00000000000000000001.jsonl"}; !slices.Equal(got, want) {
		t.Fatalf("after Open: %v, want %v", got, want)
	}
	write(t, s2, 2, appends(row(2, "y", true))...)
	checkFile(t, filepath.Join(dir, "part-00000000000000000002.jsonl"), `{"id":2,"name":"y","ok":true}`+"\n")
	checkLastEpoch(t, s2, 2)
}

// TestEveryChangeOnce writes epochs 1..25 (past the 9 → 10 boundary where
// unpadded names would sort wrong), replaying each one, from a new
// instance every few epochs, and reads the part files in name order.
func TestEveryChangeOnce(t *testing.T) {
	dir := t.TempDir()
	s := open(t, config(dir))
	var want []string
	next := int64(0)
	for epoch := uint64(1); epoch <= 25; epoch++ {
		var rows []types.Row
		for i := 0; i < int(epoch%4)+1; i++ {
			next++
			rows = append(rows, row(next, "r", true))
			want = append(want, `{"id":`+itoa(next)+`,"name":"r","ok":true}`)
		}
		write(t, s, epoch, appends(rows...)...)
		write(t, s, epoch, appends(rows...)...) // the replay after a failed acknowledgement
		if epoch%5 == 0 {
			s = open(t, config(dir))
			write(t, s, epoch, appends(rows...)...)
		}
	}
	checkLastEpoch(t, s, 25)
	names := listDir(t, dir) // ReadDir sorts by name
	if len(names) != 25 {
		t.Fatalf("%d files: %v", len(names), names)
	}
	var got []string
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")...)
	}
	if !slices.Equal(got, want) {
		t.Errorf("lines in name order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func itoa(i int64) string { return string(types.AppendText(nil, types.NewInt(i), types.TInt8)) }

// BenchmarkWrite100k writes epochs of 100k JSON lines, one file each.
func BenchmarkWrite100k(b *testing.B) {
	const n = 100_000
	dir := b.TempDir()
	s, err := file.Factory{}.Open(context.Background(), config(dir))
	if err != nil {
		b.Fatal(err)
	}
	rows := make([]types.Row, n)
	for i := range rows {
		rows[i] = row(int64(i), "some text value", i%2 == 0)
	}
	changes := appends(rows...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.Write(context.Background(), uint64(i+1), changes); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "changes/s")
}

// TestWireLines: a FORMAT PLAIN sink's WireEncoder gives the lines Write
// writes, and WriteWire of those lines (in pieces) makes the same part file
// as Write of the changes, for JSON and CSV (the header comes from
// WriteWire); a replayed WriteWire leaves the file as it was. DEBEZIUM and
// UPSERT have no encoder (their lines depend on the epoch or the key); the
// encoder refuses a retraction.
func TestWireLines(t *testing.T) {
	rows := []types.Row{row(1, "x", true), row(2, "with,comma \"q\"", false), {types.NewInt(3), types.Null, types.Null}, row(4, "é\n", true)}
	for _, enc := range []string{"JSON", "CSV"} {
		t.Run(enc, func(t *testing.T) {
			viaWrite, viaWire := t.TempDir(), t.TempDir()
			cfg := config(viaWrite)
			cfg.Encode = enc
			write(t, open(t, cfg), 1, appends(rows...)...)
			cfg.Options = map[string]string{"connector": "file", "path": viaWire}
			wire := file.Factory{}.WireEncoder(cfg)
			if wire == nil {
				t.Fatal("no wire encoder for FORMAT PLAIN")
			}
			var pieces [][]byte
			for _, r := range rows {
				p, err := wire(nil, connector.Change{After: r})
				if err != nil {
					t.Fatal(err)
				}
				pieces = append(pieces, p)
			}
			if _, err := wire(nil, connector.Change{Before: rows[0]}); err == nil {
				t.Fatal("the wire encoder took a retraction")
			}
			s := open(t, cfg)
			for range 2 { // the second is a replay
				if err := s.WriteWire(context.Background(), 1, pieces); err != nil {
					t.Fatal(err)
				}
			}
			name := "part-00000000000000000001." + map[string]string{"JSON": "jsonl", "CSV": "csv"}[enc]
			want, err := os.ReadFile(filepath.Join(viaWrite, name))
			if err != nil {
				t.Fatal(err)
			}
			checkFile(t, filepath.Join(viaWire, name), string(want))
			if len(want) < 40 {
				t.Fatalf("the file written by Write is %q", want)
			}
			checkLastEpoch(t, s, 1)
		})
	}
	for _, f := range []string{"DEBEZIUM", "UPSERT"} {
		cfg := config(t.TempDir())
		cfg.Format, cfg.Key, cfg.AppendOnly = f, []int{0}, false
		if (file.Factory{}).WireEncoder(cfg) != nil {
			t.Errorf("FORMAT %s has a wire encoder", f)
		}
	}
}
