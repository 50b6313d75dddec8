package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/console"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
)

// JSONLines is the number of lines of benchmark (2).
var JSONLines = 10_000_000

// The density of benchmark (2) in events per second of event time: at
// 10,000/s each of the 100K keys has about 6 events per one-minute window
// (1.7M panes for 10M lines); the sparse variant, at 1,000/s, makes almost
// one pane per line, so it measures the cost of windows and output more than
// that of reading.
const (
	jsonlRate       = 10_000
	jsonlSparseRate = 1_000
)

func init() {
	register(Bench{
		Name: "jsonl-run", Group: "jsonl",
		About: "weir run over a file of 10M JSON lines: tumbling count and sum, 100K keys, 10K events/s of event time",
		Setup: onFile(jsonlInput(jsonlRate), jsonlRun),
	})
	register(Bench{
		Name: "jsonl-parse-only", Group: "jsonl",
		About: "the floor for jsonl-run: read the same lines and parse the fields the job uses, nothing else",
		Setup: onFile(jsonlInput(jsonlRate), jsonlParseOnly),
	})
	register(Bench{
		Name: "jsonl-run-metrics", Group: "jsonl",
		About: "jsonl-run serving its console (weir run --http), with /metrics and /api/status scraped every second",
		Setup: onFile(jsonlInput(jsonlRate), func(in string) (int64, map[string]float64, string, error) {
			return jsonlRunIn(jsonlJob, in, true)
		}),
	})
	register(Bench{
		Name: "jsonl-run-where", Group: "jsonl",
		About: "jsonl-run with a where: that keeps every line (amount >= 0 && card != \"\"): what evaluating a filter costs",
		Setup: onFile(jsonlInput(jsonlRate), func(in string) (int64, map[string]float64, string, error) {
			return jsonlRunIn(jsonlWhereJob, in, false)
		}),
	})
	register(Bench{
		Name: "jsonl-run-percentile", Group: "jsonl",
		About: "jsonl-run with its sum a percentile: tumbling count and percentile(amount, 0.95), from a DDSketch a window",
		Setup: onFile(jsonlInput(jsonlRate), func(in string) (int64, map[string]float64, string, error) {
			return jsonlRunIn(jsonlPercentileJob, in, false)
		}),
	})
	register(Bench{
		Name: "jsonl-run-sparse", Group: "jsonl",
		About: "as jsonl-run at 1K events/s of event time: nearly one window and one pane per line",
		Setup: onFile(jsonlInput(jsonlSparseRate), jsonlRun),
	})
}

// jsonlInput is JSONLFile of rate, for onFile.
func jsonlInput(rate int) func() (string, error) {
	return func() (string, error) { return JSONLFile(rate) }
}

// JSONLFile returns the benchmark's input, writing it first if needed: lines
// in arrival order, 100,000 cards, rate lines per second of event time, a
// jitter of up to 2 s.
func JSONLFile(rate int) (string, error) {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("weir-bench-%d-%d.jsonl", JSONLines, rate))
	if st, err := os.Stat(path); err == nil && st.Size() > int64(JSONLines)*50 {
		return path, nil
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return "", err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(1, 2))
	var b []byte
	for i := 0; i < JSONLines; i++ {
		arr := int64(tumblingBase) + int64(i)*1000/int64(rate)
		b = append(b[:0], `{"id":"e`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `","card":"c`...)
		b = strconv.AppendInt(b, int64(r.IntN(100_000)), 10)
		b = append(b, `","amount":`...)
		b = strconv.AppendInt(b, int64(r.IntN(200)), 10)
		b = append(b, '.')
		b = strconv.AppendInt(b, int64(10+r.IntN(90)), 10)
		b = append(b, `,"ts":"`...)
		b = mtime.Time(arr - int64(r.IntN(2000))).AppendFormat(b)
		b = append(b, `","arrival":"`...)
		b = mtime.Time(arr).AppendFormat(b)
		b = append(b, "\"}\n"...)
		w.Write(b)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", err
	}
	f.Close()
	return path, os.Rename(tmp, path)
}

