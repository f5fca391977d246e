package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"sluice/exec/connector"
	"sluice/sql/pgcode"
	"sluice/sql/pgerror"
	"sluice/sql/types"
)

// srcTestCluster starts a kfake broker on 127.0.0.1 with the given topics.
func srcTestCluster(t testing.TB, partitions int32, topics ...string) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

func srcTestClient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// srcProduce writes records synchronously (Partition is honoured).
func srcProduce(t testing.TB, cl *kgo.Client, recs ...*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

func srcRec(topic string, part int32, key, value string) *kgo.Record {
	r := &kgo.Record{Topic: topic, Partition: part, Value: []byte(value)}
	if key != "" {
		r.Key = []byte(key)
	}
	return r
}

var srcTestCols = []types.Column{{Name: "id", Type: types.TInt8}, {Name: "v", Type: types.TText}}

func srcOpts(addr, topic string, kv ...string) map[string]string {
	m := map[string]string{"connector": "kafka", "topic": topic, "properties.bootstrap.server": addr}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func srcOpen(t testing.TB, cols []types.Column, key []int, opts map[string]string) *srcReader {
	t.Helper()
	cfg := connector.SourceConfig{Name: "src", Columns: cols, Key: key, Options: opts}
	if _, err := (SourceFactory{}).Validate(cfg); err != nil {
		t.Fatal(err)
	}
	s, err := SourceFactory{}.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.(*srcReader)
}

// srcRowString renders one change as "diff:v1|v2…".
func srcRowString(cols []types.Column, row types.Row, diff int64) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		if row[i].IsNull() {
			parts[i] = "NULL"
		} else {
			parts[i] = types.FormatText(row[i], c.Type)
		}
	}
	return fmt.Sprintf("%+d:%s", diff, strings.Join(parts, "|"))
}

// srcReadN reads until n changes arrived (failing after a deadline) and
// returns them rendered, in arrival order.
func srcReadN(t *testing.T, r *srcReader, n int, limit int) []string {
	t.Helper()
	var out []string
	deadline := time.Now().Add(15 * time.Second)
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("read %d of %d changes: %v", len(out), n, out)
		}
		m := min(limit, n-len(out))
		b := types.NewBatch(m)
		k, err := r.Read(context.Background(), b, m)
		if err != nil {
			t.Fatalf("read: %v (after %v)", err, out)
		}
		// A record's rows are never split: a Debezium update (two rows)
		// may exceed a max of 1.
		if k != b.Len() || k > max(m, 2) {
			t.Fatalf("Read returned %d with %d rows (max %d)", k, b.Len(), m)
		}
		for i := range b.Rows {
			out = append(out, srcRowString(r.cfg.cols, b.Rows[i], b.Diffs[i]))
		}
	}
	return out
}

