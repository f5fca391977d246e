// Type mapping tests: auto.create declares the PostgreSQL type of every
// Sluice type family, and values of every type (NaN and ±Infinity floats,
// numerics with many digits, bytea with zero bytes, jsonb, timestamps with
// microseconds, intervals with months, days and microseconds, text with
// quotes, newlines and unicode) are stored exactly, whether copied
// straight into the table (append) or staged and upserted.
package postgres

import (
	"context"
	"math"
	"math/big"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"sluice/exec/connector"
	"sluice/sql/types"
)

var allTypes = []types.Column{
	{Name: "id", Type: types.TInt8},
	{Name: "b", Type: types.TBool},
	{Name: "i2", Type: types.TInt2},
	{Name: "i4", Type: types.TInt4},
	{Name: "f4", Type: types.TFloat4},
	{Name: "f8", Type: types.TFloat8},
	{Name: "n", Type: types.TNumeric},
	{Name: "n2", Type: types.T{Fam: types.Numeric, Prec: 12, Scale: 2}},
	{Name: "t", Type: types.TText},
	{Name: "vc", Type: types.T{Fam: types.Varchar, Prec: 20}},
	{Name: "vcu", Type: types.TVarchar},
	{Name: "by", Type: types.TBytea},
	{Name: "d", Type: types.TDate},
	{Name: "tm", Type: types.TTime},
	{Name: "ts", Type: types.TTimestamp},
	{Name: "tz", Type: types.TTimestampTZ},
	{Name: "iv", Type: types.TInterval},
	{Name: "j", Type: types.TJSONB},
	{Name: "Odd \"Name\"", Type: types.TText},
	{Name: "o", Type: types.TOid},
	{Name: "ch", Type: types.TChar},
	{Name: "arr", Type: types.TTextArray},
	{Name: "nm", Type: types.TName},
}

// wantTypes is format_type of each column of allTypes after auto.create.
var wantTypes = []string{
	"bigint", "boolean", "smallint", "integer", "real", "double precision", "numeric", "numeric(12,2)",
	"text", "character varying(20)", "character varying", "bytea", "date", "time without time zone",
	"timestamp without time zone", "timestamp with time zone", "interval", "jsonb", "text", "oid",
	`"char"`, "text[]", "text",
}

