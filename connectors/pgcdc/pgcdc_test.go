package pgcdc

import (
	"reflect"
	"strings"
	"testing"

	"sluice/exec/connector"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func strp(s string) *string { return &s }

func TestPositionRoundTrip(t *testing.T) {
	for _, p := range []position{
		{},
		{phase: phaseSnapshot, slotLSN: 0x16B3748},
		{phase: phaseSnapshot, slotLSN: 0x16B3748, lastKey: []*string{strp("42"), nil, strp("")}},
		{phase: phaseStream, slotLSN: 1, lsn: 1 << 40, skip: 1025},
	} {
		got, err := decodePosition(p.encode())
		if err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		if !reflect.DeepEqual(got, p) {
			t.Fatalf("round trip: %+v, want %+v", got, p)
		}
	}
	good := (&position{phase: phaseStream, lsn: 99}).encode()
	for _, bad := range [][]byte{nil, {9, 0}, {posVersion, 7}, good[:len(good)-1], append(append([]byte{}, good...), 0)} {
		if _, err := decodePosition(bad); err == nil || pgerror.GetCode(err) != "XX001" {
			t.Errorf("decodePosition(%v): %v, want XX001", bad, err)
		}
	}
}

func TestParseOptions(t *testing.T) {
	cols := []types.Column{{Name: "id", Type: types.TInt8}, {Name: "v", Type: types.TText}}
	base := func() map[string]string {
		return map[string]string{"connector": Name, "hostname": "127.0.0.1", "username": "u", "database.name": "d", "table.name": "t"}
	}
	c, err := parse(connector.SourceConfig{Name: "My-Src", Columns: cols, Key: []int{0}, Options: base()})
	if err != nil {
		t.Fatal(err)
	}
	if c.Port != 5432 || c.schema != "public" || c.slot != "sluice_my_src" || c.publication != "sluice_my_src_pub" || !c.createPub {
		t.Fatalf("defaults: %+v", c)
	}
	for _, tc := range []struct {
		set     map[string]string
		key     []int
		code    string
		mention string
	}{
		{map[string]string{"hostname": ""}, []int{0}, "22023", "hostname: is required"},
		{map[string]string{"port": "0"}, []int{0}, "22023", "is not a port"},
		{map[string]string{"slot.name": "Bad-Slot"}, []int{0}, "22023", "not a valid replication slot name"},
		{map[string]string{"nope": "x"}, []int{0}, "22023", "unknown option"},
		{map[string]string{"format": "DEBEZIUM"}, []int{0}, "0A000", "does not take FORMAT"},
		{map[string]string{"publication.create.enable": "maybe"}, []int{0}, "22023", "is not 'true' or 'false'"},
		{nil, nil, "42P17", "needs a PRIMARY KEY"},
	} {
		opts := base()
		for k, v := range tc.set {
			opts[k] = v
		}
		_, err := parse(connector.SourceConfig{Name: "s", Columns: cols, Key: tc.key, Options: opts})
		if err == nil || string(pgerror.GetCode(err)) != tc.code || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("%v: %v, want %s mentioning %q", tc.set, err, tc.code, tc.mention)
		}
	}
	c, err = parse(connector.SourceConfig{Name: "s", Columns: cols, Key: []int{0}, Options: map[string]string{
		"hostname": "h", "username": "u", "database.name": "d", "table.name": "sales.orders"}})
	if err != nil || c.schema != "sales" || c.Table != "orders" {
		t.Fatalf("table.name = 'sales.orders': %+v, %v", c, err)
	}
}

func TestTypeMapping(t *testing.T) {
	for _, tc := range []struct {
		t  types.T
		up string
		ok bool
	}{
		{types.TInt8, "int4", true}, {types.TInt4, "int8", false}, {types.TText, "uuid", true},
		{types.TJSONB, "json", true}, {types.TTimestampTZ, "timestamp", false}, {types.TNumeric, "int8", true},
		{types.TBytea, "text", false}, {types.TFloat8, "float4", true},
	} {
		if got := compatible(tc.t, tc.up); got != tc.ok {
			t.Errorf("compatible(%s, %s) = %v, want %v", tc.t, tc.up, got, tc.ok)
		}
	}
}
