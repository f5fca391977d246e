package tests

// The exactly-once crash battery (issue acceptance 6): Kafka → Sluice →
// Kafka, PostgreSQL, Redis and files, with a real sluice process SIGKILLed
// at random moments, at named points of its commit path
// (SLUICE_CRASHPOINT) and during recovery, while a producer keeps writing
// unique records {"id":i,"k":"k<i%37>","amount":<i%1000+1>} into the topic
// in of a testbroker (kfake with a data directory).
//
// One sluice process runs six pipelines, so every kill hits all of them:
// the source src and the view per_k (k, count, sum) feed
//
//	kafka-plain             src → topic out_plain, EXACTLY_ONCE (transactions)
//	kafka-upsert            per_k → topic out_upsert, FORMAT UPSERT keyed by k
//	postgres-transactional  src → table eo_plain (progress row per epoch)
//	postgres-upsert         per_k → table eo_agg, keyed by k
//	redis                   per_k → keys eo_redis:<k> (database 9, flushed first)
//	file                    src → part-<epoch>.jsonl files
//
// Afterwards the input is read back from the broker, and every sink is
// compared with the exact result it determines (a read_committed consumer,
// SQL queries, a key scan, the part files): each id exactly once with its
// own k and amount, or each key's exact count and sum, with no key of
// out_upsert ever going back along the topic. One line per pipeline:
//
//	pipeline=kafka-plain records=N kills=K lost=0 duplicated=0 wrong=0
//
// CI runs the first command (12 kill rounds, sluice built with
// SLUICE_BUILD_FLAGS=-race); the second is the long run:
//
//	go test -run TestExactlyOnceCrash -v ./tests/
//	SLUICE_EO_KILLS=200 go test -run TestExactlyOnceCrash -timeout 2h -v ./tests/
//
// A crashpoint counts its hits over all sinks of the process, so
// sink-before-commit:n stops whichever sink gets there n-th; the long run
// spreads them over all six.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	goredis "github.com/redis/go-redis/v9"
	"github.com/twmb/franz-go/pkg/kgo"
)

const (
	eoMinKills = 12
	eoKillsEnv = "SLUICE_EO_KILLS"
	// eoRate is how many records per second the producer writes during
	// the kill phase.
	eoRate = 1000
	// eoKeys is the number of distinct k values (the view's groups).
	eoKeys = 37
	// eoRedisDB is the database of the machine's Redis the test owns (it
	// flushes it first).
	eoRedisDB = 9
	// eoConvergeWait bounds the wait for every sink to catch up after the
	// last restart.
	eoConvergeWait = 90 * time.Second
	// eoCrashpointWait bounds the wait for a process started with
	// SLUICE_CRASHPOINT to kill itself; after it, the test kills it.
	eoCrashpointWait = 15 * time.Second
)

// eoRound is one kill round: how the process started in it dies.
type eoRound struct {
	// kind is "random" (SIGKILL 50–700 ms after the server accepts
	// connections), "busy" (50–700 ms after its sinks first confirmed a
	// write: a fresh process needs about a second to get there, so
	// "random" alone would rarely kill one in the middle of an external
	// transaction), "early" (0–50 ms after the start, in recovery) or
	// "crashpoint" (SLUICE_CRASHPOINT=point:n, n random).
	kind  string
	point string // the crashpoint, for kind "crashpoint"
}

// eoCycle is the order of kill rounds; longer runs repeat it. Its first
// twelve rounds cover every kind and every named point.
var eoCycle = []eoRound{
	{kind: "busy"},
	{kind: "crashpoint", point: "checkpoint-before-commit"},
	{kind: "random"},
	{kind: "crashpoint", point: "checkpoint-after-commit"},
	{kind: "early"},
	{kind: "crashpoint", point: "sink-before-commit"},
	{kind: "busy"},
	{kind: "crashpoint", point: "sink-after-write"},
	{kind: "crashpoint", point: "recovery"},
	{kind: "busy"},
	{kind: "early"},
	{kind: "crashpoint", point: "sink-before-commit"},
}

func eoKillTarget(t *testing.T) int {
	n := eoMinKills
	if s := os.Getenv(eoKillsEnv); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("%s=%q is not a positive number", eoKillsEnv, s)
		}
		n = max(n, v)
	}
	return n
}

