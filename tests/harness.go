package tests

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Environment knobs. None is needed for a normal run.
const (
	// envBinary names a prebuilt sluice binary to use instead of building one.
	envBinary = "SLUICE_BIN"
	// envBuildFlags adds flags to `go build`, e.g. "-race".
	envBuildFlags = "SLUICE_BUILD_FLAGS"
	// envLogDir keeps the full stderr of every server started by the tests
	// in that directory (the test log only gets a tail, on failure).
	envLogDir = "SLUICE_TEST_LOG_DIR"
)

const (
	// startTimeout bounds how long a server may take to accept connections,
	// including recovery after a kill.
	startTimeout = 60 * time.Second
	// stopTimeout bounds a clean shutdown after SIGTERM.
	stopTimeout = 30 * time.Second
	// logTail is how much of a server's stderr goes into a failing test's log.
	logTail = 64 << 10
)

// ---------------------------------------------------------------------------
// Building the binary.

var build struct {
	once sync.Once
	dir  string // temporary directory holding the binary, removed by CleanupBinary
	path string
	err  error
}

// tools are the other binaries of the module built by Tool, by package.
var tools struct {
	sync.Mutex
	dir   string // temporary directory holding them, removed by CleanupBinary
	built map[string]string
}

// Binary returns the path of a sluice binary built from ./cmd/sluice, building
// it on first use. Every test of one `go test` run shares the same binary.
func Binary(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		if p := os.Getenv(envBinary); p != "" {
			build.path, build.err = filepath.Abs(p)
			return
		}
		root, err := ModuleRoot()
		if err != nil {
			build.err = err
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			build.err = fmt.Errorf("finding the go command to build sluice: %w", err)
			return
		}
		build.dir, err = os.MkdirTemp("", "sluice-e2e-bin-")
		if err != nil {
			build.err = err
			return
		}
		build.path = filepath.Join(build.dir, "sluice")
		args := []string{"build", "-o", build.path, "-ldflags", StampFlag(root)}
		args = append(args, strings.Fields(os.Getenv(envBuildFlags))...)
		args = append(args, "./cmd/sluice")
		cmd := exec.Command(goTool, args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			build.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if build.err != nil {
		t.Fatalf("building sluice: %v", build.err)
	}
	return build.path
}

// BuildStamp names the checkout in root for `sluice --version` (GOFLAGS
// may hold -buildvcs=false, so the stamp is passed at link time): the
// commit, "+dirty" if the tree has changes.
func BuildStamp(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "devel"
	}
	stamp := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		stamp += "+dirty"
	}
	return stamp
}

// StampFlag is the -ldflags value that sets the build stamp of root.
func StampFlag(root string) string { return "-X sluice/storage.buildStamp=" + BuildStamp(root) }

