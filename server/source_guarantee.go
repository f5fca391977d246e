package server

import (
	"sluice/exec/connector"
	"sluice/storage"
)

// sourceGuarantee is what SHOW SOURCES states for a source: EXACTLY_ONCE
// for a source that replays from its checkpointed position, AT_MOST_ONCE
// for one whose connector cannot (connector.Unreplayable: socket, mqtt),
// which is also what the weakest-link check of every sink over it uses.
func sourceGuarantee(ent *storage.CatalogEntry) string {
	f, err := connector.LookupSource(ent.Connector)
	if err != nil {
		return "unknown"
	}
	if u, ok := f.(connector.Unreplayable); ok {
		if w := u.Unreplayable(connector.SourceConfig{Name: ent.Name, Columns: ent.Cols(), Options: ent.Options}); w != "" {
			return connector.AtMostOnce.String()
		}
	}
	return connector.ExactlyOnce.String()
}
