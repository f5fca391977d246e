package pgcdc

// Decoding pgoutput changes into keyed rows.

import (
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"

	"github.com/jackc/pglogrepl"
)

// relation is the upstream table as the last Relation message described
// it: where each source column is in its tuples.
type relation struct {
	at []int // source column i → tuple column
}

type decoder struct {
	cfg  *config
	rels map[uint32]*relation
}

// relation records a Relation message. A declared column missing from it
// (dropped or renamed upstream) ends the source; added columns are not
// read (the source keeps its declared columns).
func (d *decoder) relation(m *pglogrepl.RelationMessage) error {
	c := d.cfg
	if m.Namespace != c.schema || m.RelationName != c.Table {
		return nil
	}
	byName := map[string]int{}
	for i, col := range m.Columns {
		byName[col.Name] = i
	}
	r := &relation{at: make([]int, len(c.Cols))}
	for i, col := range c.Cols {
		j, ok := byName[col.Name]
		if !ok {
			return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "postgres-cdc source %s: schema change upstream: column %s of %s was dropped or renamed", c.Name, col.Name, c.qualified()).
				WithHint("drop the source and create it again with the table's new columns")
		}
		r.at[i] = j
	}
	d.rels[m.RelationID] = r
	return nil
}

// row decodes a tuple into a source row; old, when set, supplies the
// values pgoutput leaves out of an update's new tuple (unchanged TOAST).
// keyOnly tuples (a delete under the primary-key replica identity) set
// only the key columns.
func (d *decoder) row(r *relation, t *pglogrepl.TupleData, old types.Row) (types.Row, error) {
	c := d.cfg
	row := make(types.Row, len(c.Cols))
	for i, col := range c.Cols {
		j := r.at[i]
		if t == nil || j >= len(t.Columns) {
			continue
		}
		tc := t.Columns[j]
		switch tc.DataType {
		case pglogrepl.TupleDataTypeNull:
		case pglogrepl.TupleDataTypeToast:
			if old == nil {
				return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "postgres-cdc source %s: an update upstream left column %s out (an unchanged TOASTed value)", c.Name, col.Name).
					WithHint("ALTER TABLE %s REPLICA IDENTITY FULL upstream, so that updates carry every value", c.qualified())
			}
			row[i] = old[i]
		case pglogrepl.TupleDataTypeText:
			v, err := parseValue(tc.Data, false, col.Type)
			if err != nil {
				return nil, pgerror.Wrap(err, pgcode.InvalidTextRepresentation, "postgres-cdc source %s: column %s", c.Name, col.Name)
			}
			row[i] = v
		default:
			return nil, pgerror.New(pgcode.ProtocolViolation, "postgres-cdc source %s: column %s came in format %q", c.Name, col.Name, tc.DataType)
		}
	}
	return row, nil
}

// change turns an insert, update or delete into keyed rows: +1 for the
// new row, -1 for a deleted key (an update that moves the key deletes the
// old one first).
func (d *decoder) change(m pglogrepl.Message) ([]types.Row, []int64, error) {
	var relID uint32
	switch m := m.(type) {
	case *pglogrepl.InsertMessage:
		relID = m.RelationID
	case *pglogrepl.UpdateMessage:
		relID = m.RelationID
	case *pglogrepl.DeleteMessage:
		relID = m.RelationID
	}
	r := d.rels[relID]
	if r == nil {
		return nil, nil, pgerror.New(pgcode.ProtocolViolation, "postgres-cdc source %s: a change to relation %d came before its description", d.cfg.Name, relID)
	}
	switch m := m.(type) {
	case *pglogrepl.InsertMessage:
		row, err := d.row(r, m.Tuple, nil)
		if err != nil {
			return nil, nil, err
		}
		return []types.Row{row}, []int64{1}, nil
	case *pglogrepl.UpdateMessage:
		var old types.Row
		if m.OldTuple != nil {
			var err error
			if old, err = d.row(r, m.OldTuple, nil); err != nil {
				return nil, nil, err
			}
		}
		var full types.Row
		if m.OldTupleType == pglogrepl.UpdateMessageTupleTypeOld {
			full = old
		}
		row, err := d.row(r, m.NewTuple, full)
		if err != nil {
			return nil, nil, err
		}
		if old != nil && !d.cfg.SameKey(old, row) {
			return []types.Row{old, row}, []int64{-1, 1}, nil
		}
		return []types.Row{row}, []int64{1}, nil
	case *pglogrepl.DeleteMessage:
		row, err := d.row(r, m.OldTuple, nil)
		if err != nil {
			return nil, nil, err
		}
		return []types.Row{row}, []int64{-1}, nil
	}
	return nil, nil, nil
}