// eoRecord is one input record; ids are unique.
type eoRecord struct {
	id     int64
	k      string
	amount int64
}

func eoInput(id int64) eoRecord {
	return eoRecord{id: id, k: "k" + strconv.FormatInt(id%eoKeys, 10), amount: id%1000 + 1}
}

func (r eoRecord) json() []byte {
	return fmt.Appendf(nil, `{"id":%d,"k":%q,"amount":%d}`, r.id, r.k, r.amount)
}

// eoAgg is one row of the view per_k.
type eoAgg struct{ n, total int64 }

func TestExactlyOnceCrash(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	rounds := eoKillTarget(t)
	t.Logf("seed %d, %d kill rounds", seed, rounds)

	broker := StartBroker(t, 4, "in")
	pgURL := FreshPostgresDB(t, "sluice_eo_crash")
	rdb := eoRedis(t, RedisAddr, eoRedisDB)
	fileRoot := t.TempDir()
	fileDir := filepath.Join(fileRoot, "eo_file")

	srv := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond, ExtraArgs: []string{"--file-root", fileRoot}})
	setup := srv.Connect(t)
	kafkaWith := fmt.Sprintf(`connector = 'kafka', properties.bootstrap.server = '%s'`, broker.Addr)
	ExecAll(t, setup,
		`CREATE SOURCE src (id BIGINT, k TEXT, amount BIGINT) WITH (`+kafkaWith+`, topic = 'in', scan.startup.mode = 'earliest') FORMAT PLAIN ENCODE JSON`,
		`CREATE MATERIALIZED VIEW per_k AS SELECT k, count(*) AS n, sum(amount) AS total FROM src GROUP BY k`,
		`CREATE SINK eo_kafka_plain FROM src WITH (`+kafkaWith+`, topic = 'out_plain', delivery = 'EXACTLY_ONCE') FORMAT PLAIN ENCODE JSON`,
		`CREATE SINK eo_kafka_upsert FROM per_k WITH (`+kafkaWith+`, topic = 'out_upsert', primary_key = 'k', delivery = 'EXACTLY_ONCE') FORMAT UPSERT ENCODE JSON`,
		`CREATE SINK eo_pg_txn FROM src WITH (connector = 'postgres', url = '`+pgURL+`', table = 'eo_plain', write_mode = 'transactional', delivery = 'EXACTLY_ONCE')`,
		`CREATE SINK eo_pg_upsert FROM per_k WITH (connector = 'postgres', url = '`+pgURL+`', table = 'eo_agg', write_mode = 'upsert', primary_key = 'k', delivery = 'EXACTLY_ONCE')`,
		fmt.Sprintf(`CREATE SINK eo_redis FROM per_k WITH (connector = 'redis', redis.url = 'redis://%s/%d', primary_key = 'k', delivery = 'EXACTLY_ONCE')`, RedisAddr, eoRedisDB),
		`CREATE SINK eo_file FROM src WITH (connector = 'file', path = '`+fileDir+`', delivery = 'EXACTLY_ONCE') FORMAT PLAIN ENCODE JSON`,
	)
	sinkNames := []string{"eo_kafka_plain", "eo_kafka_upsert", "eo_pg_txn", "eo_pg_upsert", "eo_redis", "eo_file"}
	st := eoShowSinks(t, setup)
	for _, name := range sinkNames {
		if s, ok := st[name]; !ok || s.effective != "EXACTLY_ONCE" {
			t.Fatalf("SHOW SINKS: %s is %+v, want effective EXACTLY_ONCE", name, s)
		}
	}
	_ = setup.Close(context.Background())

	prod := newEOProducer(t, broker.Addr)
	prodCtx, stopProducing := context.WithCancel(context.Background())
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		prod.run(prodCtx, eoRate)
	}()
	defer func() { stopProducing(); <-prodDone }()

	// The pipeline works before anything is killed.
	eoWaitViewRows(t, srv, 100)

	// The killer. Each round ends with the process dead; the first one
	// kills the process that is running.
	kills, fired := 0, map[string]int{}
	kinds := map[string]int{}
	// Odd rounds commit every epoch as ingested sstables, the sink logs
	// as runs that refer to the writer's chunks (storage.Run.SetOwned),
	// even ones as batches below 4 MiB: each path is killed, and each
	// recovers what the other wrote.
	ingest := func(r int, env ...string) []string {
		if r%2 == 1 {
			env = append(env, "SLUICE_INGEST_BYTES=0")
		}
		return env
	}
	for r := 0; r < rounds; r++ {
		round := eoCycle[r%len(eoCycle)]
		switch round.kind {
		case "random", "busy":
			if !srv.Running() {
				srv.SetEnv(ingest(r)...)
				if err := srv.Start(); err != nil {
					t.Fatalf("round %d: %v", r, err)
				}
			}
			if round.kind == "busy" {
				eoWaitWritten(t, srv)
			}
			time.Sleep(time.Duration(50+rng.Intn(651)) * time.Millisecond) // a random moment
			if err := srv.Kill(); err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
		case "early":
			srv.SetEnv(ingest(r)...)
			if err := srv.StartNoWait(); err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
			time.Sleep(time.Duration(rng.Intn(51)) * time.Millisecond) // a random moment of recovery
			if err := srv.Kill(); err != nil {
				t.Logf("round %d: %v", r, err) // it may have died on its own
			}
		case "crashpoint":
			hit := 1 + rng.Intn(5)
			switch round.point {
			case "recovery":
				hit = 1 // recovery runs once per process
			case "checkpoint-before-commit", "checkpoint-after-commit":
				// Every 200 ms: up to 3 s in, when the sinks are writing.
				hit = 1 + rng.Intn(15)
			}
			srv.SetEnv(ingest(r, fmt.Sprintf("SLUICE_CRASHPOINT=%s:%d", round.point, hit))...)
			if err := srv.StartNoWait(); err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
			deadline := time.Now().Add(eoCrashpointWait)
			for {
				exited, err := srv.Exited()
				if exited {
					var ee interface{ Sys() any }
					if errors.As(err, &ee) {
						if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
							fired[round.point]++
							break
						}
					}
					t.Fatalf("round %d: sluice with SLUICE_CRASHPOINT=%s:%d exited with %v, not by SIGKILL:\n%s",
						r, round.point, hit, err, capLines(srv.Logs(), 60))
				}
				if time.Now().After(deadline) {
					t.Logf("round %d: crashpoint %s:%d not reached within %v; killing", r, round.point, hit, eoCrashpointWait)
					if err := srv.Kill(); err != nil {
						t.Fatalf("round %d: %v", r, err)
					}
					break
				}
				time.Sleep(20 * time.Millisecond) // polling, bounded by deadline
			}
		}
		kills++
		kinds[round.kind]++
		t.Logf("round %d (%s %s) done: file rows %d", r, round.kind, round.point, len(eoFileRows(t, fileDir)))
	}
	stopProducing()
	<-prodDone
	acked := prod.finish(t)
	t.Logf("kills: %v; crashpoints that fired: %v; %d records acknowledged", kinds, fired, len(acked))
	// How far the sinks got while being killed (the file sink stands for
	// them): a battery whose output all came after the last kill would
	// prove little.
	t.Logf("the file sink had %d rows before the final start", len(eoFileRows(t, fileDir)))

	srv.SetEnv()
	if err := srv.Start(); err != nil {
		t.Fatalf("final start: %v", err)
	}

	// The input as the broker has it: every acknowledged record, once.
	in := eoReadInput(t, broker.Addr, acked)
	records := 0
	wantAgg := map[string]eoAgg{}
	for id, n := range in {
		r := eoInput(id)
		records += n
		a := wantAgg[r.k]
		a.n += int64(n)
		a.total += int64(n) * r.amount
		wantAgg[r.k] = a
	}

	plain := newEOTopicReader(t, broker.Addr, "out_plain")
	upsert := newEOTopicReader(t, broker.Addr, "out_upsert")
	pg := MustConnect(t, pgURL)
	checks := []struct {
		name string
		sink string
		read func() eoResult
	}{
		{"kafka-plain", "eo_kafka_plain", func() eoResult { return eoCompareRows(in, plain.rows(t)) }},
		{"kafka-upsert", "eo_kafka_upsert", func() eoResult { return upsert.compareUpsert(t, wantAgg) }},
		{"postgres-transactional", "eo_pg_txn", func() eoResult { return eoCompareRows(in, eoPGRows(t, pg)) }},
		{"postgres-upsert", "eo_pg_upsert", func() eoResult { return eoCompareAgg(wantAgg, eoPGAgg(t, pg)) }},
		{"redis", "eo_redis", func() eoResult { return eoCompareAgg(wantAgg, eoRedisAgg(t, rdb, "eo_redis")) }},
		{"file", "eo_file", func() eoResult { return eoCompareRows(in, eoFileRows(t, fileDir)) }},
	}

	conn := srv.Connect(t)
	results := make([]eoResult, len(checks))
	deadline := time.Now().Add(eoConvergeWait)
	for {
		status := eoShowSinks(t, conn)
		done := true
		for i, c := range checks {
			results[i] = c.read()
			if !results[i].exact() || status[c.sink].pending != 0 {
				done = false
			}
		}
		if done || time.Now().After(deadline) {
			if !done {
				for _, c := range checks {
					t.Logf("SHOW SINKS %s: %+v", c.sink, status[c.sink])
				}
			}
			break
		}
		time.Sleep(200 * time.Millisecond) // polling, bounded by deadline
	}
	// Nothing more may arrive once everything is delivered: read once
	// more after a pause, so that a late duplicate is counted too.
	time.Sleep(time.Second) // waiting for the absence of late writes
	for i, c := range checks {
		results[i] = c.read()
	}

	// The view itself is exact too.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, "FLUSH"); err != nil {
		t.Fatalf("FLUSH: %v", err)
	}
	res, err := QueryText(ctx, conn, "SELECT k, n, total FROM per_k")
	if err != nil {
		t.Fatalf("SELECT per_k: %v", err)
	}
	gotView := map[string]eoAgg{}
	for _, r := range res.Rows {
		gotView[r[0]] = eoAgg{mustInt(t, r[1]), mustInt(t, r[2])}
	}
	if v := eoCompareAgg(wantAgg, gotView); !v.exact() {
		t.Errorf("view per_k: lost=%d duplicated=%d wrong=%d: %s", v.lost, v.duplicated, v.wrong, strings.Join(v.notes, "; "))
	}

	for i, c := range checks {
		r := results[i]
		line := fmt.Sprintf("pipeline=%s records=%d kills=%d lost=%d duplicated=%d wrong=%d", c.name, records, kills, r.lost, r.duplicated, r.wrong)
		t.Log(line)
		fmt.Println(line)
		if !r.exact() {
			t.Errorf("%s: %s", c.name, strings.Join(capNotes(r.notes, 20), "; "))
		}
	}
}

