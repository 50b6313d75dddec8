package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/jobfile"
)

// broker is an in-process Kafka cluster on 127.0.0.1 with the topics (one
// partition each unless given as name:n).
func broker(t *testing.T, topics ...string) string {
	t.Helper()
	opts := []kfake.Opt{kfake.NumBrokers(1)}
	for _, tp := range topics {
		name, n := tp, 1
		if i := strings.IndexByte(tp, ':'); i >= 0 {
			name = tp[:i]
			fmt.Sscan(tp[i+1:], &n)
		}
		opts = append(opts, kfake.SeedTopics(int32(n), name))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()[0]
}

// committedRecords are the values of the committed records of a topic.
func committedRecords(t *testing.T, addr, topic string) []string {
	t.Helper()
	var out []string
	for _, r := range committed(t, addr, topic) {
		out = append(out, string(r.Value))
	}
	return out
}

// committed is every committed record of a topic, up to its last stable
// offset, partition by partition.
func committed(t *testing.T, addr, topic string) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := kadm.NewClient(cl).ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []*kgo.Record
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset <= 0 {
			return
		}
		rc, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
			kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {o.Partition: kgo.NewOffset().AtStart()}}))
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		for next := int64(0); next < o.Offset; {
			fs := rc.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("reading %s/%d: %v", topic, o.Partition, ctx.Err())
			}
			fs.EachRecord(func(r *kgo.Record) {
				next = max(next, r.Offset+1)
				if !r.Attrs.IsControl() && r.Offset < o.Offset {
					out = append(out, r)
				}
			})
		}
	})
	return out
}

// fileLines is the lines of a file, without their endings.
func fileLines(t *testing.T, dir, name string) []string {
	t.Helper()
	s := strings.TrimSuffix(read(t, dir, name), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// sameLines fails the test unless got holds exactly want, in order.
func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		dup := 0
		seen := map[string]bool{}
		for _, g := range got {
			if seen[g] {
				dup++
			}
			seen[g] = true
		}
		t.Fatalf("%s holds %d records (%d of them twice), want %d", what, len(got), dup, len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s differs at record %d:\n got %s\nwant %s", what, i+1, got[i], want[i])
		}
	}
}

const eoJob = `name: eo
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: k
watermark: {delay: 1s, interval: 0s}
window: {tumbling: 10s}
allowed_lateness: 30s
aggregates: {n: count, total: sum(v)}
late_output: late.jsonl
quarantine: quarantine.jsonl
`

// eoSetup writes the input and a job whose results go to results.jsonl and
// to the topic alerts, exactly once, and runs the same job without
// checkpoints for reference.
func eoSetup(t *testing.T, addr, ckpt string) (dir string, want []string) {
	in := bigInput(20000)
	refDir, _ := runJob(t, eoJob+"output: results.jsonl\n", in)
	dir = t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in), 0o644)
	job := eoJob + fmt.Sprintf("output: [results.jsonl, {kafka: {brokers: [%s], topic: alerts}}]\ncheckpoint: %s\n", addr, ckpt)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(job), 0o644)
	return dir, fileLines(t, refDir, "results.jsonl")
}

// eoRun runs the job in-process; stopAt, if set, stops it after that batch
// without a savepoint (as a crash there would, but for what is not yet
// durable).
func eoRun(t *testing.T, dir string, o Options, stopAt int64) (string, error) {
	t.Helper()
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log strings.Builder
	o.Log = &syncWriter{&mu, &log}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if stopAt > 0 {
		o.NoSavepointOnStop = true
		o.afterBatch = func(b int64) {
			if b == stopAt {
				cancel()
			}
		}
	}
	_, err = Run(ctx, j, o)
	mu.Lock()
	defer mu.Unlock()
	return log.String(), err
}

