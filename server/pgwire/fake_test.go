package pgwire

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// fakeHandler is a tiny SQL engine for the tests. It understands:
//
//	SELECT <item>, ...            item: $n | 'str' | 123 | 1.5 | true | false | null,
//	                              each optionally ::type and AS name
//	SELECT * FROM things          a few rows of several types
//	SELECT generate_series(1, N)  N int4 rows
//	SELECT pg_sleep_forever()     blocks until its context is cancelled
//	SELECT stream_forever()       sends a row, flushes, then blocks
//	SELECT nosuchcol              42703 error with a position
//	SET name = value              reported through ChangedParameters
//	BEGIN / COMMIT / ROLLBACK     transaction status for TxStatus
//	INSERT ... / CREATE TABLE ... command tags only
//	NOTICE text                   sends a notice
//	PANIC                         panics
type fakeHandler struct {
	fuzzing  bool          // pg_sleep_forever and PANIC are errors
	sleeping chan struct{} // receives when pg_sleep_forever starts

	connects atomic.Int32
	closes   atomic.Int32

	mu    sync.Mutex
	infos []StartupInfo

	// Rows of stream_series (stream_test.go).
	produced, rowsClosed atomic.Int64
}

func newFakeHandler() *fakeHandler {
	return &fakeHandler{sleeping: make(chan struct{}, 16)}
}

func (h *fakeHandler) Connect(ctx context.Context, p StartupInfo) (Session, error) {
	if p.Database == "nodb" {
		return nil, pgerror.New("3D000", "database %q does not exist", p.Database)
	}
	h.connects.Add(1)
	h.mu.Lock()
	h.infos = append(h.infos, p)
	h.mu.Unlock()
	s := &fakeSession{h: h, changed: map[string]string{}}
	if tz := p.Params["TimeZone"]; tz != "" {
		s.changed["TimeZone"] = tz
	}
	return s, nil
}

func (h *fakeHandler) lastInfo() StartupInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.infos[len(h.infos)-1]
}

type fakeSession struct {
	h       *fakeHandler
	changed map[string]string
	inTx    bool
	busy    atomic.Bool
}

func (s *fakeSession) enter() {
	if !s.busy.CompareAndSwap(false, true) {
		panic("overlapping Session calls")
	}
}

func (s *fakeSession) leave() { s.busy.Store(false) }

func (s *fakeSession) TxStatus() byte {
	if s.inTx {
		return 'T'
	}
	return 'I'
}

func (s *fakeSession) ChangedParameters() map[string]string {
	if len(s.changed) == 0 {
		return nil
	}
	c := s.changed
	s.changed = map[string]string{}
	return c
}

func (s *fakeSession) Close() { s.h.closes.Add(1) }

func (s *fakeSession) SimpleQuery(ctx context.Context, sql string, w ResultWriter) error {
	s.enter()
	defer s.leave()
	for _, part := range splitTop(sql, ';') {
		text := sql[part[0]:part[1]]
		if strings.TrimSpace(text) == "" {
			continue
		}
		p, err := parseFake(text, nil)
		if err != nil {
			if e, ok := err.(*pgerror.Error); ok && e.Position > 0 {
				e.Position += part[0]
			}
			return err
		}
		if len(p.params) > 0 {
			return pgerror.New(pgcode.UndefinedParameter, "there is no parameter $1")
		}
		if err := s.exec(ctx, p, nil, w); err != nil {
			return err
		}
	}
	return nil
}

func (s *fakeSession) Prepare(ctx context.Context, sql string, oids []uint32) (Prepared, error) {
	s.enter()
	defer s.leave()
	return parseFake(sql, oids)
}

func (s *fakeSession) Execute(ctx context.Context, p Prepared, params []types.Datum, w ResultWriter) error {
	s.enter()
	defer s.leave()
	return s.exec(ctx, p.(*fakePrepared), params, w)
}

