package parser

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// tokKind is the lexical class of a token.
type tokKind uint8

const (
	tkEOF    tokKind = iota
	tkIdent          // unquoted word; val is folded to lower case
	tkQIdent         // "quoted identifier"; val is the name as written
	tkString         // string literal of any kind; val is the decoded text
	tkNumber         // numeric literal; val is its text
	tkParam          // $n; val is n
	tkOp             // operator; val is its text
	tkPunct          // ( ) [ ] , ; . : ::
)

// String sub-kinds (token.sub).
const (
	strStd    = 0
	strEscape = 'e'
	strDollar = '$'
	strUni    = 'u'
	strBit    = 'b'
	strHex    = 'x'
)

// token is one lexical token of the user's text. pos and end are byte
// offsets into the whole input passed to Parse.
type token struct {
	kind tokKind
	val  string
	pos  int
	end  int
	sub  byte
}

func (t token) is(kind tokKind, val string) bool { return t.kind == kind && t.val == val }

// isWord reports whether t is the unquoted word w (lower case).
func (t token) isWord(w string) bool { return t.kind == tkIdent && t.val == w }

// isPunct reports whether t is the punctuation p.
func (t token) isPunct(p string) bool { return t.kind == tkPunct && t.val == p }

// isOp reports whether t is the operator op.
func (t token) isOp(op string) bool { return t.kind == tkOp && t.val == op }

// lexer scans Postgres lexical syntax.
type lexer struct {
	src  string
	pos  int
	toks []token
}

