package server

import (
	"sort"
	"strings"
	"sync"

	"sluice/exec/spec"
	"sluice/planner/cat"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/storage"
)

// catalog is the in-memory catalog; every change is persisted with the
// epoch that makes it visible.
type catalog struct {
	mu     sync.RWMutex
	byName map[string]*storage.CatalogEntry
	byID   map[uint64]*storage.CatalogEntry
	nextID uint64
	system map[string]*cat.Relation
}

func newCatalog(entries []*storage.CatalogEntry, next uint64) *catalog {
	c := &catalog{byName: map[string]*storage.CatalogEntry{}, byID: map[uint64]*storage.CatalogEntry{}, nextID: next}
	for _, e := range entries {
		c.byName[e.Name] = e
		c.byID[e.ID] = e
	}
	return c
}

func (c *catalog) get(name string) *storage.CatalogEntry {
	name = strings.TrimPrefix(name, "public.")
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byName[name]
}

func (c *catalog) byIDGet(id uint64) *storage.CatalogEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.byID[id]
}

func (c *catalog) list(kind string) []*storage.CatalogEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*storage.CatalogEntry
	for _, e := range c.byID {
		if kind == "" || e.Kind == kind {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// dependents returns the entries that depend on id.
func (c *catalog) dependents(id uint64) []*storage.CatalogEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*storage.CatalogEntry
	for _, e := range c.byID {
		for _, d := range e.Deps {
			if d == id {
				out = append(out, e)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (c *catalog) add(e *storage.CatalogEntry) {
	c.mu.Lock()
	c.byName[e.Name] = e
	c.byID[e.ID] = e
	c.mu.Unlock()
}

func (c *catalog) remove(e *storage.CatalogEntry) {
	c.mu.Lock()
	delete(c.byName, e.Name)
	delete(c.byID, e.ID)
	c.mu.Unlock()
}

func (c *catalog) allocID() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.nextID
	c.nextID++
	return id
}

// Resolve implements cat.Catalog.
func (c *catalog) Resolve(schema, name string) (*cat.Relation, error) {
	schema = strings.ToLower(schema)
	if schema == "pg_catalog" || schema == "information_schema" || schema == "sluice_catalog" || (schema == "" && c.system[name] != nil) {
		if r := c.system[name]; r != nil {
			return r, nil
		}
		if r := c.system[schema+"."+name]; r != nil {
			return r, nil
		}
		return nil, pgerror.New(pgcode.UndefinedTable, "relation \"%s.%s\" does not exist", schema, name)
	}
	if schema != "" && schema != "public" {
		// Objects of other schemas are named "schema.name" (schema.go).
		e := c.get(schema + "." + name)
		if e == nil || e.Kind == kindSchema {
			return nil, pgerror.New(pgcode.UndefinedTable, "relation \"%s.%s\" does not exist", schema, name)
		}
		return relationOf(e)
	}
	e := c.get(name)
	if e == nil {
		return nil, pgerror.New(pgcode.UndefinedTable, "relation %q does not exist", name)
	}
	return relationOf(e)
}

func relationOf(e *storage.CatalogEntry) (*cat.Relation, error) {
	if e.Refused != "" {
		return nil, refusedError(e)
	}
	r := &cat.Relation{ID: e.ID, OID: uint32(relOID(e)), Name: e.Name, Owner: entryOwner(e), Columns: e.Cols(), Key: e.Key}
	switch e.Kind {
	case kindTable:
		r.Kind = cat.Table
	case kindSource:
		r.Kind = cat.Source
		r.Source = &spec.SourceSpec{SourceID: e.ID, Name: e.Name, Connector: e.Connector, Options: e.Options, Columns: e.Cols(), Key: e.Key}
		if w := e.Watermark; w != nil {
			r.Source.Watermark = &spec.WatermarkSpec{Col: w.Col, Delay: w.Delay}
		}
	case kindMView:
		r.Kind = cat.MaterializedView
	case kindView:
		r.Kind = cat.View
		r.Query, r.EmitOnWindowClose = e.Query, e.EmitOnWindowClose
	default:
		return nil, pgerror.New(pgcode.WrongObjectType, "%q is a %s, not a relation", e.Name, e.Kind)
	}
	return r, nil
}

// Catalog entry kinds.
const (
	kindTable  = "table"
	kindSource = "source"
	kindMView  = "materialized view"
	kindView   = "view"
	kindSink   = "sink"
)
