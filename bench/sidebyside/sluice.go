package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/twmb/franz-go/pkg/kgo"
)

// checkpointInterval, when set, is passed to every sluice as
// --checkpoint-interval (main's flag).
var checkpointInterval string

// benchTopic is the Kafka topic of the bids (one partition, so that event
// time is in order as in the file).
const benchTopic = "bench20_bids"

// broker is a testbroker process (kfake) on 127.0.0.1.
type broker struct {
	cmd    *exec.Cmd
	addr   string
	exited chan struct{} // closed when the process has exited
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

// startBroker starts the testbroker and preloads the topic with the
// file's lines, one record each.
func startBroker(ctx context.Context, bin, work, input string) (*broker, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	log, err := os.Create(filepath.Join(work, "broker.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--listen", addr, "--data-dir", filepath.Join(work, "kafka"), "--partitions", "1", "--topics", benchTopic)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	b := &broker{cmd: cmd, addr: addr, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(b.exited) }()
	if err := waitDial(addr, 30*time.Second, b.exited); err != nil {
		b.stop()
		return nil, err
	}
	if err := preload(ctx, addr, input); err != nil {
		b.stop()
		return nil, fmt.Errorf("preloading %s: %w", benchTopic, err)
	}
	return b, nil
}

func (b *broker) stop() {
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.exited:
	case <-time.After(10 * time.Second):
		b.cmd.Process.Kill()
		<-b.exited
	}
}

// preload produces every line of input to the topic and waits for the
// acknowledgements.
func preload(ctx context.Context, addr, input string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(benchTopic),
		kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchMaxBytes(1<<20), kgo.MaxBufferedRecords(200_000),
		kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		return err
	}
	defer cl.Close()
	f, err := os.Open(input)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var failed error
	errc := make(chan error, 1)
	for {
		line, err := r.ReadBytes('\n')
		if v := bytes.TrimRight(line, "\n"); len(v) > 0 {
			cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					select {
					case errc <- err:
					default:
					}
				}
			})
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case failed = <-errc:
	default:
	}
	return failed
}

// sluiceRun is one run of a workload by a fresh sluice process.
type sluiceRun struct {
	bin, work string
	source    string // "kafka" or "file"
	workload  string // "w1" or "w2"
	broker    string // the broker's address (source kafka)
	brokerPid int    // its process (source kafka)
	input     string // the input file (source file), under work/files
	want      results
	name      string        // distinguishes the run's sink directory
	profile   time.Duration // when set, a CPU profile of this long is saved
}

// sourceDDL returns the CREATE SOURCE of the bids.
func (r *sluiceRun) sourceDDL() string {
	cols := `(auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, date_time TIMESTAMP, extra VARCHAR,
		WATERMARK FOR date_time AS date_time - INTERVAL '1' SECOND)`
	if r.source == "kafka" {
		return `CREATE SOURCE bids ` + cols + ` WITH (connector = 'kafka', topic = '` + benchTopic + `',
			properties.bootstrap.server = '` + r.broker + `', scan.startup.mode = 'earliest', scan.bounded = 'latest')
			FORMAT PLAIN ENCODE JSON`
	}
	return `CREATE SOURCE bids ` + cols + ` WITH (connector = 'file', path = '` + filepath.Dir(r.input) + `',
		pattern = '` + filepath.Base(r.input) + `') FORMAT PLAIN ENCODE JSON`
}

// sinkDDL returns the CREATE SINK of the workload, into dir.
func (r *sluiceRun) sinkDDL(dir string) string {
	with := ` WITH (connector = 'file', path = '` + dir + `', delivery = 'EXACTLY_ONCE') FORMAT PLAIN ENCODE JSON`
	if r.workload == "w1" {
		return `CREATE SINK w1 AS SELECT auction, bidder, price, date_time FROM bids WHERE price > 10000` + with
	}
	return `CREATE SINK w2 AS SELECT auction, window_start, count(*) AS n, max(price) AS max_price
		FROM TUMBLE(bids, date_time, INTERVAL '10' SECOND) GROUP BY auction, window_start
		EMIT ON WINDOW CLOSE` + with
}

