package parser

import (
	"reflect"
	"testing"
)

// TestCopyStatement checks that the new and the old (pre-9.0) option
// syntax of COPY parse into the same options.
func TestCopyStatement(t *testing.T) {
	opt := func(name, value string) CopyOption {
		return CopyOption{Name: name, Value: value, HasValue: value != ""}
	}
	list := func(name string, cols ...string) CopyOption { return CopyOption{Name: name, List: cols, IsList: true} }
	for _, c := range []struct {
		sql  string
		want Copy
	}{
		{"COPY t FROM STDIN", Copy{Table: "t", From: true}},
		{"copy public.t (a, \"B\") to stdout", Copy{Table: "public.t", Columns: []string{"a", "B"}}},
		{"COPY t FROM STDIN WITH (FORMAT csv, HEADER, DELIMITER ';', NULL '', QUOTE '\"', FORCE_NOT_NULL (a, b), ENCODING 'utf8')",
			Copy{Table: "t", From: true, Options: []CopyOption{opt("format", "csv"), opt("header", ""), opt("delimiter", ";"),
				{Name: "null", HasValue: true}, opt("quote", `"`), list("force_not_null", "a", "b"), opt("encoding", "utf8")}}},
		{"COPY t FROM STDIN CSV HEADER", Copy{Table: "t", From: true, Options: []CopyOption{opt("format", "csv"), opt("header", "")}}},
		{"COPY t FROM STDIN WITH CSV DELIMITER AS ';' NULL 'x' FORCE NOT NULL a, b", Copy{Table: "t", From: true,
			Options: []CopyOption{opt("format", "csv"), opt("delimiter", ";"), opt("null", "x"), list("force_not_null", "a", "b")}}},
		{"COPY t TO STDOUT CSV FORCE QUOTE *", Copy{Table: "t", Options: []CopyOption{opt("format", "csv"), {Name: "force_quote", Star: true}}}},
		{"COPY BINARY t FROM STDIN", Copy{Table: "t", From: true, Options: []CopyOption{opt("format", "binary")}}},
		{"COPY t FROM STDIN USING DELIMITERS '|'", Copy{Table: "t", From: true, Options: []CopyOption{opt("delimiter", "|")}}},
		{"COPY t FROM '/tmp/f.csv' (FORMAT csv)", Copy{Table: "t", From: true, File: "/tmp/f.csv", Options: []CopyOption{opt("format", "csv")}}},
		{"COPY t TO PROGRAM 'gzip > x'", Copy{Table: "t", File: "gzip > x", Program: true}},
		{"COPY t FROM STDIN WHERE a > 1", Copy{Table: "t", From: true, Where: true}},
		{"COPY (SELECT 1) TO STDOUT (HEADER false, FORMAT text)", Copy{Options: []CopyOption{opt("header", "false"), opt("format", "text")}}},
	} {
		st, err := ParseOne(c.sql)
		if err != nil {
			t.Errorf("%s: %v", c.sql, err)
			continue
		}
		got := *st.(*Copy)
		if (got.Query != nil) != (c.sql[5] == '(') {
			t.Errorf("%s: query %v", c.sql, got.Query)
		}
		got.Query, got.stmtText = nil, stmtText{}
		for i := range got.Options {
			got.Options[i].Pos = 0
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.sql, got, c.want)
		}
	}
	for _, bad := range []string{"COPY", "COPY t", "COPY t FROM", "COPY (SELECT 1) FROM STDIN", "COPY () TO STDOUT",
		"COPY t FROM STDIN (FORMAT)x", "COPY t FROM STDIN CSV HEADER MATCH", "COPY (SELECT 1 TO STDOUT"} {
		if _, err := ParseOne(bad); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
}
