// Tests of the persisted catalog: PutCatalog/DeleteCatalog take effect at
// the epoch commit, LoadCatalog returns entries in id order with their
// columns and options intact, and the id allocator never hands out an id
// in use, across reopening the store.
package storage

import (
	"reflect"
	"testing"

	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

func TestCatalogRoundTrip(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, dir)

	entries, next, err := db.LoadCatalog()
	if err != nil || len(entries) != 0 || next != 1 {
		t.Fatalf("empty catalog: %v, next %d, %v", entries, next, err)
	}

	tbl := &CatalogEntry{
		ID: 3, Kind: "table", Name: "t", SQL: "CREATE TABLE t (id BIGINT PRIMARY KEY, price NUMERIC(10,2), v TEXT)",
		Columns: []ColumnEntry{
			ColumnOf(types.Column{Name: "id", Type: types.TInt8}),
			ColumnOf(types.Column{Name: "price", Type: types.T{Fam: types.Numeric, Prec: 10, Scale: 2}}),
			ColumnOf(types.Column{Name: "v", Type: types.T{Fam: types.Varchar, Prec: 20}}),
		},
		Key: []int{0},
	}
	src := &CatalogEntry{
		ID: 1, Kind: "source", Name: "g", SQL: "CREATE SOURCE g ...",
		Columns:   []ColumnEntry{{Name: "x", Fam: uint8(types.Float8)}},
		Connector: "datagen",
		Options:   map[string]string{"datagen.rows.per.second": "0", "fields.x.kind": "random"},
	}
	mv := &CatalogEntry{ID: 2, Kind: "materialized view", Name: "mv", SQL: "CREATE MATERIALIZED VIEW mv AS SELECT 1", Deps: []uint64{1, 3}, Query: "SELECT 1"}

	w := db.NewEpochWriter()
	PutCatalog(w, tbl, 4)
	PutCatalog(w, src, 4)
	PutCatalog(w, mv, 4)
	// Not visible before the epoch commits.
	if entries, next, err := db.LoadCatalog(); err != nil || len(entries) != 0 || next != 1 {
		t.Fatalf("before commit: %d entries, next %d, %v", len(entries), next, err)
	}
	if err := db.Commit(w, 1); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	db = openDB(t, dir)
	defer db.Close()
	entries, next, err = db.LoadCatalog()
	if err != nil {
		t.Fatal(err)
	}
	if next != 4 {
		t.Fatalf("next id = %d, want 4", next)
	}
	want := []*CatalogEntry{src, mv, tbl} // id order
	if !reflect.DeepEqual(entries, want) {
		t.Fatalf("LoadCatalog:\n got %+v\nwant %+v", entries, want)
	}
	cols := entries[2].Cols()
	wantCols := []types.Column{
		{Name: "id", Type: types.TInt8},
		{Name: "price", Type: types.T{Fam: types.Numeric, Prec: 10, Scale: 2}},
		{Name: "v", Type: types.T{Fam: types.Varchar, Prec: 20}},
	}
	if !reflect.DeepEqual(cols, wantCols) {
		t.Fatalf("Cols = %+v, want %+v", cols, wantCols)
	}

	// Dropping an entry keeps the allocator: ids are never reused.
	w = db.NewEpochWriter()
	DeleteCatalog(w, 3)
	if err := db.Commit(w, 2); err != nil {
		t.Fatal(err)
	}
	entries, next, err = db.LoadCatalog()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].ID != 1 || entries[1].ID != 2 || next != 4 {
		t.Fatalf("after delete: %+v, next %d", entries, next)
	}
}

func TestCatalogNextIDCoversEntries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ids     []uint64
		nextID  uint64
		wantNxt uint64
	}{
		{"allocator ahead", []uint64{1, 2}, 10, 10},
		{"allocator behind an entry", []uint64{1, 9}, 3, 10},
		{"allocator equal to an entry", []uint64{5}, 5, 6},
		{"large ids", []uint64{1 << 40}, 2, 1<<40 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t, t.TempDir())
			defer db.Close()
			w := db.NewEpochWriter()
			for _, id := range tc.ids {
				PutCatalog(w, &CatalogEntry{ID: id, Kind: "table", Name: "x"}, tc.nextID)
			}
			if err := db.Commit(w, 1); err != nil {
				t.Fatal(err)
			}
			entries, next, err := db.LoadCatalog()
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != len(tc.ids) {
				t.Fatalf("%d entries, want %d", len(entries), len(tc.ids))
			}
			for i, e := range entries {
				if e.ID != tc.ids[i] {
					t.Fatalf("entry %d has id %d, want %d", i, e.ID, tc.ids[i])
				}
			}
			if next != tc.wantNxt {
				t.Fatalf("next = %d, want %d", next, tc.wantNxt)
			}
		})
	}
}

func TestCatalogCorruptEntry(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	w := db.NewEpochWriter()
	w.Set(Key(SpaceCatalog, 7), []byte("{not json"))
	if err := db.Commit(w, 1); err != nil {
		t.Fatal(err)
	}
	_, _, err := db.LoadCatalog()
	if c := pgerror.GetCode(err); c != pgcode.DataCorrupted {
		t.Fatalf("LoadCatalog of a corrupt entry: code %s (%v), want %s", c, err, pgcode.DataCorrupted)
	}
}
