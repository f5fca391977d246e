package types

import (
	"testing"
)

// The expectations are PostgreSQL 15's (jsonb_out, the jsonb btree
// order); TestJSONBDifferential in tests/ checks many more against a
// running PostgreSQL.
func TestJSONCanonicalText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"b":1,"a":[1,2],"aa":null,"a":3}`, `{"a": 3, "b": 1, "aa": null}`},
		{`[1.50, 1e2, 1E-2, -0, 0.0]`, `[1.50, 100, 0.01, 0, 0.0]`},
		{`"\u00e9\n\u0001/\"\\"`, `"é\n\u0001/\"\\"`},
		{` { } `, `{}`},
		{`[[], {}, [null]]`, `[[], {}, [null]]`},
		{`{"bb": 1, "a": 2, "ccc": 3, "b": 4}`, `{"a": 2, "b": 4, "bb": 1, "ccc": 3}`},
	} {
		d, err := ParseJSONDatum(c.in)
		if err != nil || d.S != c.want {
			t.Errorf("ParseJSONDatum(%s) = %q, %v; want %q", c.in, d.S, err, c.want)
		}
	}
	for _, bad := range []string{``, `{a}`, `[1,2`, `{"a" 1}`, `01`, `1.`, `.5`, `+1`, `"\u0000"`, `[1] x`, `tru`, "\"a\tb\""} {
		if _, err := ParseJSON(bad); err == nil {
			t.Errorf("ParseJSON(%q) accepted", bad)
		}
	}
}

func TestJSONOrder(t *testing.T) {
	// Ascending in PostgreSQL's jsonb order.
	sorted := []string{`[]`, `null`, `""`, `"a"`, `"b"`, `-1`, `1`, `1.5`, `10`, `false`, `true`,
		`[1]`, `[null, 1]`, `[1, 2]`, `{}`, `{"aa": 1}`, `{"b": 1}`, `{"a": 1, "b": 2}`}
	for i := range sorted {
		for j := range sorted {
			a, _ := ParseJSON(sorted[i])
			b, _ := ParseJSON(sorted[j])
			got := JSONCompare(a, b)
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got != want {
				t.Errorf("JSONCompare(%s, %s) = %d, want %d", sorted[i], sorted[j], got, want)
			}
		}
	}
	// Equal by value: equal hashes and keys.
	for _, p := range [][2]string{{`1`, `1.0`}, {`{"a": [1.50]}`, `{"a": [1.5]}`}, {`0`, `-0.00`}} {
		a, _ := ParseJSONDatum(p[0])
		b, _ := ParseJSONDatum(p[1])
		if !Equal(a, b) || Hash(0, a) != Hash(0, b) || string(AppendKey(nil, a)) != string(AppendKey(nil, b)) {
			t.Errorf("%s and %s: equal %v, hashes %x %x", p[0], p[1], Equal(a, b), Hash(0, a), Hash(0, b))
		}
	}
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.50, "x", null, true]}`, `[]`, `"\ud83d\ude00"`, `1e400`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseJSON(s)
		if err != nil {
			return
		}
		// Canonical text parses back to itself.
		again, err := ParseJSON(v.String())
		if err != nil || again.String() != v.String() {
			t.Fatalf("%q -> %q -> %v %v", s, v.String(), again, err)
		}
		if JSONCompare(v, again) != 0 {
			t.Fatalf("%q not equal to its canonical form", s)
		}
	})
}
