package crashall

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/twmb/avro"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
	_ "modernc.org/sqlite"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/pgtest"
	"github.com/weirstream/weir/job"
)

var (
	nSchedules = flag.Int("schedules", 100, "how many schedules to run: seeds 1 to N (20 with -short)")
	onlySeed   = flag.Uint64("seed", 0, "run only the schedule of this seed")
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(child(spec))
	}
	code := m.Run()
	world.close()
	os.Exit(code)
}

// world is what every schedule shares: a Kafka broker that can be
// restarted with its data, and a PostgreSQL cluster.
var world shared

type shared struct {
	once  sync.Once
	err   error
	mu    sync.Mutex // guards kafka and addr across restarts
	kafka *kfake.Cluster
	kport int
	kdir  string
	addr  string
	pgDir string
	pgDSN string
	pgEnd func()
	// reg is the schema registry of the Avro outputs: in process, it
	// outlives the broker's restarts.
	reg    *srfake.Registry
	schema map[int]*avro.Schema // by id, as the registry has them
}

func (w *shared) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.kafka != nil {
		w.kafka.Close()
	}
	if w.pgEnd != nil {
		w.pgEnd()
	}
	if w.reg != nil {
		w.reg.Close()
	}
	if w.pgDir != "" {
		os.RemoveAll(w.pgDir)
	}
	if w.kdir != "" {
		os.RemoveAll(w.kdir)
	}
}

func setUp(t *testing.T) {
	t.Helper()
	world.once.Do(func() {
		if world.kdir, world.err = os.MkdirTemp("", "weir-crashall-kafka-"); world.err != nil {
			return
		}
		if world.err = startKafka(0); world.err != nil {
			return
		}
		if world.pgDir, world.err = os.MkdirTemp("", "weir-crashall-pg-"); world.err != nil {
			return
		}
		world.pgDSN, world.pgEnd, world.err = pgtest.Start(world.pgDir)
		world.reg = srfake.New()
	})
	if world.err != nil {
		t.Fatalf("the test's broker and database: %v", world.err)
	}
}

// startKafka starts the broker on port (0: a free one) with its data in
// the world's directory.
func startKafka(port int) error {
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.DataDir(world.kdir)}
	if port != 0 {
		opts = append(opts, kfake.Ports(port))
	}
	var c *kfake.Cluster
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		if c, err = kfake.NewCluster(opts...); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // the port is still being released
	}
	if err != nil {
		return err
	}
	world.kafka, world.addr = c, c.ListenAddrs()[0]
	fmt.Sscanf(world.addr[strings.LastIndexByte(world.addr, ':')+1:], "%d", &world.kport)
	return nil
}

// restartKafka stops the broker and starts it again after pause, with its
// data.
func restartKafka(t *testing.T, pause time.Duration) {
	world.mu.Lock()
	defer world.mu.Unlock()
	world.kafka.Close()
	time.Sleep(pause)
	if err := startKafka(world.kport); err != nil {
		t.Fatalf("restarting the broker: %v", err)
	}
}

func kafkaClient(t *testing.T) *kgo.Client {
	t.Helper()
	world.mu.Lock()
	addr := world.addr
	world.mu.Unlock()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// TestCrashEverything runs the schedules: see the package's doc.
func TestCrashEverything(t *testing.T) {
	setUp(t)
	n := *nSchedules
	if testing.Short() && n == 100 {
		n = 20
	}
	seeds := []uint64{}
	for s := uint64(1); s <= uint64(n); s++ {
		seeds = append(seeds, s)
	}
	if *onlySeed != 0 {
		seeds = []uint64{*onlySeed}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			sc := newSchedule(seed)
			t.Logf("seed %d: %s", seed, sc)
			defer func() {
				if t.Failed() {
					for _, l := range sc.logs {
						t.Log(l)
					}
					t.Logf("replay: go test ./internal/crashall -run 'TestCrashEverything/^%d$' -v   (or -seed %d)", seed, seed)
				}
			}()
			sc.run(t)
		})
	}
}

// output kinds
const (
	kFile     = "file"
	kKafka    = "kafka"
	kSQLite   = "sqlite"
	kPostgres = "postgres"
	kNone     = ""
)

// schedule is one seed's job, outputs and faults.
type schedule struct {
	seed      uint64
	rng       *rand.Rand
	kafkaIn   bool // the input is a topic (a live job), else a recorded file
	lines     int
	window    string
	lateness  string
	mode      string
	dedup     bool
	trigger   string
	results   []string // kinds of the results' outputs
	late      string
	quar      string
	ckptEvery int64
	spEvery   int64
	held      string // checkpoint.max_held_output: early checkpoints when an output fills up
	torn      bool   // a kill at a write of more than a page leaves its first pages
	rerun     bool   // the finished job is run again by the same command
	bigKeys   bool   // keys and ids are integers beyond 64 bits, which a float64 would merge
	avroOut   bool   // the results' topic holds Avro in a schema registry's framing
	avroIn    bool   // the input topic holds Avro in a schema registry's framing
	// second is the window of a second aggregation of the same read (its
	// panes in second.jsonl, its summary in second.json), or "".
	second string
	// join, when set, makes the job an interval join of the input with a
	// second recorded file (limits.jsonl) by card, of this kind: its
	// records in results.jsonl (or topic), instead of windows. joinAs
	// is "interval", "temporal" (the limits a versioned table, a limit of
	// 0 deleting a card's row) or "window" (a window join of 5 s).
	join   string
	joinAs string
	// lookup makes the job a left_outer lookup of each event's card in
	// an SQLite table (limits.db) instead of windows: its records in
	// results.jsonl (or topic), each with the time its row was read, which
	// a restore reads again (its cache is not state).
	lookup bool
	// pebble keeps the windows (or the join's buffers) in the Pebble
	// backend, with a budget so small that keys leave its cache and are
	// read back; the reference run keeps them in memory, so its outputs
	// are the memory backend's.
	pebble bool
	plan   []step
	logs   []string // what each run said, for a failure's report
}

