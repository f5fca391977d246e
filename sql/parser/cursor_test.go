package parser

import (
	"testing"

	"sluice/sql/pgerror"
)

// TestCursorStatements checks DECLARE, FETCH, MOVE and CLOSE as
// Postgres's grammar reads them, including its reductions (NEXT is
// FORWARD 1, LAST is ABSOLUTE -1, a negative FORWARD is BACKWARD).
func TestCursorStatements(t *testing.T) {
	decl := func(in string, want DeclareCursor, query string) {
		t.Helper()
		st, err := ParseOne(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			return
		}
		d, ok := st.(*DeclareCursor)
		if !ok {
			t.Errorf("%s: %T", in, st)
			return
		}
		if d.Name != want.Name || d.Binary != want.Binary || d.Scroll != want.Scroll || d.Hold != want.Hold || d.Query == nil || d.Query.Text() != query {
			t.Errorf("%s: got %+v (query %q)", in, *d, d.Query.Text())
		}
		if d.Text() != in {
			t.Errorf("%s: text %q", in, d.Text())
		}
	}
	decl(`DECLARE c CURSOR FOR SELECT 1`, DeclareCursor{Name: "c"}, "SELECT 1")
	decl(`DECLARE "My C" BINARY NO SCROLL CURSOR WITH HOLD FOR SELECT a FROM t ORDER BY a`, DeclareCursor{Name: "My C", Binary: true, Scroll: ScrollNo, Hold: true}, "SELECT a FROM t ORDER BY a")
	decl(`declare c scroll cursor without hold for values (1), (2)`, DeclareCursor{Name: "c", Scroll: ScrollYes}, "values (1), (2)")
	decl(`DECLARE c INSENSITIVE SCROLL CURSOR FOR (SELECT 1 UNION SELECT 2)`, DeclareCursor{Name: "c", Scroll: ScrollYes}, "(SELECT 1 UNION SELECT 2)")

	for _, c := range []struct {
		in   string
		want Fetch
	}{
		{`FETCH c`, Fetch{Dir: FetchForward, Count: 1, Name: "c"}},
		{`FETCH NEXT FROM c`, Fetch{Dir: FetchForward, Count: 1, Name: "c"}},
		{`FETCH next`, Fetch{Dir: FetchForward, Count: 1, Name: "next"}},
		{`FETCH PRIOR IN c`, Fetch{Dir: FetchBackward, Count: 1, Name: "c"}},
		{`FETCH FIRST c`, Fetch{Dir: FetchAbsolute, Count: 1, Name: "c"}},
		{`FETCH LAST FROM c`, Fetch{Dir: FetchAbsolute, Count: -1, Name: "c"}},
		{`FETCH ABSOLUTE -3 FROM c`, Fetch{Dir: FetchAbsolute, Count: -3, Name: "c"}},
		{`FETCH RELATIVE 0 FROM c`, Fetch{Dir: FetchRelative, Count: 0, Name: "c"}},
		{`FETCH 5 c`, Fetch{Dir: FetchForward, Count: 5, Name: "c"}},
		{`FETCH -2 FROM c`, Fetch{Dir: FetchBackward, Count: 2, Name: "c"}},
		{`FETCH ALL FROM c`, Fetch{Dir: FetchForward, Count: FetchAll, Name: "c"}},
		{`FETCH FORWARD FROM c`, Fetch{Dir: FetchForward, Count: 1, Name: "c"}},
		{`FETCH FORWARD 2000 FROM "cur"`, Fetch{Dir: FetchForward, Count: 2000, Name: "cur"}},
		{`FETCH FORWARD -1 FROM c`, Fetch{Dir: FetchBackward, Count: 1, Name: "c"}},
		{`FETCH FORWARD ALL FROM c`, Fetch{Dir: FetchForward, Count: FetchAll, Name: "c"}},
		{`FETCH BACKWARD ALL FROM c`, Fetch{Dir: FetchBackward, Count: FetchAll, Name: "c"}},
		{`FETCH BACKWARD 2 FROM c`, Fetch{Dir: FetchBackward, Count: 2, Name: "c"}},
		{`MOVE ABSOLUTE 10 FROM c`, Fetch{Move: true, Dir: FetchAbsolute, Count: 10, Name: "c"}},
		{`MOVE c`, Fetch{Move: true, Dir: FetchForward, Count: 1, Name: "c"}},
	} {
		st, err := ParseOne(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		f, ok := st.(*Fetch)
		if !ok {
			t.Errorf("%s: %T", c.in, st)
			continue
		}
		f.stmtText = stmtText{}
		if *f != c.want {
			t.Errorf("%s: got %+v, want %+v", c.in, *f, c.want)
		}
	}
	for in, want := range map[string]CloseCursor{`CLOSE c`: {Name: "c"}, `CLOSE "C"`: {Name: "C"}, `CLOSE ALL`: {All: true}} {
		st, err := ParseOne(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		c := st.(*CloseCursor)
		if c.Name != want.Name || c.All != want.All {
			t.Errorf("%s: got %+v", in, *c)
		}
	}
	for in, code := range map[string]string{
		`DECLARE c CURSOR FOR INSERT INTO t VALUES (1)`:  "42601",
		`DECLARE c CURSOR SELECT 1`:                      "42601",
		`DECLARE c SCROLL NO SCROLL CURSOR FOR SELECT 1`: "42P11",
		`FETCH 1.5 FROM c`:                               "42601",
		`FETCH FROM`:                                     "42601",
		`CLOSE`:                                          "42601",
		`FETCH ABSOLUTE FROM c`:                          "42601",
	} {
		_, err := ParseOne(in)
		if got := string(pgerror.GetCode(err)); got != code {
			t.Errorf("%s: code %s (%v), want %s", in, got, err, code)
		}
	}
}
