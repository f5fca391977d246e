package tests

import "testing"

// TestLateralDiff maintains views of LATERAL subqueries correlated with the
// FROM item before them (a Top-N per row with ORDER BY … LIMIT, LEFT JOIN
// LATERAL … ON true keeping rows without a match, a correlation on an
// expression, a filter in the subquery and in the outer query) through
// runViewDiff: after every random change each view, and its query as a
// plain SELECT, must equal PostgreSQL's answer.
func TestLateralDiff(t *testing.T) {
	views := []string{
		"SELECT x.id, s.id AS sid, s.a FROM lat_t x, LATERAL (SELECT id, a FROM lat_t y WHERE y.g = x.g ORDER BY a DESC NULLS LAST, id LIMIT 2) s",
		"SELECT x.id, x.h, s.n FROM lat_t x LEFT JOIN LATERAL (SELECT n FROM lat_t y WHERE y.h = x.h AND y.a > 0 ORDER BY n, id LIMIT 1) s ON true",
		"SELECT x.id, s.id AS sid FROM lat_t x CROSS JOIN LATERAL (SELECT id FROM lat_t y WHERE y.a = x.a + 1) s WHERE x.g IS NOT NULL",
		"SELECT x.g, s.h, s.a FROM lat_t x JOIN LATERAL (SELECT h, a FROM lat_t y WHERE y.g = x.g AND y.h = x.h ORDER BY a, id OFFSET 1 LIMIT 1) s ON true",
		"SELECT x.id, s.* FROM lat_t x, LATERAL (SELECT y.id AS yid, y.n FROM lat_t y WHERE y.id = x.a) s",
	}
	compared, mismatches := runViewDiff(t, "lat_t", views)
	t.Logf("%d views, %d steps and a restart, %d comparisons, %d mismatches", len(views), viewDiffSteps+2, compared, mismatches)
}
