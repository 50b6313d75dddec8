package kafka

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/connector"
)

// A task's checkpoints in its changelog: each one reads back whole; a
// checkpoint whose file changed in one place writes only the chunks around
// it; chunks no longer referred to get tombstones; a checkpoint whose
// transaction aborted is not read back, and the next one does not count on
// its chunks.
func TestChangelogChunks(t *testing.T) {
	c := cluster(t, kfake.SeedTopics(2, "log"))
	ctx := context.Background()
	th := startThread(t, c, "weir-test-t0")
	txn := th.Txn("orders", 1)
	m := txn.join()
	l := &Changelog{Topic: "log", Partition: 1}
	r := rand.New(rand.NewPCG(1, 2))
	state := make([]byte, 4<<20)
	for i := range state {
		state[i] = byte(r.IntN(256))
	}
	// write publishes a checkpoint of state and commits it.
	write := func(id uint64) {
		t.Helper()
		writeCheckpoint(t, txn, m, l, id, checkpoint.Input{Name: "window.0", Data: bytes.Clone(state)}, checkpoint.Input{Name: "clock", Data: []byte{byte(id)}})
	}
	read := func(wantID uint64) *Restored {
		t.Helper()
		if err := th.WaitStable(ctx, "log", 1, func(string) bool { return false }); err != nil {
			t.Fatal(err)
		}
		got, err := th.ReadChangelog(ctx, "log", NewChangelogReader(1))
		if err != nil {
			t.Fatal(err)
		}
		if got == nil || got.Manifest.ID != wantID || len(got.Files) != 2 || !bytes.Equal(got.Files[0].Data, state) || got.Files[1].Data[0] != byte(wantID) {
			t.Fatalf("read back %+v, want checkpoint %d with the state", got, wantID)
		}
		return got
	}
	write(1)
	read(1)
	if l.Written.Load() != int64(len(state))+1 || l.Reused.Load() != 0 {
		t.Fatalf("the first checkpoint wrote %d bytes and reused %d; want all %d", l.Written.Load(), l.Reused.Load(), len(state)+1)
	}
	// One byte in the middle changes: the chunks around it are written.
	state[len(state)/2] ^= 0xff
	written := l.Written.Load()
	write(2)
	read(2)
	if w := l.Written.Load() - written; w > 2*MaxChunk || w == 0 {
		t.Fatalf("a one-byte change wrote %d bytes", w)
	}
	// A checkpoint left open by an owner that died: the next owner fences
	// it (WaitStable) and reads the one before; it writes again what it
	// needs of the aborted one's chunks.
	at2 := bytes.Clone(state)
	copy(state[1000:], bytes.Repeat([]byte{7}, 100_000))
	recs, err := l.Records(checkpoint.Manifest{ID: 3, Kind: checkpoint.Periodic, Job: "t"}, []checkpoint.Input{{Name: "window.0", Data: bytes.Clone(state)}, {Name: "clock", Data: []byte{3}}}, txn.Committed())
	if err != nil {
		t.Fatal(err)
	}
	leaveOpen(t, c, "weir-test-dead", recs)
	at3 := state
	state = at2
	got := read(2)
	// The next owner goes on from what it read.
	txn.Close()
	txn = th.Txn("orders", 1)
	m, l = txn.join(), &Changelog{Topic: "log", Partition: 1}
	l.Restored(got)
	state = at3
	write(4)
	read(4)
	if l.Reused.Load() == 0 || l.Written.Load() > 300_000 {
		t.Fatalf("the next owner wrote %d bytes and reused %d; want only the chunks around the change", l.Written.Load(), l.Reused.Load())
	}
	// A checkpoint whose commit failed: the next one does not count on
	// its chunks.
	copy(state[3<<20:], bytes.Repeat([]byte{9}, 50_000))
	ck := func(id uint64) (checkpoint.Manifest, []checkpoint.Input, uint64) {
		return checkpoint.Manifest{ID: id}, []checkpoint.Input{{Name: "window.0", Data: state}}, 4
	}
	chunkKeys := func(recs []*kgo.Record) map[string]bool {
		out := map[string]bool{}
		for _, rec := range recs {
			if rec.Value != nil && string(rec.Key) != "m" {
				out[string(rec.Key)] = true
			}
		}
		return out
	}
	recs5, _ := l.Records(ck(5))
	recs6, _ := l.Records(ck(6))
	if k5, k6 := chunkKeys(recs5), chunkKeys(recs6); len(k5) == 0 || !maps.Equal(k5, k6) {
		t.Fatalf("checkpoint 6 writes %d chunks; checkpoint 5, not committed, wrote %d: want the same", len(k6), len(k5))
	}
	// Tombstones: the chunks of checkpoint 2 that 4 does not have.
	recs, _ = l.Records(checkpoint.Manifest{ID: 7}, []checkpoint.Input{{Name: "clock", Data: []byte{5}}}, 4)
	tombs := 0
	for _, rec := range recs {
		if rec.Value == nil {
			tombs++
		}
	}
	if tombs < len(state)/MaxChunk {
		t.Fatalf("%d tombstones for a checkpoint that dropped a %d-byte file", tombs, len(state))
	}
}

