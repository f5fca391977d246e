package server

import (
	"context"
	"testing"
	"time"

	"sluice/server/pgwire"
	"sluice/storage"
)

// TestDropRemovesChangeLog: a relation's change log (SUBSCRIBE's history,
// h/<rel>/…) goes with the relation when it is dropped, for a table and a
// materialized view with a retention, and the in-memory registry forgets
// them.
func TestDropRemovesChangeLog(t *testing.T) {
	e, err := Open(Config{DataDir: t.TempDir(), CheckpointInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s, err := e.Connect(context.Background(), pgwire.StartupInfo{User: "sluice", Database: "sluice"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, q := range []string{
		`CREATE TABLE hd (k int PRIMARY KEY, v int)`,
		`CREATE MATERIALIZED VIEW hdv AS SELECT k, v * 2 AS v2 FROM hd`,
		`ALTER TABLE hd SET (retention = '1h')`,
		`ALTER MATERIALIZED VIEW hdv SET (retention = '1h')`,
		`INSERT INTO hd VALUES (1, 1), (2, 2)`,
		`FLUSH`,
		`UPDATE hd SET v = 3 WHERE k = 1`,
		`FLUSH`,
	} {
		if _, err := query(s, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ids := map[string]uint64{"hd": e.cat.get("hd").ID, "hdv": e.cat.get("hdv").ID}
	histKeys := func(id uint64) int {
		n := 0
		err := e.db.ScanRange(storage.Key(storage.SpaceHist, id), storage.Key(storage.SpaceHist, id+1), func(k, v []byte) error {
			n++
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for name, id := range ids {
		// the low mark and at least the two epochs' chunks
		if n := histKeys(id); n < 3 {
			t.Fatalf("%s: %d change-log keys before DROP, want at least 3", name, n)
		}
	}
	for _, q := range []string{`DROP MATERIALIZED VIEW hdv`, `DROP TABLE hd`, `FLUSH`} {
		if _, err := query(s, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	e.db.WaitReclaimed()
	for name, id := range ids {
		if n := histKeys(id); n != 0 {
			t.Errorf("%s: %d change-log keys left after DROP", name, n)
		}
		// A forgotten relation's RelHist is created anew, without the
		// retention the dropped one had.
		if e.db.Hist(id).Retention.Load() != 0 {
			t.Errorf("%s: the change-log registry still holds the dropped relation", name)
		}
	}
}
