package engine

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/state"
	"github.com/weirstream/weir/watermark"
	"github.com/weirstream/weir/window"
)

// DecodedKind says what a record turned out to be.
type DecodedKind uint8

const (
	// Event: an event for the window stage.
	Event DecodedKind = iota
	// Rejected: a record that is not a valid event; it goes to the
	// quarantine with Reason (and Detail), and never moves the watermark.
	Rejected
	// WatermarkOnly: a record that only moves a scripted watermark.
	WatermarkOnly
	// Blank: an empty line, counted apart.
	Blank
	// Heartbeat: a record that advances its partition's event time to Time
	// without being an event (a source's heartbeat, so that a partition
	// with no events does not hold the watermark back), counted apart.
	Heartbeat
)

// Decoded is what a Decoder makes of one record.
type Decoded[K comparable, T any] struct {
	Kind DecodedKind
	// Reason and Detail say why a record was rejected.
	Reason, Detail string
	// Arrival is the record's processing time: the head advances the clock
	// to it before it applies the record. It is set to the record's Arrival
	// before Decode; a decoder that reads it from the record itself (a
	// replay) overwrites it, or sets mtime.MinTime when it cannot.
	Arrival mtime.Time
	// Time is the event time; Key the key; ID the identity for
	// de-duplication (nil: none; valid until the next Decode).
	Time mtime.Time
	Key  K
	ID   []byte
	// Partition is the watermark partition of a decoder that numbers its
	// own (PartitionNamer); -1 takes the record's source partition.
	Partition int
	Value     T
	// Watermark is the watermark of a WatermarkOnly record.
	Watermark mtime.Time
	// Filtered says an Event is not to be windowed (a job's where): it is
	// de-duplicated, then counted as filtered, and never moves the
	// watermark.
	Filtered bool
	// Version is the version of an Event of a head with Versions: of two
	// events with one ID, the higher version revises the lower.
	Version int64
}

// Decoder turns records into events: it parses and validates them. It runs
// in the source loop.
type Decoder[K comparable, T any] interface {
	Decode(r *connector.Record, d *Decoded[K, T])
}

// ForkingDecoder is a Decoder that decodes on several goroutines at once
// (HeadConfig.Decoders). Fork makes a decoder for another goroutine: it
// shares no mutable state with this decoder or its other forks, so that
// their Decode calls run at the same time, each on records of its own, and
// what it makes of a record does not depend on the records before it. The
// head then calls Settle on this decoder with each record and what a fork
// made of it, in arrival order, for the part of decoding that does depend
// on the records before (a numbering, a sample). Fork returns nil when the
// decoder cannot be forked: it then decodes in the source loop alone.
//
// A fork's Decoded.ID needs to stay valid only until its next Decode, as
// any decoder's: the head keeps a copy.
type ForkingDecoder[K comparable, T any] interface {
	Decoder[K, T]
	Fork() Decoder[K, T]
	Settle(r *connector.Record, d *Decoded[K, T])
}

// Aheader is a Decoder that is told of a record a few records before it
// decodes it (DecodeAhead), so that it can ask for the memory decoding it
// will read: the key's slot in a table of keys, where many keys mean a
// cache miss for every record. Ahead is a hint: it must change nothing
// that Decode does, and may be wrong (a prefetch of the wrong memory costs
// only time). A fork of a ForkingDecoder is told of the records it
// decodes.
type Aheader interface {
	Ahead(r *connector.Record)
}

// DecodeAhead is how many records before decoding a record the head tells
// an Aheader of it.
const DecodeAhead = 8

// aheadOf tells ah, unless nil, of the record DecodeAhead after rs[i]
// (and at i 0 of the first ones).
func aheadOf(ah Aheader, rs []connector.Record, i int) {
	if ah == nil {
		return
	}
	if i == 0 {
		for j := range min(DecodeAhead, len(rs)) {
			ah.Ahead(&rs[j])
		}
	}
	if j := i + DecodeAhead; j < len(rs) {
		ah.Ahead(&rs[j])
	}
}

// PartitionNamer is a Decoder that may number watermark partitions itself
// (from a field of the events), in order of first appearance: when ok,
// names are their names, and the source's own partitions are not watermark
// partitions.
type PartitionNamer interface {
	PartitionNames() (names []string, ok bool)
}

// StatefulDecoder is a Decoder with state a checkpoint keeps (its partition
// numbering).
type StatefulDecoder interface {
	AppendState(b []byte) []byte
	RestoreState(d *enc.Decoder) error
}

// Target is the window stage a head feeds: *Window implements it.
type Target[K comparable, T any] interface {
	Consumer[struct{}]
	Event(part int, key K, ts mtime.Time, v T)
	// Aside sends an event that is not counted to the late events, with a
	// reason, in stream order.
	Aside(part int, key K, ts mtime.Time, v T, reason string)
	Observe(part int, ts mtime.Time)
	AddPartition(part int, now mtime.Time)
	SetBacklog(part int, backlog int64, now mtime.Time)
	// Withdraw takes an event back out of its windows (the earlier
	// version of a revised event), firing them as the trigger says of an
	// event, or, without fire, not (the new version comes next, to the
	// same key and windows: they fire once); SameWindows says whether
	// events at a and b belong to the same windows; Open whether every
	// window of an event at ts can still take it or give it back;
	// CanWithdraw whether the stage can withdraw at all (its aggregate
	// and windows).
	Withdraw(key K, ts mtime.Time, v T, fire bool)
	SameWindows(a, b mtime.Time) bool
	Open(ts mtime.Time) bool
	CanWithdraw() bool
	SetFloor(w mtime.Time)
	Advance(now mtime.Time)
	SetWatermark(w mtime.Time)
	Watermark() mtime.Time
	Now() mtime.Time
	Tracker() *watermark.Tracker
	Progress() (mtime.Time, int64)
	LiveStats() WindowStats
}

// RejectedRecord is a record that was not a valid event: what a quarantine
// sink receives.
type RejectedRecord struct {
	Reason string
	Detail string
	// At is the processing time at which it was set aside; Arrival the
	// record's arrival time, when it says one (a replay's arrival field),
	// else mtime.MinTime.
	At, Arrival mtime.Time
	// Source names the source; Record is the record as read (its Offset is
	// the line number of a file).
	Source string
	Record connector.Record
}