// Tool returns the path of a binary built (without SLUICE_BUILD_FLAGS)
// from pkg, a main package of this module such as "./cmd/testbroker",
// building it on first use.
func Tool(t testing.TB, pkg string) string {
	t.Helper()
	tools.Lock()
	defer tools.Unlock()
	if p, ok := tools.built[pkg]; ok {
		return p
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if tools.dir == "" {
		if tools.dir, err = os.MkdirTemp("", "sluice-e2e-tools-"); err != nil {
			t.Fatal(err)
		}
		tools.built = map[string]string{}
	}
	path := filepath.Join(tools.dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", path, pkg)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	tools.built[pkg] = path
	return path
}

// CleanupBinary removes the binaries built by Binary and Tool. TestMain
// calls it.
func CleanupBinary() {
	if build.dir != "" {
		_ = os.RemoveAll(build.dir)
	}
	if tools.dir != "" {
		_ = os.RemoveAll(tools.dir)
	}
}

// ModuleRoot returns the directory holding the module's go.mod, found by
// walking up from the working directory (the package directory under go test).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// ---------------------------------------------------------------------------
// Server processes.

// Options configure StartServer. The zero value is a server on a free port
// with a fresh data directory and the default checkpoint interval.
type Options struct {
	// DataDir is the --data-dir; empty means a fresh t.TempDir().
	DataDir string
	// Addr is the --listen address; empty means a free 127.0.0.1 port.
	Addr string
	// CheckpointInterval is passed as --checkpoint-interval when non-zero.
	CheckpointInterval time.Duration
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
	// PlainBuild runs a sluice built without SLUICE_BUILD_FLAGS (see
	// Tool), for tests that measure the server's memory: a race build's
	// shadow memory doubles RSS and is never given back.
	PlainBuild bool
	// Env is added to the test's environment for every start, e.g.
	// "SLUICE_CRASHPOINT=sink-before-commit:2"; SetEnv changes it between
	// restarts.
	Env []string

	// Binary, when set, is the sluice binary to run instead of this
	// checkout's (an earlier build, upgrade_test.go); SetBinary changes it
	// between restarts.
	Binary string

	// Command, when set, runs instead of sluice (with exactly these
	// arguments; Addr and DataDir must then be given and match them). Tests
	// of the harness itself run PostgreSQL this way.
	Command []string
	// Credential runs the process as another user.
	Credential *syscall.Credential
	// User and Database to connect as; both default to "sluice".
	User, Database string
	// Password is the password the harness connects with (auth_test.go);
	// SSLMode its sslmode (default disable).
	Password, SSLMode string
}

// Server is one sluice server under test: a data directory and a port, and
// the process currently serving them. Kill, Restart and Stop may be called
// from any goroutine, but not concurrently with each other.
type Server struct {
	t       testing.TB
	bin     string
	Addr    string // host:port the server listens on
	DataDir string
	args    []string
	cred    *syscall.Credential
	user    string
	db      string
	pass    string // Options.Password
	sslmode string
	logs    *logBuffer

	mu struct {
		sync.Mutex
		proc        *process // nil when no process is running
		incarnation int
		env         []string // Options.Env, or what SetEnv set
	}
}

// process is one run of the binary.
type process struct {
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd.Wait has returned
	waitErr error         // valid after done is closed
}

// StartServer starts a sluice server and waits until it accepts pgx
// connections. The process is killed when the test ends, and its stderr is
// written to the test log if the test failed.
func StartServer(t testing.TB, opts Options) *Server {
	t.Helper()
	s := NewServer(t, opts)
	if err := s.Start(); err != nil {
		t.Fatalf("starting sluice: %v", err)
	}
	return s
}

// NewServer prepares a server without starting it; see StartServer.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	var bin string
	var args []string
	if len(opts.Command) > 0 {
		if opts.Addr == "" || opts.DataDir == "" {
			t.Fatal("Options.Command needs Options.Addr and Options.DataDir")
		}
		bin, args = opts.Command[0], opts.Command[1:]
	} else {
		bin = Binary(t)
		if opts.Binary != "" {
			bin = opts.Binary
		}
		if opts.PlainBuild {
			bin = Tool(t, "./cmd/sluice")
		}
		if opts.DataDir == "" {
			opts.DataDir = filepath.Join(t.TempDir(), "data")
		}
		if opts.Addr == "" {
			opts.Addr = FreeAddr(t)
		}
		// No Unix socket unless a test asks for one (ExtraArgs come later
		// and win): killed servers would leave socket files in /tmp. No
		// HTTP endpoint either (earlier builds, opts.Binary, have none):
		// parallel servers would race for its default port (a test passes
		// --http with a FreeAddr).
		args = []string{"--listen", opts.Addr, "--data-dir", opts.DataDir, "--unix-socket-dir", ""}
		if opts.Binary == "" {
			args = append(args, "--http", "")
		}
		if opts.CheckpointInterval != 0 {
			args = append(args, "--checkpoint-interval", opts.CheckpointInterval.String())
		}
		args = append(args, opts.ExtraArgs...)
	}
	s := &Server{
		t: t, bin: bin, Addr: opts.Addr, DataDir: opts.DataDir, args: args, cred: opts.Credential,
		user: cmpOr(opts.User, "sluice"), db: cmpOr(opts.Database, "sluice"), logs: newLogBuffer(),
		pass: opts.Password, sslmode: cmpOr(opts.SSLMode, "disable"),
	}
	s.mu.env = opts.Env
	t.Cleanup(func() {
		s.mu.Lock()
		p := s.mu.proc
		s.mu.proc = nil
		s.mu.Unlock()
		if p != nil {
			_ = p.signalGroup(syscall.SIGKILL)
			<-p.done
		}
		if t.Failed() {
			t.Logf("server output (%s, last %d KiB):\n%s", s.Addr, logTail>>10, s.logs.Tail(logTail))
		}
		s.saveLog()
	})
	return s
}

// Start starts the process and waits until it accepts connections.
func (s *Server) Start() error {
	p, err := s.spawn()
	if err != nil {
		return err
	}
	return s.waitReady(p)
}

// StartNoWait starts the process without waiting for it to accept
// connections: a crash test uses it to kill a server in the middle of its
// recovery.
func (s *Server) StartNoWait() error {
	_, err := s.spawn()
	return err
}

func (s *Server) spawn() (*process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.mu.proc; p != nil {
		select {
		case <-p.done: // it crashed on its own; starting again is a restart
			fmt.Fprintf(s.logs, "\n=== sluice had exited: %v\n", p.waitErr)
		default:
			return nil, errors.New("server already running")
		}
	}
	s.mu.incarnation++
	fmt.Fprintf(s.logs, "\n=== sluice run %d at %s: %s%s %s\n", s.mu.incarnation, time.Now().Format("15:04:05.000"),
		envPrefix(s.mu.env), s.bin, strings.Join(s.args, " "))
	cmd := exec.Command(s.bin, s.args...)
	if len(s.mu.env) > 0 {
		cmd.Env = append(os.Environ(), s.mu.env...)
	}
	cmd.Stdout = s.logs
	cmd.Stderr = s.logs
	cmd.SysProcAttr = sysProcAttr(s.cred)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	s.mu.proc = p
	return p, nil
}

// waitReady polls with pgx connections until one succeeds, the process exits
// or startTimeout passes.
func (s *Server) waitReady(p *process) error {
	deadline := time.Now().Add(startTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("sluice exited before accepting connections (%v); stderr:\n%s",
				p.waitErr, s.logs.Tail(logTail))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.ConnString())
		if err == nil {
			err = conn.Ping(ctx)
			_ = conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return nil
		}
		lastErr = err
		select {
		case <-p.done:
		case <-time.After(25 * time.Millisecond):
		}
	}
	return fmt.Errorf("sluice did not accept connections within %v (last error: %v); stderr:\n%s",
		startTimeout, lastErr, s.logs.Tail(logTail))
}