// step is one run of the plan, and what happens before and during it.
type step struct {
	before string // corrupt, older-savepoint, restart-broker, delete-input, replace-input, replace-output
	kill   string // op, batch, stop, torn-write (the at-th write of more than a page to results.jsonl), "" (to the end)
	at     int64
	during string // cut-db, restart-broker
}

func (s step) String() string {
	var parts []string
	if s.before != "" {
		parts = append(parts, s.before)
	}
	switch s.kill {
	case "op":
		parts = append(parts, fmt.Sprintf("kill -9 at file op %d", s.at))
	case "batch":
		parts = append(parts, fmt.Sprintf("kill -9 after batch %d", s.at))
	case "stop":
		parts = append(parts, fmt.Sprintf("stop after batch %d", s.at))
	case "torn-write":
		parts = append(parts, fmt.Sprintf("kill -9 in the middle of write %d of results.jsonl", s.at))
	default:
		parts = append(parts, "run to the end")
	}
	if s.during != "" {
		parts = append(parts, "with "+s.during)
	}
	return strings.Join(parts, ", ")
}

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

func newSchedule(seed uint64) *schedule {
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	s := &schedule{seed: seed, rng: r}
	s.kafkaIn = r.IntN(5) == 0
	s.lines = 4000 + r.IntN(12000)
	s.window = pick(r, "{tumbling: 10s}", "{tumbling: 1m}", "{sliding: {size: 1m, slide: 20s}}", "{session: {gap: 5s}}")
	s.lateness = pick(r, "0s", "10s", "1m")
	s.mode = pick(r, "accumulating", "discarding", "retracting")
	s.dedup = r.IntN(2) == 0
	if !s.kafkaIn {
		// Triggers that act on processing time: a replay's is its
		// arrival times, the same from run to run.
		s.trigger = pick(r, "", "", "{early: 10s}", "{late: 5s}", "{late: {count: 3}}")
	}
	kinds := []string{kFile, kKafka, kSQLite, kPostgres}
	r.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	s.results = kinds[:1+r.IntN(3)]
	s.late = pick(r, kNone, kFile, kKafka)
	s.quar = pick(r, kNone, kFile, kKafka)
	s.ckptEvery = int64(1 + r.IntN(3))
	s.spEvery = int64(pick(r, 0, 0, 3, 5))
	nruns := 1 + r.IntN(4)
	for i := 0; i < nruns; i++ {
		st := step{}
		switch r.IntN(4) {
		case 0, 1:
			st.kill, st.at = "op", int64(1+r.IntN(120))
		case 2:
			st.kill, st.at = "batch", int64(1+r.IntN(12))
		case 3:
			st.kill, st.at = "stop", int64(1+r.IntN(12))
		}
		if i > 0 && r.IntN(3) == 0 && s.plan[i-1].kill != "" {
			// The second of two kills within one checkpoint interval.
			st.kill, st.at = "batch", 1
		}
		st.before = s.fault(i)
		s.plan = append(s.plan, st)
	}
	last := step{before: s.fault(nruns)}
	if r.IntN(4) == 0 {
		last.during = pick(r, "cut-db", "restart-broker")
	}
	s.plan = append(s.plan, last)
	// Drawn last, so that the draws before it are those of the schedules
	// of earlier versions of this test.
	s.held = pick(r, "", "", "64KiB")
	s.torn = r.IntN(3) == 0
	s.rerun = r.IntN(2) == 0
	s.bigKeys = r.IntN(3) == 0
	s.avroOut = slices.Contains(s.results, kKafka) && r.IntN(2) == 0
	// Avro's long cannot hold the big keys.
	s.avroIn = s.kafkaIn && !s.bigKeys && r.IntN(2) == 0
	s.second = pick(r, "", "", "{tumbling: 1m}", "{sliding: {size: 30s, slide: 10s}}")
	if !s.kafkaIn && r.IntN(4) == 0 {
		// A join of two recorded files: its records go to a file or a
		// topic, as JSON, and it has no windows or second aggregation;
		// its source is de-duplicated or not (dedup).
		s.join = pick(r, "inner", "left_outer", "anti")
		s.joinAs = pick(r, "interval", "temporal", "window")
		s.results = slices.DeleteFunc(s.results, func(k string) bool { return k == kSQLite || k == kPostgres })
		if len(s.results) == 0 {
			s.results = []string{kFile}
		}
		s.second, s.avroOut, s.bigKeys, s.trigger = "", false, false, ""
	}
	if !s.kafkaIn && s.join == "" && r.IntN(5) == 0 {
		s.lookup = true
		s.results = slices.DeleteFunc(s.results, func(k string) bool { return k == kSQLite || k == kPostgres })
		if len(s.results) == 0 {
			s.results = []string{kFile}
		}
		s.second, s.avroOut, s.bigKeys, s.trigger = "", false, false, ""
	}
	s.pebble = !s.lookup && r.IntN(3) == 0
	return s
}

// fault picks what happens before the i-th run.
func (s *schedule) fault(i int) string {
	if i == 0 || s.rng.IntN(2) == 0 {
		return ""
	}
	fs := []string{"corrupt", "older-savepoint", "restart-broker"}
	if s.kafkaIn {
		fs = append(fs, "delete-input")
	} else {
		fs = append(fs, "replace-input")
	}
	if slices.Contains(s.results, kFile) || s.late == kFile || s.quar == kFile {
		fs = append(fs, "replace-output")
	}
	return pick(s.rng, fs...)
}