// eoWaitWritten waits until the sinks of the running process have
// confirmed a write to their external systems (SHOW SINKS Written, which
// counts from the start of the process), for at most 15 s.
func eoWaitWritten(t *testing.T, srv *Server) {
	t.Helper()
	conn := srv.Connect(t)
	defer conn.Close(context.Background())
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for _, s := range eoShowSinks(t, conn) {
			if s.written > 0 {
				return
			}
		}
		time.Sleep(20 * time.Millisecond) // polling, bounded by deadline
	}
	t.Logf("no sink wrote anything within 15s of the start")
}

// eoWaitViewRows waits until the view per_k has counted at least n records.
func eoWaitViewRows(t *testing.T, srv *Server, n int64) {
	t.Helper()
	conn := srv.Connect(t)
	defer conn.Close(context.Background())
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var got int64
		_, err := conn.Exec(ctx, "FLUSH")
		if err == nil {
			var res *TextResult
			res, err = QueryText(ctx, conn, "SELECT coalesce(sum(n), 0) FROM per_k")
			if err == nil {
				got = mustInt(t, res.Rows[0][0])
			}
		}
		cancel()
		if err != nil {
			t.Fatalf("reading per_k: %v", err)
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("per_k counted %d records after 60s, want at least %d (is the kafka source reading?)", got, n)
		}
		time.Sleep(100 * time.Millisecond) // polling, bounded by deadline
	}
}

