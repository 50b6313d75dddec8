package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
)

// Feed is an input of the source loop. Read runs in a goroutine of its own
// and returns batches; the loop hands each one over with Deliver, in its own
// goroutine, between checkpoints. A connector.Source becomes a feed with
// AddSource; the Go API's in-memory inputs are feeds of their own.
type Feed interface {
	// Open prepares reading from a position an earlier batch returned
	// (restored from a checkpoint), or from the start when position is nil.
	Open(ctx context.Context, position []byte) error
	// Read returns the next batch; io.EOF at the end of a bounded input
	// (with a last batch or nil), ctx.Err() when ctx is done.
	Read(ctx context.Context) (FeedBatch, error)
	Close() error
}

// FreeBatches is how many delivered batches a feed keeps to fill again:
// more than an input can have in flight in a job of up to four inputs (one
// its feed fills, two in a typed source's own queue, one its reading
// goroutine holds, 2n+2 in the loop's queue for n inputs, one being
// delivered). A
// feed that kept fewer dropped a batch given back whenever its reader ran
// ahead of the loop, and made a new one, its buffers with it: in a steady
// stream, an allocation every few batches.
const FreeBatches = 16

// FeedBatch is a batch of a Feed.
type FeedBatch interface {
	// Deliver hands the batch's items over, in order; now is the processing
	// time at which the loop took the batch (the wall clock of a live job,
	// else the loop's last processing time).
	Deliver(now mtime.Time)
	// Position is the feed's position after the batch, for checkpoints.
	Position() []byte
	// Release gives the batch back to its feed once delivered.
	Release()
}

type input struct {
	e     *Engine
	name  string
	feed  Feed
	p     *Participant
	pos   []byte // after the last delivered batch
	ended bool
	done  chan struct{} // closed when the reading goroutine returns
	// Of merged inputs (Paced): the batch in hand, partly handed over, and
	// the next of its records. Of every input: how many records a restore
	// still skips (handed).
	cur  *inputBatch
	next int
	skip int
	ch   chan *inputBatch // its own batches
}

type inputBatch struct {
	in  *input
	b   FeedBatch
	err error
}

// AddFeed adds an input to the job. name identifies it in checkpoints: it
// must be stable from run to run.
func (e *Engine) AddFeed(name string, f Feed) error {
	p, err := e.participant(SourcePart(name), partSource)
	if err != nil {
		return err
	}
	in := &input{e: e, name: name, feed: f, p: p, done: make(chan struct{})}
	if pos := p.File(""); len(pos) > 0 {
		// A checkpoint taken before the first batch holds no position.
		in.pos = pos
	}
	if err := in.restoreDelivered(); err != nil {
		return err
	}
	e.inputs = append(e.inputs, in)
	return nil
}

// RestoredPosition is the position of the input name in the checkpoint the
// job resumes from, as its source wrote it (connector.Source.Position), or
// nil when it starts afresh or the input was not added.
func (e *Engine) RestoredPosition(name string) []byte {
	if in := e.input(name); in != nil {
		return in.pos
	}
	return nil
}

// RestoredSkip is how many records after the input's restored position
// (RestoredPosition) the checkpoint's run had handed over: the restore
// skips them.
func (e *Engine) RestoredSkip(name string) int {
	if in := e.input(name); in != nil {
		return in.skip
	}
	return 0
}

// input is the input name, nil when none was added.
func (e *Engine) input(name string) *input {
	for _, in := range e.inputs {
		if in.name == name {
			return in
		}
	}
	return nil
}

// start opens the feed as the engine retries its own operations (retry): a
// source whose broker or server is down or restarting when the job starts
// is waited for with backoff, as a sink's open is, and as the source waits
// for it once reading; what no retry mends fails the job at once.
func (in *input) start(ctx context.Context) error {
	open := func() error { return in.feed.Open(ctx, in.pos) }
	if err := retryUntil(in.e, ctx.Done(), in.name+" open", open(), open); err != nil {
		var ce *connector.Error
		if errors.As(err, &ce) {
			return err
		}
		return &connector.Error{Connector: in.name, Op: "open", Err: err}
	}
	return nil
}

