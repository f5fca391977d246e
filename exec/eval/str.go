package eval

import (
	"crypto/md5"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file holds the string functions and "||".

const maxStringLen = 1 << 30

// MaxStringLen is the longest string a function or an aggregate may build
// (PostgreSQL's 1 GB limit); beyond it they end with 54000.
const MaxStringLen = maxStringLen

func str(s string) types.Datum { return types.Datum{K: types.KString, S: s} }

func intD(i int64) types.Datum { return types.Datum{K: types.KInt, I: i} }

func str1(f func(string) string) builder {
	return build1(func(a types.Datum) (types.Datum, error) { return str(f(a.S)), nil })
}

// indexLower returns idx[strings.ToLower(s)], lowering an ASCII s (as
// strings.ToLower does: A–Z only) into a buffer instead of a new string.
func indexLower(idx map[string]int, s string) (int, bool) {
	var buf [64]byte
	if len(s) > len(buf) {
		i, ok := idx[strings.ToLower(s)]
		return i, ok
	}
	for j := 0; j < len(s); j++ {
		c := s[j]
		if c >= utf8.RuneSelf {
			i, ok := idx[strings.ToLower(s)]
			return i, ok
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[j] = c
	}
	i, ok := idx[string(buf[:len(s)])]
	return i, ok
}

func runeLen(s string) int64 { return int64(utf8.RuneCountInString(s)) }

// runeOffset returns the byte offset of the n-th character (0-based) of s,
// or len(s) if s is shorter.
func runeOffset(s string, n int64) int {
	if n <= 0 {
		return 0
	}
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, sz := utf8.DecodeRuneInString(s[i:])
		i += sz
	}
	return i
}

func initcap(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	inWord := false
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if inWord {
				b.WriteRune(unicode.ToLower(r))
			} else {
				b.WriteRune(unicode.ToUpper(r))
			}
			inWord = true
		} else {
			b.WriteRune(r)
			inWord = false
		}
	}
	return b.String()
}

// substring implements substring(s from start for count) with Postgres'
// handling of starts before 1; count < 0 means "to the end".
func substring(s string, start, count int64, hasCount bool) (types.Datum, error) {
	if hasCount && count < 0 {
		return types.Null, pgerror.New(codeSubstringError, "negative substring length not allowed")
	}
	s1 := start
	if s1 < 1 {
		s1 = 1
	}
	if !hasCount {
		return str(s[runeOffset(s, s1-1):]), nil
	}
	e, ok := add64(start, count)
	if !ok {
		e = 1<<62 - 1
	}
	if e <= s1 {
		return str(""), nil
	}
	from := runeOffset(s, s1-1)
	to := from + runeOffset(s[from:], e-s1)
	return str(s[from:to]), nil
}

const codeSubstringError pgcode.Code = "22011"

// position returns the 1-based character position of needle in haystack,
// 0 if absent.
func position(haystack, needle string) int64 {
	i := strings.Index(haystack, needle)
	if i < 0 {
		return 0
	}
	return runeLen(haystack[:i]) + 1
}

func trimSet(chars string) func(rune) bool {
	if chars == " " {
		return func(r rune) bool { return r == ' ' }
	}
	return func(r rune) bool { return strings.ContainsRune(chars, r) }
}

func pad(s string, n int64, fill string, left bool) (types.Datum, error) {
	if n <= 0 {
		return str(""), nil
	}
	if n > maxStringLen {
		return types.Null, pgerror.New(pgcode.ProgramLimitExceeded, "requested length too large")
	}
	l := runeLen(s)
	if l >= n || fill == "" {
		return str(s[:runeOffset(s, n)]), nil
	}
	need := n - l
	var b strings.Builder
	fr := []rune(fill)
	if !left {
		b.WriteString(s)
	}
	for i := int64(0); i < need; i++ {
		b.WriteRune(fr[i%int64(len(fr))])
	}
	if left {
		b.WriteString(s)
	}
	return str(b.String()), nil
}

func leftN(s string, n int64) string {
	if n < 0 {
		l := runeLen(s)
		n = l + n
		if n < 0 {
			n = 0
		}
	}
	return s[:runeOffset(s, n)]
}

func rightN(s string, n int64) string {
	l := runeLen(s)
	if n < 0 {
		n = l + n
		if n < 0 {
			n = 0
		}
	}
	if n >= l {
		return s
	}
	return s[runeOffset(s, l-n):]
}

