package tests

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// stuckProbe is what TestDashboardStuckBarrier reads from the page's
// stuck-barrier panel.
type stuckProbe struct {
	Visible bool     `json:"visible"`
	Epoch   string   `json:"epoch"`
	Holding []string `json:"holding"` // "job operator kind phase"
	Tops    []string `json:"tops"`
	Behind  []string `json:"behind"`
	Details int      `json:"details"`
}

const stuckProbeJS = `(() => {
  const sec = document.getElementById("stuck-barrier");
  const rows = (cls) => [...document.querySelectorAll("#stuck-ops tr." + cls)];
  const cell = (tr, i) => tr.children[i].textContent;
  return {
    visible: !!sec && !sec.hidden && sec.offsetHeight > 0,
    epoch: document.querySelector("#stuck-summary .stuck-epoch")?.textContent ?? "",
    holding: rows("holding").map((tr) => [0, 1, 2, 3].map((i) => cell(tr, i)).join(" ")),
    tops: rows("holding").map((tr) => tr.querySelector("td.top").firstChild?.textContent ?? ""),
    behind: rows("behind").map((tr) => tr.dataset.job),
    details: document.querySelectorAll("#stuck-ops details pre").length,
  };
})()`

// TestDashboardStuckBarrier: an operator (the Project of view held) and a
// sink (out) blocked on purpose (SLUICE_FAILPOINT=block:…) hold an epoch;
// the dashboard, in headless Chromium, shows the stuck-barrier panel with
// that epoch, those two operators as holding it, each with the function
// its goroutines are in (the failpoint) and their goroutine profile, and
// no operator of the free view; sluice_catalog.stuck_barrier lists the
// same two. Before the rows arrive the panel is hidden. A screenshot is
// saved (SLUICE_DASHBOARD_STUCK_PNG, or a temporary directory).
func TestDashboardStuckBarrier(t *testing.T) {
	chrome := chromium(t)
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

	opts := append(slices.Clone(chromedp.DefaultExecAllocatorOptions[:]),
		chromedp.ExecPath(chrome), chromedp.Flag("headless", true), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true), chromedp.WindowSize(1500, 1100))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelTab()
	if err := chromedp.Do(tab, chromedp.Navigate("http://"+httpAddr+"/?interval=250")); err != nil {
		t.Fatalf("opening the dashboard: %v", err)
	}
	ctx, cancel := context.WithTimeout(tab, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.job[data-job="held"] svg g.node`))); err != nil {
		t.Fatalf("waiting for the dataflow graph: %v", err)
	}
	probe := func() stuckProbe {
		p, err := chromedp.Run(ctx, chromedp.Evaluate[stuckProbe](stuckProbeJS))
		if err != nil {
			t.Fatalf("reading the page: %v", err)
		}
		return p
	}
	if p := probe(); p.Visible || len(p.Holding) != 0 {
		t.Fatalf("the stuck-barrier panel shows before any row: %+v", p)
	}
	wantRows(t, conn, `SELECT count(*) FROM sluice_catalog.stuck_barrier`, "0")

	// A session that wrote reads after its writes commit (which they do
	// not here): the relation is read from another one.
	reader := srv.Connect(t)
	ExecAll(t, conn, `INSERT INTO t VALUES (1, 1), (2, 2)`)
	start := time.Now()
	var p stuckProbe
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if p = probe(); p.Visible && len(p.Holding) == 2 {
			break
		}
	}
	t.Logf("the panel named %d holders %v after the insert", len(p.Holding), time.Since(start).Round(100*time.Millisecond))
	slices.Sort(p.Holding)
	if want := []string{"held 1-Project Project processing (holding)", "out 2-Sink Sink processing (holding)"}; !p.Visible || !slices.Equal(p.Holding, want) {
		t.Fatalf("the panel shows %+v, want holding %q", p, want)
	}
	for _, top := range p.Tops {
		if !strings.Contains(top, "failpoints.hook") {
			t.Errorf("a holder's goroutines are in %q, want the failpoint", top)
		}
	}
	if p.Details != 2 {
		t.Errorf("the panel carries %d goroutine profiles, want 2", p.Details)
	}
	for _, j := range p.Behind {
		if j != "held" && j != "out" {
			t.Errorf("an operator of job %s shown behind the barrier", j)
		}
	}
	if p.Epoch == "" {
		t.Errorf("the panel names no epoch")
	}
	wantRows(t, reader, `SELECT epoch, job, operator, kind, phase, top LIKE '%failpoints.hook%' FROM sluice_catalog.stuck_barrier WHERE holding ORDER BY job`,
		p.Epoch+" held 1-Project Project processing t\n"+p.Epoch+" out 2-Sink Sink processing t")

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	out := os.Getenv("SLUICE_DASHBOARD_STUCK_PNG")
	if out == "" {
		out = filepath.Join(t.TempDir(), "dashboard-stuck.png")
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("stuck-barrier panel: epoch %s, holding %q; screenshot %s (%d KiB)", p.Epoch, p.Holding, out, len(png)>>10)
}
