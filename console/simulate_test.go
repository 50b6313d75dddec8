package console

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The reference simulator, the JavaScript toy that the console's page is
// modelled on, ported line by line: its random generator (mulberry32 on
// JavaScript's 32-bit integers), its stream and its replay. It is written
// apart from Simulate on purpose, in float seconds and in the toy's own
// terms (the watermark moves after every tap, one partition), so that the
// test compares weir's engine with the toy and not with itself. Only
// JavaScript's Math.log is shared with the simulator (jsLog, tested on its
// own against values from V8).

// refRandom is the toy's mulberry32: JavaScript's "| 0" and Math.imul are
// int32 arithmetic that wraps, and ">>>" shifts the bits as unsigned.
func refRandom(seed int32) func() float64 {
	ushr := func(x int32, n uint) int32 { return int32(uint32(x) >> n) }
	return func() float64 {
		seed += 0x6D2B79F5
		t := (seed ^ ushr(seed, 15)) * (1 | seed)
		t = (t + (t^ushr(t, 7))*(61|t)) ^ t
		return float64(uint32(t^ushr(t, 14))) / 4294967296
	}
}

type refTap struct {
	ts, arr float64
	offline bool
}

// refStream is the toy's makeStream for a stream number and a share of
// phones in a tunnel (percent).
func refStream(seed uint32, tunnelPct float64) []refTap {
	r := refRandom(int32(seed))
	var taps []refTap
	t := 0.0
	for {
		t += -jsLog(1-r()) / 0.5 // Math.log
		network := 0.2 + 2.3*r()
		coin, tunnel := r(), 4+36*r()
		if t > 160 {
			break
		}
		offline := coin < tunnelPct/100
		extra := 0.0
		if offline {
			extra = tunnel
		}
		taps = append(taps, refTap{ts: t, arr: t + network + extra, offline: offline})
	}
	return taps
}

type refWindow struct {
	start, end           float64
	close                *float64 // null until the watermark passes the end
	first, count, update int
}

type refResult struct {
	windows          []refWindow
	fate             []string // by stream index; "" for a tap after the windows
	n, late, lost    int
	wait             float64
	closedEverywhere bool
}

// refRun is the toy's run: replay in arrival order, the watermark being the
// largest event time seen before the tap minus the delay.
func refRun(taps []refTap, size int, delay float64, policy string) refResult {
	allowed := 0.0
	if policy == PolicyLateness {
		allowed = 15
	}
	res := refResult{fate: make([]string, len(taps))}
	for k := 0; k < 90/size; k++ {
		res.windows = append(res.windows, refWindow{start: float64(k * size), end: float64((k + 1) * size)})
	}
	order := make([]int, len(taps))
	for i := range order {
		order[i] = i
	}
	// JavaScript's sort is stable.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(taps[a].arr, taps[b].arr) })
	maxTS := math.Inf(-1)
	for _, i := range order {
		tap := taps[i]
		wm := maxTS - delay
		if tap.ts < 90 {
			w := &res.windows[int(math.Floor(tap.ts/float64(size)))]
			switch {
			case w.close == nil:
				w.count++
				res.fate[i] = "on time"
			case w.end+allowed > wm:
				w.count++
				w.update++
				res.fate[i] = "added late"
			case policy == PolicySide:
				res.fate[i] = "side output"
			default:
				res.fate[i] = "dropped"
			}
		}
		maxTS = math.Max(maxTS, tap.ts)
		for k := range res.windows {
			w := &res.windows[k]
			if w.close == nil && maxTS-delay >= w.end {
				c := tap.arr
				w.close, w.first = &c, w.count
			}
		}
	}
	for i, tap := range taps {
		if tap.ts >= 90 {
			continue
		}
		res.n++
		if res.fate[i] != "on time" {
			res.late++
		}
		if res.fate[i] == "dropped" {
			res.lost++
		}
	}
	// The toy sums close - end over every window; it has no meaning for a
	// window that never closed (JavaScript takes null as 0), so the caller
	// is told.
	res.closedEverywhere = true
	sum := 0.0
	for _, w := range res.windows {
		if w.close == nil {
			res.closedEverywhere = false
			continue
		}
		sum += *w.close - w.end
	}
	res.wait = sum / float64(len(res.windows))
	return res
}

