package console_test

// The console and the simulator in a real browser: headless Chromium,
// driven by chromedp. The tests act as a user would (sliders moved, radio
// buttons and buttons clicked), wait until the page shows what they expect,
// and compare what it shows, exactly, with what weir computes in Go.

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "write the documentation's screenshots to docs/console.png (the console walkthrough) and docs/simulator.png")

// deadline bounds each browser test: every wait is "until the page shows
// this", within it.
const deadline = 60 * time.Second

// browser starts a headless Chromium for one test and returns a context for
// its tab, which ends with the test (or after deadline).
func browser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		// A missing part fails the test: it never passes by skipping.
		t.Fatal("no browser for the browser tests: none of chromium, chromium-browser, google-chrome is on PATH (apt-get install chromium)")
	}
	// The allocator gives every browser a fresh temporary profile
	// (--user-data-dir), and removes it when the browser has exited.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-color-profile", "srgb"),
		chromedp.Flag("mute-audio", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc() // waits for the browser to exit
	})
	// The first action starts the browser; it lives as long as bctx.
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	// An uncaught exception in a page fails the test.
	var mu sync.Mutex
	var thrown []string
	messages := chromedp.Console(bctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.IsException() {
				mu.Lock()
				thrown = append(thrown, fmt.Sprintf("%s:%d: %s", m.URL, m.Line+1, m.Text))
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range thrown {
			t.Errorf("the page threw %s", e)
		}
	})
	ctx, cancel := context.WithTimeout(bctx, deadline)
	t.Cleanup(cancel)
	return ctx
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluating %.80s: %v", js, err)
	}
	return v
}

// waitUntil calls check until it returns "" (what the page shows is what
// is wanted), or fails the test with the last difference at the deadline.
func waitUntil(t *testing.T, ctx context.Context, what string, check func() string) {
	t.Helper()
	for {
		diff := check()
		if diff == "" {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting until %s: %v; the last difference:\n%s", what, ctx.Err(), diff)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// fieldDiff lists the fields of two structs that differ: what the page
// shows, and what it should.
func fieldDiff(got, want any) string {
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	var out []string
	for i := range g.NumField() {
		if a, b := g.Field(i).Interface(), w.Field(i).Interface(); !reflect.DeepEqual(a, b) {
			out = append(out, fmt.Sprintf("%s: the page shows %q\n\twant %q", g.Type().Field(i).Name, a, b))
		}
	}
	return strings.Join(out, "\n")
}

// screenshot takes a screenshot of the whole page, checks that it is a PNG
// 1280 pixels wide, and writes it to the test's directory, or to docs/name
// with -update-screenshots.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	screenshotOf(t, ctx, name, true)
}

// screenshotOf is screenshot of the whole page (full) or of what the
// window shows.
func screenshotOf(t *testing.T, ctx context.Context, name string, full bool) {
	t.Helper()
	// Let a frame be drawn after the last update.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise(r => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	shot := chromedp.FullScreenshot(100)
	if !full {
		shot = chromedp.CaptureScreenshot()
	}
	buf, err := chromedp.Run(ctx, shot)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(buf))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if _, err := png.Decode(bytes.NewReader(buf)); err != nil {
		t.Fatalf("the screenshot is not a valid PNG: %v", err)
	}
	if cfg.Width != 1280 || cfg.Height < 400 {
		t.Errorf("the screenshot is %dx%d, want 1280 wide", cfg.Width, cfg.Height)
	}
	path := filepath.Join(t.TempDir(), name)
	if *updateScreenshots && (name == "console.png" || name == "simulator.png") {
		path = filepath.Join("..", "docs", name)
		if len(buf) > 400<<10 {
			t.Errorf("%s: %d KB, more than 400 KB", name, len(buf)>>10)
		}
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %dx%d, %d KB", path, cfg.Width, cfg.Height, len(buf)>>10)
}

// The formats of the pages (common.js), for the values the tests read.

// tenths formats n / unit with one decimal, half up, as common.js does.
func tenths(n, unit int64) string {
	t := (n*10 + unit/2) / unit
	return fmt.Sprintf("%d.%d", t/10, t%10)
}

// secs formats seconds with one decimal, as common.js does.
func secs(x float64) string {
	ms := int64(math.Round(x * 1000))
	if ms < 0 {
		return "-" + tenths(-ms, 1000)
	}
	return tenths(ms, 1000)
}

func isoShort(s string) string { return strings.TrimSuffix(strings.Replace(s, "T", " ", 1), "Z") }

func fmtTime(t mtime.Time) string {
	switch {
	case t <= mtime.MinTime:
		return "none"
	case t >= mtime.MaxTime:
		return "end of input"
	}
	return isoShort(t.String())
}

func fmtSpan(start, end string) string {
	a, b := isoShort(start), isoShort(end)
	if strings.HasSuffix(a, ".000") && strings.HasSuffix(b, ".000") {
		a, b = a[:len(a)-4], b[:len(b)-4]
	}
	if a[:10] == b[:10] {
		return a + " → " + b[11:]
	}
	return a + " → " + b
}

func fmtDuration(ms int64) string {
	if ms < 0 {
		return "-" + fmtDuration(-ms)
	}
	if ms < 60000 {
		return tenths(ms, 1000) + " s"
	}
	s := ms / 1000
	switch {
	case s < 3600:
		return fmt.Sprintf("%d min %d s", s/60, s%60)
	case s < 86400:
		return fmt.Sprintf("%d h %d min", s/3600, s%3600/60)
	}
	return fmt.Sprintf("%d d %d h", s/86400, s%86400/3600)
}

func fmtBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return tenths(n, 1<<10) + " KiB"
	case n < 1<<30:
		return tenths(n, 1<<20) + " MiB"
	}
	return tenths(n, 1<<30) + " GiB"
}

// The simulator.

