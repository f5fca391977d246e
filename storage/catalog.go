package storage

import (
	"encoding/binary"
	"encoding/json"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// CatalogEntry is one persisted catalog object. A materialized view or
// sink restarts from its stored Plan; its operator ids derive from the
// entry's id and each node's StateID, so the restored operators find their
// state.
type CatalogEntry struct {
	ID        uint64            `json:"id"`
	Kind      string            `json:"kind"` // table, source, materialized view, view, sink
	Name      string            `json:"name"`
	SQL       string            `json:"sql"`
	Columns   []ColumnEntry     `json:"columns,omitempty"`
	Key       []int             `json:"key,omitempty"`
	Deps      []uint64          `json:"deps,omitempty"`
	Connector string            `json:"connector,omitempty"`
	Options   map[string]string `json:"options,omitempty"`
	Query     string            `json:"query,omitempty"`
	// EmitOnWindowClose: a plain view created with EMIT ON WINDOW CLOSE.
	EmitOnWindowClose bool `json:"emit_on_window_close,omitempty"`
	// AppendOnly is true for a materialized view or source whose change
	// stream never retracts a row.
	AppendOnly bool `json:"append_only,omitempty"`
	// Watermark is a source's WATERMARK FOR clause.
	Watermark *WatermarkEntry `json:"watermark,omitempty"`
	// Checks, Uniques and Indexes are a table's CHECK and UNIQUE
	// constraints and its secondary indexes.
	Checks  []CheckEntry  `json:"checks,omitempty"`
	Uniques []UniqueEntry `json:"uniques,omitempty"`
	Indexes []IndexEntry  `json:"indexes,omitempty"`
	// Sequence describes a sequence (Kind "sequence").
	Sequence *SequenceEntry `json:"sequence,omitempty"`
	// Owner is the role that created the object; "" (entries written
	// before owners were recorded) is the bootstrap superuser.
	Owner string `json:"owner,omitempty"`
	// ACL is the object's access-control list as PostgreSQL aclitem texts
	// (`alice=arwdDxt/alice`); nil is the default: the owner holds every
	// privilege.
	ACL []string `json:"acl"` // no omitempty: [] (every privilege revoked) is not nil
	// Plan is the stored physical plan of a materialized view's or sink's
	// job (exec/spec's Encode, versioned): the job restarts from it, not
	// from SQL planned again.
	Plan json.RawMessage `json:"plan,omitempty"`
	// Refused, not stored, is why this build did not start the object
	// (a stored plan in a format it cannot read): SHOW shows it, reads
	// of it fail with 55000, and DROP removes it.
	Refused string `json:"-"`
}

// CheckEntry is a persisted CHECK constraint: its name and the SQL text
// of its expression.
type CheckEntry struct {
	Name string `json:"name"`
	Expr string `json:"expr"`
}

// UniqueEntry is a persisted UNIQUE constraint (or unique index, Index
// set) over columns Cols.
type UniqueEntry struct {
	Name  string `json:"name"`
	Cols  []int  `json:"cols"`
	Index bool   `json:"index,omitempty"`
}

// IndexEntry is a persisted non-unique secondary index.
type IndexEntry struct {
	Name string `json:"name"`
	Cols []int  `json:"cols"`
}

// SequenceEntry is a persisted sequence's definition. Its current value is
// kept apart (under SpaceMeta), written synchronously as values are
// reserved.
type SequenceEntry struct {
	Fam       uint8 `json:"fam"`
	Increment int64 `json:"increment"`
	Start     int64 `json:"start"`
	Min       int64 `json:"min"`
	Max       int64 `json:"max"`
	Cycle     bool  `json:"cycle,omitempty"`
	// OwnedBy is the table whose column uses the sequence (SERIAL,
	// identity): the sequence is dropped with it.
	OwnedBy  uint64 `json:"owned_by,omitempty"`
	OwnedCol string `json:"owned_col,omitempty"`
}

// WatermarkEntry is a persisted source watermark: column Col's largest
// value read, minus Delay microseconds.
type WatermarkEntry struct {
	Col   int   `json:"col"`
	Delay int64 `json:"delay_us"`
}

// ColumnEntry is a persisted column.
type ColumnEntry struct {
	Name    string `json:"name"`
	Fam     uint8  `json:"fam"`
	Prec    int16  `json:"prec,omitempty"`
	Scale   int16  `json:"scale,omitempty"`
	NotNull bool   `json:"not_null,omitempty"`
	// Default is the SQL text of the column's DEFAULT expression.
	Default string `json:"default,omitempty"`
	// Identity is "always" or "by default" for an identity column.
	Identity string `json:"identity,omitempty"`
	// Fields are a record column's fields (a view's ROW(…) column): the
	// record type's shape id (Prec) is per process, so the shape is
	// stored and interned again when the entry is read.
	Fields []ColumnEntry `json:"fields,omitempty"`
	// Struct marks a STRUCT<…> column's record type (types.StructType).
	Struct bool `json:"struct,omitempty"`
}

// Type returns the column's SQL type.
func (c ColumnEntry) Type() types.T {
	if types.Family(c.Fam) == types.Record {
		if len(c.Fields) == 0 {
			return types.T{Fam: types.Record} // anonymous
		}
		fields := make([]types.Column, len(c.Fields))
		for i, f := range c.Fields {
			fields[i] = types.Column{Name: f.Name, Type: f.Type()}
		}
		if c.Struct {
			return types.StructType(fields)
		}
		return types.RecordType(fields)
	}
	return types.T{Fam: types.Family(c.Fam), Prec: c.Prec, Scale: c.Scale}
}

// ColumnOf returns the persisted form of a column.
func ColumnOf(c types.Column) ColumnEntry {
	if c.Type.Fam == types.Record {
		e := ColumnEntry{Name: c.Name, Fam: uint8(types.Record), Struct: c.Type.IsStruct()}
		for _, f := range c.Type.RecordFields() {
			e.Fields = append(e.Fields, ColumnOf(f))
		}
		return e
	}
	return ColumnEntry{Name: c.Name, Fam: uint8(c.Type.Fam), Prec: c.Type.Prec, Scale: c.Type.Scale}
}

// Cols returns the entry's columns.
func (e *CatalogEntry) Cols() []types.Column {
	out := make([]types.Column, len(e.Columns))
	for i, c := range e.Columns {
		out[i] = types.Column{Name: c.Name, Type: c.Type()}
	}
	return out
}

// LoadCatalog returns every committed catalog entry in id order, and the
// id allocator's next value.
func (db *DB) LoadCatalog() ([]*CatalogEntry, uint64, error) {
	var out []*CatalogEntry
	err := db.Scan([]byte{SpaceCatalog, '/'}, func(_, v []byte) error {
		e := &CatalogEntry{}
		if err := json.Unmarshal(v, e); err != nil {
			return pgerror.Wrap(err, pgcode.DataCorrupted, "corrupt catalog entry")
		}
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	next := uint64(1)
	v, err := db.Get([]byte("m/nextid"))
	if err != nil {
		return nil, 0, err
	}
	if v != nil {
		next, _ = binary.Uvarint(v)
	}
	for _, e := range out {
		if e.ID >= next {
			next = e.ID + 1
		}
	}
	return out, next, nil
}

// PutCatalog records e (and the id allocator) in epoch writer w.
func PutCatalog(w *EpochWriter, e *CatalogEntry, nextID uint64) {
	v, _ := json.Marshal(e)
	w.Set(Key(SpaceCatalog, e.ID), v)
	w.Set([]byte("m/nextid"), binary.AppendUvarint(nil, nextID))
}

// DeleteCatalog records the removal of entry id in w.
func DeleteCatalog(w *EpochWriter, id uint64) {
	w.Delete(Key(SpaceCatalog, id))
}

// PutCatalogSync records e, the removal of entry old (0: none) and the id
// allocator in w, a batch written outside the epochs: ALTER TABLE swaps a
// rebuilt table in atomically with its rows.
func PutCatalogSync(w *WriteBatch, e *CatalogEntry, old, nextID uint64) {
	v, _ := json.Marshal(e)
	w.Set(Key(SpaceCatalog, e.ID), v)
	if old != 0 {
		w.Delete(Key(SpaceCatalog, old))
	}
	w.Set([]byte("m/nextid"), binary.AppendUvarint(nil, nextID))
}
