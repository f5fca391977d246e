package server

import "testing"

// TestAddSourceColumnSQL: the column goes at the end of the CREATE SOURCE
// text's column list, whatever the name's quoting and the parentheses and
// quotes inside the list; a source without a list is refused.
func TestAddSourceColumnSQL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`CREATE SOURCE s (a INT) WITH (connector = 'kafka')`, `CREATE SOURCE s (a INT, b TEXT) WITH (connector = 'kafka')`},
		{`create source if not exists "My ""S""" (a NUMERIC(10, 2), "c)" TEXT
		) FORMAT PLAIN ENCODE JSON`, `create source if not exists "My ""S""" (a NUMERIC(10, 2), "c)" TEXT, b TEXT
		) FORMAT PLAIN ENCODE JSON`},
		{`CREATE SOURCE sch.s (a INT, PRIMARY KEY (a)) INCLUDE key WITH (x = ')')`, `CREATE SOURCE sch.s (a INT, PRIMARY KEY (a), b TEXT) INCLUDE key WITH (x = ')')`},
		{`CREATE SOURCE s (ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5 seconds') WITH (connector = 'datagen')`,
			`CREATE SOURCE s (ts TIMESTAMP, WATERMARK FOR ts AS ts - INTERVAL '5 seconds', b TEXT) WITH (connector = 'datagen')`},
	} {
		got, err := addSourceColumnSQL(c.in, "b TEXT")
		if err != nil || got != c.want {
			t.Errorf("%s:\n got %q, %v\nwant %q", c.in, got, err, c.want)
		}
	}
	if _, err := addSourceColumnSQL(`CREATE SOURCE s WITH (connector = 'kafka') FORMAT PLAIN ENCODE AVRO (schema.registry = 'http://r')`, "b TEXT"); err == nil {
		t.Error("a source without a column list took a column")
	}
	if got := columnDefText("ALTER SOURCE s ADD COLUMN IF NOT EXISTS \"b c\" NUMERIC(5, 1);"); got != `"b c" NUMERIC(5, 1)` {
		t.Errorf("column definition %q", got)
	}
}
