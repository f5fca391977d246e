package server

import (
	"sort"
	"strconv"
	"strings"

	"sluice/exec/eval"
	"sluice/exec/spec"
	"sluice/sql/parser"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
	"sluice/storage"
)

// This file enforces a table's column constraints on every write path
// (INSERT, INSERT ... SELECT, UPDATE, ON CONFLICT, COPY through
// insertRows): NOT NULL (23502), CHECK (23514), UNIQUE (23505), and
// computes column defaults. The constraints are persisted in the table's
// catalog entry (storage.CatalogEntry) as SQL text and bound again when
// the table starts.

// tableConstraints is a table's compiled constraints and defaults.
type tableConstraints struct {
	table    string
	cols     []types.Column
	notNull  []bool
	defaults []spec.Expr // bound default of each column; nil = NULL
	identity []string    // "always", "by default" or ""
	checks   []checkConstraint
	// uniques are the UNIQUE constraints and unique indexes besides the
	// primary key, in creation order.
	uniques []uniqueConstraint
	pkey    []int
	// broken is why the constraints could not be bound (nil: they
	// were): every write to the table fails with it.
	broken error
	// held counts, per unique constraint, the stored rows holding each
	// key: built by one scan on first use, then kept up to date by
	// noteCommitted under the writer's lock (nil: not built yet).
	held []map[string]int
}

type checkConstraint struct {
	name string
	fn   eval.Fn
}

type uniqueConstraint struct {
	name string
	cols []int
}

// buildConstraints binds and compiles ent's constraints and defaults.
func (e *Engine) buildConstraints(ent *storage.CatalogEntry) (*tableConstraints, error) {
	cols := ent.Cols()
	_, bare := relSchema(ent.Name)
	tc := &tableConstraints{table: bare, cols: cols, notNull: make([]bool, len(cols)),
		defaults: make([]spec.Expr, len(cols)), identity: make([]string, len(cols)), pkey: ent.Key}
	for i, c := range ent.Columns {
		tc.notNull[i] = c.NotNull
		tc.identity[i] = c.Identity
		if c.Default == "" {
			continue
		}
		x, err := parser.ParseExpr(c.Default)
		if err != nil {
			return nil, err
		}
		if tc.defaults[i], err = e.newPlanner().BindDefault(x, cols[i]); err != nil {
			return nil, err
		}
	}
	for _, k := range ent.Key {
		tc.notNull[k] = true
	}
	checks := append([]storage.CheckEntry(nil), ent.Checks...)
	sort.Slice(checks, func(i, j int) bool { return checks[i].Name < checks[j].Name })
	for _, ch := range checks {
		x, err := parser.ParseExpr(ch.Expr)
		if err != nil {
			return nil, err
		}
		b, err := e.newPlanner().BindRowExpr(ent.Name, cols, x, types.TBool)
		if err != nil {
			return nil, err
		}
		fn, err := eval.Compile(b, &eval.Context{})
		if err != nil {
			return nil, err
		}
		tc.checks = append(tc.checks, checkConstraint{name: ch.Name, fn: fn})
	}
	for _, u := range ent.Uniques {
		tc.uniques = append(tc.uniques, uniqueConstraint{name: u.Name, cols: u.Cols})
	}
	return tc, nil
}

// checkRow enforces NOT NULL and CHECK on a row about to be written, in
// PostgreSQL's order: columns in order, then checks by name.
func (tc *tableConstraints) checkRow(r types.Row) error {
	if tc.broken != nil {
		return tc.broken
	}
	for i, nn := range tc.notNull {
		if nn && r[i].IsNull() {
			return pgerror.New(pgcode.NotNullViolation, "null value in column %q of relation %q violates not-null constraint", tc.cols[i].Name, tc.table).
				WithDetail("Failing row contains %s.", tc.failingRow(r))
		}
	}
	for _, c := range tc.checks {
		d, err := c.fn(r)
		if err != nil {
			return err
		}
		if d.K == types.KBool && d.I == 0 {
			return pgerror.New(pgcode.CheckViolation, "new row for relation %q violates check constraint %q", tc.table, c.name).
				WithDetail("Failing row contains %s.", tc.failingRow(r))
		}
	}
	return nil
}

// failingRow renders a row as PostgreSQL's DETAIL does: (1, null, abc).
func (tc *tableConstraints) failingRow(r types.Row) string {
	var sb strings.Builder
	sb.WriteByte('(')
	for i, d := range r {
		if i > 0 {
			sb.WriteString(", ")
		}
		if d.IsNull() {
			sb.WriteString("null")
		} else {
			sb.WriteString(types.FormatText(d, tc.cols[i].Type))
		}
	}
	sb.WriteByte(')')
	return sb.String()
}

