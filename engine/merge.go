package engine

import (
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
)

// Paced is a RecordHandler that says how far in event time the records it
// was handed have reached. A job that reads several recorded sources
// (connector.Recorded) whose handlers are all Paced merges them record by
// record: the next
// record is always the next one of the input that is furthest behind (the
// first such input on a tie), so that the inputs move through event time
// together and the order in which their records are handed over depends on
// the records alone, never on how the sources cut them into batches or how
// fast each is read. A checkpoint keeps, with each input's position, how
// many records of its next batch were handed over already, so that a
// restore goes on in the same order.
type Paced interface {
	// Reached is the latest event time of the records handed over so
	// far (mtime.MinTime before the first), as the last checkpoint
	// restored it.
	Reached() mtime.Time
}

// merging says whether the source loop merges its inputs record by record
// (Paced): several inputs, each a recorded source whose handler is Paced.
func (e *Engine) merging() bool {
	if len(e.inputs) < 2 {
		return false
	}
	for _, in := range e.inputs {
		f, ok := in.feed.(*sourceFeed)
		if !ok {
			return false
		}
		r, ok := f.src.(connector.Recorded)
		if !ok || !r.Recorded() {
			return false
		}
		if _, ok := f.h.(Paced); !ok {
			return false
		}
	}
	return true
}

// deliveredFile is the suffix of an input's file, in a checkpoint of merged
// inputs, that says how many records of its next batch were handed over.
const deliveredFile = "delivered"

// restoreDelivered reads, for a merged input, how many records of its next
// batch the checkpoint's run had handed over: they are skipped.
func (in *input) restoreDelivered() {
	if data := in.p.File(deliveredFile); data != nil {
		d := enc.NewDecoder(data)
		if n := d.Uvarint(); d.Err() == nil {
			in.skip = int(n)
		}
	}
}

// chosen is the merged input whose record comes next: of those not ended,
// the one whose handler has reached the least event time, the first of
// them on a tie; nil when every input has ended.
func (e *Engine) chosen() *input {
	var pick *input
	var least mtime.Time
	for _, in := range e.inputs {
		if in.ended {
			continue
		}
		r := in.feed.(*sourceFeed).h.(Paced).Reached()
		if pick == nil || r < least {
			pick, least = in, r
		}
	}
	return pick
}

// take makes b the merged input's batch in hand, skipping the records a
// restored checkpoint says were handed over before it.
func (in *input) take(b *inputBatch) {
	if in.e.cfg.Live {
		// Its records arrive now, as a batch taken at once does.
		in.e.advance(mtime.Now())
	}
	in.cur, in.next = b, 0
	sb := b.b.(*sourceBatch)
	if in.skip > 0 {
		n := min(in.skip, len(sb.b.Records))
		in.skip -= n
		in.next = n
		// What came with the batch was taken with it before.
		sb.b.Lost = 0
	}
}

// deliverMerged hands over records of the inputs' batches in hand, one at
// a time, as long as the input whose record comes next has one in hand and
// no sink stalls the loop. It returns that input when it is to be waited
// for (its next batch, or the stall to end), nil when every input has
// ended; stop when afterBatch, called after each batch finished, stops the
// job.
func (e *Engine) deliverMerged(afterBatch, stalled func() bool) (wait *input, stop, delivered bool) {
	for {
		in := e.chosen()
		if in == nil || in.cur == nil || stalled() {
			return in, false, delivered
		}
		delivered = true
		sb := in.cur.b.(*sourceBatch)
		n := len(sb.b.Records)
		// (A batch whose records a restore skipped, or that has none,
		// still says what it says of its partitions.)
		sb.deliverRange(e.now, in.next, min(in.next+1, n))
		in.next = min(in.next+1, n)
		if in.delivered = in.next; in.next < n {
			continue
		}
		in.pos = sb.Position()
		in.cur, in.delivered = nil, 0
		sb.Release()
		if afterBatch() {
			return nil, true, delivered
		}
	}
}

// allEnded reports whether every input has ended.
func (e *Engine) allEnded() bool {
	for _, in := range e.inputs {
		if !in.ended {
			return false
		}
	}
	return true
}

// deliverRange hands over the batch's records [i, j): with the first of
// them (i 0), what the batch says of its partitions and lost records.
func (b *sourceBatch) deliverRange(now mtime.Time, i, j int) {
	f := b.f
	if i == 0 {
		if b.b.Partitions != nil {
			f.parts = b.b.Partitions
			f.h.Partitions(f.parts, now)
		}
		if lh, ok := f.h.(LostHandler); ok && b.b.Lost > 0 {
			lh.Lost(b.b.Lost)
		}
	} else if b.b.Partitions != nil && f.parts == nil {
		// A restore skipped the batch's first records: its partitions
		// are still the handler's to know.
		f.parts = b.b.Partitions
		f.h.Partitions(f.parts, now)
	}
	rs := b.b.Records[i:j]
	if len(rs) == 0 {
		return
	}
	for k := range rs {
		if rs[k].Arrival == mtime.MinTime {
			rs[k].Arrival = now
		}
	}
	if bh, ok := f.h.(BatchHandler); ok {
		bh.Records(rs)
		return
	}
	for k := range rs {
		f.h.Record(&rs[k])
	}
}