func splitPart(s, delim string, n int64) (types.Datum, error) {
	if n == 0 {
		return types.Null, pgerror.New(pgcode.InvalidParameterValue, "field position must not be zero")
	}
	if s == "" {
		return str(""), nil
	}
	if delim == "" {
		if n == 1 || n == -1 {
			return str(s), nil
		}
		return str(""), nil
	}
	if n < 0 {
		n = int64(strings.Count(s, delim)) + 1 + n + 1
		if n < 1 {
			return str(""), nil
		}
	}
	// Walk to the n-th field without splitting the whole string.
	for ; n > 1; n-- {
		i := strings.Index(s, delim)
		if i < 0 {
			return str(""), nil
		}
		s = s[i+len(delim):]
	}
	if i := strings.Index(s, delim); i >= 0 {
		s = s[:i]
	}
	return str(s), nil
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// budgeted2 and budgeted3 build string builders (repeat, lpad, rpad) that
// first check the result's size against the statement's memory budget
// (53200), so that one call cannot allocate past statement_mem. A result
// past PostgreSQL's 1 GB limit is 54000 first, as there.
func budgeted2(size func(a, c types.Datum) int64, f func(a, c types.Datum) (types.Datum, error)) builder {
	return func(b *bctx) (Fn, error) {
		g := b.ctx.Guard
		return strict2(b.fn(0), b.fn(1), func(a, c types.Datum) (types.Datum, error) {
			sz := size(a, c)
			if sz > maxStringLen {
				return types.Null, pgerror.New(pgcode.ProgramLimitExceeded, "requested length too large")
			}
			if err := g.Fits(sz); err != nil {
				return types.Null, err
			}
			return f(a, c)
		}), nil
	}
}

func budgeted3(size func(a, b, c types.Datum) int64, f func(a, b, c types.Datum) (types.Datum, error)) builder {
	return func(b *bctx) (Fn, error) {
		g := b.ctx.Guard
		return build3(func(x, y, z types.Datum) (types.Datum, error) {
			sz := size(x, y, z)
			if sz > maxStringLen {
				return types.Null, pgerror.New(pgcode.ProgramLimitExceeded, "requested length too large")
			}
			if err := g.Fits(sz); err != nil {
				return types.Null, err
			}
			return f(x, y, z)
		})(b)
	}
}

func repeat(s string, n int64) (types.Datum, error) {
	if n <= 0 || s == "" {
		return str(""), nil
	}
	if n > maxStringLen/int64(len(s)) {
		return types.Null, pgerror.New(pgcode.ProgramLimitExceeded, "requested length too large")
	}
	return str(strings.Repeat(s, int(n))), nil
}

func translate(s, from, to string) string {
	fr, tr := []rune(from), []rune(to)
	var b strings.Builder
	for _, r := range s {
		idx := -1
		for i, c := range fr {
			if c == r {
				idx = i
				break
			}
		}
		switch {
		case idx < 0:
			b.WriteRune(r)
		case idx < len(tr):
			b.WriteRune(tr[idx])
		}
	}
	return b.String()
}

// quoteIdent quotes an identifier when Postgres would.
func quoteIdent(s string) string {
	safe := s != ""
	for i, r := range s {
		if !(r >= 'a' && r <= 'z' || r == '_' || (i > 0 && r >= '0' && r <= '9')) {
			safe = false
			break
		}
	}
	if safe && !reservedWords[s] {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// reservedWords are the Postgres keywords quote_ident must quote.
var reservedWords = map[string]bool{
	"all": true, "analyse": true, "analyze": true, "and": true, "any": true, "array": true, "as": true,
	"asc": true, "asymmetric": true, "authorization": true, "between": true, "bigint": true, "binary": true,
	"bit": true, "boolean": true, "both": true, "case": true, "cast": true, "char": true, "character": true,
	"check": true, "coalesce": true, "collate": true, "collation": true, "column": true, "concurrently": true,
	"constraint": true, "create": true, "cross": true, "current_catalog": true, "current_date": true,
	"current_role": true, "current_schema": true, "current_time": true, "current_timestamp": true,
	"current_user": true, "dec": true, "decimal": true, "default": true, "deferrable": true, "desc": true,
	"distinct": true, "do": true, "else": true, "end": true, "except": true, "exists": true, "extract": true,
	"false": true, "fetch": true, "float": true, "for": true, "foreign": true, "freeze": true, "from": true,
	"full": true, "grant": true, "greatest": true, "group": true, "grouping": true, "having": true,
	"ilike": true, "in": true, "initially": true, "inner": true, "inout": true, "int": true, "integer": true,
	"intersect": true, "interval": true, "into": true, "is": true, "isnull": true, "join": true,
	"lateral": true, "leading": true, "least": true, "left": true, "like": true, "limit": true,
	"localtime": true, "localtimestamp": true, "national": true, "natural": true, "nchar": true,
	"none": true, "normalize": true, "not": true, "notnull": true, "null": true, "nullif": true,
	"numeric": true, "offset": true, "on": true, "only": true, "or": true, "order": true, "out": true,
	"outer": true, "overlaps": true, "overlay": true, "placing": true, "position": true, "precision": true,
	"primary": true, "real": true, "references": true, "returning": true, "right": true, "row": true,
	"select": true, "session_user": true, "setof": true, "similar": true, "smallint": true, "some": true,
	"substring": true, "symmetric": true, "system_user": true, "table": true, "tablesample": true,
	"then": true, "time": true, "timestamp": true, "to": true, "trailing": true, "treat": true, "trim": true,
	"true": true, "union": true, "unique": true, "user": true, "using": true, "values": true,
	"varchar": true, "variadic": true, "verbose": true, "when": true, "where": true, "window": true,
	"with": true, "xmlattributes": true, "xmlconcat": true, "xmlelement": true, "xmlexists": true,
	"xmlforest": true, "xmlnamespaces": true, "xmlparse": true, "xmlpi": true, "xmlroot": true,
	"xmlserialize": true, "xmltable": true,
}

func quoteLiteral(s string) string {
	q := "'" + strings.ReplaceAll(s, "'", "''") + "'"
	if strings.Contains(s, `\`) {
		return "E" + strings.ReplaceAll(q, `\`, `\\`)
	}
	return q
}

// textOf formats a value of type t as text, for concat and anything||text.
func textOf(d types.Datum, t types.T) string {
	if d.K == types.KString {
		return d.S
	}
	return types.FormatText(d, t)
}

// catText is the text of a value in anything || text, which Postgres
// defines as a cast to text (so booleans are "true"/"false").
func catText(d types.Datum, t types.T) string {
	if d.K == types.KBool {
		if d.I != 0 {
			return "true"
		}
		return "false"
	}
	return textOf(d, t)
}

func buildConcat(b *bctx) (Fn, error) {
	fns := argFns(b)
	ts := make([]types.T, len(b.args))
	for i := range b.args {
		ts[i] = b.args[i].t
	}
	ws := b.name == "concat_ws"
	return func(row types.Row) (types.Datum, error) {
		var sb strings.Builder
		sep := ""
		first := true
		for i, f := range fns {
			d, err := f(row)
			if err != nil {
				return types.Null, err
			}
			if ws && i == 0 {
				if d.K == types.KNull {
					return types.Null, nil
				}
				sep = d.S
				continue
			}
			if d.K == types.KNull {
				continue
			}
			if ws && !first {
				sb.WriteString(sep)
			}
			first = false
			sb.WriteString(textOf(d, ts[i]))
		}
		return str(sb.String()), nil
	}, nil
}

// resolveConcatOp resolves "||": text || text, and anything || text (or
// text || anything) as Postgres' anytextcat/textanycat; bytea || bytea.
func resolveConcatOp(name string, args []types.T) (*resolution, error) {
	if len(args) != 2 {
		return nil, notFound(name, args)
	}
	l, r := args[0].Fam, args[1].Fam
	isBytes := func(f types.Family) bool { return f == types.Bytea || f == types.Unknown }
	if (l == types.Bytea || r == types.Bytea) && isBytes(l) && isBytes(r) {
		return &resolution{ret: types.TBytea, casts: []types.T{types.TBytea, types.TBytea}, build: buildConcatOp}, nil
	}
	if isJSONOrUnknown(l) && isJSONOrUnknown(r) && (l == types.JSONB || r == types.JSONB) {
		return resolveJSONConcat()
	}
	if types.IsElemArray(l) || types.IsElemArray(r) {
		return resolveElemArrayConcat(args)
	}
	if l == types.TextArray || r == types.TextArray {
		return resolveArrayCat(args)
	}
	isText := func(f types.Family) bool { return category(f) == 'S' || f == types.Unknown }
	if !isText(l) && !isText(r) {
		return nil, notFound(name, args)
	}
	casts := make([]types.T, 2)
	for i, a := range args {
		switch {
		case a.Fam == types.Unknown:
			casts[i] = types.TText
		case category(a.Fam) == 'S':
			casts[i] = a
		default:
			// anytextcat: the value's output form.
			casts[i] = a
		}
	}
	return &resolution{ret: types.TText, casts: casts, build: buildConcatOp}, nil
}

func buildConcatOp(b *bctx) (Fn, error) {
	x, y := b.fn(0), b.fn(1)
	lt, rt := b.args[0].t, b.args[1].t
	bytea := b.ret.Fam == types.Bytea
	return func(row types.Row) (types.Datum, error) {
		a, c, ok, err := eval2(x, y, row)
		if !ok || err != nil {
			return types.Null, err
		}
		s := catText(a, lt) + catText(c, rt)
		if bytea {
			return types.Datum{K: types.KBytes, S: s}, nil
		}
		return str(s), nil
	}, nil
}

func resolveArrayCat(args []types.T) (*resolution, error) {
	casts := make([]types.T, 2)
	for i, a := range args {
		switch a.Fam {
		case types.TextArray:
			casts[i] = a
		case types.Unknown:
			// Against an array an untyped literal is an array, as
			// anyarray || anyarray wins in Postgres.
			casts[i] = types.TTextArray
		default:
			if category(a.Fam) != 'S' {
				return nil, notFound("||", args)
			}
			casts[i] = a
		}
	}
	return &resolution{ret: types.TTextArray, casts: casts, build: func(b *bctx) (Fn, error) {
		lArr, rArr := b.args[0].t.Fam == types.TextArray, b.args[1].t.Fam == types.TextArray
		x, y := b.fn(0), b.fn(1)
		return func(row types.Row) (types.Datum, error) {
			a, err := x(row)
			if err != nil {
				return types.Null, err
			}
			c, err := y(row)
			if err != nil {
				return types.Null, err
			}
			var out []types.Datum
			add := func(d types.Datum, isArr bool) {
				if isArr {
					out = append(out, d.Elems()...)
				} else {
					out = append(out, d)
				}
			}
			if a.K == types.KNull && lArr {
				if c.K == types.KNull && rArr {
					return types.Null, nil
				}
			} else {
				add(a, lArr)
			}
			if !(c.K == types.KNull && rArr) {
				add(c, rArr)
			}
			return types.Datum{K: types.KArray, A: types.NewElems(out)}, nil
		}, nil
	}}, nil
}

func arrayToString(arr types.Datum, sep string, nullStr *string) types.Datum {
	var sb strings.Builder
	first := true
	for _, e := range arr.Elems() {
		if e.K == types.KNull {
			if nullStr == nil {
				continue
			}
			if !first {
				sb.WriteString(sep)
			}
			sb.WriteString(*nullStr)
			first = false
			continue
		}
		if !first {
			sb.WriteString(sep)
		}
		sb.WriteString(textOf(e, types.TText))
		first = false
	}
	return str(sb.String())
}

func init() {
	T, I4, By := types.Text, types.Int4, types.Bytea
	tt, ti := types.TText, types.TInt4

	specials["||"] = resolveConcatOp
	reg("upper", fams(T), tt, str1(strings.ToUpper))
	lower := str1(strings.ToLower)
	reg("lower", fams(T), tt, func(b *bctx) (Fn, error) {
		b.lowerOf = b.fn(0)
		return lower(b)
	})
	reg("initcap", fams(T), tt, str1(initcap))
	reg("length", fams(T), ti, build1(func(a types.Datum) (types.Datum, error) { return intD(runeLen(a.S)), nil }))
	reg("length", fams(By), ti, build1(func(a types.Datum) (types.Datum, error) { return intD(int64(len(a.S))), nil }))
	reg("octet_length", fams(T), ti, build1(func(a types.Datum) (types.Datum, error) { return intD(int64(len(a.S))), nil }))
	reg("octet_length", fams(By), ti, build1(func(a types.Datum) (types.Datum, error) { return intD(int64(len(a.S))), nil }))
	reg("bit_length", fams(T), ti, build1(func(a types.Datum) (types.Datum, error) { return intD(8 * int64(len(a.S))), nil }))
	reg("substring", fams(T, I4), tt, build2(func(a, c types.Datum) (types.Datum, error) {
		return substring(a.S, c.I, 0, false)
	}))
	reg("substring", fams(T, I4, I4), tt, build3(func(v0, v1, v2 types.Datum) (types.Datum, error) {
		return substring(v0.S, v1.I, v2.I, true)
	}))
	reg("substring", fams(T, T), tt, buildRegexSubstring)
	reg("position", fams(T, T), ti, build2(func(a, c types.Datum) (types.Datum, error) {
		return intD(position(a.S, c.S)), nil
	}))
	reg("__pg_position", fams(T, T), ti, build2(func(a, c types.Datum) (types.Datum, error) {
		return intD(position(c.S, a.S)), nil
	}))
	reg("replace", fams(T, T, T), tt, build3(func(v0, v1, v2 types.Datum) (types.Datum, error) {
		if v1.S == "" {
			return v0, nil
		}
		return str(strings.ReplaceAll(v0.S, v1.S, v2.S)), nil
	}))
	regVariadic("concat", fams(famAny), tt, buildConcat)
	regVariadic("concat_ws", fams(T, famAny), tt, buildConcat)
	for _, n := range []string{"btrim", "ltrim", "rtrim"} {
		name := n
		trim := func(s, chars string) string {
			set := trimSet(chars)
			switch name {
			case "ltrim":
				return strings.TrimLeftFunc(s, set)
			case "rtrim":
				return strings.TrimRightFunc(s, set)
			}
			return strings.TrimFunc(s, set)
		}
		reg(n, fams(T), tt, build1(func(a types.Datum) (types.Datum, error) { return str(trim(a.S, " ")), nil }))
		reg(n, fams(T, T), tt, build2(func(a, c types.Datum) (types.Datum, error) { return str(trim(a.S, c.S)), nil }))
	}
	reg("lpad", fams(T, I4), tt, budgeted2(func(a, c types.Datum) int64 { return c.I }, func(a, c types.Datum) (types.Datum, error) { return pad(a.S, c.I, " ", true) }))
	reg("lpad", fams(T, I4, T), tt, budgeted3(func(v0, v1, v2 types.Datum) int64 { return v1.I }, func(v0, v1, v2 types.Datum) (types.Datum, error) { return pad(v0.S, v1.I, v2.S, true) }))
	reg("rpad", fams(T, I4), tt, budgeted2(func(a, c types.Datum) int64 { return c.I }, func(a, c types.Datum) (types.Datum, error) { return pad(a.S, c.I, " ", false) }))
	reg("rpad", fams(T, I4, T), tt, budgeted3(func(v0, v1, v2 types.Datum) int64 { return v1.I }, func(v0, v1, v2 types.Datum) (types.Datum, error) { return pad(v0.S, v1.I, v2.S, false) }))
	reg("left", fams(T, I4), tt, build2(func(a, c types.Datum) (types.Datum, error) { return str(leftN(a.S, c.I)), nil }))
	reg("right", fams(T, I4), tt, build2(func(a, c types.Datum) (types.Datum, error) { return str(rightN(a.S, c.I)), nil }))
	reg("split_part", fams(T, T, I4), tt, build3(func(v0, v1, v2 types.Datum) (types.Datum, error) {
		return splitPart(v0.S, v1.S, v2.I)
	}))
	reg("starts_with", fams(T, T), types.TBool, build2(func(a, c types.Datum) (types.Datum, error) {
		return boolD(strings.HasPrefix(a.S, c.S)), nil
	}))
	reg("reverse", fams(T), tt, str1(reverse))
	reg("repeat", fams(T, I4), tt, budgeted2(func(a, c types.Datum) int64 { return int64(len(a.S)) * max(c.I, 0) }, func(a, c types.Datum) (types.Datum, error) { return repeat(a.S, c.I) }))
	md5fn := build1(func(a types.Datum) (types.Datum, error) {
		sum := md5.Sum([]byte(a.S))
		return str(hex.EncodeToString(sum[:])), nil
	})
	reg("md5", fams(T), tt, md5fn)
	reg("md5", fams(By), tt, md5fn)
	reg("translate", fams(T, T, T), tt, build3(func(v0, v1, v2 types.Datum) (types.Datum, error) {
		return str(translate(v0.S, v1.S, v2.S)), nil
	}))
	reg("ascii", fams(T), ti, build1(func(a types.Datum) (types.Datum, error) {
		if a.S == "" {
			return intD(0), nil
		}
		r, _ := utf8.DecodeRuneInString(a.S)
		return intD(int64(r)), nil
	}))
	reg("chr", fams(I4), tt, build1(func(a types.Datum) (types.Datum, error) {
		switch {
		case a.I == 0:
			return types.Null, pgerror.New(pgcode.ProgramLimitExceeded, "null character not permitted")
		case a.I < 0 || a.I > unicode.MaxRune || (a.I >= 0xD800 && a.I <= 0xDFFF):
			return types.Null, pgerror.New(pgcode.ProgramLimitExceeded, "requested character too large for encoding: %d", a.I)
		}
		return str(string(rune(a.I))), nil
	}))
	toHex := build1(func(a types.Datum) (types.Datum, error) { return str(strconv.FormatUint(uint64(a.I), 16)), nil })
	reg("to_hex", fams(types.Int8), tt, toHex)
	reg("to_hex", fams(I4), tt, build1(func(a types.Datum) (types.Datum, error) {
		return str(strconv.FormatUint(uint64(uint32(int32(a.I))), 16)), nil
	}))
	reg("quote_ident", fams(T), tt, str1(quoteIdent))
	reg("quote_literal", fams(T), tt, str1(quoteLiteral))
	reg("quote_nullable", fams(T), tt, func(b *bctx) (Fn, error) {
		x := b.fn(0)
		return func(row types.Row) (types.Datum, error) {
			d, err := x(row)
			if err != nil {
				return types.Null, err
			}
			if d.K == types.KNull {
				return str("NULL"), nil
			}
			return str(quoteLiteral(d.S)), nil
		}, nil
	})
	// Arrays (text[] only).
	ta := types.TextArray
	subscript := build2(func(a, c types.Datum) (types.Datum, error) {
		if c.I < 1 || c.I > int64(len(a.Elems())) {
			return types.Null, nil
		}
		return a.Elems()[c.I-1], nil
	})
	reg("__pg_subscript", fams(ta, I4), tt, func(b *bctx) (Fn, error) {
		// A constant subscript of an array whose elements can be had
		// alone does not build the array.
		if types.IsVector(b.args[0].t.Fam) {
			// int2vector and oidvector subscripts start at 0.
			return strict2(b.fn(0), b.fn(1), func(a, c types.Datum) (types.Datum, error) {
				if c.I < 0 || c.I >= int64(len(a.Elems())) {
					return types.Null, nil
				}
				return a.Elems()[c.I], nil
			}), nil
		}
		if i, ok := b.konst(1); ok && i.K != types.KNull && b.args[0].efn != nil {
			efn, n := b.args[0].efn, i.I
			return func(row types.Row) (types.Datum, error) { return efn(row, n) }, nil
		}
		return subscript(b)
	})
	reg("array_to_string", fams(ta, T), tt, build2(func(a, c types.Datum) (types.Datum, error) {
		return arrayToString(a, c.S, nil), nil
	}))
	reg("array_to_string", fams(ta, T, T), tt, func(b *bctx) (Fn, error) {
		x, y, z := b.fn(0), b.fn(1), b.fn(2)
		return func(row types.Row) (types.Datum, error) {
			a, c, ok, err := eval2(x, y, row)
			if err != nil || !ok {
				return types.Null, err
			}
			n, err := z(row)
			if err != nil {
				return types.Null, err
			}
			if n.K == types.KNull {
				return arrayToString(a, c.S, nil), nil
			}
			return arrayToString(a, c.S, &n.S), nil
		}, nil
	})
	reg("string_to_array", fams(T, T), types.TTextArray, func(b *bctx) (Fn, error) {
		x, y := b.fn(0), b.fn(1)
		return func(row types.Row) (types.Datum, error) {
			a, err := x(row)
			if err != nil || a.K == types.KNull {
				return types.Null, err
			}
			c, err := y(row)
			if err != nil {
				return types.Null, err
			}
			var out []types.Datum
			switch {
			case a.S == "":
				out = []types.Datum{}
			case c.K == types.KNull:
				for _, r := range a.S {
					out = append(out, str(string(r)))
				}
			case c.S == "":
				out = []types.Datum{a}
			default:
				for _, p := range strings.Split(a.S, c.S) {
					out = append(out, str(p))
				}
			}
			return types.Datum{K: types.KArray, A: types.NewElems(out)}, nil
		}, nil
	})
	reg("array_length", fams(ta, I4), ti, build2(func(a, c types.Datum) (types.Datum, error) {
		if c.I != 1 || len(a.Elems()) == 0 {
			return types.Null, nil
		}
		return intD(int64(len(a.Elems()))), nil
	}))
	reg("cardinality", fams(ta), ti, build1(func(a types.Datum) (types.Datum, error) {
		return intD(int64(len(a.Elems()))), nil
	}))
}