// A job with an exactly-once file output beside an exactly-once Kafka
// output, stopped twice within one checkpoint interval: the second run
// records, before its producers start, that it committed what the first
// left pending (a checkpoint with nothing pending), and stops before its
// own first checkpoint. The third run resumes from that record: the file
// keeps what was committed to it, and both outputs end as an uninterrupted
// run's.
func TestFileBesideKafkaTwoStopsInOneInterval(t *testing.T) {
	addr := broker(t, "alerts")
	dir, want := eoSetup(t, addr, "{dir: ckpt, interval: 5m}")
	if log, err := eoRun(t, dir, Options{checkpointEvery: 3}, 8); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	log, err := eoRun(t, dir, Options{}, 1)
	if err != nil || !strings.Contains(log, "left pending; recorded in") {
		t.Fatalf("the second run: %v\n%s", err, log)
	}
	if log, err := eoRun(t, dir, Options{}, 0); err != nil {
		t.Fatalf("the third run: %v\n%s", err, log)
	}
	sameLines(t, "results.jsonl", fileLines(t, dir, "results.jsonl"), want)
	sameLines(t, "the topic alerts", committedRecords(t, addr, "alerts"), want)
}

// An older savepoint restores into a job with a Kafka exactly-once output:
// its transaction, committed long ago, is recognised as committed (its
// producer has been fenced since, so it cannot be committed again), and
// what later checkpoints committed to the topic is not written again.
func TestKafkaOlderSavepointRestores(t *testing.T) {
	addr := broker(t, "alerts")
	dir, want := eoSetup(t, addr, "{dir: ckpt, interval: 5m}")
	if log, err := eoRun(t, dir, Options{savepointEvery: 4}, 0); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	sameLines(t, "the topic alerts after the first run", committedRecords(t, addr, "alerts"), want)
	sps, _ := filepath.Glob(filepath.Join(dir, "ckpt", "savepoints", "sp-*"))
	if len(sps) < 3 {
		t.Fatalf("%d savepoints", len(sps))
	}
	log, err := eoRun(t, dir, Options{From: sps[1]}, 0)
	if err != nil {
		t.Fatalf("restoring %s: %v\n%s", filepath.Base(sps[1]), err, log)
	}
	if !strings.Contains(log, "was committed already") || !strings.Contains(log, "are not written again") {
		t.Errorf("the restore did not say what it found:\n%s", log)
	}
	sameLines(t, "results.jsonl", fileLines(t, dir, "results.jsonl"), want)
	sameLines(t, "the topic alerts", committedRecords(t, addr, "alerts"), want)
}

// The newest checkpoint is corrupt: the job falls back to the one before,
// as documented, but the newest one's Kafka transaction was committed. A
// read_committed consumer still sees every pane once.
func TestKafkaFallbackFromCorruptCheckpoint(t *testing.T) {
	addr := broker(t, "alerts")
	dir, want := eoSetup(t, addr, "{dir: ckpt, interval: 5m, keep: 3}")
	if log, err := eoRun(t, dir, Options{checkpointEvery: 2}, 11); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	cks, _ := filepath.Glob(filepath.Join(dir, "ckpt", "chk-*"))
	if len(cks) < 2 {
		t.Fatalf("%d checkpoints", len(cks))
	}
	newest := filepath.Join(cks[len(cks)-1], "MANIFEST")
	b, _ := os.ReadFile(newest)
	b[len(b)/2] ^= 1
	os.WriteFile(newest, b, 0o644)
	log, err := eoRun(t, dir, Options{}, 0)
	if err != nil || !strings.Contains(log, "falling back to an older checkpoint") {
		t.Fatalf("%v\n%s", err, log)
	}
	sameLines(t, "results.jsonl", fileLines(t, dir, "results.jsonl"), want)
	sameLines(t, "the topic alerts", committedRecords(t, addr, "alerts"), want)
}

