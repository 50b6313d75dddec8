package job

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/mtime"
)

// forkInput is a fraud job's input of n lines, seeded: on-time, late and
// too-late events, duplicates, numeric and string keys, and bad lines of
// every kind.
func forkInput(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 7))
	base := mtime.Time(1788782400000) // 2026-09-07T12:00:00Z
	var b strings.Builder
	var last string
	for i := range n {
		arr := base + mtime.Time(i*40)
		ts := arr - mtime.Time(r.IntN(3000))
		if r.IntN(50) == 0 {
			ts -= 120_000 // too late
		}
		card := fmt.Sprintf(`"c%d"`, r.IntN(40))
		if r.IntN(10) == 0 {
			card = fmt.Sprint(r.IntN(5)) // a numeric key
		}
		line := fmt.Sprintf(`{"event_id": "e%d", "card": %s, "ts": "%s", "arrival": "%s", "amount": %d.%02d, "user": "u%d"}`,
			i, card, ts, arr, r.IntN(300), r.IntN(100), r.IntN(9))
		switch r.IntN(40) {
		case 0:
			line = "not json at all"
		case 1:
			line = strings.Replace(line, `"card"`, `"crad"`, 1)
		case 2:
			line = strings.Replace(line, `"amount": `, `"amount": "x`, 1)
		case 3:
			line = ""
		case 4:
			line = last // a duplicate
		case 5:
			line = strings.Replace(line, `"ts": "`, `"ts": "y`, 1)
		}
		last = line
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// The lines decoded by several goroutines make the same outputs, byte for
// byte, and the same accounting as decoded by the source loop alone.
func TestDecodersDoNotChangeTheOutput(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	in := forkInput(seed, 6000)
	run := func(decoders int) (string, *Summary) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "input.jsonl"), []byte(in), 0o644); err != nil {
			t.Fatal(err)
		}
		sum, err := Run(context.Background(), loadJob(t, dir, fraudJob), Options{Decoders: decoders})
		if err != nil {
			t.Fatal(err)
		}
		return dir, sum
	}
	one, sum1 := run(1)
	if sum1.Quarantined == 0 || sum1.Duplicates == 0 || sum1.TooLate == 0 || sum1.Accepted < 4000 {
		t.Fatalf("the input lacks a kind of line: %+v", sum1.Accounting)
	}
	for _, n := range []int{2, 5} {
		dir, sum := run(n)
		if sum.Accounting != sum1.Accounting || fmt.Sprint(sum.QuarantineReasons) != fmt.Sprint(sum1.QuarantineReasons) {
			t.Errorf("%d decoders: %+v %v, want %+v %v", n, sum.Accounting, sum.QuarantineReasons, sum1.Accounting, sum1.QuarantineReasons)
		}
		for _, f := range []string{"results.jsonl", "late.jsonl", "quarantine.jsonl"} {
			if got, want := read(t, dir, f), read(t, one, f); got != want {
				t.Errorf("%d decoders: %s differs (%d bytes, want %d)", n, f, len(got), len(want))
			}
		}
	}
}
