package console

import (
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// toyRun is the seed's toy simulator (its run function), as it is written
// there: the watermark moves after every tap, one partition.
func toyRun(taps []Tap, size int, delay float64, policy string) (n, late, lost int, first, count []int) {
	allowed := 0.0
	if policy == PolicyLateness {
		allowed = simLateness
	}
	nw := int(simSpan) / size
	closed := make([]bool, nw)
	first, count = make([]int, nw), make([]int, nw)
	maxTS := math.Inf(-1)
	order := make([]int, len(taps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case taps[a].Arr < taps[b].Arr:
			return -1
		case taps[a].Arr > taps[b].Arr:
			return 1
		}
		return 0
	})
	for _, i := range order {
		tap := taps[i]
		wm := maxTS - delay
		if tap.TS < simSpan {
			n++
			k := int(math.Floor(tap.TS / float64(size)))
			end := float64((k + 1) * size)
			switch {
			case !closed[k]:
				count[k]++
			case end+allowed > wm:
				count[k]++
				late++
			default:
				late++
				if policy != PolicySide {
					lost++
				}
			}
		}
		maxTS = max(maxTS, tap.TS)
		for k := range closed {
			if !closed[k] && maxTS-delay >= float64((k+1)*size) {
				closed[k], first[k] = true, count[k]
			}
		}
	}
	return
}

// With the toy's own rules (a watermark after every tap, one partition),
// weir's engine gives the toy's counts, for every control.
func TestSimulatorAgreesWithTheSeedsToy(t *testing.T) {
	for _, seed := range []uint32{81, 82, 7, 1234} {
		for _, size := range []int{10, 15, 30} {
			for _, delay := range []float64{0, 2, 5, 13, 30} {
				for _, tunnel := range []float64{0, 10, 30} {
					for _, policy := range []string{PolicyDrop, PolicySide, PolicyLateness} {
						p := SimParams{Size: size, Delay: delay, Tunnel: tunnel, Policy: policy, Seed: seed}
						got, err := Simulate(p)
						if err != nil {
							t.Fatal(err)
						}
						n, late, lost, first, count := toyRun(makeStream(p), size, delay, policy)
						if got.N != n || got.Late != late || got.Lost != lost {
							t.Fatalf("%+v: weir n=%d late=%d lost=%d, the toy n=%d late=%d lost=%d", p, got.N, got.Late, got.Lost, n, late, lost)
						}
						for k, w := range got.Windows {
							if w.Close != nil && (w.First != first[k] || w.Count != count[k]) {
								t.Fatalf("%+v: window %d: weir %d -> %d, the toy %d -> %d", p, k, w.First, w.Count, first[k], count[k])
							}
						}
					}
				}
			}
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
