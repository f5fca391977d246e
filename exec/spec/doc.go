// Package spec is the plain-data description of a dataflow job: a DAG of
// operator nodes with typed scalar expressions. The planner builds it; the
// flow runtime instantiates operators from it. It holds no behaviour beyond
// printing (EXPLAIN) and imports only sql/types.
package spec