// committer is the input's source when it acknowledges what checkpoints
// hold (connector.Committer), else nil.
func (in *input) committer() connector.Committer {
	if f, ok := in.feed.(*sourceFeed); ok {
		if c, ok := f.src.(connector.Committer); ok {
			return c
		}
	}
	return nil
}

// sourceWaiting is the first input whose source reads nothing more until a
// checkpoint acknowledges what it holds (connector.Committer.Waiting).
func (e *Engine) sourceWaiting() *input {
	for _, in := range e.inputs {
		if c := in.committer(); c != nil && !in.ended && c.Waiting() {
			return in
		}
	}
	return nil
}

// run reads batches until the feed ends or fails, or ctx is done.
func (in *input) run(ctx context.Context, out chan<- *inputBatch) {
	defer close(in.done)
	send := func(b *inputBatch) bool {
		select {
		case out <- b:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		b, err := in.feed.Read(ctx)
		if b != nil && !send(&inputBatch{in: in, b: b}) {
			return
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, io.EOF) {
				var ce *connector.Error
				if !errors.As(err, &ce) {
					err = &connector.Error{Connector: in.name, Op: "read", Err: err}
				}
			}
			send(&inputBatch{in: in, err: err})
			return
		}
	}
}

// deliver hands a batch over in the source loop.
func (e *Engine) deliver(b *inputBatch) {
	now := e.now
	if e.cfg.Live {
		e.advance(mtime.Now())
		now = e.now
	}
	if sb, ok := b.b.(*sourceBatch); ok {
		// A checkpoint of a run that merged its inputs may have been
		// taken in the middle of this batch.
		n := b.in.skipDelivered(sb)
		sb.b.Records = sb.b.Records[n:]
	}
	b.b.Deliver(now)
	b.in.pos = b.b.Position()
	b.b.Release()
}

// close closes the feed once its goroutine has returned (its Read saw the
// cancelled context), or after a second if it is blocked where a context
// does not reach (standard input): then Close is its chance to return.
func (in *input) close(started bool) {
	if started {
		select {
		case <-in.done:
		case <-time.After(time.Second):
		}
	}
	if err := in.feed.Close(); err != nil {
		in.e.log(fmt.Sprintf("closing %s: %v", in.name, err))
	}
}

// RecordHandler receives the records of a connector source in the source
// loop: a head that decodes, validates and routes them.
type RecordHandler interface {
	// Partitions tells the handler the source's partitions, when they
	// change (always before the first record).
	Partitions(parts []connector.Partition, now mtime.Time)
	// Record handles one record. r.Arrival is the wall clock at which the
	// batch was taken in a live job when the source did not set it, and
	// mtime.MinTime in a replay that did not either.
	Record(r *connector.Record)
}

// BatchHandler is a RecordHandler that takes a batch's records at once, in
// arrival order (their Arrival set as for Record), so that it may decode
// them in parallel.
type BatchHandler interface {
	Records(rs []connector.Record)
}

// LostHandler is a RecordHandler that accounts for the records a source
// skipped knowing they were there (connector.Batch.Lost).
type LostHandler interface {
	Lost(n int64)
}

// BacklogHandler is a RecordHandler that wants the source's reports of its
// partitions (connector.Reporter): a live job gives them every 200 ms.
type BacklogHandler interface {
	Backlog(reports []connector.PartitionReport, now mtime.Time)
}

// Aligner is a BacklogHandler that aligns the source's partitions by their
// watermarks: after each report, the partitions to pause and to resume.
type Aligner interface {
	Align() (pause, resume []int)
}

