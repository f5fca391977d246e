package eval

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// This file holds pattern matching: LIKE/ILIKE and the POSIX regular
// expression operators and functions, on Go's regexp.

const (
	codeInvalidEscape pgcode.Code = "22025" // invalid_escape_sequence
	codeInvalidEscStr pgcode.Code = "22019" // invalid_escape_character
)

type likeTokKind uint8

const (
	tokLit  likeTokKind = iota // a literal string
	tokOne                     // _
	tokMany                    // %
)

type likeTok struct {
	kind likeTokKind
	lit  string
}

// likePattern is a compiled LIKE pattern.
type likePattern struct {
	toks []likeTok
	ci   bool
	// Fast forms: exact, prefix, suffix, contains (lit), or general.
	form byte
	lit  string
}

// compileLike parses a LIKE pattern; escape < 0 means no escape character.
func compileLike(pat string, escape rune, ci bool) (*likePattern, error) {
	if ci {
		pat = strings.ToLower(pat)
	}
	p := &likePattern{ci: ci}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			p.toks = append(p.toks, likeTok{kind: tokLit, lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(pat); {
		r, sz := utf8.DecodeRuneInString(pat[i:])
		i += sz
		switch {
		case escape >= 0 && r == escape:
			if i >= len(pat) {
				return nil, pgerror.New(codeInvalidEscape, "LIKE pattern must not end with escape character")
			}
			r2, sz2 := utf8.DecodeRuneInString(pat[i:])
			i += sz2
			lit.WriteRune(r2)
		case r == '%':
			flush()
			if n := len(p.toks); n == 0 || p.toks[n-1].kind != tokMany {
				p.toks = append(p.toks, likeTok{kind: tokMany})
			}
		case r == '_':
			flush()
			p.toks = append(p.toks, likeTok{kind: tokOne})
		default:
			lit.WriteRune(r)
		}
	}
	flush()
	p.form = 'g'
	t := p.toks
	switch {
	case len(t) == 0:
		p.form, p.lit = 'e', ""
	case len(t) == 1 && t[0].kind == tokLit:
		p.form, p.lit = 'e', t[0].lit
	case len(t) == 1 && t[0].kind == tokMany:
		p.form = '*'
	case len(t) == 2 && t[0].kind == tokLit && t[1].kind == tokMany:
		p.form, p.lit = 'p', t[0].lit
	case len(t) == 2 && t[0].kind == tokMany && t[1].kind == tokLit:
		p.form, p.lit = 's', t[1].lit
	case len(t) == 3 && t[0].kind == tokMany && t[1].kind == tokLit && t[2].kind == tokMany:
		p.form, p.lit = 'c', t[1].lit
	}
	return p, nil
}

func (p *likePattern) match(s string) bool {
	if p.ci {
		s = strings.ToLower(s)
	}
	switch p.form {
	case 'e':
		return s == p.lit
	case '*':
		return true
	case 'p':
		return strings.HasPrefix(s, p.lit)
	case 's':
		return strings.HasSuffix(s, p.lit)
	case 'c':
		return strings.Contains(s, p.lit)
	}
	return likeMatch(p.toks, s)
}

// likeMatch matches s against tokens, backtracking to the last %.
func likeMatch(toks []likeTok, s string) bool {
	ti, si := 0, 0
	starTi, starSi := -1, 0
	for {
		if ti < len(toks) {
			t := toks[ti]
			switch t.kind {
			case tokMany:
				starTi, starSi = ti, si
				ti++
				continue
			case tokOne:
				if si < len(s) {
					_, sz := utf8.DecodeRuneInString(s[si:])
					si += sz
					ti++
					continue
				}
			case tokLit:
				if strings.HasPrefix(s[si:], t.lit) {
					si += len(t.lit)
					ti++
					continue
				}
			}
		} else if si == len(s) {
			return true
		}
		// Mismatch: let the last % absorb one more character.
		if starTi < 0 || starSi >= len(s) {
			return false
		}
		_, sz := utf8.DecodeRuneInString(s[starSi:])
		starSi += sz
		ti, si = starTi+1, starSi
	}
}

// likeEscape returns the escape character of an ESCAPE clause.
func likeEscape(e string) (rune, error) {
	switch utf8.RuneCountInString(e) {
	case 0:
		return -1, nil
	case 1:
		r, _ := utf8.DecodeRuneInString(e)
		return r, nil
	}
	return 0, pgerror.New(codeInvalidEscStr, "invalid escape string").WithHint("Escape string must be empty or one character.")
}

func buildLike(b *bctx) (Fn, error) {
	ci := strings.Contains(b.name, "ilike")
	negate := strings.HasPrefix(b.name, "not ")
	x, y := b.fn(0), b.fn(1)
	var escFn Fn
	if len(b.args) == 3 {
		escFn = b.fn(2)
	}
	if pd, ok := b.konst(1); ok {
		esc := '\\'
		escOK := true
		if escFn != nil {
			ed, ok := b.konst(2)
			escOK = ok
			if ok && ed.K != types.KNull {
				var err error
				if esc, err = likeEscape(ed.S); err != nil {
					return nil, err
				}
			}
		}
		if escOK && pd.K != types.KNull {
			p, err := compileLike(pd.S, esc, ci)
			if err != nil {
				return nil, err
			}
			return func(row types.Row) (types.Datum, error) {
				s, err := x(row)
				if err != nil || s.K == types.KNull {
					return types.Null, err
				}
				return boolD(p.match(s.S) != negate), nil
			}, nil
		}
	}
	return func(row types.Row) (types.Datum, error) {
		s, pd, ok, err := eval2(x, y, row)
		if err != nil || !ok {
			return types.Null, err
		}
		esc := '\\'
		if escFn != nil {
			ed, err := escFn(row)
			if err != nil || ed.K == types.KNull {
				return types.Null, err
			}
			if esc, err = likeEscape(ed.S); err != nil {
				return types.Null, err
			}
		}
		p, err := compileLike(pd.S, esc, ci)
		if err != nil {
			return types.Null, err
		}
		return boolD(p.match(s.S) != negate), nil
	}, nil
}

// regexFlags is a parsed flags string of the regexp_* functions.
type regexFlags struct {
	global bool
	prefix string // Go flag group
	quote  bool
	expand bool
}

func parseRegexFlags(flags string, fname string, allowGlobal bool) (regexFlags, error) {
	f := regexFlags{}
	ci, newline, partial, inverse := false, false, false, false
	for _, r := range flags {
		switch r {
		case 'g':
			if !allowGlobal {
				return f, pgerror.New(pgcode.InvalidParameterValue, "%s() does not support the \"global\" option", fname).
					WithHint("Use the regexp_matches function instead.")
			}
			f.global = true
		case 'i':
			ci = true
		case 'c':
			ci = false
		case 'n', 'm':
			newline = true
		case 'p':
			partial = true
		case 'w':
			inverse = true
		case 's':
			newline, partial, inverse = false, false, false
		case 'x':
			f.expand = true
		case 'q':
			f.quote = true
		case 't', 'b', 'e':
		default:
			return f, pgerror.New(pgcode.InvalidParameterValue, "invalid regular expression option: \"%c\"", r)
		}
	}
	var p strings.Builder
	if ci {
		p.WriteString("i")
	}
	switch {
	case newline:
		p.WriteString("m")
	case partial:
	case inverse:
		p.WriteString("sm")
	default:
		p.WriteString("s")
	}
	if p.Len() > 0 {
		f.prefix = "(?" + p.String() + ")"
	}
	return f, nil
}

// compileRegex compiles a Postgres (ARE) pattern with Go's regexp,
// translating the escapes that differ.
func compileRegex(pat string, f regexFlags) (*regexp.Regexp, error) {
	if f.quote {
		pat = regexp.QuoteMeta(pat)
	} else {
		pat = translateRegex(pat, f.expand)
	}
	re, err := regexp.Compile(f.prefix + pat)
	if err != nil {
		msg := err.Error()
		var se *syntax.Error
		if errors.As(err, &se) {
			msg = string(se.Code)
			if m, ok := regexMessages[se.Code]; ok {
				msg = m
			}
		}
		return nil, pgerror.New(pgcode.InvalidRegularExpression, "invalid regular expression: %s", msg)
	}
	return re, nil
}

// regexMessages gives Postgres' wording of regexp syntax errors.
var regexMessages = map[syntax.ErrorCode]string{
	syntax.ErrMissingParen:          "parentheses () not balanced",
	syntax.ErrUnexpectedParen:       "parentheses () not balanced",
	syntax.ErrMissingBracket:        "brackets [] not balanced",
	syntax.ErrMissingRepeatArgument: "quantifier operand invalid",
	syntax.ErrInvalidRepeatOp:       "quantifier operand invalid",
	syntax.ErrInvalidEscape:         "invalid escape \\ sequence",
	syntax.ErrTrailingBackslash:     "invalid escape \\ sequence",
	syntax.ErrInvalidCharRange:      "invalid character range",
	syntax.ErrInvalidRepeatSize:     "invalid repetition count(s)",
	syntax.ErrInvalidCharClass:      "invalid character class",
}

// translateRegex rewrites ARE-only escapes to RE2 ones and, in expanded
// mode, drops white space and comments.
func translateRegex(pat string, expand bool) string {
	if !strings.ContainsAny(pat, `\[`) && !expand {
		return pat
	}
	var b strings.Builder
	inBracket := false
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case c == '\\' && i+1 < len(pat) && !inBracket:
			i++
			switch pat[i] {
			case 'y', 'm', 'M':
				b.WriteString(`\b`)
			case 'Y':
				b.WriteString(`\B`)
			case 'Z':
				b.WriteString(`\z`)
			default:
				b.WriteByte('\\')
				b.WriteByte(pat[i])
			}
		case c == '[' && !inBracket:
			if strings.HasPrefix(pat[i:], "[[:<:]]") || strings.HasPrefix(pat[i:], "[[:>:]]") {
				b.WriteString(`\b`)
				i += 6
				continue
			}
			inBracket = true
			b.WriteByte(c)
			// A ] right after [ or [^ is literal.
			if i+1 < len(pat) && pat[i+1] == '^' {
				i++
				b.WriteByte('^')
			}
			if i+1 < len(pat) && pat[i+1] == ']' {
				i++
				b.WriteString(`\]`)
			}
		case c == ']' && inBracket:
			inBracket = false
			b.WriteByte(c)
		case c == '[' && inBracket && i+1 < len(pat) && pat[i+1] == ':':
			end := strings.Index(pat[i:], ":]")
			if end < 0 {
				b.WriteByte(c)
				continue
			}
			b.WriteString(pat[i : i+end+2])
			i += end + 1
		case c == '\\' && inBracket && i+1 < len(pat):
			b.WriteByte(c)
			i++
			b.WriteByte(pat[i])
		case expand && !inBracket && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
		case expand && !inBracket && c == '#':
			for i < len(pat) && pat[i] != '\n' {
				i++
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// regexCache holds the last pattern compiled for a non-constant pattern
// argument.
type regexCache struct {
	mu    sync.Mutex
	pat   string
	flags regexFlags
	re    *regexp.Regexp
	plan  *regexPlan // re's, derived on first use
}

func (c *regexCache) get(pat string, f regexFlags) (*regexp.Regexp, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.re != nil && c.pat == pat && c.flags == f {
		return c.re, nil
	}
	re, err := compileRegex(pat, f)
	if err != nil {
		return nil, err
	}
	c.pat, c.flags, c.re, c.plan = pat, f, re, nil
	return re, nil
}

// planOf returns the search plan of re, which get returned.
func (c *regexCache) planOf(re *regexp.Regexp) *regexPlan {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.re != re {
		return newRegexPlan(re) // another row's pattern replaced it meanwhile
	}
	if c.plan == nil {
		c.plan = newRegexPlan(re)
	}
	return c.plan
}

// regexArgs gives a builder the compiled regexp of argument patIdx with
// the flags of argument flagIdx (-1: none), constant or per row.
type regexArgs struct {
	patFn, flagFn Fn
	fixed         *regexp.Regexp
	fixedPlan     *regexPlan
	fixedFlags    regexFlags
	cache         *regexCache
	fname         string
	allowGlobal   bool
	extraFlags    string
}

func newRegexArgs(b *bctx, patIdx, flagIdx int, fname string, allowGlobal bool, extra string) (*regexArgs, error) {
	ra := &regexArgs{patFn: b.fn(patIdx), cache: &regexCache{}, fname: fname, allowGlobal: allowGlobal, extraFlags: extra}
	flagsConst, flagsStr := true, ""
	if flagIdx >= 0 && flagIdx < len(b.args) {
		ra.flagFn = b.fn(flagIdx)
		fd, ok := b.konst(flagIdx)
		flagsConst = ok && fd.K != types.KNull
		flagsStr = fd.S
	}
	if flagsConst {
		f, err := parseRegexFlags(extra+flagsStr, fname, allowGlobal)
		if err != nil {
			return nil, err
		}
		ra.fixedFlags = f
		if pd, ok := b.konst(patIdx); ok && pd.K != types.KNull {
			re, err := compileRegex(pd.S, f)
			if err != nil {
				return nil, err
			}
			ra.fixed, ra.fixedPlan = re, newRegexPlan(re)
		}
	}
	return ra, nil
}

// plan returns the search plan of re, a regexp get returned.
func (ra *regexArgs) plan(re *regexp.Regexp) *regexPlan {
	if re == ra.fixed {
		return ra.fixedPlan
	}
	return ra.cache.planOf(re)
}

// get returns the regexp for row; null reports a NULL pattern or flags.
func (ra *regexArgs) get(row types.Row) (re *regexp.Regexp, f regexFlags, null bool, err error) {
	if ra.fixed != nil {
		return ra.fixed, ra.fixedFlags, false, nil
	}
	f = ra.fixedFlags
	if ra.flagFn != nil {
		fd, err := ra.flagFn(row)
		if err != nil || fd.K == types.KNull {
			return nil, f, true, err
		}
		if f, err = parseRegexFlags(ra.extraFlags+fd.S, ra.fname, ra.allowGlobal); err != nil {
			return nil, f, false, err
		}
	}
	pd, err := ra.patFn(row)
	if err != nil || pd.K == types.KNull {
		return nil, f, true, err
	}
	re, err = ra.cache.get(pd.S, f)
	return re, f, false, err
}

// subject evaluates a regular expression function's subject x and its
// pattern for row; ok is false when either is NULL (the result is NULL) or
// on an error.
func (ra *regexArgs) subject(x Fn, row types.Row) (s string, re *regexp.Regexp, ok bool, err error) {
	d, err := x(row)
	if err != nil {
		return "", nil, false, err
	}
	re, _, null, err := ra.get(row)
	if err != nil || null || d.K == types.KNull {
		return "", nil, false, err
	}
	return d.S, re, true, nil
}

func buildRegexOp(b *bctx) (Fn, error) {
	extra := ""
	if strings.HasSuffix(b.name, "i") {
		extra = "i"
	}
	negate := strings.HasPrefix(b.name, "__pg_not_")
	ra, err := newRegexArgs(b, 1, -1, b.name, false, extra)
	if err != nil {
		return nil, err
	}
	x := b.fn(0)
	return func(row types.Row) (types.Datum, error) {
		s, re, ok, err := ra.subject(x, row)
		if !ok {
			return types.Null, err
		}
		return boolD(ra.plan(re).match(re, s) != negate), nil
	}, nil
}

// expandReplacement appends Postgres' replacement text for one match:
// \1..\9 are groups, \& the whole match, \\ a backslash.
func expandReplacement(dst []byte, repl, src string, m []int) []byte {
	for i := 0; i < len(repl); i++ {
		c := repl[i]
		if c != '\\' || i+1 >= len(repl) {
			dst = append(dst, c)
			continue
		}
		n := repl[i+1]
		switch {
		case n >= '1' && n <= '9':
			g := int(n - '0')
			if 2*g+1 < len(m) && m[2*g] >= 0 {
				dst = append(dst, src[m[2*g]:m[2*g+1]]...)
			}
			i++
		case n == '&':
			dst = append(dst, src[m[0]:m[1]]...)
			i++
		case n == '\\':
			dst = append(dst, '\\')
			i++
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func buildRegexReplace(b *bctx) (Fn, error) {
	flagIdx := -1
	if len(b.args) == 4 {
		flagIdx = 3
	}
	ra, err := newRegexArgs(b, 1, flagIdx, "regexp_replace", true, "")
	if err != nil {
		return nil, err
	}
	x, r := b.fn(0), b.fn(2)
	return func(row types.Row) (types.Datum, error) {
		s, err := x(row)
		if err != nil {
			return types.Null, err
		}
		rd, err := r(row)
		if err != nil {
			return types.Null, err
		}
		re, f, null, err := ra.get(row)
		if err != nil || null || s.K == types.KNull || rd.K == types.KNull {
			return types.Null, err
		}
		var out []byte
		last := 0
		for _, m := range re.FindAllStringSubmatchIndex(s.S, -1) {
			out = append(out, s.S[last:m[0]]...)
			out = expandReplacement(out, rd.S, s.S, m)
			last = m[1]
			if !f.global {
				break
			}
		}
		if out == nil {
			return s, nil
		}
		out = append(out, s.S[last:]...)
		return str(string(out)), nil
	}, nil
}

// matchArray returns regexp_match's text[] for one match.
func matchArray(s string, m []int) types.Datum {
	var out []types.Datum
	if len(m) == 2 {
		out = []types.Datum{str(s[m[0]:m[1]])}
	} else {
		out = make([]types.Datum, 0, len(m)/2-1)
		for g := 1; g < len(m)/2; g++ {
			if m[2*g] < 0 {
				out = append(out, types.Null)
			} else {
				out = append(out, str(s[m[2*g]:m[2*g+1]]))
			}
		}
	}
	return types.Datum{K: types.KArray, A: types.NewElems(out)}
}

func buildRegexMatch(b *bctx) (Fn, error) {
	flagIdx := -1
	if len(b.args) == 3 {
		flagIdx = 2
	}
	ra, err := newRegexArgs(b, 1, flagIdx, b.name, false, "")
	if err != nil {
		return nil, err
	}
	x := b.fn(0)
	name := b.name
	if name == "regexp_match" {
		b.efn = regexMatchElem(x, ra)
	}
	return func(row types.Row) (types.Datum, error) {
		s, re, ok, err := ra.subject(x, row)
		if !ok {
			return types.Null, err
		}
		plan := ra.plan(re)
		switch name {
		case "regexp_like":
			return boolD(plan.match(re, s)), nil
		case "regexp_count":
			if plan.lit != "" && !strings.Contains(s, plan.lit) {
				return intD(0), nil
			}
			return intD(int64(len(re.FindAllStringIndex(s, -1)))), nil
		case "regexp_split_to_array":
			parts := re.Split(s, -1)
			out := make([]types.Datum, len(parts))
			for i, p := range parts {
				out[i] = str(p)
			}
			return types.Datum{K: types.KArray, A: types.NewElems(out)}, nil
		case "substring":
			var buf [16]int
			m := plan.findInto(re, s, buf[:0])
			switch {
			case m == nil:
				return types.Null, nil
			case len(m) == 2:
				return str(s[m[0]:m[1]]), nil
			case m[2] < 0:
				return types.Null, nil
			}
			return str(s[m[2]:m[3]]), nil
		}
		var buf [16]int
		m := plan.findInto(re, s, buf[:0])
		if m == nil {
			return types.Null, nil
		}
		return matchArray(s, m), nil
	}, nil
}

// regexMatchElem is regexp_match's elemFn: element i of the array without
// the array (regexp_match(url, '…'))[2] is a slice of url.
func regexMatchElem(x Fn, ra *regexArgs) elemFn {
	return func(row types.Row, i int64) (types.Datum, error) {
		s, re, ok, err := ra.subject(x, row)
		if !ok {
			return types.Null, err
		}
		var buf [16]int
		m := ra.plan(re).findInto(re, s, buf[:0])
		switch {
		case m == nil:
			return types.Null, nil
		case len(m) == 2: // no groups: the array holds the whole match
			if i != 1 {
				return types.Null, nil
			}
			return str(s[m[0]:m[1]]), nil
		case i < 1 || i >= int64(len(m)/2) || m[2*i] < 0:
			return types.Null, nil
		}
		return str(s[m[2*i]:m[2*i+1]]), nil
	}
}

func buildRegexSubstring(b *bctx) (Fn, error) {
	b.name = "substring"
	return buildRegexMatch(b)
}

func init() {
	T := types.Text
	for _, n := range []string{"like", "not like", "ilike", "not ilike"} {
		reg(n, fams(T, T), types.TBool, buildLike)
		reg(n, fams(T, T, T), types.TBool, buildLike)
	}
	for _, n := range []string{"__pg_regex", "__pg_regexi", "__pg_not_regex", "__pg_not_regexi", "~"} {
		reg(n, fams(T, T), types.TBool, buildRegexOp)
	}
	reg("regexp_replace", fams(T, T, T), types.TText, buildRegexReplace)
	reg("regexp_replace", fams(T, T, T, T), types.TText, buildRegexReplace)
	reg("regexp_match", fams(T, T), types.TTextArray, buildRegexMatch)
	reg("regexp_match", fams(T, T, T), types.TTextArray, buildRegexMatch)
	reg("regexp_like", fams(T, T), types.TBool, buildRegexMatch)
	reg("regexp_like", fams(T, T, T), types.TBool, buildRegexMatch)
	reg("regexp_count", fams(T, T), types.TInt4, buildRegexMatch)
	reg("regexp_split_to_array", fams(T, T), types.TTextArray, buildRegexMatch)
	reg("regexp_split_to_array", fams(T, T, T), types.TTextArray, buildRegexMatch)
}
