package tests

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand"
	"testing"
	"time"
)

// haltReader hands out data; after half of it, it tells the test (half)
// and fails once the test has killed the server (killed).
type haltReader struct {
	data   []byte
	pos    int
	half   chan struct{}
	killed chan struct{}
	eof    chan struct{}
	halted bool
}

func (r *haltReader) Read(p []byte) (int, error) {
	if r.half != nil && !r.halted && r.pos >= len(r.data)/2 {
		r.halted = true
		close(r.half)
		<-r.killed
		return 0, fmt.Errorf("the server was killed")
	}
	if r.pos >= len(r.data) {
		if r.eof != nil {
			close(r.eof)
			r.eof = nil
		}
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 64<<10)], r.data[r.pos:])
	r.pos += n
	return n, nil
}

// TestCopyCrashAtomic kills the sluice process (SIGKILL) in the middle of
// big COPYs (bulk path): while the data is still arriving, and at random
// moments after the last byte was sent (decoding, checking, writing). After
// each restart the COPY's rows are all there or none (all there if the
// COPY was acknowledged), a view over the table agrees, and a COPY that
// left nothing can be run again in full (no partial write set holds a key).
func TestCopyCrashAtomic(t *testing.T) {
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond})
	ctx := context.Background()
	c := srv.Connect(t)
	ExecAll(t, c, `CREATE TABLE big (id BIGINT PRIMARY KEY, v TEXT NOT NULL)`,
		`CREATE MATERIALIZED VIEW bigc AS SELECT count(*) AS n FROM big`)
	c.Close(ctx)
	const n = 60_000
	data := func(round int) []byte {
		var b bytes.Buffer
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "%d,row %d of round %d\n", round*1_000_000+i, i, round)
		}
		return b.Bytes()
	}
	count := func(round int) (int64, int64) {
		t.Helper()
		conn := srv.Connect(t)
		defer conn.Close(ctx)
		ExecAll(t, conn, `FLUSH`)
		lo, hi := round*1_000_000, round*1_000_000+999_999
		return txQueryInt(t, conn, `SELECT count(*) FROM big WHERE id BETWEEN $1 AND $2`, lo, hi),
			txQueryInt(t, conn, `SELECT n FROM bigc`)
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var total int64
	midStream, loaded := 0, 0
	for round := 1; round <= 6; round++ {
		conn := srv.Connect(t)
		r := &haltReader{data: data(round), killed: make(chan struct{})}
		mid := round%2 == 1
		if mid {
			r.half = make(chan struct{})
		} else {
			r.eof = make(chan struct{})
		}
		half, eof := r.half, r.eof // the reader sets r.eof to nil once closed
		done := make(chan error, 1)
		go func() {
			_, err := conn.PgConn().CopyFrom(ctx, r, "COPY big FROM STDIN (FORMAT csv)")
			done <- err
		}()
		var acked bool
		if mid {
			<-half
		} else {
			<-eof
			time.Sleep(time.Duration(rng.Intn(1200)) * time.Millisecond)
			select {
			case err := <-done:
				acked = err == nil
				done <- err
			default:
			}
		}
		if err := srv.Kill(); err != nil {
			t.Fatal(err)
		}
		close(r.killed)
		err := <-done
		if mid && err == nil {
			t.Fatalf("round %d: the COPY was acknowledged without all its data", round)
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		got, view := count(round)
		switch {
		case got == n:
			loaded++
			total += n
		case got == 0 && !acked:
			if mid {
				midStream++
			}
			// Nothing of it is left, in the table's write set either: the
			// same COPY loads in full.
			again := srv.Connect(t)
			tag, err := again.PgConn().CopyFrom(ctx, bytes.NewReader(data(round)), "COPY big FROM STDIN (FORMAT csv)")
			again.Close(ctx)
			if err != nil || tag.RowsAffected() != n {
				t.Fatalf("round %d: COPY again after the crash: %v, %v", round, tag, err)
			}
			total += n
			if got, _ = count(round); got != n {
				t.Fatalf("round %d: %d rows after the second COPY, want %d", round, got, n)
			}
			_, view = count(round)
		default:
			t.Fatalf("round %d: %d of %d rows after the kill (acknowledged: %v)", round, got, n, acked)
		}
		if view != total {
			t.Fatalf("round %d: the view counts %d rows, the table %d", round, view, total)
		}
		conn.Close(ctx)
	}
	if midStream != 3 {
		t.Fatalf("%d of the 3 COPYs killed mid-stream left nothing", midStream)
	}
	t.Logf("killed after the data: %d COPYs had committed, %d had not", loaded, 3-loaded)
}