// uniqueKey encodes r's values of cols; ok is false when one is NULL
// (NULLs are distinct: such a row never conflicts).
func uniqueKey(r types.Row, cols []int) (string, bool) {
	var k []byte
	for _, c := range cols {
		if r[c].IsNull() {
			return "", false
		}
		k = types.AppendKey(k, r[c])
	}
	return string(k), true
}

func (tc *tableConstraints) uniqueErr(u uniqueConstraint, r types.Row) error {
	var names, vals []string
	for _, c := range u.cols {
		names = append(names, tc.cols[c].Name)
		vals = append(vals, types.FormatText(r[c], tc.cols[c].Type))
	}
	return pgerror.New(pgcode.UniqueViolation, "duplicate key value violates unique constraint %q", u.name).
		WithDetail("Key (%s)=(%s) already exists.", strings.Join(names, ", "), strings.Join(vals, ", "))
}

// checkUniques enforces the table's UNIQUE constraints (other than the
// primary key, which the write set's keys enforce) for rows about to be
// written, row by row as PostgreSQL's non-deferrable constraints are:
// row i replaces olds[i] (nil: a new row; a nil rows[i] removes olds[i]).
// The keys held are the committed ones (counted in memory) with the rows
// transaction tx changed over them; a block's rows are checked again at
// its COMMIT against what was committed meanwhile (txn.commit). The
// caller holds tw.mu.
func (e *Engine) checkUniques(tx *txn, tw *tableWriter, olds, rows []types.Row) error {
	tc := tw.cons
	if tc == nil || len(tc.uniques) == 0 || len(rows) == 0 {
		return nil
	}
	held, err := e.uniqueIndex(tw)
	if err != nil {
		return err
	}
	delta := make([]map[string]int, len(tc.uniques))
	for j := range delta {
		delta[j] = map[string]int{}
	}
	add := func(r types.Row, n int) {
		for j, u := range tc.uniques {
			if k, ok := uniqueKey(r, u.cols); ok {
				delta[j][k] += n
			}
		}
	}
	if tt := tx.tables[tw.id]; tt != nil {
		for _, ent := range tt.rows {
			if ent.orig != nil {
				add(ent.orig, -1)
			}
			if ent.cur != nil {
				add(ent.cur, 1)
			}
		}
	}
	for i, r := range rows {
		if olds != nil && olds[i] != nil {
			add(olds[i], -1)
		}
		if r == nil {
			continue
		}
		for j, u := range tc.uniques {
			k, ok := uniqueKey(r, u.cols)
			if !ok {
				continue
			}
			if held[j][k]+delta[j][k] > 0 {
				return tc.uniqueErr(u, r)
			}
			delta[j][k]++
		}
	}
	return nil
}

