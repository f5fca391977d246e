package eval

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"sluice/exec/spec"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file is a test helper: a small parser for Postgres scalar
// expressions that binds them the way the planner does (ResolveFunc plus
// casts), so that test cases can be written as SQL and their expected
// results taken from a real PostgreSQL.

type tok struct {
	kind byte // 'n' number, 's' string, 'i' identifier, 'o' operator, 0 EOF
	s    string
}

func lex(src string) ([]tok, error) {
	var out []tok
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case unicode.IsSpace(rune(c)):
			i++
		case c >= '0' && c <= '9' || (c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9'):
			j := i
			for j < len(src) && (src[j] >= '0' && src[j] <= '9' || src[j] == '.') {
				j++
			}
			if j < len(src) && (src[j] == 'e' || src[j] == 'E') {
				j++
				if j < len(src) && (src[j] == '+' || src[j] == '-') {
					j++
				}
				for j < len(src) && src[j] >= '0' && src[j] <= '9' {
					j++
				}
			}
			out = append(out, tok{'n', src[i:j]})
			i = j
		case c == '\'' || ((c == 'E' || c == 'e') && i+1 < len(src) && src[i+1] == '\''):
			esc := c != '\''
			if esc {
				i++
			}
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(src) {
					return nil, fmt.Errorf("unterminated string")
				}
				if src[j] == '\'' {
					if j+1 < len(src) && src[j+1] == '\'' {
						b.WriteByte('\'')
						j += 2
						continue
					}
					break
				}
				if esc && src[j] == '\\' && j+1 < len(src) {
					j++
					switch src[j] {
					case 'n':
						b.WriteByte('\n')
					case 't':
						b.WriteByte('\t')
					default:
						b.WriteByte(src[j])
					}
					j++
					continue
				}
				b.WriteByte(src[j])
				j++
			}
			out = append(out, tok{'s', b.String()})
			i = j + 1
		case c == '"':
			j := strings.IndexByte(src[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("unterminated identifier")
			}
			out = append(out, tok{'i', src[i+1 : i+1+j]})
			i += j + 2
		case unicode.IsLetter(rune(c)) || c == '_':
			j := i
			for j < len(src) && (unicode.IsLetter(rune(src[j])) || unicode.IsDigit(rune(src[j])) || src[j] == '_' || src[j] == '.') {
				j++
			}
			out = append(out, tok{'i', strings.ToLower(src[i:j])})
			i = j
		default:
			ops := []string{"::", "<>", "!=", "<=", ">=", "||", "!~*", "!~", "~*", "<<", ">>", "(", ")", ",", "[", "]",
				"+", "-", "*", "/", "%", "^", "=", "<", ">", "~", "&", "|", "#", "@"}
			found := false
			for _, op := range ops {
				if strings.HasPrefix(src[i:], op) {
					out = append(out, tok{'o', op})
					i += len(op)
					found = true
					break
				}
			}
			if !found {
				return nil, fmt.Errorf("bad character %q", c)
			}
		}
	}
	return append(out, tok{}), nil
}

type parser struct {
	toks []tok
	pos  int
	cols []types.T
}

func (p *parser) peek() tok { return p.toks[p.pos] }
func (p *parser) next() tok {
	t := p.toks[p.pos]
	if p.pos < len(p.toks)-1 {
		p.pos++
	}
	return t
}
func (p *parser) isKw(s string) bool { t := p.peek(); return t.kind == 'i' && t.s == s }
func (p *parser) isOp(s string) bool { t := p.peek(); return t.kind == 'o' && t.s == s }
func (p *parser) acceptKw(s string) bool {
	if p.isKw(s) {
		p.next()
		return true
	}
	return false
}
func (p *parser) acceptOp(s string) bool {
	if p.isOp(s) {
		p.next()
		return true
	}
	return false
}
func (p *parser) expectOp(s string) error {
	if !p.acceptOp(s) {
		return fmt.Errorf("expected %q at %q", s, p.peek().s)
	}
	return nil
}
func (p *parser) expectKw(s string) error {
	if !p.acceptKw(s) {
		return fmt.Errorf("expected %q at %q", s, p.peek().s)
	}
	return nil
}

