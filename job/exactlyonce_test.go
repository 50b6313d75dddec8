package job

import (
	"context"
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

// committedRecords reads every committed record of a topic, up to its last
// stable offset, partition by partition.
func committedRecords(t *testing.T, addr, topic string) []string {
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
	var out []string
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
					out = append(out, string(r.Value))
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
	j, err := Load(filepath.Join(dir, "job.yaml"))
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