// srcExpectQuiet checks that nothing more arrives for a while.
func srcExpectQuiet(t *testing.T, r *srcReader, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); {
		b := types.NewBatch(100)
		if _, err := r.Read(context.Background(), b, 100); err != nil {
			t.Fatal(err)
		}
		if b.Len() > 0 {
			var got []string
			for i := range b.Rows {
				got = append(got, srcRowString(r.cfg.cols, b.Rows[i], b.Diffs[i]))
			}
			t.Fatalf("unexpected changes: %v", got)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func srcEqual(t *testing.T, got, want []string) {
	t.Helper()
	if g, w := sorted(got), sorted(want); !slices.Equal(g, w) {
		t.Fatalf("got  %v\nwant %v", g, w)
	}
}

func TestSourceAllPartitions(t *testing.T) {
	addr := srcTestCluster(t, 3, "t")
	cl := srcTestClient(t, addr)
	var recs []*kgo.Record
	var want []string
	for i := 0; i < 30; i++ {
		recs = append(recs, srcRec("t", int32(i%3), "", fmt.Sprintf(`{"id":%d,"v":"r%d"}`, i, i)))
		want = append(want, fmt.Sprintf("+1:%d|r%d", i, i))
	}
	srcProduce(t, cl, recs...)
	r := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t"))
	got := srcReadN(t, r, 30, 7)
	srcEqual(t, got, want)
	// Order within a partition is kept.
	last := map[int]int{}
	for _, g := range got {
		var id int
		fmt.Sscanf(g, "+1:%d|", &id)
		if prev, ok := last[id%3]; ok && prev > id {
			t.Fatalf("partition %d out of order: %v", id%3, got)
		}
		last[id%3] = id
	}
	srcExpectQuiet(t, r, 300*time.Millisecond)
	// Records written while the source runs arrive too.
	srcProduce(t, cl, srcRec("t", 1, "", `{"id":100,"v":"late"}`))
	srcEqual(t, srcReadN(t, r, 1, 10), []string{"+1:100|late"})
}

func TestSourceReadDoesNotBlock(t *testing.T) {
	addr := srcTestCluster(t, 2, "t")
	before := runtime.NumGoroutine()
	cfg := connector.SourceConfig{Name: "s", Columns: srcTestCols, Options: srcOpts(addr, "t")}
	r, err := SourceFactory{}.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srcCheckIdleReads(t, r, 20)
	// Close ends the fetcher and the transport's goroutines.
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before Open, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// srcCheckIdleReads checks that Reads without data return at once with
// nothing. The machine is shared, so a rare slow one is tolerated.
func srcCheckIdleReads(t *testing.T, r connector.Source, count int) {
	t.Helper()
	slow := 0
	for i := 0; i < count; i++ {
		start := time.Now()
		n, err := r.Read(context.Background(), types.NewBatch(10), 10)
		if err != nil || n != 0 {
			t.Fatalf("Read = %d, %v", n, err)
		}
		if d := time.Since(start); d > 30*time.Millisecond {
			slow++
			if slow > count/10 || d > time.Second {
				t.Fatalf("an idle Read took %v (%d slow reads)", d, slow)
			}
		}
	}
}

func TestSourcePositionSeek(t *testing.T) {
	addr := srcTestCluster(t, 3, "t")
	cl := srcTestClient(t, addr)
	var want []string
	produce := func(from, to int) {
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			recs = append(recs, srcRec("t", int32(i%3), "", fmt.Sprintf(`{"id":%d,"v":"x"}`, i)))
			want = append(want, fmt.Sprintf("+1:%d|x", i))
		}
		srcProduce(t, cl, recs...)
	}
	produce(0, 40)
	opts := srcOpts(addr, "t")
	var got []string
	var pos []byte
	// Several restarts, each reading a few rows and saving its position.
	for round := 0; round < 4; round++ {
		r := srcOpen(t, srcTestCols, nil, opts)
		if pos != nil {
			if err := r.Seek(pos); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, srcReadN(t, r, 7, 7)...)
		pos = r.Position()
		// Rows read after the position are lost with the "crash".
		srcReadN(t, r, 3, 3)
		r.Close()
	}
	produce(40, 50)
	r := srcOpen(t, srcTestCols, nil, opts)
	if err := r.Seek(pos); err != nil {
		t.Fatal(err)
	}
	got = append(got, srcReadN(t, r, 50-28, 100)...)
	srcEqual(t, got, want)
	srcExpectQuiet(t, r, 200*time.Millisecond)

	if err := r.Seek([]byte{9, 9}); pgerror.GetCode(err) != pgcode.DataCorrupted {
		t.Errorf("bad position: %v", err)
	}
}

func TestSourceStartupModes(t *testing.T) {
	addr := srcTestCluster(t, 2, "t")
	cl := srcTestClient(t, addr)
	base := time.UnixMilli(1_700_000_000_000)
	for i := 0; i < 6; i++ {
		rec := srcRec("t", int32(i%2), "", fmt.Sprintf(`{"id":%d,"v":"old"}`, i))
		rec.Timestamp = base.Add(time.Duration(i) * time.Second)
		srcProduce(t, cl, rec)
	}
	earliest := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t"))
	latest := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t", "scan.startup.mode", "latest"))
	ts := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t", "scan.startup.mode", "timestamp",
		"scan.startup.timestamp.millis", fmt.Sprint(base.Add(3*time.Second).UnixMilli())))
	future := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t", "scan.startup.mode", "timestamp",
		"scan.startup.timestamp.millis", fmt.Sprint(base.Add(time.Hour).UnixMilli())))
	rec := srcRec("t", 1, "", `{"id":6,"v":"new"}`)
	rec.Timestamp = base.Add(6 * time.Second)
	srcProduce(t, cl, rec)

	srcEqual(t, srcReadN(t, earliest, 7, 100), []string{"+1:0|old", "+1:1|old", "+1:2|old", "+1:3|old", "+1:4|old", "+1:5|old", "+1:6|new"})
	srcEqual(t, srcReadN(t, latest, 1, 100), []string{"+1:6|new"})
	srcEqual(t, srcReadN(t, ts, 4, 100), []string{"+1:3|old", "+1:4|old", "+1:5|old", "+1:6|new"})
	srcEqual(t, srcReadN(t, future, 1, 100), []string{"+1:6|new"})
	for _, r := range []*srcReader{earliest, latest, ts, future} {
		srcExpectQuiet(t, r, 100*time.Millisecond)
	}
}