// signalGroup signals the process and any children it started (they share
// its process group), the way a machine losing power stops all of them.
func (p *process) signalGroup(sig syscall.Signal) error {
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// Kill sends SIGKILL to the server (and its process group) and waits for it
// to be gone.
func (s *Server) Kill() error {
	s.mu.Lock()
	p := s.mu.proc
	s.mu.proc = nil
	s.mu.Unlock()
	if p == nil {
		return errors.New("server not running")
	}
	fmt.Fprintf(s.logs, "\n=== SIGKILL at %s\n", time.Now().Format("15:04:05.000"))
	if err := p.signalGroup(syscall.SIGKILL); err != nil {
		select {
		case <-p.done: // it had already exited
			return fmt.Errorf("sluice had exited before the kill: %v", p.waitErr)
		default:
			return err
		}
	}
	<-p.done
	return nil
}

// SetEnv replaces the environment added to the next starts (see
// Options.Env); it does not affect a running process.
func (s *Server) SetEnv(env ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.env = append([]string(nil), env...)
}

// SetBinary sets the sluice binary of the next start (an upgrade test
// restarts the data directory of an earlier build with this one).
func (s *Server) SetBinary(bin string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bin = bin
}

func envPrefix(env []string) string {
	if len(env) == 0 {
		return ""
	}
	return strings.Join(env, " ") + " "
}

// Restart starts a new process on the same data directory and port. The
// previous process must have been killed or stopped.
func (s *Server) Restart() error {
	return s.Start()
}

// StopRestart closes conn, stops the server cleanly, starts it again and
// returns a new connection (the test fails if any step does).
func (s *Server) StopRestart(t testing.TB, conn *pgx.Conn) *pgx.Conn {
	t.Helper()
	conn.Close(context.Background())
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	return s.Connect(t)
}

// Stop sends SIGTERM and waits for a clean exit. It returns an error if the
// process does not exit within stopTimeout (it is then killed) or exits
// with a non-zero status.
func (s *Server) Stop() error {
	s.mu.Lock()
	p := s.mu.proc
	s.mu.proc = nil
	s.mu.Unlock()
	if p == nil {
		return errors.New("server not running")
	}
	fmt.Fprintf(s.logs, "\n=== SIGTERM at %s\n", time.Now().Format("15:04:05.000"))
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		<-p.done
		return fmt.Errorf("sending SIGTERM: %v (exit: %v)", err, p.waitErr)
	}
	select {
	case <-p.done:
		if p.waitErr != nil {
			return fmt.Errorf("sluice exited uncleanly after SIGTERM: %v", p.waitErr)
		}
		return nil
	case <-time.After(stopTimeout):
		_ = p.signalGroup(syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("sluice did not exit within %v of SIGTERM", stopTimeout)
	}
}

// Running reports whether a process is serving (it may have crashed since).
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.proc == nil {
		return false
	}
	select {
	case <-s.mu.proc.done:
		return false
	default:
		return true
	}
}