// ---------------------------------------------------------------------------
// Results.

// eoResult compares a sink's contents with the expected ones: lost counts
// expected records missing, duplicated the extra occurrences, wrong the
// items present with wrong content, unexpected ones and values that jumped
// back.
type eoResult struct {
	lost, duplicated, wrong int
	notes                   []string
}

func (r *eoResult) exact() bool { return r.lost == 0 && r.duplicated == 0 && r.wrong == 0 }

func (r *eoResult) note(format string, args ...any) {
	if len(r.notes) < 100 {
		r.notes = append(r.notes, fmt.Sprintf(format, args...))
	}
}

func capNotes(notes []string, n int) []string {
	if len(notes) <= n {
		return notes
	}
	return append(notes[:n:n], fmt.Sprintf("… %d more", len(notes)-n))
}

// eoCompareRows compares rows written from src with the input (id → how
// many times it is in the topic).
func eoCompareRows(in map[int64]int, got []eoRecord) eoResult {
	var r eoResult
	count := map[int64]int{}
	for _, g := range got {
		want, known := in[g.id]
		if known && want > 0 && g == eoInput(g.id) {
			count[g.id]++
			continue
		}
		r.wrong++
		r.note("unexpected row %+v", g)
	}
	for id, want := range in {
		switch n := count[id]; {
		case n < want:
			r.lost += want - n
			r.note("id %d lost", id)
		case n > want:
			r.duplicated += n - want
			r.note("id %d written %d times", id, n)
		}
	}
	return r
}