func dec(t *testing.T, s string) types.Datum {
	d, err := types.DecFromString(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return d
}

func micros(y int, mo time.Month, d, h, mi, s, us int) int64 {
	return time.Date(y, mo, d, h, mi, s, us*1000, time.UTC).UnixMicro()
}

const weirdText = "it's \"quoted\"\nsecond line\ttab \\backslash ünïcødé 😀 \u2028 end"

// typeRows are the rows written: row 1 ordinary values, 2 NaN and
// infinities, 3 the other infinities and extremes, 4 NULLs.
func typeRows(t *testing.T) []types.Row {
	mk := func(vals ...types.Datum) types.Row { return types.Row(vals) }
	bigNum := "-12345678901234567890123456789012345678901234567890.000000000000000000000000000000123456789"
	return []types.Row{
		mk(types.NewInt(1), types.NewBool(true), types.NewInt(-32768), types.NewInt(math.MaxInt32),
			types.NewFloat(float64(float32(3.1415927))), types.NewFloat(0.1),
			dec(t, bigNum), dec(t, "1234567890.12"),
			types.NewString(weirdText), types.NewString("héllo 'x'"), types.NewString(""),
			types.NewBytes([]byte("\x00\x01\xff\x00'\\\"\x00")),
			types.NewDate(19782), // 2024-02-29
			types.NewTime(86399999999),
			types.NewTimestamp(micros(2024, 3, 10, 12, 34, 56, 789012)),
			types.NewTimestampTZ(micros(1969, 7, 20, 20, 17, 40, 1)),
			types.NewInterval(14, -3, -(4*3600e6+5e6+6)),
			types.NewJSON(`{"a":[1,2.5,"x\"y",1e400],"b":null,"c":{"d":true,"":"\u00e9\n"},"ü":"😀"}`),
			types.NewString("odd"),
			types.NewInt(4000000000),
			types.NewString("x"),
			types.Datum{K: types.KArray, A: types.NewElems([]types.Datum{types.NewString("a"), types.NewString(`b,c"d{}`), types.NewString("")})},
			types.NewString("pg_class"),
		),
		mk(types.NewInt(2), types.NewBool(false), types.NewInt(32767), types.NewInt(math.MinInt32),
			types.NewFloat(math.NaN()), types.NewFloat(math.NaN()),
			types.DecNaN(), dec(t, "-0.01"),
			types.NewString("a\x01b"), types.NewString("12345678901234567890"), types.NewString("ok"),
			types.NewBytes(nil),
			types.NewDate(types.InfinityI), types.NewTime(0),
			types.NewTimestamp(types.InfinityI), types.NewTimestampTZ(types.NegInfinityI),
			types.NewInterval(-1, 0, 0),
			types.NewJSON(`[]`), types.NewString(""), types.NewInt(0), types.NewString(""),
			types.Datum{K: types.KArray}, types.NewString(""),
		),
		mk(types.NewInt(3), types.NewBool(true), types.NewInt(0), types.NewInt(0),
			types.NewFloat(math.Inf(1)), types.NewFloat(math.Inf(-1)),
			types.DecInf(false), dec(t, "0.00"),
			types.NewString("x"), types.NewString("y"), types.NewString("z"),
			types.NewBytes([]byte{0}),
			types.NewDate(types.NegInfinityI), types.NewTime(1),
			types.NewTimestamp(micros(1, 1, 1, 0, 0, 0, 0)), types.NewTimestampTZ(micros(200000, 12, 31, 23, 59, 59, 999999)),
			types.NewInterval(math.MaxInt32, math.MinInt32, math.MaxInt64),
			types.NewJSON(`"str"`), types.NewString("y"), types.NewInt(1), types.NewString("y"),
			types.Datum{K: types.KArray, A: types.NewElems([]types.Datum{types.NewString("NULL")})}, types.NewString("n"),
		),
		mk(types.NewInt(4), types.Null, types.Null, types.Null, types.NewFloat(math.Copysign(0, -1)), types.NewFloat(5e-324),
			types.DecInf(true), types.Null, types.Null, types.Null, types.Null, types.Null, types.Null, types.Null,
			types.Null, types.Null, types.Null, types.NewJSON(`null`), types.Null, types.Null, types.Null, types.Null, types.Null),
	}
}

func TestAutoCreateTypes(t *testing.T) {
	db := testDB(t)
	for _, mode := range []string{"append", "upsert"} {
		t.Run(mode, func(t *testing.T) {
			table := uniqueName(t, db, "types")
			cfg := connector.SinkConfig{
				Name: "types", ID: 1, Columns: allTypes, AppendOnly: true, WriteMode: mode,
				Options: map[string]string{"url": testURL, "table": table},
			}
			if mode == "upsert" {
				cfg.Key = []int{0}
			}
			openSink(t, cfg).Close()
			rows, err := db.Query(context.Background(), `
				SELECT attname, format_type(atttypid, atttypmod), attnotnull
				FROM pg_attribute WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped
				ORDER BY attnum`, pgx.Identifier{table}.Sanitize())
			if err != nil {
				t.Fatal(err)
			}
			i := 0
			for rows.Next() {
				var name, typ string
				var notNull bool
				if err := rows.Scan(&name, &typ, &notNull); err != nil {
					t.Fatal(err)
				}
				if i >= len(allTypes) {
					t.Fatalf("extra column %s", name)
				}
				if name != allTypes[i].Name || typ != wantTypes[i] {
					t.Errorf("column %d: %s %s, want %s %s", i, name, typ, allTypes[i].Name, wantTypes[i])
				}
				if wantNN := mode == "upsert" && i == 0; notNull != wantNN {
					t.Errorf("column %s: NOT NULL %v, want %v", name, notNull, wantNN)
				}
				i++
			}
			if rows.Err() != nil || i != len(allTypes) {
				t.Fatalf("%d columns (%v), want %d", i, rows.Err(), len(allTypes))
			}
			var pk []string
			err = db.QueryRow(context.Background(), `
				SELECT coalesce(array_agg(a.attname ORDER BY a.attnum), '{}')
				FROM pg_index x JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = ANY (x.indkey)
				WHERE x.indrelid = $1::regclass AND x.indisprimary`, pgx.Identifier{table}.Sanitize()).Scan(&pk)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]int{"append": 0, "upsert": 1}[mode]; len(pk) != want || (want == 1 && pk[0] != "id") {
				t.Fatalf("primary key %v in %s mode", pk, mode)
			}
		})
	}
}

