package job

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"sluice/exec/flow"
	"sluice/sql/types"
)

// TestRelay: before its job joins, a relay takes every message without
// anyone reading its output, up to maxQueuedRows, then holds its upstream
// back; it drops the barriers of epochs before the join; once the job
// joins at epoch 5, it hands over what it queued in order, then passes
// everything, barriers of epoch 5 on included.
func TestRelay(t *testing.T) {
	rl := &relay{in: make(chan flow.Msg), out: make(chan flow.Msg)}
	var at atomic.Uint64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rl.run(ctx, &at) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	send := func(m flow.Msg, d time.Duration) bool {
		select {
		case rl.in <- m:
			return true
		case <-time.After(d):
			return false
		}
	}
	const per = 1024
	data := func(i int) flow.Msg {
		b := types.NewBatch(per)
		for k := 0; k < per; k++ {
			b.Add(types.Row{types.NewInt(int64(i))}, 1)
		}
		return flow.Msg{Kind: flow.MsgData, Batch: b}
	}
	barrier := func(e uint64) flow.Msg { return flow.Msg{Kind: flow.MsgBarrier, Barrier: &flow.Barrier{Epoch: e}} }
	n := maxQueuedRows / per
	for i := 0; i < n; i++ {
		if !send(data(i), 10*time.Second) {
			t.Fatalf("batch %d of %d not taken before the job joined", i, n)
		}
		if i == n/2 && !send(barrier(3), 10*time.Second) {
			t.Fatal("barrier 3 not taken")
		}
	}
	if send(data(n), 200*time.Millisecond) {
		t.Fatalf("a relay holding %d rows took more", maxQueuedRows)
	}
	at.Store(5)
	got := func() flow.Msg {
		t.Helper()
		select {
		case m := <-rl.out:
			return m
		case <-time.After(10 * time.Second):
			t.Fatal("nothing came out")
		}
		return flow.Msg{}
	}
	for i := 0; i < n; i++ {
		m := got()
		if m.Kind != flow.MsgData || m.Batch.Rows[0][0].I != int64(i) {
			t.Fatalf("message %d out: kind %d, want batch %d (barrier 3 dropped)", i, m.Kind, i)
		}
	}
	if !send(data(n), 10*time.Second) {
		t.Fatal("the batch held back was not taken once the queue drained")
	}
	if m := got(); m.Kind != flow.MsgData || m.Batch.Rows[0][0].I != int64(n) {
		t.Fatalf("after the queue: kind %d, want batch %d", m.Kind, n)
	}
	if !send(barrier(4), 10*time.Second) { // of an epoch before the join: dropped
		t.Fatal("barrier 4 not taken")
	}
	go send(barrier(5), 10*time.Second)
	if m := got(); m.Kind != flow.MsgBarrier || m.Barrier.Epoch != 5 {
		t.Fatalf("got kind %d, want barrier 5", m.Kind)
	}
}