// eoCompareAgg compares the rows of a keyed sink of per_k with the
// aggregate of the input. A key's count too low is that many records lost,
// too high that many duplicated; a wrong total with the right count, or a
// key that should not exist, is wrong.
func eoCompareAgg(want, got map[string]eoAgg) eoResult {
	var r eoResult
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			r.lost += int(w.n)
			r.note("key %s missing (want %+v)", k, w)
		case g.n < w.n:
			r.lost += int(w.n - g.n)
			r.note("key %s is %+v, want %+v", k, g, w)
		case g.n > w.n:
			r.duplicated += int(g.n - w.n)
			r.note("key %s is %+v, want %+v", k, g, w)
		case g.total != w.total:
			r.wrong++
			r.note("key %s is %+v, want %+v", k, g, w)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			r.wrong++
			r.note("unexpected key %s = %+v", k, g)
		}
	}
	return r
}

// ---------------------------------------------------------------------------
// SHOW SINKS.

type eoSinkStatus struct {
	delivery, writeMode, effective, link string
	logged, delivered, pending, written  int64
	lastErr                              string
}

func eoShowSinks(t testing.TB, conn *pgx.Conn) map[string]eoSinkStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := QueryText(ctx, conn, "SHOW SINKS")
	if err != nil {
		t.Fatalf("SHOW SINKS: %v", err)
	}
	col := map[string]int{}
	for i, name := range res.ColumnNames() {
		col[name] = i
	}
	for _, name := range []string{"Name", "Delivery", "Write Mode", "Effective", "Weakest Link", "Logged Epoch",
		"Delivered Epoch", "Pending Epochs", "Written", "Last Error"} {
		if _, ok := col[name]; !ok {
			t.Fatalf("SHOW SINKS has no column %q (columns: %v)", name, res.ColumnNames())
		}
	}
	text := func(row []string, name string) string {
		v := row[col[name]]
		if v == "·" || v == "NULL" {
			return ""
		}
		return v
	}
	num := func(row []string, name string) int64 { return mustIntOr(row[col[name]], -1) }
	out := map[string]eoSinkStatus{}
	for _, row := range res.Rows {
		out[row[col["Name"]]] = eoSinkStatus{
			delivery: text(row, "Delivery"), writeMode: text(row, "Write Mode"), effective: text(row, "Effective"),
			link: text(row, "Weakest Link"), logged: num(row, "Logged Epoch"), delivered: num(row, "Delivered Epoch"),
			pending: num(row, "Pending Epochs"), written: num(row, "Written"), lastErr: text(row, "Last Error"),
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// The producer.

// eoProducer writes records 1, 2, 3, … into the topic in, with acks=all
// and kgo's idempotent producer (a retried produce is never duplicated),
// and keeps which ones the broker acknowledged.
type eoProducer struct {
	cl *kgo.Client

	mu struct {
		sync.Mutex
		next     int64
		acked    map[int64]bool
		failed   int
		firstErr error
	}
}

func newEOProducer(t *testing.T, addr string) *eoProducer {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic("in"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	p := &eoProducer{cl: cl}
	p.mu.acked = map[int64]bool{}
	return p
}

// run produces about rate records per second until ctx ends.
func (p *eoProducer) run(ctx context.Context, rate int) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	per := max(1, rate/100)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for range per {
			p.mu.Lock()
			p.mu.next++
			id := p.mu.next
			p.mu.Unlock()
			// Not ctx: a record handed to the client is waited for by finish.
			p.cl.Produce(context.Background(), &kgo.Record{Value: eoInput(id).json()}, func(_ *kgo.Record, err error) {
				p.mu.Lock()
				defer p.mu.Unlock()
				if err != nil {
					p.mu.failed++
					if p.mu.firstErr == nil {
						p.mu.firstErr = err
					}
					return
				}
				p.mu.acked[id] = true
			})
		}
	}
}

// finish waits for every record in flight and returns the acknowledged ids.
func (p *eoProducer) finish(t *testing.T) map[int64]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.cl.Flush(ctx); err != nil {
		t.Fatalf("flushing the producer: %v", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.failed > 0 {
		// Its outcome is unknown; reading the topic back decides it.
		t.Logf("%d of %d produces failed (first: %v)", p.mu.failed, p.mu.next, p.mu.firstErr)
	}
	return p.mu.acked
}

// eoReadInput reads the topic in back (read_committed) and returns how
// many times each id is in it. Every acknowledged id must be there.
func eoReadInput(t *testing.T, addr string, acked map[int64]bool) map[int64]int {
	t.Helper()
	r := newEOTopicReader(t, addr, "in")
	deadline := time.Now().Add(60 * time.Second)
	for {
		rows := r.rows(t)
		in := map[int64]int{}
		for _, g := range rows {
			if g != eoInput(g.id) {
				t.Fatalf("topic in holds %+v, which the producer never wrote", g)
			}
			in[g.id]++
		}
		missing := 0
		for id := range acked {
			if in[id] == 0 {
				missing++
			}
		}
		if missing == 0 {
			return in
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic in lacks %d acknowledged records after 60s", missing)
		}
	}
}

// ---------------------------------------------------------------------------
// Reading the sinks.

// eoTopicReader reads a topic from its start with a read_committed
// consumer, accumulating what it has read.
type eoTopicReader struct {
	topic string
	cl    *kgo.Client
	recs  []*kgo.Record // in offset order per partition
}

func newEOTopicReader(t *testing.T, addr, topic string) *eoTopicReader {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &eoTopicReader{topic: topic, cl: cl}
}

// poll reads what has arrived, until a poll of 300 ms brings nothing.
func (r *eoTopicReader) poll(t *testing.T) {
	t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		fs := r.cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(rec *kgo.Record) {
			r.recs = append(r.recs, rec)
			n++
		})
		fs.EachError(func(topic string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Logf("reading %s[%d]: %v", topic, p, err)
			}
		})
		if n == 0 {
			return
		}
	}
}

