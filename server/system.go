package server

import "sluice/planner/cat"

// systemRelations returns the pg_catalog and information_schema relations
// Sluice answers, computed from the catalog when read.
func systemRelations(e *Engine) map[string]*cat.Relation {
	return map[string]*cat.Relation{}
}