func TestSourceIsolation(t *testing.T) {
	addr := srcTestCluster(t, 2, "t")
	plain := srcTestClient(t, addr)
	txn := srcTestClient(t, addr, kgo.TransactionalID("sluice-test"))
	ctx := context.Background()
	inTxn := func(commit bool, recs ...*kgo.Record) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		srcProduce(t, txn, recs...)
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	srcProduce(t, plain, srcRec("t", 0, "", `{"id":1,"v":"plain"}`))
	inTxn(true, srcRec("t", 0, "", `{"id":2,"v":"committed"}`), srcRec("t", 1, "", `{"id":3,"v":"committed"}`))
	inTxn(false, srcRec("t", 0, "", `{"id":4,"v":"aborted"}`), srcRec("t", 1, "", `{"id":5,"v":"aborted"}`),
		srcRec("t", 0, "", `{"id":6,"v":"aborted"}`))
	srcProduce(t, plain, srcRec("t", 0, "", `{"id":7,"v":"plain"}`))
	inTxn(true, srcRec("t", 0, "", `{"id":8,"v":"committed"}`))

	committed := []string{"+1:1|plain", "+1:2|committed", "+1:3|committed", "+1:7|plain", "+1:8|committed"}
	rc := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t"))
	srcEqual(t, srcReadN(t, rc, 5, 100), committed)
	srcExpectQuiet(t, rc, 300*time.Millisecond)

	ru := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t", "isolation.level", "read_uncommitted"))
	srcEqual(t, srcReadN(t, ru, 8, 100), append(committed, "+1:4|aborted", "+1:5|aborted", "+1:6|aborted"))
	srcExpectQuiet(t, ru, 200*time.Millisecond)

	// An open transaction stays invisible to read_committed until it commits.
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	srcProduce(t, txn, srcRec("t", 1, "", `{"id":9,"v":"pending"}`))
	srcExpectQuiet(t, rc, 300*time.Millisecond)
	srcEqual(t, srcReadN(t, ru, 1, 100), []string{"+1:9|pending"})
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	srcEqual(t, srcReadN(t, rc, 1, 100), []string{"+1:9|pending"})

	// The position passes the control records: a restart reads nothing again.
	pos := rc.Position()
	again := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t"))
	if err := again.Seek(pos); err != nil {
		t.Fatal(err)
	}
	srcExpectQuiet(t, again, 300*time.Millisecond)
}

func TestSourceUpsert(t *testing.T) {
	addr := srcTestCluster(t, 1, "t")
	cl := srcTestClient(t, addr)
	srcProduce(t, cl,
		srcRec("t", 0, `{"id":1}`, `{"id":1,"v":"a"}`),
		srcRec("t", 0, `{"id":2}`, `{"v":"b"}`),          // the key gives the id
		srcRec("t", 0, `3`, `{"v":"c"}`),                 // a single key column's text
		&kgo.Record{Topic: "t", Key: []byte(`{"id":1}`)}, // tombstone
		&kgo.Record{Topic: "t", Key: []byte(`2`)},        // tombstone
		srcRec("t", 0, `{"id":3}`, `{"id":3,"v":"c2"}`),
	)
	r := srcOpen(t, srcTestCols, []int{0}, srcOpts(addr, "t", "format", "upsert"))
	got := srcReadN(t, r, 6, 100)
	want := []string{"+1:1|a", "+1:2|b", "+1:3|c", "-1:1|NULL", "-1:2|NULL", "+1:3|c2"}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
	cfg := connector.SourceConfig{Name: "s", Columns: srcTestCols, Options: srcOpts(addr, "t", "format", "UPSERT")}
	if _, err := (SourceFactory{}).Validate(cfg); pgerror.GetCode(err) != pgcode.InvalidObjectDefinition {
		t.Errorf("UPSERT without a key: %v", err)
	}
}