func (s *fakeSession) exec(ctx context.Context, p *fakePrepared, params []types.Datum, w ResultWriter) error {
	if p.kind == "streamseries" {
		return w.(RowStreamer).Stream(ctx, p.cols, s.h.newSeries(p.n))
	}
	if p.cols != nil {
		if err := w.Columns(p.cols); err != nil {
			return err
		}
	}
	var rows []types.Row
	switch p.kind {
	case "select":
		row := make(types.Row, len(p.items))
		for i, it := range p.items {
			d, err := it.eval(params, p.params)
			if err != nil {
				return err
			}
			row[i] = d
		}
		rows = append(rows, row)
	case "things":
		rows = thingsRows
	case "typed":
		rows = typedRows
	case "series":
		for i := 1; i <= p.n; i++ {
			rows = append(rows, types.Row{types.NewInt(int64(i))})
		}
	case "stream":
		if err := w.Row(types.Row{types.NewString("first")}); err != nil {
			return err
		}
		if err := w.(interface{ Flush() error }).Flush(); err != nil {
			return err
		}
		fallthrough
	case "sleep":
		if s.h.fuzzing {
			return pgerror.New(pgcode.FeatureNotSupported, "no sleeping")
		}
		select {
		case s.h.sleeping <- struct{}{}:
		default:
		}
		<-ctx.Done()
		return ctx.Err()
	case "panic":
		if s.h.fuzzing {
			return pgerror.New(pgcode.FeatureNotSupported, "no panicking")
		}
		panic("fake engine panic")
	case "notice":
		if err := w.Notice(p.tag); err != nil {
			return err
		}
		return w.Complete("DO")
	case "set":
		s.changed[p.setName] = p.setValue
	case "begin":
		s.inTx = true
	case "end":
		s.inTx = false
	}
	for _, r := range rows {
		if err := w.Row(r); err != nil {
			return err
		}
	}
	if p.cols != nil {
		return w.Complete("SELECT " + strconv.Itoa(len(rows)))
	}
	return w.Complete(p.tag)
}

var thingsCols = []types.Column{
	{Name: "id", Type: types.TInt8},
	{Name: "name", Type: types.TText},
	{Name: "active", Type: types.TBool},
	{Name: "score", Type: types.TFloat8},
	{Name: "note", Type: types.TText},
}

var thingsRows = []types.Row{
	{types.NewInt(1), types.NewString("alpha"), types.NewBool(true), types.NewFloat(1.5), types.NewString("x")},
	{types.NewInt(2), types.NewString("beta"), types.NewBool(false), types.NewFloat(-2.25), types.Null},
	{types.NewInt(3), types.NewString("gamma 'q'"), types.NewBool(true), types.NewFloat(0), types.NewString("ünï")},
}

var typedCols = []types.Column{
	{Name: "n", Type: types.T{Fam: types.Numeric, Prec: 10, Scale: 2}},
	{Name: "d", Type: types.TDate},
	{Name: "tz", Type: types.TTimestampTZ},
	{Name: "ts", Type: types.TTimestamp},
	{Name: "tm", Type: types.TTime},
	{Name: "iv", Type: types.TInterval},
	{Name: "b", Type: types.TBytea},
	{Name: "j", Type: types.TJSONB},
	{Name: "f4", Type: types.TFloat4},
	{Name: "vc", Type: types.T{Fam: types.Varchar, Prec: 5}},
	{Name: "i2", Type: types.TInt2},
}

var typedTime = time.Date(2024, 2, 29, 12, 34, 56, 789000000, time.UTC)

var typedRows = []types.Row{
	{
		types.NewDecimal(12345, 2),
		types.NewDate(typedTime.Unix() / 86400),
		types.NewTimestampTZ(typedTime.UnixMicro()),
		types.NewTimestamp(typedTime.UnixMicro()),
		types.NewTime((12*3600+34*60+56)*1e6 + 500000),
		types.NewInterval(1, 2, (3*3600+4*60+5)*1e6),
		types.NewBytes([]byte{0xde, 0xad, 0xbe, 0xef}),
		types.NewJSON(`{"a": [1, 2]}`),
		types.NewFloat(1.25),
		types.NewString("abc"),
		types.NewInt(-3),
	},
	make(types.Row, len(typedCols)), // all NULL
}

type fakePrepared struct {
	kind              string
	items             []fakeItem
	params            []types.T
	cols              []types.Column
	tag               string
	n                 int
	setName, setValue string
}

func (p *fakePrepared) ParamTypes() []types.T   { return p.params }
func (p *fakePrepared) Columns() []types.Column { return p.cols }

type fakeItem struct {
	param int    // $n, 1-based; 0 = literal
	lit   string // literal text (unquoted)
	null  bool
	cast  *types.T
	typ   types.T // result type
}

