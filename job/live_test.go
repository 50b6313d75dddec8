package job

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weirstream/weir/jobfile"
)

// lockedBuffer is standard output for a live job: written by the sink's
// goroutine, read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := strings.TrimSpace(l.b.String())
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// liveJob runs a job reading standard input, in a synctest bubble: the test
// writes lines into the pipe and lets the fake clock run.
type liveJob struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *lockedBuffer
	done   chan error
	cancel context.CancelFunc
}

func startLive(t *testing.T, yaml string) *liveJob {
	j := loadJob(t, t.TempDir(), yaml)
	r, w := io.Pipe()
	lj := &liveJob{t: t, in: w, out: &lockedBuffer{}, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	lj.cancel = cancel
	go func() {
		_, err := Run(ctx, j, Options{Stdin: r, Stdout: lj.out})
		lj.done <- err
	}()
	return lj
}

// send writes an event whose event time is now (the fake clock) plus d.
func (lj *liveJob) send(line string) {
	if _, err := io.WriteString(lj.in, line+"\n"); err != nil {
		lj.t.Fatal(err)
	}
}

func (lj *liveJob) stop() {
	lj.in.Close()
	if err := <-lj.done; err != nil {
		lj.t.Fatal(err)
	}
}

// at formats the fake clock plus d as RFC 3339.
func at(d time.Duration) string { return time.Now().Add(d).UTC().Format(time.RFC3339Nano) }

// The bubble's clock starts at 2000-01-01T00:00:00Z.
const liveBase = `
source: "-"
time: {field: ts}
watermark: {delay: 0s, interval: 200ms}
aggregates: {n: count}
output: "-"
`

// One event with early: 1s: its early pane comes after 1 s of quiet input,
// with no other line to push it out.
func TestLiveEarlyPaneWithoutInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lj := startLive(t, liveBase+"window: {tumbling: 1m}\ntrigger: {early: 1s}\n")
		time.Sleep(10 * time.Second) // 00:00:10
		lj.send(fmt.Sprintf(`{"ts":%q}`, at(0)))
		time.Sleep(900 * time.Millisecond)
		synctest.Wait()
		if got := lj.out.lines(); len(got) != 0 {
			t.Fatalf("a pane before the early period ran out: %q", got)
		}
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		got := lj.out.lines()
		want := `{"key":null,"window_start":"2000-01-01T00:00:00.000Z","window_end":"2000-01-01T00:01:00.000Z","revision":1,"timing":"EARLY","final":false,"retract":false,"status":"provisional","mode":"accumulating","version":1,"watermark":"2000-01-01T00:00:09.999Z","emitted_at":"2000-01-01T00:00:11.000Z","n":1}`
		if len(got) != 1 || got[0] != want {
			t.Errorf("after 1.1 s of quiet:\n%q\nwant\n%q", got, want)
		}
		lj.stop()
	})
}

// A throttled late update held back comes out when its period runs out, with
// no further input.
func TestLiveThrottledLateWithoutInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lj := startLive(t, strings.Replace(liveBase, "interval: 200ms", "interval: 0s", 1)+
			"window: {tumbling: 1m}\nallowed_lateness: 10m\ntrigger: {late: 30s}\n")
		time.Sleep(10 * time.Second) // 00:00:10
		lj.send(fmt.Sprintf(`{"ts":%q}`, at(0)))
		time.Sleep(60 * time.Second) // 00:01:10: W passes the end of [0, 1m)
		lj.send(fmt.Sprintf(`{"ts":%q}`, at(0)))
		time.Sleep(time.Second) // 00:01:11: late, fires at once
		lj.send(`{"ts":"2000-01-01T00:00:20Z"}`)
		time.Sleep(time.Second) // 00:01:12: late again, held back until 00:01:41
		lj.send(`{"ts":"2000-01-01T00:00:30Z"}`)
		time.Sleep(28 * time.Second) // 00:01:40
		synctest.Wait()
		if n := len(lj.out.lines()); n != 2 {
			t.Fatalf("%d panes before the late period ran out:\n%s", n, strings.Join(lj.out.lines(), "\n"))
		}
		time.Sleep(1100 * time.Millisecond) // 00:01:41.1
		synctest.Wait()
		got := lj.out.lines()
		want := []string{
			`{"key":null,"window_start":"2000-01-01T00:00:00.000Z","window_end":"2000-01-01T00:01:00.000Z","revision":1,"timing":"ON_TIME","final":false,"retract":false,"status":"provisional","mode":"accumulating","version":1,"watermark":"2000-01-01T00:01:09.999Z","emitted_at":"2000-01-01T00:01:10.000Z","n":1}`,
			`{"key":null,"window_start":"2000-01-01T00:00:00.000Z","window_end":"2000-01-01T00:01:00.000Z","revision":2,"timing":"LATE","final":false,"retract":false,"status":"provisional","mode":"accumulating","version":1,"watermark":"2000-01-01T00:01:09.999Z","emitted_at":"2000-01-01T00:01:11.000Z","n":2}`,
			`{"key":null,"window_start":"2000-01-01T00:00:00.000Z","window_end":"2000-01-01T00:01:00.000Z","revision":3,"timing":"LATE","final":false,"retract":false,"status":"provisional","mode":"accumulating","version":1,"watermark":"2000-01-01T00:01:09.999Z","emitted_at":"2000-01-01T00:01:41.000Z","n":3}`,
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		lj.stop()
	})
}

