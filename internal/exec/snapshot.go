package exec

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
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

const snapshotVersion = 2

// Snapshot appends the operator's whole state: watermark, statistics, and
// every key's windows (timers are derived from the windows on restore).
func (op *WindowOp[K, T, A, O]) Snapshot(b []byte, c Codec[K, A, O], hash func(K) uint64) ([]byte, error) {
	b = append(b, snapshotVersion)
	b = enc.AppendVarint(b, int64(op.wm))
	b = enc.AppendVarint(b, int64(op.now))
	for _, v := range []int64{op.Accepted, op.TooLate, op.LateAccepted, op.Panes, op.Fired, op.Windows} {
		b = enc.AppendVarint(b, v)
	}
	b = enc.AppendUvarint(b, uint64(len(op.Dropped)))
	for w, n := range op.Dropped {
		b = enc.AppendVarint(b, int64(w.Start))
		b = enc.AppendVarint(b, int64(w.End))
		b = enc.AppendVarint(b, n)
	}
	if cap(b)-len(b) < op.snapHint {
		b = slices.Grow(b, op.snapHint+op.snapHint/8)
	}
	err := op.state.forEach(func(k K, ks *keyState[A, O]) error {
		// group, a 4-byte length, the entry: written in place, the length
		// patched after
		b = enc.AppendUvarint(b, hash(k)%KeyGroups)
		at := len(b)
		b = append(b, 0, 0, 0, 0)
		b = appendKeyState(b, k, ks, c)
		binary.LittleEndian.PutUint32(b[at:], uint32(len(b)-at-4))
		return nil
	})
	op.snapHint = len(b)
	// The entries end with a group number that no key has.
	return enc.AppendUvarint(b, KeyGroups), err
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
	return b
}

func appendWin[K comparable, A, O any](b []byte, st *win[A, O], c Codec[K, A, O]) []byte {
	for _, v := range []int64{int64(st.w.Start), int64(st.w.End), int64(st.seq), st.n, int64(st.rev),
		int64(st.early), int64(st.lateAt), int64(st.lastLate)} {
		b = enc.AppendVarint(b, v)
	}
	b = enc.AppendBool(b, st.late)
	b = enc.AppendBool(b, st.latePending)
	b = c.AppendAcc(b, st.acc)
	b = enc.AppendBool(b, st.hasLast)
	if st.hasLast {
		b = append(b, byte(st.lastTiming))
		b = c.AppendOut(b, st.last)
	}
	return b
}

// Restore loads the snapshots of a previous run's instances (any number of
// them) into ops, giving each key to the instance that owns its key group.
// The statistics of the previous run go to ops[0]. ops must be new.
func Restore[K comparable, T, A, O any](ops []*WindowOp[K, T, A, O], parts [][]byte, c Codec[K, A, O]) error {
	for pi, part := range parts {
		d := enc.NewDecoder(part)
		if v := d.Count(255); v != snapshotVersion {
			return fmt.Errorf("operator snapshot %d: unknown version %d", pi, v)
		}
		wm, now := mtime.Time(d.Varint()), mtime.Time(d.Varint())
		for _, op := range ops {
			op.setWatermark(max(op.wm, wm))
			op.now = max(op.now, now)
		}
		o0 := ops[0]
		for _, p := range []*int64{&o0.Accepted, &o0.TooLate, &o0.LateAccepted, &o0.Panes, &o0.Fired, &o0.Windows} {
			*p += d.Varint()
		}
		nd := d.Items(1 << 40)
		for range nd {
			w := window.Window{Start: mtime.Time(d.Varint()), End: mtime.Time(d.Varint())}
			o0.Dropped[w] += d.Varint()
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
			if err := ops[instanceOf(g, len(ops))].restoreKey(entry, c); err != nil {
				return fmt.Errorf("operator snapshot %d: %w", pi, err)
			}
		}
		if err := d.Err(); err != nil {
			return fmt.Errorf("operator snapshot %d: %w", pi, err)
		}
	}
	return nil
}

func (op *WindowOp[K, T, A, O]) restoreKey(entry []byte, c Codec[K, A, O]) error {
	d := enc.NewDecoder(entry)
	k := c.ReadKey(d)
	if d.Err() != nil {
		return d.Err()
	}
	ks := op.state.getOrCreate(k)
	if err := decodeWins(d, ks, c); err != nil {
		return err
	}
	for i := range ks.wins {
		op.Open++
		op.timersFor(k, &ks.wins[i])
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
		st.seq, st.n, st.rev = uint64(vals[2]), vals[3], int(vals[4])
		st.early, st.lateAt, st.lastLate = mtime.Time(vals[5]), mtime.Time(vals[6]), mtime.Time(vals[7])
		st.late = d.Bool()
		st.latePending = d.Bool()
		st.acc = c.ReadAcc(d)
		st.hasLast = d.Bool()
		if st.hasLast {
			if t := d.Count(int(window.Late)); d.Err() == nil {
				st.lastTiming = window.Timing(t)
			}
			st.last = c.ReadOut(d)
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
		return enc.ErrCorrupt
	}
	return d.Err()
}

// timersFor registers the timers a restored window needs.
func (op *WindowOp[K, T, A, O]) timersFor(k K, st *win[A, O]) {
	if st.late {
		op.et.add(st.w.MaxTimestamp().Add(op.lateness), timerRef[K]{k, st.w, st.seq, tCleanup})
	} else {
		op.et.add(st.w.MaxTimestamp(), timerRef[K]{k, st.w, st.seq, tOnTime})
		if st.early != none {
			op.pt.add(st.early, timerRef[K]{k, st.w, st.seq, tEarly})
		}
	}
	if st.lateAt != none {
		op.pt.add(st.lateAt, timerRef[K]{k, st.w, st.seq, tLate})
	}
}
