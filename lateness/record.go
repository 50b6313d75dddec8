package lateness

import (
	"sync/atomic"

	"github.com/weirstream/weir/job"
	"github.com/weirstream/weir/mtime"
)

// A rejection reason: why a line is not an event. The JSON-lines reasons are
// weir run's quarantine reasons, checked in the same order, so that the same
// lines are events here and there.
type reason uint8

const (
	rOK reason = iota
	rNotJSON
	rLineTooLong
	rNoEventTime
	rBadEventTime
	rImplausible
	rFuture
	rNoArrival
	rBadArrival
	rNoPartition
	rBadWeight
	rNotCSV
	rBadWatermark
	rNoSent
	rBadSent
	// rWatermarkLine is no rejection: the line only moves a scripted
	// watermark (watermark.from_field), and is counted apart.
	rWatermarkLine
	nReasons
)

var reasonNames = [nReasons]string{
	rOK:           "",
	rNotJSON:      job.ReasonNotJSON,
	rLineTooLong:  job.ReasonLineTooLong,
	rNoEventTime:  job.ReasonNoEventTime,
	rBadEventTime: job.ReasonBadEventTime,
	rImplausible:  job.ReasonImplausible,
	rFuture:       job.ReasonFuture,
	rNoArrival:    job.ReasonNoArrival,
	rBadArrival:   job.ReasonBadArrival,
	rNoPartition:  job.ReasonNoPartition,
	rBadWeight:    "bad_weight",
	rNotCSV:       "not_csv",
	rBadWatermark: job.ReasonBadWatermark,
	rNoSent:       job.ReasonNoSent,
	rBadSent:      job.ReasonBadSent,
	// never a rejection reason
	rWatermarkLine: "watermark_line",
}

// rejections is the lines counts rejected, in all and by the name names gives
// each reason (none for a reason no line had).
func rejections(counts *[nReasons]int64, names *[nReasons]string) (int64, map[string]int64) {
	var total int64
	m := map[string]int64{}
	for i, n := range counts {
		if n > 0 {
			total += n
			m[names[i]] = n
		}
	}
	return total, m
}

// reasonOf is the reason of a line's times' name (package linedec's).
func reasonOf(name string) reason {
	for r, n := range reasonNames {
		if n == name && reason(r) != rWatermarkLine {
			return reason(r)
		}
	}
	panic("lateness: no reason named " + name)
}

// record is one line of input, read.
type record struct {
	ts, arr    mtime.Time
	w          float64
	line       int64 // its line in the file (a CSV row's line, a Parquet row's number)
	part       int32
	why        reason
	hasArrival bool // a rejected line with an arrival still moves the clock
	weighted   bool // w came from a weight field
}

// span locates a text in a batch's slab.
type span struct{ off, n int32 }

// batch is a run of consecutive records. Every stage reads it; the last one
// done recycles it.
type batch struct {
	recs   []record
	groups []span // len(recs) * (number of --by fields), then the partition
	slab   []byte
	blank  int64 // blank lines (not events, not rejected)
	refs   atomic.Int32
}

func (b *batch) reset() {
	b.recs = b.recs[:0]
	b.groups = b.groups[:0]
	b.slab = b.slab[:0]
	b.blank = 0
}

// text appends s to the slab and returns where it is.
func (b *batch) text(s []byte) span {
	sp := span{int32(len(b.slab)), int32(len(s))}
	b.slab = append(b.slab, s...)
	return sp
}

func (b *batch) get(s span) []byte { return b.slab[s.off : s.off+s.n] }

// noSpan is a field without a value (the match field of a ledger join).
var noSpan = span{-1, -1}

// value is the text at s, and false for noSpan.
func (b *batch) value(s span) ([]byte, bool) {
	if s.off < 0 {
		return nil, false
	}
	return b.get(s), true
}

// pool recycles batches between the readers and the stages.
type pool struct{ free chan *batch }

func newPool() *pool { return &pool{free: make(chan *batch, 64)} }

func (p *pool) get() *batch {
	select {
	case b := <-p.free:
		b.reset()
		return b
	default:
		return &batch{recs: make([]record, 0, batchSize)}
	}
}

// done releases one reference to b.
func (p *pool) done(b *batch) {
	if b.refs.Add(-1) == 0 {
		select {
		case p.free <- b:
		default:
		}
	}
}

// batchSize is the number of lines in a batch.
const batchSize = 4096

// missing is the group value of a line without the field.
const missing = "(none)"

var missingText = []byte(missing)