func (s *schedule) String() string {
	in := "a recorded file"
	if s.kafkaIn {
		in = "a topic"
	}
	var runs []string
	for i, st := range s.plan {
		runs = append(runs, fmt.Sprintf("run %d: %s", i+1, st))
	}
	held := ""
	if s.held != "" {
		held = ", and whenever an output holds " + s.held
	}
	if s.torn {
		held += ", kills at writes leaving them torn"
	}
	if s.rerun {
		held += ", the finished job run again"
	}
	if s.bigKeys {
		held += ", keys and ids integers beyond 64 bits"
	}
	if s.avroOut {
		held += ", the results' topic in Avro"
	}
	if s.avroIn {
		held += ", the input topic in Avro"
	}
	if s.second != "" {
		held += ", a second aggregation of window " + s.second
	}
	if s.join != "" {
		held += ", " + map[bool]string{true: "a ", false: "an "}[s.join == "left_outer"] + s.join + " join with a second file instead of windows"
		if s.joinAs != "interval" {
			held += " (" + s.joinAs + ")"
		}
	}
	if s.lookup {
		held += ", a lookup of each card in an SQLite table instead of windows"
	}
	if s.pebble {
		held += ", the state in Pebble (256 KiB budget; the reference run's in memory)"
	}
	return fmt.Sprintf("%d lines from %s, window %s, lateness %s, %s, dedup %v, trigger %q, results %v, late %q, quarantine %q, a checkpoint every %d batches%s, a savepoint every %d; %s",
		s.lines, in, s.window, s.lateness, s.mode, s.dedup, s.trigger, s.results, s.late, s.quar, s.ckptEvery, held, s.spEvery, strings.Join(runs, "; "))
}

// input writes the schedule's events in arrival order: keys, jitter, late
// events, repeated deliveries and broken lines.
func (s *schedule) input() []string {
	r := rand.New(rand.NewPCG(s.seed, 1))
	keys := 3 + r.IntN(200)
	now := int64(1_780_000_000_000)
	var out, recent []string
	for i := 0; len(out) < s.lines; i++ {
		now += int64(r.IntN(40))
		ts := now - int64(r.IntN(3000))
		if r.IntN(60) == 0 {
			ts -= int64(r.IntN(150_000))
		}
		if r.IntN(300) == 0 {
			out = append(out, fmt.Sprintf("broken line %d", i))
			continue
		}
		if r.IntN(150) == 0 && len(recent) > 0 {
			out = append(out, recent[r.IntN(len(recent))]+fmt.Sprintf(`"arrival":%d}`, now))
			continue
		}
		head := fmt.Sprintf(`{"id":"e%d","card":"c%d","amount":%d.%02d,"ts":%d,`, i, r.IntN(keys), r.IntN(300), r.IntN(100), ts)
		if s.bigKeys {
			// Distinct integers that a float64 makes one: 2^64-1-k, and
			// 10^20+i.
			head = fmt.Sprintf(`{"id":1000000000000000%05d,"card":%s,"amount":%d.%02d,"ts":%d,`, i, new(big.Int).Sub(maxUint64, big.NewInt(int64(r.IntN(keys)))), r.IntN(300), r.IntN(100), ts)
		}
		out = append(out, head+fmt.Sprintf(`"arrival":%d}`, now))
		if recent = append(recent, head); len(recent) > 100 {
			recent = recent[1:]
		}
	}
	return out
}

