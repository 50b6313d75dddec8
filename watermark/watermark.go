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
	"fmt"
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
	// Quiet, when positive, is how long the whole stream may go without an
	// event (no partition having one, and none behind) before the
	// watermark follows the processing clock: W = now - Quiet. The windows
	// of the last minutes before a quiet night then close in the night,
	// not when the next event comes; the price is that an event that comes
	// after that more than Quiet after its event time is late.
	Quiet mtime.Time
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

// WithQuiet returns s following the processing clock (W = now - d) once
// no partition has had an event for d.
func (s Strategy) WithQuiet(d time.Duration) Strategy {
	s.Quiet = mtime.Millis(d)
	return s
}

// Fingerprint is the strategy as the fingerprint of a checkpoint before
// layout 4 names it: the fields the first weirs had, and a field added
// since only when it is set, so that a job that does not set it keeps its
// fingerprint and restores such a checkpoint.
func (s Strategy) Fingerprint() string {
	type first struct {
		Kind                            Kind
		Delay, Interval, Idle, MaxDrift mtime.Time
	}
	t := fmt.Sprintf("%+v", first{s.Kind, s.Delay, s.Interval, s.Idle, s.MaxDrift})
	if s.Quiet != 0 {
		t += fmt.Sprintf(" quiet=%d", s.Quiet)
	}
	return t
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
	case s.Quiet < 0:
		return errors.New("quiet must not be negative")
	case s.Idle < 0:
		return errors.New("idle must not be negative")
	}
	return nil
}
