package engine_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
)

// forking decodes "key ts id" records; its forks reuse one buffer for the
// ids they return, as a parser does, and count what they decode. It is an
// Aheader, and counts the records it is told of, and those it decodes
// without having been told of them once, before.
type forking struct {
	id      []byte
	forks   []*forking
	decoded atomic.Int64
	settled []int64 // the offsets Settle saw, in order
	told    map[int64]int
	untold  int
}

func (f *forking) Ahead(r *connector.Record) {
	if f.told == nil {
		f.told = map[int64]int{}
	}
	f.told[r.Offset]++
}

func (f *forking) Decode(r *connector.Record, d *engine.Decoded[string, int]) {
	f.decoded.Add(1)
	if f.told[r.Offset] != 1 {
		f.untold++
	}
	p := strings.Fields(string(r.Value))
	if len(p) != 3 {
		d.Kind, d.Reason = engine.Rejected, "bad"
		return
	}
	ts, err := strconv.ParseInt(p[1], 10, 64)
	if err != nil {
		d.Kind, d.Reason = engine.Rejected, "bad_time"
		return
	}
	f.id = append(f.id[:0], p[2]...)
	d.Kind, d.Key, d.Time, d.ID, d.Value = engine.Event, p[0], mtime.Time(ts), f.id, 1
}

func (f *forking) Fork() engine.Decoder[string, int] {
	c := &forking{}
	f.forks = append(f.forks, c)
	return c
}

func (f *forking) Settle(r *connector.Record, d *engine.Decoded[string, int]) {
	f.settled = append(f.settled, r.Offset)
}

// runForking runs a bounded job over recs with n decoders and returns its
// panes, its counts and its decoder.
func runForking(t *testing.T, recs []string, n int) (string, engine.Counts, *forking) {
	t.Helper()
	e, err := engine.New(engine.Config{Name: "fork"})
	if err != nil {
		t.Fatal(err)
	}
	w := countWindow(t, e, 1)
	sink := &memSink{}
	out, err := engine.NewSink(e, "output", sink)
	if err != nil {
		t.Fatal(err)
	}
	w.Panes.Subscribe(out)
	dec := &forking{}
	h, err := engine.NewHead(e, engine.HeadConfig[string, int]{Name: "head", Decoder: dec, Window: w,
		Dedup: state.NewMemoryDedup(mtime.Time(time.Hour.Milliseconds())), Decoders: n})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.AddSource("mem", &lines{recs: recs, bounded: true}, h); err != nil {
		t.Fatal(err)
	}
	e.OnSignal(h)
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sink.String(), h.Counts(), dec
}

// Records decoded by several goroutines are settled and applied in arrival
// order with their own ids: the panes and the counts are those of one
// decoder, every fork decodes a share, and Settle sees every record once, in
// order. A decoder (or fork) that is an Aheader is told of each record it
// decodes once, before it decodes it.
func TestForkedDecodingIsInvisible(t *testing.T) {
	var recs []string
	for i := range 3000 {
		switch {
		case i%97 == 0:
			recs = append(recs, "garbage")
		case i%13 == 0: // a duplicate of the record before
			recs = append(recs, recs[i-1])
		default:
			recs = append(recs, fmt.Sprintf("k%d %d id%d", i%7, 1_000_000+i*3, i))
		}
	}
	want, wantCounts, one := runForking(t, recs, 1)
	if one.decoded.Load() != int64(len(recs)) || len(one.forks) != 0 {
		t.Fatalf("one decoder: %d decoded, %d forks", one.decoded.Load(), len(one.forks))
	}
	if one.untold != 0 || len(one.told) != len(recs) {
		t.Fatalf("one decoder: told of %d records, %d decoded without being told once before", len(one.told), one.untold)
	}
	var dups, bad int64
	seen := map[string]bool{}
	for _, r := range recs {
		if f := strings.Fields(r); len(f) != 3 {
			bad++
		} else if seen[f[2]] {
			dups++
		} else {
			seen[f[2]] = true
		}
	}
	if wantCounts.Read != int64(len(recs)) || wantCounts.Duplicates != dups || wantCounts.Quarantined != bad || dups == 0 || bad == 0 {
		t.Fatalf("counts %+v", wantCounts.Accounting)
	}
	got, counts, dec := runForking(t, recs, 3)
	if got != want {
		t.Errorf("panes with 3 decoders:\n%s\nwant:\n%s", got, want)
	}
	if counts.Accounting != wantCounts.Accounting || counts.QuarantineReasons["bad"] != wantCounts.QuarantineReasons["bad"] {
		t.Errorf("counts %+v, want %+v", counts.Accounting, wantCounts.Accounting)
	}
	if len(dec.forks) != 3 {
		t.Fatalf("%d forks", len(dec.forks))
	}
	for i, f := range dec.forks {
		if n := f.decoded.Load(); n != 1000 {
			t.Errorf("fork %d decoded %d records, want 1000", i, n)
		}
		if f.untold != 0 || len(f.told) != 1000 {
			t.Errorf("fork %d: told of %d records, %d decoded without being told once before", i, len(f.told), f.untold)
		}
	}
	if dec.decoded.Load() != 0 || len(dec.settled) != len(recs) {
		t.Fatalf("the head's decoder decoded %d and settled %d", dec.decoded.Load(), len(dec.settled))
	}
	for i, off := range dec.settled {
		if off != int64(i+1) {
			t.Fatalf("settled #%d is record %d", i, off)
		}
	}
}