// A task's transaction whose checkpoint was not published (it failed before
// its changelog joined the output) is refused at commit, its output never
// visible, and the task's writes fail from then on.
func TestTxnRefusesUnpublished(t *testing.T) {
	c := cluster(t, kfake.SeedTopics(1, "log"), kfake.SeedTopics(1, "alerts"))
	ctx := context.Background()
	txn := startThread(t, c, "weir-test-unpublished").Txn("orders", 0)
	s := &Sink[string]{Config: Config{Brokers: c.ListenAddrs(), Topic: "alerts"}, Txn: txn,
		Encode: func(v string) ([]byte, []byte) { return nil, []byte(v) }}
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, []string{"p1"}); err != nil {
		t.Fatal(err)
	}
	pre, err := s.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(ctx, 1, pre); err == nil || !strings.Contains(err.Error(), "holds no changelog") {
		t.Fatalf("commit without the changelog: %v", err)
	}
	if err := s.Write(ctx, []string{"p2"}); err == nil {
		t.Fatal("a write after a refused commit")
	}
	s.Close()
	if got := committed(t, c, "alerts"); len(got) != 0 {
		t.Fatalf("visible: %v", got)
	}
}

// The cost of a task's checkpoint in its changelog: cutting and hashing 64
// MiB of state of which one 256 KiB region changed since the committed
// checkpoint (bytes/s are of the whole state).
func BenchmarkChangelogRecords(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	state := make([]byte, 64<<20)
	for i := range state {
		state[i] = byte(r.IntN(256))
	}
	l := &Changelog{Topic: "log"}
	files := []checkpoint.Input{{Name: "window.0", Data: state}}
	if _, err := l.Records(checkpoint.Manifest{ID: 1}, files, 0); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(state)))
	b.ResetTimer()
	written := int64(0)
	for i := range b.N {
		at := r.IntN(len(state) - 256<<10)
		copy(state[at:], bytes.Repeat([]byte{byte(i)}, 256<<10))
		w := l.Written.Load()
		recs, err := l.Records(checkpoint.Manifest{ID: uint64(i + 2)}, files, uint64(i+1))
		if err != nil || len(recs) == 0 {
			b.Fatal(err)
		}
		written += l.Written.Load() - w
	}
	b.ReportMetric(float64(written)/float64(b.N)/(1<<10), "KiB-written/op")
}

// startThread starts a thread with the transactional id id, in a group
// it has not joined: its transactions commit no offsets (a checkpoint with
// none), or have them refused.
func startThread(t *testing.T, c *kfake.Cluster, id string) *Thread {
	t.Helper()
	th := &Thread{Config: Config{Brokers: c.ListenAddrs()}, TransactionalID: id, Group: &Group{Group: "g", SessionTimeout: time.Second},
		Manual: []string{"log"}}
	if err := th.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(th.Close)
	return th
}

