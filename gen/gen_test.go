package gen

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/weirstream/weir/mtime"
)

var writers = []struct {
	name   string
	write  func(io.Writer, Options) error
	golden string // sha256 of the first 10,000 lines with seed 1
}{
	{"steep", Steep, "6b06a8531fe23e6ed227e59af39e3052a9bde68c585badbc64f02e5198cbe4b5"},
	{"orders", Orders, "7c3cfec2891c84f1a3b6aa892329856cdeba1bbde0da929c965b9f09c2512d16"},
	{"nexmark", NexmarkJSON, "1e2bfaeaab37591bbb504030195ace740b6e5d39ed10d425e71157cee79578d2"},
}

func generate(t testing.TB, write func(io.Writer, Options) error, o Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := write(&b, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// digest returns the SHA-256 of a stream and its number of lines.
func digest(t testing.TB, write func(io.Writer, Options) error, o Options) (sum [32]byte, lines int) {
	t.Helper()
	h := sha256.New()
	c := &lineCounter{w: h}
	if err := write(c, o); err != nil {
		t.Fatal(err)
	}
	copy(sum[:], h.Sum(nil))
	return sum, c.n
}

type lineCounter struct {
	w io.Writer
	n int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += bytes.Count(p, []byte{'\n'})
	return c.w.Write(p)
}

func TestDeterministic(t *testing.T) {
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			o := Options{Events: 100_000, Seed: 7}
			a, n := digest(t, w.write, o)
			if b, _ := digest(t, w.write, o); a != b {
				t.Fatal("two runs with the same options differ")
			}
			o.Seed = 8
			if c, _ := digest(t, w.write, o); a == c {
				t.Fatal("seeds 7 and 8 give the same bytes")
			}
			if n != o.Events {
				t.Fatalf("%d lines, want %d", n, o.Events)
			}
		})
	}
}

// TestGolden pins the first lines of each stream with the default seed, so
// that a change of the output is a visible decision.
func TestGolden(t *testing.T) {
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			a, _ := digest(t, w.write, Options{Events: 10_000, Seed: 1})
			b, _ := digest(t, w.write, Options{Events: 10_000, Seed: 1, Days: 1, Start: DefaultStart})
			if a != b {
				t.Fatal("zero options are not the defaults")
			}
			if got := fmt.Sprintf("%x", a); got != w.golden {
				t.Errorf("sha256 %s, want %s: if the change of output is meant, update the golden sum", got, w.golden)
			}
		})
	}
}

func TestEventCounts(t *testing.T) {
	for _, w := range writers {
		for _, n := range []int{1, 2, 10, 999, 12345} {
			for _, days := range []int{1, 3} {
				if _, got := digest(t, w.write, Options{Events: n, Seed: 3, Days: days}); got != n {
					t.Errorf("%s: %d events over %d days: %d lines", w.name, n, days, got)
				}
			}
		}
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n--; f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestWriteError(t *testing.T) {
	for _, w := range writers {
		if err := w.write(&failWriter{n: 2}, Options{Events: 100_000}); err == nil || err.Error() != "disk full" {
			t.Errorf("%s: error %v, want disk full", w.name, err)
		}
	}
}

func TestTimeFmt(t *testing.T) {
	var f timeFmt
	r := newRNG(1, 2)
	times := []mtime.Time{0, -1, 1, DefaultStart, DefaultStart - 1, DefaultStart + day - 1, mtime.MaxTime, mtime.MinTime, -day, -day - 1}
	for range 10000 {
		times = append(times, DefaultStart+mtime.Time(r.int64n(int64(400*day)))-200*day)
	}
	for _, ts := range times {
		if got, want := string(f.append(nil, ts)), ts.String(); got != want {
			t.Fatalf("%d: %s, want %s", int64(ts), got, want)
		}
	}
}

func TestProfile(t *testing.T) {
	r := newRNG(1, 3)
	for range 10000 {
		ts := DefaultStart + mtime.Time(r.int64n(int64(30*day)))
		if back := teaShop.unwarp(teaShop.warp(ts)); back < ts-1 || back > ts+1 {
			t.Fatalf("%s: warp and back gives %s", ts, back)
		}
	}
	if w := teaShop.warp(DefaultStart+day) - teaShop.warp(DefaultStart); w != float64(day) {
		t.Fatalf("a day is %v warped ms", w)
	}
}

func TestHeap(t *testing.T) {
	var h minHeap[orderRow, *orderRow]
	r := newRNG(1, 4)
	for i := range 5000 {
		h.push(orderRow{arrival: mtime.Time(r.intn(1000)), seq: uint64(i)})
	}
	last := orderRow{arrival: -1}
	for h.len() > 0 {
		x := h.pop()
		if x.before(&last) {
			t.Fatalf("%+v after %+v", x, last)
		}
		last = x
	}
}

func TestAppendHelpers(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{string(appendCents(nil, 1250)), "12.50"},
		{string(appendCents(nil, 5)), "0.05"},
		{string(appendCents(nil, -120)), "-1.20"},
		{string(appendPadded(nil, 42, 7)), "0000042"},
		{string(appendPadded(nil, 12345678, 3)), "12345678"},
		{string(appendHex16(nil, 0xabc)), "0000000000000abc"},
		{string(appendJSONString(nil, "a\"b\\c\n")), `a\"b\\c\u000a`},
	} {
		if c.got != c.want {
			t.Errorf("got %s, want %s", c.got, c.want)
		}
	}
}