// report passes a reporting source's partitions to its handler, and pauses
// or resumes partitions as the handler aligns them.
func (in *input) report(now mtime.Time) {
	f, ok := in.feed.(*sourceFeed)
	if !ok || in.ended {
		return
	}
	r, ok := f.src.(connector.Reporter)
	bh, ok2 := f.h.(BacklogHandler)
	if ok && ok2 && f.parts != nil {
		bh.Backlog(r.Report(), now)
		al, ok := f.h.(Aligner)
		ps, ok2 := f.src.(connector.Pauser)
		if ok && ok2 {
			pause, resume := al.Align()
			ps.Pause(pause)
			ps.Resume(resume)
		}
	}
}

// Fan is the handler of a source read once for several heads (a job of
// several aggregations): each record goes to every head in turn, in the
// order given, so that each applies the records in arrival order. The
// first head aligns the source's partitions (the heads see the same
// records, so their partitions' watermarks agree).
func Fan(heads ...RecordHandler) RecordHandler {
	if len(heads) == 1 {
		return heads[0]
	}
	return fan(heads)
}

type fan []RecordHandler

// Partitions implements RecordHandler.
func (f fan) Partitions(parts []connector.Partition, now mtime.Time) {
	for _, h := range f {
		h.Partitions(parts, now)
	}
}

// Record implements RecordHandler.
func (f fan) Record(r *connector.Record) {
	for _, h := range f {
		h.Record(r)
	}
}

// Records implements BatchHandler: each head takes the batch whole, one
// after the other.
func (f fan) Records(rs []connector.Record) {
	for _, h := range f {
		if bh, ok := h.(BatchHandler); ok {
			bh.Records(rs)
			continue
		}
		for i := range rs {
			h.Record(&rs[i])
		}
	}
}

// Lost implements LostHandler.
func (f fan) Lost(n int64) {
	for _, h := range f {
		if lh, ok := h.(LostHandler); ok {
			lh.Lost(n)
		}
	}
}

// Backlog implements BacklogHandler.
func (f fan) Backlog(reports []connector.PartitionReport, now mtime.Time) {
	for _, h := range f {
		if bh, ok := h.(BacklogHandler); ok {
			bh.Backlog(reports, now)
		}
	}
}

// Align implements Aligner: the first head's.
func (f fan) Align() (pause, resume []int) {
	if al, ok := f[0].(Aligner); ok {
		return al.Align()
	}
	return nil, nil
}

// AddSource adds a connector source whose records go to h.
func (e *Engine) AddSource(name string, src connector.Source, h RecordHandler) error {
	return e.AddFeed(name, newSourceFeed(name, src, h))
}

func newSourceFeed(name string, src connector.Source, h RecordHandler) *sourceFeed {
	return &sourceFeed{name: name, src: src, h: h, free: make(chan *sourceBatch, FreeBatches)}
}

// sourceFeed reads a connector.Source.
type sourceFeed struct {
	name  string
	src   connector.Source
	h     RecordHandler
	free  chan *sourceBatch
	parts []connector.Partition
}

type sourceBatch struct {
	f *sourceFeed
	b connector.Batch
}

func (f *sourceFeed) Open(ctx context.Context, pos []byte) error { return f.src.Open(ctx, pos) }

func (f *sourceFeed) Close() error { return f.src.Close() }

func (f *sourceFeed) Read(ctx context.Context) (FeedBatch, error) {
	var sb *sourceBatch
	select {
	case sb = <-f.free:
		sb.b.Reset()
	default:
		sb = &sourceBatch{f: f}
	}
	for {
		err := f.src.Read(ctx, &sb.b)
		if len(sb.b.Records) > 0 || sb.b.Partitions != nil || sb.b.Lost > 0 {
			return sb, err
		}
		if err != nil {
			return nil, err
		}
	}
}

func (b *sourceBatch) Deliver(now mtime.Time) { b.deliverRange(now, 0, len(b.b.Records)) }

func (b *sourceBatch) Position() []byte { return b.b.Position }

func (b *sourceBatch) Release() {
	select {
	case b.f.free <- b:
	default:
	}
}