// limitsTable writes the lookup's table at path: a limit for two cards
// of three.
func limitsTable(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE limits (card TEXT PRIMARY KEY, credit_limit INTEGER)"); err != nil {
		t.Fatal(err)
	}
	for i := range 203 {
		if i%3 != 0 {
			if _, err := db.Exec("INSERT INTO limits VALUES (?, ?)", fmt.Sprintf("c%d", i), 100*i); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// limits are the join's second input, in arrival order: a card's limit
// now and then, at most 3 s from when it arrived, some far behind, some
// broken lines.
func (s *schedule) limits() []string {
	r := rand.New(rand.NewPCG(s.seed, 2))
	keys := 3 + rand.New(rand.NewPCG(s.seed, 1)).IntN(200) // the input's
	now := int64(1_780_000_000_000)
	var out []string
	for i := 0; i < s.lines/40; i++ {
		now += int64(r.IntN(1600))
		ts := now - int64(r.IntN(3000))
		switch {
		case r.IntN(80) == 0:
			ts -= int64(r.IntN(100_000))
		case r.IntN(100) == 0:
			out = append(out, fmt.Sprintf("broken limit %d", i))
			continue
		}
		out = append(out, fmt.Sprintf(`{"card":"c%d","limit":%d,"ts":%d,"arrival":%d}`, r.IntN(keys), 100*r.IntN(50), ts, now))
	}
	return out
}

// maxUint64 is 2^64-1, the largest key of a schedule with big keys.
var maxUint64, _ = new(big.Int).SetString("18446744073709551615", 10)

// names of a schedule's targets; ref marks the uninterrupted run's.
func (s *schedule) topic(what string, ref bool) string {
	t := fmt.Sprintf("crash%d-%s", s.seed, what)
	if ref {
		t += "-ref"
	}
	return t
}

func (s *schedule) table(ref bool) string {
	t := fmt.Sprintf("crash%d_results", s.seed)
	if ref {
		t += "_ref"
	}
	return t
}

func (s *schedule) output(kind, what string, ref bool) string {
	world.mu.Lock()
	addr := world.addr
	world.mu.Unlock()
	switch kind {
	case kFile:
		return what + ".jsonl"
	case kKafka:
		if what == "results" && s.avroOut {
			return fmt.Sprintf("{kafka: {brokers: [%s], topic: %s}, format: avro, registry: {url: %q}}", addr, s.topic(what, ref), world.reg.URL())
		}
		return fmt.Sprintf("{kafka: {brokers: [%s], topic: %s}}", addr, s.topic(what, ref))
	case kSQLite:
		return "{sqlite: {path: results.db, table: results}}"
	case kPostgres:
		return fmt.Sprintf("{postgres: {dsn: %q, table: %s}}", world.pgDSN, s.table(ref))
	}
	return ""
}

// jobFile is the schedule's job file, for the faulted runs or (ref) the
// uninterrupted one.
func (s *schedule) jobFile(ref bool) string {
	world.mu.Lock()
	addr := world.addr
	world.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "name: crash%d\n", s.seed)
	if s.kafkaIn {
		format := ""
		if s.avroIn {
			format = fmt.Sprintf(", format: avro, registry: {url: %q}", world.reg.URL())
		}
		fmt.Fprintf(&b, "source: {kafka: {brokers: [%s], topic: %s}%s}\ntime: {field: ts}\nmax_future: none\n", addr, s.topic("in", false), format)
	} else {
		b.WriteString("source: {file: input.jsonl}\ntime: {field: ts, arrival_field: arrival}\n")
	}
	if s.dedup {
		b.WriteString("id: id\ndedup_horizon: 10m\n")
	}
	b.WriteString("watermark: {delay: 2s, interval: 0s}\n")
	if s.quar != kNone {
		fmt.Fprintf(&b, "quarantine: %s\n", s.output(s.quar, "quarantine", ref))
	}
	// Where the results, the too-late events and the summary go.
	var outputs strings.Builder
	var outs []string
	for _, k := range s.results {
		outs = append(outs, s.output(k, "results", ref))
	}
	fmt.Fprintf(&outputs, "output: [%s]\n", strings.Join(outs, ", "))
	if s.late != kNone {
		fmt.Fprintf(&outputs, "late_output: %s\n", s.output(s.late, "late", ref))
	}
	outputs.WriteString("summary: summary.json\n")
	if s.join != "" {
		with, between := "", "  between: [-2s, 2s]\n"
		switch s.joinAs {
		case "temporal":
			with, between = `, deletion: "limit == 0"`, "  temporal: true\n"
		case "window":
			between = "  window: {tumbling: 5s}\n"
		}
		fmt.Fprintf(&b, "key: card\njoin:\n  with: {source: {file: limits.jsonl}, time: {field: ts, arrival_field: arrival}, key: card%s}\n%s  kind: %s\n  allowed_lateness: %s\n", with, between, s.join, s.lateness)
		b.WriteString(outputs.String())
		return b.String() + s.checkpoint()
	}
	if s.lookup {
		b.WriteString("key: card\nlookup:\n  sqlite: {path: limits.db}\n  query: SELECT card, credit_limit FROM limits WHERE card IN ({keys})\n" +
			"  kind: left_outer\n  cache: {size: 50, ttl: 5s}\n  batch: {keys: 8}\n")
		b.WriteString(outputs.String())
		return b.String() + s.checkpoint()
	}
	var agg strings.Builder
	agg.WriteString("key: card\n")
	fmt.Fprintf(&agg, "window: %s\nallowed_lateness: %s\nmode: %s\n", s.window, s.lateness, s.mode)
	if s.trigger != "" {
		fmt.Fprintf(&agg, "trigger: %s\n", s.trigger)
	}
	agg.WriteString("aggregates: {orders: count, spent: sum(amount), biggest: max(amount)}\n")
	agg.WriteString(outputs.String())
	if s.pebble && !ref {
		b.WriteString("state: {backend: pebble, memory_budget: 256KiB, dir: state}\n")
	}
	if s.second == "" {
		b.WriteString(agg.String())
	} else {
		// The same aggregation, and a second of the same read: every
		// event of the minute (or of half a minute, every 10s), in the
		// same mode.
		fmt.Fprintf(&b, "aggregations:\n  per_card:\n    %s\n", strings.ReplaceAll(strings.TrimSuffix(agg.String(), "\n"), "\n", "\n    "))
		fmt.Fprintf(&b, "  per_window:\n    window: %s\n    allowed_lateness: %s\n    mode: %s\n    aggregates: {orders: count, spent: sum(amount)}\n    output: second.jsonl\n    summary: second.json\n",
			s.second, s.lateness, s.mode)
	}
	return b.String() + s.checkpoint()
}

// checkpoint is the schedule's checkpoint line of its job file.
func (s *schedule) checkpoint() string {
	held := ""
	if s.held != "" {
		held = ", max_held_output: " + s.held
	}
	return fmt.Sprintf("checkpoint: {dir: ckpt, interval: 5m, keep: 3, tolerable_failures: 100%s}\n", held)
}

// topics are the schedule's topics, created before its runs.
func (s *schedule) topics(t *testing.T) {
	cl := kafkaClient(t)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx := context.Background()
	create := func(name string, parts int32) {
		if _, err := adm.CreateTopic(ctx, parts, 1, nil, name); err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
	}
	for _, ref := range []bool{false, true} {
		if slices.Contains(s.results, kKafka) {
			create(s.topic("results", ref), 2)
		}
		if s.late == kKafka {
			create(s.topic("late", ref), 1)
		}
		if s.quar == kKafka {
			create(s.topic("quarantine", ref), 1)
		}
	}
	if s.kafkaIn {
		create(s.topic("in", false), 1)
		p := kafkaClient(t)
		defer p.Close()
		id := 0
		if s.avroIn {
			var err error
			if id, _, err = world.reg.RegisterSchema(s.topic("in", false)+"-value", sr.Schema{Schema: eventSchema}); err != nil {
				t.Fatal(err)
			}
		}
		for _, l := range s.input() {
			v := []byte(l)
			if s.avroIn {
				v = avroEvent(t, id, l)
			}
			p.Produce(ctx, &kgo.Record{Topic: s.topic("in", false), Value: v}, nil)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *schedule) run(t *testing.T) {
	s.topics(t)
	lines := s.input()
	text := strings.Join(lines, "\n") + "\n"
	ref, dir := t.TempDir(), t.TempDir()
	for _, d := range []string{ref, dir} {
		if !s.kafkaIn {
			os.WriteFile(filepath.Join(d, "input.jsonl"), []byte(text), 0o644)
		}
		if s.join != "" {
			os.WriteFile(filepath.Join(d, "limits.jsonl"), []byte(strings.Join(s.limits(), "\n")+"\n"), 0o644)
		}
		if s.lookup {
			limitsTable(t, filepath.Join(d, "limits.db"))
		}
	}
	os.WriteFile(filepath.Join(ref, "job.yaml"), []byte(s.jobFile(true)), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(s.jobFile(false)), 0o644)
	stopAt := int64(0)
	if s.kafkaIn {
		stopAt = int64(len(lines)) // a live input never ends: stop once read
	}
	if code, log := s.child(t, runSpec{Dir: ref, StopAtRead: stopAt}); code != 0 {
		t.Fatalf("the uninterrupted run: exit %d\n%s", code, log)
	}
	for i, st := range s.plan {
		spec := runSpec{Dir: dir, CheckpointEvery: s.ckptEvery, SavepointEvery: s.spEvery}
		s.before(t, i, st, dir, &spec)
		switch st.kill {
		case "op":
			spec.KillAtOp, spec.Torn = int(st.at), s.torn
		case "torn-write":
			spec.TornWrite, spec.TornFile = int(st.at), "results.jsonl"
		case "batch":
			spec.KillAfterBatch = st.at
		case "stop":
			spec.StopAfterBatch = st.at
		}
		spec.StopAtRead = stopAt
		stopDuring := s.during(t, st)
		code, log := s.child(t, spec)
		stopDuring()
		s.logs = append(s.logs, fmt.Sprintf("run %d (%s): exit %d\n%s", i+1, st, code, log))
		last := i == len(s.plan)-1
		if code != 0 && (last || code != -1) {
			t.Fatalf("run %d (%s): exit %d\n%s", i+1, st, code, log)
		}
		if ended(dir) {
			// The job has finished, its output committed: a run after this
			// one would start it afresh, which is another job's output.
			break
		}
		if last && s.kafkaIn && strings.Contains(log, "no savepoint") {
			// A live input's last run stops once it has read everything;
			// a stop that could not take its savepoint in time (the broker
			// restarting then) leaves the last output to the next run,
			// which commits it: that run, without faults.
			code, log := s.child(t, runSpec{Dir: dir, CheckpointEvery: s.ckptEvery, StopAtRead: stopAt})
			s.logs = append(s.logs, fmt.Sprintf("run %d (the last one's savepoint again): exit %d\n%s", i+2, code, log))
			if code != 0 {
				t.Fatalf("run %d (the last one's savepoint again): exit %d\n%s", i+2, code, log)
			}
		}
	}
	if s.rerun && ended(dir) {
		// The same command again: refused when an output cannot take back
		// what the finished run wrote (a topic), else the job runs again
		// from its beginning and leaves every output as it was.
		code, log := s.child(t, runSpec{Dir: dir, CheckpointEvery: s.ckptEvery})
		s.logs = append(s.logs, fmt.Sprintf("the finished job run again: exit %d\n%s", code, log))
		topic := slices.Contains(s.results, kKafka) || s.late == kKafka || s.quar == kKafka
		switch {
		case topic && (code != 2 || !strings.Contains(lastLine(log), "the last run of this job finished") || !strings.Contains(lastLine(log), "--fresh")):
			t.Fatalf("the finished job run again: exit %d, want its refusal (a topic cannot take back what it holds):\n%s", code, log)
		case !topic && code != 0:
			t.Fatalf("the finished job run again: exit %d\n%s", code, log)
		}
	}
	s.compare(t, dir, ref)
}

// child runs one run in a child process; its exit code is -1 when it was
// killed.
func (s *schedule) child(t *testing.T, r runSpec) (int, string) {
	t.Helper()
	spec, _ := json.Marshal(r)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		<-done
		t.Fatalf("a run did not end within 2 minutes:\n%s", out.String())
	}
	code := cmd.ProcessState.ExitCode()
	return code, out.String()
}

// before does what happens before a run: the faults of a stopped job.
func (s *schedule) before(t *testing.T, i int, st step, dir string, spec *runSpec) {
	switch st.before {
	case "corrupt":
		// The newest checkpoint corrupt, when an older complete one is
		// there to fall back to.
		cks := checkpoints(dir)
		if len(cks) < 2 || finished(cks[0]) {
			return
		}
		m := filepath.Join(cks[0], "MANIFEST")
		b, err := os.ReadFile(m)
		if err != nil {
			return
		}
		b[len(b)/2] ^= 1
		os.WriteFile(m, b, 0o644)
	case "older-savepoint":
		var sps []string
		all, _ := filepath.Glob(filepath.Join(dir, "ckpt", "savepoints", "sp-*"))
		for _, sp := range all {
			if _, err := checkpoint.Load(checkpoint.OSFS, sp); err == nil {
				sps = append(sps, sp)
			}
		}
		if len(sps) == 0 {
			return
		}
		pick := sps[s.rng.IntN(len(sps))]
		// A savepoint that an earlier restore from an older one left
		// behind is refused, the documented one line, writing nothing;
		// the run restores one of the others, if any.
		var live []string
		for _, sp := range sps {
			if !leftBehind(dir, sp) {
				live = append(live, sp)
			}
		}
		if leftBehind(dir, pick) {
			code, log := s.child(t, runSpec{Dir: dir, From: pick, CheckpointEvery: s.ckptEvery})
			if errLine := lastLine(log); code != 1 || !strings.HasPrefix(errLine, "weir: ") || !strings.Contains(errLine, "cannot restore "+pick+": a run resumed from the older checkpoint") {
				t.Fatalf("run %d: --from %s, left behind by a restore: exit %d, want its refusal:\n%s", i+1, pick, code, log)
			}
			if len(live) == 0 {
				return
			}
			pick = live[s.rng.IntN(len(live))]
		}
		spec.From = pick
	case "restart-broker":
		restartKafka(t, 0)
	case "delete-input":
		// Retention deletes what every checkpoint and savepoint has read,
		// and no more: no gap, whichever of them a later run restores
		// (the newest, an older one past a corrupt one, a savepoint). It
		// leaves each partition's last record: the development broker
		// forgets a partition's end when it restarts with no record left,
		// which a Kafka broker does not.
		cks := checkpoints(dir)
		if len(cks) == 0 || finished(cks[0]) {
			return
		}
		offs := map[int32]int64{}
		for _, ck := range cks {
			b, err := os.ReadFile(filepath.Join(ck, "source:input"))
			if err != nil {
				return // a checkpoint whose position cannot be read: delete nothing
			}
			for p, o := range kafkaPosition(b) {
				if cur, ok := offs[p]; !ok || o < cur {
					offs[p] = o
				}
			}
		}
		cl := kafkaClient(t)
		defer cl.Close()
		ends, err := kadm.NewClient(cl).ListEndOffsets(context.Background(), s.topic("in", false))
		if err != nil {
			t.Fatalf("the input's end offsets: %v", err)
		}
		var del kadm.Offsets
		for p, o := range offs {
			if end, ok := ends.Lookup(s.topic("in", false), p); ok && o >= end.Offset {
				o = end.Offset - 1
			}
			if o > 0 {
				del.Add(kadm.Offset{Topic: s.topic("in", false), Partition: p, At: o})
			}
		}
		if len(del) == 0 {
			return
		}
		if _, err := kadm.NewClient(cl).DeleteRecords(context.Background(), del); err != nil {
			t.Fatalf("deleting the input: %v", err)
		}
	case "replace-input", "replace-output":
		cks := checkpoints(dir)
		if len(cks) == 0 || finished(cks[0]) || spec.From != "" {
			return
		}
		// The documented refusals: an input that is not the one the
		// checkpoint read; an output that is not the file the checkpoint
		// wrote, or that holds bytes weir has no record of writing.
		name, want := "input.jsonl", []string{"is not the file the checkpoint read"}
		if st.before == "replace-output" {
			for _, n := range []string{"results.jsonl", "late.jsonl", "quarantine.jsonl"} {
				if st, err := os.Stat(filepath.Join(dir, n)); err == nil && st.Size() > 0 {
					name, want = n, []string{"is not the file checkpoint", "that checkpoint", "fewer than the"}
					break
				}
			}
			if name == "input.jsonl" {
				return
			}
		}
		path := filepath.Join(dir, name)
		saved := path + ".saved"
		if err := os.Rename(path, saved); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(path, []byte(strings.Repeat("{\"another\":\"file\"}\n", 20_000)), 0o644)
		code, log := s.child(t, runSpec{Dir: dir, CheckpointEvery: s.ckptEvery})
		errLine := lastLine(log)
		refused := strings.HasPrefix(errLine, "weir: ") && strings.Contains(errLine, name+" ")
		if refused {
			refused = false
			for _, w := range want {
				refused = refused || strings.Contains(errLine, w)
			}
		}
		if code != 1 || !refused {
			t.Fatalf("run %d: %s replaced: exit %d, want a refusal (%q):\n%s", i+1, name, code, want, log)
		}
		if b, _ := os.ReadFile(path); len(b) != 20_000*19 {
			t.Fatalf("the refused run changed the replaced %s", name)
		}
		os.Remove(path)
		if err := os.Rename(saved, path); err != nil {
			t.Fatal(err)
		}
	}
}

// during starts what happens while a run runs, and returns how to end it.
func (s *schedule) during(t *testing.T, st step) func() {
	switch st.during {
	case "cut-db":
		if !slices.Contains(s.results, kPostgres) {
			return func() {}
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(150 * time.Millisecond):
				}
				if conn, err := pgx.Connect(context.Background(), world.pgDSN); err == nil {
					conn.Exec(context.Background(), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()")
					conn.Close(context.Background())
				}
			}
		}()
		return func() { close(stop); <-done }
	case "restart-broker":
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(200 * time.Millisecond)
			restartKafka(t, 500*time.Millisecond)
		}()
		return func() { <-done }
	}
	return func() {}
}

