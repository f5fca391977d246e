package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"sluice/server"
)

// chromium returns the path of Debian's chromium, installing it (as
// scripts/test.sh installs the client matrix) when it is missing. The test
// fails, never skips, when it cannot be had.
func chromium(t *testing.T) string {
	t.Helper()
	chromiumOnce.Do(func() {
		if p := findChromium(); p != "" {
			chromiumPath = p
			return
		}
		var sudo []string
		if os.Geteuid() != 0 {
			sudo = []string{"sudo", "-n"}
		}
		install := append(sudo, "apt-get", "-o", "DPkg::Lock::Timeout=300", "install", "-y", "-qq", "--no-install-recommends", "chromium")
		cmd := exec.Command(install[0], install[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			chromiumErr = fmt.Sprintf("installing chromium (%s): %v\n%s", strings.Join(install, " "), err, out)
			return
		}
		chromiumPath = findChromium()
	})
	if chromiumPath == "" {
		t.Fatalf("no chromium: %s", chromiumErr)
	}
	return chromiumPath
}

var (
	chromiumOnce sync.Once
	chromiumPath string
	chromiumErr  = "not found after installing"
)

func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// dashProbe is what the test reads from the dashboard's DOM.
type dashProbe struct {
	Epoch      int64              `json:"epoch"`
	Updates    int64              `json:"updates"`
	Conn       string             `json:"conn"`
	Catalog    []string           `json:"catalog"`
	Kinds      []string           `json:"kinds"`
	Edges      int                `json:"edges"`
	InRates    map[string]float64 `json:"inRates"`
	SourceRows string             `json:"sourceRows"`
	SinkRows   string             `json:"sinkRows"`
	SinkEff    string             `json:"sinkEffective"`
	Q5Kinds    []string           `json:"q5Kinds"`
	Charts     int                `json:"charts"`
}

const dashProbeJS = `(() => {
  const txt = (sel) => document.querySelector(sel)?.textContent ?? "";
  const job = document.querySelector('.job[data-job="dash_revenue"]');
  const q5 = document.querySelector('.job[data-job="nexmark_q5"]');
  const inRates = {};
  for (const tr of job ? job.querySelectorAll("tr[data-op]") : []) {
    inRates[tr.dataset.kind] = Math.max(inRates[tr.dataset.kind] ?? 0, +tr.querySelector(".rows-in-rate").dataset.value);
  }
  return {
    epoch: +txt("#committed-epoch") || 0,
    updates: +txt("#sse-count") || 0,
    conn: txt("#conn"),
    catalog: [...document.querySelectorAll("#catalog tr[data-name]")].map((tr) => tr.dataset.name + ":" + tr.dataset.kind),
    kinds: job ? [...job.querySelectorAll("svg g.node")].map((g) => g.dataset.kind) : [],
    edges: job ? job.querySelectorAll("svg path.edge").length : 0,
    inRates,
    sourceRows: txt('#sources tr[data-source="dash_orders"] td:nth-child(3)'),
    sinkRows: txt('#sinks tr[data-sink="dash_out"] td.written'),
    sinkEffective: txt('#sinks tr[data-sink="dash_out"] td.effective'),
    q5Kinds: q5 ? [...q5.querySelectorAll("svg g.node")].map((g) => g.dataset.kind) : [],
    charts: document.querySelectorAll(".chart polyline").length,
  };
})()`

// TestDashboard opens the dashboard in headless Chromium against a running
// server: a table, a view joining and aggregating it, a sink and the
// Nexmark q5 job over a live bid source. The page lists them, draws the
// view's dataflow as SVG nodes, and its figures (rows/s, the committed
// epoch, the source's and sink's row counts) move as rows are inserted,
// carried by the Server-Sent Events stream. /api/state and /api/events are
// checked directly too. SLUICE_DASHBOARD_PNG names where to save a
// screenshot (docs/dashboard.png is one); by default it goes to a temporary
// directory.
func TestDashboard(t *testing.T) {
	start := time.Now()
	chrome := chromium(t)
	httpAddr := FreeAddr(t)
	fileRoot := t.TempDir()
	srv := StartServer(t, Options{CheckpointInterval: 200 * time.Millisecond,
		ExtraArgs: []string{"--http", httpAddr, "--file-root", fileRoot}})
	conn := srv.Connect(t)
	q5 := readNexmarkFile(t, "q5.sql")
	ExecAll(t, conn,
		`CREATE TABLE dash_orders (id BIGINT PRIMARY KEY, cust BIGINT, amount BIGINT)`,
		`CREATE TABLE dash_customers (id BIGINT PRIMARY KEY, region TEXT)`,
		`CREATE MATERIALIZED VIEW dash_revenue AS SELECT c.region, count(*) AS n, sum(o.amount) AS total
		   FROM dash_orders o JOIN dash_customers c ON o.cust = c.id GROUP BY c.region`,
		`CREATE SINK dash_out FROM dash_revenue WITH (connector = 'file', path = '`+filepath.Join(fileRoot, "out")+`') FORMAT DEBEZIUM ENCODE JSON`,
		`CREATE SOURCE bid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR,
		   WATERMARK FOR date_time AS date_time - INTERVAL '4' SECOND)
		 WITH (connector = 'nexmark', nexmark.table.type = 'bid', nexmark.first.event.rate = '2000',
		   nexmark.min.event.gap.in.ns = '500000')`,
		q5.stmts[len(q5.stmts)-1],
	)
	base := "http://" + httpAddr
	t.Logf("%s: %s", time.Since(start).Round(time.Millisecond), "server and DDL")

	// /api/state: the catalog, the view's job with its join and
	// aggregation wired to both tables, the sink with its guarantees.
	st := getDashState(t, base)
	var objs []string
	for _, o := range st.Catalog {
		objs = append(objs, o.Name+":"+o.Kind)
	}
	for _, want := range []string{"dash_orders:table", "dash_customers:table", "dash_revenue:materialized view", "dash_out:sink", "bid:source", "nexmark_q5:materialized view"} {
		if !slices.Contains(objs, want) {
			t.Errorf("/api/state catalog %v lacks %s", objs, want)
		}
	}
	rev := dashJob(t, st, "dash_revenue")
	kinds := map[string]int{}
	ids := map[string]string{}
	for _, n := range rev.Nodes {
		kinds[n.Kind]++
		ids[n.ID] = n.Kind
	}
	if kinds["HashJoin"] != 1 || kinds["HashAgg"] != 1 || kinds["Materialize"] != 1 || kinds["Upstream"] != 2 {
		t.Errorf("dash_revenue's nodes by kind = %v, want one HashJoin, HashAgg, Materialize and two Upstream", kinds)
	}
	into := map[string][]string{} // kind -> kinds of its inputs
	for _, e := range rev.Edges {
		if ids[e.From] == "" || ids[e.To] == "" {
			t.Errorf("edge %s -> %s names an unknown node", e.From, e.To)
		}
		into[ids[e.To]] = append(into[ids[e.To]], ids[e.From])
	}
	if !slices.Equal(into["HashAgg"], []string{"HashJoin"}) && !slices.Contains(into["HashAgg"], "HashJoin") {
		t.Errorf("HashAgg's inputs = %v, want the HashJoin (edges %v)", into["HashAgg"], rev.Edges)
	}
	if len(st.Sinks) != 1 || st.Sinks[0].Name != "dash_out" || st.Sinks[0].Effective == "" || st.Sinks[0].Status != "running" {
		t.Errorf("/api/state sinks = %+v, want dash_out running with its effective guarantee", st.Sinks)
	}
	committed0 := st.Committed

	// /api/events: Server-Sent Events, each a newer snapshot.
	checkEventStream(t, base)

	// The page, in headless Chromium.
	t.Logf("%s: %s", time.Since(start).Round(time.Millisecond), "API checks")
	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(chrome), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.WindowSize(1500, 1300))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelTab()
	// The first action starts the browser, which lives as long as its
	// context: no timeout on that one (chromedp.Run's rule).
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/?interval=250")); err != nil {
		t.Fatalf("opening the dashboard: %v", err)
	}
	ctx, cancel := context.WithTimeout(tab, 45*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.job[data-job="dash_revenue"] svg g.node`))); err != nil {
		t.Fatalf("waiting for the dataflow graph: %v", err)
	}
	probe := func() dashProbe {
		p, err := chromedp.Run(ctx, chromedp.Evaluate[dashProbe](dashProbeJS))
		if err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		return p
	}
	p0 := probe()
	t.Logf("%s: %s", time.Since(start).Round(time.Millisecond), "page open")
	for _, want := range []string{"dash_orders:table", "dash_revenue:materialized view", "dash_out:sink", "nexmark_q5:materialized view"} {
		if !slices.Contains(p0.Catalog, want) {
			t.Errorf("the page's catalog %v lacks %s", p0.Catalog, want)
		}
	}
	if !slices.Contains(p0.Kinds, "HashJoin") || !slices.Contains(p0.Kinds, "HashAgg") || p0.Edges < 4 {
		t.Errorf("the page draws dash_revenue as nodes %v with %d edges, want a HashJoin and a HashAgg and 4+ edges", p0.Kinds, p0.Edges)
	}
	if p0.InRates["HashJoin"] != 0 {
		t.Errorf("the join's rows/s is %v before any insert", p0.InRates["HashJoin"])
	}
	if p0.SourceRows != "0" || p0.SinkEff == "" {
		t.Errorf("before inserts: source rows %q, sink effective guarantee %q", p0.SourceRows, p0.SinkEff)
	}
	if p0.Epoch < int64(committed0) {
		t.Errorf("the page shows committed epoch %d, /api/state had %d before", p0.Epoch, committed0)
	}

	// 3 customers in 2 regions, 600 orders over 3 statements.
	ExecAll(t, conn, `INSERT INTO dash_customers VALUES (1, 'east'), (2, 'west'), (3, 'east')`)
	for s := 0; s < 3; s++ {
		var vals []string
		for i := 0; i < 200; i++ {
			id := s*200 + i
			vals = append(vals, fmt.Sprintf("(%d, %d, %d)", id, id%3+1, id%10))
		}
		ExecAll(t, conn, "INSERT INTO dash_orders VALUES "+strings.Join(vals, ","))
	}
	var sawRate float64
	t.Logf("%s: %s", time.Since(start).Round(time.Millisecond), "inserts")
	var last dashProbe
	deadline := time.Now().Add(20 * time.Second)
	for ; time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		last = probe()
		sawRate = max(sawRate, last.InRates["HashJoin"])
		if sawRate > 0 && last.Epoch > p0.Epoch && last.SourceRows == "600" && last.Updates >= p0.Updates+3 {
			break
		}
	}
	if sawRate <= 0 {
		t.Errorf("the join's rows/s never moved after 603 rows were inserted (page: %+v)", last)
	}
	if last.Epoch <= p0.Epoch {
		t.Errorf("the committed epoch stayed at %d", last.Epoch)
	}
	if last.SourceRows != "600" {
		t.Errorf("the page shows %q rows read from dash_orders, want 600", last.SourceRows)
	}
	if last.Updates < p0.Updates+3 || last.Conn != "live" {
		t.Errorf("the event stream delivered %d updates after %d (connection %q)", last.Updates, p0.Updates, last.Conn)
	}
	if !slices.Contains(last.Q5Kinds, "WindowTopCount") || !slices.Contains(last.Q5Kinds, "Source") {
		t.Errorf("nexmark_q5 drawn as %v, want its source and its window top count", last.Q5Kinds)
	}
	if last.Charts != 3 {
		t.Errorf("the page draws %d of its 3 charts", last.Charts)
	}
	// The history the charts draw: sampled every second (the first sample
	// only sets the baseline, so a server a second old has one point), the
	// bid source keeps it above zero.
	var peak float64
	var hist []server.DashSample
	for ; ; time.Sleep(200 * time.Millisecond) {
		hist, peak = getDashState(t, base).History, 0
		for _, h := range hist {
			peak = max(peak, h.RowsPerSecond)
		}
		if (len(hist) >= 2 && peak > 0) || time.Now().After(deadline) {
			break
		}
	}
	if len(hist) < 2 || peak <= 0 {
		t.Errorf("/api/state history = %+v, want samples with source rows/s", hist)
	}
	// The view's rows, exactly: east has the customers 1 and 3.
	got, err := QueryText(ctx, conn, `SELECT region, n, total FROM dash_revenue ORDER BY region`)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"east 400 1800", "west 200 900"}; !slices.Equal(got.Lines(), want) {
		t.Errorf("dash_revenue = %q, want %q", got.Lines(), want)
	}
	// The sink's delivery shows on the page: 2 regions inserted, then
	// updated as orders arrived (at least the two inserts).
	for ; time.Now().Before(deadline) && (last.SinkRows == "" || last.SinkRows == "0"); time.Sleep(100 * time.Millisecond) {
		last = probe()
	}
	if last.SinkRows == "" || last.SinkRows == "0" {
		t.Errorf("the page shows %q rows written by dash_out", last.SinkRows)
	}

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	out := os.Getenv("SLUICE_DASHBOARD_PNG")
	if out == "" {
		out = filepath.Join(t.TempDir(), "dashboard.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("dashboard: %d updates, join up to %.0f rows/s, epoch %d -> %d; screenshot %s (%d KiB)",
		last.Updates, sawRate, p0.Epoch, last.Epoch, out, len(png)>>10)
}

func getDashState(t *testing.T, base string) server.DashboardState {
	t.Helper()
	resp, err := http.Get(base + "/api/state")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/json" {
		t.Fatalf("/api/state: %s, Content-Type %q", resp.Status, ct)
	}
	var st server.DashboardState
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("/api/state: %v", err)
	}
	return st
}

func dashJob(t *testing.T, st server.DashboardState, name string) server.DashJob {
	t.Helper()
	for _, j := range st.Jobs {
		if j.Name == name {
			if j.Status != "running" {
				t.Errorf("job %s is %s: %s", name, j.Status, j.Error)
			}
			return j
		}
	}
	t.Fatalf("/api/state has no job %s", name)
	return server.DashJob{}
}

// checkEventStream reads three events from /api/events and checks that
// each is a newer snapshot.
func checkEventStream(t *testing.T, base string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/events?interval=100", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("/api/events Content-Type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<22)
	var times []time.Time
	for len(times) < 3 && sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var st server.DashboardState
		if err := json.Unmarshal([]byte(data), &st); err != nil {
			t.Fatalf("event: %v", err)
		}
		if len(st.Jobs) == 0 {
			t.Errorf("an event with no jobs")
		}
		times = append(times, st.Time)
	}
	if len(times) < 3 {
		t.Fatalf("/api/events gave %d events: %v", len(times), sc.Err())
	}
	if !times[0].Before(times[1]) || !times[1].Before(times[2]) {
		t.Errorf("event times %v do not advance", times)
	}
}
