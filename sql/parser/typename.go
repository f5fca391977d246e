package parser

import (
	"strconv"
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// typeName is a parsed Postgres type name.
type typeName struct {
	// name is the normalised spelling: the canonical name (T.String()) for a
	// supported type, else the words as written (lower-cased, schema
	// pg_catalog dropped) with their modifiers and array brackets.
	name string
	t    types.T
	err  error // why the type is not supported (nil if it is)
	pos  int   // byte offset of the first token
	end  int   // byte offset after the last token
}

// ParseType parses a Postgres type name such as "bigint", "numeric(12,2)",
// "character varying(10)", "double precision", "timestamp with time zone"
// or "text[]". It accepts every name that types.T.String returns. Unknown
// names fail with 42704, known but unsupported ones with 0A000.
func ParseType(s string) (types.T, error) {
	toks, err := lex(s)
	if err != nil {
		return types.TUnknown, err
	}
	tn, i, err := parseTypeName(s, toks, 0)
	if err != nil {
		return types.TUnknown, err
	}
	if toks[i].kind != tkEOF {
		return types.TUnknown, pgerror.New(pgcode.Syntax, "syntax error at or near \"%s\" in type name \"%s\"", s[toks[i].pos:toks[i].end], s)
	}
	if tn.err != nil {
		return types.TUnknown, tn.err
	}
	return tn.t, nil
}

// parseTypeName parses a type name starting at toks[i] and returns it with
// the index of the first token after it. err is a syntax error; a
// well-formed but unsupported type has typeName.err set instead.
func parseTypeName(src string, toks []token, i int) (typeName, int, error) {
	tn := typeName{pos: toks[i].pos}
	t := toks[i]
	if t.kind != tkIdent && t.kind != tkQIdent {
		return tn, i, syntaxErrAt(src, t.pos, "%s", nearMsg(src, t))
	}
	// schema qualification
	if toks[i+1].isPunct(".") && (toks[i+2].kind == tkIdent || toks[i+2].kind == tkQIdent) {
		schema := t.val
		i += 2
		t = toks[i]
		if schema != "pg_catalog" {
			tn.name = schema + "." + t.val
		}
	}
	var words []string
	quoted := t.kind == tkQIdent
	words = append(words, t.val)
	i++
	if !quoted && t.val == "struct" && tn.name == "" && (toks[i].isOp("<") || toks[i].isOp("<>")) {
		return parseStructType(src, toks, i, tn)
	}
	if !quoted {
		switch t.val {
		case "double":
			if toks[i].isWord("precision") {
				words = append(words, "precision")
				i++
			}
		case "character", "char", "national":
			if t.val == "national" && (toks[i].isWord("character") || toks[i].isWord("char")) {
				words = append(words, toks[i].val)
				i++
			}
			if toks[i].isWord("varying") {
				words = append(words, "varying")
				i++
			}
		case "bit":
			if toks[i].isWord("varying") {
				words = append(words, "varying")
				i++
			}
		}
	}
	// modifiers
	var mods []int
	if toks[i].isPunct("(") {
		j := i + 1
		for {
			neg := false
			if toks[j].isOp("-") {
				neg = true
				j++
			}
			if toks[j].kind != tkNumber {
				return tn, i, syntaxErrAt(src, toks[j].pos, "%s", nearMsg(src, toks[j]))
			}
			n, err := strconv.Atoi(toks[j].val)
			if err != nil {
				return tn, i, syntaxErrAt(src, toks[j].pos, "invalid type modifier \"%s\"", toks[j].val)
			}
			if neg {
				n = -n
			}
			mods = append(mods, n)
			j++
			if toks[j].isPunct(",") {
				j++
				continue
			}
			if toks[j].isPunct(")") {
				j++
				break
			}
			return tn, i, syntaxErrAt(src, toks[j].pos, "%s", nearMsg(src, toks[j]))
		}
		i = j
	}
	// WITH / WITHOUT TIME ZONE
	tz := ""
	if !quoted && (words[0] == "timestamp" || words[0] == "time") && len(words) == 1 &&
		(toks[i].isWord("with") || toks[i].isWord("without")) && toks[i+1].isWord("time") && toks[i+2].isWord("zone") {
		tz = toks[i].val
		i += 3
	}
	// interval fields (ignored)
	if !quoted && words[0] == "interval" && len(mods) == 0 {
		if isIntervalField(toks[i].val) && toks[i].kind == tkIdent {
			i++
			if toks[i].isWord("to") && isIntervalField(toks[i+1].val) {
				i += 2
			}
			if toks[i].isPunct("(") && toks[i+1].kind == tkNumber && toks[i+2].isPunct(")") {
				i += 3
			}
		}
	}
	// array suffixes
	dims := 0
	for {
		if toks[i].isPunct("[") {
			j := i + 1
			if toks[j].kind == tkNumber {
				j++
			}
			if !toks[j].isPunct("]") {
				return tn, i, syntaxErrAt(src, toks[j].pos, "%s", nearMsg(src, toks[j]))
			}
			i = j + 1
			dims++
			continue
		}
		if toks[i].isWord("array") {
			i++
			if toks[i].isPunct("[") && toks[i+1].kind == tkNumber && toks[i+2].isPunct("]") {
				i += 3
			}
			dims++
			continue
		}
		break
	}
	tn.end = toks[i-1].end

	// spelling
	var sb strings.Builder
	if tn.name != "" {
		sb.WriteString(tn.name)
	} else if quoted {
		sb.WriteString(`"` + strings.ReplaceAll(words[0], `"`, `""`) + `"`)
	} else {
		sb.WriteString(strings.Join(words, " "))
	}
	if len(mods) > 0 {
		sb.WriteByte('(')
		for k, m := range mods {
			if k > 0 {
				sb.WriteByte(',')
			}
			sb.WriteString(strconv.Itoa(m))
		}
		sb.WriteByte(')')
	}
	if tz != "" {
		sb.WriteString(" " + tz + " time zone")
	}
	for k := 0; k < dims; k++ {
		sb.WriteString("[]")
	}
	spelled := sb.String()
	if tn.name != "" {
		// a type in another schema: never one of ours
		tn.name = spelled
		tn.err = pgerror.New(pgcode.UndefinedObject, "type \"%s\" does not exist", spelled)
		return tn, i, nil
	}
	typ, terr := resolveType(words, quoted, mods, tz, dims, spelled)
	tn.t = typ
	tn.err = terr
	if terr == nil {
		tn.name = typ.String()
	} else {
		tn.name = spelled
	}
	return tn, i, nil
}

// parseStructType parses the fields of STRUCT<name type, …> (RisingWave's
// spelling of a composite type) from the "<" at toks[i]: the type is a
// record type whose fields are those (sql/types/record.go). A nested
// STRUCT's closing ">>" closes two levels: the inner one takes its half.
func parseStructType(src string, toks []token, i int, tn typeName) (typeName, int, error) {
	if toks[i].isOp("<>") {
		return tn, i, syntaxErrAt(src, toks[i].pos, "a STRUCT needs at least one field")
	}
	i++
	var fields []types.Column
	var spelled []string
	for {
		f := toks[i]
		if f.kind != tkIdent && f.kind != tkQIdent {
			return tn, i, syntaxErrAt(src, f.pos, "%s", nearMsg(src, f))
		}
		for _, c := range fields {
			if c.Name == f.val {
				return tn, i, syntaxErrAt(src, f.pos, "field \"%s\" appears twice in a STRUCT", f.val)
			}
		}
		ft, j, err := parseTypeName(src, toks, i+1)
		if err != nil {
			return tn, j, err
		}
		if ft.err != nil && tn.err == nil {
			tn.err = ft.err
		}
		fields = append(fields, types.Column{Name: f.val, Type: ft.t})
		spelled = append(spelled, quoteField(f.val)+" "+ft.name)
		i = j
		switch {
		case toks[i].isPunct(","):
			i++
			continue
		case toks[i].isOp(">"):
			i++
		case strings.HasPrefix(toks[i].val, ">") && toks[i].kind == tkOp:
			// ">>" (or more): this level takes the first ">".
			rest := toks[i]
			rest.val, rest.pos = rest.val[1:], rest.pos+1
			toks[i] = rest
		default:
			return tn, i, syntaxErrAt(src, toks[i].pos, "%s", nearMsg(src, toks[i]))
		}
		break
	}
	if toks[i].isPunct("[") || toks[i].isWord("array") {
		tn.end = toks[i].end
		tn.err = pgerror.Unsupported("arrays of STRUCT are not supported")
		return tn, i, nil
	}
	tn.end = toks[i-1].end
	tn.name = "struct<" + strings.Join(spelled, ", ") + ">"
	if tn.err != nil {
		return tn, i, nil
	}
	tn.t = types.StructType(fields)
	if tn.t.Prec == 0 {
		tn.err = pgerror.Unsupported("too many distinct STRUCT shapes").WithHint("a server process interns at most 16384 record shapes")
	}
	return tn, i, nil
}

// quoteField quotes a STRUCT field name when it needs it.
func quoteField(n string) string {
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' && i > 0) {
			return `"` + strings.ReplaceAll(n, `"`, `""`) + `"`
		}
	}
	return n
}