// Output files that are not the ones the checkpoint wrote are refused on
// restore, and left as they are: one replaced by a larger file while the
// job was stopped, one a user appended to.
func TestChangedOutputRefused(t *testing.T) {
	in := bigInput(20000)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(eoJob+"output: results.jsonl\ncheckpoint: {dir: ckpt, interval: 1h}\n"), 0o644)
	if log, err := eoRun(t, dir, Options{checkpointEvery: 3}, 8); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	committed := read(t, dir, "results.jsonl")
	if len(committed) == 0 {
		t.Fatal("nothing committed")
	}
	bigger := strings.Repeat("{\"a user's\":\"line\"}\n", 50_000)
	os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(bigger), 0o644)
	_, err := eoRun(t, dir, Options{}, 0)
	if err == nil || !strings.Contains(err.Error(), "results.jsonl is not the file checkpoint") {
		t.Errorf("a replaced output: %v", err)
	}
	if read(t, dir, "results.jsonl") != bigger {
		t.Error("the replaced output was changed")
	}
	appended := committed + "{\"mine\":1}\n"
	os.WriteFile(filepath.Join(dir, "results.jsonl"), []byte(appended), 0o644)
	_, err = eoRun(t, dir, Options{}, 0)
	var re *RuntimeError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "bytes after the") || !strings.Contains(err.Error(), "weir has no record of writing them") {
		t.Errorf("an output appended to: %v", err)
	}
	if read(t, dir, "results.jsonl") != appended {
		t.Error("the appended output was changed")
	}
}

// An output added to the job file between two runs gets only the results
// from the restore point on: the run says so, and names it in the summary.
func TestOutputAddedSinceCheckpoint(t *testing.T) {
	in := bigInput(20000)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(eoJob+"output: results.jsonl\ncheckpoint: {dir: ckpt, interval: 1h}\n"), 0o644)
	if log, err := eoRun(t, dir, Options{checkpointEvery: 3}, 8); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(eoJob+"output: [results.jsonl, more.jsonl]\ncheckpoint: {dir: ckpt, interval: 1h}\nsummary: summary.json\n"), 0o644)
	log, err := eoRun(t, dir, Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log, "warning: output[1] is new since") || !strings.Contains(log, "it gets the results from there on, not those before") {
		t.Errorf("no warning:\n%s", log)
	}
	if s := read(t, dir, "summary.json"); !strings.Contains(s, "\"outputs_added\": [\n    \"output[1]\"\n  ]") {
		t.Errorf("the summary does not name the new output:\n%s", s)
	}
	if a, b := len(fileLines(t, dir, "more.jsonl")), len(fileLines(t, dir, "results.jsonl")); a == 0 || a >= b {
		t.Errorf("the new output holds %d panes, the old one %d", a, b)
	}
}

// A recorded input regenerated between a stop and the restart (a new file,
// other bytes) is not resumed at the old byte offset, in the middle of a
// line: the restart is refused, naming the file and what differs; with
// AcceptChangedInput it reads the new file from its start and says so.
func TestRegeneratedInputRefused(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(bigInput(20000)), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(eoJob+"output: results.jsonl\nsummary: summary.json\ncheckpoint: {dir: ckpt, interval: 1h}\n"), 0o644)
	if log, err := eoRun(t, dir, Options{checkpointEvery: 3}, 8); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	regenerated := strings.ReplaceAll(bigInput(25000), `"v":`, `"v": `)
	os.Remove(filepath.Join(dir, "input.jsonl"))
	os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(regenerated), 0o644)
	results := read(t, dir, "results.jsonl")
	_, err := eoRun(t, dir, Options{}, 0)
	if err == nil || !strings.Contains(err.Error(), "input.jsonl is not the file the checkpoint read: its first 4096 bytes are not those read before") {
		t.Fatalf("a regenerated input: %v", err)
	}
	if read(t, dir, "results.jsonl") != results {
		t.Error("the refused run changed the output")
	}
	log, err := eoRun(t, dir, Options{AcceptChangedInput: true}, 0)
	if err != nil || !strings.Contains(log, "reading it from its start, as --accept-changed-input asks") {
		t.Fatalf("%v\n%s", err, log)
	}
	var sum Summary
	json.Unmarshal([]byte(read(t, dir, "summary.json")), &sum)
	if !strings.HasPrefix(sum.InputRestarted, "its first 4096 bytes are not those read before") {
		t.Errorf("the summary says %q", sum.InputRestarted)
	}
}