// simPage is what the simulator page shows.
type simPage struct {
	Params   string            `json:"params"`
	Seed     string            `json:"seed"`
	N        string            `json:"n"`
	Late     string            `json:"late"`
	Lost     string            `json:"lost"`
	Wait     string            `json:"wait"`
	Summary  string            `json:"summary"`
	Windows  [][]string        `json:"windows"`
	Fates    map[string]int    `json:"fates"`
	Parts    map[string]int    `json:"parts"`
	Curve    int               `json:"curve"`
	Now      string            `json:"now"`
	Controls map[string]string `json:"controls"`
}

const readSimPage = `(() => {
  const $ = id => document.getElementById(id);
  const fates = {}, parts = {};
  for (const l of document.querySelectorAll("#lanes line.tap")) {
    fates[l.dataset.fate] = (fates[l.dataset.fate] || 0) + 1;
    parts[l.dataset.partition] = (parts[l.dataset.partition] || 0) + 1;
  }
  const controls = {};
  for (const id of ["delay", "tunnel", "interval", "partitions", "idle-after", "idle"]) controls[id] = $(id + "-value").textContent;
  const now = document.querySelector("#curve text.now-label");
  return {
    params: $("sim").dataset.params, seed: $("seed").textContent,
    n: $("n").textContent, late: $("late").textContent, lost: $("lost").textContent, wait: $("wait").textContent,
    summary: $("summary").textContent,
    windows: [...$("windows").tBodies[0].rows].map(r => [...r.cells].map(c => c.textContent)),
    fates, parts, curve: document.querySelectorAll("#curve svg g circle").length,
    now: now ? now.textContent : "", controls,
  };
})()`

// wantSimPage is what the page must show for p, from console.Simulate.
func wantSimPage(t *testing.T, p console.SimParams) simPage {
	t.Helper()
	res, err := console.Simulate(p)
	if err != nil {
		t.Fatal(err)
	}
	params, _ := json.Marshal(res.Params)
	w := simPage{
		Params: string(params), Seed: fmt.Sprint(p.Seed),
		N: fmt.Sprint(res.N), Late: fmt.Sprint(res.Late), Lost: fmt.Sprint(res.Lost), Wait: secs(res.Wait) + " s",
		Summary: res.Summary, Fates: map[string]int{}, Parts: map[string]int{}, Curve: len(res.Curve),
		Controls: map[string]string{
			"delay": fmt.Sprintf("%g s", p.Delay), "tunnel": fmt.Sprintf("%g%%", p.Tunnel),
			"interval": "after every tap", "partitions": fmt.Sprint(p.Partitions), "idle-after": "never", "idle": "none",
		},
	}
	if p.Interval > 0 {
		w.Controls["interval"] = fmt.Sprintf("every %g s", p.Interval)
	}
	if p.IdleAfter > 0 {
		w.Controls["idle-after"] = fmt.Sprintf("%g s", p.IdleAfter)
	}
	if p.Idle > 0 {
		w.Controls["idle"] = fmt.Sprintf("%g s", p.Idle)
	}
	for i, win := range res.Windows {
		row := []string{fmt.Sprint(i + 1), fmt.Sprintf("%g–%g s", win.Start, win.End), "not yet", "", fmt.Sprintf("%d waiting", win.Waiting)}
		if win.Close != nil {
			row[2], row[3] = secs(*win.Close)+" s", secs(*win.Close-win.End)+" s"
			row[4] = fmt.Sprint(win.Count)
			if win.Updates > 0 {
				row[4] = fmt.Sprintf("%d → %d", win.First, win.Count)
			}
		}
		w.Windows = append(w.Windows, row)
	}
	for _, tap := range res.Taps {
		if tap.TS <= 120 { // the lanes show the first 120 s
			w.Fates[tap.Fate]++
			w.Parts[fmt.Sprint(tap.Partition)]++
		}
	}
	for _, c := range res.Curve {
		if c.Delay == p.Delay {
			w.Now = fmt.Sprintf("delay %g s: %d%% late, %s s wait", c.Delay, int(math.Round(100*c.Late)), secs(c.Wait))
		}
	}
	return w
}

// checkSimPage waits until the page shows the result for p, and compares
// everything it shows with console.Simulate(p).
func checkSimPage(t *testing.T, ctx context.Context, p console.SimParams) {
	t.Helper()
	want := wantSimPage(t, p)
	var got simPage
	waitUntil(t, ctx, "the simulator shows "+want.Params, func() string {
		got = eval[simPage](t, ctx, readSimPage)
		if got.Params != want.Params {
			return "the page shows " + got.Params
		}
		return ""
	})
	if d := fieldDiff(got, want); d != "" {
		t.Errorf("the simulator for %+v shows what console.Simulate does not:\n%s", p, d)
	}
}

// setRange moves a slider as a user does: a new value, then the input and
// change events.
func setRange(t *testing.T, ctx context.Context, id string, v float64) {
	t.Helper()
	got := eval[string](t, ctx, fmt.Sprintf(`(() => {
  const el = document.getElementById(%q);
  el.value = %q;
  el.dispatchEvent(new Event("input", {bubbles: true}));
  el.dispatchEvent(new Event("change", {bubbles: true}));
  return el.value;
})()`, id, fmt.Sprint(v)))
	if got != fmt.Sprint(v) {
		t.Fatalf("the slider %s took %s, not %v", id, got, v)
	}
}

func click(t *testing.T, ctx context.Context, css string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(css))); err != nil {
		t.Fatalf("clicking %s: %v", css, err)
	}
}