// HeadConfig configures a head.
type HeadConfig[K comparable, T any] struct {
	// Name identifies the head in checkpoints ("head").
	Name   string
	Source string // the source's name, for quarantine entries
	// Decoder decodes the records of the head's source; nil for a head fed
	// typed elements (Element).
	Decoder Decoder[K, T]
	Window  Target[K, T]
	// Dedup, when set, drops events whose ID it has seen within its
	// horizon (counted as duplicates).
	Dedup state.Dedup
	// Quarantine receives the rejected records; nil only counts them.
	Quarantine Consumer[RejectedRecord]
	// WatermarkAfter, when set, gives the watermark after each record, by
	// its offset (a perfect watermark read ahead from a file).
	WatermarkAfter func(offset int64) mtime.Time
	// GroupWatermark, when set, shares the watermark with the other tasks
	// of a consumer group at each of the source's reports (a live job's,
	// every 200 ms): it is given the watermark and whether every partition
	// is idle, and returns the group's watermark (mtime.MinTime: none),
	// which the watermark follows while every partition is idle
	// (watermark.Tracker.SetFloor).
	GroupWatermark func(own mtime.Time, idle bool) mtime.Time
	// Versions, with Dedup, makes the events versioned: see Versions.
	Versions *Versions[K, T]
	// Decoders is how many goroutines decode a batch of records, when the
	// Decoder is a ForkingDecoder: the source loop and Decoders-1 others,
	// each with a fork. The records are still applied one by one in
	// arrival order, so the output does not depend on it. 0 or 1: the
	// source loop decodes alone.
	Decoders int
	// Aggregation names the aggregation the head feeds in a job of
	// several that read one source (Fan): each such head adds its counts
	// to Status.Aggregations under the name. Beside says the head is not
	// the first of them: the status's partitions, sources and counts are
	// the first's (the heads read the same records).
	Aggregation string
	Beside      bool
	// Input names the head's input in a job that reads several into a
	// join: its counts go to Status.Inputs under the name, and those of
	// the first input (Second false) are the status's Counts too.
	Input  string
	Second bool
}

// Versions says how a head keeps what withdrawing an event needs, for
// versioned events: of two events with one id within the de-duplication
// horizon, the one with the higher version (Decoded.Version) is a revision
// of the other, and replaces it in the results: the head withdraws the
// earlier version from its windows (Target.Withdraw) and sends the new one,
// when every window of either can still take it (Target.Open); else the
// revision is set aside as window.ReasonRevisionTooLate, and the results
// keep the earlier version. An event of the same version is a duplicate;
// one of a lower version is set aside as window.ReasonSuperseded. The head
// remembers, with each id (state.Dedup.Remember), the version applied, its
// event time and what Keep writes of it.
type Versions[K comparable, T any] struct {
	// Keep appends what withdrawing the event v of key needs of it (its
	// key and the values its aggregates read); Back reads it back.
	Keep func(b []byte, key K, v T) []byte
	Back func(b []byte) (K, T, error)
}

// Head is the first stage of a keyed job: decode and validate, account,
// de-duplicate, and feed the window stage, whose clocks it drives. It
// handles the records of one source (AddSource) and the source loop's
// signals (OnSignal).
type Head[K comparable, T any] struct {
	cfg   HeadConfig[K, T]
	e     *Engine
	p     *Participant
	dec   Decoded[K, T]
	forks []forkedDecoder[K, T] // with Decoders > 1, one per decoding goroutine
	ahead Aheader               // the decoder, when it is one
	decs  []Decoded[K, T]       // a batch's records, decoded by the forks
	// peeked is the record Next decoded into peek, until Record applies
	// it.
	peeked *connector.Record
	peek   Decoded[K, T]
	// pre is the second half of a merged input's batch, decoded by a
	// fork on a goroutine of its own while the source loop decodes and
	// applies the first half (takeBatch), into decs; decoding is done
	// once the goroutine has; preAt is the next of its records to apply,
	// settled how many were settled.
	pre      []connector.Record
	decoding sync.WaitGroup
	preAt    int
	settled  int
	logic    bool // the decoder numbers partitions
	parts    []connector.Partition
	announ   bool // source partitions still to declare to the watermark
	reports  []connector.PartitionReport
	paused   []bool     // source partitions paused by the alignment
	now      mtime.Time // processing time, as the head last moved it
	delay    []delays   // by watermark partition: arrival minus event time
	behind   delays     // watermark minus event time, of events behind it
	// forgotten is the event time up to which a run before the restore
	// forgot its ids (with a shorter horizon than this job's): an event at
	// or before it is beyond the de-duplication horizon.
	forgotten mtime.Time
	vbuf      []byte // the value a versioned head remembers

	c Counts
}

// Accounting is where every record a job read went: accepted, a
// duplicate, too late, beyond the de-duplication horizon, or quarantined;
// what is left (InFlight) was read but not yet taken by the windows when
// the job stopped at once. It is the one definition of the job's ledger:
// the head counts it, the engine's status, weir run's summary and its
// acceptance record report it, each embedding it.
type Accounting struct {
	Read       int64 `json:"read"`
	Accepted   int64 `json:"accepted"`
	Duplicates int64 `json:"duplicates"`
	TooLate    int64 `json:"too_late"`
	// BeyondDedupHorizon counts the events older than the watermark minus
	// the de-duplication horizon: an earlier delivery would have been
	// forgotten, so they go to the late events instead of being counted.
	BeyondDedupHorizon int64 `json:"beyond_dedup_horizon"`
	Quarantined        int64 `json:"quarantined"`
	// Filtered counts the events a job's where kept out of its windows.
	Filtered int64 `json:"filtered,omitempty"`
	// Superseded counts the events of a versioned job whose version is
	// lower than the one applied: set aside, never applied.
	Superseded int64 `json:"superseded,omitempty"`
	// RevisionsTooLate counts the revisions of a versioned job that could
	// not be applied, a window of the earlier version or of their own
	// being past its allowed lateness: set aside.
	RevisionsTooLate int64 `json:"revisions_too_late,omitempty"`
}