// call binds a function or operator like the planner: resolve, then cast.
func call(name string, args ...spec.Expr) (spec.Expr, error) {
	ts := make([]types.T, len(args))
	for i, a := range args {
		ts[i] = a.Type()
	}
	ret, casts, err := ResolveFunc(name, ts)
	if err != nil {
		return nil, err
	}
	for i := range args {
		if casts[i] != ts[i] {
			args[i] = &spec.Cast{E: args[i], T: casts[i]}
		}
	}
	return &spec.Func{Name: name, Args: args, T: ret}, nil
}

func (p *parser) parseExpr() (spec.Expr, error) { return p.parseOr() }

func (p *parser) parseOr() (spec.Expr, error) {
	l, err := p.parseAnd()
	for err == nil && p.acceptKw("or") {
		var r spec.Expr
		if r, err = p.parseAnd(); err == nil {
			l, err = call("or", l, r)
		}
	}
	return l, err
}

func (p *parser) parseAnd() (spec.Expr, error) {
	l, err := p.parseNot()
	for err == nil && p.acceptKw("and") {
		var r spec.Expr
		if r, err = p.parseNot(); err == nil {
			l, err = call("and", l, r)
		}
	}
	return l, err
}

func (p *parser) parseNot() (spec.Expr, error) {
	if p.acceptKw("not") {
		e, err := p.parseNot()
		if err != nil {
			return nil, err
		}
		return call("not", e)
	}
	return p.parseIs()
}

