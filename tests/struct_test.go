package tests

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestStructFileSourceSink: a JSON source's nested objects decode into
// STRUCT columns by field name (nested STRUCTs, arrays and jsonb inside,
// missing fields and nulls NULL), a view reads their fields, a JSON sink
// writes the STRUCTs back as objects, and after a SIGKILL and restart the
// source's and view's STRUCT types are the same (the catalog keeps them).
func TestStructFileSourceSink(t *testing.T) {
	root := t.TempDir()
	in, out := filepath.Join(root, "in"), filepath.Join(root, "out")
	if err := os.MkdirAll(in, 0o755); err != nil {
		t.Fatal(err)
	}
	lines := `{"id":1,"u":{"name":"ann","age":31,"addr":{"city":"Oslo","zip":"0150"},"tags":["a","b"],"extra":{"k":[1,2]}}}
{"id":2,"u":{"NAME":"bob","addr":null,"unknown":7}}
{"id":3,"u":null}
`
	if err := os.WriteFile(filepath.Join(in, "a.jsonl"), []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := StartServer(t, Options{ExtraArgs: []string{"--file-root", root}})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE SOURCE people (id BIGINT, u STRUCT<name VARCHAR, age INT, addr STRUCT<city TEXT, zip TEXT>, tags TEXT[], extra JSONB>)
		   WITH (connector = 'file', path = 'in', pattern = '*.jsonl', poll.interval.ms = '50') FORMAT PLAIN ENCODE JSON`,
		`CREATE MATERIALIZED VIEW pv AS SELECT id, u, (u).name AS name, ((u).addr).city AS city, cardinality((u).tags) AS ntags FROM people`,
		`CREATE SINK pout FROM pv WITH (connector = 'file', path = 'out') FORMAT PLAIN ENCODE JSON`)
	want := []string{
		`1 (ann,31,"(Oslo,0150)","{a,b}","{""k"": [1, 2]}") ann Oslo 2`,
		`2 (bob,,,,) bob NULL NULL`,
		`3 NULL NULL NULL NULL`,
	}
	check := func() {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			res, err := QueryText(context.Background(), conn, "SELECT * FROM pv ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			got := res.Lines()
			if strings.Join(got, "\n") == strings.Join(want, "\n") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("view:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	check()
	typeOf := func() string {
		t.Helper()
		res, err := QueryText(context.Background(), conn, "DESCRIBE pv")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(res.Lines(), ",")
	}
	before := typeOf()
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	conn = srv.Connect(t)
	check()
	if after := typeOf(); after != before || !strings.Contains(before, "u struct<name character varying, age integer, addr struct<city text, zip text>, tags text[], extra jsonb>") {
		t.Fatalf("the view's STRUCT column type was %q, after the restart %q", before, after)
	}
	wantOut := []string{
		`{"id":1,"u":{"name":"ann","age":31,"addr":{"city":"Oslo","zip":"0150"},"tags":["a","b"],"extra":{"k": [1, 2]}},"name":"ann","city":"Oslo","ntags":2}`,
		`{"id":2,"u":{"name":"bob","age":null,"addr":null,"tags":null,"extra":null},"name":"bob","city":null,"ntags":null}`,
		`{"id":3,"u":null,"name":null,"city":null,"ntags":null}`,
	}
	waitSinkLines(t, out, wantOut)
}

// waitSinkLines waits until the JSON lines a file sink wrote under dir
// (its part-* files), sorted, are want; it fails after 30 s.
func waitSinkLines(t *testing.T, dir string, want []string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var got []string
		names, _ := filepath.Glob(filepath.Join(dir, "part-*"))
		for _, name := range names {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if l != "" {
					got = append(got, l)
				}
			}
		}
		sort.Strings(got)
		if strings.Join(got, "\n") == strings.Join(want, "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sink wrote:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