// InFlight is what was read but is not accounted for: the events read and
// not yet taken by the windows.
func (a Accounting) InFlight() int64 {
	return a.Read - (a.Accepted + a.Duplicates + a.TooLate + a.BeyondDedupHorizon + a.Quarantined + a.Filtered + a.Superseded + a.RevisionsTooLate)
}

// Balanced says whether every record read is accounted for.
func (a Accounting) Balanced() bool { return a.InFlight() == 0 }

// Counts is the head's accounting (Accounting) with what it counts beside:
// the quarantine's reasons, the accepted events that were late, the panes
// and windows fired, and the records that are not events: watermark-only
// records and blank lines, counted apart, and the records a source lost.
type Counts struct {
	Accounting
	QuarantineReasons map[string]int64 `json:"quarantine_reasons"`
	LateAccepted      int64            `json:"late_accepted"`
	// Revisions counts the revisions of a versioned job that were
	// applied (Versions): each replaced its earlier version, and is in
	// Accepted (or Filtered) as the event it is.
	Revisions int64 `json:"revisions,omitempty"`
	// LateForSomeWindows counts the accepted events that were too late
	// for some of their windows (a sliding window's earlier ones): each
	// is in the late events too.
	LateForSomeWindows int64 `json:"late_for_some_windows"`
	// TriggerFinished counts the events that came for a window whose
	// composite trigger had finished (in TooLate, or in LateForSomeWindows
	// when other windows took them): each is in the late events with the
	// reason window.ReasonTriggerFinished (or
	// window.ReasonTriggerFinishedForSomeWindows).
	TriggerFinished int64 `json:"trigger_finished,omitempty"`
	PanesFired      int64 `json:"panes_fired"`
	WindowsFired    int64 `json:"windows_fired"`
	WatermarkLines  int64 `json:"watermark_lines"`
	BlankLines      int64 `json:"blank_lines"`
	// Heartbeats counts the records that advanced their partition's event
	// time without being events (Heartbeat): not in Read.
	Heartbeats int64 `json:"heartbeats,omitempty"`
	// Lost counts the records the source skipped knowing they were there
	// (a Kafka partition's retention deleted them before they were read,
	// and the job says on_gap: skip): never read, so not in Read.
	Lost int64 `json:"lost"`
	// FirstEventTime and LastEventTime are the least and the greatest event
	// time of the events read (quarantined records aside); MaxTime and
	// MinTime before the first.
	FirstEventTime mtime.Time `json:"first_event_time"`
	LastEventTime  mtime.Time `json:"last_event_time"`
}

// newCounts is the accounting of a head that has read nothing.
func newCounts() Counts {
	return Counts{QuarantineReasons: map[string]int64{}, FirstEventTime: mtime.MaxTime, LastEventTime: mtime.MinTime}
}

// NewHead builds a head, restoring its counters, partition numbering and
// de-duplication ids if the job resumes. Add it to the engine with AddSource
// and OnSignal.
func NewHead[K comparable, T any](e *Engine, cfg HeadConfig[K, T]) (*Head[K, T], error) {
	p, err := e.participant(cfg.Name, partHead)
	if err != nil {
		return nil, err
	}
	h := &Head[K, T]{cfg: cfg, e: e, p: p, now: mtime.MinTime, forgotten: mtime.MinTime, c: newCounts()}
	if cfg.Decoder == nil {
		// A head of typed elements (Element) decodes nothing.
		cfg.Decoder = noDecoder[K, T]{}
		h.cfg.Decoder = cfg.Decoder
	}
	h.ahead, _ = cfg.Decoder.(Aheader)
	if pn, ok := cfg.Decoder.(PartitionNamer); ok {
		_, h.logic = pn.PartitionNames()
	}
	if fd, ok := cfg.Decoder.(ForkingDecoder[K, T]); ok && cfg.Decoders > 1 {
		for range cfg.Decoders {
			f := fd.Fork()
			if f == nil {
				h.forks = nil
				break
			}
			ah, _ := f.(Aheader)
			h.forks = append(h.forks, forkedDecoder[K, T]{d: f, ahead: ah})
		}
	}
	if cfg.Versions != nil && (cfg.Dedup == nil || !cfg.Window.CanWithdraw()) {
		return nil, fmt.Errorf("engine: head %s: versioned events need a de-duplication and windows that can withdraw an event (an aggregate.Retracter, windows that are not sessions)", cfg.Name)
	}
	if data := p.File(""); data != nil {
		if err := h.restore(data); err != nil {
			return nil, fmt.Errorf("cannot restore %s: %s: %w", e.resumed.Path, p.name, err)
		}
	}
	e.OnStatus(h.status)
	return h, nil
}

// noDecoder is the decoder of a head fed typed elements: none is a record.
type noDecoder[K comparable, T any] struct{}

func (noDecoder[K, T]) Decode(r *connector.Record, d *Decoded[K, T]) {
	d.Kind, d.Reason = Rejected, "not_an_element"
}

// Counts is the head's accounting; with the window's statistics once it has
// ended.
func (h *Head[K, T]) Counts() Counts { return h.c }

// Next implements Paced: the arrival time of r in a replay (the inputs
// are merged as they arrived), else its event time; mtime.MinTime for a
// record that has neither (a line that is not valid), which then comes at
// once. r is decoded once: Record applies what Next decoded.
func (h *Head[K, T]) Next(r *connector.Record) mtime.Time {
	d := h.predecoded(r)
	if d == nil {
		d = &h.peek
		if h.peeked != r {
			h.peeked = r
			*d = Decoded[K, T]{Partition: -1, Arrival: r.Arrival}
			h.cfg.Decoder.Decode(r, d)
		}
	}
	switch {
	case !h.e.cfg.Live && d.Arrival != mtime.MinTime:
		return d.Arrival
	case d.Kind == Event || d.Kind == Heartbeat:
		return d.Time
	}
	return mtime.MinTime
}

// Lost implements LostHandler.
func (h *Head[K, T]) Lost(n int64) { h.c.Lost += n }

// Partitions implements RecordHandler.
func (h *Head[K, T]) Partitions(parts []connector.Partition, now mtime.Time) {
	h.parts = parts
	if !h.logic {
		h.announ = true
	}
}