// Exited reports whether the current process exited on its own (a crash),
// with its exit error.
func (s *Server) Exited() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.proc == nil {
		return false, nil
	}
	select {
	case <-s.mu.proc.done:
		return true, s.mu.proc.waitErr
	default:
		return false, nil
	}
}

// Logs returns the stderr and stdout of every run of this server so far
// (bounded; the oldest output is dropped first).
func (s *Server) Logs() string { return s.logs.String() }

// Port returns the port number the server listens on.
func (s *Server) Port() string {
	_, port, _ := net.SplitHostPort(s.Addr)
	return port
}

// Host returns the host the server listens on.
func (s *Server) Host() string {
	host, _, _ := net.SplitHostPort(s.Addr)
	return host
}

// ConnString returns a connection URL for the server in pgx's default
// (extended protocol, cached statements) mode.
func (s *Server) ConnString() string {
	userinfo := url.User(s.user)
	if s.pass != "" {
		userinfo = url.UserPassword(s.user, s.pass)
	}
	return "postgres://" + userinfo.String() + "@" + s.Addr + "/" + s.db + "?sslmode=" + s.sslmode + "&connect_timeout=5"
}

// SimpleConnString returns a connection URL that makes pgx use the simple
// query protocol for everything.
func (s *Server) SimpleConnString() string {
	return s.ConnString() + "&default_query_exec_mode=simple_protocol"
}

// Connect opens a pgx connection in the default (extended protocol) mode,
// closed when the test ends.
func (s *Server) Connect(t testing.TB) *pgx.Conn {
	t.Helper()
	return MustConnect(t, s.ConnString())
}

// ConnectSimple opens a pgx connection in simple-protocol mode, closed when
// the test ends.
func (s *Server) ConnectSimple(t testing.TB) *pgx.Conn {
	t.Helper()
	return MustConnect(t, s.SimpleConnString())
}

