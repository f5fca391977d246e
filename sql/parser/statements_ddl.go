package parser

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/sql/types"
)

// This file holds the statements and clauses of Postgres' everyday DDL and
// DML beyond the streaming core: constraints, defaults, identity columns,
// ALTER TABLE, TRUNCATE, indexes, sequences, schemas, ON CONFLICT and
// RETURNING.

// CheckDef is a CHECK constraint: Name is "" when the user gave none (the
// server names it as Postgres does), Text the expression's source text.
type CheckDef struct {
	Name string
	Expr ast.ExprNode
	Text string
}

// UniqueDef is a UNIQUE (or, in ALTER TABLE, PRIMARY KEY) table constraint.
type UniqueDef struct {
	Name    string
	Columns []string
}

// Identity kinds of ColumnDef.Identity.
const (
	IdentityAlways    = "always"
	IdentityByDefault = "by default"
)

// Returning is a RETURNING clause: the select list (TiDB fields, `*`
// included) evaluated over each written row.
type Returning struct {
	Fields []*ast.SelectField
}

// Assignment is `col = expr` of ON CONFLICT DO UPDATE SET; Expr is nil
// for DEFAULT.
type Assignment struct {
	Column string
	Expr   ast.ExprNode
}

// OnConflict is INSERT's ON CONFLICT clause.
type OnConflict struct {
	// Columns is the conflict target `(cols)`; Constraint the target `ON
	// CONSTRAINT name`; both empty when no target is given (DO NOTHING
	// only).
	Columns    []string
	Constraint string
	DoNothing  bool
	Sets       []Assignment
	// Where is DO UPDATE's WHERE condition (nil if none).
	Where ast.ExprNode
}

// AlterTable is ALTER TABLE [IF EXISTS] name action. One action per
// statement.
type AlterTable struct {
	stmtText
	Name     string
	IfExists bool
	// Source: ALTER SOURCE (only ADD COLUMN).
	Source bool
	// Action is one of "add column", "drop column", "rename column",
	// "rename", "set default", "drop default", "set not null",
	// "drop not null", "add constraint", "drop constraint", "owner to".
	Action string
	// Column is the column acted on (add column: Def).
	Column string
	Def    ColumnDef
	// NewName is the new name of RENAME COLUMN / RENAME TO, or the new
	// owner of OWNER TO.
	NewName      string
	IfNotExists  bool // ADD COLUMN IF NOT EXISTS
	ColIfExists  bool // DROP COLUMN / CONSTRAINT IF EXISTS
	Cascade      bool
	Check        *CheckDef
	Unique       *UniqueDef
	PrimaryKey   bool // ADD CONSTRAINT ... PRIMARY KEY
	Constraint   string
	DefaultValue ast.ExprNode
	DefaultText  string
}

// AlterResume is ALTER MATERIALIZED VIEW name RESUME or ALTER SINK name
// RESUME: a failed job starts again from its last completed epoch.
type AlterResume struct {
	stmtText
	Kind     string // "MATERIALIZED VIEW" or "SINK"
	Name     string
	IfExists bool
}

// Truncate is TRUNCATE [TABLE] [ONLY] name [, ...] [RESTART IDENTITY |
// CONTINUE IDENTITY] [CASCADE | RESTRICT].
type Truncate struct {
	stmtText
	Names           []string
	RestartIdentity bool
	Cascade         bool
}

// CreateIndex is CREATE [UNIQUE] INDEX [CONCURRENTLY] [IF NOT EXISTS]
// [name] ON table [USING method] (cols).
type CreateIndex struct {
	stmtText
	Name        string
	Table       string
	Unique      bool
	IfNotExists bool
	Columns     []string
	// Exprs is true when a key is an expression rather than a column.
	Exprs bool
	// Where is true for a partial index.
	Where bool
}

// CreateSequence is CREATE SEQUENCE [IF NOT EXISTS] name [options].
type CreateSequence struct {
	stmtText
	Name        string
	IfNotExists bool
	Type        types.T
	Increment   int64
	Start       *int64
	MinValue    *int64
	MaxValue    *int64
	Cycle       bool
}

// CreateSchema is CREATE SCHEMA [IF NOT EXISTS] name.
type CreateSchema struct {
	stmtText
	Name        string
	IfNotExists bool
}