// An idle partition stops holding the watermark back after idle, with no
// input at all: the window fires then.
func TestLiveIdlePartitionWithoutInput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		job := strings.Replace(liveBase, "time: {field: ts}", "time: {field: ts, partition_field: p}", 1)
		job = strings.Replace(job, "interval: 200ms}", "interval: 200ms, idle: 5s}", 1)
		lj := startLive(t, job+"window: {tumbling: 10s}\n")
		time.Sleep(time.Second) // 00:00:01
		lj.send(fmt.Sprintf(`{"p":"a","ts":%q}`, at(0)))
		lj.send(fmt.Sprintf(`{"p":"b","ts":%q}`, at(0)))
		time.Sleep(time.Second) // 00:00:02: a is ahead, b holds the watermark at 00:00:00.999
		lj.send(`{"p":"a","ts":"2000-01-01T00:00:12Z"}`)
		time.Sleep(3900 * time.Millisecond) // 00:00:05.9
		synctest.Wait()
		if got := lj.out.lines(); len(got) != 0 {
			t.Errorf("a pane while b still holds the watermark back: %q", got)
		}
		// b goes idle at 00:00:06, 5 s after its last event: W jumps to
		// a's 00:00:11.999 and [0, 10s) fires, with no line since 00:00:02.
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		got := lj.out.lines()
		want := `{"key":null,"window_start":"2000-01-01T00:00:00.000Z","window_end":"2000-01-01T00:00:10.000Z","revision":1,"timing":"ON_TIME","final":true,"retract":false,"status":"closed","mode":"accumulating","version":1,"watermark":"2000-01-01T00:00:11.999Z","emitted_at":"2000-01-01T00:00:06.000Z","n":2}`
		if len(got) != 1 || got[0] != want {
			t.Errorf("got %q\nwant %q", got, want)
		}
		lj.stop()
	})
}

// A live job says when its first panes can come, and logs a line of
// progress at a steady interval, so that its log shows it alive before its
// first pane: what it read and how each record counted, the panes, and the
// watermark with its lag behind the clock.
func TestLiveProgressLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := loadJob(t, t.TempDir(), liveBase+"window: {tumbling: 1m}\n")
		lines := runLiveProgress(t, j, func(w io.Writer) {
			time.Sleep(10 * time.Second) // 00:00:10
			fmt.Fprintf(w, "{\"ts\":%q}\nnot json\n", at(-5*time.Second))
			time.Sleep(25 * time.Second) // 00:00:35
			synctest.Wait()
			fmt.Fprintf(w, "{\"ts\":%q}\n", at(0))
			time.Sleep(30 * time.Second) // 00:01:05
			synctest.Wait()
		})
		var got []string
		for _, l := range lines {
			if i := strings.Index(l, "the first panes"); i >= 0 {
				got = append(got, l[i:])
			}
			if i := strings.Index(l, "progress:"); i >= 0 {
				got = append(got, l[i:])
			}
		}
		want := []string{
			"the first panes: a window's pane at the watermark once the watermark passes its end (window tumbling 1m0s; the watermark is the greatest event time read minus 0s): the first window closes when an event that much past its end is read",
			"progress: read 2: 1 accepted (0 late within the allowed lateness), 0 too late, 0 duplicates, 1 quarantined; 0 panes fired; windows open: 1; watermark 2000-01-01T00:00:04.999Z, 25.001s behind the clock",
			"progress: read 3 (+1 in 30s): 2 accepted (0 late within the allowed lateness), 0 too late, 0 duplicates, 1 quarantined; 0 panes fired; windows open: 1; watermark 2000-01-01T00:00:34.999Z, 25.001s behind the clock",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("log:\n%s\nwant\n%s\nwhole log:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), strings.Join(lines, "\n"))
		}
	})
}

// A live join logs a line of progress at a steady interval too: what each
// input read and how it counted, and what the join made and holds.
func TestLiveJoinProgressLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "payments.jsonl"), []byte(fmt.Sprintf("{\"id\":\"o1\",\"ts\":%q}\nbroken\n", at(3*time.Second))), 0o600)
		j := loadJob(t, dir, `source: "-"
time: {field: ts}
key: id
join:
  with: {source: payments.jsonl, time: {field: ts}, key: id}
  between: [0s, 10s]
  kind: left_outer
watermark: {delay: 0s, interval: 200ms}
output: joined.jsonl
`)
		lines := runLiveProgress(t, j, func(w io.Writer) {
			time.Sleep(10 * time.Second) // 00:00:10
			fmt.Fprintf(w, "{\"id\":\"o1\",\"ts\":%q}\n{\"id\":\"o2\",\"ts\":%q}\n", at(-9*time.Second), at(-8*time.Second))
			time.Sleep(25 * time.Second) // 00:00:35
			synctest.Wait()
		})
		var got []string
		for _, l := range lines {
			if i := strings.Index(l, "progress:"); i >= 0 {
				got = append(got, l[i:])
			}
		}
		want := []string{
			"progress: read 2: 2 accepted (0 late within the allowed lateness), 0 too late, 0 duplicates, 0 quarantined; join.with read 2: 1 accepted, 0 too late, 1 quarantined; 1 pairs, 0 unmatched; 3 records held; watermark 2000-01-01T00:00:01.999Z, 28.001s behind the clock",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("log:\n%s\nwant\n%s\nwhole log:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), strings.Join(lines, "\n"))
		}
	})
}

// runLiveProgress runs the live job j on standard input, a line of
// progress every 30 s, feeding it as feed does (on the bubble's clock)
// until feed returns and the input ends: the lines of its log.
func runLiveProgress(t *testing.T, j *jobfile.Job, feed func(w io.Writer)) []string {
	t.Helper()
	r, w := io.Pipe()
	log := &lockedBuffer{}
	done := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), j, Options{Stdin: r, Stdout: io.Discard, Log: log, ProgressEvery: 30 * time.Second})
		done <- err
	}()
	feed(w)
	w.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return log.lines()
}
