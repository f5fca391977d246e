package parser

import (
	"strconv"
	"strings"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
)

// Subscribe is SUBSCRIBE [TO] name [AS OF epoch] [WITH (option [= value],
// ...)], as Materialize spells it: the relation's rows, then its changes
// as they commit. Options: progress [= bool], snapshot [= bool].
type Subscribe struct {
	stmtText
	Name     string
	AsOf     uint64
	HasAsOf  bool
	Progress bool
	// NoSnapshot: WITH (snapshot = false), or AS OF (which resumes after
	// the epoch and has no snapshot).
	NoSnapshot bool
}

// AlterRetention is ALTER MATERIALIZED VIEW | TABLE name SET (retention =
// 'interval'): how long the relation's committed changes stay readable by
// SUBSCRIBE … AS OF.
type AlterRetention struct {
	stmtText
	Kind      string // "MATERIALIZED VIEW" or "TABLE"
	Name      string
	IfExists  bool
	Retention string
}

// isSubscribe reports whether the statement's tokens from r.i start a
// SUBSCRIBE.
func (r *rewriter) isSubscribe() bool { return r.tok().isWord("subscribe") }

// subscribe parses SUBSCRIBE up to the end of the tokens in [r.i, hi).
func (r *rewriter) subscribe(hi int) *Subscribe {
	r.expectWord("subscribe")
	s := &Subscribe{}
	if r.tok().isWord("to") {
		r.i++
	}
	if r.tok().isPunct("(") {
		r.unsupported(r.tok(), "SUBSCRIBE to a query is not supported: subscribe to a materialized view or a table")
	}
	s.Name = r.nameChainString()
	for r.i < hi {
		t := r.tok()
		switch {
		case t.isWord("as") && r.peek(1).isWord("of"):
			r.i += 2
			e := r.tok()
			if r.tok().isWord("at") && r.peek(1).isWord("least") {
				r.unsupported(e, "SUBSCRIBE … AS OF AT LEAST is not supported")
			}
			if e.kind != tkNumber {
				r.syntaxErr(e)
			}
			v, err := strconv.ParseUint(e.val, 10, 64)
			if err != nil {
				r.fail(pgerror.New(pgcode.InvalidParameterValue, "AS OF %s is not an epoch", e.val).WithPosition(charPos(r.src, e.pos)))
			}
			r.i++
			s.AsOf, s.HasAsOf, s.NoSnapshot = v, true, true
		case t.isWord("with") || t.isPunct("("):
			if t.isWord("with") {
				r.i++
			}
			r.expectPunct("(")
			for {
				k := r.tok()
				key := r.optionKey()
				on := true
				if r.tok().isOp("=") {
					r.i++
					v := r.tok()
					val := strings.ToLower(r.optionValue())
					switch val {
					case "true", "on", "1", "yes":
					case "false", "off", "0", "no":
						on = false
					default:
						r.fail(pgerror.New(pgcode.InvalidParameterValue, "option %s takes a boolean, not %q", key, val).WithPosition(charPos(r.src, v.pos)))
					}
				}
				switch key {
				case "progress":
					s.Progress = on
				case "snapshot":
					s.NoSnapshot = !on || s.HasAsOf
				default:
					r.fail(pgerror.Unsupported("SUBSCRIBE option %q is not supported", key).WithHint("the options are progress and snapshot").WithPosition(charPos(r.src, k.pos)))
				}
				if r.tok().isPunct(",") {
					r.i++
					continue
				}
				r.expectPunct(")")
				break
			}
		default:
			r.syntaxErr(t)
		}
	}
	return s
}

// subscribeStatement parses a SUBSCRIBE statement.
func (r *rewriter) subscribeStatement() Statement {
	s := r.subscribe(len(r.toks) - 1)
	r.expectEOF()
	return s
}

// alterRetention parses SET (retention = 'interval') after ALTER
// MATERIALIZED VIEW name or ALTER TABLE name.
func (r *rewriter) alterRetention(kind, name string, ifExists bool) Statement {
	r.expectWord("set")
	a := &AlterRetention{Kind: kind, Name: name, IfExists: ifExists}
	t := r.tok()
	opts := r.options()
	for _, o := range opts {
		if o.Key != "retention" {
			r.fail(pgerror.Unsupported("ALTER %s … SET (%s) is not supported", kind, o.Key).WithHint("only retention can be set").WithPosition(charPos(r.src, t.pos)))
		}
		a.Retention = o.Value
	}
	if len(opts) == 0 {
		r.syntaxErr(t)
	}
	r.expectEOF()
	return a
}