// checkpoints are the checkpoints and savepoints of dir, newest first.
func checkpoints(dir string) []string {
	cks, _ := filepath.Glob(filepath.Join(dir, "ckpt", "chk-*"))
	sps, _ := filepath.Glob(filepath.Join(dir, "ckpt", "savepoints", "sp-*"))
	all := append(cks, sps...)
	id := func(p string) string { _, n, _ := strings.Cut(filepath.Base(p), "-"); return n }
	slices.SortFunc(all, func(a, b string) int { return strings.Compare(id(b), id(a)) })
	return all
}

// leftBehind reports whether a restore from an older checkpoint left the
// checkpoint or savepoint sp behind, as the store's ABANDONED file lists
// them: each line an id after which, and one before which, they were.
func leftBehind(dir, sp string) bool {
	_, n, _ := strings.Cut(filepath.Base(sp), "-")
	id, err := strconv.ParseUint(n, 10, 64)
	if err != nil {
		return false
	}
	b, _ := os.ReadFile(filepath.Join(dir, "ckpt", checkpoint.AbandonedName))
	for _, line := range strings.Split(string(b), "\n") {
		var base, next uint64
		if _, err := fmt.Sscanf(line, "%d %d", &base, &next); err == nil && base < id && id < next {
			return true
		}
	}
	return false
}

