package schemareg

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSchemaFetchedOnce: callers asking for a new schema id at the same
// time (a source's parallel decoders meeting it in one fetch) share one
// GET; later ones read the cache.
func TestSchemaFetchedOnce(t *testing.T) {
	var gets atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gets.Add(1)
		time.Sleep(50 * time.Millisecond) // every caller arrives while the first waits
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		_, _ = w.Write([]byte(`{"schema": "{\"type\": \"record\", \"name\": \"bid\", \"fields\": [{\"name\": \"auction\", \"type\": \"long\"}]}"}`))
	}))
	defer srv.Close()
	c, err := New(srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := c.Schema(7)
			if err == nil && s == nil {
				t.Error("no schema and no error")
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Schema(7); err != nil {
		t.Fatal(err)
	}
	if n := gets.Load(); n != 1 {
		t.Fatalf("%d GETs for one schema id, want 1", n)
	}
}
