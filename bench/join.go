package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
)

// joinOrders is how many orders the join benchmarks read, with a payment
// for 80% of them.
const joinOrders = 300_000

// The join group: orders without a payment within 10 minutes, a job file's
// interval join (kind anti) of two recorded files, beside a hand-written
// floor that reads the same files and computes the same orders.
func init() {
	register(Bench{
		Name: "join-run", Group: "join",
		About: "weir run of an anti interval join of 300K orders with 240K payments, two files read in one order by arrival (the unpaid-orders recipe's job)",
		Setup: func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
			return joinSetup(joinRunFiles)
		},
	})
	// The same job on the Pebble backend, and a join whose state is every
	// order read (its interval a day), on each backend.
	onDisk := fmt.Sprintf("state: {backend: pebble, memory_budget: %dMiB, dir: state}\n", pebbleBudget>>20)
	for _, v := range []struct{ name, about, job string }{
		{"join-pebble", fmt.Sprintf("join-run on the Pebble backend (%d MiB budget)", pebbleBudget>>20), joinJob + onDisk},
		{"join-wide-memory", "join-run with an interval of a day: every order held until the input ends (the memory backend)", wideJoin(joinJob)},
		{"join-wide-pebble", fmt.Sprintf("join-wide-memory on the Pebble backend (%d MiB budget)", pebbleBudget>>20), wideJoin(joinJob) + onDisk},
	} {
		register(Bench{
			Name: v.name, Group: "join", About: v.about,
			Setup: func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
				return joinSetupJob(v.job, joinRunFiles)
			},
		})
	}
	register(Bench{
		Name: "join-floor", Group: "join",
		About: "the floor for join-run: both files read and merged by arrival by hand, their fields read with fastjson, the orders kept in a map until a payment or their 10 minutes past the watermark, the unpaid ones written to io.Discard",
		Setup: func() (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
			return joinSetup(joinFloor)
		},
	})
}

// joinJob is the benchmark's job, on orders.jsonl and payments.jsonl.
const joinJob = `name: unpaid
source: {file: orders.jsonl}
time: {field: ts, arrival_field: arrival}
key: order_id
join:
  with: {source: {file: payments.jsonl}, time: {field: paid_at, arrival_field: arrival}, key: order_id}
  between: [0s, 10m]
  kind: anti
watermark: {delay: 5s, interval: 0s}
output: unpaid.jsonl
`

// joinSetup writes the orders and payments into a directory of their own,
// outside the measured time, and returns run on it, repeated for the
// benchmark's duration: the events the runs read, and the unpaid orders
// each found (which the two benchmarks compare).
func joinSetup(run func(dir string) (events, unpaid int64, err error)) (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
	return joinSetupJob(joinJob, run)
}

// joinSetupJob is joinSetup with the job file's text.
func joinSetupJob(text string, run func(dir string) (events, unpaid int64, err error)) (func(time.Duration) (int64, map[string]float64, string, error), func(), error) {
	dir, err := os.MkdirTemp("", "weir-bench-join-")
	if err != nil {
		return nil, nil, err
	}
	teardown := func() { os.RemoveAll(dir) }
	if err := writeJoinInputs(dir, text); err != nil {
		teardown()
		return nil, nil, err
	}
	return func(d time.Duration) (int64, map[string]float64, string, error) {
		// A run of the floor takes a third of a second: one alone is
		// mostly the machine's noise. The runs are repeated for the
		// benchmark's duration, and their events summed.
		var events, unpaid int64
		start := time.Now()
		runs := 0
		for ; runs == 0 || time.Since(start) < d; runs++ {
			os.Remove(filepath.Join(dir, "unpaid.jsonl"))
			n, u, err := run(dir)
			if err != nil {
				return events, nil, "", err
			}
			if runs > 0 && u != unpaid {
				return events, nil, "", fmt.Errorf("run %d found %d unpaid orders, the first %d", runs+1, u, unpaid)
			}
			events, unpaid = events+n, u
		}
		return events, map[string]float64{"unpaid": float64(unpaid)}, fmt.Sprintf("%d unpaid orders (%d runs)", unpaid, runs), nil
	}, teardown, nil
}

// wideJoin is a join job with an interval of a day instead of ten minutes.
func wideJoin(text string) string {
	return strings.Replace(text, "between: [0s, 10m]", "between: [0s, 24h]", 1)
}