// finished reports whether a checkpoint records the end of the input.
func finished(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "MANIFEST"))
	return err == nil && bytes.Contains(b, []byte(`"kind": "final"`))
}

// ended reports whether the newest checkpoint of dir records the end of
// the input with its output committed: the next run starts afresh.
func ended(dir string) bool {
	cks := checkpoints(dir)
	if len(cks) == 0 || !finished(cks[0]) {
		return false
	}
	records, _ := filepath.Glob(filepath.Join(cks[0], "sink:*"))
	for _, r := range records {
		b, err := os.ReadFile(r)
		if err != nil {
			return false
		}
		d := enc.NewDecoder(b)
		d.Varint() // items committed
		if d.Items(1<<20) != 0 {
			return false // pre-commits still to commit
		}
	}
	return true
}

// kafkaPosition decodes a Kafka source's checkpointed position: the next
// offset of every partition.
func kafkaPosition(b []byte) map[int32]int64 {
	d := enc.NewDecoder(b)
	d.Count(255)
	n := d.Items(1 << 20)
	m := map[int32]int64{}
	for range n {
		p, o := d.Varint(), d.Varint()
		m[int32(p)] = o
	}
	return m
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// compare checks the invariant: every output of the faulted runs holds what
// the uninterrupted run's output of the same kind holds, and the accounting
// is the same.
func (s *schedule) compare(t *testing.T, dir, ref string) {
	t.Helper()
	// Processing time is the wall clock: emitted_at differs; a lookup's
	// read_at differs once a restore has read a row its cache had.
	live := s.kafkaIn || s.lookup
	for _, name := range []string{"results.jsonl", "late.jsonl", "quarantine.jsonl", "second.jsonl"} {
		a, errA := os.ReadFile(filepath.Join(dir, name))
		b, errB := os.ReadFile(filepath.Join(ref, name))
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%s: %v / %v", name, errA, errB)
		}
		sameLines(t, name, lines(string(a), live), lines(string(b), live))
	}
	for _, what := range []string{"results", "late", "quarantine"} {
		kind := s.late
		if what == "results" {
			kind = kNone
			if slices.Contains(s.results, kKafka) {
				kind = kKafka
			}
		} else if what == "quarantine" {
			kind = s.quar
		}
		if kind == kKafka {
			sameLines(t, "topic "+s.topic(what, false), topicRecords(t, s.topic(what, false), live), topicRecords(t, s.topic(what, true), live))
		}
	}
	if slices.Contains(s.results, kSQLite) {
		sameLines(t, "the SQLite table", tableRows(t, "sqlite", filepath.Join(dir, "results.db"), "results", live), tableRows(t, "sqlite", filepath.Join(ref, "results.db"), "results", live))
	}
	if slices.Contains(s.results, kPostgres) {
		sameLines(t, "the PostgreSQL table", tableRows(t, "pgx", world.pgDSN, s.table(false), live), tableRows(t, "pgx", world.pgDSN, s.table(true), live))
	}
	if s.bigKeys {
		// Every key written is one of the input's, digit for digit: a key
		// that went through a float64 (18446744073709552000) is none of
		// them.
		keys := map[string]bool{}
		for _, l := range s.input() {
			if _, rest, ok := strings.Cut(l, `"card":`); ok {
				keys[rest[:strings.IndexByte(rest, ',')]] = true
			}
		}
		b, _ := os.ReadFile(filepath.Join(dir, "results.jsonl"))
		for _, l := range lines(string(b), false) {
			k := strings.TrimPrefix(l, `{"key":`)
			if k = k[:max(strings.IndexByte(k, ','), 0)]; !keys[k] {
				t.Fatalf("results.jsonl holds a pane of key %s, which is not a key of the input: %s", k, l)
			}
		}
	}
	var got, want job.Summary
	if err := readJSON(filepath.Join(dir, "summary.json"), &got); err != nil {
		t.Fatal(err)
	}
	if err := readJSON(filepath.Join(ref, "summary.json"), &want); err != nil {
		t.Fatal(err)
	}
	if want.Accepted == 0 {
		t.Fatalf("the uninterrupted run accepted no event: %+v", want)
	}
	if s.avroIn {
		// Every event decoded: only the broken lines are not Avro.
		broken := 0
		for _, l := range s.input() {
			if strings.HasPrefix(l, "broken line") {
				broken++
			}
		}
		if n := want.QuarantineReasons["bad_magic_byte"]; n != int64(broken) || want.Quarantined != n {
			t.Fatalf("the uninterrupted run quarantined %v of an Avro topic with %d broken lines", want.QuarantineReasons, broken)
		}
	}
	parts := got.Accepted + got.Duplicates + got.TooLate + got.BeyondDedupHorizon + got.Quarantined + got.InFlight
	if got.Read != parts {
		t.Errorf("the summary does not add up: read %d, its parts %d", got.Read, parts)
	}
	counts := func(s job.Summary) string {
		return fmt.Sprintf("read %d accepted %d duplicates %d too_late %d beyond %d quarantined %d %v late_accepted %d late_for_some_windows %d panes_fired %d panes_written %d windows_fired %d late_written %d lost %d in_flight %d",
			s.Read, s.Accepted, s.Duplicates, s.TooLate, s.BeyondDedupHorizon, s.Quarantined, s.QuarantineReasons, s.LateAccepted, s.LateForSomeWindows, s.PanesFired, s.PanesWritten, s.WindowsFired, s.LateWritten, s.Lost, s.InFlight)
	}
	if a, b := counts(got), counts(want); a != b {
		t.Errorf("the accounting differs from the uninterrupted run's:\n got %s\nwant %s", a, b)
	}
	if s.join != "" {
		if want.Join == nil || got.Join == nil {
			t.Fatalf("a join's summary without its join: %+v / %+v", got.Join, want.Join)
		}
		if want.Join.Written == 0 && s.join != "anti" || want.Join.With.Read == 0 {
			t.Fatalf("the uninterrupted join wrote nothing: %+v", want.Join)
		}
		if w := got.Join.With; w.Read != w.Accepted+w.TooLate+w.Quarantined+w.Filtered {
			t.Errorf("the second input's accounting does not add up: %+v", w)
		}
		if a, b := fmt.Sprintf("%+v", *got.Join), fmt.Sprintf("%+v", *want.Join); a != b {
			t.Errorf("the join's accounting differs from the uninterrupted run's:\n got %s\nwant %s", a, b)
		}
	}
	if s.lookup {
		if want.Lookup == nil || got.Lookup == nil || want.Lookup.Found == 0 || want.Lookup.NotFound == 0 {
			t.Fatalf("a lookup's summary without rows found and not: %+v / %+v", got.Lookup, want.Lookup)
		}
		if a, b := fmt.Sprintf("%+v", *got.Lookup), fmt.Sprintf("%+v", *want.Lookup); a != b {
			t.Errorf("the lookup's accounting differs from the uninterrupted run's:\n got %s\nwant %s", a, b)
		}
	}
	if s.second != "" {
		var got2, want2 job.Summary
		if err := readJSON(filepath.Join(dir, "second.json"), &got2); err != nil {
			t.Fatal(err)
		}
		if err := readJSON(filepath.Join(ref, "second.json"), &want2); err != nil {
			t.Fatal(err)
		}
		if want2.PanesWritten == 0 || got2.Read != got.Read {
			t.Fatalf("the second aggregation wrote %d panes in the uninterrupted run, and read %d lines of the %d the first did", want2.PanesWritten, got2.Read, got.Read)
		}
		if a, b := counts(got2), counts(want2); a != b {
			t.Errorf("the second aggregation's accounting differs from the uninterrupted run's:\n got %s\nwant %s", a, b)
		}
	}
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// lines are a file's lines; live, without what differs between two runs of
// a live job (the processing time of each pane).
func lines(text string, live bool) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if l == "" {
			continue
		}
		out = append(out, normalize(l, live))
	}
	return out
}