const jsonlJob = `name: bench
source: {file: %s}
time: {field: ts, arrival_field: arrival}
key: card
watermark: {delay: 2s, interval: 200ms}
window: {tumbling: 1m}
aggregates: {orders: count, spent: sum(amount)}
output: %s
`

// jsonlWhereJob is jsonlJob with a filter that keeps every line.
var jsonlWhereJob = jsonlJob + `where: 'amount >= 0 && card != ""'` + "\n"

// jsonlPercentileJob is jsonlJob with a percentile for the sum.
var jsonlPercentileJob = strings.Replace(jsonlJob, "spent: sum(amount)", "p95: percentile(amount, 0.95)", 1)

// jsonlRun runs the job over the lines of the file in.
func jsonlRun(in string) (int64, map[string]float64, string, error) {
	return jsonlRunIn(jsonlJob, in, false)
}

// jsonlRunIn runs the job jobText over the file in, its panes written to a
// temporary directory removed after.
func jsonlRunIn(jobText, in string, served bool) (int64, map[string]float64, string, error) {
	dir, err := os.MkdirTemp("", "weir-bench-")
	if err != nil {
		return 0, nil, "", err
	}
	defer os.RemoveAll(dir)
	return jsonlRunText(jobText, in, filepath.Join(dir, "out.jsonl"), served)
}

// jsonlRunTo runs the job over the file in, writing its panes to out.
func jsonlRunTo(in, out string, served bool) (int64, map[string]float64, string, error) {
	return jsonlRunText(jsonlJob, in, out, served)
}

// jsonlRunText runs the job jobText (a format of the input's and the
// output's paths) over the file in, writing its panes to out.
func jsonlRunText(jobText, in, out string, served bool) (int64, map[string]float64, string, error) {
	dir := filepath.Dir(out)
	j, err := jobfile.Parse([]byte(fmt.Sprintf(jobText, in, out)), "bench.yaml", dir)
	if err != nil {
		return 0, nil, "", err
	}
	rn, err := job.Build(j, job.Options{Console: served})
	if err != nil {
		return 0, nil, "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scrapes := 0
	done := make(chan struct{})
	if served {
		addr, err := console.Listen(ctx, "127.0.0.1:0", rn.Console())
		if err != nil {
			return 0, nil, "", err
		}
		go func() {
			defer close(done)
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				for _, path := range []string{"/metrics", "/api/status"} {
					if resp, err := http.Get("http://" + addr.String() + path); err == nil {
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						scrapes++
					}
				}
			}
		}()
	} else {
		close(done)
	}
	sum, err := rn.Run(ctx)
	cancel()
	<-done
	if err != nil {
		return 0, nil, "", err
	}
	extra := map[string]float64{"panes": float64(sum.PanesWritten)}
	if served {
		extra["scrapes"] = float64(scrapes)
	}
	return sum.Read, extra, "", nil
}

// jsonlParseOnly reads every line and the fields the job reads (event time,
// arrival time, key, amount), with the same reader and parser, and does
// nothing with them.
func jsonlParseOnly(in string) (int64, map[string]float64, string, error) {
	f, err := os.Open(in)
	if err != nil {
		return 0, nil, "", err
	}
	defer f.Close()
	lines := source.NewLines(f, 0, 0, 0)
	var p fastjson.Parser
	var n, keyBytes int64
	var last mtime.Time
	var spent float64
	for {
		ln, ok := lines.Next()
		if !ok {
			break
		}
		v, err := p.ParseBytes(ln.Text)
		if err != nil {
			return n, nil, "", err
		}
		ts, _ := source.Time(v.Get("ts"))
		arr, _ := source.Time(v.Get("arrival"))
		keyBytes += int64(len(v.GetStringBytes("card")))
		spent += v.GetFloat64("amount")
		last = max(last, ts, arr)
		n++
	}
	return n, map[string]float64{"key_bytes": float64(keyBytes)}, "", lines.Err()
}
