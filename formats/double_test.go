package formats

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// appendDouble writes what strconv.AppendFloat(b, f, 'g', -1, 64) writes:
// on every amount of at most two decimals around the bounds of its fast
// path, on their neighbouring doubles, and on random doubles.
func TestAppendDouble(t *testing.T) {
	check := func(f float64) {
		t.Helper()
		if got, want := string(appendDouble(nil, f)), strconv.FormatFloat(f, 'g', -1, 64); got != want {
			t.Fatalf("%v (%x): %s, want %s", f, math.Float64bits(f), got, want)
		}
	}
	for _, k := range []int64{0, 1, 9, 10, 99, 100, 101, 12345, 99999999, 100000000, 100000001} {
		for _, s := range []float64{1, -1} {
			f := s * float64(k) / 100
			check(f)
			check(math.Nextafter(f, 0))
			check(math.Nextafter(f, math.Inf(1)))
		}
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for range 1_000_000 {
		f := float64(rng.Int64N(2e8)-1e8) / 100
		check(f)
		check(math.Nextafter(f, math.Inf(1)))
		check(f * 3)
		check(math.Float64frombits(rng.Uint64()))
	}
	check(math.Copysign(0, -1))
	check(0.1 + 0.2)
}

func BenchmarkAppendDouble(b *testing.B) {
	var buf []byte
	for i := 0; b.Loop(); i++ {
		buf = appendDouble(buf[:0], float64(i%30000)/100)
	}
}
