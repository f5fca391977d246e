package tests

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestConcurrentUpserts runs ON CONFLICT DO UPDATE and inserts into a
// table with a UNIQUE constraint from several sessions at once: every
// increment lands exactly once and the unique constraint holds.
func TestConcurrentUpserts(t *testing.T) {
	srv := StartServer(t, Options{})
	conn := srv.Connect(t)
	ExecAll(t, conn, `CREATE TABLE hits (k INT PRIMARY KEY, n INT NOT NULL, tag TEXT UNIQUE)`)
	const workers, each = 4, 100
	var wg sync.WaitGroup
	var mu sync.Mutex
	dups := 0
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c, err := Connect(context.Background(), srv.ConnString())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close(context.Background())
			for i := 0; i < each; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := c.Exec(ctx, `INSERT INTO hits VALUES ($1, 1, NULL) ON CONFLICT (k) DO UPDATE SET n = hits.n + 1`, i%10)
				if err != nil {
					t.Error(err)
				}
				// Every worker tries the same tags: exactly one wins each.
				_, err = c.Exec(ctx, `INSERT INTO hits VALUES ($1, 0, $2)`, 1000+w*each+i, "tag"+string(rune('a'+i%26)))
				cancel()
				if err != nil {
					if PgCode(err) != "23505" {
						t.Error(err)
					}
					mu.Lock()
					dups++
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	ExecAll(t, conn, `FLUSH`)
	if n := queryInt(t, conn, `SELECT sum(n) FROM hits WHERE k < 10`); n != workers*each {
		t.Fatalf("sum of upserted counters = %d, want %d", n, workers*each)
	}
	if n := queryInt(t, conn, `SELECT count(*) FROM hits WHERE tag IS NOT NULL`); n != 26 {
		t.Fatalf("%d rows with a tag, want 26", n)
	}
	if dups != workers*each-26 {
		t.Fatalf("%d unique violations, want %d", dups, workers*each-26)
	}
}
