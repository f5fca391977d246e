package parser

import (
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	tidbtypes "github.com/pingcap/tidb/pkg/parser/types"
)

// This file is Sluice's value driver for the TiDB parser: the TiDB parser
// package leaves the representation of literal values to a "driver" that
// installs the constructors ast.NewValueExpr, ast.NewParamMarkerExpr,
// ast.NewDecimal, ast.NewHexLiteral and ast.NewBitLiteral. Ours keeps values
// as plain Go values (see ValueExpr) so that the binder needs no TiDB types.

func init() {
	ast.NewValueExpr = newValueExpr
	ast.NewParamMarkerExpr = newParamMarkerExpr
	ast.NewDecimal = func(s string) (any, error) { return Decimal(s), nil }
	ast.NewHexLiteral = newHexLiteral
	ast.NewBitLiteral = newBitLiteral
}

var (
	_ ast.ValueExpr       = (*ValueExpr)(nil)
	_ ast.ParamMarkerExpr = (*ParamMarkerExpr)(nil)
)

// Decimal is an exact numeric literal (one with a decimal point and no
// exponent, or an integer too large for uint64), kept as its literal text.
type Decimal string

// ValueExpr is a literal value in a TiDB AST built by this package.
//
// Val holds one of: nil (NULL), int64 (integers; TRUE and FALSE are int64 1
// and 0 with mysql.IsBooleanFlag set in the field type, see IsBool), uint64
// (integers above MaxInt64), float64 (literals with an exponent), Decimal,
// string (string literals, already unescaped) or []byte (hex and bit
// literals, which Sluice's rewriter never emits).
type ValueExpr struct {
	ast.TexprNode
	Val              any
	projectionOffset int
}

// IsBool reports whether v is the literal TRUE or FALSE.
func (v *ValueExpr) IsBool() bool {
	_, ok := v.Val.(int64)
	return ok && v.Type.GetFlag()&mysql.IsBooleanFlag != 0
}

func newValueExpr(value any, charset string, collate string) ast.ValueExpr {
	if ve, ok := value.(*ValueExpr); ok {
		return ve
	}
	ve := &ValueExpr{projectionOffset: -1}
	ve.setValue(value, charset, collate)
	return ve
}

// SetValue implements ast.ValueExpr.
func (v *ValueExpr) SetValue(val any) { v.setValue(val, "", "") }

func (v *ValueExpr) setValue(val any, charset, collate string) {
	tp := &v.Type
	switch x := val.(type) {
	case nil:
		v.Val = nil
		tp.SetType(mysql.TypeNull)
	case bool:
		if x {
			v.Val = int64(1)
		} else {
			v.Val = int64(0)
		}
		tp.SetType(mysql.TypeLonglong)
		tp.SetFlen(1)
		tp.AddFlag(mysql.IsBooleanFlag)
	case int:
		v.Val = int64(x)
		tp.SetType(mysql.TypeLonglong)
	case int32:
		v.Val = int64(x)
		tp.SetType(mysql.TypeLonglong)
	case int64:
		v.Val = x
		tp.SetType(mysql.TypeLonglong)
	case uint64:
		v.Val = x
		tp.SetType(mysql.TypeLonglong)
		tp.AddFlag(mysql.UnsignedFlag)
	case float32:
		v.Val = float64(x)
		tp.SetType(mysql.TypeDouble)
	case float64:
		v.Val = x
		tp.SetType(mysql.TypeDouble)
	case Decimal:
		v.Val = x
		tp.SetType(mysql.TypeNewDecimal)
	case string:
		v.Val = x
		tp.SetType(mysql.TypeVarString)
		tp.SetCharset(charset)
		tp.SetCollate(collate)
	case []byte:
		v.Val = x
		tp.SetType(mysql.TypeBlob)
	default:
		v.Val = x
		tp.SetType(mysql.TypeUnspecified)
		tp.SetFlen(tidbtypes.UnspecifiedLength)
		tp.SetDecimal(tidbtypes.UnspecifiedLength)
	}
}

// GetValue implements ast.ValueExpr.
func (v *ValueExpr) GetValue() any { return v.Val }

// GetString implements ast.ValueExpr: the text of a string, byte or decimal
// value, or "" for other kinds.
func (v *ValueExpr) GetString() string {
	switch x := v.Val.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case Decimal:
		return string(x)
	}
	return ""
}

// GetDatumString implements ast.ValueExpr.
func (v *ValueExpr) GetDatumString() string { return v.GetString() }

// GetProjectionOffset implements ast.ValueExpr.
func (v *ValueExpr) GetProjectionOffset() int { return v.projectionOffset }

// SetProjectionOffset implements ast.ValueExpr.
func (v *ValueExpr) SetProjectionOffset(offset int) { v.projectionOffset = offset }

