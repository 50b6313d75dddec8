package bench

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
	_ "modernc.org/sqlite"
)

// SoakKeys is the number of cards of the soak benchmark; SoakRate its
// events per second.
var (
	SoakKeys = 1_000_000
	SoakRate = 10_000
)

// soakBudget is the soak job's memory_budget; the target is a peak RSS
// within it plus 256 MiB.
const soakBudget = 256 << 20

func init() {
	register(Bench{
		Name: "soak", Group: "soak", Explicit: true,
		About: "a live job for --duration (10m for the real run) on a followed file: 1M cards, Pebble state (256 MiB budget), 5-minute windows upserted into SQLite exactly once, " +
			"1% too-late events, 5% bad lines and a 256 KiB bad line every 10 s, the table locked by another writer from 30% to 80% of the run; " +
			"peak RSS against the budget and every line accounted for",
		Run: soak,
	})
}

const soakJob = `name: soak
source: {file: in.jsonl, follow: true}
time: {field: ts}
key: card
watermark: {delay: 2s, interval: 500ms}
window: {tumbling: 5m}
aggregates: {orders: count, spent: sum(amount)}
output:
  - sqlite: {path: out.db, table: soak}
late_output: late.jsonl
quarantine: quarantine.jsonl
state: {backend: pebble, dir: state, memory_budget: 256MiB}
checkpoint: {dir: ckpt, interval: 10s}
`