// Backlog implements BacklogHandler: what the source reports of its
// partitions, each a watermark partition (unless the decoder numbers its
// own).
func (h *Head[K, T]) Backlog(reports []connector.PartitionReport, now mtime.Time) {
	h.reports = reports
	if !h.logic {
		for _, r := range reports {
			h.cfg.Window.SetBacklog(r.Partition, r.Backlog, now)
		}
	}
	if share := h.cfg.GroupWatermark; share != nil {
		w := h.cfg.Window
		w.SetFloor(share(w.Watermark(), w.Tracker().AllIdle()))
	}
}

// Align implements Aligner: with the window stage's watermark.MaxDrift, the
// source partitions to pause and those to resume. The pace is set by the slowest partition that still
// has records waiting (not idle, not caught up: a partition with nothing to
// read holds no reader back); a partition whose watermark is more than
// MaxDrift ahead of it is paused until it catches up. While a partition
// with records waiting has read none, the others that have read some wait.
func (h *Head[K, T]) Align() (pause, resume []int) {
	tr := h.cfg.Window.Tracker()
	drift := tr.MaxDrift()
	if drift <= 0 || h.logic {
		return nil, nil
	}
	n := tr.Partitions()
	if len(h.paused) < n {
		h.paused = append(h.paused, make([]bool, n-len(h.paused))...)
	}
	waiting := make([]bool, n)
	for _, r := range h.reports {
		if r.Partition < n && r.Backlog != 0 {
			waiting[r.Partition] = true
		}
	}
	slowest, any := mtime.MaxTime, false
	for p := range n {
		if waiting[p] && !tr.Idle(p) {
			slowest, any = min(slowest, tr.PartitionWatermark(p)), true
		}
	}
	for p := range n {
		w := tr.PartitionWatermark(p)
		var ahead bool
		switch {
		case !any:
		case slowest == mtime.MinTime:
			ahead = w > mtime.MinTime
		default:
			ahead = w > slowest.Add(drift)
		}
		switch {
		case ahead && !h.paused[p]:
			h.paused[p] = true
			pause = append(pause, p)
		case !ahead && h.paused[p]:
			h.paused[p] = false
			resume = append(resume, p)
		}
	}
	return pause, resume
}

// Paused reports whether the alignment paused source partition p.
func (h *Head[K, T]) Paused(p int) bool { return p < len(h.paused) && h.paused[p] }

// Record implements RecordHandler: one record, in arrival order.
func (h *Head[K, T]) Record(r *connector.Record) {
	if d := h.predecoded(r); d != nil {
		h.preAt++
		h.apply(r, d)
		if h.preAt == len(h.pre) {
			h.dropBatch()
		}
		return
	}
	if h.peeked == r {
		// Decoded already, by Next.
		h.peeked = nil
		h.apply(r, &h.peek)
		return
	}
	d := &h.dec
	var zero Decoded[K, T]
	*d = zero
	d.Partition, d.Arrival = -1, r.Arrival
	h.cfg.Decoder.Decode(r, d)
	h.apply(r, d)
}

// Element is an event of a typed stream (a Go pipeline's), with its
// partition, key, event time and identity (nil: not de-duplicated): it is
// accounted for, de-duplicated and fed to the window stage as a decoded
// record is, at the processing time the stream's signals set.
func (h *Head[K, T]) Element(part int, key K, ts mtime.Time, id []byte, v T) {
	d := &h.dec
	*d = Decoded[K, T]{Kind: Event, Time: ts, Key: key, ID: id, Partition: part, Value: v, Arrival: mtime.MinTime}
	h.apply(&noRecord, d)
}

// DeclarePartitions says that a typed stream's watermark partitions 0 to
// n-1 exist from now on: each holds the watermark back (until it is idle)
// before it has had an element of its own, as a source's announced
// partitions do. A co-group's two inputs declare theirs, so that neither
// moves the watermark alone before the other has said anything.
func (h *Head[K, T]) DeclarePartitions(n int) {
	for i := range n {
		h.cfg.Window.AddPartition(i, h.now)
	}
}

// VersionedElement is Element for a head with Versions: the element's
// version orders it among those of its id.
func (h *Head[K, T]) VersionedElement(part int, key K, ts mtime.Time, id []byte, version int64, v T) {
	d := &h.dec
	*d = Decoded[K, T]{Kind: Event, Time: ts, Key: key, ID: id, Partition: part, Value: v, Arrival: mtime.MinTime, Version: version}
	h.apply(&noRecord, d)
}

// noRecord is the record of an Element: none, read from no source.
var noRecord connector.Record

// minForkChunk is the fewest records a decoding goroutine is given: a
// smaller batch is decoded in the source loop alone.
const minForkChunk = 128

// forkedDecoder is a fork of the head's decoder, with the copies of the
// ids it decoded in a batch.
type forkedDecoder[K comparable, T any] struct {
	d     Decoder[K, T]
	ahead Aheader // d, when it is one
	ids   []byte
}

// Records implements BatchHandler: the records of a batch, decoded on
// len(h.forks) goroutines, then settled and applied one by one in arrival
// order, as Record would.
func (h *Head[K, T]) Records(rs []connector.Record) {
	if len(rs) == 1 && (h.peeked == &rs[0] || h.predecoded(&rs[0]) != nil) {
		// A merged input's record, decoded already (Next).
		h.Record(&rs[0])
		return
	}
	workers := min(len(h.forks), len(rs)/minForkChunk)
	if workers < 2 {
		for i := range rs {
			aheadOf(h.ahead, rs, i)
			h.Record(&rs[i])
		}
		return
	}
	decs := h.forkDecode(rs, workers)
	fd := h.cfg.Decoder.(ForkingDecoder[K, T])
	for i := range rs {
		fd.Settle(&rs[i], &decs[i])
		h.apply(&rs[i], &decs[i])
	}
	clear(decs) // the batch's values are not held past it
}

// forkDecode decodes rs on workers of the forks at once, into h.decs.
func (h *Head[K, T]) forkDecode(rs []connector.Record, workers int) []Decoded[K, T] {
	if cap(h.decs) < len(rs) {
		h.decs = make([]Decoded[K, T], len(rs))
	}
	decs := h.decs[:len(rs)]
	chunk := (len(rs) + workers - 1) / workers
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		lo, hi := min(w*chunk, len(rs)), min((w+1)*chunk, len(rs))
		wg.Go(func() { h.forks[w].decode(rs[lo:hi], decs[lo:hi]) })
	}
	h.forks[0].decode(rs[:chunk], decs[:chunk])
	wg.Wait()
	return decs
}