// TestTypesRoundTrip writes rows of every type and reads them back with
// pgx's own decoders.
func TestTypesRoundTrip(t *testing.T) {
	db := testDB(t)
	for _, mode := range []string{"append", "upsert", "transactional"} {
		t.Run(mode, func(t *testing.T) {
			table := uniqueName(t, db, "roundtrip")
			cfg := connector.SinkConfig{
				Name: "types", ID: 1, Columns: allTypes, AppendOnly: mode != "upsert", WriteMode: mode,
				Options: map[string]string{"url": testURL, "table": table},
			}
			if mode != "append" {
				cfg.Key = []int{0}
			}
			if mode == "transactional" {
				progressTable(t, db, &cfg)
			}
			s := openSink(t, cfg)
			if direct := s.(interface{ isDirect() bool }).isDirect(); direct != true {
				t.Fatalf("auto-created table: direct = %v", direct)
			}
			in := typeRows(t)
			var changes []connector.Change
			for _, r := range in {
				changes = append(changes, connector.Change{After: r})
			}
			write(t, s, 1, changes...)
			checkTypeRows(t, db, table, in)
		})
	}
}

func checkTypeRows(t *testing.T, db *pgx.Conn, table string, in []types.Row) {
	ctx := context.Background()
	for _, r := range in {
		id := r[0].I
		var (
			b                 pgtype.Bool
			i2                pgtype.Int2
			i4                pgtype.Int4
			f4                pgtype.Float4
			f8                pgtype.Float8
			n, n2             pgtype.Numeric
			nText, n2Text     pgtype.Text
			tx, vc, vcu, odd  pgtype.Text
			by                []byte
			d                 pgtype.Date
			tm                pgtype.Time
			ts                pgtype.Timestamp
			tz                pgtype.Timestamptz
			iv                pgtype.Interval
			jEqual            pgtype.Bool
			o                 pgtype.Uint32
			ch                pgtype.Text
			arr               []pgtype.Text
			nm                pgtype.Text
			jsonIn            pgtype.Text
			zero              = pgtype.Text{}
			_                 = zero
			arrIsNull         bool
			arrText, chAsText pgtype.Text
		)
		if r[17].K == types.KJSON {
			jsonIn = pgtype.Text{String: r[17].S, Valid: true}
		}
		err := db.QueryRow(ctx, `SELECT b, i2, i4, f4, f8, n, n2, n::text, n2::text, t, vc, vcu, by, d, tm, ts, tz, iv,
				j IS NOT DISTINCT FROM $2::jsonb, "Odd ""Name""", o, ch::text, arr, arr IS NULL, arr::text, nm, ch::text
			FROM `+pgx.Identifier{table}.Sanitize()+` WHERE id = $1`, id, jsonIn).Scan(
			&b, &i2, &i4, &f4, &f8, &n, &n2, &nText, &n2Text, &tx, &vc, &vcu, &by, &d, &tm, &ts, &tz, &iv,
			&jEqual, &odd, &o, &ch, &arr, &arrIsNull, &arrText, &nm, &chAsText)
		if err != nil {
			t.Fatalf("reading row %d: %v", id, err)
		}
		fail := func(col string, got, want any) {
			t.Errorf("row %d column %s: got %#v, want %#v", id, col, got, want)
		}
		null := func(i int) bool { return r[i].IsNull() }
		if null(1) != !b.Valid || (b.Valid && b.Bool != r[1].Bool()) {
			fail("b", b, r[1])
		}
		if null(2) != !i2.Valid || (i2.Valid && int64(i2.Int16) != r[2].I) {
			fail("i2", i2, r[2])
		}
		if null(3) != !i4.Valid || (i4.Valid && int64(i4.Int32) != r[3].I) {
			fail("i4", i4, r[3])
		}
		if want := float32(r[4].Float()); !f4.Valid || !sameFloat(float64(f4.Float32), float64(want)) ||
			(!math.IsNaN(float64(want)) && math.Float32bits(f4.Float32) != math.Float32bits(want)) {
			fail("f4", f4, want)
		}
		if want := r[5].Float(); !f8.Valid || !sameFloat(f8.Float64, want) {
			fail("f8", f8, want)
		}
		checkNumeric(t, id, "n", n, nText, r[6])
		checkNumeric(t, id, "n2", n2, n2Text, r[7])
		for _, c := range []struct {
			name string
			got  pgtype.Text
			d    types.Datum
		}{{"t", tx, r[8]}, {"vc", vc, r[9]}, {"vcu", vcu, r[10]}, {"Odd", odd, r[18]}, {"nm", nm, r[22]}} {
			if c.d.IsNull() != !c.got.Valid || c.got.String != c.d.S {
				fail(c.name, c.got, c.d.S)
			}
		}
		if null(11) != (by == nil) || string(by) != r[11].S {
			fail("by", by, []byte(r[11].S))
		}
		switch {
		case null(12):
			if d.Valid {
				fail("d", d, nil)
			}
		case r[12].I == types.InfinityI:
			if d.InfinityModifier != pgtype.Infinity {
				fail("d", d, "infinity")
			}
		case r[12].I == types.NegInfinityI:
			if d.InfinityModifier != pgtype.NegativeInfinity {
				fail("d", d, "-infinity")
			}
		default:
			if !d.Valid || d.Time.Unix()/86400 != r[12].I {
				fail("d", d, r[12].I)
			}
		}
		if null(13) != !tm.Valid || tm.Microseconds != r[13].I {
			fail("tm", tm, r[13].I)
		}
		checkTS := func(col string, valid bool, inf pgtype.InfinityModifier, tt time.Time, want types.Datum) {
			switch {
			case want.IsNull():
				if valid {
					fail(col, tt, nil)
				}
			case want.I == types.InfinityI:
				if inf != pgtype.Infinity {
					fail(col, inf, "infinity")
				}
			case want.I == types.NegInfinityI:
				if inf != pgtype.NegativeInfinity {
					fail(col, inf, "-infinity")
				}
			default:
				if !valid || inf != pgtype.Finite || tt.UnixMicro() != want.I {
					fail(col, tt, time.UnixMicro(want.I).UTC())
				}
			}
		}
		checkTS("ts", ts.Valid, ts.InfinityModifier, ts.Time, r[14])
		checkTS("tz", tz.Valid, tz.InfinityModifier, tz.Time, r[15])
		if null(16) != !iv.Valid || (iv.Valid && (iv.Months != r[16].M || iv.Days != r[16].X || iv.Microseconds != r[16].I)) {
			fail("iv", iv, r[16])
		}
		if !jEqual.Valid || !jEqual.Bool {
			fail("j", jEqual, r[17].S)
		}
		if null(19) != !o.Valid || int64(o.Uint32) != r[19].I {
			fail("o", o, r[19])
		}
		if null(20) != !ch.Valid || ch.String != r[20].S {
			fail("ch", ch, r[20])
		}
		if null(21) != arrIsNull {
			fail("arr", arrText, r[21])
		} else if !null(21) {
			if len(arr) != len(r[21].Elems()) {
				fail("arr", arrText, r[21])
			}
			for i := range arr {
				if i < len(r[21].Elems()) && (!arr[i].Valid || arr[i].String != r[21].Elems()[i].S) {
					fail("arr", arrText, r[21])
				}
			}
		}
	}
	if n := count(t, db, table); n != int64(len(in)) {
		t.Fatalf("%d rows, want %d", n, len(in))
	}
}

