package lateness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// idleStream has two partitions: a, an event every 20 s from 0:00 to 2:40,
// and b, quiet for 2 min: an event at 0:01, one that happened at 0:02 but
// arrives at 2:01, and one at 2:31. Every event arrives when it happens
// but b's second.
func idleStream() string {
	var lines []string
	add := func(p string, ts, arr int64) {
		lines = append(lines, jsonLine(at(0, ts, 0), at(0, arr, 0), `,"p":"`+p+`"`))
	}
	for s := int64(0); s <= 160; s += 20 {
		add("a", s, s)
		switch s {
		case 0:
			add("b", 1, 1)
		case 120:
			add("b", 2, 121)
		case 140:
			add("b", 151, 151)
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

// The answers, by hand. Gaps: a's eight of 20 s; b's 2 min (0:01 to
// 2:01) and 30 s. Of the ten, the 90th percentile is the ninth, 30 s; the
// 99th, 99.9th and the longest are 2 min: the candidates are 30 s and
// 2 min. With no idleness, b holds the watermark at 0:01.999 until its
// event at 2:31 (W = min(a's 2:19.999, b's 2:30.999)) fires [0:00, 1:00)
// and [1:00, 2:00) at 2:31: waits 91 s and 31 s, nothing too late. With
// 30 s, b is idle from a's event at 0:40 (39 s quiet): a's events at 1:00
// and 2:00 fire the windows at once (waits 0), and b's event of 0:02 at
// 2:01 is too late. With 2 min, b turns idle at 2:01, 120 s after 0:01,
// just before its own event: the windows fire at 2:01 (waits 61 s and 1
// s) and that event is too late. State: 2 keys (the key is p) x 3 windows
// open at most (all three before 2:31) x 290 bytes = 1,740 bytes.
func TestIdleTimeouts(t *testing.T) {
	in := writeFile(t, "idle.jsonl", idleStream())
	r, err := Analyze(in, Options{PartitionField: "p", Delays: []time.Duration{0}, Lateness: []time.Duration{},
		EstimateState: true, Key: []string{"p"}})
	if err != nil {
		t.Fatal(err)
	}
	id := r.Idle
	if id == nil {
		t.Fatal("no idle report")
	}
	if fmt.Sprint(id.CandidatesMS) != "[30000 120000]" || id.DelayMS != 0 {
		t.Errorf("candidates %v, delay %d; want [30000 120000], 0", id.CandidatesMS, id.DelayMS)
	}
	parts := fmt.Sprintf("%+v", id.Partitions)
	want := "[{Partition:a Events:9 Gaps:8 P50MS:20000 P99MS:20000 MaxMS:20000 AtLeast:[0 0]} " +
		"{Partition:b Events:3 Gaps:2 P50MS:30039 P99MS:119904 MaxMS:120000 AtLeast:[2 1]}]"
	if parts != want {
		t.Errorf("partitions\n %s\nwant\n %s", parts, want)
	}
	var got []string
	for _, x := range id.Timeouts {
		got = append(got, fmt.Sprintf("%s %d %d %.2f %.2f %d %d %d", x.Label, x.IdleMS, x.TooLate, x.TooLatePercent, x.AddedPercent,
			x.WindowsFired, *x.WaitMeanMS, *x.WaitMaxMS))
	}
	wantT := []string{
		"never 0 0 0.00 0.00 2 61000 91000",
		"30 s 30000 1 8.33 8.33 2 0 0",
		"2 min 120000 1 8.33 8.33 2 31000 61000",
	}
	if strings.Join(got, "\n") != strings.Join(wantT, "\n") {
		t.Errorf("timeouts\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(wantT, "\n "))
	}
	if id.RecommendedMS != nil {
		t.Errorf("recommended %d ms; want none (each adds 8.33%%)", *id.RecommendedMS)
	}
	st := r.State
	if st == nil || st.Keys != 2 || st.OpenWindowsPeak != 3 || st.Bytes != 1740 || st.MemoryBudget != 64<<20 || st.Backend != "memory" {
		t.Errorf("state %+v; want 2 keys x 3 windows x 290 bytes = 1740, a budget of 64 MiB, memory", st)
	}
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"   b               3      30.0 s  1 min 59 s  2 min 00 s        2         1\n",
		"   30 s        8.33%       1  8.33%               0 ms        0 ms\n",
		"state: {memory_budget: 64MiB}",
	} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("the text lacks %q:\n%s", s, b.String())
		}
	}

	// The same stream as CSV, whose key is read as a column: the same
	// answers.
	var csvText strings.Builder
	csvText.WriteString("ts,arrival,p\n")
	for _, l := range strings.Split(strings.TrimSpace(idleStream()), "\n") {
		var v struct{ Ts, Arrival, P string }
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&csvText, "%s,%s,%s\n", v.Ts, v.Arrival, v.P)
	}
	rc, err := Analyze(writeFile(t, "idle.csv", csvText.String()), Options{PartitionField: "p", Delays: []time.Duration{0}, Lateness: []time.Duration{},
		EstimateState: true, Key: []string{"p"}})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := fmt.Sprintf("%+v %+v", *rc.State, rc.Idle.Partitions), fmt.Sprintf("%+v %+v", *r.State, r.Idle.Partitions); a != b {
		t.Errorf("CSV:\n%s\nJSON lines:\n%s", a, b)
	}
	if _, err := Analyze(writeFile(t, "idle2.csv", csvText.String()), Options{PartitionField: "p", EstimateState: true, Key: []string{"user"}}); err == nil ||
		!strings.Contains(err.Error(), `has no column "user" for the key`) {
		t.Errorf("a missing key column: %v", err)
	}

	// With a timeout that adds nothing, it is recommended: 3 min is longer
	// than every gap, so it replays as no idleness at all.
	r, err = Analyze(in, Options{PartitionField: "p", Delays: []time.Duration{0}, Lateness: []time.Duration{},
		Idles: []time.Duration{30 * time.Second, 3 * time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	if p := r.Idle.RecommendedMS; p == nil || *p != 180000 || r.State != nil {
		t.Errorf("recommended %v, state %v; want 180000, none", p, r.State)
	}
	if !strings.Contains(r.Idle.Text, "Use an idle timeout of 3 min (watermark: {idle: 3m})") {
		t.Errorf("text %q", r.Idle.Text)
	}
}

func TestBudgetFor(t *testing.T) {
	for _, c := range []struct{ n, want int64 }{
		{0, 64 << 20}, {32 << 20, 64 << 20}, {33 << 20, 128 << 20}, {100 << 20, 256 << 20}, {3 << 30, 8 << 30},
	} {
		if got := budgetFor(c.n); got != c.want {
			t.Errorf("budgetFor(%d) = %d, want %d", c.n, got, c.want)
		}
	}
	if mib(8<<30) != "8GiB" || mib(256<<20) != "256MiB" {
		t.Errorf("mib: %s %s", mib(8<<30), mib(256<<20))
	}
}
