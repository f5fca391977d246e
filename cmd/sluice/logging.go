package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// logFlags configure the server's log (README, "Metrics and debugging").
type logFlags struct {
	level  string
	format string
}

func registerLogFlags(fs *flag.FlagSet) *logFlags {
	f := &logFlags{}
	fs.StringVar(&f.level, "log-level", "info", "the least severe log lines written: debug, info, warn or error")
	fs.StringVar(&f.format, "log-format", "text", "log line format: text (one line per event, as before) or json (one JSON object per line)")
	return f
}

// newLogger returns the server's logger writing to w, and makes it the
// default of log/slog and of the standard log package (Pebble's lines go
// through it that way).
func (f *logFlags) newLogger(w io.Writer) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", f.level)
	}
	var h slog.Handler
	switch strings.ToLower(f.format) {
	case "text":
		h = &textHandler{w: w, level: lvl, mu: &sync.Mutex{}}
	case "json":
		h = slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lvl})
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", f.format)
	}
	l := slog.New(h)
	slog.SetDefault(l)
	return l, nil
}

// logfOf adapts l to the printf-style logging the engine takes: the level
// comes from the message's own prefix ("error:", "warning:", "hint:").
func logfOf(l *slog.Logger) func(string, ...any) {
	return func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		lvl := slog.LevelInfo
		switch {
		case strings.HasPrefix(msg, "error:"), strings.HasPrefix(msg, "hint:"):
			lvl = slog.LevelError
		case strings.HasPrefix(msg, "warning:"), strings.Contains(msg, "retrying with backoff"), strings.Contains(msg, " failed: "):
			lvl = slog.LevelWarn
		}
		l.Log(context.Background(), lvl, msg)
	}
}

// textHandler writes the lines Sluice always wrote: "sluice: " and the
// time, then the message and any attributes as key=value. The level is not
// printed: messages that are not informational say so themselves
// ("error: …", "warning: …").
type textHandler struct {
	w     io.Writer
	level slog.Level
	attrs []slog.Attr
	mu    *sync.Mutex
}

func (h *textHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *textHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	t := r.Time
	if t.IsZero() {
		t = time.Now()
	}
	b.WriteString("sluice: ")
	b.WriteString(t.Format("2006/01/02 15:04:05.000000 "))
	b.WriteString(r.Message)
	write := func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		write(a)
	}
	r.Attrs(write)
	if !strings.HasSuffix(r.Message, "\n") {
		b.WriteByte('\n')
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *textHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *textHandler) WithGroup(string) slog.Handler { return h }