// rows decodes every record as a row of src.
func (r *eoTopicReader) rows(t *testing.T) []eoRecord {
	t.Helper()
	r.poll(t)
	out := make([]eoRecord, 0, len(r.recs))
	for _, rec := range r.recs {
		out = append(out, eoDecodeRow(rec.Value))
	}
	return out
}

// compareUpsert checks the upsert topic: the last value of every key is
// the aggregate, and along the topic no key's count ever goes back (nor
// is a key deleted).
func (r *eoTopicReader) compareUpsert(t *testing.T, want map[string]eoAgg) eoResult {
	t.Helper()
	r.poll(t)
	last := map[string]eoAgg{}
	var back eoResult
	for _, rec := range r.recs {
		var key struct{ K string }
		if err := json.Unmarshal(rec.Key, &key); err != nil || key.K == "" {
			back.wrong++
			back.note("record at %d/%d has key %q", rec.Partition, rec.Offset, rec.Key)
			continue
		}
		if rec.Value == nil {
			back.wrong++
			back.note("key %s deleted at %d/%d", key.K, rec.Partition, rec.Offset)
			delete(last, key.K)
			continue
		}
		k, a := eoDecodeAgg(rec.Value)
		if k != key.K {
			back.wrong++
			back.note("record keyed %s holds k=%s", key.K, k)
		}
		if prev, ok := last[key.K]; ok && (a.n < prev.n || a.total < prev.total) {
			back.wrong++
			back.note("key %s jumped back from %+v to %+v at %d/%d", key.K, prev, a, rec.Partition, rec.Offset)
		}
		last[key.K] = a
	}
	res := eoCompareAgg(want, last)
	res.wrong += back.wrong
	res.notes = append(back.notes, res.notes...)
	return res
}

