package exec

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/trigger"
	"github.com/weirstream/weir/window"
)

// KeyGroups is the number of key groups. A key belongs to group
// hash(key) % KeyGroups, and with parallelism P instance i owns the groups g
// with g*P/KeyGroups == i, as in Flink. A checkpoint stores state by key
// group, so it can be restored with any parallelism up to KeyGroups.
const KeyGroups = 256

// instanceOf is the instance that owns a key group.
func instanceOf(group, parallelism int) int { return group * parallelism / KeyGroups }

// Codec encodes the operator's keys, accumulators and results for
// checkpoints. Read methods report corrupt input through the decoder.
type Codec[K comparable, A, O any] interface {
	AppendKey(b []byte, k K) []byte
	ReadKey(d *enc.Decoder) K
	AppendAcc(b []byte, a A) []byte
	ReadAcc(d *enc.Decoder) A
	AppendOut(b []byte, o O) []byte
	ReadOut(d *enc.Decoder) O
}

// Snapshot versions: 2 has the keys in the snapshot; 3 has them in a Pebble
// checkpoint beside it; 4 and 5 are 2 and 3 with the late limit in the
// header (the end before which windows were closed, so that a restore with
// a longer allowed lateness opens none of them again); 6 and 7 are 4 and 5
// with the count of events late for some of their windows; 8 and 9 are 6
// and 7 with the count of events set aside by a finished composite trigger,
// and keys whose windows may end with composite trigger states (see
// appendWins). A job without a composite trigger writes 6 and 7, byte for
// byte as before them; one with writes 8 and 9, which a weir of before
// refuses.
const (
	snapshotVersion       = 8
	snapshotPebbleVersion = 9
)

// snapVersion is the version op writes: snapshotVersion, or 6 for a job
// without a composite trigger; pebble for a Pebble snapshot.
func (op *WindowOp[K, T, A, O]) snapVersion(pebble bool) byte {
	v := byte(snapshotVersion)
	if op.prog == nil {
		v = 6
	}
	if pebble {
		v++
	}
	return v
}

// isPebbleSnapshot reports whether a snapshot version keeps its keys in a
// Pebble checkpoint, and hasLateLimit whether its header has the late
// limit.
func isPebbleSnapshot(v int) bool { return v == 3 || v == 5 || v == 7 || v == 9 }
func hasLateLimit(v int) bool     { return v >= 4 }
func hasPartlyLate(v int) bool    { return v >= 6 }
func hasTriggerStats(v int) bool  { return v >= 8 }

// Snapshot appends the operator's whole state: watermark, statistics, and
// every key's windows (timers are derived from the windows on restore).
func (op *WindowOp[K, T, A, O]) Snapshot(b []byte, c Codec[K, A, O], hash func(K) uint64) ([]byte, error) {
	b = op.appendHeader(b, op.snapVersion(false))
	if cap(b)-len(b) < op.snapHint {
		b = slices.Grow(b, op.snapHint+op.snapHint/8)
	}
	err := op.state.forEach(func(k K, ks *keyState[A, O]) error {
		b = appendEntry(b, k, ks, c, hash)
		return nil
	})
	op.snapHint = len(b)
	// The entries end with a group number that no key has.
	return enc.AppendUvarint(b, KeyGroups), err
}

// appendHeader appends what a snapshot has before its keys: the version,
// the watermark, processing time and statistics.
func (op *WindowOp[K, T, A, O]) appendHeader(b []byte, version byte) []byte {
	b = append(b, version)
	b = enc.AppendVarint(b, int64(op.wm))
	b = enc.AppendVarint(b, int64(op.now))
	b = enc.AppendVarint(b, int64(op.lateLimit))
	for _, v := range []int64{op.Accepted, op.TooLate, op.LateAccepted, op.Panes, op.Fired, op.Windows, op.PartlyLate} {
		b = enc.AppendVarint(b, v)
	}
	if version >= 8 {
		b = enc.AppendVarint(b, op.TriggerFinished)
	}
	b = enc.AppendUvarint(b, uint64(len(op.Dropped)))
	for w, n := range op.Dropped {
		b = enc.AppendVarint(b, int64(w.Start))
		b = enc.AppendVarint(b, int64(w.End))
		b = enc.AppendVarint(b, n)
	}
	return b
}

