// Package watermark computes how far event time has progressed: the
// watermark W, an assertion that no more events at or before W are expected.
//
// Three kinds are built in:
//
//   - Bounded out-of-orderness, exactly as Flink computes it:
//     W = max(event time seen) - delay - 1 ms, per input partition, combined
//     by minimum, with idleness. It is emitted every Interval of processing
//     time (Flink's default 200 ms) or after every event (Interval 0).
//   - Perfect, for a recorded (bounded) stream: after each arrival, the
//     smallest event time still to arrive, minus 1 ms. No event is ever late.
//   - Scripted: the input itself says where the watermark is, as Beam's
//     TestStream does; for tests and replays of a known timeline.
//
// Whatever the kind, the watermark never goes back.
package watermark

import (
	"errors"
	"time"

	"github.com/weirstream/weir/mtime"
)

// Kind selects how the watermark is computed.
type Kind uint8

const (
	// Bounded is bounded out-of-orderness (max seen - delay - 1 ms).
	Bounded Kind = iota
	// Perfect is the perfect watermark of a recorded stream.
	Perfect
	// Scripted is a watermark that the input sets explicitly.
	Scripted
)

// DefaultInterval is how often a bounded watermark is emitted when the
// strategy does not say: Flink's pipeline.auto-watermark-interval.
const DefaultInterval = 200 * time.Millisecond

// Strategy configures the watermark of a job.
type Strategy struct {
	Kind Kind
	// Delay is the bounded out-of-orderness.
	Delay mtime.Time
	// Interval is the processing-time period of emission; 0 emits after
	// every event.
	Interval mtime.Time
	// Idle, when positive, is how long a partition may go without events
	// before it stops holding the combined watermark back.
	Idle mtime.Time
	// MaxDrift, when positive, aligns the partitions (Flink's watermark
	// alignment): a source partition whose watermark runs more than MaxDrift
	// ahead of the slowest one that is not idle is paused until the others
	// catch up, so that a backfill does not keep every window of the fast
	// partitions open. It needs a source that can pause its partitions
	// (connector.Pauser: Kafka).
	MaxDrift mtime.Time
}

// BoundedOutOfOrderness returns Flink's watermark strategy with the default
// interval.
func BoundedOutOfOrderness(delay time.Duration) Strategy {
	return Strategy{Kind: Bounded, Delay: mtime.Millis(delay), Interval: mtime.Millis(DefaultInterval)}
}

// PerfectWatermark returns the perfect watermark of a recorded stream.
func PerfectWatermark() Strategy { return Strategy{Kind: Perfect} }

// ScriptedWatermark returns a watermark set only by explicit advances.
func ScriptedWatermark() Strategy { return Strategy{Kind: Scripted} }

// WithInterval returns s emitting every d of processing time (0: after every
// event).
func (s Strategy) WithInterval(d time.Duration) Strategy {
	s.Interval = mtime.Millis(d)
	return s
}

// WithIdleness returns s marking a partition idle after d without events.
func (s Strategy) WithIdleness(d time.Duration) Strategy {
	s.Idle = mtime.Millis(d)
	return s
}

// WithMaxDrift returns s pausing the partitions that run more than d ahead.
func (s Strategy) WithMaxDrift(d time.Duration) Strategy {
	s.MaxDrift = mtime.Millis(d)
	return s
}

// Validate reports a configuration error.
func (s Strategy) Validate() error {
	switch {
	case s.Kind > Scripted:
		return errors.New("unknown watermark kind")
	case s.Delay < 0:
		return errors.New("delay must not be negative")
	case s.Interval < 0:
		return errors.New("interval must not be negative")
	case s.Idle < 0:
		return errors.New("idle must not be negative")
	}
	return nil
}