func normalize(l string, live bool) string {
	if !live {
		return l
	}
	var m map[string]any
	if json.Unmarshal([]byte(l), &m) != nil {
		return l
	}
	delete(m, "emitted_at")
	delete(m, "set_aside_at")
	delete(m, "read_at")
	b, _ := json.Marshal(m)
	return string(b)
}

// topicRecords are a topic's committed records, partition after partition.
func topicRecords(t *testing.T, topic string, live bool) []string {
	t.Helper()
	cl := kafkaClient(t)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range slices.Sorted(func(yield func(int32) bool) {
		ends.Each(func(o kadm.ListedOffset) { yield(o.Partition) })
	}) {
		end, _ := ends.Lookup(topic, p)
		if end.Offset <= 0 {
			continue
		}
		world.mu.Lock()
		addr := world.addr
		world.mu.Unlock()
		rc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {p: kgo.NewOffset().AtStart()}}))
		if err != nil {
			t.Fatal(err)
		}
		for next := int64(0); next < end.Offset; {
			fs := rc.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("reading %s/%d: %v", topic, p, ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) {
				next = max(next, r.Offset+1)
				if !r.Attrs.IsControl() && r.Offset < end.Offset {
					out = append(out, fmt.Sprintf("%d %s", p, normalize(avroJSON(t, r.Value), live)))
				}
			})
		}
		rc.Close()
	}
	return out
}