func (it fakeItem) eval(params []types.Datum, ptypes []types.T) (types.Datum, error) {
	if it.param > 0 {
		d := params[it.param-1]
		if d.IsNull() || ptypes[it.param-1] == it.typ {
			return d, nil
		}
		return types.ParseText(types.FormatText(d, ptypes[it.param-1]), it.typ)
	}
	if it.null {
		return types.Null, nil
	}
	return types.ParseText(it.lit, it.typ)
}

var fakeTypes = map[string]types.T{
	"bigint": types.TInt8, "int8": types.TInt8, "int": types.TInt4, "integer": types.TInt4,
	"int4": types.TInt4, "smallint": types.TInt2, "int2": types.TInt2, "text": types.TText,
	"varchar": types.TVarchar, "bool": types.TBool, "boolean": types.TBool,
	"float8": types.TFloat8, "double precision": types.TFloat8, "real": types.TFloat4, "float4": types.TFloat4,
	"numeric": types.TNumeric, "date": types.TDate, "timestamp": types.TTimestamp,
	"timestamptz": types.TTimestampTZ, "bytea": types.TBytea, "jsonb": types.TJSONB,
	"interval": types.TInterval, "time": types.TTime, "oid": types.TOid,
}

func fakeType(name string) (types.T, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if t, ok := fakeTypes[name]; ok {
		return t, nil
	}
	var a, b int16
	if n, _ := fmt.Sscanf(name, "numeric(%d,%d)", &a, &b); n == 2 {
		return types.T{Fam: types.Numeric, Prec: a, Scale: b}, nil
	}
	if n, _ := fmt.Sscanf(name, "varchar(%d)", &a); n == 1 {
		return types.T{Fam: types.Varchar, Prec: a}, nil
	}
	return types.TUnknown, pgerror.New(pgcode.UndefinedObject, "type %q does not exist", name)
}

// splitTop splits s at sep outside quotes and parentheses, returning the
// [start, end) offsets of the parts.
func splitTop(s string, sep byte) [][2]int {
	var parts [][2]int
	start, depth, quoted := 0, 0, false
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\'':
			quoted = !quoted
		case quoted:
		case ch == '(':
			depth++
		case ch == ')':
			depth--
		case ch == sep && depth == 0:
			parts = append(parts, [2]int{start, i})
			start = i + 1
		}
	}
	return append(parts, [2]int{start, len(s)})
}

func parseFake(sql string, oids []uint32) (*fakePrepared, error) {
	lead := len(sql) - len(strings.TrimLeft(sql, " \t\r\n"))
	q := strings.TrimRight(strings.TrimSpace(sql), "; \t\r\n")
	u := strings.ToUpper(q)
	switch {
	case u == "SELECT * FROM THINGS":
		return &fakePrepared{kind: "things", cols: thingsCols}, nil
	case u == "SELECT * FROM TYPED":
		return &fakePrepared{kind: "typed", cols: typedCols}, nil
	case strings.HasPrefix(u, "SELECT GENERATE_SERIES(1,"):
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(q[len("SELECT GENERATE_SERIES(1,"):], ")")))
		if err != nil || n > 100000 {
			return nil, pgerror.New(pgcode.Syntax, "bad series")
		}
		return &fakePrepared{kind: "series", n: n, cols: []types.Column{{Name: "generate_series", Type: types.TInt4}}}, nil
	case strings.HasPrefix(u, "SELECT STREAM_SERIES("):
		n, err := strconv.Atoi(strings.TrimSuffix(q[len("SELECT STREAM_SERIES("):], ")"))
		if err != nil {
			return nil, pgerror.New(pgcode.Syntax, "bad series")
		}
		return &fakePrepared{kind: "streamseries", n: n, cols: []types.Column{{Name: "stream_series", Type: types.TInt4}}}, nil
	case u == "SELECT STREAM_FOREVER()":
		return &fakePrepared{kind: "stream", cols: []types.Column{{Name: "stream_forever", Type: types.TText}}}, nil
	case u == "SELECT PG_SLEEP_FOREVER()":
		return &fakePrepared{kind: "sleep", cols: []types.Column{{Name: "pg_sleep_forever", Type: types.TText}}}, nil
	case u == "PANIC":
		return &fakePrepared{kind: "panic"}, nil
	case strings.HasPrefix(u, "NOTICE "):
		return &fakePrepared{kind: "notice", tag: strings.TrimSpace(q[len("NOTICE "):])}, nil
	case strings.HasPrefix(u, "SET "):
		name, value, ok := strings.Cut(q[len("SET "):], "=")
		if !ok {
			return nil, pgerror.New(pgcode.Syntax, "syntax error in SET")
		}
		return &fakePrepared{kind: "set", tag: "SET", setName: strings.TrimSpace(name),
			setValue: strings.Trim(strings.TrimSpace(value), "'")}, nil
	case u == "BEGIN":
		return &fakePrepared{kind: "begin", tag: "BEGIN"}, nil
	case u == "COMMIT" || u == "ROLLBACK":
		return &fakePrepared{kind: "end", tag: u}, nil
	case strings.HasPrefix(u, "INSERT "):
		return &fakePrepared{kind: "cmd", tag: "INSERT 0 1"}, nil
	case strings.HasPrefix(u, "CREATE TABLE "):
		return &fakePrepared{kind: "cmd", tag: "CREATE TABLE"}, nil
	case strings.HasPrefix(u, "SELECT "):
		if i := strings.Index(q, "nosuchcol"); i >= 0 {
			return nil, pgerror.New(pgcode.UndefinedColumn, `column "nosuchcol" does not exist`).
				WithPosition(lead + i + 1).WithHint("There is no such column.")
		}
		return parseSelect(q[len("SELECT "):], oids)
	}
	return nil, pgerror.New(pgcode.Syntax, "syntax error at or near %q", strings.SplitN(q+" ", " ", 2)[0]).WithPosition(lead + 1)
}