// ConnectMode opens a pgx connection whose default query mode is mode.
func (s *Server) ConnectMode(t testing.TB, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	return MustConnectMode(t, s.ConnString(), mode)
}

func (s *Server) saveLog() {
	dir := os.Getenv(envLogDir)
	if dir == "" {
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(s.t.Name()) + "-" + s.Port() + ".log"
	if err := os.MkdirAll(dir, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(dir, name), []byte(s.logs.String()), 0o644)
	}
}

// FreeAddr returns a 127.0.0.1 address with a port that was free a moment ago.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}

// logBuffer collects a process's output, keeping at most logMax bytes.
type logBuffer struct {
	mu  sync.Mutex
	buf []byte
}

const logMax = 8 << 20

func newLogBuffer() *logBuffer { return &logBuffer{} }

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > logMax {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-logMax/2:]...)
	}
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// Tail returns the last n bytes, starting at a line boundary.
func (b *logBuffer) Tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.buf) <= n {
		return string(b.buf)
	}
	tail := b.buf[len(b.buf)-n:]
	if i := bytes.IndexByte(tail, '\n'); i >= 0 {
		tail = tail[i+1:]
	}
	return "…\n" + string(tail)
}

// ---------------------------------------------------------------------------
// Connections and results.

// Connect opens a pgx connection to connString.
func Connect(ctx context.Context, connString string) (*pgx.Conn, error) {
	return pgx.Connect(ctx, connString)
}

