package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"sluice/server"
	"sluice/web"
)

// defaultHTTP is where the HTTP endpoint listens unless --http says
// otherwise: next to the Postgres port's default (4566).
const defaultHTTP = "127.0.0.1:4567"

// httpFlags configure the HTTP endpoint (README, "Metrics and debugging").
type httpFlags struct {
	addr        string
	allowRemote bool
	set         bool // --http was given
}

func registerHTTPFlags(fs *flag.FlagSet) *httpFlags {
	f := &httpFlags{}
	fs.Func("http", "address of the HTTP endpoint (dashboard at /, /metrics, /debug/pprof); '' turns it off (default "+defaultHTTP+")", func(s string) error {
		f.addr, f.set = s, true
		return nil
	})
	fs.BoolVar(&f.allowRemote, "http-allow-remote", false, "let --http bind a non-loopback address (with a password configured, requests must authenticate as the superuser)")
	return f
}

// httpEndpoint is the running HTTP endpoint.
type httpEndpoint struct {
	srv  *http.Server
	ln   net.Listener
	wg   sync.WaitGroup
	addr net.Addr
	// stopSampler ends the dashboard's history sampler.
	stopSampler context.CancelFunc
}

// startHTTP starts the endpoint of eng. With a password configured
// (password != ""), every request must authenticate with HTTP basic
// authentication as the superuser. A default address that is busy is
// skipped with a warning (returns nil); an address given by --http that
// cannot be bound is an error.
func startHTTP(f *httpFlags, eng *server.Engine, superuser, password string, logf func(string, ...any)) (*httpEndpoint, error) {
	addr := defaultHTTP
	if f.set {
		addr = f.addr
	}
	if addr == "" {
		return nil, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--http %q: %w", addr, err)
	}
	if !isLoopbackHost(host) && !f.allowRemote {
		return nil, fmt.Errorf("refusing to serve HTTP on %s: the endpoint shows the server's internals (metrics, profiles); "+
			"bind a loopback address, or pass --http-allow-remote (and configure a password: requests then authenticate as the superuser)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if !f.set && errors.Is(err, syscall.EADDRINUSE) {
			logf("warning: the default HTTP address %s is busy: no HTTP endpoint (choose one with --http HOST:PORT)", addr)
			return nil, nil
		}
		return nil, fmt.Errorf("HTTP endpoint: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(eng.Gatherer(), promhttp.HandlerOpts{ErrorLog: logAdapter(logf)}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/barrier", func(w http.ResponseWriter, r *http.Request) {
		rep, ok := eng.BarrierReport()
		if r.URL.Query().Get("format") == "text" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			if !ok {
				fmt.Fprintln(w, "no epoch in flight")
				return
			}
			fmt.Fprint(w, rep.Text())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		var v any
		if ok {
			v = rep
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(map[string]any{"in_flight": v})
	})
	done := make(chan struct{}) // closed on shutdown: ends the event streams
	dash := eng.NewDashboard()
	mux.HandleFunc("/api/state", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		if err := json.NewEncoder(w).Encode(dash.State()); err != nil {
			logf("dashboard: %v", err)
		}
	})
	mux.HandleFunc("/api/events", func(w http.ResponseWriter, r *http.Request) { dashboardEvents(w, r, dash, done) })
	mux.Handle("/", web.Handler())
	var h http.Handler = mux
	if password != "" {
		h = basicAuth(mux, superuser, password)
	}
	e := &httpEndpoint{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, ln: ln, addr: ln.Addr()}
	e.srv.RegisterOnShutdown(func() { close(done) })
	ctx, cancel := context.WithCancel(context.Background())
	e.stopSampler = cancel
	e.wg.Add(1)
	go func() { // owned: Close waits for it
		defer e.wg.Done()
		dash.Run(ctx, time.Second)
	}()
	e.wg.Add(1)
	go func() { // owned: Close waits for it
		defer e.wg.Done()
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logf("HTTP endpoint: %v", err)
		}
	}()
	return e, nil
}

// dashboardEvents streams the dashboard's snapshots as Server-Sent Events:
// one at once, then one every interval (?interval=MS, 100 ms to 60 s;
// default 1 s), until the client goes or the endpoint shuts down.
func dashboardEvents(w http.ResponseWriter, r *http.Request, dash *server.Dashboard, done <-chan struct{}) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	interval := time.Second
	if v := r.URL.Query().Get("interval"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			http.Error(w, "interval: milliseconds expected", http.StatusBadRequest)
			return
		}
		interval = min(max(time.Duration(n)*time.Millisecond, 100*time.Millisecond), time.Minute)
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	tick := time.NewTicker(interval)
	defer tick.Stop()
	fmt.Fprintf(w, "retry: %d\n\n", max(interval.Milliseconds(), 1000))
	for id := 1; ; id++ {
		b, err := json.Marshal(dash.State())
		if err != nil {
			return
		}
		if _, err := fmt.Fprintf(w, "id: %d\ndata: %s\n\n", id, b); err != nil {
			return
		}
		fl.Flush()
		select {
		case <-r.Context().Done():
			return
		case <-done:
			return
		case <-tick.C:
		}
	}
}

// Close stops the endpoint, giving requests in progress a moment.
func (e *httpEndpoint) Close() {
	if e == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		e.srv.Close()
	}
	e.stopSampler()
	e.wg.Wait()
}

// basicAuth lets through the requests that authenticate as user with
// password.
func basicAuth(next http.Handler, user, password string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="sluice", charset="UTF-8"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// logAdapter lets promhttp log through logf.
type logAdapter func(string, ...any)

func (l logAdapter) Println(v ...any) { l("HTTP endpoint: %s", fmt.Sprint(v...)) }
