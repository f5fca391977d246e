package storage

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// TestFormatRecord: a new directory records this build's formats and
// build; a directory with data but no record (a build before versioned
// formats) and one of a newer format are refused with both versions named
// and nothing changed; a readable one is accepted.
func TestFormatRecord(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)
	f, build, err := db.RecordedFormat()
	if err != nil || f != Current || build != Build() {
		t.Fatalf("new directory records %+v build %q (%v), want %+v build %q", f, build, err, Current, Build())
	}
	if f != (Formats{Catalog: 1, Plan: 1, State: 1}) {
		t.Fatalf("formats %+v: the first versioned build writes 1 everywhere", f)
	}
	// A directory of an older build: data, no format record.
	wb := db.NewWriteBatch()
	wb.Delete([]byte("m/format"))
	wb.Delete([]byte("m/build"))
	wb.Set([]byte("c/x"), []byte("{}"))
	if err := db.WriteSync(wb); err != nil {
		t.Fatal(err)
	}
	db.Close()
	_, err = Open(dir)
	want := "was written by a build before versioned formats (format 0); this build (" + Build() + ") reads formats catalog 1, plan 1, state 1"
	if !IsFormatError(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("unversioned directory: got %v, want a format error containing %q", err, want)
	}
	if e := pgerror.Flatten(err); e.Code != pgcode.ObjectNotInPrerequisiteState || e.Hint == "" {
		t.Fatalf("unversioned directory: code %s hint %q, want 55000 with a hint", e.Code, e.Hint)
	}
	// Refusing changed nothing: still no record. A newer format next.
	raw := rawOpen(t, dir)
	if v, _ := raw.getRaw([]byte("m/format")); v != nil {
		t.Fatalf("refused open wrote m/format %q", v)
	}
	newer, _ := json.Marshal(Formats{Catalog: 1, Plan: 1, State: 2})
	wb = raw.NewWriteBatch()
	wb.Set([]byte("m/format"), newer)
	wb.Set([]byte("m/build"), []byte("future-build"))
	if err := raw.WriteSync(wb); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, err = Open(dir)
	want = "was written by build future-build in formats catalog 1, plan 1, state 2; this build (" + Build() + ") reads formats catalog 1, plan 1, state 1 to catalog 1, plan 1, state 1"
	if !IsFormatError(err) || !strings.Contains(err.Error(), want) {
		t.Fatalf("newer directory: got %v, want %q", err, want)
	}
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Found.State != 2 {
		t.Fatalf("format error %+v", fe)
	}
	// Back to a readable record: accepted, and this build is recorded.
	raw = rawOpen(t, dir)
	cur, _ := json.Marshal(Current)
	wb = raw.NewWriteBatch()
	wb.Set([]byte("m/format"), cur)
	if err := raw.WriteSync(wb); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	db = openDB(t, dir)
	defer db.Close()
	if _, build, _ := db.RecordedFormat(); build != Build() {
		t.Fatalf("recorded build %q, want %q", build, Build())
	}
}

// rawOpen opens dir without the format check (what an older or newer
// build would see).
func rawOpen(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := open(dir, &recoverState{dir: dir, logf: func(string, ...any) {}, accepted: map[string]bool{}}, newSpaceGuard(dir, DefaultReserveBytes, func(string, ...any) {}))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestStateKeyVNode: keyed state keys are s/<op:8><vnode:2><key> with
// vnode = FNV-1a(key) mod 256, the length-prefixed form is the same
// function over uvarint(len) key, and keys spread over the vnodes.
func TestStateKeyVNode(t *testing.T) {
	k := AppendStateKey([]byte("x"), 0x0102030405060708, []byte("abc"))
	// FNV-1a of "abc" is 0x1a47e90b: mod 256 = 0x0b.
	want := "xs/\x01\x02\x03\x04\x05\x06\x07\x08\x00\x0babc"
	if string(k) != want {
		t.Fatalf("AppendStateKey = %q, want %q", k, want)
	}
	if got := StateUserKey(k[1:]); string(got) != "abc" {
		t.Fatalf("StateUserKey = %q", got)
	}
	lp := AppendStateKeyLen(nil, 9, "group")
	if string(lp) != string(AppendStateKey(nil, 9, []byte("\x05group"))) {
		t.Fatalf("AppendStateKeyLen %q differs from AppendStateKey over the length-prefixed key", lp)
	}
	gk, rest, ok := SplitStateKeyLen(StateUserKey(append(lp, 'h')))
	if !ok || string(gk) != "group" || string(rest) != "h" {
		t.Fatalf("SplitStateKeyLen = %q %q %v", gk, rest, ok)
	}
	seen := map[uint16]int{}
	for i := 0; i < 25600; i++ {
		seen[VNode([]byte(strings.Repeat("k", i%7)+string(rune('a'+i%26))+string(rune(i))))]++
	}
	if len(seen) != VNodes {
		t.Fatalf("25,600 keys fell in %d vnodes, want all %d", len(seen), VNodes)
	}
	for v, n := range seen {
		if n < 25 || n > 200 {
			t.Errorf("vnode %d holds %d of 25,600 keys (expected about 100)", v, n)
		}
	}
}