// The simulator page, moved to several settings, shows exactly what
// console.Simulate computes for them: the counts, the table of windows, the
// fate of every tap drawn, the curve and the summary.
func TestBrowserSimulator(t *testing.T) {
	ctx := browser(t)
	srv := httptest.NewServer(console.SimulatorHandler())
	t.Cleanup(srv.Close)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/simulator")); err != nil {
		t.Fatal(err)
	}
	// The page opens on the seed's stream and controls.
	p := console.SimParams{Size: 15, Delay: 2, Tunnel: 10, Policy: console.PolicyDrop, Seed: 81, Partitions: 1}
	checkSimPage(t, ctx, p)

	// The toy: 10 s windows, 30% of phones in a tunnel, a 5 s delay and
	// 15 s of allowed lateness.
	click(t, ctx, `label[for="size-10"]`)
	setRange(t, ctx, "tunnel", 30)
	setRange(t, ctx, "delay", 5)
	click(t, ctx, `label[for="policy-lateness"]`)
	p.Size, p.Tunnel, p.Delay, p.Policy = 10, 30, 5, console.PolicyLateness
	checkSimPage(t, ctx, p)

	// A periodic watermark every 2.5 s, three partitions, the last quiet
	// after 30 s and declared idle after 8 s; late taps to a side output.
	click(t, ctx, `label[for="size-15"]`)
	setRange(t, ctx, "tunnel", 10)
	setRange(t, ctx, "delay", 2)
	click(t, ctx, `label[for="policy-side"]`)
	setRange(t, ctx, "interval", 2.5)
	setRange(t, ctx, "partitions", 3)
	setRange(t, ctx, "idle-after", 30)
	setRange(t, ctx, "idle", 8)
	p = console.SimParams{Size: 15, Delay: 2, Tunnel: 10, Policy: console.PolicySide, Seed: 81, Interval: 2.5, Partitions: 3, IdleAfter: 30, Idle: 8}
	checkSimPage(t, ctx, p)
	screenshot(t, ctx, "simulator.png")

	// A new stream, and a quiet partition never declared idle: the windows
	// after it went quiet never close.
	click(t, ctx, "#new-stream")
	setRange(t, ctx, "delay", 0)
	setRange(t, ctx, "interval", 5)
	setRange(t, ctx, "partitions", 2)
	setRange(t, ctx, "idle-after", 20)
	setRange(t, ctx, "idle", 0)
	click(t, ctx, `label[for="policy-drop"]`)
	p = console.SimParams{Size: 15, Delay: 0, Tunnel: 10, Policy: console.PolicyDrop, Seed: 82, Interval: 5, Partitions: 2, IdleAfter: 20}
	checkSimPage(t, ctx, p)
	if w := wantSimPage(t, p); w.Windows[len(w.Windows)-1][2] != "not yet" {
		t.Errorf("with a quiet partition never idle, the last window closed: %v", w.Windows)
	}

	// Four partitions, 30 s windows, a 13 s delay, allowed lateness.
	click(t, ctx, `label[for="size-30"]`)
	click(t, ctx, `label[for="policy-lateness"]`)
	setRange(t, ctx, "partitions", 4)
	setRange(t, ctx, "delay", 13)
	setRange(t, ctx, "tunnel", 25)
	setRange(t, ctx, "interval", 1)
	setRange(t, ctx, "idle-after", 45)
	setRange(t, ctx, "idle", 12)
	p = console.SimParams{Size: 30, Delay: 13, Tunnel: 25, Policy: console.PolicyLateness, Seed: 82, Interval: 1, Partitions: 4, IdleAfter: 45, Idle: 12}
	checkSimPage(t, ctx, p)
}

// The console.

// order is one line of the followed file: an order at a shop (the
// partition), paid with a card (the key), At seconds after base.
type order struct {
	Shop, Card string
	At, Amount int64
}

func (o order) line(base mtime.Time) string {
	b, _ := json.Marshal(struct {
		Shop   string `json:"shop"`
		Card   string `json:"card"`
		TS     string `json:"ts"`
		Amount int64  `json:"amount"`
	}{o.Shop, o.Card, (base + mtime.Time(o.At*1000)).String(), o.Amount})
	return string(b)
}

// consoleJob is the job of the console test: per card, orders and money in
// 10 s windows; a watermark per shop, 1 s behind its latest order; 10 s of
// allowed lateness; checkpoints every second.
const consoleJob = `# Orders per card in 10-second windows, by event time.
name: tea-orders
source: {file: orders.jsonl, follow: true}
time: {field: ts, partition_field: shop}
key: card
watermark: {delay: 1s, interval: 100ms}
window: {tumbling: 10s}
allowed_lateness: 10s
aggregates: {orders: count, spent: sum(amount)}
output: results.jsonl
late_output: late.jsonl
checkpoint: {dir: checkpoints, interval: 1s}
`

// model is what the job must do with the orders it is fed, phase by phase:
// the rules of weir's job file (the watermark of a partition is its latest
// event time - delay - 1 ms, the job's the smallest of them; a window fires
// when the watermark reaches its end - 1 ms; an event within the allowed
// lateness after that is added and fires a late pane; when the watermark
// reaches the end - 1 ms + the allowed lateness, the window closes with a
// final pane, and an event for it after that is too late). The phases are
// such that the order in which the job reads the lines of one phase does not
// change the outcome.
type model struct {
	base                  mtime.Time // the event time of At 0
	delay, size, lateness mtime.Time
	lines                 int64
	shops                 []string
	max                   map[string]mtime.Time
	acc                   map[paneKey]*wantPane
	fired, closed         map[paneKey]bool
	panes                 []wantPane
	tooLate               []wantLate
	lateAccepted          int64
}

type paneKey struct {
	card  string
	start mtime.Time
}

// wantPane is a pane as /api/panes gives it (the fields the model knows).
type wantPane struct {
	Key, WindowStart, WindowEnd, Timing string
	Revision, Orders, Spent             int64
	Final                               bool
}

// wantLate is a too-late event as /api/late gives it.
type wantLate struct {
	Key, WindowStart, EventTime string
	Line                        int64
}

func newModel(base mtime.Time) *model {
	return &model{base: base, delay: 1000, size: 10_000, lateness: 10_000, max: map[string]mtime.Time{}, acc: map[paneKey]*wantPane{}, fired: map[paneKey]bool{}, closed: map[paneKey]bool{}}
}

