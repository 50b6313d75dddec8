package weir_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
)

// A restore iterates the sequence again and skips what the checkpoint had
// read: a sequence with fewer elements than that is not the one the
// checkpoint read, and the restore says so.
func TestFromSeqRestoreOfAShorterSequence(t *testing.T) {
	in := taps(20_000)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.txt")
	ckpt := weir.Checkpoints(filepath.Join(dir, "ckpt"), time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stopped *engine.StoppedError
	if err := upgradePipeline(in, base, out, []weir.Option{ckpt}, 9_000, cancel).Run(ctx); !errors.As(err, &stopped) {
		t.Fatalf("the stopped run: %v", err)
	}
	err := upgradePipeline(in[:100], base, out, []weir.Option{ckpt}, -1, nil).Run(context.Background())
	re := regexp.MustCompile(`^taps: open: the sequence has 100 elements, fewer than the (\d+) the checkpoint had read: it is not the same sequence$`)
	m := re.FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("the restore of a shorter sequence: %v", err)
	}
	if n, _ := strconv.Atoi(m[1]); n < 100 || n > 9_000 {
		t.Errorf("the checkpoint had read %d elements, want 100 to 9000 (it stopped when the sequence had read 9000)", n)
	}
}

// Run stops the sequence when it returns: the sequence's yield returns
// false, and the sequence has returned by the time Run does. It reads
// ahead of the pipeline by a few batches, no more.
func TestFromSeqStopsTheSequence(t *testing.T) {
	var read, seen atomic.Int64
	returned := false
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := weir.NewPipeline()
	src := weir.FromSeq(p, func(yield func(int, mtime.Time) bool) {
		for i := 0; ; i++ {
			read.Add(1)
			if !yield(i, mtime.MinTime) {
				break
			}
		}
		returned = true
	})
	weir.Sink(src, func(i int) error {
		if seen.Add(1) == 50_000 {
			cancel()
		}
		return nil
	})
	if err := p.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	if !returned {
		t.Fatal("the sequence had not returned when Run did")
	}
	n, r := seen.Load(), read.Load()
	t.Logf("the pipeline took %d elements, the sequence read %d", n, r)
	if r > n+16*1024 {
		t.Errorf("the sequence read %d elements, the pipeline took %d: it read ahead by more than 16 batches", r, n)
	}
}