// uniqueIndex returns the unique keys the committed rows hold, scanning
// the table the first time.
func (e *Engine) uniqueIndex(tw *tableWriter) ([]map[string]int, error) {
	tc := tw.cons
	if tc.held != nil {
		return tc.held, nil
	}
	out := make([]map[string]int, len(tc.uniques))
	for i := range out {
		out[i] = map[string]int{}
	}
	err := e.scanMatching(tw, nil, nil, func(k []byte, r types.Row) error {
		for i, u := range tc.uniques {
			if uk, ok := uniqueKey(r, u.cols); ok {
				out[i][uk]++
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	tc.held = out
	return out, nil
}

// noteCommitted keeps the unique keys up to date with a change written
// to the table. The caller holds tw.mu.
func (tw *tableWriter) noteCommitted(b *types.Batch) {
	tc := tw.cons
	if tc == nil || tc.held == nil {
		return
	}
	for i, r := range b.Rows {
		for j, u := range tc.uniques {
			if k, ok := uniqueKey(r, u.cols); ok {
				if tc.held[j][k] += int(b.Diffs[i]); tc.held[j][k] <= 0 {
					delete(tc.held[j], k)
				}
			}
		}
	}
}

// defaultFns compiles the column defaults for one statement (nextval and
// now() read the statement's context).
func (tc *tableConstraints) defaultFns(ectx *eval.Context) ([]eval.Fn, error) {
	if tc.broken != nil {
		return nil, tc.broken
	}
	fns := make([]eval.Fn, len(tc.defaults))
	for i, x := range tc.defaults {
		if x == nil {
			continue
		}
		fn, err := eval.Compile(x, ectx)
		if err != nil {
			return nil, err
		}
		fns[i] = fn
	}
	return fns, nil
}

// identityAlwaysErr is PostgreSQL's refusal of an explicit value for a
// GENERATED ALWAYS identity column.
func (tc *tableConstraints) identityAlwaysErr(col int, update bool) error {
	name := tc.cols[col].Name
	var err *pgerror.Error
	if update {
		err = pgerror.New(pgcode.GeneratedAlways, "column %q can only be updated to DEFAULT", name)
	} else {
		err = pgerror.New(pgcode.GeneratedAlways, "cannot insert a non-DEFAULT value into column %q", name)
	}
	err = err.WithDetail("Column %q is an identity column defined as GENERATED ALWAYS.", name)
	if !update {
		err = err.WithHint("Use OVERRIDING SYSTEM VALUE to override.")
	}
	return err
}

// updateSets compiles UPDATE's SET expressions; a nil expression is
// DEFAULT. Assigning anything but DEFAULT to a GENERATED ALWAYS column is
// 428C9.
func (tw *tableWriter) updateSets(sets map[int]spec.Expr, ectx *eval.Context) (map[int]eval.Fn, error) {
	tc := tw.constraints()
	var defs []eval.Fn
	out := map[int]eval.Fn{}
	for c, x := range sets {
		if x == nil {
			if defs == nil {
				var err error
				if defs, err = tc.defaultFns(ectx); err != nil {
					return nil, err
				}
			}
			if fn := defs[c]; fn != nil {
				out[c] = fn
			} else {
				out[c] = func(types.Row) (types.Datum, error) { return types.Null, nil }
			}
			continue
		}
		if tc.identity[c] == parser.IdentityAlways {
			return nil, tc.identityAlwaysErr(c, true)
		}
		fn, err := eval.Compile(x, ectx)
		if err != nil {
			return nil, err
		}
		out[c] = fn
	}
	return out, nil
}

// constraints returns the table's constraints, for a caller that does
// not hold tw.mu (ALTER TABLE replaces them under it).
func (tw *tableWriter) constraints() *tableConstraints {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.cons
}

// check validates a row for the table: NOT NULL and CHECK constraints.
// The caller holds tw.mu.
func (tw *tableWriter) check(r types.Row) error {
	return tw.cons.checkRow(r)
}

// constraintRows are pg_constraint's rows of a table's UNIQUE ('u') and
// CHECK ('c') constraints (the primary key's row is pgcatalog.go's).
func constraintRows(r userRel) []types.Row {
	if r.kind != "r" {
		return nil
	}
	var out []types.Row
	oid := func(k int) int64 { return oidFirstConstraint + 1<<24 + int64(r.e.ID)*64 + int64(k) }
	attnums := func(cols []int) []string {
		var a []string
		for _, c := range cols {
			a = append(a, strconv.Itoa(c+1))
		}
		return a
	}
	k := 0
	for _, u := range r.e.Uniques {
		k++
		if u.Index {
			continue // a unique index is not a constraint
		}
		out = append(out, mkRow(oid(k), u.Name, oidPublic, "u", false,
			false, true, r.oid, 0, indexOID(r, k), 0, 0,
			" ", " ", " ", true, 0, true,
			attnums(u.Cols), nil, nil))
	}
	for _, c := range r.e.Checks {
		k++
		var cols []int
		if x, err := parser.ParseExpr(c.Expr); err == nil {
			for _, name := range columnRefs(x) {
				for i, ce := range r.e.Columns {
					if ce.Name == name {
						cols = append(cols, i)
					}
				}
			}
		}
		out = append(out, mkRow(oid(k), c.Name, oidPublic, "c", false,
			false, true, r.oid, 0, 0, 0, 0,
			" ", " ", " ", true, 0, false,
			attnums(cols), nil, nil))
	}
	return out
}

// setDefaultAttrs fills pg_attribute's atthasdef and attidentity of a
// user table's column row.
func setDefaultAttrs(row types.Row, c storage.ColumnEntry) {
	const atthasdef, attidentity = 14, 16
	switch c.Identity {
	case parser.IdentityAlways:
		row[attidentity] = types.NewString("a")
	case parser.IdentityByDefault:
		row[attidentity] = types.NewString("d")
	default:
		row[atthasdef] = types.NewBool(c.Default != "")
	}
}

// attrdefRows are pg_attrdef's rows: adbin holds the default's SQL text
// (pg_get_expr returns it as is).
func attrdefRows(env *sysEnv) []types.Row {
	var out []types.Row
	for _, r := range userRels(env) {
		if r.kind != "r" {
			continue
		}
		for i, c := range r.e.Columns {
			if c.Default == "" || c.Identity != "" {
				continue
			}
			d, _, _ := columnDefault(r.e.Columns, i)
			out = append(out, mkRow(oidFirstConstraint+1<<25+int64(r.e.ID)*1024+int64(i), r.oid, i+1, d))
		}
	}
	return out
}

// brokenConstraints stands for the constraints of a table whose defaults
// or checks no longer bind: writes fail with err (XX000 unless it has a
// code), reads work.
func brokenConstraints(ent *storage.CatalogEntry, err error) *tableConstraints {
	cols := ent.Cols()
	return &tableConstraints{table: ent.Name, cols: cols, notNull: make([]bool, len(cols)),
		defaults: make([]spec.Expr, len(cols)), identity: make([]string, len(cols)), pkey: ent.Key,
		broken: pgerror.Wrap(err, pgcode.ObjectNotInPrerequisiteState, "the constraints or defaults of table %s no longer bind", ent.Name)}
}