func (m *model) partitionWatermark(shop string) mtime.Time { return m.max[shop] - m.delay - 1 }

func (m *model) watermark() mtime.Time {
	if len(m.shops) == 0 {
		return mtime.MinTime
	}
	w := mtime.MaxTime
	for _, s := range m.shops {
		w = min(w, m.partitionWatermark(s))
	}
	return w
}

func (m *model) feed(phase []order) {
	w := m.watermark()
	for _, o := range phase {
		m.lines++
		t := m.base + mtime.Time(o.At*1000)
		k := paneKey{o.Card, t - t%m.size}
		end := k.start + m.size
		switch {
		case end-1 > w || end-1+m.lateness > w:
			p := m.acc[k]
			if p == nil {
				p = &wantPane{Key: o.Card, WindowStart: k.start.String(), WindowEnd: end.String()}
				m.acc[k] = p
			}
			p.Orders++
			p.Spent += o.Amount
			if m.fired[k] {
				m.lateAccepted++
				p.Revision++
				p.Timing = "LATE"
				m.panes = append(m.panes, *p)
			}
		default:
			m.tooLate = append(m.tooLate, wantLate{Key: o.Card, WindowStart: k.start.String(), EventTime: t.String(), Line: m.lines})
		}
		if _, ok := m.max[o.Shop]; !ok {
			m.shops = append(m.shops, o.Shop)
			m.max[o.Shop] = mtime.MinTime
		}
		m.max[o.Shop] = max(m.max[o.Shop], t)
	}
	w = m.watermark()
	for k, p := range m.acc {
		end := k.start + m.size
		closing := !m.closed[k] && end-1+m.lateness <= w
		switch {
		case !m.fired[k] && end-1 <= w:
			m.fired[k], m.closed[k] = true, closing
			p.Revision, p.Timing, p.Final = 1, "ON_TIME", closing
			m.panes = append(m.panes, *p)
		case closing:
			m.closed[k] = true
			p.Revision, p.Timing, p.Final = p.Revision+1, "LATE", true
			m.panes = append(m.panes, *p)
		}
	}
}

func sortPanes(ps []wantPane) []wantPane {
	ps = append([]wantPane(nil), ps...)
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.WindowStart != b.WindowStart {
			return a.WindowStart < b.WindowStart
		}
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		return a.Revision < b.Revision
	})
	return ps
}

// jobState is what the job's console serves.
type jobState struct {
	reply       console.StatusReply
	panes, late []json.RawMessage
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	if r.StatusCode != 200 {
		t.Fatalf("%s: %s %s", url, r.Status, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", url, err)
	}
}

func fetchState(t *testing.T, url string) jobState {
	t.Helper()
	var s jobState
	getJSON(t, url+"/api/status", &s.reply)
	getJSON(t, url+"/api/panes", &s.panes)
	getJSON(t, url+"/api/late", &s.late)
	return s
}

// fields decodes a JSON object into its fields, in order.
func fields(t *testing.T, raw json.RawMessage) (keys []string, vals map[string]json.RawMessage) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %s", raw)
	}
	vals = map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		vals[tok.(string)] = v
	}
	return keys, vals
}

// show is how the console shows a JSON value: a string as it is, null as
// "(all)" (the key of a global window), anything else as JSON.
func show(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	if string(v) == "null" || v == nil {
		return "(all)"
	}
	var buf bytes.Buffer
	json.Compact(&buf, v)
	return buf.String()
}

func str(v json.RawMessage) string {
	var s string
	json.Unmarshal(v, &s)
	return s
}

// checkModel compares what the console serves with the model.
func checkModel(t *testing.T, s jobState, m *model) string {
	t.Helper()
	st := s.reply.Status
	var diff []string
	var names, want []string
	for _, p := range st.Partitions {
		names = append(names, fmt.Sprintf("%s %s", p.Name, p.Watermark))
	}
	for _, shop := range m.shops {
		want = append(want, fmt.Sprintf("%s %s", shop, m.partitionWatermark(shop)))
	}
	if !reflect.DeepEqual(names, want) {
		diff = append(diff, fmt.Sprintf("partitions %q, want %q", names, want))
	}
	if st.Watermark != m.watermark() {
		diff = append(diff, fmt.Sprintf("watermark %s, want %s", st.Watermark, m.watermark()))
	}
	c := st.Counts
	if c.Read != m.lines || c.LateAccepted != m.lateAccepted || c.TooLate != int64(len(m.tooLate)) || c.Accepted != m.lines-int64(len(m.tooLate)) {
		diff = append(diff, fmt.Sprintf("read %d, accepted %d, late accepted %d, too late %d; want %d, %d, %d, %d",
			c.Read, c.Accepted, c.LateAccepted, c.TooLate, m.lines, m.lines-int64(len(m.tooLate)), m.lateAccepted, len(m.tooLate)))
	}
	var panes []wantPane
	for _, raw := range s.panes {
		_, f := fields(t, raw)
		var rev, n, spent int64
		json.Unmarshal(f["revision"], &rev)
		json.Unmarshal(f["orders"], &n)
		json.Unmarshal(f["spent"], &spent)
		panes = append(panes, wantPane{Key: str(f["key"]), WindowStart: str(f["window_start"]), WindowEnd: str(f["window_end"]),
			Timing: str(f["timing"]), Revision: rev, Orders: n, Spent: spent, Final: string(f["final"]) == "true"})
	}
	if got, want := sortPanes(panes), sortPanes(m.panes); !reflect.DeepEqual(got, want) {
		diff = append(diff, fmt.Sprintf("panes\n%+v\nwant\n%+v", got, want))
	}
	var late []wantLate
	for _, raw := range s.late {
		_, f := fields(t, raw)
		var line int64
		json.Unmarshal(f["line"], &line)
		late = append(late, wantLate{Key: str(f["key"]), WindowStart: str(f["window_start"]), EventTime: str(f["event_time"]), Line: line})
	}
	if !reflect.DeepEqual(late, m.tooLate) {
		diff = append(diff, fmt.Sprintf("too-late events %+v, want %+v", late, m.tooLate))
	}
	return strings.Join(diff, "\n")
}