// simDiff says how a replay differs from the reference's, or "".
func simDiff(got *SimResult, ref []refTap, want refResult) string {
	if len(got.Taps) != len(ref) {
		return fmt.Sprintf("%d taps, the reference %d", len(got.Taps), len(ref))
	}
	for i, tp := range got.Taps {
		r := ref[i]
		if tp.TS != r.ts || tp.Arr != r.arr || tp.Offline != r.offline || tp.Partition != 0 || tp.Fate != want.fate[i] {
			return fmt.Sprintf("tap %d: %+v, the reference ts=%v arr=%v offline=%v fate %q", i, tp, r.ts, r.arr, r.offline, want.fate[i])
		}
	}
	if len(got.Windows) != len(want.windows) {
		return fmt.Sprintf("%d windows, the reference %d", len(got.Windows), len(want.windows))
	}
	show := func(c *float64) string {
		if c == nil {
			return "not yet"
		}
		return strconv.FormatFloat(*c, 'g', -1, 64)
	}
	for k, w := range got.Windows {
		r := want.windows[k]
		if w.Start != r.start || w.End != r.end || show(w.Close) != show(r.close) ||
			w.First != r.first || w.Count != r.count || w.Updates != r.update || w.Waiting != 0 {
			return fmt.Sprintf("window %d (%g-%g s): closed %s, %d -> %d, %d updates, %d waiting; the reference closed %s, %d -> %d, %d updates",
				k+1, w.Start, w.End, show(w.Close), w.First, w.Count, w.Updates, w.Waiting, show(r.close), r.first, r.count, r.update)
		}
	}
	if got.N != want.n || got.Late != want.late || got.Lost != want.lost || got.Wait != want.wait {
		return fmt.Sprintf("n=%d late=%d lost=%d wait=%v, the reference n=%d late=%d lost=%d wait=%v",
			got.N, got.Late, got.Lost, got.Wait, want.n, want.late, want.lost, want.wait)
	}
	return ""
}

// With the reference's controls (a watermark after every tap, one
// partition), the simulator shows what the reference does for every value
// its page offers (window size 10, 15 or 30 s; delay 0 to 30 s and tunnel 0
// to 40%, by 1; each policy), on the first 20 streams its "New stream"
// button gives (81 to 100) and on streams 7 and 1234: each tap and its fate,
// every window, closed or not (closing time, first and final count, late
// updates, taps waiting), the totals and the mean wait, all exactly; and
// the trade-off curve, for every stream and size.
func TestSimulatorMatchesTheReference(t *testing.T) {
	streams := []uint32{7, 1234} // and 81 to 100
	for seed := uint32(81); seed <= 100; seed++ {
		streams = append(streams, seed)
	}
	if testing.Short() {
		streams = []uint32{81, 98} // the page's first; one where Go's math.Log is not Math.log
	}
	for _, seed := range streams {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			matchReference(t, seed)
		})
	}
}

