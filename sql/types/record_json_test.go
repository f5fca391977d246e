package types

import (
	"encoding/json"
	"testing"
)

// TestTypeJSON: a record type's JSON carries its shape, so a plan stored
// by one process reads back as the same type in another (whose shape ids
// differ); other types encode exactly as before.
func TestTypeJSON(t *testing.T) {
	b, err := json.Marshal(T{Fam: Numeric, Prec: 12, Scale: 2})
	if err != nil || string(b) != `{"Fam":7,"Prec":12,"Scale":2}` {
		t.Fatalf("numeric(12,2): %s, %v", b, err)
	}
	inner := StructType([]Column{{Name: "x", Type: TFloat8}})
	st := StructType([]Column{{Name: "a", Type: TInt4}, {Name: "c", Type: inner}})
	rt := RecordType([]Column{{Name: "f1", Type: TText}})
	for _, typ := range []T{st, rt, TInt4Array, {Fam: VarcharArray, Prec: 3}} {
		b, err := json.Marshal(typ)
		if err != nil {
			t.Fatal(err)
		}
		// Another process: the shapes interned in another order.
		var back T
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back != typ || back.String() != typ.String() {
			t.Fatalf("%s: %s read back as %s", typ, b, back)
		}
	}
	if st.String() != "struct<a integer, c struct<x double precision>>" || rt.String() != "record" {
		t.Fatalf("names: %s, %s", st, rt)
	}
	var anon T
	if err := json.Unmarshal([]byte(`{"Fam":27,"Prec":5,"Scale":0}`), &anon); err != nil || anon != (T{Fam: Record}) {
		t.Fatalf("an old plan's record shape id: %v, %v", anon, err)
	}
}
