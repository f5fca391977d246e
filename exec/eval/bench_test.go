package eval

import (
	"testing"

	"sluice/sql/types"
)

func benchExpr(b *testing.B, src string, row types.Row, cols ...types.T) {
	e, err := parseSQL(src, cols...)
	if err != nil {
		b.Fatal(err)
	}
	fn, err := Compile(e, &Context{Now: testNow})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := fn(row); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		if _, err := fn(row); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEvalArith is a*2+b > 10 on bigint columns.
func BenchmarkEvalArith(b *testing.B) {
	benchExpr(b, "c0 * 2 + c1 > 10", types.Row{types.NewInt(7), types.NewInt(3)}, tI8, tI8)
}

// BenchmarkEvalDecimal is price * qty + fee > 100.00 on numeric columns.
func BenchmarkEvalDecimal(b *testing.B) {
	benchExpr(b, "c0 * c1 + c2 > 100.00",
		types.Row{dec("19.99"), dec("3"), dec("4.50")}, tNum, tNum, tNum)
}

// BenchmarkEvalFilter is a typical streaming filter: a range, an IN list
// and a NULL check.
func BenchmarkEvalFilter(b *testing.B) {
	benchExpr(b, "c0 between 100 and 1000 and c1 in (1, 5, 9, 12, 33) and c2 is not null",
		types.Row{types.NewInt(500), types.NewInt(9), types.NewInt(1)}, tI8, tI8, tI8)
}

// BenchmarkEvalTimestamp is a window-style computation on a timestamp.
func BenchmarkEvalTimestamp(b *testing.B) {
	benchExpr(b, "c0 - interval '4 seconds' < c1",
		types.Row{types.NewTimestamp(1589723130123456), types.NewTimestamp(1589723100000000)}, tTS, tTS)
}

// BenchmarkEvalCase is a searched CASE over integers.
func BenchmarkEvalCase(b *testing.B) {
	benchExpr(b, "case when c0 < 10 then 'low' when c0 < 100 then 'mid' else 'high' end",
		types.Row{types.NewInt(50)}, tI8)
}

// BenchmarkEvalLike matches a constant LIKE pattern.
func BenchmarkEvalLike(b *testing.B) {
	benchExpr(b, "c0 like '%auction%'", types.Row{types.NewString("https://example.com/auction/123")}, tText)
}

// Nexmark q21's expressions over a bid's channel and URL.
const (
	q21Where = "(regexp_match(c1, '(&|^)channel_id=([^&]*)'))[2] is not null or lower(c0) in ('apple', 'google', 'facebook', 'baidu')"
	q21Case  = "case when lower(c0) = 'apple' then '0' when lower(c0) = 'google' then '1' when lower(c0) = 'facebook' then '2' " +
		"when lower(c0) = 'baidu' then '3' else (regexp_match(c1, '(&|^)channel_id=([^&]*)'))[2] end"
	q21URL = "https://www.nexmark.com/qwe/rtyu/iop/item.htm?query=1&channel_id=1476395008"
)

// BenchmarkEvalQ21Where is q21's filter on a channel that is not a hot one.
func BenchmarkEvalQ21Where(b *testing.B) {
	benchExpr(b, q21Where, types.Row{types.NewString("channel-2718"), types.NewString(q21URL)}, tText, tText)
}

// BenchmarkEvalQ21CaseHot is q21's CASE on a hot channel.
func BenchmarkEvalQ21CaseHot(b *testing.B) {
	benchExpr(b, q21Case, types.Row{types.NewString("Google"), types.NewString(q21URL)}, tText, tText)
}

// BenchmarkEvalQ21Case is q21's CASE on a channel that is not a hot one.
func BenchmarkEvalQ21Case(b *testing.B) {
	benchExpr(b, q21Case, types.Row{types.NewString("channel-2718"), types.NewString(q21URL)}, tText, tText)
}