// lex returns the tokens of src (without comments and whitespace),
// terminated by a tkEOF token at len(src).
func lex(src string) ([]token, error) {
	if k := strings.IndexByte(src, 0); k >= 0 {
		return nil, pgerror.New(pgcode.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": 0x00").WithPosition(charPos(src, k))
	}
	if !utf8.ValidString(src) {
		k := 0
		for k < len(src) {
			r, size := utf8.DecodeRuneInString(src[k:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			k += size
		}
		return nil, pgerror.New(pgcode.CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": 0x%02x", src[k]).WithPosition(charPos(src, k))
	}
	l := &lexer{src: src, toks: make([]token, 0, len(src)/3+16)}
	for {
		t, err := l.next()
		if err != nil {
			return nil, err
		}
		if t.kind == tkString && (t.sub == strStd || t.sub == strEscape) && len(l.toks) > 0 {
			// String continuation: 'a'<newline>'b' is 'ab'.
			prev := &l.toks[len(l.toks)-1]
			if prev.kind == tkString && (prev.sub == strStd || prev.sub == strEscape) && hasNewline(src[prev.end:t.pos]) && t.sub == strStd {
				prev.val += t.val
				prev.end = t.end
				continue
			}
		}
		l.toks = append(l.toks, t)
		if t.kind == tkEOF {
			return l.toks, nil
		}
	}
}

func hasNewline(s string) bool { return strings.ContainsAny(s, "\n\r") }

// syntaxErrAt returns a 42601 error positioned at byte offset pos of src.
func syntaxErrAt(src string, pos int, format string, args ...any) *pgerror.Error {
	return pgerror.New(pgcode.Syntax, format, args...).WithPosition(charPos(src, pos))
}

// charPos converts a byte offset into a 1-based character position.
func charPos(src string, off int) int {
	if off > len(src) {
		off = len(src)
	}
	if off < 0 {
		off = 0
	}
	return utf8.RuneCountInString(src[:off]) + 1
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

func isIdentCont(c byte) bool {
	return isIdentStart(c) || c >= '0' && c <= '9' || c == '$'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

const opChars = "~!@#^&|`?+-*/%<>="

func isOpChar(c byte) bool { return strings.IndexByte(opChars, c) >= 0 }

// skipSpace skips whitespace and comments.
func (l *lexer) skipSpace() error {
	s := l.src
	for l.pos < len(s) {
		c := s[l.pos]
		switch {
		case isSpace(c):
			l.pos++
		case c == '-' && l.pos+1 < len(s) && s[l.pos+1] == '-':
			for l.pos < len(s) && s[l.pos] != '\n' && s[l.pos] != '\r' {
				l.pos++
			}
		case c == '/' && l.pos+1 < len(s) && s[l.pos+1] == '*':
			start := l.pos
			depth := 0
			for {
				if l.pos+1 >= len(s) {
					return syntaxErrAt(s, start, "unterminated /* comment at or near \"%s\"", s[start:])
				}
				if s[l.pos] == '/' && s[l.pos+1] == '*' {
					depth++
					l.pos += 2
				} else if s[l.pos] == '*' && s[l.pos+1] == '/' {
					depth--
					l.pos += 2
					if depth == 0 {
						break
					}
				} else {
					l.pos++
				}
			}
		default:
			return nil
		}
	}
	return nil
}

func (l *lexer) next() (token, error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	s := l.src
	start := l.pos
	if l.pos >= len(s) {
		return token{kind: tkEOF, pos: len(s), end: len(s)}, nil
	}
	c := s[l.pos]
	// Prefixed strings: E'..', B'..', X'..', N'..', U&'..', U&"..".
	if l.pos+1 < len(s) && s[l.pos+1] == '\'' {
		switch c {
		case 'e', 'E':
			l.pos++
			v, err := l.quoted(start, '\'', true)
			if err != nil {
				return token{}, err
			}
			return token{kind: tkString, val: v, pos: start, end: l.pos, sub: strEscape}, nil
		case 'b', 'B', 'x', 'X':
			l.pos++
			v, err := l.quoted(start, '\'', false)
			if err != nil {
				return token{}, err
			}
			sub := byte(strBit)
			if c == 'x' || c == 'X' {
				sub = strHex
			}
			return token{kind: tkString, val: v, pos: start, end: l.pos, sub: sub}, nil
		case 'n', 'N':
			l.pos++
			v, err := l.quoted(start, '\'', false)
			if err != nil {
				return token{}, err
			}
			return token{kind: tkString, val: v, pos: start, end: l.pos}, nil
		}
	}
	if (c == 'u' || c == 'U') && l.pos+2 < len(s) && s[l.pos+1] == '&' && (s[l.pos+2] == '\'' || s[l.pos+2] == '"') {
		q := s[l.pos+2]
		l.pos += 2
		v, err := l.quoted(start, q, false)
		if err != nil {
			return token{}, err
		}
		esc := byte('\\')
		// optional UESCAPE 'c'
		save := l.pos
		if err := l.skipSpace(); err == nil && l.pos+7 <= len(s) && strings.EqualFold(s[l.pos:l.pos+7], "uescape") {
			l.pos += 7
			_ = l.skipSpace()
			if l.pos+2 < len(s) && s[l.pos] == '\'' && s[l.pos+2] == '\'' {
				esc = s[l.pos+1]
				l.pos += 3
			} else {
				return token{}, syntaxErrAt(s, save, "invalid Unicode escape character")
			}
		} else {
			l.pos = save
		}
		dv, ok := decodeUnicodeEscapes(v, esc)
		if !ok {
			return token{}, syntaxErrAt(s, start, "invalid Unicode escape value")
		}
		if q == '"' {
			if dv == "" {
				return token{}, syntaxErrAt(s, start, "zero-length delimited identifier at or near \"%s\"", s[start:l.pos])
			}
			return token{kind: tkQIdent, val: truncIdent(dv), pos: start, end: l.pos}, nil
		}
		return token{kind: tkString, val: dv, pos: start, end: l.pos, sub: strUni}, nil
	}
	switch {
	case c == '\'':
		v, err := l.quoted(start, '\'', false)
		if err != nil {
			return token{}, err
		}
		return token{kind: tkString, val: v, pos: start, end: l.pos}, nil
	case c == '"':
		v, err := l.quoted(start, '"', false)
		if err != nil {
			return token{}, err
		}
		if v == "" {
			return token{}, syntaxErrAt(s, start, "zero-length delimited identifier at or near \"%s\"", s[start:l.pos])
		}
		return token{kind: tkQIdent, val: truncIdent(v), pos: start, end: l.pos}, nil
	case c == '$':
		// $n parameter or $tag$ dollar quote.
		if l.pos+1 < len(s) && isDigit(s[l.pos+1]) {
			l.pos++
			for l.pos < len(s) && isDigit(s[l.pos]) {
				l.pos++
			}
			return token{kind: tkParam, val: s[start+1 : l.pos], pos: start, end: l.pos}, nil
		}
		j := l.pos + 1
		for j < len(s) && s[j] != '$' && isIdentCont(s[j]) {
			j++
		}
		if j < len(s) && s[j] == '$' {
			tag := s[start : j+1]
			body := j + 1
			k := strings.Index(s[body:], tag)
			if k < 0 {
				return token{}, syntaxErrAt(s, start, "unterminated dollar-quoted string at or near \"%s\"", s[start:])
			}
			l.pos = body + k + len(tag)
			return token{kind: tkString, val: s[body : body+k], pos: start, end: l.pos, sub: strDollar}, nil
		}
		l.pos++
		return token{}, syntaxErrAt(s, start, "syntax error at or near \"$\"")
	case isDigit(c) || c == '.' && l.pos+1 < len(s) && isDigit(s[l.pos+1]):
		return l.number(), nil
	case isIdentStart(c):
		for l.pos < len(s) && isIdentCont(s[l.pos]) {
			l.pos++
		}
		return token{kind: tkIdent, val: truncIdent(foldIdent(s[start:l.pos])), pos: start, end: l.pos}, nil
	case c == ':':
		if l.pos+1 < len(s) && s[l.pos+1] == ':' {
			l.pos += 2
			return token{kind: tkPunct, val: "::", pos: start, end: l.pos}, nil
		}
		if l.pos+1 < len(s) && s[l.pos+1] == '=' {
			l.pos += 2
			return token{kind: tkOp, val: ":=", pos: start, end: l.pos}, nil
		}
		l.pos++
		return token{kind: tkPunct, val: ":", pos: start, end: l.pos}, nil
	case strings.IndexByte("()[],;.", c) >= 0:
		l.pos++
		return token{kind: tkPunct, val: string(c), pos: start, end: l.pos}, nil
	case isOpChar(c):
		return l.operator(), nil
	}
	_, size := utf8.DecodeRuneInString(s[l.pos:])
	l.pos += size
	return token{}, syntaxErrAt(s, start, "syntax error at or near \"%s\"", s[start:l.pos])
}

// maxIdentLen is Postgres' NAMEDATALEN-1: longer identifiers are truncated.
const maxIdentLen = 63

// truncIdent truncates an identifier to maxIdentLen bytes (on a character
// boundary), as Postgres does.
func truncIdent(s string) string {
	if len(s) <= maxIdentLen {
		return s
	}
	n := maxIdentLen
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// foldIdent lower-cases the ASCII letters of an unquoted identifier, as
// Postgres does.
func foldIdent(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 'A' && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func (l *lexer) number() token {
	s := l.src
	start := l.pos
	for l.pos < len(s) && isDigit(s[l.pos]) {
		l.pos++
	}
	if l.pos < len(s) && s[l.pos] == '.' && !(l.pos+1 < len(s) && s[l.pos+1] == '.') {
		l.pos++
		for l.pos < len(s) && isDigit(s[l.pos]) {
			l.pos++
		}
	}
	if l.pos < len(s) && (s[l.pos] == 'e' || s[l.pos] == 'E') {
		j := l.pos + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && isDigit(s[j]) {
			for j < len(s) && isDigit(s[j]) {
				j++
			}
			l.pos = j
		}
	}
	return token{kind: tkNumber, val: s[start:l.pos], pos: start, end: l.pos}
}

func (l *lexer) operator() token {
	s := l.src
	start := l.pos
	j := l.pos
	for j < len(s) && isOpChar(s[j]) {
		// a comment start ends the operator
		if j > start && (s[j] == '-' && j+1 < len(s) && s[j+1] == '-' || s[j] == '/' && j+1 < len(s) && s[j+1] == '*') {
			break
		}
		j++
	}
	op := s[start:j]
	if len(op) > 1 {
		if !strings.ContainsAny(op, "~!@#%^&|`?") {
			for len(op) > 1 && (op[len(op)-1] == '+' || op[len(op)-1] == '-') {
				op = op[:len(op)-1]
			}
		}
	}
	l.pos = start + len(op)
	return token{kind: tkOp, val: op, pos: start, end: l.pos}
}

// quoted scans a literal delimited by q at l.pos (which holds q); start is
// where the token began (for error positions).
// A doubled q stands for one q. With escapes, backslash escapes are decoded.
func (l *lexer) quoted(start int, q byte, escapes bool) (string, error) {
	s := l.src
	l.pos++
	var b strings.Builder
	for {
		if l.pos >= len(s) {
			what := "quoted string"
			if q == '"' {
				what = "quoted identifier"
			}
			return "", syntaxErrAt(s, start, "unterminated %s at or near \"%s\"", what, s[start:])
		}
		c := s[l.pos]
		if c == q {
			if l.pos+1 < len(s) && s[l.pos+1] == q {
				b.WriteByte(q)
				l.pos += 2
				continue
			}
			l.pos++
			return b.String(), nil
		}
		if escapes && c == '\\' && l.pos+1 < len(s) {
			n, err := l.escape(&b)
			if err != nil {
				return "", err
			}
			l.pos += n
			continue
		}
		b.WriteByte(c)
		l.pos++
	}
}

// escape decodes one backslash escape at l.pos into b and returns its length.
func (l *lexer) escape(b *strings.Builder) (int, error) {
	s := l.src[l.pos:]
	c := s[1]
	switch c {
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'x':
		n := 2
		for n < 4 && n < len(s) && isHex(s[n]) {
			n++
		}
		if n == 2 {
			b.WriteByte('x')
			return 2, nil
		}
		v, _ := strconv.ParseUint(s[2:n], 16, 8)
		b.WriteByte(byte(v))
		return n, nil
	case 'u', 'U':
		want := 4
		if c == 'U' {
			want = 8
		}
		if len(s) < 2+want {
			return 0, syntaxErrAt(l.src, l.pos, "invalid Unicode escape")
		}
		for i := 2; i < 2+want; i++ {
			if !isHex(s[i]) {
				return 0, syntaxErrAt(l.src, l.pos, "invalid Unicode escape")
			}
		}
		v, _ := strconv.ParseUint(s[2:2+want], 16, 32)
		if v == 0 || v > utf8.MaxRune {
			return 0, syntaxErrAt(l.src, l.pos, "invalid Unicode escape value")
		}
		b.WriteRune(rune(v))
		return 2 + want, nil
	default:
		if c >= '0' && c <= '7' {
			n := 1
			for n < 4 && n < len(s) && s[n] >= '0' && s[n] <= '7' {
				n++
			}
			v, _ := strconv.ParseUint(s[1:n], 8, 16)
			b.WriteByte(byte(v))
			return n, nil
		}
		// any other character stands for itself (including ' and \)
		_, size := utf8.DecodeRuneInString(s[1:])
		b.WriteString(s[1 : 1+size])
		return 1 + size, nil
	}
	return 2, nil
}

func isHex(c byte) bool {
	return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// decodeUnicodeEscapes decodes the escapes of a U& literal (esc + 4 hex
// digits, esc + '+' + 6 hex digits, esc esc).
func decodeUnicodeEscapes(s string, esc byte) (string, bool) {
	if strings.IndexByte(s, esc) < 0 {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != esc {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == esc {
			b.WriteByte(esc)
			i++
			continue
		}
		n := 4
		j := i + 1
		if j < len(s) && s[j] == '+' {
			n = 6
			j++
		}
		if j+n > len(s) {
			return "", false
		}
		v, err := strconv.ParseUint(s[j:j+n], 16, 32)
		if err != nil || v == 0 || v > utf8.MaxRune {
			return "", false
		}
		b.WriteRune(rune(v))
		i = j + n - 1
	}
	return b.String(), true
}
