package eval

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestRegexPlanSameMatches checks that a search plan finds exactly the
// match the engine finds from the start of the subject, over random
// subjects built from the patterns' own pieces.
func TestRegexPlanSameMatches(t *testing.T) {
	cases := []struct {
		pat    string
		anchor string // the plan's anchor literal, "" for none
	}{
		{`(&|^)channel_id=([^&]*)`, "channel_id="},
		{`^abc(x*)`, "abc"},
		{`a?b?xyz(.*)`, "xyz"},
		{`(?i:k)?abc`, "abc"},
		{`é?abc(é*)`, "abc"},
		{`.{0,3}foo(\d+)`, "foo"},
		{`(x|^y)z`, "z"},
		{`(ab|^)(cd)ef$`, "cd"},
		{`\bfoo`, ""},
		{`(?m)^foo`, ""},
		{`[a-c]{2}lit|other`, ""},
		{`x*abc`, ""},
		{`(.|xx)?abc(.)`, "abc"},
		{`(ab|[^&])?cd`, "cd"},
		{`(?i)abc`, ""},
	}
	pieces := []string{"a", "b", "c", "x", "y", "z", "&", "é", "K", "k", "\n", "1", "2", "foo", "abc", "xyz", "cd", "ef", "lit", "channel_id=", "=", "^"}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		re := regexp.MustCompile(c.pat)
		p := newRegexPlan(re)
		if p.anchor != c.anchor || (p.tail != nil) != (c.anchor != "") {
			t.Fatalf("%s: anchor %q (tail %v), want %q", c.pat, p.anchor, p.tail != nil, c.anchor)
		}
		for range 20000 {
			var b strings.Builder
			for range rng.IntN(12) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			s := b.String()
			if rng.IntN(4) == 0 { // a multi-byte rune cut in half
				s = s + "é"[:1] + s
			}
			want := re.FindStringSubmatchIndex(s)
			if got := p.find(re, s); !slices.Equal(got, want) {
				t.Fatalf("%s on %q: plan found %v, engine %v", c.pat, s, got, want)
			}
			if got := p.match(re, s); got != (want != nil) {
				t.Fatalf("%s on %q: plan match %v", c.pat, s, got)
			}
		}
	}
}

// TestSeqMatcherSameMatches compares the sequence matcher with Go's engine
// over random patterns in and around the form it runs and random subjects
// built from the patterns' pieces.
func TestSeqMatcherSameMatches(t *testing.T) {
	lits := []string{"a", "b", "ab", "&", "=", "é", "x", "channel_id=", "日"}
	classes := []string{`[^&]`, `[a-c]`, `[ab&]`, `.`, `[^a]`, `[é日]`, `\d`, `[^=&]`, `x`, `é`}
	quants := []string{"*", "+", "?", "{2}", "{1,3}", "{2,}", "*?", "", ""}
	alts := []string{`(&|^)`, `(^|&)`, `(a|b)`, `(ab|^)`, `(a|bc|^)`, `(x|y)`, `(?:a|^)`, `(a|ab)`, `(a|$)`, `(=|&|^)`}
	anchors := []string{"^", "$", `\A`, `\z`}
	pieces := []string{"a", "b", "c", "x", "y", "&", "=", "é", "日", "1", "ab", "channel_id=", "\n", "\xff", "é"[:1]}
	rng := rand.New(rand.NewPCG(3, 4))
	element := func() string {
		switch rng.IntN(8) {
		case 0, 1:
			return regexp.QuoteMeta(lits[rng.IntN(len(lits))])
		case 2, 3:
			return classes[rng.IntN(len(classes))] + quants[rng.IntN(len(quants))]
		case 4, 5:
			return alts[rng.IntN(len(alts))]
		case 6:
			return anchors[rng.IntN(len(anchors))]
		}
		return "()"
	}
	accepted := 0
	for range 3000 {
		var b strings.Builder
		if rng.IntN(2) == 0 {
			b.WriteString("(?s)")
		} else if rng.IntN(8) == 0 {
			b.WriteString("(?i)")
		}
		for range 1 + rng.IntN(5) {
			e := element()
			if rng.IntN(4) == 0 {
				e = "(" + e + ")"
			}
			if rng.IntN(8) == 0 {
				e = "(" + e + element() + ")"
			}
			b.WriteString(e)
		}
		pat := b.String()
		re, err := regexp.Compile(pat)
		if err != nil {
			continue
		}
		p := newRegexPlan(re)
		if p.seq == nil {
			continue
		}
		accepted++
		for range 300 {
			var sb strings.Builder
			for range rng.IntN(10) {
				sb.WriteString(pieces[rng.IntN(len(pieces))])
			}
			s := sb.String()
			want := re.FindStringSubmatchIndex(s)
			if got := p.find(re, s); !slices.Equal(got, want) {
				t.Fatalf("%s on %q: plan found %v, engine %v", pat, s, got, want)
			}
			if got := p.match(re, s); got != (want != nil) {
				t.Fatalf("%s on %q: plan match %v", pat, s, got)
			}
		}
	}
	if accepted < 500 {
		t.Fatalf("only %d of the patterns ran on the sequence matcher", accepted)
	}
	t.Logf("%d patterns on the sequence matcher", accepted)
}

// FuzzSeqMatcher checks the sequence matcher against Go's engine on any
// pattern it accepts and any subject.
func FuzzSeqMatcher(f *testing.F) {
	f.Add(`(&|^)channel_id=([^&]*)`, "a=1&channel_id=42&b")
	f.Add(`(?s)(ab|^)x[^=]+=(.?)$`, "abxé=日")
	f.Add(`(a|b|^)\d{1,3}z`, "a12z")
	f.Fuzz(func(t *testing.T, pat, s string) {
		re, err := regexp.Compile(pat)
		if err != nil {
			return
		}
		p := newRegexPlan(re)
		if p.seq == nil {
			return
		}
		want := re.FindStringSubmatchIndex(s)
		if got := p.find(re, s); !slices.Equal(got, want) {
			t.Fatalf("%s on %q: plan found %v, engine %v", pat, s, got, want)
		}
	})
}