func TestSourceDebezium(t *testing.T) {
	addr := srcTestCluster(t, 1, "t")
	cl := srcTestClient(t, addr)
	srcProduce(t, cl,
		srcRec("t", 0, "", `{"before":null,"after":{"id":1,"v":"a"},"op":"c"}`),
		srcRec("t", 0, "", `{"schema":{},"payload":{"before":{"id":1,"v":"a"},"after":{"id":1,"v":"b"},"op":"u"}}`),
		srcRec("t", 0, "", `{"before":{"id":1,"v":"b"},"after":null,"op":"d"}`),
		&kgo.Record{Topic: "t", Key: []byte("1")}, // Debezium's tombstone after a delete
		srcRec("t", 0, "", `{"before":null,"after":{"id":2,"v":"z"},"op":"r"}`),
	)
	r := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t", "format", "debezium"))
	got := srcReadN(t, r, 5, 1) // max 1: an update's two rows still come together
	want := []string{"+1:1|a", "-1:1|a", "+1:1|b", "-1:1|b", "+1:2|z"}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %v\nwant %v", got, want)
	}
}

func TestSourceCSV(t *testing.T) {
	addr := srcTestCluster(t, 1, "t")
	cl := srcTestClient(t, addr)
	srcProduce(t, cl, srcRec("t", 0, "", "1,hello\n"), srcRec("t", 0, "", `2,"a,""b"""`), srcRec("t", 0, "", "3,"))
	r := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t", "encode", "csv"))
	srcEqual(t, srcReadN(t, r, 3, 100), []string{"+1:1|hello", `+1:2|a,"b"`, "+1:3|NULL"})
}

func TestSourcePseudoColumns(t *testing.T) {
	addr := srcTestCluster(t, 2, "t")
	cl := srcTestClient(t, addr)
	at := time.UnixMilli(1_700_000_000_123)
	r1 := srcRec("t", 1, "k1", `{"id":1,"_offset":99,"_key":"no"}`)
	r1.Timestamp = at
	r2 := srcRec("t", 1, "", `{"id":2}`)
	r2.Timestamp = at
	srcProduce(t, cl, r1, r2)
	cols := []types.Column{
		{Name: "id", Type: types.TInt8}, {Name: "_key", Type: types.TText}, {Name: "_partition", Type: types.TInt4},
		{Name: "_offset", Type: types.TInt8}, {Name: "_timestamp", Type: types.TTimestampTZ},
	}
	r := srcOpen(t, cols, nil, srcOpts(addr, "t"))
	ts := "2023-11-14 22:13:20.123+00"
	srcEqual(t, srcReadN(t, r, 2, 100), []string{
		"+1:1|k1|1|0|" + ts,
		"+1:2|NULL|1|1|" + ts,
	})
	bad := connector.SourceConfig{Name: "s", Columns: []types.Column{{Name: "id", Type: types.TInt8}, {Name: "_offset", Type: types.TText}},
		Options: srcOpts(addr, "t")}
	if _, err := (SourceFactory{}).Validate(bad); pgerror.GetCode(err) != pgcode.DatatypeMismatch {
		t.Errorf("_offset TEXT: %v", err)
	}
}

