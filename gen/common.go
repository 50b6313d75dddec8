package gen

import (
	"io"
	"math"
	"math/bits"
	"math/rand/v2"

	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/mtime"
)

// Options size and seed a generated stream. The zero value of every field but
// Seed means its default.
type Options struct {
	// Events is the number of lines to write; 0 means DefaultEvents.
	Events int
	// Seed seeds the random generator: the same options give the same bytes.
	// The command's default is 1; 0 is a seed like any other.
	Seed uint64
	// Days is the span of event time the lines cover; 0 means 1. Nexmark
	// ignores it: its rate is fixed (10,000 events a second by default).
	Days int
	// Start is the event time of the beginning of the stream; 0 means
	// DefaultStart.
	Start mtime.Time
}

// DefaultEvents is the number of lines written when Options.Events is 0.
const DefaultEvents = 1_000_000

// DefaultStart, 2026-09-01T00:00:00Z, is the start of the stream when
// Options.Start is 0.
const DefaultStart mtime.Time = 1788220800000

const (
	second = mtime.Time(1000)
	minute = 60 * second
	hour   = 60 * minute
	day    = 24 * hour
)

func (o Options) withDefaults() Options {
	if o.Events <= 0 {
		o.Events = DefaultEvents
	}
	if o.Days <= 0 {
		o.Days = 1
	}
	if o.Start == 0 {
		o.Start = DefaultStart
	}
	return o
}

// rng is a PCG generator with the few draws the generators need, called
// directly rather than through an interface.
type rng struct{ pcg rand.PCG }

func newRNG(seed, stream uint64) *rng {
	r := &rng{}
	r.pcg.Seed(seed, stream)
	return r
}

func (r *rng) u64() uint64 { return r.pcg.Uint64() }

// intn returns a number in [0, n), n > 0 (multiply-high; the bias, n/2^64, is
// far below anything the streams could show).
func (r *rng) intn(n int) int {
	hi, _ := bits.Mul64(r.pcg.Uint64(), uint64(n))
	return int(hi)
}

// int64n is intn for int64.
func (r *rng) int64n(n int64) int64 {
	hi, _ := bits.Mul64(r.pcg.Uint64(), uint64(n))
	return int64(hi)
}

// float returns a number in [0, 1).
func (r *rng) float() float64 { return float64(r.pcg.Uint64()>>11) * 0x1p-53 }

// exp returns an exponential number with mean 1.
func (r *rng) exp() float64 { return -math.Log(1 - r.float()) }

// expMax returns an exponential number with mean 1 (before truncation),
// truncated to [0, max) by inversion, so that no value piles up at the cap.
func (r *rng) expMax(max float64) float64 {
	return -math.Log(1 - r.float()*(1-math.Exp(-max)))
}

// mix is the SplitMix64 finaliser: a bijection of uint64 that looks random.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// heapItem is implemented by the pointer type of a heap's element.
type heapItem[T any] interface {
	*T
	before(*T) bool
}

// minHeap is a binary heap of values, smallest first by before.
type minHeap[T any, P heapItem[T]] struct{ a []T }

func (h *minHeap[T, P]) len() int { return len(h.a) }

// min returns the smallest element; the heap must not be empty.
func (h *minHeap[T, P]) min() *T { return &h.a[0] }

func (h *minHeap[T, P]) push(x T) {
	h.a = append(h.a, x)
	a := h.a
	j := len(a) - 1
	for j > 0 {
		i := (j - 1) / 2
		if !P(&a[j]).before(&a[i]) {
			break
		}
		a[i], a[j] = a[j], a[i]
		j = i
	}
}

