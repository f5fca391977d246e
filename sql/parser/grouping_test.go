package parser

import (
	"testing"

	"sluice/sql/pgerror"
)

func TestRewriteGroupingSets(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"rollup", `SELECT a, b, grouping(a, b) FROM t GROUP BY ROLLUP (a, (b, c))`,
			"SELECT `a`,`b`,GROUPING(`a`, `b`) FROM `t` GROUP BY __PG_ROLLUP(`a`, __PG_GSET(`b`, `c`))"},
		{"cube crossed", `SELECT 1 FROM t GROUP BY a, CUBE (b, c + 1)`,
			"SELECT 1 FROM `t` GROUP BY `a`,__PG_CUBE(`b`, `c`+1)"},
		{"sets nested", `SELECT 1 FROM t GROUP BY GROUPING SETS ((a, b), (), a, ROLLUP (a), GROUPING SETS ((a)), ((a + b) * 2))`,
			"SELECT 1 FROM `t` GROUP BY __PG_GROUPING_SETS(__PG_GSET(`a`, `b`), __PG_GSET(), `a`, __PG_ROLLUP(`a`), __PG_GROUPING_SETS((`a`)), ((`a`+`b`)*2))"},
		{"distinct and empty", `SELECT count(*) FROM t GROUP BY DISTINCT (a, b), () HAVING count(*) > 1`,
			"SELECT COUNT(1) FROM `t` GROUP BY __PG_GROUP_DISTINCT(),__PG_GSET(`a`, `b`),__PG_GSET() HAVING COUNT(1)>1"},
		{"row comparison stays", `SELECT 1 FROM t GROUP BY (a, b) = (c, d)`,
			"SELECT 1 FROM `t` GROUP BY ROW(`a`,`b`)=ROW(`c`,`d`)"},
		{"rollup as a name", `SELECT rollup, cube FROM t GROUP BY rollup, cube`,
			"SELECT `rollup`,`cube` FROM `t` GROUP BY `rollup`,`cube`"},
	})
}

func TestRewriteGroupingSetsErrors(t *testing.T) {
	for _, sql := range []string{
		`SELECT 1 FROM t GROUP BY ROLLUP (())`,
		`SELECT 1 FROM t GROUP BY GROUPING SETS a`,
		`SELECT 1 FROM t GROUP BY ROLLUP (a`,
	} {
		if _, err := ParseOne(sql); err == nil || pgerror.GetCode(err) != "42601" {
			t.Errorf("%s: got %v, want a 42601 syntax error", sql, err)
		}
	}
}