// eventSchema is the Avro schema of the input's events.
const eventSchema = `{"type":"record","name":"Event","namespace":"crashall","fields":[{"name":"id","type":"string"},{"name":"card","type":"string"},
{"name":"amount","type":"double"},{"name":"ts","type":"long"},{"name":"arrival","type":"long"}]}`

var eventAvro = avro.MustParse(eventSchema)

// avroEvent is an input line as an Avro record in a schema registry's
// framing, of the schema id; a line that is not an event (a broken line)
// stays as it is, which the job quarantines.
func avroEvent(t *testing.T, id int, line string) []byte {
	t.Helper()
	var e struct {
		ID, Card    string
		Amount      float64
		TS, Arrival int64
	}
	if json.Unmarshal([]byte(line), &e) != nil {
		return []byte(line)
	}
	b := []byte{0, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[1:], uint32(id))
	b, err := eventAvro.AppendEncode(b, map[string]any{"id": e.ID, "card": e.Card, "amount": e.Amount, "ts": e.TS, "arrival": e.Arrival})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// avroJSON is a record's value as JSON: an Avro record in a schema
// registry's framing decoded with the registry's schema of its id (two
// runs may have registered the same schema under two subjects), else the
// value itself.
func avroJSON(t *testing.T, v []byte) string {
	t.Helper()
	if len(v) < 5 || v[0] != 0 {
		return string(v)
	}
	id := int(binary.BigEndian.Uint32(v[1:5]))
	world.mu.Lock()
	defer world.mu.Unlock()
	s := world.schema[id]
	if s == nil {
		cl, err := sr.NewClient(sr.URLs(world.reg.URL()))
		if err != nil {
			t.Fatal(err)
		}
		ss, err := cl.SchemaByID(context.Background(), id)
		if err != nil {
			t.Fatalf("the registry's schema %d: %v", id, err)
		}
		if s, err = avro.Parse(ss.Schema); err != nil {
			t.Fatal(err)
		}
		if world.schema == nil {
			world.schema = map[int]*avro.Schema{}
		}
		world.schema[id] = s
	}
	var m map[string]any
	if rest, err := s.Decode(v[5:], &m); err != nil || len(rest) != 0 {
		t.Fatalf("an Avro record of schema %d: %v (%d bytes left)", id, err, len(rest))
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// tableRows are a table's rows, each as text, sorted; live, without
// updated_at.
func tableRows(t *testing.T, driver, dsn, table string, live bool) []string {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT * FROM " + table)
	if err != nil {
		t.Fatalf("reading %s: %v", table, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for i, c := range cols {
			if live && c == "updated_at" {
				continue
			}
			v := vals[i]
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			fmt.Fprintf(&b, "%s=%v ", c, v)
		}
		out = append(out, b.String())
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// sameLines fails the test unless got holds exactly want, in order.
func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		seen := map[string]int{}
		dup := 0
		for _, g := range got {
			if seen[g]++; seen[g] == 2 {
				dup++
			}
		}
		t.Fatalf("%s holds %d records (%d of them more than once), the uninterrupted run's %d", what, len(got), dup, len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s differs from the uninterrupted run's at record %d:\n got %s\nwant %s", what, i+1, got[i], want[i])
		}
	}
}

// A run killed in the middle of a commit's write to a results file, whose
// checkpoint the next run finds corrupt: the restore falls back to the
// checkpoint before, and cuts back what the torn commit wrote, which the
// owner record proves weir's (it refused the file as foreign once).
func TestFallbackPastTornCommit(t *testing.T) {
	setUp(t)
	for _, at := range []int64{2, 3} {
		t.Run(fmt.Sprint(at), func(t *testing.T) {
			sc := newSchedule(1_000_000 + uint64(at))
			sc.kafkaIn, sc.lines, sc.window, sc.lateness, sc.mode, sc.trigger = false, 8000, "{tumbling: 10s}", "10s", "accumulating", ""
			sc.results, sc.late, sc.quar = []string{kFile, kKafka, kSQLite}, kNone, kNone
			sc.ckptEvery, sc.spEvery, sc.held, sc.torn = 1, 0, "", false
			sc.plan = []step{{kill: "torn-write", at: at}, {before: "corrupt"}}
			defer func() {
				if t.Failed() {
					for _, l := range sc.logs {
						t.Log(l)
					}
				}
			}()
			sc.run(t)
			if !strings.Contains(strings.Join(sc.logs, "\n"), "corrupt") {
				t.Fatalf("the second run did not fall back past a corrupt checkpoint:\n%s", strings.Join(sc.logs, "\n"))
			}
		})
	}
}
