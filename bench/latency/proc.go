package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// proc is a child process: the broker or a sluice server.
type proc struct {
	cmd    *exec.Cmd
	addr   string        // its listening address
	http   string        // sluice's HTTP address (pprof)
	pid    int           //
	data   string        // a data directory removed at stop
	exited chan struct{} // closed when the process has exited
}

func start(argv []string, logPath, addr string) (*proc, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	p := &proc{cmd: cmd, addr: addr, pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() { cmd.Wait(); log.Close(); close(p.exited) }()
	if err := waitDial(addr, 60*time.Second, p.exited); err != nil {
		p.stop()
		return nil, fmt.Errorf("%w (see %s)", err, logPath)
	}
	return p, nil
}

// startBroker starts the testbroker with a fresh data directory.
func startBroker(bin, work string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(work, "kafka")
	p, err := start([]string{bin, "--listen", addr, "--data-dir", data, "--partitions", "1"}, filepath.Join(work, "broker.log"), addr)
	if err != nil {
		return nil, err
	}
	p.data = data
	return p, nil
}

// startSluice starts a sluice server with a fresh data directory and the
// given checkpoint interval.
func startSluice(bin, work, tag string, interval time.Duration) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(work, "data-"+tag)
	p, err := start([]string{bin, "--listen", addr, "--data-dir", data, "--http", httpAddr, "--unix-socket-dir", "",
		"--checkpoint-interval", interval.String()}, filepath.Join(work, "sluice-"+tag+".log"), addr)
	if err != nil {
		os.RemoveAll(data)
		return nil, err
	}
	p.http, p.data = httpAddr, data
	return p, nil
}

func (p *proc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
	if p.data != "" {
		os.RemoveAll(p.data)
	}
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// waitDial polls addr until it accepts a connection or d passes.
func waitDial(addr string, d time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(d)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("%s: the process exited before listening", addr)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not listening after %v: %v", addr, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// procCPU is process pid's user+system CPU time in seconds, from
// /proc/PID/stat (fields 14 and 15, in USER_HZ = 100 ticks a second).
func procCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times %q %q", pid, f[11], f[12])
	}
	return float64(ut+st) / 100, nil
}

// loadAvg is the machine's 1-minute load average.
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// saveProfile fetches a CPU profile of d from sluice's HTTP endpoint.
func saveProfile(ctx context.Context, httpAddr string, d time.Duration, path string) error {
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", httpAddr, int(d/time.Second))
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// moduleRoot is the directory of the sluice module's go.mod.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run the latency benchmark inside the sluice module")
	}
	return filepath.Dir(mod), nil
}

// stageMetrics are the sums and counts of the server's latency
// histograms, by metric name (summed over label sets).
type stageMetrics map[string][2]float64

// stages are the histograms that show where an epoch's time goes: the
// barrier's alignment, the synced commit, the whole checkpoint, and the
// sink connector's write and commit of the epoch.
var stages = []struct{ metric, label string }{
	{"sluice_barrier_latency_seconds", "align"},
	{"sluice_checkpoint_commit_seconds", "commit"},
	{"sluice_checkpoint_duration_seconds", "checkpoint"},
	{"sluice_sink_commit_seconds", "kafka-txn"},
}

// scrapeStages reads /metrics.
func scrapeStages(ctx context.Context, httpAddr string) (stageMetrics, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+httpAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	m := stageMetrics{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || strings.HasPrefix(line, "#") {
			continue
		}
		name := f[0]
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		for _, s := range stages {
			switch name {
			case s.metric + "_sum":
				x := m[s.metric]
				x[0] += v
				m[s.metric] = x
			case s.metric + "_count":
				x := m[s.metric]
				x[1] += v
				m[s.metric] = x
			}
		}
	}
	return m, nil
}

// means is the mean of each stage between two scrapes, in ms.
func (m stageMetrics) means(before stageMetrics) string {
	var sb strings.Builder
	for _, s := range stages {
		d, b := m[s.metric], before[s.metric]
		if n := d[1] - b[1]; n > 0 {
			fmt.Fprintf(&sb, " %s %.1f", s.label, (d[0]-b[0])/n*1000)
		}
	}
	return strings.TrimSpace(sb.String())
}