// takeBatch implements batchTaker: of a merged input's batch (the records
// of it still to hand over), a fork decodes the second half on a goroutine
// of its own while the source loop decodes and hands over the first, a
// record at a time as Next asks; Next then settles each record of the
// second half, in order, and Record applies it. Handing a record over
// costs more than decoding one, so the fork is mostly done before the
// loop needs its first record, and the loop never waits for it to start.
func (h *Head[K, T]) takeBatch(rs []connector.Record) {
	h.dropBatch()
	if len(h.forks) < 2 || len(rs) < 2*minForkChunk {
		return
	}
	h.pre = rs[len(rs)/2:]
	if cap(h.decs) < len(h.pre) {
		h.decs = make([]Decoded[K, T], len(h.pre))
	}
	pre, decs, f := h.pre, h.decs[:len(h.pre)], &h.forks[0]
	h.decoding.Go(func() { f.decode(pre, decs) })
}

// predecoded is what takeBatch's fork decoded of r, settled, when r is the
// next record of its half; else nil.
func (h *Head[K, T]) predecoded(r *connector.Record) *Decoded[K, T] {
	if h.preAt == len(h.pre) || &h.pre[h.preAt] != r {
		return nil
	}
	if h.preAt == 0 {
		h.decoding.Wait()
	}
	d := &h.decs[h.preAt]
	if h.settled == h.preAt {
		h.cfg.Decoder.(ForkingDecoder[K, T]).Settle(r, d)
		h.settled++
	}
	return d
}

// dropBatch lets go of what takeBatch decoded.
func (h *Head[K, T]) dropBatch() {
	h.decoding.Wait()
	clear(h.decs[:len(h.pre)]) // the batch's values are not held past it
	h.pre, h.preAt, h.settled = nil, 0, 0
}

// decode decodes rs into ds, keeping a copy of each id that stays valid
// until the next batch.
func (f *forkedDecoder[K, T]) decode(rs []connector.Record, ds []Decoded[K, T]) {
	f.ids = f.ids[:0]
	for i := range rs {
		aheadOf(f.ahead, rs, i)
		d := &ds[i]
		*d = Decoded[K, T]{Partition: -1, Arrival: rs[i].Arrival}
		f.d.Decode(&rs[i], d)
		if d.ID != nil {
			if len(f.ids)+len(d.ID) > cap(f.ids) {
				// A new buffer: the ids copied so far keep the old one.
				f.ids = make([]byte, 0, max(2*cap(f.ids), len(d.ID), 16<<10))
			}
			at := len(f.ids)
			f.ids = append(f.ids, d.ID...)
			d.ID = f.ids[at:len(f.ids):len(f.ids)]
		}
	}
}

// apply accounts for a decoded record and feeds it to the window stage.
func (h *Head[K, T]) apply(r *connector.Record, d *Decoded[K, T]) {
	w := h.cfg.Window
	if d.Kind == Blank {
		h.c.BlankLines++
		if h.cfg.WatermarkAfter != nil {
			w.SetWatermark(h.cfg.WatermarkAfter(r.Offset))
		}
		return
	}
	if d.Arrival != mtime.MinTime {
		h.now = max(h.now, d.Arrival)
		if h.announ {
			// The source's partitions hold the watermark back from the
			// first record on, even those that never get one (until they
			// are idle).
			h.announ = false
			for i := range h.parts {
				w.AddPartition(i, d.Arrival)
			}
		}
		w.Advance(d.Arrival)
	}
	switch d.Kind {
	case Rejected:
		h.c.Read++
		h.c.Quarantined++
		h.c.QuarantineReasons[d.Reason]++
		if q := h.cfg.Quarantine; q != nil {
			q.Push(RejectedRecord{Reason: d.Reason, Detail: d.Detail, Source: h.cfg.Source, Record: *r, At: h.now, Arrival: d.Arrival})
		}
	case WatermarkOnly:
		h.c.WatermarkLines++
		w.SetWatermark(d.Watermark)
	case Heartbeat:
		h.c.Heartbeats++
		part := d.Partition
		if part < 0 {
			part = r.Partition
		}
		w.Observe(part, d.Time)
	default:
		h.c.Read++
		h.c.FirstEventTime = min(h.c.FirstEventTime, d.Time)
		h.c.LastEventTime = max(h.c.LastEventTime, d.Time)
		part := d.Partition
		if part < 0 {
			part = r.Partition
		}
		h.observe(part, d.Time, w.Watermark())
		// An event without an id (nil) is not de-duplicated: an input of
		// a co-group that is not, beside one that is.
		dedup := h.cfg.Dedup != nil && d.ID != nil
		switch {
		case !dedup && d.Filtered:
			h.c.Filtered++
		case !dedup:
			w.Event(part, d.Key, d.Time, d.Value)
		case d.Time.Add(h.cfg.Dedup.Horizon()) <= w.Watermark() || d.Time <= h.forgotten:
			// Its id would have expired: a duplicate cannot be told.
			h.c.BeyondDedupHorizon++
			w.Aside(part, d.Key, d.Time, d.Value, window.ReasonBeyondDedupHorizon)
		case h.cfg.Versions != nil:
			h.versioned(part, d)
		case h.cfg.Dedup.Seen(d.ID, d.Time, w.Watermark()):
			h.c.Duplicates++
			w.Observe(part, d.Time)
		case d.Filtered:
			h.c.Filtered++
		default:
			w.Event(part, d.Key, d.Time, d.Value)
		}
	}
	if h.cfg.WatermarkAfter != nil {
		w.SetWatermark(h.cfg.WatermarkAfter(r.Offset))
	}
	if h.cfg.Dedup != nil {
		h.cfg.Dedup.Expire(w.Watermark())
	}
}