// writeJoinInputs writes the orders, one every 100 ms with up to 2 s of
// disorder, and their payments (80% of them, 0 to 15 minutes later), each
// file in arrival order.
func writeJoinInputs(dir, job string) error {
	const base = 1_780_000_000_000
	var orders, payments strings.Builder
	type pay struct {
		at   int64
		line string
	}
	var pays []pay
	seed := uint64(11)
	next := func(m int64) int64 {
		seed = seed*6364136223846793005 + 1442695040888963407
		return int64(seed>>33) % m
	}
	for i := range int64(joinOrders) {
		arrival := base + i*100
		ts := arrival - next(2000)
		fmt.Fprintf(&orders, `{"order_id":"o%d","ts":%d,"arrival":%d,"amount":%d.%02d}`+"\n", i, ts, arrival, next(300), next(100))
		if next(10) < 8 {
			paid := ts + next(15*60_000)
			pays = append(pays, pay{paid + 500, fmt.Sprintf(`{"order_id":"o%d","paid_at":%d,"arrival":%d}`, i, paid, paid+500)})
		}
	}
	slices.SortStableFunc(pays, func(a, b pay) int { return int(a.at - b.at) })
	for _, p := range pays {
		payments.WriteString(p.line + "\n")
	}
	for _, f := range []struct{ name, text string }{{"orders.jsonl", orders.String()}, {"payments.jsonl", payments.String()}, {"job.yaml", job}} {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.text), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// joinRunFiles runs the job file on the files of dir.
func joinRunFiles(dir string) (int64, int64, error) {
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		return 0, 0, err
	}
	rn, err := job.Build(j, job.Options{Log: io.Discard})
	if err != nil {
		return 0, 0, err
	}
	sum, err := rn.Run(context.Background())
	if err != nil {
		return 0, 0, err
	}
	return sum.Read + sum.Join.With.Read, sum.Join.Unmatched, nil
}

// joinFloor computes the job's unpaid orders by hand: both files read a
// line at a time, merged by arrival, their fields read with fastjson; each
// order kept in a map until its payment comes or the watermark (the least
// of the two inputs' latest time, less the delay) passes its ten minutes;
// those written as the job writes them, to io.Discard. It knows the files
// are valid and in order, and checks nothing else.
func joinFloor(dir string) (int64, int64, error) {
	type side struct {
		lines  *source.Lines
		f      *os.File
		p      fastjson.Parser
		v      *fastjson.Value
		raw    []byte
		at     int64
		maxTS  int64
		done   bool
		timeOf string
	}
	open := func(name, timeOf string) (*side, error) {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		return &side{f: f, lines: source.NewLines(f, 0, 0, 0), timeOf: timeOf, maxTS: -1 << 62}, nil
	}
	o, err := open("orders.jsonl", "ts")
	if err != nil {
		return 0, 0, err
	}
	defer o.f.Close()
	p, err := open("payments.jsonl", "paid_at")
	if err != nil {
		return 0, 0, err
	}
	defer p.f.Close()
	advance := func(s *side) error {
		ln, ok := s.lines.Next()
		if !ok {
			s.done = true
			return s.lines.Err()
		}
		v, err := s.p.ParseBytes(ln.Text)
		if err != nil {
			return err
		}
		s.v, s.raw, s.at = v, ln.Text, v.GetInt64("arrival")
		return nil
	}
	if err := advance(o); err != nil {
		return 0, 0, err
	}
	if err := advance(p); err != nil {
		return 0, 0, err
	}
	type order struct {
		ts  int64
		raw []byte
	}
	const delay, upper = 5000, 10 * 60_000
	open_ := map[string]order{}
	var expiries []struct {
		at  int64
		key string
	}
	paid := map[string]bool{}
	early := map[string]int64{} // payments that came before their order
	var out []byte
	var events, unpaid int64
	wm := int64(-1 << 62)
	for !o.done || !p.done {
		s := o
		if o.done || (!p.done && p.at < o.at) {
			s = p
		}
		events++
		ts := s.v.GetInt64(s.timeOf)
		key := string(s.v.GetStringBytes("order_id"))
		s.maxTS = max(s.maxTS, ts)
		if s == o {
			open_[key] = order{ts, append([]byte(nil), s.raw...)}
			expiries = append(expiries, struct {
				at  int64
				key string
			}{ts + upper, key})
			if at, ok := early[key]; ok && at >= ts && at <= ts+upper && at > wm {
				paid[key] = true
			}
		} else if ord, ok := open_[key]; ok && ts >= ord.ts && ts <= ord.ts+upper && ts > wm {
			paid[key] = true
		} else if !ok && ts > wm {
			// Before its order: kept until the watermark passes it.
			early[key] = ts
		}
		if err := advance(s); err != nil {
			return 0, 0, err
		}
		if w := min(o.maxTS, p.maxTS) - delay - 1; w > wm {
			wm = w
			if len(early) > 1024 {
				for k, at := range early {
					if at <= wm {
						delete(early, k)
					}
				}
			}
			for len(expiries) > 0 && expiries[0].at <= wm {
				k := expiries[0].key
				expiries = expiries[1:]
				if ord, ok := open_[k]; ok {
					if !paid[k] {
						unpaid++
						out = append(out[:0], `{"key":"`...)
						out = append(out, k...)
						out = append(out, `","time":"`...)
						out = mtime.Time(ord.ts).AppendFormat(out)
						out = append(out, `","matched":false,"left":{"event":`...)
						out = append(out, ord.raw...)
						out = append(out, "}}\n"...)
						io.Discard.Write(out)
					}
					delete(open_, k)
					delete(paid, k)
				}
			}
		}
	}
	for _, k := range expiries {
		if _, ok := open_[k.key]; ok && !paid[k.key] {
			unpaid++
		}
	}
	return events, unpaid, nil
}