func TestSourceNewPartition(t *testing.T) {
	addr := srcTestCluster(t, 1, "t")
	cl := srcTestClient(t, addr)
	srcProduce(t, cl, srcRec("t", 0, "", `{"id":1,"v":"p0"}`))
	// Even with scan.startup.mode = latest, a partition added later is read
	// from its start.
	r := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t", "scan.startup.mode", "latest"))
	srcExpectQuiet(t, r, 100*time.Millisecond)
	req := kmsg.NewPtrCreatePartitionsRequest()
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = "t", 2
	req.Topics = append(req.Topics, rt)
	req.TimeoutMillis = 5000
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if e := resp.Topics[0].ErrorCode; e != 0 {
		t.Fatalf("create partitions: error %d", e)
	}
	cl.ForceMetadataRefresh()
	deadline := time.Now().Add(10 * time.Second)
	for {
		rs := cl.ProduceSync(context.Background(), srcRec("t", 1, "", `{"id":2,"v":"p1"}`))
		if rs.FirstErr() == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(rs.FirstErr())
		}
		time.Sleep(50 * time.Millisecond)
	}
	srcEqual(t, srcReadN(t, r, 1, 100), []string{"+1:2|p1"})
	pos, _, err := srcDecodePosition(r.Position())
	if err != nil || len(pos) != 2 || pos[1] != 1 {
		t.Errorf("position %v %v", pos, err)
	}
}

func TestSourceOptions(t *testing.T) {
	for _, tc := range []struct {
		opts []string
		code pgcode.Code
		msg  string
	}{
		{[]string{"topic", ""}, pgcode.InvalidParameterValue, "topic: is required"},
		{[]string{"properties.bootstrap.server", ""}, pgcode.InvalidParameterValue, "properties.bootstrap.server: is required"},
		{[]string{"properties.bootstrap.server", "nohost"}, pgcode.InvalidParameterValue, "not host:port"},
		{[]string{"scan.startup.mode", "middle"}, pgcode.InvalidParameterValue, "scan.startup.mode"},
		{[]string{"scan.startup.mode", "timestamp"}, pgcode.InvalidParameterValue, "scan.startup.timestamp.millis: is required"},
		{[]string{"scan.startup.mode", "timestamp", "scan.startup.timestamp.millis", "soon"}, pgcode.InvalidParameterValue, "not a non-negative integer"},
		{[]string{"scan.startup.timestamp.millis", "5"}, pgcode.InvalidParameterValue, "needs scan.startup.mode"},
		{[]string{"isolation.level", "serializable"}, pgcode.InvalidParameterValue, "isolation.level"},
		{[]string{"on_error", "ignore"}, pgcode.InvalidParameterValue, "on_error"},
		{[]string{"max.message.bytes", "-1"}, pgcode.InvalidParameterValue, "max.message.bytes"},
		{[]string{"format", "avro"}, pgcode.FeatureNotSupported, "FORMAT AVRO"},
		{[]string{"encode", "protobuf"}, pgcode.InvalidParameterValue, "schema.registry: is required with ENCODE PROTOBUF"},
		{[]string{"encode", "xml"}, pgcode.FeatureNotSupported, "ENCODE xml"},
		{[]string{"format", "debezium", "encode", "csv"}, pgcode.FeatureNotSupported, "DEBEZIUM needs ENCODE JSON"},
		{[]string{"group.id", "x"}, pgcode.InvalidParameterValue, "group.id: unknown option"},
	} {
		opts := srcOpts("127.0.0.1:1", "t", tc.opts...)
		_, err := SourceFactory{}.Validate(connector.SourceConfig{Name: "s", Columns: srcTestCols, Options: opts})
		if pgerror.GetCode(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: got %v (%s), want %s %q", tc.opts, err, pgerror.GetCode(err), tc.code, tc.msg)
		}
	}
	_, err := SourceFactory{}.Validate(connector.SourceConfig{Name: "s", Options: srcOpts("127.0.0.1:1", "t")})
	if pgerror.GetCode(err) != pgcode.InvalidObjectDefinition {
		t.Errorf("no columns: %v", err)
	}
}

func TestSourceMissingTopic(t *testing.T) {
	addr := srcTestCluster(t, 1, "t")
	cfg := connector.SourceConfig{Name: "s", Columns: srcTestCols, Options: srcOpts(addr, "nope")}
	_, err := SourceFactory{}.Open(context.Background(), cfg)
	if pgerror.GetCode(err) != pgcode.UndefinedObject || !strings.Contains(err.Error(), `"nope" does not exist`) {
		t.Fatalf("got %v", err)
	}
}