// pop removes and returns the smallest element; the heap must not be empty.
func (h *minHeap[T, P]) pop() T {
	a := h.a
	n := len(a) - 1
	top := a[0]
	a[0] = a[n]
	var zero T
	a[n] = zero
	a = a[:n]
	h.a = a
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && P(&a[r]).before(&a[l]) {
			m = r
		}
		if !P(&a[m]).before(&a[i]) {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	return top
}

// profile is a daily traffic shape: a weight for each hour of the day (UTC),
// mean 1. Event times are drawn evenly in "warped" time, where busy hours
// last longer, and mapped back to real time.
type profile struct {
	w   [24]float64 // weight of each hour, mean 1
	cum [25]float64 // warped milliseconds at the start of each hour
}

// teaShop is the traffic of a tea shop's app and tills: quiet at night, a
// morning peak, a lunch peak, an afternoon bump and a long evening.
var teaShop = newProfile([24]float64{
	0.25, 0.15, 0.10, 0.08, 0.08, 0.15, 0.45, 1.10, 1.60, 1.40, 1.20, 1.40,
	1.70, 1.50, 1.20, 1.30, 1.50, 1.40, 1.20, 1.10, 1.00, 0.80, 0.55, 0.40,
})

func newProfile(w [24]float64) *profile {
	p := &profile{}
	var sum float64
	for _, x := range w {
		sum += x
	}
	for h, x := range w {
		p.w[h] = x * 24 / sum
		p.cum[h+1] = p.cum[h] + p.w[h]*float64(hour)
	}
	p.cum[24] = float64(day)
	return p
}

// warp maps real time (milliseconds since an epoch at midnight UTC) to warped
// time.
func (p *profile) warp(t mtime.Time) float64 {
	d := t / day
	r := t % day
	if r < 0 {
		r += day
		d--
	}
	h := r / hour
	return float64(d)*float64(day) + p.cum[h] + float64(r-h*hour)*p.w[h]
}

// unwarp is the inverse of warp.
func (p *profile) unwarp(x float64) mtime.Time {
	d := math.Floor(x / float64(day))
	r := x - d*float64(day)
	h := 0
	for h < 23 && p.cum[h+1] <= r {
		h++
	}
	ms := float64(h)*float64(hour) + (r-p.cum[h])/p.w[h]
	return mtime.Time(d)*day + mtime.Time(ms)
}

// out collects lines in a buffer and writes it in large pieces, keeping the
// first write error.
type out struct {
	w   io.Writer
	buf []byte
	err error
}

const outFlushAt = 240 << 10

func newOut(w io.Writer) *out { return &out{w: w, buf: make([]byte, 0, outFlushAt+16<<10)} }

// line ends the current line and writes the buffer when it is full.
func (o *out) line() {
	o.buf = append(o.buf, '\n')
	if len(o.buf) >= outFlushAt {
		o.flush()
	}
}

func (o *out) flush() error {
	if o.err == nil && len(o.buf) > 0 {
		_, o.err = o.w.Write(o.buf)
	}
	o.buf = o.buf[:0]
	return o.err
}

// appendPadded appends v in decimal, zero-padded to width digits.
func appendPadded(b []byte, v int64, width int) []byte { return text.AppendPadded(b, v, width) }

// appendCents appends an amount in cents as a JSON number with two decimals.
func appendCents(b []byte, cents int64) []byte {
	if cents < 0 {
		b = append(b, '-')
		cents = -cents
	}
	b = appendPadded(b, cents/100, 1)
	b = append(b, '.')
	return appendPadded(b, cents%100, 2)
}

// appendHex16 appends x as 16 lower-case hexadecimal digits.
func appendHex16(b []byte, x uint64) []byte {
	const digits = "0123456789abcdef"
	var tmp [16]byte
	for i := 15; i >= 0; i-- {
		tmp[i] = digits[x&15]
		x >>= 4
	}
	return append(b, tmp[:]...)
}

// appendJSONString appends s as the inside of a JSON string (no quotes),
// escaping what JSON requires.
func appendJSONString[S string | []byte](b []byte, s S) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return b
}

// cardID is the card token of a card number: "card_00012345".
func appendCard(b []byte, card int64) []byte {
	b = append(b, "card_"...)
	return appendPadded(b, card, 8)
}

// appendUser appends the user id of a user number: "u0012345".
func appendUser(b []byte, user int64) []byte {
	b = append(b, 'u')
	return appendPadded(b, user, 7)
}

// timeFmt appends times as mtime.Time.AppendFormat does
// (2026-09-07T12:00:01.000Z), remembering the date of the last call: lines
// that follow each other mostly share it.
type timeFmt struct {
	day  mtime.Time
	ok   bool
	date [11]byte // "2026-09-07T"
}

func (f *timeFmt) append(b []byte, t mtime.Time) []byte {
	d := t / day
	if t%day < 0 {
		d--
	}
	if !f.ok || d != f.day {
		var tmp [32]byte
		s := (d * day).AppendFormat(tmp[:0])
		if len(s) != 24 { // a year beyond 9999 or before 0: no cache
			return t.AppendFormat(b)
		}
		copy(f.date[:], s)
		f.day, f.ok = d, true
	}
	r := int64(t - d*day)
	h, m, s, ms := r/3600000, r/60000%60, r/1000%60, r%1000
	b = append(b, f.date[:]...)
	return append(b,
		byte('0'+h/10), byte('0'+h%10), ':',
		byte('0'+m/10), byte('0'+m%10), ':',
		byte('0'+s/10), byte('0'+s%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}
