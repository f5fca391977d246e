package parser

import (
	"reflect"
	"testing"

	"github.com/pingcap/tidb/pkg/parser/ast"
)

func TestDriverValues(t *testing.T) {
	q := parseQuery(t, `SELECT 1, 9223372036854775808, 1.5, 1000, 'x', true, false, null, 123456789012345678901234567890, E'\\'`)
	want := []any{int64(1), uint64(9223372036854775808), Decimal("1.5"), int64(1000), "x", int64(1), int64(0), nil, Decimal("123456789012345678901234567890"), `\`}
	fields := q.Node.(*ast.SelectStmt).Fields.Fields
	if len(fields) != len(want) {
		t.Fatalf("%d fields", len(fields))
	}
	for k, f := range fields {
		v, ok := f.Expr.(*ValueExpr)
		if !ok {
			t.Fatalf("field %d: %T", k, f.Expr)
		}
		if !reflect.DeepEqual(v.Val, want[k]) || !reflect.DeepEqual(v.GetValue(), want[k]) {
			t.Errorf("field %d = %#v, want %#v", k, v.Val, want[k])
		}
		if isBool := k == 5 || k == 6; v.IsBool() != isBool {
			t.Errorf("field %d IsBool = %v", k, v.IsBool())
		}
	}
	if fields[4].Expr.(*ValueExpr).GetString() != "x" || fields[2].Expr.(*ValueExpr).GetString() != "1.5" {
		t.Errorf("GetString")
	}
	// hex and bit literals of the driver (never emitted by the rewriter)
	for _, c := range []struct {
		f    func(string) (any, error)
		in   string
		want []byte
	}{
		{newHexLiteral, "x'1f'", []byte{0x1f}},
		{newHexLiteral, "0x1", []byte{0x01}},
		{newBitLiteral, "b'101'", []byte{5}},
		{newBitLiteral, "0b100000001", []byte{1, 1}},
	} {
		got, err := c.f(c.in)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s = %v, %v", c.in, got, err)
		}
	}
}
