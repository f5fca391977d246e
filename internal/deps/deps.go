//go:build tools

// Package deps pins the module's chosen dependencies before their first use.
package deps

import (
	_ "github.com/cockroachdb/datadriven"
	_ "github.com/cockroachdb/pebble"
	_ "github.com/jackc/pgproto3/v2"
	_ "github.com/jackc/pgx/v5"
	_ "github.com/pingcap/tidb/pkg/parser"
)