func (p *parser) parseIs() (spec.Expr, error) {
	l, err := p.parseCmp()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.acceptKw("isnull"):
			l, err = call("is null", l)
		case p.acceptKw("notnull"):
			l, err = call("is not null", l)
		case p.acceptKw("is"):
			not := p.acceptKw("not")
			n := "is "
			if not {
				n = "is not "
			}
			switch {
			case p.acceptKw("null"):
				l, err = call(n+"null", l)
			case p.acceptKw("true"):
				l, err = call(n+"true", l)
			case p.acceptKw("false"):
				l, err = call(n+"false", l)
			case p.acceptKw("unknown"):
				l, err = call(n+"unknown", l)
			case p.acceptKw("distinct"):
				if err := p.expectKw("from"); err != nil {
					return nil, err
				}
				r, err2 := p.parseCmp()
				if err2 != nil {
					return nil, err2
				}
				if not {
					l, err = call("__pg_not_distinct", l, r)
				} else {
					l, err = call("__pg_distinct", l, r)
				}
			default:
				return nil, fmt.Errorf("bad IS")
			}
		default:
			return l, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

var cmpOpsList = []string{"=", "<>", "!=", "<=", ">=", "<", ">"}

func (p *parser) parseCmp() (spec.Expr, error) {
	l, err := p.parseLike()
	if err != nil {
		return nil, err
	}
	for _, op := range cmpOpsList {
		if p.acceptOp(op) {
			r, err := p.parseLike()
			if err != nil {
				return nil, err
			}
			if op == "!=" {
				op = "<>"
			}
			return call(op, l, r)
		}
	}
	return l, nil
}

func (p *parser) parseLike() (spec.Expr, error) {
	l, err := p.parseOther()
	if err != nil {
		return nil, err
	}
	save := p.pos
	not := p.acceptKw("not")
	switch {
	case p.isKw("like") || p.isKw("ilike"):
		kw := p.next().s
		r, err := p.parseOther()
		if err != nil {
			return nil, err
		}
		name := kw
		if not {
			name = "not " + kw
		}
		if p.acceptKw("escape") {
			e, err := p.parseOther()
			if err != nil {
				return nil, err
			}
			return call(name, l, r, e)
		}
		return call(name, l, r)
	case p.acceptKw("in"):
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		args := []spec.Expr{l}
		for {
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			args = append(args, e)
			if !p.acceptOp(",") {
				break
			}
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		if not {
			return call("not in", args...)
		}
		return call("in", args...)
	case p.acceptKw("between"):
		lo, err := p.parseOther()
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("and"); err != nil {
			return nil, err
		}
		hi, err := p.parseOther()
		if err != nil {
			return nil, err
		}
		a, err := call(">=", l, lo)
		if err != nil {
			return nil, err
		}
		b, err := call("<=", l, hi)
		if err != nil {
			return nil, err
		}
		e, err := call("and", a, b)
		if err == nil && not {
			e, err = call("not", e)
		}
		return e, err
	}
	p.pos = save
	return l, nil
}

func (p *parser) parseOther() (spec.Expr, error) {
	l, err := p.parseAdd()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != 'o' {
			return l, nil
		}
		var name string
		switch t.s {
		case "||", "&", "|", "#", "<<", ">>":
			name = t.s
		case "~":
			name = "__pg_regex"
		case "~*":
			name = "__pg_regexi"
		case "!~":
			name = "__pg_not_regex"
		case "!~*":
			name = "__pg_not_regexi"
		default:
			return l, nil
		}
		p.next()
		r, err := p.parseAdd()
		if err != nil {
			return nil, err
		}
		if l, err = call(name, l, r); err != nil {
			return nil, err
		}
	}
}

func (p *parser) parseAdd() (spec.Expr, error) {
	l, err := p.parseMul()
	for err == nil && (p.isOp("+") || p.isOp("-")) {
		op := p.next().s
		var r spec.Expr
		if r, err = p.parseMul(); err == nil {
			l, err = call(op, l, r)
		}
	}
	return l, err
}

func (p *parser) parseMul() (spec.Expr, error) {
	l, err := p.parseExp()
	for err == nil && (p.isOp("*") || p.isOp("/") || p.isOp("%")) {
		op := p.next().s
		var r spec.Expr
		if r, err = p.parseExp(); err == nil {
			l, err = call(op, l, r)
		}
	}
	return l, err
}

func (p *parser) parseExp() (spec.Expr, error) {
	l, err := p.parseUnary()
	for err == nil && p.acceptOp("^") {
		var r spec.Expr
		if r, err = p.parseUnary(); err == nil {
			l, err = call("^", l, r)
		}
	}
	return l, err
}

func (p *parser) parseUnary() (spec.Expr, error) {
	switch {
	case p.acceptOp("-"):
		// A negative numeric literal is one constant, as in Postgres,
		// unless a postfix (a cast) binds to it first.
		if t := p.peek(); t.kind == 'n' {
			p.next()
			lit, err := numLiteral(t.s)
			if err != nil {
				return nil, err
			}
			e, err := p.postfix(lit)
			if err != nil {
				return nil, err
			}
			if e == lit {
				return numLiteral("-" + t.s)
			}
			return call("neg", e)
		}
		e, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return call("neg", e)
	case p.acceptOp("+"):
		return p.parseUnary()
	case p.acceptOp("~"):
		e, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return call("~", e)
	case p.acceptOp("@"):
		e, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		return call("abs", e)
	}
	e, err := p.parsePrimary()
	if err != nil {
		return nil, err
	}
	return p.postfix(e)
}

func (p *parser) postfix(e spec.Expr) (spec.Expr, error) {
	for {
		switch {
		case p.acceptOp("::"):
			t, err := p.parseType()
			if err != nil {
				return nil, err
			}
			e = &spec.Cast{E: e, T: t}
		case p.acceptOp("["):
			i, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp("]"); err != nil {
				return nil, err
			}
			if e, err = call("__pg_subscript", e, i); err != nil {
				return nil, err
			}
		default:
			return e, nil
		}
	}
}

func numLiteral(s string) (spec.Expr, error) {
	if !strings.ContainsAny(s, ".eE") {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			if v >= -1<<31 && v < 1<<31 {
				return &spec.Const{D: types.NewInt(v), T: types.TInt4}, nil
			}
			return &spec.Const{D: types.NewInt(v), T: types.TInt8}, nil
		}
	}
	d, err := types.ParseText(s, types.TNumeric)
	if err != nil {
		return nil, err
	}
	return &spec.Const{D: d, T: types.TNumeric}, nil
}

var typeWords = map[string]types.T{
	"int": types.TInt4, "integer": types.TInt4, "int4": types.TInt4, "smallint": types.TInt2, "int2": types.TInt2,
	"bigint": types.TInt8, "int8": types.TInt8, "real": types.TFloat4, "float4": types.TFloat4,
	"float8": types.TFloat8, "float": types.TFloat8, "numeric": types.TNumeric, "decimal": types.TNumeric,
	"text": types.TText, "varchar": types.TVarchar, "bool": types.TBool, "boolean": types.TBool,
	"date": types.TDate, "time": types.TTime, "timestamp": types.TTimestamp, "timestamptz": types.TTimestampTZ,
	"interval": types.TInterval, "bytea": types.TBytea, "jsonb": types.TJSONB, "oid": types.TOid,
	"name": types.TName, "regclass": types.TRegClass, "char": types.TChar,
}

