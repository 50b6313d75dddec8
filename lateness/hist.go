package lateness

import "math/bits"

// hist is a streaming histogram of weighted millisecond values, negative ones
// included. Values below 256 ms (in magnitude) have a bucket each; larger
// ones fall in log-linear buckets 1/128 of their size wide (HDR style), so a
// quantile is off by less than 0.8% and the histogram never holds more than
// a few thousand counters, whatever the number of values.
type hist struct {
	pos      []float64 // by index(v), v >= 0
	neg      []float64 // by index(-v), v < 0
	n        int64
	w        float64
	min, max int64
}

const (
	histLinear = 256 // values below have a bucket each
	histSub    = 7   // log2 of the buckets per power of two above
)

// histIndex is the bucket of a value v >= 0.
func histIndex(v uint64) int {
	if v < histLinear {
		return int(v)
	}
	e := bits.Len64(v) - 1 // >= 8
	m := (v >> (e - histSub)) & (1<<histSub - 1)
	return histLinear + (e-8)<<histSub + int(m)
}

// histLower is the smallest value of bucket i.
func histLower(i int) uint64 {
	if i < histLinear {
		return uint64(i)
	}
	i -= histLinear
	e := i>>histSub + 8
	m := uint64(i & (1<<histSub - 1))
	return (1<<histSub + m) << (e - histSub)
}

// histUpper is the largest value of bucket i.
func histUpper(i int) uint64 { return histLower(i+1) - 1 }

func grow(s []float64, i int) []float64 {
	if i < len(s) {
		return s
	}
	n := max(2*len(s), i+1, 64)
	t := make([]float64, n)
	copy(t, s)
	return t
}

// add records v with weight w.
func (h *hist) add(v int64, w float64) {
	if h.n == 0 || v < h.min {
		h.min = v
	}
	if h.n == 0 || v > h.max {
		h.max = v
	}
	h.n++
	h.w += w
	if v >= 0 {
		i := histIndex(uint64(v))
		h.pos = grow(h.pos, i)
		h.pos[i] += w
	} else {
		i := histIndex(uint64(-v))
		h.neg = grow(h.neg, i)
		h.neg[i] += w
	}
}

// merge adds the values of o.
func (h *hist) merge(o *hist) {
	if o.n == 0 {
		return
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if h.n == 0 || o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.w += o.w
	if len(o.pos) > 0 {
		h.pos = grow(h.pos, len(o.pos)-1)
	}
	for i, w := range o.pos {
		h.pos[i] += w
	}
	if len(o.neg) > 0 {
		h.neg = grow(h.neg, len(o.neg)-1)
	}
	for i, w := range o.neg {
		h.neg[i] += w
	}
}

// quantile is the smallest value v (to the bucket) such that values up to
// v weigh at least q of the total: exact below 256 ms and at the extremes,
// within 0.8% elsewhere. It is 0 for an empty histogram.
func (h *hist) quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	if q <= 0 {
		return h.min
	}
	if q >= 1 {
		return h.max
	}
	target := q * h.w
	var cum float64
	// The middle of the bucket, of its part between min and max.
	rep := func(lo, hi int64) int64 {
		lo, hi = max(lo, h.min), min(hi, h.max)
		return lo + (hi-lo)/2
	}
	for i := len(h.neg) - 1; i >= 0; i-- {
		if h.neg[i] == 0 {
			continue
		}
		cum += h.neg[i]
		if cum >= target {
			return rep(-int64(histUpper(i)), -int64(histLower(i)))
		}
	}
	for i, w := range h.pos {
		if w == 0 {
			continue
		}
		cum += w
		if cum >= target {
			return rep(int64(histLower(i)), int64(histUpper(i)))
		}
	}
	return h.max
}