// run starts sluice on a fresh data directory, creates the source, then
// (timed from here) the sink, and waits until the sink has written as
// many rows as the reference holds. CPU is the sluice process's from
// CREATE SINK to the last row, peak RSS its VmHWM.
func (r *sluiceRun) run(ctx context.Context) (measured, error) {
	var m measured
	addr, err := freeAddr()
	if err != nil {
		return m, err
	}
	httpAddr, err := freeAddr()
	if err != nil {
		return m, err
	}
	data := filepath.Join(r.work, "data-"+r.name)
	defer os.RemoveAll(data)
	log, err := os.Create(filepath.Join(r.work, "sluice-"+r.name+".log"))
	if err != nil {
		return m, err
	}
	defer log.Close()
	args := []string{"--listen", addr, "--data-dir", data, "--file-root", filepath.Join(r.work, "files"),
		"--http", httpAddr, "--unix-socket-dir", ""}
	if checkpointInterval != "" {
		args = append(args, "--checkpoint-interval", checkpointInterval)
	}
	cmd := exec.Command(r.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return m, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}()
	if err := waitDial(addr, 60*time.Second, exited); err != nil {
		return m, err
	}
	conn, err := pgx.Connect(ctx, "postgres://sluice@"+addr+"/sluice?sslmode=disable")
	if err != nil {
		return m, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, r.sourceDDL()); err != nil {
		return m, fmt.Errorf("CREATE SOURCE: %w", err)
	}
	sinkDir := filepath.Join(r.work, "files", "out-"+r.name)
	defer os.RemoveAll(sinkDir)
	pid := cmd.Process.Pid
	m.Load = loadAvg()
	cpu0, err := procCPU(pid)
	if err != nil {
		return m, err
	}
	var brokerCPU0 float64
	if r.brokerPid != 0 {
		if brokerCPU0, err = procCPU(r.brokerPid); err != nil {
			return m, err
		}
	}
	start := time.Now()
	if _, err := conn.Exec(ctx, r.sinkDDL(sinkDir)); err != nil {
		return m, fmt.Errorf("CREATE SINK: %w", err)
	}
	var prof chan error
	if r.profile > 0 {
		prof = make(chan error, 1)
		go func() { prof <- saveProfile(ctx, httpAddr, r.profile, filepath.Join(r.work, "cpu-"+r.name+".pprof")) }()
	}
	// Poll the sink's directory: part files appear whole (renamed into
	// place), so counting their lines counts committed rows.
	counted := map[string]int64{}
	var rows int64
	lastGrowth := time.Now()
	for rows < r.want.rows {
		select {
		case <-exited:
			return m, fmt.Errorf("sluice exited (see %s)", log.Name())
		case <-ctx.Done():
			return m, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		m.PeakAnonKiB = max(m.PeakAnonKiB, statusKiB(fmt.Sprint(pid), "RssAnon:"))
		files, err := partFiles(sinkDir)
		if err != nil {
			return m, err
		}
		for _, f := range files {
			if _, ok := counted[f]; ok {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				return m, err
			}
			counted[f] = int64(bytes.Count(b, []byte{'\n'}))
			rows += counted[f]
			lastGrowth = time.Now()
		}
		if time.Since(lastGrowth) > 2*time.Minute {
			return m, fmt.Errorf("the sink stopped at %d of %d rows", rows, r.want.rows)
		}
	}
	m.Seconds = time.Since(start).Seconds()
	cpu1, err := procCPU(pid)
	if err != nil {
		return m, err
	}
	m.CPUSeconds = cpu1 - cpu0
	if r.brokerPid != 0 {
		b, err := procCPU(r.brokerPid)
		if err != nil {
			return m, err
		}
		m.BrokerCPUSeconds = b - brokerCPU0
	}
	m.PeakRSSKiB = hwmKiB(fmt.Sprint(pid))
	m.Events = -1 // set by the caller: the bids in the input
	if prof != nil {
		if err := <-prof; err != nil {
			return m, err
		}
	}
	// Anything written after the expected rows is a duplicate: give the
	// next checkpoint (1 s) the chance to show it before comparing.
	time.Sleep(1500 * time.Millisecond)
	files, err := partFiles(sinkDir)
	if err != nil {
		return m, err
	}
	got, err := readResults(r.workload, files)
	if err != nil {
		return m, err
	}
	if d := diff(r.want, got); d != "" {
		return m, fmt.Errorf("sluice (%s source) %s output differs from the reference: %s", r.source, r.workload, d)
	}
	return m, nil
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