// versioned applies an event of a versioned head (see Versions).
func (h *Head[K, T]) versioned(part int, d *Decoded[K, T]) {
	w, dd, vs := h.cfg.Window, h.cfg.Dedup, h.cfg.Versions
	wm := w.Watermark()
	val, live := dd.Lookup(d.ID, wm)
	if live && val == nil {
		// Remembered by a run without versions: neither its version nor
		// what to withdraw is known, so it is a duplicate, as it was.
		h.c.Duplicates++
		w.Observe(part, d.Time)
		return
	}
	var old version
	if live {
		var err error
		if old, err = readVersion(val); err != nil {
			h.e.Fail(fmt.Errorf("de-duplication state: the version of an id: %w", err))
			return
		}
		switch {
		case d.Version == old.v:
			h.c.Duplicates++
			w.Observe(part, d.Time)
			return
		case d.Version < old.v:
			h.c.Superseded++
			w.Aside(part, d.Key, d.Time, d.Value, window.ReasonSuperseded)
			return
		}
		if (old.kept != nil && !w.Open(old.t)) || (!d.Filtered && !w.Open(d.Time)) {
			h.c.RevisionsTooLate++
			w.Aside(part, d.Key, d.Time, d.Value, window.ReasonRevisionTooLate)
			return
		}
		if old.kept != nil {
			key, v, err := vs.Back(old.kept)
			if err != nil {
				h.e.Fail(fmt.Errorf("de-duplication state: the earlier version of an id: %w", err))
				return
			}
			// Into the same key's same windows, the two make one change:
			// the windows fire once, with the new version in place of
			// the old.
			same := !d.Filtered && key == d.Key && w.SameWindows(old.t, d.Time)
			w.Withdraw(key, old.t, v, !same)
		}
		h.c.Revisions++
	}
	// The version applied, with what withdrawing it needs.
	h.vbuf = appendVersion(h.vbuf[:0], d.Version, d.Time, !d.Filtered)
	if !d.Filtered {
		h.vbuf = vs.Keep(h.vbuf, d.Key, d.Value)
	}
	dd.Remember(d.ID, d.Time.Add(dd.Horizon()), h.vbuf)
	if d.Filtered {
		h.c.Filtered++
		return
	}
	w.Event(part, d.Key, d.Time, d.Value)
}

// version is what a versioned head remembers of an id: the version
// applied, its event time, and, when it was windowed (not filtered), what
// withdrawing it needs (Versions.Keep).
type version struct {
	v    int64
	t    mtime.Time
	kept []byte
}

func appendVersion(b []byte, v int64, t mtime.Time, windowed bool) []byte {
	b = enc.AppendVarint(b, v)
	b = enc.AppendVarint(b, int64(t))
	return enc.AppendBool(b, windowed)
}

func readVersion(b []byte) (version, error) {
	d := enc.NewDecoder(b)
	var x version
	x.v, x.t = d.Varint(), mtime.Time(d.Varint())
	if d.Bool() {
		x.kept = b[len(b)-d.Len():]
	}
	return x, d.Err()
}

// observe adds an event of partition part at event time t, read with the
// watermark at wm, to the delay histograms.
func (h *Head[K, T]) observe(part int, t, wm mtime.Time) {
	if h.now != mtime.MinTime && part >= 0 && part < 1<<16 {
		if part >= len(h.delay) {
			h.delay = append(h.delay, make([]delays, part+1-len(h.delay))...)
		}
		h.delay[part].observe(max(int64(h.now-t), 0))
	}
	if t < wm && wm != mtime.MaxTime {
		h.behind.observe(int64(wm - t))
	}
}

// Signal implements Consumer[struct{}]: the source loop's signals, passed on
// to the window stage and the quarantine.
func (h *Head[K, T]) Signal(s Signal) {
	w, q := h.cfg.Window, h.cfg.Quarantine
	switch s.Kind {
	case Proc:
		h.now = max(h.now, s.Now)
		w.Advance(s.Now)
		return
	case Barrier:
		h.ackBarrier(s.Barrier)
	case End, Stop:
		if h.cfg.Dedup != nil && s.Kind == End {
			h.cfg.Dedup.Expire(mtime.MaxTime)
		}
	}
	w.Signal(s)
	if q != nil {
		q.Signal(s)
	}
	if h.cfg.Dedup != nil && (s.Kind == End || s.Kind == Stop) {
		if err := h.cfg.Dedup.Err(); err != nil {
			h.e.Fail(fmt.Errorf("de-duplication state: %w", err))
		}
	}
}

// Push makes Head a Consumer[struct{}].
func (h *Head[K, T]) Push(struct{}) {}

// ackBarrier acknowledges a checkpoint barrier with the head's state. The
// ids of a de-duplication on Pebble go as a Pebble checkpoint (files
// "NAME.db.*", shared table files in the store), never read into memory.
func (h *Head[K, T]) ackBarrier(b *CheckpointBarrier) {
	sd, ok := h.cfg.Dedup.(state.SnapshotDedup)
	if !ok {
		b.Ack(h.p, File{Name: h.p.name, Data: h.appendState(nil, false)})
		return
	}
	snap, err := sd.Snapshot()
	if err != nil {
		b.Fail(h.p, fmt.Errorf("de-duplication state: %w", err))
		return
	}
	files, err := b.snapshotFiles(h.p, "db.", snap)
	if err != nil {
		b.Fail(h.p, fmt.Errorf("de-duplication state: %w", err))
		return
	}
	b.Ack(h.p, append([]File{{Name: h.p.name, Data: h.appendState(nil, true)}}, files...)...)
}

// headVersion 2 added BeyondDedupHorizon to the counters, 3 the span of
// event time, 4 the records lost, 5 the de-duplication horizon and what was
// forgotten before (a restore into another horizon), and the decoder's
// state with its length (a savepoint is inspected without the decoder), 6
// the processing time (a line set aside right after a restore, before any
// line has an arrival, is dated as in an uninterrupted run), 7 the events
// filtered, 8 the heartbeats, 9 a versioned job's counters (superseded,
// revisions too late, revisions applied) and a value with each
// de-duplication id (state.Dedup.Remember; an older file's ids have none).
const headVersion = 9