func (p *parser) parseType() (types.T, error) {
	t := p.next()
	if t.kind != 'i' {
		return types.T{}, fmt.Errorf("expected type")
	}
	name := t.s
	switch name {
	case "double":
		if err := p.expectKw("precision"); err != nil {
			return types.T{}, err
		}
		return types.TFloat8, nil
	case "character":
		if err := p.expectKw("varying"); err != nil {
			return types.T{}, err
		}
		name = "varchar"
	case "timestamp", "time":
		if p.acceptKw("with") {
			p.next()
			p.next()
			return types.TTimestampTZ, nil
		}
		if p.acceptKw("without") {
			p.next()
			p.next()
		}
	}
	ty, ok := typeWords[name]
	if !ok {
		return types.T{}, fmt.Errorf("unknown type %s", name)
	}
	if p.acceptOp("(") {
		a, _ := strconv.Atoi(p.next().s)
		ty.Prec = int16(a)
		if ty.Fam == types.Numeric {
			ty.Scale = 0
		}
		if p.acceptOp(",") {
			b, _ := strconv.Atoi(p.next().s)
			ty.Scale = int16(b)
		}
		if err := p.expectOp(")"); err != nil {
			return types.T{}, err
		}
	}
	if p.acceptOp("[") {
		if err := p.expectOp("]"); err != nil {
			return types.T{}, err
		}
		ty = types.TTextArray
	}
	return ty, nil
}

func (p *parser) parseArgs() ([]spec.Expr, error) {
	var args []spec.Expr
	if p.acceptOp(")") {
		return args, nil
	}
	for {
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		args = append(args, e)
		if p.acceptOp(")") {
			return args, nil
		}
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
	}
}

func unknownLit(s string) spec.Expr { return &spec.Const{D: types.NewString(s), T: types.TUnknown} }

func (p *parser) parsePrimary() (spec.Expr, error) {
	t := p.next()
	switch t.kind {
	case 'n':
		return numLiteral(t.s)
	case 's':
		return unknownLit(t.s), nil
	case 'o':
		if t.s == "(" {
			e, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			return e, p.expectOp(")")
		}
		return nil, fmt.Errorf("unexpected %q", t.s)
	case 0:
		return nil, fmt.Errorf("unexpected end")
	}
	switch t.s {
	case "null":
		return &spec.Const{D: types.Null, T: types.TUnknown}, nil
	case "true", "false":
		return &spec.Const{D: types.NewBool(t.s == "true"), T: types.TBool}, nil
	case "c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9":
		i := int(t.s[1] - '0')
		if i >= len(p.cols) {
			return nil, fmt.Errorf("no column %s", t.s)
		}
		return &spec.ColRef{Idx: i, T: p.cols[i], Name: t.s}, nil
	case "case":
		return p.parseCase()
	case "cast":
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("as"); err != nil {
			return nil, err
		}
		ty, err := p.parseType()
		if err != nil {
			return nil, err
		}
		return &spec.Cast{E: e, T: ty}, p.expectOp(")")
	case "array":
		if err := p.expectOp("["); err != nil {
			return nil, err
		}
		var elems []types.Datum
		for !p.acceptOp("]") {
			e := p.next()
			if e.kind == 0 {
				return nil, fmt.Errorf("unterminated array")
			}
			if e.kind == 's' {
				elems = append(elems, types.NewString(e.s))
			} else if e.kind == 'i' && e.s == "null" {
				elems = append(elems, types.Null)
			}
			p.acceptOp(",")
		}
		return &spec.Const{D: types.Datum{K: types.KArray, A: types.NewElems(elems)}, T: types.TTextArray}, nil
	case "current_date", "current_timestamp", "localtimestamp", "localtime", "current_user", "session_user",
		"current_schema", "current_catalog", "user", "current_role":
		if p.acceptOp("(") {
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
		}
		return call(t.s)
	case "extract":
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		f := p.next()
		if err := p.expectKw("from"); err != nil {
			return nil, err
		}
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return call("__pg_extract", &spec.Const{D: types.NewString(f.s), T: types.TText}, e)
	case "position":
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		a, err := p.parseOther()
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("in"); err != nil {
			return nil, err
		}
		b, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return call("__pg_position", a, b)
	case "trim":
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		fn := "btrim"
		switch {
		case p.acceptKw("both"):
		case p.acceptKw("leading"):
			fn = "ltrim"
		case p.acceptKw("trailing"):
			fn = "rtrim"
		}
		var chars spec.Expr
		if !p.isKw("from") {
			var err error
			if chars, err = p.parseExpr(); err != nil {
				return nil, err
			}
		}
		if p.acceptKw("from") {
			s, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			if chars == nil {
				return call(fn, s)
			}
			return call(fn, s, chars)
		}
		if err := p.expectOp(")"); err != nil {
			return nil, err
		}
		return call(fn, chars)
	case "substring":
		if err := p.expectOp("("); err != nil {
			return nil, err
		}
		s, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if p.acceptKw("from") {
			a, err := p.parseExpr()
			if err != nil {
				return nil, err
			}
			if p.acceptKw("for") {
				b, err := p.parseExpr()
				if err != nil {
					return nil, err
				}
				if err := p.expectOp(")"); err != nil {
					return nil, err
				}
				return call("substring", s, a, b)
			}
			if err := p.expectOp(")"); err != nil {
				return nil, err
			}
			return call("substring", s, a)
		}
		if err := p.expectOp(","); err != nil {
			return nil, err
		}
		rest, err := p.parseArgs()
		if err != nil {
			return nil, err
		}
		return call("substring", append([]spec.Expr{s}, rest...)...)
	}
	// Typed literal: type 'string'.
	if ty, ok := typeWords[t.s]; ok && p.peek().kind == 's' {
		s := p.next().s
		return &spec.Cast{E: unknownLit(s), T: ty}, nil
	}
	if t.s == "double" && p.isKw("precision") {
		p.next()
		s := p.next().s
		return &spec.Cast{E: unknownLit(s), T: types.TFloat8}, nil
	}
	if p.acceptOp("(") {
		args, err := p.parseArgs()
		if err != nil {
			return nil, err
		}
		return call(t.s, args...)
	}
	return nil, fmt.Errorf("unexpected identifier %s", t.s)
}