func TestSourceBrokerDown(t *testing.T) {
	dir := t.TempDir()
	c, err := kfake.NewCluster(kfake.Ports(0), kfake.DataDir(dir), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	addr := c.ListenAddrs()[0]
	cl := srcTestClient(t, addr)
	srcProduce(t, cl, srcRec("t", 0, "", `{"id":1,"v":"a"}`), srcRec("t", 1, "", `{"id":2,"v":"b"}`))
	r := srcOpen(t, srcTestCols, nil, srcOpts(addr, "t"))
	srcEqual(t, srcReadN(t, r, 2, 10), []string{"+1:1|a", "+1:2|b"})
	cl.Close()
	c.Close()
	// The outage is not an error, and Read keeps not blocking.
	srcCheckIdleReads(t, r, 100)

	// A source opened while the broker is down starts anyway.
	start := time.Now()
	cfg := connector.SourceConfig{Name: "s", Columns: srcTestCols, Options: srcOpts(addr, "t")}
	s, err := SourceFactory{}.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if d := time.Since(start); d > srcOpenProbe+time.Second {
		t.Errorf("Open took %v", d)
	}
	srcCheckIdleReads(t, s, 10)

	// The broker comes back on the same port with its log: both sources
	// go on, the first from where it was, the second from the start.
	_, port, _ := strings.Cut(addr, ":")
	var p int
	fmt.Sscan(port, &p)
	c, err = kfake.NewCluster(kfake.Ports(p), kfake.DataDir(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cl = srcTestClient(t, addr)
	srcProduce(t, cl, srcRec("t", 1, "", `{"id":3,"v":"c"}`))
	srcEqual(t, srcReadN(t, r, 1, 10), []string{"+1:3|c"})
	srcExpectQuiet(t, r, 200*time.Millisecond)
	srcEqual(t, srcReadN(t, s.(*srcReader), 3, 10), []string{"+1:1|a", "+1:2|b", "+1:3|c"})
}

// TestSourceBadRecords checks every kind of bad record with each on_error.
func TestSourceBadRecords(t *testing.T) {
	cols := []types.Column{{Name: "id", Type: types.TInt8}, {Name: "v", Type: types.TText}, {Name: "n", Type: types.TInt4}}
	for _, tc := range []struct {
		name  string
		value string
		cause string // "" = not a bad record
		want  string // the row when good
	}{
		{"malformed", `{"id":10,"v":"x"`, "invalid JSON at byte 16", ""},
		{"wrong type", `{"id":10,"v":"x","n":"seven"}`, `column n: expected a number, got string "seven"`, ""},
		{"missing field", `{"id":10}`, "", "+1:10|NULL|NULL"},
		{"bad utf8", "{\"id\":10,\"v\":\"\xff\xfe\"}", "invalid UTF-8 at byte 14", ""},
		{"oversized", `{"id":10,"v":"` + strings.Repeat("x", 300) + `"}`, "exceeds max.message.bytes (200)", ""},
	} {
		for _, mode := range []string{"fail", "skip", "dead_letter"} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				addr := srcTestCluster(t, 2, "t")
				cl := srcTestClient(t, addr)
				srcProduce(t, cl,
					srcRec("t", 1, "", `{"id":1,"v":"a","n":1}`),
					srcRec("t", 1, "k", tc.value),
					srcRec("t", 1, "", `{"id":2,"v":"b","n":2}`),
					srcRec("t", 0, "", `{"id":3,"v":"c","n":3}`),
				)
				r := srcOpen(t, cols, nil, srcOpts(addr, "t", "on_error", mode, "max.message.bytes", "200"))
				good := []string{"+1:1|a|1", "+1:2|b|2", "+1:3|c|3"}
				if tc.cause == "" {
					srcEqual(t, srcReadN(t, r, 4, 100), append(good, tc.want))
					if d := r.TakeDeadLetters(nil); len(d) != 0 {
						t.Fatalf("dead letters %v", d)
					}
					return
				}
				if mode == "fail" {
					var got []string
					var err error
					for end := time.Now().Add(10 * time.Second); err == nil && time.Now().Before(end); {
						b := types.NewBatch(100)
						_, err = r.Read(context.Background(), b, 100)
						for i := range b.Rows {
							got = append(got, srcRowString(cols, b.Rows[i], b.Diffs[i]))
						}
					}
					if err == nil {
						t.Fatal("no error")
					}
					for _, s := range []string{"topic t", "partition 1", "offset 1", tc.cause} {
						if !strings.Contains(err.Error(), s) {
							t.Errorf("error %q lacks %q", err, s)
						}
					}
					if pgerror.GetCode(err) != pgcode.InvalidTextRepresentation {
						t.Errorf("code %s", pgerror.GetCode(err))
					}
					if slices.Contains(got, "+1:2|b|2") {
						t.Errorf("read past the bad record: %v", got)
					}
					return
				}
				srcEqual(t, srcReadN(t, r, 3, 100), good)
				srcExpectQuiet(t, r, 100*time.Millisecond)
				dead := r.TakeDeadLetters(nil)
				if len(dead) != 1 {
					t.Fatalf("dead letters %v", dead)
				}
				d := dead[0]
				if d.Topic != "t" || d.Partition != 1 || d.Offset != 1 || !strings.Contains(d.Error, tc.cause) {
					t.Errorf("dead letter %+v", d)
				}
				want := tc.value
				if len(want) > 200 {
					want = want[:200]
				}
				if string(d.Raw) != want {
					t.Errorf("raw %q", d.Raw)
				}
				if len(r.TakeDeadLetters(nil)) != 0 {
					t.Error("dead letters taken twice")
				}
				// The position is past the bad record.
				pos, _, _ := srcDecodePosition(r.Position())
				if pos[1] != 3 || pos[0] != 1 {
					t.Errorf("position %v", pos)
				}
			})
		}
	}
}

