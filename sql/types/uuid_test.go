package types

import (
	"bytes"
	"testing"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

func TestUUIDText(t *testing.T) {
	const want = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
	for _, in := range []string{
		"A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11", "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
		"a0eebc999c0b4ef8bb6d6bb9bd380a11", "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
		"{a0eebc999c0b4ef8bb6d6bb9bd380a11}",
	} {
		d, err := ParseText(in, TUUID)
		if err != nil || FormatText(d, TUUID) != want {
			t.Errorf("%q: %v %v", in, FormatText(d, TUUID), err)
		}
	}
	for _, in := range []string{
		"", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
		"{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
		"a0eebc9-99c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
		"-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
		" a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
	} {
		_, err := ParseText(in, TUUID)
		if pgerror.GetCode(err) != pgcode.InvalidTextRepresentation || err.Error() != `invalid input syntax for type uuid: "`+in+`"` {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestUUIDEncodings(t *testing.T) {
	vals := []string{"00000000-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000001",
		"7fffffff-ffff-ffff-ffff-ffffffffffff", "80000000-0000-0000-0000-000000000000",
		"ffffffff-ffff-ffff-ffff-fffffffffffe", "ffffffff-ffff-ffff-ffff-ffffffffffff"}
	var prev, prevKey []byte
	for i, s := range vals {
		d, err := ParseText(s, TUUID)
		if err != nil {
			t.Fatal(err)
		}
		key := AppendKey(nil, d)
		if i > 0 && (bytes.Compare(prevKey, key) >= 0 || Compare(mustUUID(t, string(prev)), d) >= 0) {
			t.Errorf("%s does not sort after %s", s, prev)
		}
		k, rest, err := DecodeKey(append(key, 0x99))
		if err != nil || !Equal(k, d) || len(rest) != 1 || k.K != KUUID {
			t.Errorf("key %s: %v %v %v", s, k, rest, err)
		}
		kd, _, err := DecodeKeyDesc(AppendKeyDesc(nil, d))
		if err != nil || !Equal(kd, d) {
			t.Errorf("desc key %s: %v %v", s, kd, err)
		}
		v, rest, err := DecodeValue(append(AppendValue(nil, d), 7))
		if err != nil || !Equal(v, d) || len(rest) != 1 {
			t.Errorf("value %s: %v %v %v", s, v, rest, err)
		}
		b, err := EncodeBinary(nil, d, TUUID)
		if err != nil || len(b) != 16 {
			t.Fatalf("binary %s: %x %v", s, b, err)
		}
		if bd, err := DecodeBinary(b, TUUID); err != nil || !Equal(bd, d) {
			t.Errorf("binary %s: %v %v", s, bd, err)
		}
		if Hash(0, d) == Hash(0, NewBytes([]byte(d.S))) {
			t.Errorf("uuid and bytea %s hash alike", s)
		}
		prev, prevKey = []byte(s), key
	}
	if _, err := DecodeBinary(make([]byte, 15), TUUID); pgerror.GetCode(err) != pgcode.Code("22P03") {
		t.Errorf("15 bytes: %v", err)
	}
	r := NewRandomUUID()
	if s := FormatText(r, TUUID); s[14] != '4' || !bytes.ContainsRune([]byte("89ab"), rune(s[19])) {
		t.Errorf("gen_random_uuid: %s is not version 4", s)
	}
}

func mustUUID(t *testing.T, s string) Datum {
	d, err := ParseText(s, TUUID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
