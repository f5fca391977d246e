package tests

// The stuck-barrier report (issue 18, item 4): an operator and a sink held
// on purpose (SLUICE_FAILPOINT=block:…) keep their epoch from committing;
// within seconds the log and /debug/barrier name those two operators and
// their jobs, and no other operator as holding it.

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type barrierOp struct {
	Job        string `json:"job"`
	Operator   string `json:"operator"`
	Kind       string `json:"kind"`
	Phase      string `json:"phase"`
	Goroutines string `json:"goroutines"`
}

type barrierDoc struct {
	InFlight *struct {
		Epoch     uint64      `json:"epoch"`
		WaitingMs int64       `json:"waiting_ms"`
		Holding   []barrierOp `json:"holding"`
		Behind    []barrierOp `json:"behind"`
		Remaining int         `json:"collectors_remaining"`
		Commit    string      `json:"commit"`
		CommitMs  int64       `json:"commit_ms"`
	} `json:"in_flight"`
}

func getBarrier(t *testing.T, addr, query string) (string, barrierDoc) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/debug/barrier" + query)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var d barrierDoc
	if query == "" {
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("/debug/barrier: %v: %s", err, b)
		}
	}
	return string(b), d
}

func TestStuckBarrierReport(t *testing.T) {
	httpAddr := FreeAddr(t)
	fileRoot := t.TempDir()
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond,
		ExtraArgs: []string{"--http", httpAddr, "--stuck-barrier", "1s", "--file-root", fileRoot},
		Env:       []string{"SLUICE_FAILPOINT=block:Project:0:held,block:Sink:0:out"}})
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT)`,
		`CREATE MATERIALIZED VIEW free AS SELECT k, count(*) AS n FROM t GROUP BY k`,
		`CREATE MATERIALIZED VIEW held AS SELECT id, k * 2 AS k2 FROM t`,
		`CREATE SINK out FROM t WITH (connector = 'file', path = '`+filepath.Join(fileRoot, "out")+`') FORMAT DEBEZIUM ENCODE JSON`,
	)
	// No epoch is stuck yet.
	if _, d := getBarrier(t, httpAddr, ""); d.InFlight != nil && d.InFlight.WaitingMs > 1000 {
		t.Fatalf("an epoch in flight for %d ms before any row", d.InFlight.WaitingMs)
	}
	ExecAll(t, conn, `INSERT INTO t VALUES (1, 1), (2, 2)`)
	start := time.Now()
	const line = "stuck barrier: epoch "
	waitFor(t, 10*time.Second, func() bool { return strings.Contains(srv.Logs(), line) }, "the stuck-barrier log line")
	t.Logf("logged after %v", time.Since(start).Round(100*time.Millisecond))
	var logged string
	for _, l := range strings.Split(srv.Logs(), "\n") {
		if strings.Contains(l, line) {
			logged = l
			break
		}
	}
	if !strings.Contains(logged, "job held operator 1-Project (Project, processing in sluice/exec/job.failpoints.hook") ||
		!strings.Contains(logged, "job out operator 2-Sink (Sink, processing in sluice/exec/job.failpoints.hook") ||
		strings.Count(logged, "job ") != 2 {
		t.Fatalf("log line: %s", logged)
	}
	_, d := getBarrier(t, httpAddr, "")
	if d.InFlight == nil || d.InFlight.WaitingMs < 1000 {
		t.Fatalf("/debug/barrier: %+v", d.InFlight)
	}
	want := map[string]string{"held": "1-Project Project", "out": "2-Sink Sink"}
	if len(d.InFlight.Holding) != len(want) {
		t.Fatalf("holding %+v, want the blocked Project and Sink only", d.InFlight.Holding)
	}
	for _, h := range d.InFlight.Holding {
		if want[h.Job] != h.Operator+" "+h.Kind || h.Phase != "processing" {
			t.Fatalf("holding %+v", h)
		}
		if !strings.Contains(h.Goroutines, `"operator":"`+h.Operator+`"`) || !strings.Contains(h.Goroutines, "failpoints.hook") ||
			strings.Contains(h.Goroutines, `"job":"free"`) {
			t.Fatalf("the goroutines of %s:\n%s", h.Operator, h.Goroutines)
		}
	}
	for _, b := range d.InFlight.Behind {
		if b.Job != "held" && b.Job != "out" {
			t.Fatalf("an operator of job %s behind the barrier: %+v", b.Job, b)
		}
	}
	text, _ := getBarrier(t, httpAddr, "?format=text")
	if !strings.HasPrefix(text, "stuck barrier: epoch ") || !strings.Contains(text, "job held operator 1-Project (Project, processing") ||
		!strings.Contains(text, "job out operator 2-Sink (Sink, processing") {
		t.Fatalf("text report:\n%s", text)
	}
	t.Logf("%s", text)
}

// stuckLine waits for the stuck-barrier log line and returns it.
func stuckLine(t *testing.T, srv *Server) string {
	t.Helper()
	const line = "stuck barrier: epoch "
	waitFor(t, 20*time.Second, func() bool { return strings.Contains(srv.Logs(), line) }, "the stuck-barrier log line")
	for _, l := range strings.Split(srv.Logs(), "\n") {
		if strings.Contains(l, line) {
			return l
		}
	}
	return ""
}

// TestStuckBarrierSource: a source whose connector stops in its read (a
// failpoint blocks the datagen reader of job jobs20_gen after its first
// read) holds the epoch; the report names that job's source, reading, in
// the failpoint, and its goroutines.
func TestStuckBarrierSource(t *testing.T) {
	httpAddr := FreeAddr(t)
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond,
		ExtraArgs: []string{"--http", httpAddr, "--stuck-barrier", "1s"},
		Env:       []string{"SLUICE_FAILPOINT=block:source:0:jobs20_gen"}})
	conn := srv.Connect(t)
	// In the background: the source may block before it emits the barrier
	// of the epoch that creates the view.
	ExecAll(t, conn, `SET background_ddl = true`,
		`CREATE SOURCE jobs20_g (id BIGINT) WITH (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1',
			datagen.rows.per.second = '100')`,
		`CREATE MATERIALIZED VIEW jobs20_gen AS SELECT id FROM jobs20_g`)
	logged := stuckLine(t, srv)
	if !strings.Contains(logged, "held by job jobs20_gen operator jobs20_g (Source, reading in sluice/exec/job.failpoints.hook") ||
		strings.Count(logged, "job ") != 1 {
		t.Fatalf("log line: %s", logged)
	}
	_, d := getBarrier(t, httpAddr, "")
	if d.InFlight == nil || len(d.InFlight.Holding) != 1 || d.InFlight.Remaining == 0 {
		t.Fatalf("/debug/barrier: %+v", d.InFlight)
	}
	h := d.InFlight.Holding[0]
	if h.Job != "jobs20_gen" || h.Operator != "jobs20_g" || h.Kind != "Source" || h.Phase != "reading" ||
		!strings.Contains(h.Goroutines, `"operator":"jobs20_g"`) || !strings.Contains(h.Goroutines, "failpoints.hook") {
		t.Fatalf("holding %+v", h)
	}
}

// TestStuckBarrierSlowCommit: when every operator has passed the barrier
// but the epoch's write to the store does not end (a failpoint blocks the
// 30th commit), the report says what the commit is doing.
func TestStuckBarrierSlowCommit(t *testing.T) {
	httpAddr := FreeAddr(t)
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond,
		ExtraArgs: []string{"--http", httpAddr, "--stuck-barrier", "1s"},
		Env:       []string{"SLUICE_FAILPOINT=block:commit:30"}})
	conn := srv.Connect(t)
	ExecAll(t, conn, `CREATE TABLE t (id BIGINT PRIMARY KEY)`)
	logged := stuckLine(t, srv)
	if !strings.Contains(logged, "every operator has passed it; the commit is slow: writing ") ||
		!strings.Contains(logged, " bytes to the store (for ") {
		t.Fatalf("log line: %s", logged)
	}
	_, d := getBarrier(t, httpAddr, "")
	if d.InFlight == nil || d.InFlight.Remaining != 0 || !strings.HasPrefix(d.InFlight.Commit, "writing ") ||
		!strings.HasSuffix(d.InFlight.Commit, " bytes to the store") || d.InFlight.CommitMs <= 0 || d.InFlight.CommitMs > d.InFlight.WaitingMs || len(d.InFlight.Holding) != 0 {
		t.Fatalf("/debug/barrier: %+v", d.InFlight)
	}
}
