package engine

import "github.com/weirstream/weir/mtime"

// SignalKind says what a Signal carries.
type SignalKind uint8

const (
	// Proc: processing time has advanced to Signal.Now.
	Proc SignalKind = iota
	// Watermark: the upstream's watermark is Signal.Watermark, at
	// processing time Signal.Now. A stream's watermark never goes back.
	Watermark
	// Flush: make what was written so far visible (a live job, within
	// 100 ms of a pane firing).
	Flush
	// Barrier: a checkpoint barrier. Every element before it belongs to the
	// checkpoint, none after it.
	Barrier
	// End: the input ended. Every element of the stream has been pushed; the
	// consumer finishes (fires every window, flushes) before it returns.
	End
	// Stop: the job stops before the end of its input (for a savepoint, or
	// after a failure). The consumer stops without finishing.
	Stop
)

// Signal travels with the elements of a stream, in order.
type Signal struct {
	Kind      SignalKind
	Now       mtime.Time
	Watermark mtime.Time
	Barrier   *CheckpointBarrier
}

// Consumer receives a stream: elements and signals, in order, from one
// goroutine at a time (the goroutine of the stage upstream). Push and Signal
// never block for long on their own: a consumer that fails reports it with
// Engine.Fail and drops what follows.
//
// End and Stop are delivered once, last, after every other call, in a
// goroutine that may differ from the one that delivered the elements (it
// waited for that one to finish first); the consumer passes them on to its
// own consumers before it returns.
type Consumer[T any] interface {
	Push(v T)
	Signal(s Signal)
}

// Stream is the output of a stage: each element and signal goes to every
// consumer, in the order they subscribed.
type Stream[T any] struct {
	subs []Consumer[T]
}

// Subscribe adds a consumer. Subscribe before the engine runs.
func (s *Stream[T]) Subscribe(c Consumer[T]) { s.subs = append(s.subs, c) }

// Consumers is the number of consumers.
func (s *Stream[T]) Consumers() int { return len(s.subs) }

// Push hands v to every consumer.
func (s *Stream[T]) Push(v T) {
	for _, c := range s.subs {
		c.Push(v)
	}
}

// Signal hands sig to every consumer.
func (s *Stream[T]) Signal(sig Signal) {
	for _, c := range s.subs {
		c.Signal(sig)
	}
}

// Func is a Consumer made of two functions; a nil signal function passes
// every signal to next (Map and Filter are built this way).
type Func[T any] struct {
	OnPush   func(T)
	OnSignal func(Signal)
}

// Push implements Consumer.
func (f Func[T]) Push(v T) { f.OnPush(v) }

// Signal implements Consumer.
func (f Func[T]) Signal(s Signal) {
	if f.OnSignal != nil {
		f.OnSignal(s)
	}
}
