package spec

import (
	"bytes"
	"encoding/json"
	"fmt"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// PlanFormat is the version of the stored plan encoding Encode writes; it
// equals storage.PlanFormat (a test checks). Decode reads versions
// ReadPlanFormat to PlanFormat.
const (
	PlanFormat     = 1
	ReadPlanFormat = 1
)

// Encode returns the stored form of a job's physical plan: versioned
// JSON of every node, its StateID and state-shaping fields, and its
// expressions. The encoding is checked by decoding it and encoding the
// result again: a plan that does not survive the round trip is refused
// (XX000) rather than stored, so a restart never runs another plan than
// the one that wrote the state.
func Encode(p *Plan) ([]byte, error) {
	b, err := encode(p)
	if err != nil {
		return nil, err
	}
	back, err := Decode(b)
	if err != nil {
		return nil, pgerror.Wrap(err, pgcode.Internal, "stored plan does not decode")
	}
	again, err := encode(back)
	if err != nil || !bytes.Equal(b, again) {
		return nil, pgerror.Newf(pgcode.Internal, "stored plan does not survive a round trip:\n%s\n%s", b, again)
	}
	return b, nil
}

// PlanVersion returns the format version of a stored plan (0 if it has
// none).
func PlanVersion(b []byte) int {
	var h struct {
		Version int `json:"version"`
	}
	_ = json.Unmarshal(b, &h)
	return h.Version
}

// Decode reads a plan stored by Encode. A version this build cannot read
// is 55000, naming both versions.
func Decode(b []byte) (*Plan, error) {
	var sp storedPlan
	if err := json.Unmarshal(b, &sp); err != nil {
		return nil, pgerror.Wrap(err, pgcode.DataCorrupted, "corrupt stored plan")
	}
	if sp.Version < ReadPlanFormat || sp.Version > PlanFormat {
		return nil, pgerror.Newf(pgcode.ObjectNotInPrerequisiteState,
			"stored plan has format %d; this build reads plan formats %d to %d", sp.Version, ReadPlanFormat, PlanFormat)
	}
	// A field this build does not know was written by a newer build that
	// added it within the same format (fields are omitted when unused, so
	// plans that do not use them stay readable): running the plan without
	// it would compute something else, so it is refused.
	strict := json.NewDecoder(bytes.NewReader(b))
	strict.DisallowUnknownFields()
	if err := strict.Decode(&storedPlan{}); err != nil {
		return nil, pgerror.Newf(pgcode.ObjectNotInPrerequisiteState,
			"stored plan uses what this build does not know (%v): it was written by a newer build", err).
			WithHint("Run the build that created it, or drop and re-create the object.")
	}
	p := &Plan{Nodes: make([]*Node, len(sp.Nodes)), TimeZone: sp.TimeZone}
	for i, jn := range sp.Nodes {
		n, err := jn.node()
		if err != nil {
			return nil, pgerror.Wrap(err, pgcode.DataCorrupted, "corrupt stored plan, node %d", i)
		}
		for _, in := range n.Inputs {
			if in < 0 || in >= i {
				return nil, pgerror.Newf(pgcode.DataCorrupted, "corrupt stored plan: node %d reads node %d", i, in)
			}
		}
		p.Nodes[i] = n
	}
	return p, nil
}

// AssignStateIDs gives every node without one a StateID, unique in the
// plan: the id its state is stored under from then on, whatever position
// the node takes in a later plan.
func (p *Plan) AssignStateIDs() {
	next := uint64(1)
	for _, n := range p.Nodes {
		next = max(next, n.StateID+1)
	}
	for _, n := range p.Nodes {
		if n.StateID == 0 {
			n.StateID = next
			next++
		}
	}
}

type storedPlan struct {
	Version  int         `json:"version"`
	TimeZone string      `json:"timezone,omitempty"`
	Nodes    []*jsonNode `json:"nodes"`
}

// nodeFields is Node without its methods; jsonNode overrides the fields
// holding expressions and datums, which JSON cannot carry as they are.
type nodeFields Node

type jsonNode struct {
	nodeFields
	Lookup   []*jsonExpr   `json:"Lookup,omitempty"`
	Rows     [][]byte      `json:"Rows,omitempty"`
	Pred     *jsonExpr     `json:"Pred,omitempty"`
	Exprs    []*jsonExpr   `json:"Exprs,omitempty"`
	SetFuncs []jsonSetFunc `json:"SetFuncs,omitempty"`
	Cond     *jsonExpr     `json:"Cond,omitempty"`
}

type jsonSetFunc struct {
	Name string
	Args []*jsonExpr
	Cols int
}

// jsonExpr is one expression: K names its kind.
type jsonExpr struct {
	K       string      `json:"k"`
	T       types.T     `json:"t"`
	Idx     int         `json:"idx,omitempty"`
	Name    string      `json:"name,omitempty"`
	D       []byte      `json:"d,omitempty"` // Const: types.AppendValue
	Args    []*jsonExpr `json:"args,omitempty"`
	Operand *jsonExpr   `json:"operand,omitempty"`
	Else    *jsonExpr   `json:"else,omitempty"`
}

func encode(p *Plan) ([]byte, error) {
	sp := storedPlan{Version: PlanFormat, TimeZone: p.TimeZone, Nodes: make([]*jsonNode, len(p.Nodes))}
	for i, n := range p.Nodes {
		jn := &jsonNode{nodeFields: nodeFields(*n)}
		jn.nodeFields.Lookup, jn.nodeFields.Rows, jn.nodeFields.Pred, jn.nodeFields.Exprs = nil, nil, nil, nil
		jn.nodeFields.SetFuncs, jn.nodeFields.Cond = nil, nil
		var err error
		if jn.Lookup, err = encodeExprs(n.Lookup); err != nil {
			return nil, err
		}
		for _, r := range n.Rows {
			jn.Rows = append(jn.Rows, types.EncodeRow(nil, r))
		}
		if jn.Pred, err = encodeExpr(n.Pred); err != nil {
			return nil, err
		}
		if jn.Exprs, err = encodeExprs(n.Exprs); err != nil {
			return nil, err
		}
		for _, f := range n.SetFuncs {
			args, err := encodeExprs(f.Args)
			if err != nil {
				return nil, err
			}
			jn.SetFuncs = append(jn.SetFuncs, jsonSetFunc{Name: f.Name, Args: args, Cols: f.Cols})
		}
		if jn.Cond, err = encodeExpr(n.Cond); err != nil {
			return nil, err
		}
		sp.Nodes[i] = jn
	}
	return json.Marshal(&sp)
}

func (jn *jsonNode) node() (*Node, error) {
	n := Node(jn.nodeFields)
	var err error
	if n.Lookup, err = decodeExprs(jn.Lookup); err != nil {
		return nil, err
	}
	for _, b := range jn.Rows {
		r, err := types.DecodeRow(b)
		if err != nil {
			return nil, err
		}
		n.Rows = append(n.Rows, r)
	}
	if n.Pred, err = decodeExpr(jn.Pred); err != nil {
		return nil, err
	}
	if n.Exprs, err = decodeExprs(jn.Exprs); err != nil {
		return nil, err
	}
	for _, f := range jn.SetFuncs {
		args, err := decodeExprs(f.Args)
		if err != nil {
			return nil, err
		}
		n.SetFuncs = append(n.SetFuncs, SetFunc{Name: f.Name, Args: args, Cols: f.Cols})
	}
	if n.Cond, err = decodeExpr(jn.Cond); err != nil {
		return nil, err
	}
	return &n, nil
}

func encodeExprs(es []Expr) ([]*jsonExpr, error) {
	if es == nil {
		return nil, nil
	}
	out := make([]*jsonExpr, len(es))
	for i, e := range es {
		j, err := encodeExpr(e)
		if err != nil {
			return nil, err
		}
		if j == nil {
			return nil, pgerror.Newf(pgcode.Internal, "stored plan: nil expression in a list")
		}
		out[i] = j
	}
	return out, nil
}

func encodeExpr(e Expr) (*jsonExpr, error) {
	if e == nil {
		return nil, nil
	}
	switch x := e.(type) {
	case *ColRef:
		return &jsonExpr{K: "col", T: x.T, Idx: x.Idx, Name: x.Name}, nil
	case *Const:
		return &jsonExpr{K: "const", T: x.T, D: types.AppendValue(nil, x.D)}, nil
	case *Param:
		return &jsonExpr{K: "param", T: x.T, Idx: x.N}, nil
	case *Func:
		args, err := encodeExprs(x.Args)
		if err != nil {
			return nil, err
		}
		if args == nil {
			args = []*jsonExpr{}
		}
		return &jsonExpr{K: "func", T: x.T, Name: x.Name, Args: args}, nil
	case *Case:
		j := &jsonExpr{K: "case", T: x.T, Args: []*jsonExpr{}}
		var err error
		if j.Operand, err = encodeExpr(x.Operand); err != nil {
			return nil, err
		}
		if j.Else, err = encodeExpr(x.Else); err != nil {
			return nil, err
		}
		for _, w := range x.Whens {
			c, err := encodeExpr(w.Cond)
			if err != nil {
				return nil, err
			}
			t, err := encodeExpr(w.Then)
			if err != nil {
				return nil, err
			}
			j.Args = append(j.Args, c, t)
		}
		return j, nil
	case *Cast:
		a, err := encodeExpr(x.E)
		if err != nil {
			return nil, err
		}
		return &jsonExpr{K: "cast", T: x.T, Args: []*jsonExpr{a}}, nil
	}
	return nil, pgerror.Newf(pgcode.FeatureNotSupported, "a job's plan cannot hold %T", e)
}

func decodeExprs(js []*jsonExpr) ([]Expr, error) {
	if js == nil {
		return nil, nil
	}
	out := make([]Expr, len(js))
	for i, j := range js {
		if j == nil {
			return nil, fmt.Errorf("nil expression in a list")
		}
		e, err := decodeExpr(j)
		if err != nil {
			return nil, err
		}
		out[i] = e
	}
	return out, nil
}

func decodeExpr(j *jsonExpr) (Expr, error) {
	if j == nil {
		return nil, nil
	}
	switch j.K {
	case "col":
		return &ColRef{Idx: j.Idx, T: j.T, Name: j.Name}, nil
	case "const":
		d, rest, err := types.DecodeValue(j.D)
		if err != nil {
			return nil, err
		}
		if len(rest) != 0 {
			return nil, fmt.Errorf("constant with %d trailing bytes", len(rest))
		}
		return &Const{D: d, T: j.T}, nil
	case "param":
		return &Param{N: j.Idx, T: j.T}, nil
	case "func":
		args, err := decodeExprs(j.Args)
		if err != nil {
			return nil, err
		}
		return &Func{Name: j.Name, Args: args, T: j.T}, nil
	case "case":
		c := &Case{T: j.T}
		var err error
		if c.Operand, err = decodeExpr(j.Operand); err != nil {
			return nil, err
		}
		if c.Else, err = decodeExpr(j.Else); err != nil {
			return nil, err
		}
		if len(j.Args)%2 != 0 {
			return nil, fmt.Errorf("CASE with an odd number of arms")
		}
		for i := 0; i < len(j.Args); i += 2 {
			cond, err := decodeExpr(j.Args[i])
			if err != nil {
				return nil, err
			}
			then, err := decodeExpr(j.Args[i+1])
			if err != nil {
				return nil, err
			}
			c.Whens = append(c.Whens, When{Cond: cond, Then: then})
		}
		return c, nil
	case "cast":
		if len(j.Args) != 1 || j.Args[0] == nil {
			return nil, fmt.Errorf("cast without its argument")
		}
		a, err := decodeExpr(j.Args[0])
		if err != nil {
			return nil, err
		}
		return &Cast{E: a, T: j.T}, nil
	}
	return nil, fmt.Errorf("unknown expression kind %q", j.K)
}