// appendState appends the head's state; the de-duplication ids, unless
// idsInFiles (they are in a Pebble checkpoint beside it).
func (h *Head[K, T]) appendState(b []byte, idsInFiles bool) []byte {
	b = append(b, headVersion)
	c := &h.c
	for _, v := range []int64{c.Read, c.Duplicates, c.Quarantined, c.WatermarkLines, c.BlankLines, c.BeyondDedupHorizon, int64(c.FirstEventTime), int64(c.LastEventTime), c.Lost, int64(h.now)} {
		b = enc.AppendVarint(b, v)
	}
	keys := slices.Sorted(maps.Keys(c.QuarantineReasons))
	b = enc.AppendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		b = enc.AppendString(b, k)
		b = enc.AppendVarint(b, c.QuarantineReasons[k])
	}
	b = enc.AppendBool(b, h.announ)
	b = enc.AppendVarint(b, c.Filtered)
	b = enc.AppendVarint(b, c.Heartbeats)
	b = enc.AppendVarint(b, c.Superseded)
	b = enc.AppendVarint(b, c.RevisionsTooLate)
	b = enc.AppendVarint(b, c.Revisions)
	if sd, ok := h.cfg.Decoder.(StatefulDecoder); ok {
		b = enc.AppendBool(b, true)
		b = enc.AppendBytes(b, sd.AppendState(nil))
	} else {
		b = enc.AppendBool(b, false)
	}
	// De-duplication: 0 none, 1 the ids follow, 2 the ids are in files;
	// then the horizon and what was forgotten before.
	switch {
	case h.cfg.Dedup == nil:
		return enc.AppendUvarint(b, 0)
	case idsInFiles:
		b = enc.AppendUvarint(b, 2)
	default:
		b = enc.AppendUvarint(b, 1)
	}
	b = enc.AppendVarint(b, int64(h.cfg.Dedup.Horizon()))
	b = enc.AppendVarint(b, int64(h.forgotten))
	if !idsInFiles {
		b = h.cfg.Dedup.AppendState(b)
	}
	return b
}

// headFile is a head's checkpoint file (appendState) read up to its
// de-duplication ids: the one reading of its format, for a restore and for
// Inspect.
type headFile struct {
	version  int
	c        Counts
	now      mtime.Time
	announce bool
	// ids says where the de-duplication ids are: 0 none, 1 they follow in
	// the decoder, 2 in files beside it; horizon and forgotten (version 5 on)
	// are the horizon they were kept for and what was forgotten before.
	ids                int
	horizon, forgotten mtime.Time
}

// errDecoderState is readHead's error when a file holds a decoder's state
// that no one can read past (a version before 5, whose state has no length,
// inspected without the decoder).
var errDecoderState = errors.New("the decoder's state cannot be read without the decoder")

// readHead reads a head's file from d, leaving d at its de-duplication ids.
// A decoder's state is handed to decoderState, positioned at it; nil says
// that the reader has no decoder to give it to.
func readHead(d *enc.Decoder, decoderState func(*enc.Decoder) error) (headFile, error) {
	f := headFile{c: newCounts(), now: mtime.MinTime, horizon: mtime.MinTime, forgotten: mtime.MinTime}
	v := d.Count(255)
	if v < 1 || v > headVersion {
		return f, fmt.Errorf("unknown version %d", v)
	}
	f.version = v
	c := &f.c
	for _, p := range []*int64{&c.Read, &c.Duplicates, &c.Quarantined, &c.WatermarkLines, &c.BlankLines} {
		*p = d.Varint()
	}
	if v >= 2 {
		c.BeyondDedupHorizon = d.Varint()
	}
	if v >= 3 {
		c.FirstEventTime, c.LastEventTime = mtime.Time(d.Varint()), mtime.Time(d.Varint())
	}
	if v >= 4 {
		c.Lost = d.Varint()
	}
	if v >= 6 {
		f.now = mtime.Time(d.Varint())
	}
	for range d.Items(1 << 16) {
		k := d.String()
		c.QuarantineReasons[k] = d.Varint()
	}
	f.announce = d.Bool()
	if v >= 7 {
		c.Filtered = d.Varint()
	}
	if v >= 8 {
		c.Heartbeats = d.Varint()
	}
	if v >= 9 {
		c.Superseded, c.RevisionsTooLate, c.Revisions = d.Varint(), d.Varint(), d.Varint()
	}
	if d.Bool() {
		st := d
		if v >= 5 {
			st = enc.NewDecoder(d.Bytes())
		}
		switch {
		case decoderState != nil:
			if err := decoderState(st); err != nil {
				return f, err
			}
		case v < 5:
			return f, errDecoderState
		}
	}
	f.ids = d.Count(2)
	if v >= 5 && f.ids > 0 {
		f.horizon, f.forgotten = mtime.Time(d.Varint()), mtime.Time(d.Varint())
	}
	return f, d.Err()
}

func (h *Head[K, T]) restore(data []byte) error {
	d := enc.NewDecoder(data)
	var decoderState func(*enc.Decoder) error
	if sd, ok := h.cfg.Decoder.(StatefulDecoder); ok {
		decoderState = sd.RestoreState
	} else {
		decoderState = func(*enc.Decoder) error {
			return fmt.Errorf("the checkpoint has decoder state, this job's decoder has none")
		}
	}
	f, err := readHead(d, decoderState)
	if err != nil {
		return err
	}
	// The head has read nothing yet: what it counted is the file's.
	h.c, h.announ, h.now = f.c, f.announce, f.now
	if err := h.restoreIDs(d, f); err != nil {
		return err
	}
	if err := d.Err(); err != nil {
		return err
	}
	if d.Len() != 0 {
		return enc.ErrCorrupt
	}
	return nil
}

// restoreIDs reads the de-duplication ids of a head's file f from d.
// They are left behind when the job no longer de-duplicates, or drops them
// (its id field changed); they expire at their event time plus the job's
// horizon, and what a shorter horizon forgot before stays forgotten.
func (h *Head[K, T]) restoreIDs(d *enc.Decoder, f headFile) error {
	ids, v := f.ids, f.version
	if ids == 0 {
		return nil
	}
	dd := h.cfg.Dedup
	was, forgotten := f.horizon, f.forgotten
	if dd == nil || h.e.restore.DroppedPart(h.p.name) {
		if ids == 1 {
			state.CountState(d, v >= 9)
		}
		return nil
	}
	var shift mtime.Time
	if v >= 5 {
		shift, h.forgotten = dd.Horizon()-was, forgotten
		if shift > 0 {
			h.forgotten = max(h.forgotten, h.cfg.Window.Watermark().Add(-was))
		}
	}
	if ids == 1 {
		dd.RestoreState(d, shift, v >= 9)
	} else {
		dir, err := h.e.materialize(h.p, "db.")
		if err != nil {
			return err
		}
		if dir == "" {
			return fmt.Errorf("its de-duplication ids (%s) are missing", h.p.FileName("db.*"))
		}
		err = dd.RestoreSnapshot(dir, shift)
		removeDir(dir)
		if err != nil {
			return err
		}
	}
	if shift < 0 {
		// Ids the shorter horizon has expired are forgotten before the
		// first event.
		dd.Expire(h.cfg.Window.Watermark())
	}
	return dd.Err()
}