// appendEntry appends one key of a snapshot: its key group, a 4-byte
// length, and the key with its windows (written in place, the length patched
// after). A snapshot's entries may come in any order.
func appendEntry[K comparable, A, O any](b []byte, k K, ks *keyState[A, O], c Codec[K, A, O], hash func(K) uint64) []byte {
	b = enc.AppendUvarint(b, hash(k)%KeyGroups)
	at := len(b)
	b = append(b, 0, 0, 0, 0)
	b = appendKeyState(b, k, ks, c)
	binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

// snapshotBeside starts a snapshot of a memory store that is written beside
// the operator, in a goroutine of its own: the operator stops only to write
// the header and, while the snapshot is under way, for each key it touches
// that the snapshot has not read yet (see memStore.capture). bar is filled
// (State, Took) and made ready when the snapshot is complete. t0 is when the
// operator stopped for the barrier.
func (op *WindowOp[K, T, A, O]) snapshotBeside(bar *Barrier, c Codec[K, A, O], hash func(K) uint64, t0 time.Time) {
	m := op.mem
	if m.snap != nil {
		<-m.snap.done // one snapshot at a time: the operator waits for the last
	}
	m.gen++
	s := &memSnapshot[K, A, O]{
		codec: c, hash: hash, gen: m.gen, chunks: slices.Clone(m.chunks), done: make(chan struct{}),
		buf: op.appendHeader(make([]byte, 0, op.snapHint+op.snapHint/8+64), op.snapVersion(false)),
	}
	m.snap = s
	bar.ready = make(chan struct{})
	took := time.Since(t0)
	go func() {
		b, stall := s.run()
		// The snapshot's size is read by the operator's next barrier, after
		// done.
		op.snapHint = len(b)
		bar.State, bar.Took = b, took+stall
		close(s.done)
		close(bar.ready)
	}()
}

// memSnapshot is a snapshot of a memory store under way.
type memSnapshot[K comparable, A, O any] struct {
	codec  Codec[K, A, O]
	hash   func(K) uint64
	gen    uint32
	chunks [][]memEntry[K, A, O] // the slab as it was at the barrier
	buf    []byte                // the header, then the entries the snapshot read
	done   chan struct{}

	mu    sync.Mutex
	side  []byte        // entries the operator wrote before changing them
	stall time.Duration // the time the operator spent writing them
}

// add writes e into the snapshot, for the operator about to change it.
func (s *memSnapshot[K, A, O]) add(e *memEntry[K, A, O]) {
	t0 := time.Now()
	s.mu.Lock()
	s.side = appendEntry(s.side, e.key, &e.ks, s.codec, s.hash)
	s.stall += time.Since(t0)
	s.mu.Unlock()
}

// run reads every slot of the slab as it was at the barrier, writing those
// the operator has not written, and returns the snapshot and the time the
// operator stalled for it.
func (s *memSnapshot[K, A, O]) run() ([]byte, time.Duration) {
	b := s.buf
	for _, ch := range s.chunks {
		for i := range ch {
			if e := &ch[i]; e.claim(s.gen) { // else the operator wrote it
				if e.live {
					b = appendEntry(b, e.key, &e.ks, s.codec, s.hash)
				}
				e.mark.Store(s.gen)
			}
		}
	}
	// Every slot is marked: the operator writes no more into side.
	s.mu.Lock()
	b = append(b, s.side...)
	stall := s.stall
	s.mu.Unlock()
	return enc.AppendUvarint(b, KeyGroups), stall
}

// appendKeyState encodes a key and its windows (the entry of a snapshot, and
// the value of the Pebble store).
func appendKeyState[K comparable, A, O any](b []byte, k K, ks *keyState[A, O], c Codec[K, A, O]) []byte {
	b = c.AppendKey(b, k)
	return appendWins(b, ks, c)
}

// appendWins encodes a key's windows and slices.
func appendWins[K comparable, A, O any](b []byte, ks *keyState[A, O], c Codec[K, A, O]) []byte {
	b = enc.AppendUvarint(b, uint64(len(ks.wins)))
	for i := range ks.wins {
		b = appendWin(b, &ks.wins[i], c)
	}
	b = enc.AppendUvarint(b, uint64(len(ks.slices)))
	for i := range ks.slices {
		b = enc.AppendVarint(b, int64(ks.slices[i].start))
		b = c.AppendAcc(b, ks.slices[i].acc)
	}
	// Composite trigger states, after the rest, only when a window has
	// one: a key of a job without a composite trigger is written, and
	// read, as before they were.
	n := 0
	for i := range ks.wins {
		if m := ks.wins[i].more; m != nil && m.trg != nil {
			n++
		}
	}
	if n == 0 {
		return b
	}
	b = enc.AppendUvarint(b, uint64(n))
	for i := range ks.wins {
		m := ks.wins[i].more
		if m == nil || m.trg == nil {
			continue
		}
		b = enc.AppendUvarint(b, uint64(i))
		b = enc.AppendUvarint(b, m.trg.shape)
		b = enc.AppendUvarint(b, uint64(len(m.trg.s)))
		for _, t := range m.trg.s {
			b = enc.AppendBool(b, t.Finished)
			b = enc.AppendVarint(b, t.Count)
			b = enc.AppendVarint(b, int64(t.Deadline))
		}
	}
	return b
}

func appendWin[K comparable, A, O any](b []byte, st *win[A, O], c Codec[K, A, O]) []byte {
	for _, v := range []int64{int64(st.w.Start), int64(st.w.End), int64(st.seq), st.count(), int64(st.rev),
		int64(st.earlyAt()), int64(st.lateFireAt()), int64(st.lastLateAt())} {
		b = enc.AppendVarint(b, v)
	}
	b = enc.AppendBool(b, st.late)
	b = enc.AppendBool(b, st.latePending)
	b = c.AppendAcc(b, st.acc)
	b = enc.AppendBool(b, st.hasLast)
	if st.hasLast {
		b = append(b, byte(st.lastTiming))
		b = c.AppendOut(b, st.lastPane())
	}
	return b
}

// snapshotPebble is the snapshot of an instance whose keys are in a state
// database: the header, and a Pebble checkpoint of the instance's keys,
// taken once every key the instance changed is written. Nothing of the
// state is loaded: the cost is a flush of the memtable and of the keys
// changed in the cache, and a hard link per table file.
func (op *WindowOp[K, T, A, O]) snapshotPebble(b []byte) ([]byte, *state.Snapshot, error) {
	s := op.pebble
	spans := []state.Span{{Lo: s.prefix(nil, 0), Hi: s.prefix(nil, KeyGroups)}}
	if op.sets != nil {
		op.sets.save()
		if op.sets.err != nil {
			return nil, nil, op.sets.err
		}
		lo, hi := op.sets.span()
		spans = append(spans, state.Span{Lo: lo, Hi: hi})
	}
	if err := s.flush(); err != nil {
		return nil, nil, err
	}
	snap, err := op.db.Checkpoint(spans...)
	if err != nil {
		return nil, nil, err
	}
	b = op.appendHeader(b, op.snapVersion(true))
	return enc.AppendUvarint(b, uint64(s.inst)), snap, nil
}

// RestoreOptions say how Restore treats the state it reads.
type RestoreOptions struct {
	// DropKeys restores the clocks and statistics only, and leaves the
	// keys' windows behind (a job whose windows changed, started afresh
	// deliberately); Restore counts the keys it left.
	DropKeys bool
}

// Restore loads the operator snapshots parts (and their Pebble checkpoints,
// dirs) into ops, whatever the parallelism they were taken with. It returns
// the number of keys it left behind (RestoreOptions.DropKeys).
func Restore[K comparable, T, A, O any](ops []*WindowOp[K, T, A, O], parts [][]byte, dirs []string, c Codec[K, A, O], ro RestoreOptions) (dropped int64, err error) {
	for pi, part := range parts {
		d := enc.NewDecoder(part)
		v := d.Count(255)
		if v < 2 || v > snapshotPebbleVersion {
			return dropped, fmt.Errorf("operator snapshot %d: unknown version %d", pi, v)
		}
		wm, now := mtime.Time(d.Varint()), mtime.Time(d.Varint())
		closed := mtime.MinTime
		if hasLateLimit(v) {
			closed = mtime.Time(d.Varint())
		}
		for _, op := range ops {
			op.closed = max(op.closed, closed)
			op.setWatermark(max(op.wm, wm))
			op.now = max(op.now, now)
		}
		o0 := ops[0]
		for _, p := range []*int64{&o0.Accepted, &o0.TooLate, &o0.LateAccepted, &o0.Panes, &o0.Fired, &o0.Windows} {
			*p += d.Varint()
		}
		if hasPartlyLate(v) {
			o0.PartlyLate += d.Varint()
		}
		if hasTriggerStats(v) {
			o0.TriggerFinished += d.Varint()
		}
		nd := d.Items(1 << 40)
		for range nd {
			w := window.Window{Start: mtime.Time(d.Varint()), End: mtime.Time(d.Varint())}
			o0.Dropped[w] += d.Varint()
			if len(o0.Dropped) > MaxDropped {
				foldDropped(o0.Dropped)
			}
		}
		if isPebbleSnapshot(v) {
			inst := d.Count(1 << 16)
			if err := d.Err(); err != nil || d.Len() != 0 {
				return dropped, fmt.Errorf("operator snapshot %d: %w", pi, enc.ErrCorrupt)
			}
			if pi >= len(dirs) || dirs[pi] == "" {
				return dropped, fmt.Errorf("operator snapshot %d: its Pebble checkpoint is missing", pi)
			}
			if len(parts) == len(ops) && inst < len(ops) && !ro.DropKeys && ops[inst].pebble.fresh() {
				// The same parallelism: the instance's keys go into its
				// database as they are in the checkpoint.
				if err := ops[inst].adoptPebbleKeys(dirs[pi], c); err != nil {
					return dropped, fmt.Errorf("operator snapshot %d: %w", pi, err)
				}
				continue
			}
			restore := func(g int, entry []byte, from SetSource) error {
				return ops[instanceOf(g, len(ops))].restoreKey(entry, c, from)
			}
			if ro.DropKeys {
				restore = func(int, []byte, SetSource) error { dropped++; return nil }
			}
			if err := readPebbleKeys(dirs[pi], inst, restore); err != nil {
				return dropped, fmt.Errorf("operator snapshot %d: %w", pi, err)
			}
			continue
		}
		for {
			g := d.Count(KeyGroups)
			if g == KeyGroups || d.Err() != nil {
				break
			}
			entry := d.Fixed32Bytes()
			if d.Err() != nil {
				break
			}
			if ro.DropKeys {
				dropped++
				continue
			}
			if err := ops[instanceOf(g, len(ops))].restoreKey(entry, c, noSets); err != nil {
				return dropped, fmt.Errorf("operator snapshot %d: %w", pi, err)
			}
		}
		if err := d.Err(); err != nil {
			return dropped, fmt.Errorf("operator snapshot %d: %w", pi, err)
		}
	}
	// The windows a shortened allowed lateness has already passed close
	// now, with their final pane, before anything else happens.
	for _, op := range ops {
		op.closeDue()
	}
	return dropped, nil
}

// SnapshotInfo is what a snapshot says of itself without its codec.
type SnapshotInfo struct {
	Watermark mtime.Time
	// Keys holding state; Bytes the size of their state.
	Keys, Bytes int64
	// Accepted, TooLate and Panes are the statistics of the instance.
	Accepted, TooLate, Panes int64
}

// InspectSnapshot reads the header of an operator snapshot and counts its
// keys (in dir, its Pebble checkpoint, for a snapshot taken with a state
// database).
func InspectSnapshot(part []byte, dir string) (SnapshotInfo, error) {
	var si SnapshotInfo
	d := enc.NewDecoder(part)
	v := d.Count(255)
	if v < 2 || v > snapshotPebbleVersion {
		return si, fmt.Errorf("unknown version %d", v)
	}
	si.Watermark = mtime.Time(d.Varint())
	d.Varint() // processing time
	if hasLateLimit(v) {
		d.Varint()
	}
	si.Accepted, si.TooLate = d.Varint(), d.Varint()
	d.Varint() // late accepted
	si.Panes = d.Varint()
	d.Varint() // fired
	d.Varint() // windows
	if hasPartlyLate(v) {
		d.Varint()
	}
	if hasTriggerStats(v) {
		d.Varint()
	}
	for range d.Items(1 << 40) {
		d.Varint()
		d.Varint()
		d.Varint()
	}
	if isPebbleSnapshot(v) {
		inst := d.Count(1 << 16)
		if err := d.Err(); err != nil {
			return si, err
		}
		if dir == "" {
			return si, fmt.Errorf("its Pebble checkpoint is missing")
		}
		return si, readPebbleKeys(dir, inst, func(_ int, entry []byte, _ SetSource) error {
			si.Keys++
			si.Bytes += int64(len(entry))
			return nil
		})
	}
	for {
		g := d.Count(KeyGroups)
		if g == KeyGroups || d.Err() != nil {
			break
		}
		entry := d.Fixed32Bytes()
		si.Keys++
		si.Bytes += int64(len(entry))
	}
	return si, d.Err()
}

// readPebbleKeys calls f with the key group and the entry (as
// appendKeyState wrote it) of every key of instance inst in the Pebble
// checkpoint in dir, and the source of the key's sets there.
func readPebbleKeys(dir string, inst int, f func(group int, entry []byte, from SetSource) error) error {
	lo := binary.BigEndian.AppendUint16([]byte{tagState}, uint16(inst))
	hi := binary.BigEndian.AppendUint16([]byte{tagState}, uint16(inst+1))
	r, err := state.OpenSnapshot(dir)
	if err != nil {
		return err
	}
	// The sets of the key at hand: its state's key under tagSet.
	var pre, set []byte
	from := func(id uint64, each func(v []byte)) error {
		set = appendSetID(append(set[:0], pre...), id)
		n := len(set)
		return r.Scan(set, state.PrefixEnd(set), func(k, _ []byte) error {
			each(k[n:])
			return nil
		})
	}
	err = r.Scan(lo, hi, func(k, v []byte) error {
		if len(k) < len(lo)+2 {
			return enc.ErrCorrupt
		}
		g := int(binary.BigEndian.Uint16(k[len(lo):]))
		if g >= KeyGroups {
			return enc.ErrCorrupt
		}
		pre = append(append(pre[:0], tagSet), k[1:]...)
		// A new slice for every key: decoded state may keep parts of it.
		entry := append(append(make([]byte, 0, len(k)+len(v)), k[len(lo)+2:]...), v...)
		return f(g, entry, from)
	})
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return err
}

// adoptPebbleKeys restores the keys of a Pebble checkpoint taken by the
// instance of the same number at the same parallelism, into a store that
// holds none yet: their keys are the same bytes in both databases, so they
// are taken in as one table file (state.DB.Load), in the checkpoint's
// order, instead of going through the cache into the database's memtable
// one by one, each looked up first. Each key's windows are decoded for
// their timers (timersFor) and written back as the codec writes them now.
func (op *WindowOp[K, T, A, O]) adoptPebbleKeys(dir string, c Codec[K, A, O]) error {
	s := op.pebble
	lo := binary.BigEndian.AppendUint16([]byte{tagState}, s.inst)
	hi := binary.BigEndian.AppendUint16([]byte{tagState}, s.inst+1)
	var ks keyState[A, O]
	var vbuf []byte
	// The timers go in as table files too, sorted in chunks of a share of
	// the cache's budget (at least 4 MiB).
	tl := &keyLoad{db: op.db, limit: int(max(s.limit, 4<<20))}
	for _, q := range []timerStore[K]{op.et, op.pt} {
		if q, ok := q.(*pebbleTimers[K, A, O]); ok {
			q.load = tl
			defer func() { q.load = nil }()
		}
	}
	if op.sets != nil {
		// The sets first, as they are (the same instance, key groups and
		// keys): the instance's next id comes with them, and the sets
		// that the keys' windows hold in themselves (an older
		// checkpoint's) get ids above it.
		slo, shi := op.sets.span()
		meta := op.sets.metaKey()
		_, err := op.db.Load(func(add func(k, v []byte) error) error {
			return state.ReadSnapshot(dir, slo, shi, func(k, v []byte) error {
				if bytes.Equal(k, meta) {
					if err := op.sets.restoredNext(v); err != nil {
						return err
					}
				}
				return add(k, v)
			})
		})
		if err != nil {
			return err
		}
		op.sets.commit() // lookups see the sets taken in
	}
	n, err := op.db.Load(func(add func(k, v []byte) error) error {
		return state.ReadSnapshot(dir, lo, hi, func(k, v []byte) error {
			if len(k) < len(lo)+2 || int(binary.BigEndian.Uint16(k[len(lo):])) >= KeyGroups {
				return enc.ErrCorrupt
			}
			kd := enc.NewDecoder(k[len(lo)+2:])
			key := c.ReadKey(kd)
			if err := kd.Err(); err != nil {
				return err
			}
			if kd.Len() != 0 || !bytes.Equal(s.dbKey(key), k) {
				return fmt.Errorf("a key of the checkpoint is in key group %d, not in its hash's (%d): %w", binary.BigEndian.Uint16(k[len(lo):]), s.hash(key)%KeyGroups, enc.ErrCorrupt)
			}
			ks.wins, ks.slices = ks.wins[:0], ks.slices[:0]
			if err := decodeWins(enc.NewDecoder(v), &ks, c); err != nil {
				return err
			}
			if op.sets != nil {
				op.sets.at(k)
			}
			if err := op.settleKey(&ks, nil); err != nil {
				return err
			}
			for i := range ks.wins {
				op.Open++
				op.timersFor(key, &ks.wins[i])
			}
			// Written again as the codec writes it now: an older
			// checkpoint's values may be in a layout of before, and
			// timersFor may have changed a window.
			vbuf = appendWins(vbuf[:0], &ks, c)
			return add(k, vbuf)
		})
	})
	if err == nil {
		err = tl.flush()
	}
	if err != nil {
		return err
	}
	s.setsOf = nil // the sets at hand are the last key's of the checkpoint
	s.n += int(n)
	s.adopted += n
	return nil
}

// restoreKey restores one key of a snapshot, entry, whose sets from
// reads.
func (op *WindowOp[K, T, A, O]) restoreKey(entry []byte, c Codec[K, A, O], from SetSource) error {
	d := enc.NewDecoder(entry)
	k := c.ReadKey(d)
	if d.Err() != nil {
		return d.Err()
	}
	var ks *keyState[A, O]
	if op.pebble != nil {
		ks = op.pebble.restored(k)
	} else {
		ks = op.state.getOrCreate(k)
	}
	if err := decodeWins(d, ks, c); err != nil {
		return err
	}
	if err := op.settleKey(ks, from); err != nil {
		return err
	}
	for i := range ks.wins {
		op.Open++
		op.timersFor(k, &ks.wins[i])
	}
	return nil
}

// settleKey has the aggregate settle the accumulators of a restored key
// (SetUser): their sets go where it keeps them now.
func (op *WindowOp[K, T, A, O]) settleKey(ks *keyState[A, O], from SetSource) error {
	if op.settle == nil {
		return nil
	}
	var err error
	for i := range ks.wins {
		if ks.wins[i].acc, err = op.settle(ks.wins[i].acc, from); err != nil {
			return err
		}
	}
	for i := range ks.slices {
		if ks.slices[i].acc, err = op.settle(ks.slices[i].acc, from); err != nil {
			return err
		}
	}
	if op.sets != nil && op.sets.err != nil {
		return op.sets.err
	}
	return nil
}

// decodeWins reads the windows appendKeyState wrote after the key into ks.
func decodeWins[K comparable, A, O any](d *enc.Decoder, ks *keyState[A, O], c Codec[K, A, O]) error {
	n := d.Items(1 << 30)
	for range n {
		var st win[A, O]
		var vals [8]int64
		for i := range vals {
			vals[i] = d.Varint()
		}
		st.w = window.Window{Start: mtime.Time(vals[0]), End: mtime.Time(vals[1])}
		if vals[4] < 0 || vals[4] > math.MaxInt32 || uint64(vals[2]) >= 1<<maxSeqBits {
			d.Fail()
		}
		st.seq, st.rev = uint64(vals[2]), int32(vals[4])
		if vals[3] != 0 || mtime.Time(vals[5]) != none || mtime.Time(vals[6]) != none || mtime.Time(vals[7]) != none {
			st.more = newMore[O]()
			st.more.n = vals[3]
			st.more.early, st.more.lateAt, st.more.lastLate = mtime.Time(vals[5]), mtime.Time(vals[6]), mtime.Time(vals[7])
		}
		st.late = d.Bool()
		st.latePending = d.Bool()
		st.acc = c.ReadAcc(d)
		st.hasLast = d.Bool()
		if st.hasLast {
			if t := d.Count(int(window.Late)); d.Err() == nil {
				st.lastTiming = window.Timing(t)
			}
			if st.more == nil {
				st.more = newMore[O]()
			}
			st.more.last = c.ReadOut(d)
		}
		if err := d.Err(); err != nil {
			return err
		}
		ks.wins = append(ks.wins, st)
	}
	ns := d.Items(1 << 30)
	for range ns {
		start := mtime.Time(d.Varint())
		ks.slices = append(ks.slices, slice[A]{start: start, acc: c.ReadAcc(d)})
	}
	if d.Err() == nil && d.Len() != 0 {
		nt := d.Items(len(ks.wins))
		for range nt {
			i := d.Count(len(ks.wins) - 1)
			trg := &trgState{shape: d.Uvarint()}
			trg.s = make([]trigger.NodeState, d.Items(1<<16))
			for j := range trg.s {
				trg.s[j] = trigger.NodeState{Finished: d.Bool(), Count: d.Varint(), Deadline: mtime.Time(d.Varint())}
			}
			if d.Err() != nil {
				break
			}
			st := &ks.wins[i]
			if st.more == nil {
				st.more = newMore[O]()
			}
			st.more.trg = trg
		}
	}
	if d.Err() == nil && d.Len() != 0 {
		return enc.ErrCorrupt
	}
	return d.Err()
}

// timersFor registers the timers a restored window needs, as the
// operator's strategy says now (its allowed lateness and trigger may have
// changed since the checkpoint).
func (op *WindowOp[K, T, A, O]) timersFor(k K, st *win[A, O]) {
	// A composite trigger's state holds if the trigger has the same shape
	// (its counts and delays may have changed: what was counted stays
	// counted, a firing set stays set); another trigger starts the
	// window's afresh.
	if m := st.more; m != nil && m.trg != nil && (op.prog == nil || m.trg.shape != op.trgShape || len(m.trg.s) != op.prog.Len()) {
		m.trg = nil
	}
	if m := st.more; op.prog != nil && m != nil && m.trg != nil {
		for _, t := range m.trg.s {
			if t.Deadline != trigger.NoDeadline {
				op.pt.add(t.Deadline, newTimer(k, st.w, st.seq, tEarly))
			}
		}
	}
	if st.late {
		op.et.add(st.w.MaxTimestamp().Add(op.lateness), newTimer(k, st.w, st.seq, tCleanup))
	} else {
		op.et.add(st.w.MaxTimestamp(), newTimer(k, st.w, st.seq, tOnTime))
		if !op.early && st.more != nil {
			st.more.early = none // a trigger without early firings now
		}
		if e := st.earlyAt(); e != none {
			op.pt.add(e, newTimer(k, st.w, st.seq, tEarly))
		}
	}
	if l := st.lateFireAt(); l != none {
		op.pt.add(l, newTimer(k, st.w, st.seq, tLate))
	}
}

// closeDue fires the event-time timers the restored watermark has already
// passed: the cleanups of the windows whose allowed lateness, shortened
// since the checkpoint, has run out. Each closes with its final pane; the
// outputs go with the first batch, before those of any later item.
func (op *WindowOp[K, T, A, O]) closeDue() {
	for {
		t, ok := op.et.next()
		if !ok || t > op.wm {
			return
		}
		t, b := op.et.pop()
		for _, r := range b {
			op.eventTimer(t, r)
		}
		op.et.recycle(b)
	}
}
