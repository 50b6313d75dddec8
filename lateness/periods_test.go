package lateness

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// The small stream in two periods of event time: the first two minutes
// (L1, L2, L3, L4, L7 and L13: 6 events) and the ten after (L6, L10, L11
// and L14: 4). Too late with no delay and with 2 s (TestSmallStream): L4,
// L7 and L13 of the first, L11 and L14 of the second; with 5 min, L13 and
// L11 and L14. The waits, of the windows that start in each period: with
// none and 2 s, [0:00, 1:00) fires at 1:06 (6 s), [1:00, 2:00) at 2:31
// (31 s), [2:00, 3:00) at 10:00.2 (7 min 0.2 s); with 5 min all three at
// 10:00.2 (9, 8 and 7 min). Medians and 99th percentiles are the
// histogram's: the middle of the value's bucket, within its minimum and
// maximum (6,000 ms: [5,984, 6,015] -> 6,007; 540,200: [536,576, 540,671]
// clamped to 540,200 -> 538,388).
func TestPeriods(t *testing.T) {
	in := writeFile(t, "small.jsonl", smallStream())
	start := time.UnixMilli(int64(t0)).UTC()
	r, err := Analyze(in, Options{
		Delays:   []time.Duration{0, 2 * time.Second, 5 * time.Minute},
		Lateness: []time.Duration{},
		Periods:  []Period{{Start: start, Length: 2 * time.Minute}, {Start: start.Add(2 * time.Minute), Length: 10 * time.Minute}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Periods) != 2 {
		t.Fatalf("%d periods", len(r.Periods))
	}
	if l := (Period{Start: start, Length: 7 * 24 * time.Hour}).label(); l != "2026-01-01/7d" {
		t.Errorf("label %q", l)
	}
	for _, ps := range [][]Period{
		{{Start: start, Length: time.Hour}},
		{{Start: start, Length: time.Hour}, {Start: start, Length: 0}},
		{{Start: start, Length: time.Hour}, {Start: start, Length: time.Hour}},
	} {
		if _, err := Analyze(in, Options{Periods: ps}); !IsUsage(err) {
			t.Errorf("%v: %v, want a usage error", ps, err)
		}
	}
	var got []string
	for _, p := range r.Periods {
		got = append(got, fmt.Sprintf("%s %s %s %d", p.Label, p.Start, p.End, p.Events))
		for _, d := range p.Delays {
			got = append(got, fmt.Sprintf("  %s %d %.2f %d %d %d", d.Label, d.TooLate, d.TooLatePercent, d.WindowsFired, *d.WaitMedianMS, *d.WaitP99MS))
		}
	}
	want := []string{
		"2026-01-01/2m 2026-01-01T00:00:00.000Z 2026-01-01T00:02:00.000Z 6",
		"  none 3 50.00 2 6007 30988",
		"  2 s 3 50.00 2 6007 30988",
		"  5 min 1 16.67 2 480739 538388",
		"2026-01-01T00:02:00Z/10m 2026-01-01T00:02:00.000Z 2026-01-01T00:12:00.000Z 4",
		"  none 2 50.00 1 420200 420200",
		"  2 s 2 50.00 1 420200 420200",
		"  5 min 2 50.00 1 420200 420200",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("periods\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	g := r.By[len(r.By)-1]
	if g.Field != "period" || len(g.Groups) != 2 || g.Groups[0].Events != 6 || g.Groups[1].Events != 4 {
		t.Errorf("the period grouping %+v", g)
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	table := `   watermark  2026-01-01/2m                       2026-01-01T00:02:00Z/10m
   delay           too late  events  median wait                  too late  events  median wait
   none              50.00%       3        6.0 s                    50.00%       2   7 min 00 s
   2 s               50.00%       3        6.0 s                    50.00%       2   7 min 00 s
   5 min             16.67%       1   8 min 00 s                    50.00%       2   7 min 00 s
   (events)                       6                                              4
`
	if !strings.Contains(b.String(), table) {
		t.Errorf("the text lacks\n%s\n%s", table, b.String())
	}

	// The figures draw a curve per period, the same each time.
	var s1, s2 bytes.Buffer
	if err := r.WritePlot(&s1, "svg"); err != nil {
		t.Fatal(err)
	}
	r.WritePlot(&s2, "svg")
	if !bytes.Equal(s1.Bytes(), s2.Bytes()) || strings.Count(s1.String(), "2026-01-01T00:02:00Z/10m") != 2 {
		t.Errorf("the figures are not the same twice, or lack a legend per figure (%d)", strings.Count(s1.String(), "2026-01-01T00:02:00Z/10m"))
	}
	if p := os.Getenv("WEIR_PERIODS_PNG"); p != "" {
		r.WritePlotFile(p)
	}
}
