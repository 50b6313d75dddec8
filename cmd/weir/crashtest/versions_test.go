package crashtest

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/weirstream/weir/internal/clitest"
)

const versionsJob = `name: versions
source: {file: input.jsonl}
time: {field: ts, arrival_field: arrival}
key: shop
id: order_id
version_field: rev
dedup_horizon: 10m
watermark: {delay: 1s, interval: 0s}
window: {tumbling: 10s}
allowed_lateness: 30s
aggregates: {orders: count, total: sum(amount), mean: avg(amount)}
output: results.jsonl
late_output: late.jsonl
quarantine: quarantine.jsonl
summary: summary.json
`

// writeVersioned writes n orders in arrival order: revisions (a higher
// rev, another amount, shop or time), repeats of the latest or an older
// version, revisions of orders whose windows are long closed, late orders,
// and lines without a rev.
func writeVersioned(t *testing.T, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(52, 9))
	type order struct {
		id, shop   string
		rev        int
		ts, amount int64
	}
	var latest []order
	now := int64(1_780_000_000_000)
	write := func(o order) {
		fmt.Fprintf(w, `{"order_id":%q,"rev":%d,"shop":%q,"ts":%d,"arrival":%d,"amount":%d}`+"\n", o.id, o.rev, o.shop, o.ts, now, o.amount)
	}
	for i := range n {
		now += int64(r.IntN(100))
		switch k := r.IntN(20); {
		case k < 3 && len(latest) > 0:
			j := len(latest) - 1 - r.IntN(min(len(latest), 600))
			o := &latest[j]
			o.rev += 1 + r.IntN(2)
			o.amount = int64(r.IntN(100))
			if r.IntN(3) == 0 {
				o.shop = fmt.Sprintf("s%d", r.IntN(50))
			}
			if r.IntN(4) == 0 {
				o.ts += int64(r.IntN(20_000)) - 10_000
			}
			write(*o)
		case k == 3 && len(latest) > 0:
			o := latest[len(latest)-1-r.IntN(min(len(latest), 600))]
			if o.rev > 1 && r.IntN(2) == 0 {
				o.rev--
			}
			write(o)
		case k == 4 && i%40 == 0:
			fmt.Fprintf(w, `{"order_id":"x%d","shop":"s1","ts":%d,"arrival":%d,"amount":1}`+"\n", i, now, now)
		default:
			o := order{id: fmt.Sprintf("o%d", i), shop: fmt.Sprintf("s%d", r.IntN(50)), rev: 1, ts: now - int64(r.IntN(3000)), amount: int64(r.IntN(100))}
			if r.IntN(40) == 0 {
				o.ts -= int64(r.IntN(60_000))
			}
			latest = append(latest, o)
			write(o)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// A versioned job killed with SIGKILL four or six times and restarted, on either
// backend, writes what an uninterrupted run writes, and counts the same
// revisions, superseded versions and revisions too late: the versions its
// de-duplication state applied are in its checkpoints.
func TestKillNineVersioned(t *testing.T) {
	if testing.Short() {
		t.Skip("a 600k-event replay killed ten times: not in -short")
	}
	ref := t.TempDir()
	// Long enough that the killed runs, each resuming where the last
	// checkpoint left it, get through half of it at most here, so that the
	// final run resumes on a machine twice as fast too.
	writeVersioned(t, filepath.Join(ref, "input.jsonl"), 600_000)
	os.WriteFile(filepath.Join(ref, "job.yaml"), []byte(versionsJob), 0o644)
	if code, _, stderr := clitest.Run(t, ref, "run", "job.yaml"); code != 0 {
		t.Fatalf("reference run: exit %d\n%s", code, stderr)
	}
	sumRef, _ := os.ReadFile(filepath.Join(ref, "summary.json"))
	for _, k := range []string{`"revisions": `, `"superseded": `, `"revisions_too_late": `} {
		if !bytes.Contains(sumRef, []byte(k)) {
			t.Fatalf("the reference does not test versions: its summary lacks %s:\n%s", k, sumRef)
		}
	}
	for _, c := range []struct {
		name, extra             string
		kills, killMin, killMax int // ms: the memory backend is faster
	}{
		{"memory", "", 4, 200, 800},
		{"pebble", "state: {backend: pebble, memory_budget: 1MiB}\n", 6, 500, 2500},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			in, _ := os.ReadFile(filepath.Join(ref, "input.jsonl"))
			os.WriteFile(filepath.Join(dir, "input.jsonl"), in, 0o644)
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(versionsJob+c.extra+"checkpoint: {dir: ckpt, interval: 150ms}\n"), 0o644)
			out := clitest.KillRuns(t, dir, rand.New(rand.NewPCG(3, 4)), c.kills, c.killMin, c.killMax)
			if !bytes.Contains(out, []byte("resuming from")) {
				t.Fatalf("the final run did not resume from a checkpoint (a killed run finished?):\n%s", out)
			}
			t.Logf("the final run said:\n%s", out)
			clitest.SameAsReference(t, dir, ref)
			if got, _ := os.ReadFile(filepath.Join(dir, "summary.json")); !bytes.Equal(got, sumRef) {
				t.Errorf("summary differs:\n%s\nwant:\n%s", got, sumRef)
			}
		})
	}
}