// consolePage is what the console page shows.
type consolePage struct {
	At           string          `json:"at"`
	JobName      string          `json:"jobName"`
	JobFile      string          `json:"jobFile"`
	JobText      string          `json:"jobText"`
	Settings     [][]string      `json:"settings"`
	Warnings     []string        `json:"warnings"`
	State        string          `json:"state"`
	Stale        bool            `json:"stale"`
	Watermark    string          `json:"watermark"`
	Gap          string          `json:"gap"`
	Skew         string          `json:"skew"`
	Accepted     string          `json:"accepted"`
	LateAccepted string          `json:"lateAccepted"`
	TooLate      string          `json:"tooLate"`
	OpenWindows  string          `json:"openWindows"`
	Keys         string          `json:"keys"`
	HeldBy       string          `json:"heldBy"`
	HeldSince    string          `json:"heldSince"`
	Partitions   [][]string      `json:"partitions"`
	Records      []string        `json:"records"`
	Aggregations []string        `json:"aggregations"`
	Checkpoints  []string        `json:"checkpoints"`
	Sinks        [][]string      `json:"sinks"`
	PanesHead    []string        `json:"panesHead"`
	Panes        [][]string      `json:"panes"`
	Late         [][]string      `json:"late"`
	Charts       map[string]bool `json:"charts"`
}

const readConsolePage = `(() => {
  const $ = id => document.getElementById(id), txt = id => ($(id) ? $(id).textContent : "");
  const rows = sel => [...document.querySelectorAll(sel + " tbody tr")].filter(r => !r.querySelector("td.empty")).map(r => [...r.cells].map(c => c.textContent));
  return {
    at: $("console").dataset.at || "", jobName: txt("job-name"), jobFile: txt("job-file"), jobText: txt("job-text"),
    settings: rows("#settings"), warnings: [...document.querySelectorAll("#warnings li")].map(li => li.textContent),
    state: txt("state"), stale: getComputedStyle($("stale")).display !== "none",
    watermark: txt("watermark"), gap: txt("wm-gap"), skew: txt("skew"), accepted: txt("accepted"),
    lateAccepted: txt("late-accepted"), tooLate: txt("too-late"), openWindows: txt("open-windows"), keys: txt("keys"),
    heldBy: txt("held-by-name"), heldSince: txt("held-by-since"),
    partitions: rows("#partitions"),
    records: ["read", "duplicates", "filtered", "beyond-dedup-horizon", "late-for-some-windows", "trigger-finished", "superseded", "revisions-too-late",
      "revisions", "quarantined", "lost", "windows-fired", "panes-on-time", "panes-late", "panes-early", "state-bytes"].map(txt),
    aggregations: $("aggregations").hidden ? [] : [...document.querySelectorAll("#aggregations dt, #aggregations dd")].map(e => e.textContent),
    checkpoints: ["ckpt-total", "ckpt-failed", "ckpt-failing", "ckpt-last", "ckpt-duration", "ckpt-size", "ckpt-age"].map(txt),
    sinks: rows("#sinks"),
    panesHead: [...$("panes").tHead.rows[0].cells].map(c => c.textContent), panes: rows("#panes"), late: rows("#late-events"),
    charts: {watermark: !!document.querySelector("#wm-chart svg path"), late: !!document.querySelector("#late-chart svg path")},
  };
})()`

// paneFields are the fields of a pane that are not aggregates.
var paneFields = map[string]bool{"key": true, "window_start": true, "window_end": true, "revision": true, "timing": true,
	"final": true, "retract": true, "watermark": true, "emitted_at": true, "status": true, "version": true, "updated_at": true, "delta_id": true}

