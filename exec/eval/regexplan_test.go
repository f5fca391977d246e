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