// leaveOpen writes recs in a transaction of the transactional id id and
// leaves it open, as an owner that died would.
func leaveOpen(t *testing.T, c *kfake.Cluster, id string, recs []*kgo.Record) {
	t.Helper()
	ctx := context.Background()
	cl := client(t, c, kgo.TransactionalID(id), kgo.RecordPartitioner(manualPartitioner{"log"}))
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r.Partition = 1
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// writeCheckpoint publishes checkpoint id of files through the task's
// transactions and its changelog l, with no input offset, and commits it.
func writeCheckpoint(t *testing.T, txn *Txn, m *member, l *Changelog, id uint64, files ...checkpoint.Input) {
	t.Helper()
	ctx := context.Background()
	if _, err := txn.preCommit(m, id); err != nil {
		t.Fatal(err)
	}
	recs, err := l.Records(checkpoint.Manifest{ID: id, Kind: checkpoint.Periodic, Job: "t"}, files, txn.Committed())
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Publish(ctx, id, recs, -1); err != nil {
		t.Fatal(err)
	}
	if err := txn.commit(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// A standby keeps a task's changelog partition read; the instance that
// takes the task over reads only what came since, and gets what reading
// the whole partition gets: the same checkpoint, whatever was committed,
// aborted or deleted before and after the standby read.
func TestStandbyReadsOn(t *testing.T) {
	c := cluster(t, kfake.SeedTopics(2, "log"))
	ctx := context.Background()
	th := startThread(t, c, "weir-test-t0")
	txn := th.Txn("orders", 1)
	m := txn.join()
	l := &Changelog{Topic: "log", Partition: 1}
	r := rand.New(rand.NewPCG(3, 4))
	state := make([]byte, 2<<20)
	for i := range state {
		state[i] = byte(r.IntN(256))
	}
	change := func(id uint64) {
		copy(state[r.IntN(len(state)-100_000):], bytes.Repeat([]byte{byte(id)}, 100_000))
	}
	write := func(id uint64) {
		t.Helper()
		change(id)
		writeCheckpoint(t, txn, m, l, id, checkpoint.Input{Name: "window.0", Data: bytes.Clone(state)})
	}
	write(1)
	write(2)
	// Checkpoint 3 is left open by an owner that died, and fenced.
	change(3)
	recs, err := l.Records(checkpoint.Manifest{ID: 3, Kind: checkpoint.Periodic, Job: "t"}, []checkpoint.Input{{Name: "window.0", Data: bytes.Clone(state)}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	leaveOpen(t, c, "weir-test-dead", recs)
	if err := th.WaitStable(ctx, "log", 1, func(string) bool { return false }); err != nil {
		t.Fatal(err)
	}
	got, err := th.ReadChangelog(ctx, "log", NewChangelogReader(1))
	if err != nil || got == nil || got.Manifest.ID != 2 {
		t.Fatalf("read back %+v, %v; want checkpoint 2", got, err)
	}
	txn.Close()
	txn = th.Txn("orders", 1)
	m, l = txn.join(), &Changelog{Topic: "log", Partition: 1}
	l.Restored(got)

	// The standby reads through a thread of another instance.
	other := startThread(t, c, "weir-test-other")
	sb := &Standby{Thread: other, Topic: "log"}
	defer sb.Close()
	sb.Keep([]int32{1})
	// What the standby must read: up to the partition's last stable offset.
	adm := kadm.NewClient(client(t, c))
	ends, err := adm.ListCommittedOffsets(ctx, "log")
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup("log", 1)
	next := func() int64 {
		other.mu.Lock()
		defer other.mu.Unlock()
		return sb.readers[1].r.Next()
	}
	for deadline := time.Now().Add(time.Minute); next() < end.Offset; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the standby read to %d; the partition ends at %d", next(), end.Offset)
		}
	}
	// The standby's reading pauses (its instance is slow, say); two more
	// checkpoints come.
	other.pause(sb.readers[1].rd, true)
	write(4)
	write(5)
	warm := sb.Take(1)
	if warm == nil || len(sb.Kept()) != 0 {
		t.Fatalf("took %v; kept %v", warm, sb.Kept())
	}
	on, err := other.ReadChangelog(ctx, "log", warm)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := other.ReadChangelog(ctx, "log", NewChangelogReader(1))
	if err != nil {
		t.Fatal(err)
	}
	if on == nil || whole == nil || on.Manifest.ID != 5 || whole.Manifest.ID != 5 || len(on.Files) != 1 ||
		!bytes.Equal(on.Files[0].Data, state) || !bytes.Equal(whole.Files[0].Data, state) {
		t.Fatalf("read on: %+v; read whole: %+v; want checkpoint 5 with the state", on, whole)
	}
	if on.Warm == 0 || on.Records == 0 || on.Records+on.Warm != whole.Records || on.Records >= whole.Records/2 {
		t.Errorf("read on %d records after %d warm; read whole %d: want the whole's in two parts, most of them warm", on.Records, on.Warm, whole.Records)
	}
}

// A thread's transaction commits its tasks' input offsets as the group's,
// with the member's generation (KIP-447): once the member is no longer in
// the group, the coordinator refuses them, the transaction aborts, and
// nothing of it is visible: the output, the changelog and the offsets stay
// those of the last checkpoint committed.
func TestThreadFencedByTheGroup(t *testing.T) {
	c := cluster(t, kfake.SeedTopics(2, "orders"), kfake.SeedTopics(2, "log"), kfake.SeedTopics(1, "alerts"))
	ctx := context.Background()
	assigned := make(chan []int32, 4)
	g := &Group{Config: Config{Brokers: c.ListenAddrs(), Topic: "orders"}, Group: "g", SessionTimeout: 6 * time.Second,
		Assigned: func(_ context.Context, ps []int32) { assigned <- ps }}
	if err := g.Join(); err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	select {
	case ps := <-assigned:
		if len(ps) != 2 {
			t.Fatalf("assigned %v", ps)
		}
	case <-time.After(time.Minute):
		t.Fatal("no assignment")
	}
	th := &Thread{Config: Config{Brokers: c.ListenAddrs()}, TransactionalID: "weir-test-t0", Group: g, Manual: []string{"log"}}
	if err := th.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer th.Close()
	txn := th.Txn("orders", 0)
	s := &Sink[string]{Config: Config{Brokers: c.ListenAddrs(), Topic: "alerts"}, Txn: txn,
		Encode: func(v string) ([]byte, []byte) { return nil, []byte(v) }}
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := &Changelog{Topic: "log", Partition: 0}
	checkpointed := func(id uint64, value string, offset int64) error {
		t.Helper()
		if err := s.Write(ctx, []string{value}); err != nil {
			t.Fatal(err)
		}
		if s.HeldBytes() == 0 {
			t.Fatal("the sink holds nothing of what it wrote")
		}
		pre, err := s.PreCommit(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := l.Records(checkpoint.Manifest{ID: id, Kind: checkpoint.Periodic, Job: "t"}, []checkpoint.Input{{Name: "clock", Data: []byte{byte(id)}}}, txn.Committed())
		if err != nil {
			t.Fatal(err)
		}
		if err := txn.Publish(ctx, id, recs, offset); err != nil {
			t.Fatal(err)
		}
		return s.Commit(ctx, id, pre)
	}
	offsets := func() string {
		t.Helper()
		os, err := kadm.NewClient(client(t, c)).FetchOffsets(ctx, "g")
		if err != nil {
			t.Fatal(err)
		}
		o, _ := os.Lookup("orders", 0)
		return fmt.Sprint(o.At)
	}
	if err := checkpointed(1, "a", 7); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, c, "alerts"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("alerts %q; want a", got)
	}
	if got := offsets(); got != "7" {
		t.Fatalf("the group's offset of orders/0 is %s; want 7", got)
	}
	// The member leaves (a zombie would have been removed): the thread's
	// next transaction is refused.
	g.Close()
	err := checkpointed(2, "b", 9)
	if err == nil || !strings.Contains(err.Error(), "committing the group's offsets in the transaction") {
		t.Fatalf("a checkpoint of a member no longer in the group: %v", err)
	}
	if got := committed(t, c, "alerts"); !slices.Equal(got, []string{"a"}) {
		t.Errorf("alerts %q; want a alone", got)
	}
	if got := offsets(); got != "7" {
		t.Errorf("the group's offset of orders/0 is %s; want 7", got)
	}
	got, err := th.ReadChangelog(ctx, "log", NewChangelogReader(0))
	if err != nil || got == nil || got.Manifest.ID != 1 {
		t.Errorf("the changelog holds %+v, %v; want checkpoint 1", got, err)
	}
	if _, aborted, why := th.Stats(); aborted != 1 || why == "" {
		t.Errorf("the thread counts %d aborted transactions (%q); want 1", aborted, why)
	}
}
