package parser

import (
	"github.com/pingcap/tidb/pkg/parser/ast"

	"sluice/sql/types"
)

// Statement is one parsed SQL statement.
type Statement interface {
	// Text returns the statement's own original text (without the
	// terminating semicolon).
	Text() string
}

// stmtText implements Statement.Text for every statement type.
type stmtText struct{ text string }

// Text returns the statement's original text.
func (s *stmtText) Text() string { return s.text }

func (s *stmtText) setText(t string) { s.text = t }

type textSetter interface{ setText(string) }

// Query is a statement the TiDB parser parsed from the rewritten text:
// SELECT, set operations, WITH, VALUES, INSERT, UPDATE and DELETE.
type Query struct {
	stmtText
	// Node is the TiDB AST of the rewritten statement.
	Node ast.StmtNode
	// Rewritten is the text handed to the TiDB parser.
	Rewritten string
	// TableFuncs maps the placeholder table names (__pg_tumble__1, ...)
	// that stand for table functions in FROM to the original calls.
	TableFuncs map[string]TableFunc
	// NullsOrder has one entry per ORDER BY item (ast.ByItem of an
	// ast.OrderByClause, including window ORDER BYs) in the order an
	// ast.Visitor enters them: 0 = default, 1 = NULLS FIRST, 2 = NULLS
	// LAST. Use Nulls to look an item up.
	NullsOrder []int
	// ColumnAliases holds the column alias lists of FROM items written
	// as `AS alias(col, ...)`.
	ColumnAliases map[*ast.TableSource][]string
	// Returning and OnConflict are the RETURNING and ON CONFLICT clauses
	// of INSERT, UPDATE and DELETE (nil when absent).
	Returning  *Returning
	OnConflict *OnConflict
	// Overriding is INSERT's OVERRIDING SYSTEM VALUE ("system") or
	// OVERRIDING USER VALUE ("user"), "" when absent.
	Overriding string
	nulls      map[*ast.ByItem]int
}

// Nulls returns the NULLS ordering of an ORDER BY item of q: 0 = default,
// 1 = NULLS FIRST, 2 = NULLS LAST.
func (q *Query) Nulls(item *ast.ByItem) int { return q.nulls[item] }

// TableFunc is a table function call in FROM (TUMBLE, HOP, SESSION,
// generate_series, unnest, ...), replaced in the TiDB text by a table name.
type TableFunc struct {
	// Name is the function name, lower-cased (schema dropped if pg_catalog).
	Name string
	// Args are the call's arguments. For TUMBLE/HOP the first is the
	// relation, as an *ast.ColumnNameExpr.
	Args []ast.ExprNode
}

// Options is an ordered list of WITH (...) or FORMAT ... ENCODE ... (...)
// options.
type Options []Option

// Option is one key = value option. Key is lower-cased dotted words; Value
// is the string literal's contents, the number's text or the bare word.
type Option struct {
	Key, Value string
}

// Get returns the value of key (lower-case) and whether it is present.
func (o Options) Get(key string) (string, bool) {
	for _, op := range o {
		if op.Key == key {
			return op.Value, true
		}
	}
	return "", false
}

// ColumnDef is a column of CREATE TABLE or CREATE SOURCE.
type ColumnDef struct {
	Name       string
	Type       types.T
	NotNull    bool
	PrimaryKey bool
	// Default is the DEFAULT expression, nil if none; DefaultText its
	// source text.
	Default     ast.ExprNode
	DefaultText string
	// Unique is a column UNIQUE constraint (UniqueName its name, "" if
	// none given).
	Unique     bool
	UniqueName string
	// Checks are the column's CHECK constraints.
	Checks []CheckDef
	// Serial is set for SERIAL, BIGSERIAL and SMALLSERIAL (Type is the
	// integer type); Identity is IdentityAlways or IdentityByDefault for
	// GENERATED ... AS IDENTITY.
	Serial   bool
	Identity string
	// IdentityOpts are the sequence options of GENERATED ... AS IDENTITY
	// ( ... ) (nil if none).
	IdentityOpts *CreateSequence
}

// Watermark is `WATERMARK FOR col AS expr`.
type Watermark struct {
	Column string
	Expr   ast.ExprNode
}

// Include is a RisingWave `INCLUDE what [AS alias]` clause of CREATE SOURCE
// or CREATE TABLE: What is key, partition, offset, timestamp, header, ...
type Include struct {
	What, Alias string
}

// CreateTable is CREATE TABLE, possibly with a connector (WITH (connector =
// ...)) and FORMAT ... ENCODE ....
type CreateTable struct {
	stmtText
	Name          string
	Columns       []ColumnDef
	PrimaryKey    []string
	IfNotExists   bool
	Watermark     *Watermark
	With          Options
	Format        string
	Encode        string
	FormatOptions Options
	Includes      []Include
	AppendOnly    bool
	// Checks and Uniques are the table's CHECK and UNIQUE constraints
	// (table-level ones; column ones are on their ColumnDef).
	Checks  []CheckDef
	Uniques []UniqueDef
}

// CreateSource is CREATE SOURCE.
type CreateSource struct {
	stmtText
	Name          string
	Columns       []ColumnDef
	PrimaryKey    []string
	Watermark     *Watermark
	With          Options
	Format        string
	Encode        string
	FormatOptions Options
	Includes      []Include
	IfNotExists   bool
}