func isIntervalField(w string) bool {
	switch w {
	case "year", "month", "day", "hour", "minute", "second":
		return true
	}
	return false
}

// unsupportedTypes are Postgres types Sluice knows but does not support.
var unsupportedTypes = map[string]bool{
	"character": true, "char": true, "bpchar": true, "national character": true, "national char": true,
	"national character varying": true, "national char varying": true, "nchar": true,
	"timetz": true, "bit": true, "bit varying": true, "varbit": true, "money": true,
	"inet": true, "cidr": true, "macaddr": true, "macaddr8": true, "xml": true, "point": true,
	"line": true, "lseg": true, "box": true, "path": true, "polygon": true, "circle": true,
	"serial": true, "bigserial": true, "smallserial": true, "serial2": true, "serial4": true, "serial8": true,
	"regprocedure": true, "regoper": true, "regoperator": true,
	"regrole": true, "regconfig": true, "regdictionary": true, "regcollation": true,
	"tsvector": true, "tsquery": true, "int4range": true, "int8range": true, "numrange": true,
	"tsrange": true, "tstzrange": true, "daterange": true, "record": true, "void": true,
	"anyelement": true, "anyarray": true, "cstring": true, "xid": true, "cid": true, "tid": true,
	"pg_lsn": true, "txid_snapshot": true, "aclitem": true,
	"pg_node_tree": true, "struct": true, "map": true,
}