func parseSelect(list string, oids []uint32) (*fakePrepared, error) {
	p := &fakePrepared{kind: "select", cols: []types.Column{}}
	ptypes := map[int]types.T{}
	maxParam := len(oids)
	for _, part := range splitTop(list, ',') {
		src := strings.TrimSpace(list[part[0]:part[1]])
		it := fakeItem{}
		name := "?column?"
		if i := strings.LastIndex(strings.ToUpper(src), " AS "); i >= 0 && !strings.Contains(src[i:], "'") {
			name = strings.TrimSpace(src[i+4:])
			src = strings.TrimSpace(src[:i])
		}
		if i := strings.LastIndex(src, "::"); i >= 0 && !strings.Contains(src[i:], "'") {
			t, err := fakeType(src[i+2:])
			if err != nil {
				return nil, err
			}
			it.cast = &t
			src = strings.TrimSpace(src[:i])
		}
		switch {
		case strings.HasPrefix(src, "$"):
			n, err := strconv.Atoi(src[1:])
			if err != nil || n < 1 || n > 1000 {
				return nil, pgerror.New(pgcode.Syntax, "bad parameter %q", src)
			}
			it.param = n
			maxParam = max(maxParam, n)
			pt := types.TText
			if it.cast != nil {
				pt = *it.cast
			}
			if n <= len(oids) && oids[n-1] != 0 {
				if t, ok := types.FromOID(oids[n-1]); ok {
					pt = t
				}
			}
			ptypes[n] = pt
			it.typ = pt
		case strings.HasPrefix(src, "'") && strings.HasSuffix(src, "'") && len(src) >= 2:
			it.lit = strings.ReplaceAll(src[1:len(src)-1], "''", "'")
			it.typ = types.TText
		case strings.EqualFold(src, "null"):
			it.null = true
			it.typ = types.TText
		case strings.EqualFold(src, "true") || strings.EqualFold(src, "false"):
			it.lit = src
			it.typ = types.TBool
		default:
			if _, err := strconv.ParseInt(src, 10, 32); err == nil {
				it.typ = types.TInt4
			} else if _, err := strconv.ParseFloat(src, 64); err == nil {
				it.typ = types.TFloat8
			} else {
				return nil, pgerror.New(pgcode.Syntax, "syntax error at or near %q", src)
			}
			it.lit = src
		}
		if it.cast != nil {
			it.typ = *it.cast
		}
		p.items = append(p.items, it)
		p.cols = append(p.cols, types.Column{Name: name, Type: it.typ})
	}
	p.params = make([]types.T, maxParam)
	for i := range p.params {
		if t, ok := ptypes[i+1]; ok {
			p.params[i] = t
		} else if t, ok := fromOIDs(oids, i); ok {
			p.params[i] = t
		} else {
			p.params[i] = types.TText
		}
	}
	return p, nil
}

func fromOIDs(oids []uint32, i int) (types.T, bool) {
	if i < len(oids) {
		return types.FromOID(oids[i])
	}
	return types.TUnknown, false
}
