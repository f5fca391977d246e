package planner

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/exec/spec"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// Session windows (Nexmark q11):
//
//	SESSION(relation, time_col, gap [, partition_col …])
//
// in FROM adds window_start and window_end to each row: the rows of one
// partition whose times are at most gap apart form a session from its
// first time to its last time plus gap (Flink's session window). GROUP BY
// partition_col, window_start, window_end then aggregates per session. A
// late row can merge two sessions: the rows of both are re-emitted with
// the new bounds, so aggregates over sessions stay exact.
const sessionPrefix = "__pg_session__"

func isSession(tn *ast.TableName) bool {
	return tn.Schema.O == "" && strings.HasPrefix(tn.Name.L, sessionPrefix)
}

func (p *Planner) planSession(tn *ast.TableName, alias string) (int, *scope, error) {
	tf, ok := p.TableFuncs[tn.Name.O]
	if !ok {
		return 0, nil, pgerror.Unsupported("table function %s", tn.Name.O)
	}
	if len(tf.Args) < 3 {
		return 0, nil, pgerror.New(pgcode.UndefinedFunction, "function session with %d arguments does not exist", len(tf.Args)).
			WithHint("SESSION(relation, time column, gap [, partition column …])")
	}
	rel, ok := tf.Args[0].(*ast.ColumnNameExpr)
	if !ok || rel.Name.Schema.O != "" {
		return 0, nil, pgerror.New(pgcode.InvalidParameterValue, "the first argument of SESSION must name a relation")
	}
	if alias == "" || alias == tn.Name.O {
		alias = rel.Name.Name.O
	}
	in, sc, err := p.planTable(&ast.TableName{Schema: rel.Name.Table, Name: rel.Name.Name}, alias)
	if err != nil {
		return 0, nil, err
	}
	colArg := func(a ast.ExprNode, what string) (int, error) {
		cn, ok := a.(*ast.ColumnNameExpr)
		if !ok {
			return 0, pgerror.New(pgcode.InvalidParameterValue, "the %s of SESSION must be a column", what)
		}
		return sc.resolve(cn.Name.Table.O, cn.Name.Name.O)
	}
	col, err := colArg(tf.Args[1], "second argument")
	if err != nil {
		return 0, nil, err
	}
	t := sc.cols[col].t
	if t.Fam != types.Timestamp && t.Fam != types.TimestampTZ {
		return 0, nil, pgerror.New(pgcode.DatatypeMismatch, "the time column of SESSION must be timestamp or timestamptz, %s is %s", sc.cols[col].name, t)
	}
	gap, err := p.constInterval(tf.Args[2], "SESSION")
	if err != nil {
		return 0, nil, err
	}
	if gap <= 0 {
		return 0, nil, pgerror.New(pgcode.InvalidParameterValue, "the gap of SESSION must be positive")
	}
	node := &spec.Node{Kind: spec.Window, Inputs: []int{in}, Limit: -1, Order: []spec.OrderItem{{Col: col}}}
	for _, a := range tf.Args[3:] {
		c, err := colArg(a, "partition arguments")
		if err != nil {
			return 0, nil, err
		}
		node.PartitionBy = append(node.PartitionBy, c)
	}
	node.WinFuncs = []spec.WindowCall{
		{Func: "session_start", Arg: col, Gap: gap, T: t},
		{Func: "session_end", Arg: col, Gap: gap, T: t},
	}
	out := &scope{cols: append([]scopeCol(nil), sc.cols...)}
	out.cols = append(out.cols, scopeCol{table: alias, name: "window_start", t: t}, scopeCol{table: alias, name: "window_end", t: t})
	node.Cols = out.columns()
	if p.Streaming {
		node.InputAppendOnly = p.AppendOnlyRel != nil && AppendOnly(p.plan, in, p.AppendOnlyRel)
	}
	return p.plan.Add(node), out, nil
}
