package kafka

import (
	"bytes"
	"context"
	"maps"
	"math/rand/v2"
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
	conf := Config{Brokers: c.ListenAddrs(), Topic: "log"}
	txn := &Txn{Config: conf, TransactionalID: "weir-test-task", Changelog: "log", Partition: 1}
	if err := txn.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	m := txn.join()
	l := &Changelog{Topic: "log", Partition: 1}
	r := rand.New(rand.NewPCG(1, 2))
	state := make([]byte, 4<<20)
	for i := range state {
		state[i] = byte(r.IntN(256))
	}
	// write publishes a checkpoint of state and commits it (or aborts).
	write := func(id uint64, commit bool) {
		t.Helper()
		writeCheckpoint(t, txn, m, l, id, commit, checkpoint.Input{Name: "window.0", Data: bytes.Clone(state)}, checkpoint.Input{Name: "clock", Data: []byte{byte(id)}})
	}
	read := func(wantID uint64) *Restored {
		t.Helper()
		got, err := ReadChangelog(ctx, conf, "log", 1)
		if err != nil {
			t.Fatal(err)
		}
		if got == nil || got.Manifest.ID != wantID || len(got.Files) != 2 || !bytes.Equal(got.Files[0].Data, state) || got.Files[1].Data[0] != byte(wantID) {
			t.Fatalf("read back %+v, want checkpoint %d with the state", got, wantID)
		}
		return got
	}
	write(1, true)
	read(1)
	if l.Written.Load() != int64(len(state))+1 || l.Reused.Load() != 0 {
		t.Fatalf("the first checkpoint wrote %d bytes and reused %d; want all %d", l.Written.Load(), l.Reused.Load(), len(state)+1)
	}
	// One byte in the middle changes: the chunks around it are written.
	state[len(state)/2] ^= 0xff
	written := l.Written.Load()
	write(2, true)
	read(2)
	if w := l.Written.Load() - written; w > 2*MaxChunk || w == 0 {
		t.Fatalf("a one-byte change wrote %d bytes", w)
	}
	// A checkpoint that aborts: it is not read back, and the next one
	// writes again what it needs of the aborted one's chunks.
	at2 := bytes.Clone(state)
	copy(state[1000:], bytes.Repeat([]byte{7}, 100_000))
	write(3, false)
	txn2 := &Txn{Config: conf, TransactionalID: "weir-test-task", Changelog: "log", Partition: 1}
	if err := txn2.Start(ctx); err != nil { // fences txn, aborting checkpoint 3
		t.Fatal(err)
	}
	defer txn2.Close()
	at3 := state
	state = at2
	got := read(2)
	// The next owner goes on from what it read.
	txn, m, l = txn2, txn2.join(), &Changelog{Topic: "log", Partition: 1}
	l.Restored(got)
	state = at3
	write(4, true)
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
	recs, _ := l.Records(checkpoint.Manifest{ID: 7}, []checkpoint.Input{{Name: "clock", Data: []byte{5}}}, 4)
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
	txn := &Txn{Config: Config{Brokers: c.ListenAddrs(), Topic: "alerts"}, TransactionalID: "weir-test-unpublished", Changelog: "log"}
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

// writeCheckpoint publishes checkpoint id of files through the task's
// transactions and its changelog l, and commits it, or leaves it open
// (commit false: the task dies, and the next owner's Start aborts it).
func writeCheckpoint(t *testing.T, txn *Txn, m *member, l *Changelog, id uint64, commit bool, files ...checkpoint.Input) {
	t.Helper()
	ctx := context.Background()
	pre, err := txn.preCommit(ctx, m, id)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := l.Records(checkpoint.Manifest{ID: id, Kind: checkpoint.Periodic, Job: "t"}, files, txn.Committed())
	if err != nil {
		t.Fatal(err)
	}
	if err := txn.Publish(ctx, id, recs); err != nil {
		t.Fatal(err)
	}
	if commit {
		if err := txn.commit(ctx, id, pre); err != nil {
			t.Fatal(err)
		}
	}
}

// A standby keeps a task's changelog partition read; the instance that
// takes the task over reads only what came since, and gets what reading
// the whole partition gets: the same checkpoint, whatever was committed,
// aborted or deleted before and after the standby read.
func TestStandbyReadsOn(t *testing.T) {
	c := cluster(t, kfake.SeedTopics(2, "log"))
	ctx := context.Background()
	conf := Config{Brokers: c.ListenAddrs(), Topic: "log"}
	start := func() (*Txn, *member) {
		txn := &Txn{Config: conf, TransactionalID: "weir-test-task", Changelog: "log", Partition: 1}
		if err := txn.Start(ctx); err != nil { // aborts what the one before left open
			t.Fatal(err)
		}
		t.Cleanup(txn.Close)
		return txn, txn.join()
	}
	txn, m := start()
	l := &Changelog{Topic: "log", Partition: 1}
	r := rand.New(rand.NewPCG(3, 4))
	state := make([]byte, 2<<20)
	for i := range state {
		state[i] = byte(r.IntN(256))
	}
	write := func(id uint64, commit bool) {
		t.Helper()
		copy(state[r.IntN(len(state)-100_000):], bytes.Repeat([]byte{byte(id)}, 100_000))
		writeCheckpoint(t, txn, m, l, id, commit, checkpoint.Input{Name: "window.0", Data: bytes.Clone(state)})
	}
	write(1, true)
	write(2, true)
	write(3, false)
	txn, m = start()
	got, err := ReadChangelog(ctx, conf, "log", 1)
	if err != nil || got == nil || got.Manifest.ID != 2 {
		t.Fatalf("read back %+v, %v; want checkpoint 2", got, err)
	}
	l = &Changelog{Topic: "log", Partition: 1}
	l.Restored(got)

	sb := &Standby{Config: conf}
	defer sb.Close()
	if err := sb.Keep([]int32{1}); err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sb.Poll(pctx) }()
	// What the standby must read: up to the partition's last stable offset.
	adm := kadm.NewClient(client(t, c))
	ends, err := adm.ListCommittedOffsets(ctx, "log")
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup("log", 1)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		sb.mu.Lock()
		next := sb.readers[1].Next()
		sb.mu.Unlock()
		if next >= end.Offset {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby read to %d; the partition ends at %d", next, end.Offset)
		}
	}
	// The standby instance stops reading (its poll is slow, say); two more
	// checkpoints come.
	stop()
	<-done
	write(4, true)
	write(5, true)
	warm := sb.Take(1)
	if warm == nil || len(sb.Kept()) != 0 {
		t.Fatalf("took %v; kept %v", warm, sb.Kept())
	}
	on, err := ReadChangelogFrom(ctx, conf, "log", warm)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := ReadChangelog(ctx, conf, "log", 1)
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