// matchReference compares every combination of the reference's controls on
// one stream. Tunnel shares that put the same taps in a tunnel give the same
// stream (the shares step by 1%, the draws are finer), so a stream equal to
// the one of the share below is not replayed again: each of its
// combinations is compared with the replay of that equal stream.
func matchReference(t *testing.T, seed uint32) {
	policies := []string{PolicyDrop, PolicySide, PolicyLateness}
	combos, bad := 0, 0
	for _, size := range []int{10, 15, 30} {
		var last []Tap
		var replays []*SimResult // of last, by policy and delay
		for tunnel := 0.0; tunnel <= 40; tunnel++ {
			ref := refStream(seed, tunnel)
			stream := makeStream(SimParams{Seed: seed, Tunnel: tunnel, Partitions: 1})
			fresh := !slices.Equal(stream, last)
			if fresh {
				last, replays = stream, make([]*SimResult, len(policies)*31)
			}
			curve := make([]CurvePoint, 31)
			for pi, policy := range policies {
				for delay := 0.0; delay <= 30; delay++ {
					combos++
					p := SimParams{Size: size, Delay: delay, Tunnel: tunnel, Policy: policy, Seed: seed, Partitions: 1}
					want := refRun(ref, size, delay, policy)
					if !want.closedEverywhere {
						t.Fatalf("%+v: the reference leaves a window open, where its mean wait means nothing; choose other streams", p)
					}
					got := replays[pi*31+int(delay)]
					if fresh {
						var err error
						if got, err = run(p, stream); err != nil {
							t.Fatal(err)
						}
						if got.Params != p {
							t.Fatalf("%+v: the replay says its controls were %+v", p, got.Params)
						}
						replays[pi*31+int(delay)] = got
					}
					if d := simDiff(got, ref, want); d != "" {
						if bad++; bad <= 5 {
							t.Errorf("seed=%d size=%d delay=%g tunnel=%g policy=%s: %s", seed, size, delay, tunnel, policy, d)
						}
					}
					if policy == PolicyDrop {
						late := 0.0
						if want.n > 0 {
							late = float64(want.late) / float64(want.n)
						}
						curve[int(delay)] = CurvePoint{Delay: delay, Late: late, Wait: want.wait}
					}
				}
			}
			// The curve is the drop policy's replays for every delay,
			// whatever the policy and delay shown.
			if tunnel == 10 {
				got, err := Simulate(SimParams{Size: size, Delay: 2, Tunnel: tunnel, Policy: PolicyLateness, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Curve, curve) {
					t.Errorf("seed=%d size=%d tunnel=%g: the curve\n%v\nthe reference's\n%v", seed, size, tunnel, got.Curve, curve)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("seed=%d: %d of %d combinations differ from the reference", seed, bad, combos)
	}
}

// jsLog gives, bit for bit, what V8's Math.log gives (the values were
// printed by Node.js): among them three arguments for which Go's math.Log
// differs in the last bit, and the edge cases of fdlibm's reduction.
func TestJSLog(t *testing.T) {
	for _, c := range []struct{ x, want uint64 }{
		{0x3fe8099ebd200000, 0xbfd24fbfe65fe513},
		{0x3fe790e64ae00000, 0xbfd3945cbd793a75},
		{0x3fe7a8a130200000, 0xbfd3540b0d04c5d4},
		{0x3feca5e22b400000, 0xbfbc53bf64cfab8d},
		{0x3feff81c32c00000, 0xbf4f9319a2c7439c},
		{0x3fd53cbb34400000, 0xbff1a668bf5f9cbe},
		{0x3ff0000000000000, 0x0000000000000000}, // 1
		{0x4000000000000000, 0x3fe62e42fefa39ef}, // 2
		{0x3fe0000000000000, 0xbfe62e42fefa39ef}, // 0.5
		{0x01a56e1fc2f8f359, 0xc085963447f87fb5}, // 1e-300
		{0x0000000000000001, 0xc0874385446d71c3}, // 5e-324, subnormal
		{0x7e37e43c8800759c, 0x4085963447f87fb5}, // 1e300
		{0x3ff000001ad7f29b, 0x3e7ad7f2847b6492}, // 1.0000001
		{0x3fefffffca501acb, 0xbe7ad7f2b1049b9f}, // 0.9999999
		{0x4005bf0a8b145769, 0x3ff0000000000000}, // e
		{0x4024000000000000, 0x40026bb1bbb55516}, // 10
		{0x3fb999999999999a, 0xc0026bb1bbb55515}, // 0.1
		{0x4008000000000000, 0x3ff193ea7aad030a}, // 3
		{0x3ff8000000000000, 0x3fd9f323ecbf984c}, // 1.5
		{0x3fe8000000000000, 0xbfd269621134db92}, // 0.75
		{0x12b10551db2ae537, 0xc07f5c6d6a110000},
		{0x4b6f69490ad3403b, 0x405fe15011f20000},
	} {
		if got := math.Float64bits(jsLog(math.Float64frombits(c.x))); got != c.want {
			t.Errorf("jsLog(%v) = %#016x, V8 %#016x", math.Float64frombits(c.x), got, c.want)
		}
	}
	for x, want := range map[float64]float64{0: math.Inf(-1), math.Inf(1): math.Inf(1)} {
		if got := jsLog(x); got != want {
			t.Errorf("jsLog(%v) = %v, want %v", x, got, want)
		}
	}
	for _, x := range []float64{-1, math.Inf(-1), math.NaN()} {
		if got := jsLog(x); !math.IsNaN(got) {
			t.Errorf("jsLog(%v) = %v, want NaN", x, got)
		}
	}
}

// The stream of seed 81, as the seed shows it by default (15 s windows,
// 2 s delay, 10% in a tunnel): the numbers the page opens with.
func TestSimulatorSeed81(t *testing.T) {
	got, err := Simulate(SimParams{Size: 15, Delay: 2, Tunnel: 10, Policy: PolicyDrop, Seed: 81})
	if err != nil {
		t.Fatal(err)
	}
	if got.N == 0 || got.Late == 0 || len(got.Curve) != 31 || got.Curve[0].Late < got.Curve[30].Late {
		t.Errorf("%d taps, %d late, curve %v", got.N, got.Late, got.Curve)
	}
	t.Logf("%s", got.Summary)
}

// The extensions: a periodic watermark waits longer; a quiet partition holds
// every window back until it is idle.
func TestSimulatorPeriodicAndIdle(t *testing.T) {
	base := SimParams{Size: 15, Delay: 2, Tunnel: 10, Policy: PolicyDrop, Seed: 81}
	per := base
	per.Interval = 5
	a, _ := Simulate(base)
	b, _ := Simulate(per)
	if b.Wait <= a.Wait {
		t.Errorf("a 5 s periodic watermark waits %.2f s, after every tap %.2f s", b.Wait, a.Wait)
	}
	quiet := base
	quiet.Partitions, quiet.IdleAfter = 2, 20
	c, _ := Simulate(quiet)
	if c.Windows[2].Close != nil {
		t.Errorf("with a quiet partition and no idleness, window 3 closed at %v", *c.Windows[2].Close)
	}
	quiet.Idle = 10
	d, _ := Simulate(quiet)
	if d.Windows[2].Close == nil {
		t.Error("with idleness, window 3 never closed")
	}
}

// Every parameter of /api/simulate outside its allowed values is a 400
// naming the parameter, never a panic: a window size that does not divide
// the toy's 90 s (7), or no window at all (100), indexed past the windows.
func TestSimulateRefusesBadParameters(t *testing.T) {
	h := SimulatorHandler()
	for query, want := range map[string]string{
		"size=7":           "size: expected 10, 15 or 30 (seconds), got 7",
		"size=100":         "size: expected 10, 15 or 30 (seconds), got 100",
		"size=-15":         "size: expected 10, 15 or 30 (seconds), got -15",
		"size=15.5":        `size: expected a whole number, got "15.5"`,
		"size=abc":         `size: expected a whole number, got "abc"`,
		"delay=31":         "delay: expected a number from 0 to 30 (seconds), got 31",
		"delay=-1":         "delay: expected a number from 0 to 30 (seconds), got -1",
		"delay=NaN":        "delay: expected a number from 0 to 30 (seconds), got NaN",
		"delay=x":          `delay: expected a number, got "x"`,
		"tunnel=41":        "tunnel: expected a number from 0 to 40 (percent), got 41",
		"policy=keep":      `policy: expected drop, side or lateness, got "keep"`,
		"seed=-1":          `seed: expected a whole number from 0 to 4294967295, got "-1"`,
		"seed=4294967296":  `seed: expected a whole number from 0 to 4294967295, got "4294967296"`,
		"interval=11":      "interval: expected a number from 0 to 10 (seconds), got 11",
		"interval=Inf":     "interval: expected a number from 0 to 10 (seconds), got +Inf",
		"partitions=0":     "partitions: expected 1, 2, 3 or 4, got 0",
		"partitions=5":     "partitions: expected 1, 2, 3 or 4, got 5",
		"idle_after=91":    "idle_after: expected a number from 0 to 90 (seconds), got 91",
		"idle=-3":          "idle: expected a number from 0 to 30 (seconds), got -3",
		"sizes=15":         `unknown parameter "sizes"; expected delay, idle, idle_after, interval, partitions, policy, seed, size, tunnel`,
		"size=15&size=30":  "size: given twice",
		"size=30&delay=31": "delay: expected a number from 0 to 30 (seconds), got 31",
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/simulate?"+query, nil))
		body := strings.TrimSpace(rec.Body.String())
		if rec.Code != http.StatusBadRequest || body != want {
			t.Errorf("?%s: %d %q, want 400 %q", query, rec.Code, body, want)
		}
	}
	// Every allowed value answers.
	for _, query := range []string{"size=10", "size=30&delay=30&tunnel=40&interval=10&partitions=4&idle_after=90&idle=30&seed=4294967295&policy=side", ""} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/simulate?"+query, nil))
		if rec.Code != http.StatusOK {
			t.Errorf("?%s: %d %s", query, rec.Code, rec.Body)
		}
	}
}
