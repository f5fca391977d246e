package storage

import "testing"

// TestStateCacheFull: growth past the limit signals Full once (the signal
// does not block or queue up), shrinking and growth within the limit do not.
func TestStateCacheFull(t *testing.T) {
	db := openDB(t, t.TempDir())
	defer db.Close()
	c := db.StateCache()
	c.SetLimit(100)
	c.Add(60)
	c.Add(30)
	select {
	case <-c.Full():
		t.Fatal("signalled within the limit")
	default:
	}
	c.Add(20)
	c.Add(20)
	select {
	case <-c.Full():
	default:
		t.Fatal("growth past the limit did not signal")
	}
	select {
	case <-c.Full():
		t.Fatal("signalled twice for one wait")
	default:
	}
	c.Add(-50)
	select {
	case <-c.Full():
		t.Fatal("a shrink signalled")
	default:
	}
}
