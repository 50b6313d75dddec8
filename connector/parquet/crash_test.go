package parquet_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector/parquet"
	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/jobfile"
)

// childEnv holds a child run's directory and the batch after which it
// kills itself (SIGKILL), when the test binary runs as a child.
const childEnv = "WEIR_PARQUET_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(child(spec))
	}
	os.Exit(m.Run())
}

// child runs the job of dir, with a checkpoint every other batch, and
// kills itself after batch kill: 0 when the job ends first.
func child(spec string) int {
	dir, k, _ := strings.Cut(spec, ",")
	kill, _ := strconv.ParseInt(k, 10, 64)
	j, err := jobfile.Load(filepath.Join(dir, "job.yaml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_, err = job.Run(context.Background(), j, job.Options{Log: os.Stderr, CheckpointAfter: func(b int64) (checkpoint.Kind, bool) {
		if b == kill {
			// Not before the job's first checkpoint is durable, so that
			// every run after the first resumes from one.
			for i := 0; i < 3000; i++ {
				if m, _ := filepath.Glob(filepath.Join(dir, "ckpt", "chk-*", checkpoint.ManifestName)); len(m) > 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		// A batch takes a while, as a live input's do: checkpoints
		// complete between the kills.
		time.Sleep(10 * time.Millisecond)
		return checkpoint.Periodic, b%2 == 0
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// A job killed with SIGKILL after a random batch (of 60; a checkpoint
// every other one, so the kill comes between a barrier and its commit, or
// in the middle of writes; the first kill once the first checkpoint is
// durable) five times, each run restored from the last checkpoint, then
// run to its end: its final part files hold exactly the panes of
// an uninterrupted run, and no in-progress file is left.
func TestKilledAndRestoredRunsWriteEachPaneOnce(t *testing.T) {
	evs := events(6000, "c0", "c1", "c2", "c3")
	want := uninterrupted(t, evs)

	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			dir := t.TempDir()
			jobFile(t, dir, evs)
			kills, logs := killFiveTimes(t, dir, seed)
			got, _ := parquetPanes(t, filepath.Join(dir, "lake"))
			if !slices.Equal(got, want) {
				t.Fatalf("killed after batches %v: Parquet holds %d panes, an uninterrupted run %d:\n%s\nwant\n%s", kills, len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			// A run killed before the job's first checkpoint was durable
			// leaves its in-progress files: the next run starts afresh, and
			// no checkpoint proves them weir's. They are numbered below
			// every final file, and the last run says it left them. Every
			// other in-progress file is committed or removed.
			all, fin := parquet.Files(t, filepath.Join(dir, "lake")), parquet.Finals(t, filepath.Join(dir, "lake"))
			last := logs[len(logs)-1]
			first := finalNumber(t, fin[0])
			for _, f := range fin {
				first = min(first, finalNumber(t, f))
			}
			var left []string
			for _, f := range all {
				if slices.Contains(fin, f) {
					continue
				}
				base := filepath.Base(f)
				if !strings.HasPrefix(base, ".") || finalNumber(t, strings.TrimSuffix(base[1:], ".inprogress")) >= first || !strings.Contains(last, "left "+filepath.Join(dir, "lake", f)+":") {
					t.Errorf("%s is left, and not as a run before the first checkpoint leaves it", f)
				}
				left = append(left, f)
			}
			resumed, pending, removed := 0, 0, 0
			for _, l := range logs {
				if strings.Contains(l, "weir: resuming from ") {
					resumed++
				}
				if strings.Contains(l, "left pending") {
					pending++
				}
				removed += strings.Count(l, ", written after the checkpoint the job resumes from")
			}
			if resumed != len(kills) {
				t.Errorf("%d runs resumed from a checkpoint, want %d (killed after batches %v)", resumed, len(kills), kills)
			}
			t.Logf("killed after batches %v, %d runs resumed from a checkpoint (%d committing what it left pending, %d in-progress files removed): %d panes, each once, in %d part files; %d in-progress files of the runs before the first checkpoint left", kills, resumed, pending, removed, len(got), len(fin), len(left))
		})
	}
}

// uninterrupted are the panes of the test job's uninterrupted run over evs,
// as its JSON output holds them.
func uninterrupted(t *testing.T, evs []string) []string {
	t.Helper()
	ref := t.TempDir()
	j, err := jobfile.Load(jobFile(t, ref, evs))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.Run(context.Background(), j, job.Options{}); err != nil {
		t.Fatal(err)
	}
	return jsonPanes(t, filepath.Join(ref, "results.jsonl"))
}

// killFiveTimes runs the job of dir six times, the first five killed with
// SIGKILL after a random batch (of 60; a checkpoint every other one; the
// first kill once the job's first checkpoint is durable), each run
// restored from the last checkpoint: the batches after which it killed,
// and each run's log.
func killFiveTimes(t *testing.T, dir string, seed uint64) (kills []int64, logs []string) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 50))
	for run := 1; ; run++ {
		if run > 6 {
			t.Fatalf("the job did not end in its sixth run (killed after batches %v)", kills)
		}
		kill := int64(4 + r.IntN(14))
		if run == 6 {
			kill = 0
		}
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+dir+","+strconv.FormatInt(kill, 10))
		var log bytes.Buffer
		cmd.Stderr = &log
		err := cmd.Run()
		logs = append(logs, log.String())
		if err == nil {
			return kills, logs
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("run %d: %v\n%s", run, err, log.String())
		}
		kills = append(kills, kill)
	}
}

