// Package cat is the planner's view of the catalog: interfaces only. One
// adapter in server bridges it to storage's catalog, so that the planner
// never touches storage.
package cat

import (
	"sluice/exec/spec"
	"sluice/sql/types"
)

// Kind is the kind of a relation.
type Kind uint8

// Relation kinds.
const (
	Table Kind = iota
	Source
	MaterializedView
	View
	Sink
	System // pg_catalog / information_schema relations
)

var kindNames = [...]string{"table", "source", "materialized view", "view", "sink", "system table"}

func (k Kind) String() string { return kindNames[k] }

// Relation is something a query can read.
type Relation struct {
	ID   uint64
	OID  uint32 // pg_class.oid
	Name string
	Kind Kind
	// Owner is the role that owns the relation ("" for system relations).
	Owner   string
	Columns []types.Column
	Key     []int // unique key columns (primary key / group key); nil = none
	// Source is set for sources: how to read it.
	Source *spec.SourceSpec
	// Query is the defining query of a plain view (expanded at bind time).
	Query string
	// EmitOnWindowClose: the plain view was created with EMIT ON WINDOW
	// CLOSE, which a materialized view or sink reading it inherits.
	EmitOnWindowClose bool
	// Rows returns the rows of a system relation.
	Rows func() ([]types.Row, error)
}

// Catalog resolves names.
type Catalog interface {
	// Resolve finds a relation by name (lower-cased unless quoted); it
	// returns a 42P01 error if there is none.
	Resolve(schema, name string) (*Relation, error)
}