// CreateMaterializedView is CREATE [OR REPLACE] MATERIALIZED VIEW name AS
// query [EMIT ON WINDOW CLOSE], or ALTER MATERIALIZED VIEW name AS query.
type CreateMaterializedView struct {
	stmtText
	Name string
	// Query is the TiDB AST of the query (Parsed.Node).
	Query ast.StmtNode
	// QueryText is the original text of the query.
	QueryText         string
	IfNotExists       bool
	EmitOnWindowClose bool
	// OrReplace (CREATE OR REPLACE MATERIALIZED VIEW) replaces an existing
	// view's query in place, keeping the state the old and the new plan
	// share; Alter (ALTER MATERIALIZED VIEW name AS query) does the same
	// and requires that the view exists.
	OrReplace, Alter bool
	// Parsed is the query with the rewriter's side tables (TableFuncs,
	// NullsOrder, ColumnAliases).
	Parsed *Query
}

// CreateView is CREATE [OR REPLACE] VIEW name [(columns)] AS query.
type CreateView struct {
	stmtText
	Name              string
	Query             ast.StmtNode
	QueryText         string
	IfNotExists       bool
	EmitOnWindowClose bool
	OrReplace         bool
	// Columns are the optional column names.
	Columns []string
	Parsed  *Query
}

// CreateSink is CREATE SINK name [INTO table [(cols)]] FROM relation | AS query WITH (...)
// [FORMAT ... ENCODE ... (...)].
type CreateSink struct {
	stmtText
	Name string
	// Into is the Sluice table of `INTO t` ("" for a sink to a connector);
	// IntoColumns are its columns listed after it (nil: all, in order).
	Into        string
	IntoColumns []string
	// From is the relation of `FROM x` ("" when AS query).
	From string
	// Query and QueryText are set for `AS query`.
	Query         ast.StmtNode
	QueryText     string
	With          Options
	Format        string
	Encode        string
	FormatOptions Options
	IfNotExists   bool
	Parsed        *Query
	// EmitOnWindowClose: `AS query EMIT ON WINDOW CLOSE`.
	EmitOnWindowClose bool
}

// FuncArg is an argument of CREATE FUNCTION; Name is "" when unnamed.
type FuncArg struct {
	Name string
	Type types.T
}

// CreateFunction is CREATE [OR REPLACE] FUNCTION.
type CreateFunction struct {
	stmtText
	Name      string
	Args      []FuncArg
	Returns   types.T
	Language  string // lower-cased; "sql" when absent
	Body      string
	OrReplace bool
	// BodyExpr is the expression of a SQL body that is `SELECT expr`,
	// `RETURN expr` or a bare expression.
	BodyExpr ast.ExprNode
}

// Drop is DROP TABLE | SOURCE | MATERIALIZED VIEW | VIEW | SINK | FUNCTION.
type Drop struct {
	stmtText
	Kind     string
	Names    []string
	IfExists bool
	Cascade  bool
}

// Show is SHOW TABLES | SOURCES | MATERIALIZED VIEWS | VIEWS | SINKS |
// FUNCTIONS | ALL (What is that upper-case word or phrase) or SHOW setting
// (What is the lower-cased setting name, e.g. "timezone",
// "transaction_isolation").
type Show struct {
	stmtText
	What string
}

// ShowCreate is SHOW CREATE TABLE | SOURCE | MATERIALIZED VIEW | VIEW |
// SINK name.
type ShowCreate struct {
	stmtText
	Kind, Name string
}

// Set is SET [SESSION | LOCAL] name {= | TO} value, SET TIME ZONE (Name
// "timezone"), SET SESSION CHARACTERISTICS AS TRANSACTION ... (Name
// "transaction_characteristics"), SET TRANSACTION ... (Name "transaction"),
// SET NAMES (Name "client_encoding") and RESET name | ALL (Default set,
// Name "all" for RESET ALL). Default is also set for `SET x TO DEFAULT`.
type Set struct {
	stmtText
	Name    string
	Value   string
	Local   bool
	Default bool
}

// Describe is DESCRIBE name / DESC name.
type Describe struct {
	stmtText
	Name string
}

// Explain is EXPLAIN [ANALYZE] [VERBOSE] [(options)] statement.
type Explain struct {
	stmtText
	Stmt    Statement
	Analyze bool
	Verbose bool
}

// Flush is FLUSH.
type Flush struct{ stmtText }

// CancelJobs is CANCEL JOB | JOBS id [, …] (RisingWave's): cancel the
// creation of jobs still being created.
type CancelJobs struct {
	stmtText
	IDs []uint64
}

// Backup is BACKUP TO 'dir': a consistent copy of the data directory.
type Backup struct {
	stmtText
	Dir string
}

// Begin is BEGIN [TRANSACTION | WORK] ... or START TRANSACTION ....
type Begin struct {
	stmtText
	ReadOnly bool
	// Isolation is the ISOLATION LEVEL given, lower case with single
	// spaces ("read committed", "repeatable read", "serializable", "read
	// uncommitted"); "" if none.
	Isolation string
}

// Commit is COMMIT or END [AND [NO] CHAIN].
type Commit struct {
	stmtText
	Chain bool
}

// Rollback is ROLLBACK or ABORT [AND [NO] CHAIN], or ROLLBACK [WORK |
// TRANSACTION] TO [SAVEPOINT] name (To set).
type Rollback struct {
	stmtText
	Chain bool
	To    string
}

// Savepoint is SAVEPOINT name.
type Savepoint struct {
	stmtText
	Name string
}

// Release is RELEASE [SAVEPOINT] name.
type Release struct {
	stmtText
	Name string
}

// Discard is DISCARD ALL | PLANS | SEQUENCES | TEMP.
type Discard struct{ stmtText }

// Deallocate is DEALLOCATE [PREPARE] name | ALL (All set, Name "").
type Deallocate struct {
	stmtText
	Name string
	All  bool
}