// A followed log rotated with copytruncate while the job was stopped (its
// lines copied to app.log.1, app.log emptied), then grown past the old
// offset: the restart finds the copy by its bytes, reads its rest, then the
// new lines from the start of app.log. No line is skipped.
func TestFollowedLogCopyTruncatedWhileStopped(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "app.log")
	lines := func(from, to int) string {
		var b strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&b, `{"k":"k%d","v":1,"ts":%d,"arrival":%d}`+"\n", i%7, 1_780_000_000_000+i*10, 1_780_000_000_000+i*10)
		}
		return b.String()
	}
	os.WriteFile(logPath, []byte(lines(0, 3000)), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(`name: follow
source: {file: app.log, follow: true}
time: {field: ts, arrival_field: arrival}
key: k
window: {tumbling: 1m}
aggregates: {n: count}
output: results.jsonl
checkpoint: {dir: ckpt, interval: 1h}
`), 0o644)
	runUntilRead := func(n int64) {
		t.Helper()
		j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		rn, err := Build(j, Options{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := rn.Run(ctx); done <- err }()
		deadline := time.Now().Add(30 * time.Second)
		read := int64(0)
		for time.Now().Before(deadline) {
			if read = rn.Engine().Control().Status(context.Background(), time.Second).Counts.Read; read >= n {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		cancel()
		<-done
		if read != n {
			t.Fatalf("read %d lines, want %d", read, n)
		}
	}
	runUntilRead(3000)
	old := read(t, dir, "app.log")
	os.WriteFile(filepath.Join(dir, "app.log.1"), []byte(old), 0o644)
	os.Truncate(logPath, 0)
	f, _ := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0o644)
	f.WriteString(lines(3000, 9000))
	f.Close()
	runUntilRead(9000)
}

// runLive runs a live job in-process until it has read n records, then
// stops it (a savepoint); it returns the log and the summary, or the error
// the run failed with before that.
func runLive(t *testing.T, dir string, n int64) (string, *Summary, error) {
	t.Helper()
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log strings.Builder
	rn, err := Build(j, Options{Log: &syncWriter{&mu, &log}})
	if err != nil {
		return log.String(), nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		sum *Summary
		err error
	}
	done := make(chan result, 1)
	go func() { sum, err := rn.Run(ctx); done <- result{sum, err} }()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case r := <-done:
			mu.Lock()
			defer mu.Unlock()
			return log.String(), r.sum, r.err
		default:
		}
		if rn.Engine().Control().Status(context.Background(), time.Second).Counts.Read >= n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	r := <-done
	mu.Lock()
	defer mu.Unlock()
	return log.String(), r.sum, r.err
}

