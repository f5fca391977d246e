package mysqlcdc

// Decoding binlog row events into keyed rows.

import (
	"context"
	"regexp"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

type decoder struct {
	cfg *config
	up  *upstreamTable
}

// ours reports whether a table map names the source's table.
func (d *decoder) ours(t *replication.TableMapEvent) bool {
	return t != nil && strings.EqualFold(string(t.Schema), d.cfg.Database) && strings.EqualFold(string(t.Table), d.cfg.Table)
}

var truncateRE = regexp.MustCompile("^TRUNCATE\\s+(?:TABLE\\s+)?(?:`?([^`.\\s]+)`?\\.)?`?([^`\\s]+)`?")

// truncates reports whether DDL q (upper-cased), run in schema, truncates
// the source's table.
func (d *decoder) truncates(schema, q string) bool {
	m := truncateRE.FindStringSubmatch(q)
	if m == nil {
		return false
	}
	db := m[1]
	if db == "" {
		db = schema
	}
	return strings.EqualFold(db, d.cfg.Database) && strings.EqualFold(m[2], d.cfg.Table)
}

// schemaChanged checks a table map whose column count is not the one the
// source knows: the table is probed again, and the source goes on when
// every declared column kept its place and type (columns added at the
// end), or ends with 55000.
func (d *decoder) schemaChanged(ctx context.Context, t *replication.TableMapEvent) error {
	c := d.cfg
	up, err := probe(ctx, c)
	if err == nil && int(t.ColumnCount) == len(up.cols) {
		same := true
		for i, j := range up.at {
			if j != d.up.at[i] || up.cols[j].dataType != d.up.cols[j].dataType {
				same = false
			}
		}
		if same {
			d.up.cols = up.cols
			return nil
		}
	}
	if err != nil && transient(err) {
		return err
	}
	return pgerror.New(pgcode.ObjectNotInPrerequisiteState, "mysql-cdc source %s: schema change upstream: table %s now has %d columns and a declared column moved, changed type or was dropped", c.Name, c.qualified(), t.ColumnCount).
		WithHint("drop the source and create it again with the table's new columns")
}

// row decodes a binlog row image into a source row.
func (d *decoder) row(vals []any) (types.Row, error) {
	c := d.cfg
	row := make(types.Row, len(c.Cols))
	for i, col := range c.Cols {
		j := d.up.at[i]
		if j >= len(vals) {
			return nil, pgerror.New(pgcode.ObjectNotInPrerequisiteState, "mysql-cdc source %s: a row of %s has %d columns, column %s is the %dth", c.Name, c.qualified(), len(vals), col.Name, j+1)
		}
		v, err := toDatum(vals[j], col.Type, d.up.cols[j])
		if err != nil {
			return nil, pgerror.Wrap(err, pgcode.InvalidTextRepresentation, "mysql-cdc source %s: column %s value %s", c.Name, col.Name, describe(vals[j]))
		}
		row[i] = v
	}
	return row, nil
}

// change turns a rows event into keyed rows: +1 for each new row, -1 for
// each deleted one (an update that moves the key deletes the old row
// first).
func (d *decoder) change(ctx context.Context, e *replication.RowsEvent) ([]types.Row, []int64, error) {
	if int(e.Table.ColumnCount) != len(d.up.cols) {
		if err := d.schemaChanged(ctx, e.Table); err != nil {
			return nil, nil, err
		}
	}
	var rows []types.Row
	var diffs []int64
	switch e.Type() {
	case replication.EnumRowsEventTypeInsert, replication.EnumRowsEventTypeDelete:
		diff := int64(1)
		if e.Type() == replication.EnumRowsEventTypeDelete {
			diff = -1
		}
		for _, vals := range e.Rows {
			r, err := d.row(vals)
			if err != nil {
				return nil, nil, err
			}
			rows, diffs = append(rows, r), append(diffs, diff)
		}
	case replication.EnumRowsEventTypeUpdate:
		for i := 0; i+1 < len(e.Rows); i += 2 {
			old, err := d.row(e.Rows[i])
			if err != nil {
				return nil, nil, err
			}
			row, err := d.row(e.Rows[i+1])
			if err != nil {
				return nil, nil, err
			}
			if !d.cfg.SameKey(old, row) {
				rows, diffs = append(rows, old), append(diffs, -1)
			}
			rows, diffs = append(rows, row), append(diffs, 1)
		}
	default:
		return nil, nil, pgerror.New(pgcode.ProtocolViolation, "mysql-cdc source %s: rows event of unknown type %v", d.cfg.Name, e.Type())
	}
	return rows, diffs, nil
}
