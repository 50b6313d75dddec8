//go:build unix

package weir_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// killedJoins are the stages of the source loop the kill test kills (the
// joins, and a keyed process function): each builds its pipeline as the
// tests of resumption do.
var killedJoins = map[string]func(evs []shop, path string, opts []weir.Option, stopAt int, cancel func()) *weir.Pipeline{
	"interval": joinFile,
	"temporal": temporalFile,
	"window":   windowJoinFile,
	"process":  processFile,
	"lookup":   lookupFile,
}

// A join (interval, temporal, window) or a keyed process function (its
// states and timers of both domains), in memory and with its state on
// disk, or a lookup join (the lookups under way at the checkpoint),
// killed with SIGKILL after a checkpoint resumes from it, at another
// parallelism, and writes what an uninterrupted run writes, byte for byte;
// the database a killed run left is removed by the next. The killed run is
// this test's binary run again as a child.
func TestJoinKill9(t *testing.T) {
	evs := shopEvents(6000)
	if dir := os.Getenv("WEIR_JOIN_KILL_DIR"); dir != "" {
		var stop int
		fmt.Sscan(os.Getenv("WEIR_JOIN_KILL_AT"), &stop)
		kill := func() {
			// Wait for a checkpoint, the source held where it is, then die.
			for range 1000 {
				if m, _ := filepath.Glob(filepath.Join(dir, "ckpt", "chk-*")); len(m) > 0 {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
		ckpt := weir.Checkpoints(filepath.Join(dir, "ckpt"), 20*time.Millisecond)
		readHook = kill
		kind, opts := os.Getenv("WEIR_JOIN_KILL_KIND"), []weir.Option{ckpt, weir.Parallelism(2)}
		if k, ok := strings.CutSuffix(kind, " on disk"); ok {
			kind, opts = k, append(opts, weir.StateOnDisk(filepath.Join(dir, "state"), onDiskBudget))
		}
		killedJoins[kind](evs, filepath.Join(dir, "out.txt"), opts, stop, nil).Run(context.Background())
		t.Fatal("the child was not killed")
	}
	if testing.Short() {
		t.Skip("runs the test binary again")
	}
	for _, kind := range []string{"interval", "temporal", "window", "process", "lookup", "interval on disk", "temporal on disk", "window on disk", "process on disk"} {
		t.Run(kind, func(t *testing.T) {
			name, onDisk := strings.CutSuffix(kind, " on disk")
			build := killedJoins[name]
			dir := t.TempDir()
			ref := filepath.Join(dir, "ref.txt")
			if err := build(evs, ref, nil, -1, nil).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			want, _ := os.ReadFile(ref)
			for _, at := range []int{1500, 5000} {
				run := filepath.Join(dir, fmt.Sprint(at))
				cmd := osexec.Command(os.Args[0], "-test.run=^TestJoinKill9$", "-test.count=1")
				cmd.Env = append(os.Environ(), "WEIR_JOIN_KILL_DIR="+run, fmt.Sprintf("WEIR_JOIN_KILL_AT=%d", at), "WEIR_JOIN_KILL_KIND="+kind)
				out, err := cmd.CombinedOutput()
				var ee *osexec.ExitError
				if !errors.As(err, &ee) || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("the child was not killed: %v\n%s", err, out)
				}
				var log strings.Builder
				ckpt := weir.Checkpoints(filepath.Join(run, "ckpt"), time.Hour)
				opts := []weir.Option{ckpt, weir.Parallelism(3), weir.Log(&log)}
				if onDisk {
					// The killed run's database is left behind, in the
					// state directory this run claims again.
					if left := databases(t, filepath.Join(run, "state")); len(left) != 1 {
						t.Fatalf("killed at %d: the killed run left the databases %q", at, left)
					}
					opts = append(opts, weir.StateOnDisk(filepath.Join(run, "state"), onDiskBudget))
				}
				if err := build(evs, filepath.Join(run, "out.txt"), opts, -1, nil).Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				if onDisk {
					if left := databases(t, filepath.Join(run, "state")); len(left) != 0 {
						t.Errorf("killed at %d: after the run resumed, the state directory holds %q", at, left)
					}
				}
				if !strings.Contains(log.String(), "weir: resuming from "+filepath.Join(run, "ckpt", "chk-")) {
					t.Errorf("killed at %d: the run after did not resume from a checkpoint: %q", at, log.String())
				}
				if got, _ := os.ReadFile(filepath.Join(run, "out.txt")); !bytes.Equal(got, want) || len(want) == 0 {
					t.Errorf("killed at %d: the resumed output differs from an uninterrupted run (%d bytes, want %d)", at, len(got), len(want))
				}
			}
		})
	}
}