// sameFloat is equality where NaN equals NaN and -0 differs from +0.
func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Float64bits(a) == math.Float64bits(b)
}

func checkNumeric(t *testing.T, id int64, col string, got pgtype.Numeric, gotText pgtype.Text, want types.Datum) {
	t.Helper()
	if want.IsNull() {
		if got.Valid {
			t.Errorf("row %d column %s: got %v, want NULL", id, col, gotText.String)
		}
		return
	}
	wantText := types.FormatText(want, types.TNumeric)
	if !gotText.Valid || gotText.String != wantText {
		t.Errorf("row %d column %s: got %q, want %q", id, col, gotText.String, wantText)
	}
	switch {
	case types.DecIsNaN(want):
		if !got.NaN {
			t.Errorf("row %d column %s: pgx read %+v, want NaN", id, col, got)
		}
	case types.DecIsInf(want) != 0:
		if want := map[int]pgtype.InfinityModifier{1: pgtype.Infinity, -1: pgtype.NegativeInfinity}[types.DecIsInf(want)]; got.InfinityModifier != want {
			t.Errorf("row %d column %s: pgx read %+v, want %v", id, col, got, want)
		}
	default:
		// coef * 10^exp as pgx decoded it must equal the datum's value.
		v := new(big.Rat).SetInt(got.Int)
		p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs32(got.Exp))), nil))
		if got.Exp >= 0 {
			v.Mul(v, p)
		} else {
			v.Quo(v, p)
		}
		w, ok := new(big.Rat).SetString(types.DecString(want))
		if !ok || v.Cmp(w) != 0 {
			t.Errorf("row %d column %s: pgx read %s, want %s", id, col, v.FloatString(40), types.DecString(want))
		}
	}
}

func abs32(x int32) int32 {
	if x < 0 {
		return -x
	}
	return x
}