func (p *parser) parseCase() (spec.Expr, error) {
	c := &spec.Case{}
	if !p.isKw("when") {
		op, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		c.Operand = op
	}
	var ts []types.T
	for p.acceptKw("when") {
		cond, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		if err := p.expectKw("then"); err != nil {
			return nil, err
		}
		then, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		c.Whens = append(c.Whens, spec.When{Cond: cond, Then: then})
		ts = append(ts, then.Type())
	}
	if p.acceptKw("else") {
		e, err := p.parseExpr()
		if err != nil {
			return nil, err
		}
		c.Else = e
		ts = append(ts, e.Type())
	}
	if err := p.expectKw("end"); err != nil {
		return nil, err
	}
	t, err := CommonTypeFor("CASE", ts)
	if err != nil {
		return nil, err
	}
	c.T = t
	return c, nil
}

// parseSQL parses and binds src; cols gives the types of c0, c1, ...
func parseSQL(src string, cols ...types.T) (spec.Expr, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, cols: cols}
	e, err := p.parseExpr()
	if err != nil {
		return nil, err
	}
	if p.peek().kind != 0 {
		return nil, fmt.Errorf("trailing input at %q", p.peek().s)
	}
	return e, nil
}

// testNow is the statement time of the tests: 2024-03-15 12:34:56.789012 UTC.
const testNow = int64(1710506096789012)

// evalSQL evaluates src and renders the result as psql would show it, or
// the error as "ERROR <code>: <message>".
func evalSQL(src string, row types.Row, cols ...types.T) string {
	e, err := parseSQL(src, cols...)
	if err == nil {
		var fn Fn
		ctx := &Context{Now: testNow, User: "postgres", Database: "test", Priv: superuserPrivs{}}
		if fn, err = Compile(e, ctx); err == nil {
			var d types.Datum
			if d, err = fn(row); err == nil {
				if d.K == types.KNull {
					return "NULL"
				}
				t := e.Type()
				if t.Fam == types.Unknown {
					t = types.TText
				}
				return types.FormatText(d, t)
			}
		}
	}
	pe := pgerror.Flatten(err)
	return "ERROR " + string(pe.Code) + ": " + pe.Message
}

// superuserPrivs answers has_*_privilege as PostgreSQL answers a
// superuser (the cases were recorded as postgres).
type superuserPrivs struct{}

func (superuserPrivs) HasPrivilege(string, string, types.Datum, string) (bool, error) {
	return true, nil
}

func (superuserPrivs) RoleName(int64) string { return "postgres" }
