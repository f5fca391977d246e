package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// broker is a running testbroker process.
type broker struct {
	cmd  *exec.Cmd
	addr string
}

func start(t *testing.T, bin string, args ...string) *broker {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &broker{cmd: cmd}
	t.Cleanup(func() { b.stop(syscall.SIGKILL) })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(out).ReadString('\n')
		line <- s
	}()
	select {
	case s := <-line:
		addr, ok := strings.CutPrefix(strings.TrimSpace(s), "listening on ")
		if !ok {
			t.Fatalf("testbroker printed %q", s)
		}
		b.addr = addr
	case <-time.After(30 * time.Second):
		t.Fatal("testbroker did not start")
	}
	return b
}

// stop sends sig and waits for the process to end.
func (b *broker) stop(sig syscall.Signal) error {
	if b.cmd.ProcessState != nil {
		return nil
	}
	b.cmd.Process.Signal(sig)
	return b.cmd.Wait()
}

func client(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// consume reads n records of topic from the start.
func consume(t *testing.T, addr, topic string, n int) []string {
	t.Helper()
	cl := client(t, addr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records: %v", len(got), n, got)
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	slices.Sort(got)
	return got
}

func TestRestartKeepsRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "testbroker")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	b := start(t, bin, "--listen", "127.0.0.1:0", "--data-dir", data, "--partitions", "3", "--topics", "seeded")
	addr := b.addr

	var want []string
	cl := client(t, addr, kgo.AllowAutoTopicCreation())
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		want = append(want, fmt.Sprintf("v%02d", i))
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte(want[i])}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "seeded", Value: []byte("s")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// A committed transaction survives too.
	txn := client(t, addr, kgo.TransactionalID("tb"))
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := txn.ProduceSync(ctx, &kgo.Record{Topic: "auto", Value: []byte("txn")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	txn.Close()
	cl.Close()
	want = append(want, "txn")
	slices.Sort(want)
	if got := consume(t, addr, "auto", len(want)); !slices.Equal(got, want) {
		t.Fatalf("got %v", got)
	}

	// Killed without warning: acknowledged records were already synced.
	b.stop(syscall.SIGKILL)
	b = start(t, bin, "--listen", addr, "--data-dir", data, "--partitions", "3")
	if got := consume(t, addr, "auto", len(want)); !slices.Equal(got, want) {
		t.Fatalf("after SIGKILL: got %v", got)
	}
	if got := consume(t, addr, "seeded", 1); !slices.Equal(got, []string{"s"}) {
		t.Fatalf("seeded topic: %v", got)
	}
	// A clean stop on SIGTERM exits 0 and keeps everything as well.
	if err := b.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	b = start(t, bin, "--listen", addr, "--data-dir", data)
	if got := consume(t, addr, "auto", len(want)); !slices.Equal(got, want) {
		t.Fatalf("after SIGTERM: got %v", got)
	}
}