// wantConsolePage is what the page must show of what the console serves.
func wantConsolePage(t *testing.T, s jobState) consolePage {
	t.Helper()
	st, job := s.reply.Status, s.reply.Job
	known := func(t mtime.Time) bool { return t > mtime.MinTime && t < mtime.MaxTime }
	c := st.Counts
	w := consolePage{
		At: st.At.Format(time.RFC3339Nano), JobName: job.Name, JobFile: job.File, JobText: job.Text,
		State: st.State, Stale: st.Stale,
		Watermark: fmtTime(st.Watermark), Gap: "–", Skew: fmtDuration(st.EventTimeSkew),
		Accepted: fmt.Sprint(c.Accepted), LateAccepted: fmt.Sprint(c.LateAccepted), TooLate: fmt.Sprint(c.TooLate),
		OpenWindows: fmt.Sprint(st.OpenWindows), Keys: fmt.Sprint(st.Keys),
		Records: []string{fmt.Sprint(c.Read), fmt.Sprint(c.Duplicates), fmt.Sprint(c.Filtered), fmt.Sprint(c.BeyondDedupHorizon),
			fmt.Sprint(c.LateForSomeWindows), fmt.Sprint(c.TriggerFinished), fmt.Sprint(c.Superseded), fmt.Sprint(c.RevisionsTooLate),
			fmt.Sprint(c.Revisions), fmt.Sprint(c.Quarantined), fmt.Sprint(c.Lost), fmt.Sprint(c.WindowsFired),
			fmt.Sprint(st.PanesByTiming["ON_TIME"]), fmt.Sprint(st.PanesByTiming["LATE"]), fmt.Sprint(st.PanesByTiming["EARLY"]), fmtBytes(st.StateBytes)},
		Aggregations: []string{},
		Charts:       map[string]bool{"watermark": known(st.Watermark), "late": true},
		Settings:     [][]string{},
		Partitions:   [][]string{},
		Sinks:        [][]string{},
		Panes:        [][]string{},
		Late:         [][]string{},
	}
	for _, a := range st.Aggregations {
		w.Aggregations = append(w.Aggregations, a.Name+": accepted", fmt.Sprint(a.Counts.Accepted), a.Name+": too late", fmt.Sprint(a.Counts.TooLate),
			a.Name+": too late for some windows", fmt.Sprint(a.Counts.LateForSomeWindows))
	}
	if !st.Live {
		w.State += " · replay"
	}
	if known(st.Watermark) {
		w.Gap = fmtDuration(st.WatermarkGap)
	}
	for _, s := range job.Settings {
		w.Settings = append(w.Settings, []string{s.Name, s.Value})
	}
	w.Warnings = job.Warnings
	if len(w.Warnings) == 0 {
		w.Warnings = []string{"None."}
	}
	held := st.HeldBy != "" && st.EventTimeSkew >= max(st.WatermarkDelay, 1000)
	switch {
	case st.HeldBy != "" && !held:
		w.HeldBy = fmt.Sprintf("The partitions are level: the slowest, %s, is within %s of the others.", st.HeldBy, fmtDuration(st.EventTimeSkew))
	case st.HeldBy != "":
		w.HeldBy, w.HeldSince = st.HeldBy, fmtTime(st.HeldBySince)
	case len(st.Partitions) > 1:
		w.HeldBy = "No partition holds the watermark back: they are level, or idle."
	default:
		w.HeldBy = "One partition: it sets the watermark."
	}
	for _, p := range st.Partitions {
		backlog, holds := "–", p.Err
		if p.Backlog >= 0 {
			backlog = fmt.Sprint(p.Backlog)
		}
		if p.HoldsBack && held {
			holds = "holds back"
		}
		w.Partitions = append(w.Partitions, []string{p.Name, p.Diagnosis, fmtTime(p.Watermark), fmtTime(p.MaxEventTime), fmtTime(p.LastEvent), backlog, holds})
	}
	ck := st.Checkpoint
	w.Checkpoints = []string{fmt.Sprint(ck.Total), fmt.Sprint(ck.Failed), fmt.Sprint(ck.Failures), "none yet", "–", "–", "–"}
	if age := s.reply.CheckpointAge; age != nil {
		w.Checkpoints[3] = fmt.Sprintf("%s %d", ck.Kind, ck.ID)
		w.Checkpoints[4] = tenths(ck.Duration.Nanoseconds(), 1e6) + " ms"
		w.Checkpoints[5] = fmtBytes(ck.Bytes)
		w.Checkpoints[6] = fmtDuration(*age)
	}
	for _, k := range st.Sinks {
		w.Sinks = append(w.Sinks, []string{k.Name + strings.ReplaceAll(k.Guarantee, "_", " "), fmt.Sprint(k.Written), fmt.Sprint(k.Committed)})
	}
	w.PanesHead = []string{"Emitted", "Key", "Window", "Timing", "Revision", "Status", "Watermark"}
	var aggs []string
	for _, raw := range s.panes {
		keys, _ := fields(t, raw)
		for _, k := range keys {
			if !paneFields[k] && !strings.Contains(strings.Join(aggs, "\x00")+"\x00", k+"\x00") {
				aggs = append(aggs, k)
			}
		}
	}
	w.PanesHead = append(w.PanesHead, aggs...)
	for i := len(s.panes) - 1; i >= 0; i-- {
		_, f := fields(t, s.panes[i])
		status := str(f["status"])
		if f["status"] == nil {
			status = "provisional"
			if string(f["retract"]) == "true" {
				status = "retracted"
			} else if string(f["final"]) == "true" {
				status = "closed"
			}
		}
		row := []string{str(f["emitted_at"])[11:23], show(f["key"]), fmtSpan(str(f["window_start"]), str(f["window_end"])), str(f["timing"]),
			string(f["revision"]), status, isoShort(str(f["watermark"]))}
		for _, a := range aggs {
			v := ""
			if f[a] != nil {
				v = show(f[a])
			}
			row = append(row, v)
		}
		w.Panes = append(w.Panes, row)
	}
	for i := len(s.late) - 1; i >= 0; i-- {
		_, f := fields(t, s.late[i])
		w.Late = append(w.Late, []string{isoShort(str(f["event_time"])), show(f["key"]), fmtSpan(str(f["window_start"]), str(f["window_end"])),
			isoShort(str(f["watermark"])), "line " + string(f["line"]), show(f["event"])})
	}
	return w
}

// live blanks what changes by itself while a job runs (the clock, the state's
// size, checkpoints, commits), to compare a running page with a status
// fetched at another moment.
func live(p consolePage) consolePage {
	p.At, p.Gap, p.Checkpoints, p.Sinks = "", "", nil, nil
	p.Records = append([]string(nil), p.Records...)
	p.Records[len(p.Records)-1] = ""
	return p
}

// checkConsolePage waits until the page shows what the console serves (and
// what the model wants), then compares all of it.
func checkConsolePage(t *testing.T, ctx context.Context, url string, m *model, running bool) consolePage {
	t.Helper()
	var got, want consolePage
	waitUntil(t, ctx, "the console shows the job's status", func() string {
		s := fetchState(t, url)
		if d := checkModel(t, s, m); d != "" {
			return "the console serves: " + d
		}
		got, want = eval[consolePage](t, ctx, readConsolePage), wantConsolePage(t, s)
		if running {
			got, want = live(got), live(want)
		}
		return fieldDiff(got, want)
	})
	return want
}

