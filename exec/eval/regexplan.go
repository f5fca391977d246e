package eval

import (
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// This file holds the search plan of a regular expression: what lets a
// leftmost match be found without running Go's engine from every position
// of the subject. Go's regexp skips ahead only for a literal prefix; an
// unanchored pattern such as '(&|^)channel_id=([^&]*)' is otherwise tried
// at each byte, which on a URL costs microseconds.

// regexPlan is derived once per compiled pattern.
type regexPlan struct {
	// lit is a literal every match contains ("" if none is known): a
	// subject without it cannot match, which strings.Contains finds far
	// faster than the engine.
	lit string
	// anchor is a literal of the pattern's top-level concatenation whose
	// distance from the start of a match is at most width bytes; tail is
	// the pattern with \A (^) made never to match. Every match then starts
	// at or after the first occurrence of anchor less width, and tail run
	// on the subject from that point finds the same leftmost match (\A
	// could only have matched at the subject's start). Nil when the
	// pattern has no such literal or reads the text before a match (\b,
	// \B, multi-line ^).
	anchor string
	width  int
	tail   *regexp.Regexp
	// seq runs the pattern without Go's engine when it is of the form
	// seqMatcher handles; nil otherwise.
	seq *seqMatcher
}

func newRegexPlan(re *regexp.Regexp) *regexPlan {
	p := &regexPlan{}
	t, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return p
	}
	simple := t.Simplify()
	p.lit = longestLiteral(simple)
	p.seq = newSeqMatcher(simple, re.NumSubexp())
	if readsBefore(t) {
		return p
	}
	top := t
	for top.Op == syntax.OpCapture {
		top = top.Sub[0]
	}
	if top.Op != syntax.OpConcat {
		return p
	}
	width := 0
	for _, s := range top.Sub {
		if l := caseLiteral(s); l != "" && len(l) > len(p.anchor) {
			p.anchor, p.width = l, width
		}
		w := maxWidth(s)
		if w < 0 {
			break
		}
		width += w
	}
	if p.anchor == "" {
		return p
	}
	tail, err := regexp.Compile(withoutBeginText(t).String())
	if err != nil || tail.NumSubexp() != re.NumSubexp() {
		p.anchor = ""
		return p
	}
	p.tail = tail
	return p
}

// start returns where in s the search may begin (0: the whole subject)
// and whether s can match at all.
func (p *regexPlan) start(s string) (int, bool) {
	if p.lit != "" && p.lit != p.anchor && !strings.Contains(s, p.lit) {
		return 0, false
	}
	if p.tail == nil {
		return 0, true
	}
	i := strings.Index(s, p.anchor)
	if i < 0 {
		return 0, false
	}
	i -= p.width
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return max(i, 0), true
}

// find returns the submatch indexes of re's leftmost match in s, as
// re.FindStringSubmatchIndex does.
func (p *regexPlan) find(re *regexp.Regexp, s string) []int {
	return p.findInto(re, s, nil)
}

// findInto is find writing the indexes into dst when it has room.
func (p *regexPlan) findInto(re *regexp.Regexp, s string, dst []int) []int {
	if p.seq != nil {
		n := 2 * (p.seq.ncap + 1)
		if cap(dst) < n {
			dst = make([]int, n)
		}
		dst = dst[:n]
		if found, ok := p.seqFind(s, dst); ok {
			if !found {
				return nil
			}
			return dst
		}
	}
	from, ok := p.start(s)
	switch {
	case !ok:
		return nil
	case from == 0:
		return re.FindStringSubmatchIndex(s)
	}
	m := p.tail.FindStringSubmatchIndex(s[from:])
	for i := range m {
		if m[i] >= 0 {
			m[i] += from
		}
	}
	return m
}

// seqFind runs p.seq on s, as seqMatcher.find does, after the check for
// the literal every match contains.
func (p *regexPlan) seqFind(s string, caps []int) (found, ok bool) {
	if p.lit != "" && p.lit != p.seq.anchor && !strings.Contains(s, p.lit) {
		return false, true
	}
	return p.seq.find(s, caps)
}

// match reports whether re matches s.
func (p *regexPlan) match(re *regexp.Regexp, s string) bool {
	if p.seq != nil {
		var buf [16]int
		caps := buf[:]
		if n := 2 * (p.seq.ncap + 1); n > len(buf) {
			caps = make([]int, n)
		}
		if found, ok := p.seqFind(s, caps); ok {
			return found
		}
	}
	from, ok := p.start(s)
	switch {
	case !ok:
		return false
	case from == 0:
		return re.MatchString(s)
	}
	return p.tail.MatchString(s[from:])
}

// longestLiteral returns the longest case-sensitive literal that every
// match of t contains: a top-level literal of a concatenation.
func longestLiteral(t *syntax.Regexp) string {
	switch t.Op {
	case syntax.OpLiteral:
		if t.Flags&syntax.FoldCase == 0 {
			return string(t.Rune)
		}
	case syntax.OpCapture:
		return longestLiteral(t.Sub[0])
	case syntax.OpConcat:
		best := ""
		for _, s := range t.Sub {
			if l := longestLiteral(s); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return ""
}

// caseLiteral returns t's text when t is a case-sensitive literal (or a
// group of one).
func caseLiteral(t *syntax.Regexp) string {
	for t.Op == syntax.OpCapture {
		t = t.Sub[0]
	}
	if t.Op == syntax.OpLiteral && t.Flags&syntax.FoldCase == 0 {
		return string(t.Rune)
	}
	return ""
}

// maxWidth returns the most bytes t can match, or -1 when unbounded.
func maxWidth(t *syntax.Regexp) int {
	switch t.Op {
	case syntax.OpNoMatch, syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpBeginText, syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return 0
	case syntax.OpLiteral:
		n := 0
		for _, r := range t.Rune {
			if t.Flags&syntax.FoldCase != 0 {
				n += utf8.UTFMax // a fold may be longer than r
			} else {
				n += utf8.RuneLen(r)
			}
		}
		return n
	case syntax.OpCharClass, syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return maxWidth(t.Sub[0])
	case syntax.OpRepeat:
		w := maxWidth(t.Sub[0])
		if w < 0 || t.Max < 0 {
			return -1
		}
		return w * t.Max
	case syntax.OpConcat:
		n := 0
		for _, s := range t.Sub {
			w := maxWidth(s)
			if w < 0 {
				return -1
			}
			n += w
		}
		return n
	case syntax.OpAlternate:
		n := 0
		for _, s := range t.Sub {
			w := maxWidth(s)
			if w < 0 {
				return -1
			}
			n = max(n, w)
		}
		return n
	}
	return -1 // star, plus
}

// readsBefore reports whether t looks at the text before a position
// other than through \A: a word boundary or a multi-line ^.
func readsBefore(t *syntax.Regexp) bool {
	switch t.Op {
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpBeginLine:
		return true
	}
	for _, s := range t.Sub {
		if readsBefore(s) {
			return true
		}
	}
	return false
}

// withoutBeginText returns a copy of t in which \A never matches.
func withoutBeginText(t *syntax.Regexp) *syntax.Regexp {
	c := *t
	if c.Op == syntax.OpBeginText {
		return &syntax.Regexp{Op: syntax.OpNoMatch, Flags: t.Flags}
	}
	if len(t.Sub) > 0 {
		c.Sub = make([]*syntax.Regexp, len(t.Sub))
		for i, s := range t.Sub {
			c.Sub[i] = withoutBeginText(s)
		}
	}
	return &c
}
