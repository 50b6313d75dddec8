package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
)

// logFlags are the flags of the commands that log while they run.
type logFlags struct {
	format, level string
}

func addLogFlags(fs *flag.FlagSet) *logFlags {
	lf := &logFlags{}
	fs.StringVar(&lf.format, "log-format", "text", "how log records are written: text (TIME LEVEL job: message, a line each) or json (an object a line: time, level, msg, job)")
	fs.StringVar(&lf.level, "log-level", "info", "the least level written: debug, info, warn or error")
	return lf
}

// logger is the logger the flags ask for, writing to w; an error names
// the flag.
func (lf *logFlags) logger(w io.Writer, job string) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(lf.level)); err != nil {
		return nil, fmt.Errorf("--log-level: expected debug, info, warn or error, got %q", lf.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler
	switch lf.format {
	case "text":
		h = &textHandler{w: w, level: level, mu: &sync.Mutex{}}
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format: expected text or json, got %q", lf.format)
	}
	l := slog.New(h)
	if job != "" {
		l = l.With("job", job)
	}
	return l, nil
}

// logWriter turns what weir writes while a job runs ("weir: ..." from the
// engine, the job and the summary) into records of a logger: one record a
// message (a write that ends in a newline; a message may hold several
// lines), at level warn for one that says "warning:", info for the others,
// without the "weir: " and the job's name in front (the record carries the
// job). Writes may come from several goroutines.
type logWriter struct {
	l      *slog.Logger
	job    string
	redact func(string) string // the job's: nothing logged shows a secret

	mu  sync.Mutex
	buf []byte
}

func newLogWriter(l *slog.Logger, job string, redact func(string) string) *logWriter {
	if redact == nil {
		redact = func(s string) string { return s }
	}
	return &logWriter{l: l, job: job, redact: redact}
}

// Write implements io.Writer.
func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	if bytes.HasSuffix(w.buf, []byte("\n")) {
		w.line(string(w.buf[:len(w.buf)-1]))
		w.buf = w.buf[:0]
	}
	return len(p), nil
}

// Flush writes what is left of a last line without its newline.
func (w *logWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.line(string(w.buf))
		w.buf = nil
	}
}

func (w *logWriter) line(s string) {
	s = w.redact(strings.TrimSuffix(s, "\r"))
	if strings.TrimSpace(s) == "" {
		return
	}
	s = strings.TrimPrefix(s, "weir: ")
	if w.job != "" {
		// "job: ..." and "job/output[1]: ...": the record names the job.
		s = strings.TrimPrefix(strings.TrimPrefix(s, w.job+": "), w.job+"/")
	}
	level := slog.LevelInfo
	if rest, ok := strings.CutPrefix(s, "warning: "); ok {
		s, level = rest, slog.LevelWarn
	}
	w.l.Log(context.Background(), level, s)
}

// Error logs a failure at level error, as one record.
func (w *logWriter) Error(msg string) {
	w.l.Error(w.redact(strings.TrimPrefix(msg, "weir: ")))
}

// Info logs what the command itself says, at level info.
func (w *logWriter) Info(format string, args ...any) {
	w.l.Info(w.redact(fmt.Sprintf(format, args...)))
}

// Warn logs a warning of the command itself.
func (w *logWriter) Warn(format string, args ...any) {
	w.l.Warn(w.redact(fmt.Sprintf(format, args...)))
}

// Lines logs each line of text (the summary) as a record of its own.
func (w *logWriter) Lines(text string) {
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		w.Write([]byte(l + "\n"))
	}
}

// textHandler writes a record as a line for a person: its time (UTC, to
// the millisecond), its level, the job and the message, then any other
// attributes as key=value.
type textHandler struct {
	w     io.Writer
	level slog.Level
	attrs []slog.Attr
	mu    *sync.Mutex
}

// Enabled implements slog.Handler.
func (h *textHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

// Handle implements slog.Handler.
func (h *textHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Time.UTC().Format("2006-01-02T15:04:05.000Z"))
	fmt.Fprintf(&b, " %-5s ", r.Level.String())
	var rest []string
	attr := func(a slog.Attr) bool {
		if a.Key == "job" {
			b.WriteString(a.Value.String() + ": ")
		} else {
			rest = append(rest, a.Key+"="+strconvQuote(a.Value.String()))
		}
		return true
	}
	for _, a := range h.attrs {
		attr(a)
	}
	r.Attrs(attr)
	b.WriteString(r.Message)
	for _, a := range rest {
		b.WriteString(" " + a)
	}
	b.WriteString("\n")
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

// WithAttrs implements slog.Handler.
func (h *textHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

// WithGroup implements slog.Handler (groups are not shown apart).
func (h *textHandler) WithGroup(string) slog.Handler { return h }

// strconvQuote quotes a value that holds spaces, quotes or = signs.
func strconvQuote(s string) string {
	if s == "" || strings.ContainsAny(s, " \"=\n\t") {
		return strconv.Quote(s)
	}
	return s
}
