package engine

import (
	"fmt"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
)

// Paced is a RecordHandler that says, of a record before it is handed
// over, where it stands in its input: in a replay, the arrival time it
// carries; else its event time. A job that reads several recorded sources
// (connector.Recorded) whose handlers are all Paced merges them record by
// record: the next record handed over is, of the next records of the
// inputs, the one that stands first (of the first input on a tie), so
// that a replay's inputs come in the order they arrived, and other inputs
// in order of event time; either way the order depends on the records
// alone, never on how the sources cut them into batches or how fast each
// is read. A checkpoint keeps, with each input's position, how many
// records of its next batch were handed over already, so that a restore
// goes on in the same order.
type Paced interface {
	// Next is where r stands; mtime.MinTime hands it over at once. The
	// record handed over next on the handler is the last one it was
	// asked of.
	Next(r *connector.Record) mtime.Time
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

// restoreDelivered reads how many records of an input's next batch the
// checkpoint's run had handed over (it merged its inputs): they are
// skipped, whether this run merges its inputs or not.
func (in *input) restoreDelivered() error {
	data := in.p.File(deliveredFile)
	if data == nil {
		return nil
	}
	d := enc.NewDecoder(data)
	n := d.Uvarint()
	if d.Err() != nil || d.Len() != 0 || n > 1<<31 {
		return fmt.Errorf("cannot restore %s: %s is corrupt", in.e.resumed.Path, in.p.FileName(deliveredFile))
	}
	in.skip = int(n)
	return nil
}

// skipDelivered drops from the batch the records a restored checkpoint
// says were handed over already (restoreDelivered), and what the batch
// says of records lost before them.
func (in *input) skipDelivered(sb *sourceBatch) (skipped int) {
	if in.skip == 0 {
		return 0
	}
	n := min(in.skip, len(sb.b.Records))
	in.skip -= n
	sb.b.Lost = 0
	return n
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
	for i := range sb.b.Records {
		if r := &sb.b.Records[i]; r.Arrival == mtime.MinTime {
			r.Arrival = in.e.now
		}
	}
	in.next = in.skipDelivered(sb)
	if bt, ok := sb.f.h.(batchTaker); ok {
		bt.takeBatch(sb.b.Records[in.next:])
	}
}

// batchTaker is a Paced handler that decodes part of the batch a merge
// takes ahead, on another goroutine (a Head with Decoders > 1), rather
// than every record as Next asks of it.
type batchTaker interface {
	takeBatch(rs []connector.Record)
}

// deliverMerged hands over records of the inputs' batches in hand, one at
// a time, the one that stands first each time (Paced), as long as every
// input that has not ended has a batch in hand and no sink stalls the
// loop. It returns the input to wait for (its next batch, or the stall to
// end), nil when every input has ended; stop when afterBatch, called after
// each batch finished, stops the job; delivered when it handed anything
// over.
func (e *Engine) deliverMerged(afterBatch, stalled func() bool) (wait *input, stop, delivered bool) {
	for {
		if stalled() {
			for _, in := range e.inputs {
				if !in.ended {
					return in, false, delivered
				}
			}
			return nil, false, delivered
		}
		var pick *input
		var first mtime.Time
		for _, in := range e.inputs {
			if in.ended {
				continue
			}
			if in.cur == nil {
				return in, false, delivered
			}
			sb := in.cur.b.(*sourceBatch)
			if in.next == len(sb.b.Records) {
				// No record left (none, or a restore skipped them): what
				// it says of its partitions, then the next batch.
				sb.deliverRange(e.now, in.next, in.next)
				in.finish(sb)
				return in, afterBatch(), delivered
			}
			t := sb.f.h.(Paced).Next(&sb.b.Records[in.next])
			if pick == nil || t < first {
				pick, first = in, t
			}
		}
		if pick == nil {
			return nil, false, delivered
		}
		delivered = true
		sb := pick.cur.b.(*sourceBatch)
		sb.deliverRange(e.now, pick.next, pick.next+1)
		pick.next++
		if pick.next == len(sb.b.Records) {
			pick.finish(sb)
			if afterBatch() {
				return nil, true, delivered
			}
		}
	}
}

// finish ends the merged input's batch in hand, every record of it handed
// over: the position is after it.
func (in *input) finish(sb *sourceBatch) {
	in.pos = sb.Position()
	in.cur = nil
	sb.Release()
}

// handed is how many records after the input's position were handed over
// or are still to skip: those of the batch in hand before the next (a
// restore's skipped ones among them), and those a restore still skips
// beyond the batches taken so far. A checkpoint keeps it (deliveredFile),
// so that a checkpoint taken before a restore's skip is done keeps the
// skip.
func (in *input) handed() int {
	n := in.skip
	if in.cur != nil {
		n += in.next
	}
	return n
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