// resolveType maps a parsed type name to a types.T.
func resolveType(words []string, quoted bool, mods []int, tz string, dims int, spelled string) (types.T, error) {
	name := strings.Join(words, " ")
	if quoted {
		if name == "char" && len(mods) == 0 && dims == 0 {
			return types.TChar, nil
		}
		return types.TUnknown, pgerror.New(pgcode.UndefinedObject, "type %s does not exist", spelled)
	}
	if name == "_text" && len(mods) == 0 && dims == 0 {
		return types.TTextArray, nil
	}
	unsupported := func() (types.T, error) {
		if name == "struct" || name == "record" || name == "row" {
			// Composite values exist only in queries (planner/row.go).
			return types.TUnknown, pgerror.Unsupported("type %s is not supported", spelled).
				WithHint("columns of a composite type are not supported yet: store the fields as separate columns (or as jsonb) and build the value in a query with ROW(…), reading a field with (expr).f1")
		}
		return types.TUnknown, pgerror.Unsupported("type %s is not supported", spelled)
	}
	badMods := func() (types.T, error) {
		return types.TUnknown, pgerror.New(pgcode.Syntax, "invalid type modifier for type %s", spelled)
	}
	var t types.T
	switch name {
	case "bool", "boolean":
		t = types.TBool
	case "int2", "smallint":
		t = types.TInt2
	case "int", "integer", "int4":
		t = types.TInt4
	case "int8", "bigint":
		t = types.TInt8
	case "real", "float4":
		t = types.TFloat4
	case "float8", "double precision", "double":
		t = types.TFloat8
	case "float":
		t = types.TFloat8
		if len(mods) == 1 {
			if mods[0] < 1 || mods[0] > 53 {
				return types.TUnknown, pgerror.New(pgcode.InvalidParameterValue, "precision for type float must be between 1 and 53 bits")
			}
			if mods[0] <= 24 {
				t = types.TFloat4
			}
			mods = nil
		}
	case "numeric", "decimal":
		t = types.TNumeric
		switch len(mods) {
		case 0:
		case 1, 2:
			p, s := mods[0], 0
			if len(mods) == 2 {
				s = mods[1]
			}
			if p < 1 || p > 1000 {
				return types.TUnknown, pgerror.New(pgcode.InvalidParameterValue, "NUMERIC precision %d must be between 1 and 1000", p)
			}
			if s < 0 || s > p {
				return types.TUnknown, pgerror.New(pgcode.InvalidParameterValue, "NUMERIC scale %d must be between 0 and precision %d", s, p)
			}
			t = types.T{Fam: types.Numeric, Prec: int16(p), Scale: int16(s)}
		default:
			return badMods()
		}
		mods = nil
	case "text", "string":
		t = types.TText
	case "varchar", "character varying", "char varying":
		t = types.TVarchar
		if len(mods) == 1 {
			if mods[0] < 1 || mods[0] > 10485760 {
				return types.TUnknown, pgerror.New(pgcode.InvalidParameterValue, "length for type varchar must be between 1 and 10485760")
			}
			t.Prec = int16(min(mods[0], 32767))
			mods = nil
		}
	case "bytea":
		t = types.TBytea
	case "date":
		t = types.TDate
	case "time":
		if tz == "with" {
			return unsupported()
		}
		t = types.TTime
		if len(mods) == 1 {
			mods = nil // precision ignored
		}
	case "timestamp":
		t = types.TTimestamp
		if tz == "with" {
			t = types.TTimestampTZ
		}
		if len(mods) == 1 {
			mods = nil // precision ignored
		}
	case "timestamptz":
		t = types.TTimestampTZ
		if len(mods) == 1 {
			mods = nil
		}
	case "interval":
		t = types.TInterval
		if len(mods) == 1 {
			mods = nil
		}
	case "jsonb", "json":
		t = types.TJSONB
	case "oid":
		t = types.TOid
	case "name":
		t = types.TName
	case "regclass":
		t = types.TRegClass
	case "regtype":
		t = types.TRegType
	case "regproc":
		t = types.TRegProc
	case "regnamespace":
		t = types.TRegNamespace
	case "int2vector":
		t = types.TInt2Vector
	case "oidvector":
		t = types.TOidVector
	case "uuid":
		t = types.TUUID
	default:
		if unsupportedTypes[name] {
			return unsupported()
		}
		return types.TUnknown, pgerror.New(pgcode.UndefinedObject, "type \"%s\" does not exist", spelled)
	}
	if tz != "" && name != "timestamp" && name != "time" {
		return badMods()
	}
	if len(mods) > 0 {
		return badMods()
	}
	if dims > 0 {
		// One array type for any number of dimensions, as in PostgreSQL
		// (the dimensions are in the value).
		switch t.Fam {
		case types.Text, types.Bool, types.Int2, types.Int4, types.Int8, types.Float8, types.Numeric, types.TimestampTZ,
			types.Float4, types.Date, types.Time, types.Timestamp, types.Interval, types.JSONB, types.Varchar,
			types.UUID, types.Bytea:
			at, _ := types.ArrayOf(t)
			return at, nil
		}
		return unsupported()
	}
	return t, nil
}

// nearMsg is Postgres' message for a syntax error at token t.
func nearMsg(src string, t token) string {
	if t.kind == tkEOF && t.end <= t.pos {
		return "syntax error at end of input"
	}
	return "syntax error at or near \"" + src[t.pos:t.end] + "\""
}
