package job

import "testing"

func TestProgressString(t *testing.T) {
	for _, c := range []struct {
		read, total int64
		want        string
	}{
		{0, 0, "0 of 0 rows (100%)"},
		{0, 4000, "0 of 4000 rows (0%)"},
		{1200, 4000, "1200 of 4000 rows (30%)"},
		{4000, 4000, "4000 of 4000 rows (100%), committing"},
	} {
		var p Progress
		p.Read.Store(c.read)
		p.Total.Store(c.total)
		if got := p.String(); got != c.want {
			t.Errorf("%d of %d: %q, want %q", c.read, c.total, got, c.want)
		}
	}
}