// status fills in the partitions, their diagnoses and the counts, in the
// source loop.
func (h *Head[K, T]) status(s *Status) {
	w := h.cfg.Window
	if h.cfg.Aggregation != "" {
		s.Aggregations = append(s.Aggregations, AggregationStatus{Name: h.cfg.Aggregation, Watermark: w.Watermark(), Counts: h.counts()})
	}
	if h.cfg.Beside {
		return
	}
	if h.cfg.Input != "" {
		s.Inputs = append(s.Inputs, InputStatus{Name: h.cfg.Input, Counts: h.counts()})
	}
	// The watermark partition of the source's partition i: a join keeps
	// its inputs' partitions apart (PartitionMapper).
	part := func(i int) int { return i }
	if pm, ok := w.(PartitionMapper); ok {
		part = pm.WatermarkPartition
	}
	now := max(w.Now(), h.e.now)
	s.ProcessingTime = max(s.ProcessingTime, now)
	if s.Watermark == mtime.MinTime {
		s.Watermark = w.Watermark()
	}
	var names []string
	if h.logic {
		names, _ = h.cfg.Decoder.(PartitionNamer).PartitionNames()
	} else {
		for _, p := range h.parts {
			names = append(names, p.Name)
		}
	}
	tr := w.Tracker()
	st := tr.State()
	reports := map[int]connector.PartitionReport{}
	if !h.logic {
		for _, r := range h.reports {
			reports[r.Partition] = r
		}
	}
	quiet := max(2*time.Second.Milliseconds(), int64(tr.IdleTimeout())/2)
	// Every partition the source has, from the start: one that has had no
	// record yet is not in the watermark's partitions until the first
	// record of any (it holds nothing back yet), and shows as inactive,
	// backlogged or interrupted by its source's report.
	n := 0
	for part(n) < len(st.Max) {
		n++
	}
	if !h.logic {
		n = max(n, len(names))
		for _, r := range h.reports {
			n = max(n, r.Partition+1)
		}
	}
	for i := range n {
		name := fmt.Sprintf("partition %d", i)
		if i < len(names) {
			name = names[i]
		}
		ps := PartitionStatus{Name: name, Watermark: mtime.MinTime, MaxEventTime: mtime.MinTime, LastEvent: mtime.MinTime, Backlog: -1}
		ti := part(i)
		tracked := ti < len(st.Max)
		if tracked {
			ps.Watermark, ps.MaxEventTime, ps.LastEvent, ps.Idle = tr.PartitionWatermark(ti), st.Max[ti], st.LastActive[ti], st.Idle[ti]
			ps.tracked = true
		}
		r, hasReport := reports[i]
		if hasReport {
			ps.Backlog, ps.Err = r.Backlog, r.Err
		}
		ps.Paused = !h.logic && h.Paused(i)
		if i < len(h.delay) {
			ps.EventDelay = h.delay[i].histogram()
		}
		switch {
		case w.Watermark() == mtime.MaxTime:
			ps.Diagnosis = DiagFinished
		case ps.Err != "":
			ps.Diagnosis = DiagInterrupted
		case ps.Idle && st.Max[ti] == mtime.MinTime:
			ps.Diagnosis = DiagInactive // caught up, never an event
		case ps.Idle:
			ps.Diagnosis = DiagIdle
		case ps.Backlog > 0:
			ps.Diagnosis = DiagBacklogged
		case !tracked:
			ps.Diagnosis = DiagInactive // no record yet
		case int64(now-st.LastActive[ti]) >= quiet && (!hasReport || r.CaughtUp):
			ps.Diagnosis = DiagInactive
		default:
			ps.Diagnosis = DiagActive
		}
		s.Partitions = append(s.Partitions, ps)
	}
	// How far the watermark is behind processing time: never negative (a
	// watermark ahead of the clock, or at the end of an ended input, is
	// behind by nothing).
	if wm := w.Watermark(); wm > mtime.MinTime && wm < mtime.MaxTime && now > wm {
		s.WatermarkGap = int64(now - wm)
	}
	if b := h.behind.histogram(); b != nil {
		if s.BehindWatermark == nil {
			s.BehindWatermark = &Histogram{Bounds: b.Bounds, Counts: make([]int64, len(b.Counts))}
		}
		for i, n := range b.Counts {
			s.BehindWatermark.Counts[i] += n
		}
		s.BehindWatermark.Sum += b.Sum
		s.BehindWatermark.Count += b.Count
	}
	if h.reports != nil {
		s.Sources = append(s.Sources, SourceStatus{Name: h.cfg.Source, Partitions: h.reports})
	}
	if !h.cfg.Second {
		s.Counts = h.counts()
	}
}

// PartitionMapper is a Target that keeps the watermark partitions of a
// head's source under other numbers (a join's input: both inputs share its
// watermark): the watermark partition of the source's partition p.
type PartitionMapper interface {
	WatermarkPartition(p int) int
}

// counts is the head's accounting with its window's live statistics.
func (h *Head[K, T]) counts() Counts {
	c := h.c
	c.QuarantineReasons = maps.Clone(c.QuarantineReasons)
	ls := h.cfg.Window.LiveStats()
	c.Accepted, c.TooLate, c.LateAccepted, c.PanesFired, c.WindowsFired = ls.Accepted, ls.TooLate, ls.LateAccepted, ls.Panes, ls.Fired
	c.LateForSomeWindows, c.TriggerFinished = ls.PartlyLate, ls.TriggerFinished
	return c
}