// soak writes events into a file a live job follows, at SoakRate, for d:
// good events over SoakKeys cards, events an hour old (too late), bad
// lines, and now and then a long bad line. From 30% to 80% of d another
// connection holds the SQLite database's write lock, so that the job's
// commits fail and are retried, and reading pauses. Then the writer stops,
// the job reads what is left, and stops with a savepoint; the figures are
// the peak RSS of the process (Measure) against the budget and the
// accounting of every line.
func soak(d time.Duration) (int64, map[string]float64, string, error) {
	dir, err := os.MkdirTemp("", "weir-soak-")
	if err != nil {
		return 0, nil, "", err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(soakJob), 0o644); err != nil {
		return 0, nil, "", err
	}
	in, err := os.Create(filepath.Join(dir, "in.jsonl"))
	if err != nil {
		return 0, nil, "", err
	}
	defer in.Close()
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		return 0, nil, "", err
	}
	rn, err := job.Build(j, job.Options{})
	if err != nil {
		return 0, nil, "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		sum *job.Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := rn.Run(ctx)
		done <- result{sum, err}
	}()

	// The writer: one batch of lines every 100 ms.
	var written, good, late, bad atomic.Int64
	var paused atomic.Int64 // status reports that said reading was paused
	rng := rand.New(rand.NewPCG(1, 2))
	w := bufio.NewWriterSize(in, 1<<20)
	long := strings.Repeat("x", 256<<10)
	start := time.Now()
	lockAt, unlockAt := start.Add(d*3/10), start.Add(d*8/10)
	var lock *sql.Tx
	var lockDB *sql.DB
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var line []byte
	for n := 0; time.Since(start) < d; n++ {
		now := time.Now()
		if lock == nil && lockDB == nil && now.After(lockAt) {
			if lockDB, lock, err = lockSQLite(filepath.Join(dir, "out.db")); err != nil {
				return 0, nil, "", err
			}
		}
		if lock != nil && now.After(unlockAt) {
			lock.Rollback()
			lock = nil
		}
		for range SoakRate / 10 {
			line = line[:0]
			switch r := rng.IntN(100); {
			case r < 5:
				line = append(line, "not json at all\n"...)
				bad.Add(1)
			case r < 6 && n >= 30: // once the watermark is 3 s in
				line = soakEvent(line, rng, now.Add(-time.Hour))
				late.Add(1)
			default:
				line = soakEvent(line, rng, now)
				good.Add(1)
			}
			w.Write(line)
			written.Add(1)
		}
		if n%100 == 0 {
			w.WriteString(long + "\n")
			bad.Add(1)
			written.Add(1)
		}
		if err := w.Flush(); err != nil {
			return 0, nil, "", err
		}
		if st := rn.Engine().Control().Status(ctx, time.Second); st.Backpressure != "" {
			paused.Add(1)
		}
		<-tick.C
	}
	if lock != nil {
		lock.Rollback()
	}
	if lockDB != nil {
		lockDB.Close()
	}
	// Let the job read what is left and commit what it wrote, then stop it
	// (a savepoint).
	drained := false
	for deadline := time.Now().Add(5 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		st := rn.Engine().Control().Status(ctx, time.Second)
		committed := true
		for _, k := range st.Sinks {
			committed = committed && k.Committed == k.Written
		}
		if st.Counts.Read == written.Load() && committed {
			drained = true
			break
		}
	}
	cancel()
	r := <-done
	if r.err != nil {
		return 0, nil, "", r.err
	}
	s := r.sum
	extra := map[string]float64{
		"budget_mib":     soakBudget >> 20,
		"written":        float64(written.Load()),
		"read":           float64(s.Read),
		"accepted":       float64(s.Accepted),
		"too_late":       float64(s.TooLate),
		"quarantined":    float64(s.Quarantined),
		"panes_written":  float64(s.PanesWritten),
		"panes_fired":    float64(s.PanesFired),
		"paused_reports": float64(paused.Load()),
	}
	var problems []string
	if !drained {
		problems = append(problems, "the job had not read and committed every line 5 minutes after the writer stopped")
	}
	if s.Read != written.Load() {
		problems = append(problems, fmt.Sprintf("read %d of %d lines", s.Read, written.Load()))
	}
	if !s.Accounting.Balanced() {
		got := s.Read - s.Accounting.InFlight()
		problems = append(problems, fmt.Sprintf("the counts add up to %d, not to the %d lines read", got, s.Read))
	}
	if s.Quarantined != bad.Load() || s.TooLate != late.Load() || s.Accepted != good.Load() {
		problems = append(problems, fmt.Sprintf("quarantined %d (wrote %d bad), too late %d (wrote %d), accepted %d (wrote %d)",
			s.Quarantined, bad.Load(), s.TooLate, late.Load(), s.Accepted, good.Load()))
	}
	for name, want := range map[string]int64{"quarantine.jsonl": s.Quarantined, "late.jsonl": s.TooLate} {
		if n, err := countLines(filepath.Join(dir, name)); err != nil || n != want {
			problems = append(problems, fmt.Sprintf("%s has %d lines (%v), want %d", name, n, err, want))
		}
	}
	if s.PanesWritten != s.PanesFired {
		problems = append(problems, fmt.Sprintf("%d panes fired, %d written", s.PanesFired, s.PanesWritten))
	}
	if paused.Load() == 0 {
		problems = append(problems, "reading never paused while the table was locked")
	}
	note := "every line accounted for"
	if problems != nil {
		note = "NOT ACCOUNTED: " + strings.Join(problems, "; ")
	}
	return s.Read, extra, note, nil
}

// soakEvent appends an order of a random card at t.
func soakEvent(b []byte, rng *rand.Rand, t time.Time) []byte {
	b = append(b, `{"card":"c`...)
	b = strconv.AppendInt(b, int64(rng.IntN(SoakKeys)), 10)
	b = append(b, `","ts":`...)
	b = strconv.AppendInt(b, t.UnixMilli(), 10)
	b = append(b, `,"amount":`...)
	b = strconv.AppendInt(b, int64(rng.IntN(10000)), 10)
	b = append(b, ".50}\n"...)
	return b
}

// lockSQLite takes the write lock of the database at path, from a
// connection of its own, once the job has made it.
func lockSQLite(path string) (*sql.DB, *sql.Tx, error) {
	for range 100 {
		if _, err := os.Stat(path); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=exclusive")
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return db, tx, nil
}

// countLines counts the lines of a file.
func countLines(path string) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var n int64
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			n++
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			break
		}
	}
	return n, nil
}