// Restore implements ast.Node.
func (v *ValueExpr) Restore(ctx *format.RestoreCtx) error {
	switch x := v.Val.(type) {
	case nil:
		ctx.WriteKeyWord("NULL")
	case int64:
		if v.IsBool() {
			if x != 0 {
				ctx.WriteKeyWord("TRUE")
			} else {
				ctx.WriteKeyWord("FALSE")
			}
		} else {
			ctx.WritePlain(strconv.FormatInt(x, 10))
		}
	case uint64:
		ctx.WritePlain(strconv.FormatUint(x, 10))
	case float64:
		ctx.WritePlain(formatFloat(x))
	case Decimal:
		ctx.WritePlain(string(x))
	case string:
		ctx.WriteString(x)
	case []byte:
		ctx.WritePlain("x'" + hex.EncodeToString(x) + "'")
	default:
		return fmt.Errorf("cannot restore value of type %T", x)
	}
	return nil
}

func formatFloat(f float64) string {
	return strconv.FormatFloat(f, 'e', -1, 64)
}

// Format implements ast.ExprNode.
func (v *ValueExpr) Format(w io.Writer) {
	var s string
	switch x := v.Val.(type) {
	case nil:
		s = "NULL"
	case int64:
		if v.IsBool() {
			if x != 0 {
				s = "TRUE"
			} else {
				s = "FALSE"
			}
		} else {
			s = strconv.FormatInt(x, 10)
		}
	case uint64:
		s = strconv.FormatUint(x, 10)
	case float64:
		s = formatFloat(x)
	case Decimal:
		s = string(x)
	case string:
		s = "'" + strings.ReplaceAll(x, "'", "''") + "'"
	case []byte:
		s = "x'" + hex.EncodeToString(x) + "'"
	default:
		s = fmt.Sprint(x)
	}
	_, _ = io.WriteString(w, s)
}

// Accept implements ast.Node.
func (v *ValueExpr) Accept(visitor ast.Visitor) (ast.Node, bool) {
	newNode, skip := visitor.Enter(v)
	if skip {
		return visitor.Leave(newNode)
	}
	return visitor.Leave(newNode)
}

// ParamMarkerExpr is a `?` placeholder in the TiDB AST. The rewriter emits
// one only where TiDB's grammar accepts no expression (LIMIT and OFFSET);
// everywhere else a Postgres parameter $n becomes the call __pg_param(n).
// N is the Postgres parameter number ($N); Offset is the byte offset of the
// marker in the rewritten text.
type ParamMarkerExpr struct {
	ValueExpr
	Offset int
	Order  int
	N      int
}

func newParamMarkerExpr(offset int) ast.ParamMarkerExpr {
	p := &ParamMarkerExpr{Offset: offset}
	p.projectionOffset = -1
	return p
}

// SetOrder implements ast.ParamMarkerExpr.
func (p *ParamMarkerExpr) SetOrder(order int) { p.Order = order }

// Restore implements ast.Node.
func (p *ParamMarkerExpr) Restore(ctx *format.RestoreCtx) error {
	ctx.WritePlain("?")
	return nil
}

// Format implements ast.ExprNode.
func (p *ParamMarkerExpr) Format(w io.Writer) {
	_, _ = fmt.Fprintf(w, "$%d", p.N)
}

// Accept implements ast.Node.
func (p *ParamMarkerExpr) Accept(visitor ast.Visitor) (ast.Node, bool) {
	newNode, skip := visitor.Enter(p)
	if skip {
		return visitor.Leave(newNode)
	}
	return visitor.Leave(newNode)
}

// newHexLiteral decodes a MySQL hex literal (0x1F or X'1F') to bytes.
func newHexLiteral(s string) (any, error) {
	if len(s) >= 2 && (s[0] == 'x' || s[0] == 'X') && s[1] == '\'' {
		s = strings.TrimSuffix(s[2:], "'")
	} else if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s = s[2:]
	}
	if len(s)%2 == 1 {
		s = "0" + s
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("invalid hexadecimal literal %q", s)
	}
	return b, nil
}

// newBitLiteral decodes a MySQL bit literal (0b101 or B'101') to bytes.
func newBitLiteral(s string) (any, error) {
	if len(s) >= 2 && (s[0] == 'b' || s[0] == 'B') && s[1] == '\'' {
		s = strings.TrimSuffix(s[2:], "'")
	} else if len(s) >= 2 && s[0] == '0' && (s[1] == 'b' || s[1] == 'B') {
		s = s[2:]
	}
	if s == "" {
		return []byte{}, nil
	}
	for len(s)%8 != 0 {
		s = "0" + s
	}
	out := make([]byte, len(s)/8)
	for i := range out {
		n, err := strconv.ParseUint(s[i*8:i*8+8], 2, 8)
		if err != nil {
			return nil, fmt.Errorf("invalid bit literal %q", s)
		}
		out[i] = byte(n)
	}
	return out, nil
}