func produceOrders(t *testing.T, addr, topic string, from, to int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := from; i < to; i++ {
		v := fmt.Sprintf(`{"k":"k%d","ts":%d}`, i%3, 1_780_000_000_000+i*1000)
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

const gapJob = `name: gap
source: {kafka: {brokers: [%s], topic: orders%s}}
time: {field: ts}
key: k
window: {tumbling: 1m}
aggregates: {n: count}
output: results.jsonl
summary: summary.json
checkpoint: {dir: ckpt, interval: 5m}
`

// Records that retention deleted after the checkpointed offset, before the
// job read them, are never skipped silently: the restore stops with an
// error that names them; with on_gap: skip it goes on from the first record
// there is and counts the rest as lost.
func TestKafkaRetentionGap(t *testing.T) {
	addr := broker(t, "orders")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(gapJob, addr, "")), 0o644)
	produceOrders(t, addr, "orders", 0, 3)
	if log, sum, err := runLive(t, dir, 3); err != nil || sum.Read != 3 {
		t.Fatalf("%v %+v\n%s", err, sum, log)
	}
	produceOrders(t, addr, "orders", 3, 10)
	cl, _ := kgo.NewClient(kgo.SeedBrokers(addr))
	defer cl.Close()
	var offs kadm.Offsets
	offs.Add(kadm.Offset{Topic: "orders", Partition: 0, At: 7})
	if _, err := kadm.NewClient(cl).DeleteRecords(context.Background(), offs); err != nil {
		t.Fatal(err)
	}
	_, _, err := runLive(t, dir, 6)
	if err == nil || !strings.Contains(err.Error(), "kafka orders/0: records 3 to 6 were deleted (retention) before weir read them; weir does not skip records silently") {
		t.Fatalf("a gap: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(gapJob, addr, ", on_gap: skip")), 0o644)
	log, sum, err := runLive(t, dir, 6)
	if err != nil || sum.Read != 6 || sum.Lost != 4 || !strings.Contains(log, "records 3 to 6 were deleted (retention) before weir read them: skipped, counted as lost (on_gap: skip)") {
		t.Fatalf("on_gap: skip: %v %+v\n%s", err, sum, log)
	}
	if !strings.Contains(sum.Text(), "4 records were lost") {
		t.Errorf("summary: %s", sum.Text())
	}
}

// A topic deleted and created again while the job was stopped is another
// topic: its offsets are not the checkpoint's, and the restore says so
// instead of reading it from the old offsets.
func TestKafkaTopicCreatedAgain(t *testing.T) {
	addr := broker(t, "orders")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(gapJob, addr, "")), 0o644)
	produceOrders(t, addr, "orders", 0, 5)
	if log, sum, err := runLive(t, dir, 5); err != nil || sum.Read != 5 {
		t.Fatalf("%v %+v\n%s", err, sum, log)
	}
	cl, _ := kgo.NewClient(kgo.SeedBrokers(addr))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if _, err := adm.DeleteTopics(context.Background(), "orders"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, "orders"); err != nil {
		t.Fatal(err)
	}
	produceOrders(t, addr, "orders", 100, 108)
	_, _, err := runLive(t, dir, 13)
	if err == nil || !strings.Contains(err.Error(), "the topic was deleted and created again since the checkpoint") {
		t.Fatalf("a topic created again: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(fmt.Sprintf(gapJob, addr, ", on_gap: skip")), 0o644)
	if log, sum, err := runLive(t, dir, 13); err != nil || sum.Read != 13 {
		t.Fatalf("on_gap: skip: %v %+v\n%s", err, sum, log)
	}
}

// A savepoint that a restore from an older one left behind is refused when
// named with --from, in one line that says why and what to do, and nothing
// is written: the outputs were taken back to the older one and hold that
// run's results since, so going on from the newer one would write results
// twice (a topic) or after a hole (a file). Found by the crash test.
func TestRestoreOfALeftBehindSavepointRefused(t *testing.T) {
	dir, refDir, paths, j := savepointsOfDurable(t)
	if _, err := Run(context.Background(), j, Options{From: paths[0]}); err != nil {
		t.Fatal(err)
	}
	sameOutputs(t, dir, refDir)
	before := map[string]string{}
	for _, f := range []string{"results.jsonl", "late.jsonl", "quarantine.jsonl"} {
		before[f] = read(t, dir, f)
	}
	ckpts, _ := os.ReadDir(filepath.Join(dir, "ckpt"))
	newer := paths[len(paths)-1]
	_, err := Run(context.Background(), j, Options{From: newer})
	want := "cannot restore " + newer + ": a run resumed from the older checkpoint "
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Fatalf("restore of %s: %v, want one line with %q", newer, err, want)
	}
	var re *RuntimeError
	if !errors.As(err, &re) {
		t.Errorf("the refusal is a %T, want a RuntimeError (exit 1)", err)
	}
	for f, b := range before {
		if read(t, dir, f) != b {
			t.Errorf("the refused restore changed %s", f)
		}
	}
	if after, _ := os.ReadDir(filepath.Join(dir, "ckpt")); len(after) != len(ckpts) {
		t.Errorf("the refused restore changed the checkpoint directory: %d entries, %d before", len(after), len(ckpts))
	}
}
