// Package console serves a running job over HTTP: /metrics in the
// Prometheus format, /api/status (the same as JSON, with each partition's
// diagnosis and the partition that holds the watermark back), a web console
// that updates live (/), the watermark simulator computed by
// weir's own engine (/simulator), and /healthz. Every asset is embedded in
// the binary. Listen serves it safe by default (see Access): local host
// names only, a token when one is set, and bounded connections.
package console

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/weirstream/weir/engine"
)

//go:embed assets
var assets embed.FS

// JobInfo is what the console shows of a job's configuration.
type JobInfo struct {
	Name string `json:"name"`
	File string `json:"file"`
	// Text is the job file as written.
	Text string `json:"text"`
	// Settings are the settings that decide what comes out, as the job
	// file gives them or by default (window, watermark, trigger, lateness,
	// mode, outputs).
	Settings []Setting `json:"settings"`
	// Warnings are what the job said at start about its settings.
	Warnings []string `json:"warnings"`
}

// Setting is one setting of a job.
type Setting struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Server serves one job.
type Server struct {
	Control *engine.Control
	Job     JobInfo
	// Panes holds the job's recent panes, Late its recent too-late events.
	Panes, Late Feed
	// Redact, when set, takes the secrets out of every JSON reply (the
	// job's own function: a sink's error may quote a connection string).
	Redact func(doc []byte) []byte
	// Access says who may use the console (Listen enforces it).
	Access Access
	// CheckpointInterval is the job's checkpoint interval (0: none): /readyz
	// wants a checkpoint no older than three of them.
	CheckpointInterval time.Duration
	// Started is when the job started: /readyz waits three checkpoint
	// intervals from then for the first checkpoint. Zero: when Handler is
	// made.
	Started time.Time

	final atomic.Pointer[engine.Status] // the status at the job's end (Ended)
	hist  history                       // the charts' samples (record)
}

// Ended tells the console that the job's Run has returned: from then on
// it shows the status the job had at its end.
func (s *Server) Ended(e *engine.Engine) {
	st := e.StatusAfterRun()
	s.final.Store(&st)
}

// jobStatus is the job's status: asked of the running job, or the one it
// had at its end.
func (s *Server) jobStatus(ctx context.Context) engine.Status {
	if st := s.final.Load(); st != nil {
		r := *st
		r.At = time.Now()
		return r
	}
	return s.Control.Status(ctx, 2*time.Second)
}

// Handler is the console's routes (without the checks of Access, which
// Listen adds).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	if s.Started.IsZero() {
		s.Started = time.Now()
	}
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	if s.Control != nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(collector{s}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	}
	mux.HandleFunc("GET /api/status", s.status)
	mux.HandleFunc("GET /api/history", s.historyReply)
	mux.HandleFunc("GET /api/panes", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, items(s.Panes), s.Redact) })
	mux.HandleFunc("GET /api/late", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, items(s.Late), s.Redact) })
	mux.HandleFunc("GET /api/simulate", simulate)
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { serveFile(w, r, static, "index.html") })
	mux.HandleFunc("GET /simulator", func(w http.ResponseWriter, r *http.Request) { serveFile(w, r, static, "simulator.html") })
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", files))
	return mux
}

// SimulatorHandler serves the simulator alone, without a job (weir
// simulator, and the tests of the page).
func SimulatorHandler() http.Handler { return (&Server{}).Handler() }

func serveFile(w http.ResponseWriter, r *http.Request, fsys fs.FS, name string) {
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(b)
}

// StatusReply is what /api/status answers.
type StatusReply struct {
	Job    JobInfo       `json:"job"`
	Status engine.Status `json:"status"`
	// CheckpointAge is how long before the report the last checkpoint
	// succeeded (ms, as weir_checkpoint_age_seconds), or nil before the
	// first one.
	CheckpointAge *int64 `json:"checkpoint_age_ms,omitempty"`
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	if s.Control == nil {
		http.Error(w, "no job", http.StatusNotFound)
		return
	}
	writeJSON(w, newStatusReply(s.Job, s.jobStatus(r.Context())), s.Redact)
}

// newStatusReply is the reply of /api/status for a job's status.
func newStatusReply(job JobInfo, st engine.Status) StatusReply {
	r := StatusReply{Job: job, Status: st}
	if ck := st.Checkpoint; !ck.At.IsZero() {
		age := st.At.UnixMilli() - ck.At.UnixMilli()
		r.CheckpointAge = &age
	}
	return r
}

// writeJSON answers v as JSON, through redact when it is set.
func writeJSON(w http.ResponseWriter, v any, redact func([]byte) []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if redact != nil {
		b = redact(b)
	}
	w.Write(append(b, '\n'))
}

// simulate answers /api/simulate (ParseSimParams) with a SimResult, or
// 400 and the reason.
func simulate(w http.ResponseWriter, r *http.Request) {
	p, err := ParseSimParams(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	res, err := Simulate(p)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	writeJSON(w, res, nil)
}

// Feed is what the console shows of a stream: its last items, as JSON.
type Feed interface {
	Items() []json.RawMessage
}

// Recent keeps the last items of a stream for the console. Add copies an
// item into a slot of a ring (Copy reuses the slot's memory: nothing is
// allocated in steady state); the items are formatted only when the console
// asks, so a job pays a copy per item, not its formatting.
type Recent[T any] struct {
	mu     sync.Mutex
	items  []T
	next   int
	full   bool
	copy   func(dst *T, src T)
	format func(b []byte, v *T) []byte
}

// NewRecent keeps the last n items; copy copies an item into a slot,
// format appends an item's JSON.
func NewRecent[T any](n int, copy func(dst *T, src T), format func(b []byte, v *T) []byte) *Recent[T] {
	return &Recent[T]{items: make([]T, n), copy: copy, format: format}
}

// Add keeps a copy of v.
func (r *Recent[T]) Add(v T) {
	r.mu.Lock()
	r.copy(&r.items[r.next], v)
	r.next++
	if r.next == len(r.items) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// Items implements Feed: the items kept, oldest first, formatted.
func (r *Recent[T]) Items() []json.RawMessage {
	out := []json.RawMessage{}
	if r == nil {
		return out
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	add := func(items []T) {
		for i := range items {
			out = append(out, r.format(nil, &items[i]))
		}
	}
	if r.full {
		add(r.items[r.next:])
	}
	add(r.items[:r.next])
	return out
}

func items(f Feed) []json.RawMessage {
	if f == nil {
		return []json.RawMessage{}
	}
	return f.Items()
}
