package parser

import (
	"errors"
	"testing"

	"sluice/sql/pgerror"
)

func TestRewriteAsOfJoin(t *testing.T) {
	runRewriteCases(t, []rewriteCase{
		{"inner", "SELECT * FROM a ASOF JOIN b ON a.k = b.k AND a.ts >= b.ts",
			"SELECT * FROM `a` JOIN `b` ON __PG_ASOF(`a`.`k`=`b`.`k` AND `a`.`ts`>=`b`.`ts`)"},
		{"left outer, aliases", "SELECT * FROM a x ASOF LEFT OUTER JOIN b y ON x.k = y.k AND x.ts < y.ts WHERE x.k > 1",
			"SELECT * FROM `a` AS `x` LEFT JOIN `b` AS `y` ON __PG_ASOF(`x`.`k`=`y`.`k` AND `x`.`ts`<`y`.`ts`) WHERE `x`.`k`>1"},
		{"asof as an alias after AS", "SELECT asof.k FROM a AS asof JOIN b ON asof.k = b.k",
			"SELECT `asof`.`k` FROM `a` AS `asof` JOIN `b` ON `asof`.`k`=`b`.`k`"},
	})
}

func TestRewriteAsOfJoinNeedsOn(t *testing.T) {
	for _, q := range []string{"SELECT * FROM a ASOF JOIN b USING (k)", "SELECT * FROM a ASOF JOIN b", "SELECT * FROM a ASOF LEFT JOIN b WHERE true"} {
		_, err := ParseOne(q)
		var pe *pgerror.Error
		if !errors.As(err, &pe) || pe.Code != "42601" {
			t.Errorf("%s: got %v, want 42601", q, err)
		}
	}
}