func eoDecodeRow(b []byte) eoRecord {
	var v struct {
		ID     *int64
		K      *string
		Amount *int64
	}
	if err := json.Unmarshal(b, &v); err != nil || v.ID == nil || v.K == nil || v.Amount == nil {
		return eoRecord{id: -1, k: string(b)}
	}
	return eoRecord{id: *v.ID, k: *v.K, amount: *v.Amount}
}

// eoDecodeAgg decodes a JSON row of per_k (total may be a NUMERIC).
func eoDecodeAgg(b []byte) (string, eoAgg) {
	var v struct {
		K     string
		N     json.Number
		Total json.Number
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return "bad json " + string(b), eoAgg{-1, -1}
	}
	return v.K, eoAgg{mustIntOr(string(v.N), -1), mustIntOr(string(v.Total), -1)}
}

func eoPGRows(t *testing.T, pg *pgx.Conn) []eoRecord {
	t.Helper()
	var out []eoRecord
	eoPGQuery(t, pg, "SELECT id, k, amount FROM eo_plain", func(r []string) {
		out = append(out, eoRecord{mustIntOr(r[0], -1), r[1], mustIntOr(r[2], -1)})
	})
	return out
}

func eoPGAgg(t *testing.T, pg *pgx.Conn) map[string]eoAgg {
	t.Helper()
	out := map[string]eoAgg{}
	dup := 0
	eoPGQuery(t, pg, "SELECT k, n, total FROM eo_agg", func(r []string) {
		if _, ok := out[r[0]]; ok {
			dup++
			r[0] += fmt.Sprintf(" (copy %d)", dup) // counted as an unexpected key
		}
		out[r[0]] = eoAgg{mustIntOr(r[1], -1), mustIntOr(r[2], -1)}
	})
	return out
}

// eoPGQuery runs a query on the sink's database; a table the sink has not
// created yet reads as empty.
func eoPGQuery(t *testing.T, pg *pgx.Conn, sql string, fn func([]string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := QueryText(ctx, pg, sql)
	if PgCode(err) == "42P01" {
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	for _, r := range res.Rows {
		fn(r)
	}
}

// eoRedis connects to database db of the Redis at addr and empties it.
func eoRedis(t *testing.T, addr string, db int) *goredis.Client {
	t.Helper()
	if addr == RedisAddr {
		EnsureRedis(t)
	}
	c := goredis.NewClient(&goredis.Options{Addr: addr, DB: db})
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("FLUSHDB on redis %s/%d: %v", addr, db, err)
	}
	return c
}

// eoRedisAgg reads the keys "<sink>:<k>" of a redis sink of per_k.
func eoRedisAgg(t *testing.T, c *goredis.Client, sink string) map[string]eoAgg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var keys []string
	iter := c.Scan(ctx, 0, sink+":*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("scanning redis: %v", err)
	}
	out := map[string]eoAgg{}
	if len(keys) == 0 {
		return out
	}
	vals, err := c.MGet(ctx, keys...).Result()
	if err != nil {
		t.Fatalf("MGET: %v", err)
	}
	for i, v := range vals {
		s, _ := v.(string)
		k, a := eoDecodeAgg([]byte(s))
		if want := sink + ":" + k; want != keys[i] {
			k = keys[i] + " holding k=" + k // counted as an unexpected key
		}
		out[k] = a
	}
	return out
}

// eoFileRows reads every part file of a file sink's directory.
func eoFileRows(t *testing.T, dir string) []eoRecord {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	var out []eoRecord
	for _, name := range names {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
			if line != "" {
				out = append(out, eoDecodeRow([]byte(line)))
			}
		}
	}
	return out
}
