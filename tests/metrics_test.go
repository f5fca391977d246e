package tests

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// scrape reads /metrics at addr and parses it with the Prometheus text
// parser.
func scrape(t testing.TB, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("scraping: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("scraping: %s: %s", resp.Status, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("Content-Type %q, want the text exposition format", ct)
	}
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// metricValue returns the value of family name's series whose labels
// include want (counter, gauge, or a histogram's sample count); ok is
// false when there is no such series.
func metricValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		case m.Untyped != nil:
			return m.Untyped.GetValue(), true
		}
	}
	return 0, false
}

// seriesOf lists the label sets of family name (for failure messages).
func seriesOf(fams map[string]*dto.MetricFamily, name string) string {
	f := fams[name]
	if f == nil {
		return "(no family " + name + ")"
	}
	var out []string
	for _, m := range f.Metric {
		var ls []string
		for _, l := range m.Label {
			ls = append(ls, l.GetName()+"="+l.GetValue())
		}
		out = append(out, "{"+strings.Join(ls, ",")+"}")
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// TestMetricsEndpoint: /metrics parses with the Prometheus exposition
// parser, and its counters move exactly as rows flow: a table's source
// counts the rows inserted, the view's operators see them, the sink
// confirms them, statements and connections are counted, and checkpoints
// are timed.
func TestMetricsEndpoint(t *testing.T) {
	httpAddr := FreeAddr(t)
	fileRoot := t.TempDir()
	srv := StartServer(t, Options{CheckpointInterval: 100 * time.Millisecond,
		ExtraArgs: []string{"--http", httpAddr, "--file-root", fileRoot}})
	if !strings.Contains(srv.Logs(), "HTTP endpoint on http://"+httpAddr) {
		t.Fatalf("the log does not name the HTTP endpoint:\n%s", srv.Logs())
	}
	conn := srv.Connect(t)
	ExecAll(t, conn,
		`CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT, v TEXT)`,
		`CREATE MATERIALIZED VIEW per_k AS SELECT k, count(*) AS n FROM t GROUP BY k`,
		`CREATE SINK out FROM t WITH (connector = 'file', path = '`+filepath.Join(fileRoot, "out")+`') FORMAT DEBEZIUM ENCODE JSON`,
		`CREATE SOURCE g (id BIGINT) WITH (connector = 'datagen', fields.id.kind = 'sequence', fields.id.start = '1', datagen.rows.per.second = '200')`,
		`CREATE MATERIALIZED VIEW gn AS SELECT count(*) AS n FROM g`,
	)
	before := scrape(t, httpAddr)
	stmt0, _ := metricValue(before, "sluice_statements_total", map[string]string{"kind": "insert"})
	ddl, _ := metricValue(before, "sluice_statements_total", map[string]string{"kind": "ddl"})
	if ddl != 5 {
		t.Errorf("sluice_statements_total{kind=ddl} = %v, want 5", ddl)
	}
	if v, _ := metricValue(before, "sluice_connections", nil); v < 1 {
		t.Errorf("sluice_connections = %v, want at least 1", v)
	}

	// 3 statements, 1,000 rows over 10 keys.
	const rows = 1000
	for s := 0; s < 3; s++ {
		var vals []string
		for i := s * rows / 3; i < (s+1)*rows/3 || (s == 2 && i < rows); i++ {
			vals = append(vals, fmt.Sprintf("(%d, %d, 'v%d')", i, i%10, i))
		}
		ExecAll(t, conn, `INSERT INTO t VALUES `+strings.Join(vals, ", "))
	}
	ExecAll(t, conn, `FLUSH`)

	// The sink delivers after the commit: poll for it with a deadline.
	var fams map[string]*dto.MetricFamily
	deadline := time.Now().Add(20 * time.Second)
	for {
		fams = scrape(t, httpAddr)
		if v, _ := metricValue(fams, "sluice_sink_rows_total", map[string]string{"sink": "out"}); v == rows || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling, bounded by the deadline
	}
	exact := func(name string, labels map[string]string, want float64) {
		t.Helper()
		v, ok := metricValue(fams, name, labels)
		if !ok || v != want {
			t.Errorf("%s%v = %v (found %v), want %v; series: %s", name, labels, v, ok, want, seriesOf(fams, name))
		}
	}
	exact("sluice_source_rows_total", map[string]string{"job": "t", "source": "t"}, rows)
	exact("sluice_operator_rows_in_total", map[string]string{"job": "t", "kind": "Materialize"}, rows)
	exact("sluice_operator_rows_in_total", map[string]string{"job": "per_k", "kind": "HashAgg"}, rows)
	exact("sluice_operator_state_keys", map[string]string{"job": "per_k", "kind": "HashAgg"}, 10)
	exact("sluice_sink_rows_total", map[string]string{"sink": "out"}, rows)
	exact("sluice_sink_pending_epochs", map[string]string{"sink": "out"}, 0)
	exact("sluice_sink_errors_total", map[string]string{"sink": "out"}, 0)
	exact("sluice_statements_total", map[string]string{"kind": "insert"}, stmt0+3)
	exact("sluice_checkpoints_failed_total", nil, 0)

	positive := func(name string, labels map[string]string) {
		t.Helper()
		if v, ok := metricValue(fams, name, labels); !ok || v <= 0 {
			t.Errorf("%s%v = %v (found %v), want > 0; series: %s", name, labels, v, ok, seriesOf(fams, name))
		}
	}
	positive("sluice_source_rows_total", map[string]string{"job": "gn", "source": "g"})
	positive("sluice_operator_busy_seconds_total", map[string]string{"job": "per_k", "kind": "HashAgg"})
	positive("sluice_operator_idle_seconds_total", map[string]string{"job": "per_k", "kind": "HashAgg"})
	positive("sluice_operator_state_bytes", map[string]string{"job": "per_k", "kind": "HashAgg"})
	positive("sluice_sink_bytes_total", map[string]string{"sink": "out"})
	positive("sluice_sink_commit_seconds", map[string]string{"sink": "out"})
	positive("sluice_barrier_latency_seconds", nil)
	positive("sluice_checkpoint_duration_seconds", nil)
	positive("sluice_checkpoint_bytes_total", nil)
	positive("sluice_checkpoints_total", nil)
	positive("sluice_committed_epoch", nil)
	positive("sluice_statement_duration_seconds", map[string]string{"kind": "insert"})
	positive("go_goroutines", nil)
	positive("process_resident_memory_bytes", nil)
	if _, ok := metricValue(fams, "sluice_source_lag_records", map[string]string{"job": "gn", "source": "g"}); !ok {
		t.Errorf("no sluice_source_lag_records for the datagen source; series: %s", seriesOf(fams, "sluice_source_lag_records"))
	}
	if v, _ := metricValue(fams, "sluice_operator_rows_out_total", map[string]string{"job": "per_k", "kind": "HashAgg"}); v < 10 {
		t.Errorf("the aggregation emitted %v rows, want at least one per key (10)", v)
	}

	// The counters move by exactly what flows next.
	ExecAll(t, conn, `INSERT INTO t VALUES (5000, 1, 'x'), (5001, 2, 'y')`, `DELETE FROM t WHERE id < 10`, `FLUSH`)
	fams = scrape(t, httpAddr)
	exact("sluice_source_rows_total", map[string]string{"job": "t", "source": "t"}, rows+2+10)
	exact("sluice_operator_rows_in_total", map[string]string{"job": "per_k", "kind": "HashAgg"}, rows+2+10)
	exact("sluice_statements_total", map[string]string{"kind": "delete"}, 1)

	// pprof is served on the same endpoint.
	resp, err := http.Get("http://" + httpAddr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "goroutine profile:") {
		t.Fatalf("/debug/pprof/goroutine: %s\n%.300s", resp.Status, body)
	}
	_ = conn.Close(context.Background())
}

// TestMetricsEndpointRefusesRemote: a non-loopback --http is refused
// unless --http-allow-remote says so.
func TestMetricsEndpointRefusesRemote(t *testing.T) {
	srv := NewServer(t, Options{ExtraArgs: []string{"--http", "0.0.0.0:0"}})
	err := srv.Start()
	if err == nil {
		t.Fatal("sluice started with --http 0.0.0.0:0 and no --http-allow-remote")
	}
	if !strings.Contains(srv.Logs(), "refusing to serve HTTP on 0.0.0.0:0") {
		t.Fatalf("the refusal is not logged:\n%s", srv.Logs())
	}
}