// TestSourceBounded: scan.bounded = 'latest' reads what the partitions held
// when the source opened, then ends (io.EOF), never the records produced
// after; a reader restored from its position keeps the same bound.
func TestSourceBounded(t *testing.T) {
	addr := srcTestCluster(t, 2, "t")
	cl := srcTestClient(t, addr)
	for i := 0; i < 5; i++ {
		srcProduce(t, cl, srcRec("t", int32(i%2), "", fmt.Sprintf(`{"id":%d,"v":"old"}`, i)))
	}
	opts := srcOpts(addr, "t", "scan.bounded", "latest")
	r := srcOpen(t, srcTestCols, nil, opts)
	srcProduce(t, cl, srcRec("t", 0, "", `{"id":5,"v":"new"}`), srcRec("t", 1, "", `{"id":6,"v":"new"}`))
	first := srcReadN(t, r, 2, 2)
	pos := r.Position() // after two of the bounded records
	rest := srcReadN(t, r, 3, 100)
	srcEqual(t, append(append([]string{}, first...), rest...), []string{"+1:0|old", "+1:1|old", "+1:2|old", "+1:3|old", "+1:4|old"})
	srcExpectEOF(t, r)

	// A reader opened later, then restored: the bound of the position,
	// not the topic's end now.
	r2 := srcOpen(t, srcTestCols, nil, opts)
	if err := r2.Seek(pos); err != nil {
		t.Fatal(err)
	}
	srcEqual(t, srcReadN(t, r2, 3, 100), rest)
	srcExpectEOF(t, r2)

	if _, err := srcParse(connector.SourceConfig{Name: "s", Columns: srcTestCols, Options: srcOpts(addr, "t", "scan.bounded", "forever")}); err == nil {
		t.Fatal("scan.bounded = 'forever' accepted")
	}
}

// srcExpectEOF reads until r ends, failing on any row or a timeout.
func srcExpectEOF(t *testing.T, r *srcReader) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b := types.NewBatch(8)
		n, err := r.Read(context.Background(), b, 8)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil || n > 0 {
			t.Fatalf("after the bound: %d rows, %v; want io.EOF", n, err)
		}
		if time.Now().After(deadline) {
			t.Fatal("no io.EOF after the bound")
		}
	}
}