// The same job writing to object storage (an S3 server in the test's
// process, which outlives the killed runs), killed five times: the
// objects hold exactly the panes of an uninterrupted run, and no upload is
// left in progress (those a killed run started after its last checkpoint
// are aborted by the restore), nor any file in the staging directory.
func TestS3KilledAndRestoredRunsWriteEachPaneOnce(t *testing.T) {
	evs := events(6000, "c0", "c1", "c2", "c3")
	want := uninterrupted(t, evs)

	for seed := range uint64(3) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			f := parquet.NewFakeS3(t)
			dir := t.TempDir()
			path := jobFile(t, dir, evs)
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s3out := fmt.Sprintf("parquet: {dir: s3://lake/spend, staging: staging, partition_by: [date, hour], roll: {size: 64KiB}, s3: {endpoint: %q, path_style: true, access_key_id: weir, secret_access_key: \"${WEIR_TEST_S3_SECRET}\"}}", f.URL)
			yaml := strings.Replace(string(b), "parquet: {dir: lake, partition_by: [date, hour], roll: {size: 64KiB}}", s3out, 1)
			if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv("WEIR_TEST_S3_SECRET", "secret")
			kills, logs := killFiveTimes(t, dir, seed)
			lake := t.TempDir()
			f.Download(t, "spend", lake)
			got, folders := parquetPanes(t, lake)
			if !slices.Equal(got, want) {
				t.Fatalf("killed after batches %v: the objects hold %d panes, an uninterrupted run %d:\n%s\nwant\n%s", kills, len(got), len(want), strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if up := f.Uploads(t); len(up) != 0 {
				t.Errorf("uploads left in progress: %v", up)
			}
			if left := parquet.Files(t, filepath.Join(dir, "staging")); len(left) != 0 {
				t.Errorf("left in staging: %v", left)
			}
			aborted := 0
			for _, l := range logs {
				aborted += strings.Count(l, ", started after the checkpoint the job resumes from")
				if strings.Contains(l, "secret") && !strings.Contains(l, "secret_access_key") {
					t.Errorf("a log line shows the secret key:\n%s", l)
				}
			}
			t.Logf("killed after batches %v: %d panes, each once, in %d objects of %d folders; %d uploads aborted by restores", kills, len(got), len(parquet.Finals(t, lake)), len(folders), aborted)
		})
	}
}

// finalNumber is the number of a part file's final name.
func finalNumber(t *testing.T, name string) int {
	t.Helper()
	base := strings.TrimSuffix(filepath.Base(name), ".parquet")
	n, err := strconv.Atoi(base[strings.LastIndexByte(base, '-')+1:])
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return n
}