// A live job reads a followed file of orders from two shops; the test appends
// the orders phase by phase, and the console shows, exactly, the partitions
// and their watermarks, the partition that holds the watermark back, the late
// and too-late counts, the panes and the too-late events: what /api/status
// serves, and what the orders fed must give. Then the job stops, and the
// page shows its last status, checkpoints included.
func TestBrowserConsole(t *testing.T) {
	ctx := browser(t)
	dir, err := os.MkdirTemp("", "weir-console-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) // after the job has stopped, below
	input := filepath.Join(dir, "orders.jsonl")
	if err := os.WriteFile(input, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	jobFile := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(jobFile, []byte(consoleJob), 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := jobfile.Load(jobFile)
	if err != nil {
		t.Fatal(err)
	}
	rn, err := job.Build(j, job.Options{Console: true, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	cs := rn.Console()
	srv := httptest.NewServer(cs.Handler())
	t.Cleanup(srv.Close)
	recordCtx, stopRecording := context.WithCancel(context.Background())
	t.Cleanup(stopRecording)
	go cs.Record(recordCtx)
	type ended struct {
		sum *job.Summary
		err error
	}
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan ended, 1)
	go func() {
		sum, err := rn.Run(runCtx)
		done <- ended{sum, err}
	}()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			stop()
			<-done
		}
	})

	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(input, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The orders happened a few minutes ago, from the start of a minute.
	m := newModel(mtime.FromTime(time.Now().Truncate(time.Minute).Add(-2 * time.Minute)))
	feed := func(phase ...order) {
		t.Helper()
		var b strings.Builder
		for _, o := range phase {
			b.WriteString(o.line(m.base) + "\n")
		}
		if _, err := f.WriteString(b.String()); err != nil {
			t.Fatal(err)
		}
		m.feed(phase)
		waitUntil(t, ctx, "the job has read the orders", func() string { return checkModel(t, fetchState(t, srv.URL), m) })
		if *updateScreenshots {
			time.Sleep(1500 * time.Millisecond) // history for the charts of the screenshot
		}
	}

	// The north shop is ahead: south holds the watermark back.
	feed(order{"north", "card-1", 1, 5}, order{"south", "card-2", 2, 7}, order{"north", "card-1", 4, 2})
	first := checkConsolePage(t, ctx, srv.URL, m, true)
	if first.HeldBy != "south" || first.Watermark != fmtTime(m.base+999) {
		t.Errorf("held back by %s, watermark %s", first.HeldBy, first.Watermark)
	}
	// Both pass 10 s: [0, 10 s) fires for both cards; north is behind now.
	feed(order{"north", "card-1", 12, 4}, order{"south", "card-2", 13, 6})
	// A late order for [0, 10 s), within the allowed lateness.
	feed(order{"north", "card-1", 8, 1})
	// Both pass 20 s: [10 s, 20 s) fires.
	feed(order{"north", "card-1", 25, 3}, order{"south", "card-2", 26, 2})
	// An order for [0, 10 s), too late now.
	feed(order{"south", "card-2", 3, 9})
	last := checkConsolePage(t, ctx, srv.URL, m, true)
	if last.HeldBy != "north" || last.LateAccepted != "1" || last.TooLate != "1" || len(last.Panes) != len(m.panes) || len(last.Late) != 1 {
		t.Errorf("held back by %s, %s late accepted, %s too late, %d panes, %d too-late events", last.HeldBy, last.LateAccepted, last.TooLate, len(last.Panes), len(last.Late))
	}
	for _, p := range last.Partitions {
		// Nothing waits to be read, and no idle timeout is set.
		if d := p[1]; d != engine.DiagActive && d != engine.DiagInactive {
			t.Errorf("partition %s: %s", p[0], d)
		}
	}
	screenshot(t, ctx, "console-phases.png") // the README's is the walkthrough's (TestConsoleWalkthrough)

	// Stop the job, as Ctrl-C does: with a savepoint.
	stop()
	var end ended
	select {
	case end = <-done:
		stopped = true
	case <-ctx.Done():
		t.Fatal("the job did not stop")
	}
	if end.err != nil || !end.sum.Interrupted || end.sum.Savepoint == "" || end.sum.LateAccepted != m.lateAccepted || end.sum.TooLate != int64(len(m.tooLate)) {
		t.Fatalf("the job stopped with %v: %+v", end.err, end.sum)
	}
	// The page shows the last status, all of it.
	final := checkConsolePage(t, ctx, srv.URL, m, false)
	var st console.StatusReply
	getJSON(t, srv.URL+"/api/status", &st)
	if final.State != "stopped" || !final.Stale || st.Status.Checkpoint.Total == 0 || final.Checkpoints[0] != fmt.Sprint(st.Status.Checkpoint.Total) {
		t.Errorf("after the stop: %s (stale %v), checkpoints %q", final.State, final.Stale, final.Checkpoints)
	}
	if st.Status.State != "stopped" {
		t.Errorf("the status after the stop: %+v", st.Status)
	}
	// A page opened after the end draws the charts of the whole run from
	// the history the server kept, not only from the moment it opened.
	var kept []console.Sample
	getJSON(t, srv.URL+"/api/history", &kept)
	if len(kept) < 2 {
		t.Fatalf("the server kept %d samples of the run", len(kept))
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	checkConsolePage(t, ctx, srv.URL, m, false) // the charts drawn, as above
	if n := eval[string](t, ctx, `document.getElementById("console").dataset.samples`); n != fmt.Sprint(len(kept)) {
		t.Errorf("a page opened after the end draws %s samples; the server kept %d", n, len(kept))
	}
}

// The page shows every count of the accounting, as the summary has them:
// a versioned job's superseded events, revisions too late and revisions
// applied, the filtered, those beyond the de-duplication horizon; a
// sliding window's events too late for some of their windows and those
// that came after their window's trigger had finished. Each job runs to
// its end; the page shows its last status, exactly.
func TestBrowserConsoleCounts(t *testing.T) {
	ctx := browser(t)
	for _, c := range []struct {
		name, job, input string
		// records are the page's counts of records and panes (the state's
		// size aside): read, duplicates, filtered, beyond the
		// de-duplication horizon, too late for some windows, after their
		// trigger finished, superseded, revisions too late, revisions
		// applied, quarantined, lost, windows fired, panes on time, late
		// and early.
		records string
		// aggregations are the page's counts of a job of several
		// aggregations, each name and value, joined by |.
		aggregations string
	}{{
		name: "versions",
		job: `source: {file: input.jsonl}
time: {field: ts}
key: shop
id: order_id
version_field: rev
dedup_horizon: 75s
where: amount > 1
watermark: {delay: 0s, interval: 0s}
window: {tumbling: 1m}
allowed_lateness: 1m
aggregates: {orders: count, total: sum(amount)}
output: out.jsonl
`,
		input: `{"order_id":"o1","rev":1,"shop":"a","ts":"2026-09-01T00:00:50Z","amount":10}
{"order_id":"o1","rev":1,"shop":"a","ts":"2026-09-01T00:00:50Z","amount":10}
{"order_id":"o1","rev":2,"shop":"a","ts":"2026-09-01T00:00:50Z","amount":12}
{"order_id":"o1","rev":1,"shop":"a","ts":"2026-09-01T00:00:50Z","amount":10}
{"order_id":"o2","rev":1,"shop":"a","ts":"2026-09-01T00:00:20Z","amount":1}
{"order_id":"o3","rev":1,"shop":"a","ts":"2026-09-01T00:02:00Z","amount":5}
{"order_id":"o1","rev":3,"shop":"a","ts":"2026-09-01T00:00:50Z","amount":20}
not json
{"order_id":"o4","rev":1,"shop":"a","ts":"2026-09-01T00:00:55Z","amount":5}
{"order_id":"o5","shop":"a","ts":"2026-09-01T00:02:10Z","amount":5}
{"order_id":"o6","rev":1,"shop":"a","ts":"2026-09-01T00:00:40Z","amount":5}
`,
		// o1 rev 1 again a duplicate, rev 2 applied, rev 1 after it
		// superseded; o2 filtered; o3 closes [00:00, 00:01) (00:02 is
		// past its allowed lateness): o1 rev 3 too late for it, o4 too
		// late, o6 behind the de-duplication horizon (00:00:45).
		records: "11 1 1 1 0 0 1 1 1 2 0 2 2 0 0",
	}, {
		name: "finished",
		job: `source: {file: input.jsonl}
time: {field: ts}
key: shop
watermark: {delay: 0s, interval: 0s}
window: {sliding: {size: 10s, slide: 5s}}
allowed_lateness: 1m
trigger: {or_finally: {trigger: {repeatedly: {count: 2}}, until: {after_watermark: {}}}}
aggregates: {n: count}
output: out.jsonl
`,
		input: `{"shop":"a","ts":"2026-09-01T00:00:01Z"}
{"shop":"a","ts":"2026-09-01T00:00:02Z"}
{"shop":"a","ts":"2026-09-01T00:00:06Z"}
{"shop":"a","ts":"2026-09-01T00:00:11Z"}
{"shop":"a","ts":"2026-09-01T00:00:04Z"}
{"shop":"a","ts":"2026-09-01T00:00:08Z"}
{"shop":"a","ts":"2026-09-01T00:01:30Z"}
{"shop":"a","ts":"2026-09-01T00:00:09Z"}
`,
		// 00:00:04 for [-5 s, 5 s) and [0, 10 s), both finished (too
		// late); 00:00:08 for [0, 10 s), finished, and [5 s, 15 s),
		// which takes it; 00:00:09 too late.
		records: "8 0 0 0 1 2 0 0 0 0 0 6 6 0 3",
	}, {
		name: "several",
		job: `source: {file: input.jsonl}
time: {field: ts}
watermark: {delay: 0s, interval: 0s}
aggregations:
  per_shop:
    key: shop
    window: {tumbling: 10s}
    aggregates: {n: count}
    output: shops.jsonl
  sliding:
    window: {sliding: {size: 20s, slide: 10s}}
    aggregates: {n: count}
    output: sliding.jsonl
`,
		input: `{"shop":"a","ts":"2026-09-01T00:00:01Z"}
{"shop":"b","ts":"2026-09-01T00:00:12Z"}
{"shop":"a","ts":"2026-09-01T00:00:09Z"}
{"shop":"a","ts":"2026-09-01T00:00:25Z"}
`,
		// 00:00:09 comes after the watermark passed 00:00:10: too late for
		// [00:00, 00:10), per shop and sliding; sliding's [00:00:00,
		// 00:00:20) takes it. The counts above are per_shop's, but for
		// the panes, which are every window stage's: 3 and 4.
		records:      "4 0 0 0 0 0 0 0 0 0 0 3 7 0 0",
		aggregations: "per_shop: accepted|3|per_shop: too late|1|per_shop: too late for some windows|0|sliding: accepted|4|sliding: too late|0|sliding: too late for some windows|1",
	}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(c.input), 0o644)
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte("name: "+c.name+"\n"+c.job), 0o644)
			j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			rn, err := job.Build(j, job.Options{Console: true, Log: io.Discard})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := rn.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			cs := rn.Console()
			cs.Ended(rn.Engine())
			srv := httptest.NewServer(cs.Handler())
			defer srv.Close()
			if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
				t.Fatal(err)
			}
			// The clock aside (a stopped job's status is as of each
			// request), and the charts, which the counts are not.
			var got consolePage
			waitUntil(t, ctx, "the console shows the job's last status", func() string {
				got = live(eval[consolePage](t, ctx, readConsolePage))
				want := live(wantConsolePage(t, fetchState(t, srv.URL)))
				got.Charts, want.Charts = nil, nil
				return fieldDiff(got, want)
			})
			if records := strings.Join(got.Records[:len(got.Records)-1], " "); records != c.records {
				t.Errorf("the page's counts %s, want %s", records, c.records)
			}
			if aggs := strings.Join(got.Aggregations, "|"); aggs != c.aggregations {
				t.Errorf("the page's aggregations %s, want %s", aggs, c.aggregations)
			}
		})
	}
}
