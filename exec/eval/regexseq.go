package eval

import (
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// A seqMatcher runs a regular expression of a restricted form without Go's
// engine: a sequence of literals, character classes and greedy runs of one
// class, \A, \z, capture groups around parts of the sequence, and
// alternations of \A, literals and classes — such as '(&|^)channel_id=([^&]*)'.
// The sequence is accepted only when, wherever it offers a choice (how far
// a run goes, which branch of an alternation is taken), at most one choice
// can be followed by the rest of the sequence; the match at a start
// position is then found in one pass with no backtracking, and it is the
// one Go's leftmost-first engine finds (the only one there is). A literal
// whose distance from the start of a match is bounded finds the candidate
// start positions, as in regexPlan.
type seqMatcher struct {
	items []seqItem
	ncap  int // capture groups, not counting the whole match
	// anchor is a literal item, at anchorMin to anchorMax bytes from the
	// start of every match; "" when there is none.
	anchor               string
	anchorMin, anchorMax int
	begin                bool // the sequence starts with \A
}

type seqKind uint8

const (
	seqLit   seqKind = iota // lit
	seqRun                  // min to max (-1: unbounded) runes of set, greedily
	seqBegin                // \A
	seqEnd                  // \z
	seqAlt                  // the first of alts that matches: seqLit, seqRun of one rune, seqBegin
	seqOpen                 // start of capture group cap
	seqClose                // end of capture group cap
)

type seqItem struct {
	kind     seqKind
	lit      string
	set      *runeSet
	min, max int
	alts     []seqItem
	// inOrder: the alternation ends the sequence, so its branches are
	// tried in the pattern's order (any one matching ends the match);
	// otherwise a consuming branch is taken over \A, which what follows
	// could not match.
	inOrder bool
	cap     int
}

// runeSet is a set of runes: a bitmap of ASCII and sorted inclusive
// ranges (syntax.Regexp's CharClass form) of the rest.
type runeSet struct {
	ascii  [2]uint64
	ranges []rune // lo, hi pairs of the whole set
}

func newRuneSet(ranges []rune) *runeSet {
	s := &runeSet{ranges: ranges}
	for i := 0; i+1 < len(ranges); i += 2 {
		for r := ranges[i]; r <= ranges[i+1] && r < utf8.RuneSelf; r++ {
			s.ascii[r>>6] |= 1 << (r & 63)
		}
	}
	return s
}

func (s *runeSet) has(r rune) bool {
	if r < utf8.RuneSelf {
		return s.hasByte(byte(r))
	}
	return s.hasWide(r)
}

func (s *runeSet) hasByte(c byte) bool { return s.ascii[c>>6]&(1<<(c&63)) != 0 }

// hasWide is has for a rune beyond ASCII.
func (s *runeSet) hasWide(r rune) bool {
	rs := s.ranges
	lo, hi := 0, len(rs)/2
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch {
		case r < rs[2*m]:
			hi = m
		case r > rs[2*m+1]:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

// widths returns the fewest and most bytes one rune of the set takes.
func (s *runeSet) widths() (int, int) {
	return runeWidth(s.ranges[0]), runeWidth(s.ranges[len(s.ranges)-1])
}

func runeWidth(r rune) int {
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	case r < 0x10000:
		return 3
	}
	return 4
}

// rangesMeet reports whether two range lists share a rune.
func rangesMeet(a, b []rune) bool {
	for i := 0; i+1 < len(a); i += 2 {
		for j := 0; j+1 < len(b); j += 2 {
			if a[i] <= b[j+1] && b[j] <= a[i+1] {
				return true
			}
		}
	}
	return false
}

// newSeqMatcher returns the matcher of t, a simplified parse of a pattern
// with ncap capture groups, or nil when t is not of the form it runs.
func newSeqMatcher(t *syntax.Regexp, ncap int) *seqMatcher {
	m := &seqMatcher{ncap: ncap}
	if !m.flatten(t) || !m.deterministic() {
		return nil
	}
	caps := 0
	for _, it := range m.items {
		if it.kind == seqOpen {
			caps++
		}
	}
	if caps != ncap {
		return nil
	}
	m.begin = len(m.items) > 0 && m.items[0].kind == seqBegin
	lo, hi := 0, 0
	for _, it := range m.items {
		if it.kind == seqLit && len(it.lit) > len(m.anchor) {
			m.anchor, m.anchorMin, m.anchorMax = it.lit, lo, hi
		}
		a, b := it.widths()
		if b < 0 {
			break
		}
		lo, hi = lo+a, hi+b
	}
	return m
}

// flatten appends t's items, reporting false when t is outside the form.
func (m *seqMatcher) flatten(t *syntax.Regexp) bool {
	switch t.Op {
	case syntax.OpConcat:
		for _, s := range t.Sub {
			if !m.flatten(s) {
				return false
			}
		}
		return true
	case syntax.OpCapture:
		m.items = append(m.items, seqItem{kind: seqOpen, cap: t.Cap})
		if !m.flatten(t.Sub[0]) {
			return false
		}
		m.items = append(m.items, seqItem{kind: seqClose, cap: t.Cap})
		return true
	case syntax.OpEmptyMatch:
		return true
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		if t.Flags&syntax.NonGreedy != 0 {
			return false
		}
		set := oneRune(t.Sub[0])
		if set == nil {
			return false
		}
		it := seqItem{kind: seqRun, set: set, max: -1}
		switch t.Op {
		case syntax.OpPlus:
			it.min = 1
		case syntax.OpQuest:
			it.max = 1
		}
		m.items = append(m.items, it)
		return true
	case syntax.OpAlternate:
		it := seqItem{kind: seqAlt}
		for _, s := range t.Sub {
			b, ok := atom(s)
			if !ok || b.kind == seqEnd {
				return false
			}
			for _, o := range it.alts {
				if b.kind != seqBegin && o.kind != seqBegin && rangesMeet(b.first(), o.first()) {
					return false // two consuming branches could both match
				}
			}
			it.alts = append(it.alts, b)
		}
		m.items = append(m.items, it)
		return true
	}
	it, ok := atom(t)
	if ok {
		m.items = append(m.items, it)
	}
	return ok
}

// atom returns t as a literal, one rune of a class, \A or \z.
func atom(t *syntax.Regexp) (seqItem, bool) {
	switch t.Op {
	case syntax.OpBeginText:
		return seqItem{kind: seqBegin}, true
	case syntax.OpEndText:
		return seqItem{kind: seqEnd}, true
	case syntax.OpLiteral:
		if len(t.Rune) == 0 || t.Flags&syntax.FoldCase != 0 {
			return seqItem{}, false
		}
		return seqItem{kind: seqLit, lit: string(t.Rune)}, true
	}
	if set := oneRune(t); set != nil {
		return seqItem{kind: seqRun, set: set, min: 1, max: 1}, true
	}
	return seqItem{}, false
}

// oneRune returns the set of runes t matches when t matches one rune.
func oneRune(t *syntax.Regexp) *runeSet {
	switch t.Op {
	case syntax.OpCharClass:
		if len(t.Rune) == 0 {
			return nil
		}
		return newRuneSet(t.Rune)
	case syntax.OpAnyChar:
		return newRuneSet([]rune{0, utf8.MaxRune})
	case syntax.OpAnyCharNotNL:
		return newRuneSet([]rune{0, '\n' - 1, '\n' + 1, utf8.MaxRune})
	case syntax.OpLiteral:
		if len(t.Rune) == 1 && t.Flags&syntax.FoldCase == 0 {
			return newRuneSet([]rune{t.Rune[0], t.Rune[0]})
		}
	}
	return nil
}

// first returns the ranges of the runes a match of a consuming item can
// begin with.
func (it *seqItem) first() []rune {
	switch it.kind {
	case seqLit:
		r, _ := utf8.DecodeRuneInString(it.lit)
		return []rune{r, r}
	case seqRun:
		return it.set.ranges
	case seqAlt:
		var rs []rune
		for i := range it.alts {
			rs = append(rs, it.alts[i].first()...)
		}
		return rs
	}
	return nil
}

// nullable reports whether the item can match the empty string.
func (it *seqItem) nullable() bool {
	switch it.kind {
	case seqLit:
		return false
	case seqRun:
		return it.min == 0
	case seqAlt:
		for _, b := range it.alts {
			if b.nullable() {
				return true
			}
		}
		return false
	}
	return true
}

// widths returns the fewest and most bytes the item matches (most: -1 when
// unbounded).
func (it *seqItem) widths() (int, int) {
	switch it.kind {
	case seqLit:
		return len(it.lit), len(it.lit)
	case seqRun:
		a, b := it.set.widths()
		if it.max < 0 {
			return it.min * a, -1
		}
		return it.min * a, it.max * b
	case seqAlt:
		lo, hi := -1, 0
		for _, br := range it.alts {
			a, b := br.widths()
			if lo < 0 || a < lo {
				lo = a
			}
			hi = max(hi, b)
		}
		return lo, hi
	}
	return 0, 0
}

// deterministic checks that each choice of the sequence is decided by what
// follows it, and marks the alternations that end it.
func (m *seqMatcher) deterministic() bool {
	for i := range m.items {
		it := &m.items[i]
		var choice []rune // the runes after which the item could stop early
		switch it.kind {
		case seqRun:
			if it.min == it.max {
				continue
			}
			choice = it.set.ranges
		case seqAlt:
			hasBegin, consumes := false, false
			for _, b := range it.alts {
				if b.kind == seqBegin {
					hasBegin = true
				} else {
					consumes = true
				}
			}
			if !hasBegin || !consumes {
				continue
			}
			choice = it.first()
		default:
			continue
		}
		next := m.next(i)
		if next == nil {
			it.inOrder = true // nothing follows: the first choice stands
			continue
		}
		// A shorter run, or \A instead of a consuming branch, leaves the
		// text at a rune of choice (or, for \A at the start of a non-empty
		// text, at the rune the branch would consume): what follows must
		// be unable to match there.
		switch {
		case next.kind == seqEnd:
		case next.kind == seqBegin || next.nullable():
			return false
		case rangesMeet(next.first(), choice):
			return false
		}
	}
	return true
}

// next returns the item after i, skipping group boundaries, or nil.
func (m *seqMatcher) next(i int) *seqItem {
	for j := i + 1; j < len(m.items); j++ {
		if k := m.items[j].kind; k != seqOpen && k != seqClose {
			return &m.items[j]
		}
	}
	return nil
}

// find sets caps (2·(ncap+1) entries) to the submatch indexes of the
// leftmost match in s and reports whether there is one. ok is false when
// the matcher gives up on s — it is not valid UTF-8, or the search has
// gone on too long — and Go's engine must decide.
func (m *seqMatcher) find(s string, caps []int) (found, ok bool) {
	budget := 4*len(s) + 64
	if m.anchor == "" {
		if !utf8.ValidString(s) {
			return false, false
		}
		for q := 0; q <= len(s); q++ {
			if q < len(s) && !utf8.RuneStart(s[q]) {
				continue
			}
			if m.at(s, q, caps, &budget) {
				return true, true
			}
			if m.begin {
				return false, true
			}
			if budget < 0 {
				return false, false
			}
		}
		return false, true
	}
	valid := false
	for p := 0; p+m.anchorMin <= len(s); {
		// Every match starting at p or later has the anchor at least
		// anchorMin bytes after p, and at most anchorMax bytes after
		// its start.
		i := strings.Index(s[p+m.anchorMin:], m.anchor)
		if i < 0 {
			return false, true
		}
		i += p + m.anchorMin
		if !valid {
			if !utf8.ValidString(s) {
				return false, false
			}
			valid = true
		}
		for q := max(p, i-m.anchorMax); q <= i-m.anchorMin; q++ {
			if q < len(s) && !utf8.RuneStart(s[q]) {
				continue
			}
			if m.at(s, q, caps, &budget) {
				return true, true
			}
		}
		if budget < 0 {
			return false, false
		}
		p = i - m.anchorMin + 1
	}
	return false, true
}

// at matches the sequence at q, setting caps on success; each rune
// examined is taken from budget.
func (m *seqMatcher) at(s string, q int, caps []int, budget *int) bool {
	pos := q
	*budget--
	for i := range m.items {
		it := &m.items[i]
		switch it.kind {
		case seqOpen:
			caps[2*it.cap] = pos
		case seqClose:
			caps[2*it.cap+1] = pos
		case seqLit:
			if !strings.HasPrefix(s[pos:], it.lit) {
				return false
			}
			pos += len(it.lit)
		case seqBegin:
			if pos != 0 {
				return false
			}
		case seqEnd:
			if pos != len(s) {
				return false
			}
		case seqRun:
			n, start, set := 0, pos, it.set
			for n != it.max && pos < len(s) {
				if c := s[pos]; c < utf8.RuneSelf {
					if !set.hasByte(c) {
						break
					}
					pos++
				} else {
					r, w := utf8.DecodeRuneInString(s[pos:])
					if !set.hasWide(r) {
						break
					}
					pos += w
				}
				n++
			}
			*budget -= pos - start
			if n < it.min {
				return false
			}
		case seqAlt:
			w := it.alt(s, pos)
			if w < 0 {
				return false
			}
			pos += w
		}
	}
	caps[0], caps[1] = q, pos
	return true
}

// alt returns how many bytes at pos the alternation takes, or -1.
func (it *seqItem) alt(s string, pos int) int {
	begin := false
	for i := range it.alts {
		b := &it.alts[i]
		switch b.kind {
		case seqBegin:
			if pos == 0 {
				if it.inOrder {
					return 0
				}
				begin = true
			}
		case seqLit:
			if strings.HasPrefix(s[pos:], b.lit) {
				return len(b.lit)
			}
		case seqRun:
			if pos < len(s) {
				r, w := rune(s[pos]), 1
				if r >= utf8.RuneSelf {
					r, w = utf8.DecodeRuneInString(s[pos:])
				}
				if b.set.has(r) {
					return w
				}
			}
		}
	}
	if begin {
		return 0
	}
	return -1
}