// MustConnect opens a pgx connection closed when the test ends.
func MustConnect(t testing.TB, connString string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, connString)
	if err != nil {
		t.Fatalf("connecting to %s: %v", connString, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// MustConnectMode opens a pgx connection with the given default query mode,
// closed when the test ends.
func MustConnectMode(t testing.TB, connString string, mode pgx.QueryExecMode) *pgx.Conn {
	t.Helper()
	cfg, err := pgx.ParseConfig(connString)
	if err != nil {
		t.Fatalf("parsing %s: %v", connString, err)
	}
	cfg.DefaultQueryExecMode = mode
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connecting to %s: %v", connString, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TextResult is a query's result with every value in Postgres text format.
type TextResult struct {
	Fields     []pgconn.FieldDescription
	Rows       [][]string // rendered with RenderValue
	CommandTag pgconn.CommandTag
}

// ColumnNames returns the result's column names.
func (r *TextResult) ColumnNames() []string {
	names := make([]string, len(r.Fields))
	for i, f := range r.Fields {
		names[i] = f.Name
	}
	return names
}

// Lines returns each row as its values joined by single spaces.
func (r *TextResult) Lines() []string {
	lines := make([]string, len(r.Rows))
	for i, row := range r.Rows {
		lines[i] = strings.Join(row, " ")
	}
	return lines
}

// RenderValue renders one raw text-format value the way logic tests spell
// it: NULL for SQL NULL, · for the empty string, otherwise the text as is.
func RenderValue(raw []byte) string {
	switch {
	case raw == nil:
		return "NULL"
	case len(raw) == 0:
		return "·"
	default:
		return string(raw)
	}
}

// QueryText runs sql in the connection's default query mode, asking for
// text-format results, and returns the rendered rows. The connection stays
// usable after a server-side error.
func QueryText(ctx context.Context, conn *pgx.Conn, sql string, args ...any) (*TextResult, error) {
	qargs := append([]any{pgx.QueryResultFormats{pgx.TextFormatCode}}, args...)
	rows, err := conn.Query(ctx, sql, qargs...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	res := &TextResult{}
	res.Fields = append(res.Fields, rows.FieldDescriptions()...)
	for rows.Next() {
		raw := rows.RawValues()
		row := make([]string, len(raw))
		for i, v := range raw {
			row[i] = RenderValue(v)
		}
		res.Rows = append(res.Rows, row)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	res.CommandTag = rows.CommandTag()
	return res, nil
}

// ExecAll runs statements one after another, failing the test on the first
// error. It uses Query rather than Exec so that, in the extended mode, even
// statements without parameters go through Parse/Bind/Execute.
func ExecAll(t testing.TB, conn *pgx.Conn, stmts ...string) {
	t.Helper()
	for _, stmt := range stmts {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := QueryText(ctx, conn, stmt)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// PgCode returns the SQLSTATE of a server error, or "" if err is not one.
func PgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// ---------------------------------------------------------------------------
// The machine's PostgreSQL and Redis, for reference runs and connector tests.

const (
	// PostgresAddr is the machine's PostgreSQL 15 server.
	PostgresAddr = "127.0.0.1:5432"
	// RedisAddr is the machine's Redis server.
	RedisAddr = "127.0.0.1:6379"

	postgresStartCmd = `pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start`
	redisStartCmd    = `redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log`
)

var services sync.Mutex // serialises the start-if-down checks

// PostgresURL returns a connection URL for database db on the machine's
// PostgreSQL as the postgres superuser.
func PostgresURL(db string) string {
	return "postgres://postgres@" + PostgresAddr + "/" + db + "?sslmode=disable&connect_timeout=5"
}

// EnsurePostgres makes sure the machine's PostgreSQL accepts connections,
// starting it if it does not. It fails the test if it cannot: tests that
// need PostgreSQL never skip.
func EnsurePostgres(t testing.TB) {
	t.Helper()
	services.Lock()
	defer services.Unlock()
	ping := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, PostgresURL("postgres"))
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		return conn.Ping(ctx)
	}
	if err := ensureService("PostgreSQL", postgresStartCmd, ping); err != nil {
		t.Fatal(err)
	}
}

// EnsureRedis makes sure the machine's Redis answers PING, starting it if it
// does not. It fails the test if it cannot.
func EnsureRedis(t testing.TB) {
	t.Helper()
	services.Lock()
	defer services.Unlock()
	for _, dir := range []string{"/var/lib/redis", "/var/log/redis"} {
		_ = os.MkdirAll(dir, 0o755)
	}
	if err := ensureService("Redis", redisStartCmd, pingRedis); err != nil {
		t.Fatal(err)
	}
}

func pingRedis() error { return pingRedisAt(RedisAddr) }

// pingRedisAt sends PING to the Redis server at addr.
func pingRedisAt(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("redis answered PING with %q", line)
	}
	return nil
}

func ensureService(name, startCmd string, ping func() error) error {
	if ping() == nil {
		return nil
	}
	out, err := exec.Command("sh", "-c", startCmd).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s is down and `%s` failed: %v\n%s", name, startCmd, err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := ping()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still down 30s after `%s` (%s): %v", name, startCmd, out, err)
		}
		time.Sleep(100 * time.Millisecond) // polling, bounded by the deadline
	}
}

// FreshPostgresDB creates an empty database on the machine's PostgreSQL,
// dropped when the test ends, and returns its connection URL.
func FreshPostgresDB(t testing.TB, name string) string {
	t.Helper()
	EnsurePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, PostgresURL("postgres"))
	if err != nil {
		t.Fatalf("connecting to PostgreSQL: %v", err)
	}
	defer admin.Close(ctx)
	ident := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
		t.Fatalf("dropping database %s: %v", name, err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+ident); err != nil {
		t.Fatalf("creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		admin, err := pgx.Connect(ctx, PostgresURL("postgres"))
		if err != nil {
			t.Errorf("connecting to PostgreSQL to drop %s: %v", name, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			t.Errorf("dropping database %s: %v", name, err)
		}
	})
	return PostgresURL(name)
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// itoa is strconv.Itoa for int64, for building SQL in tests.
func itoa(n int64) string { return strconv.FormatInt(n, 10) }
