package window

import (
	"errors"
	"fmt"
	"time"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/trigger"
)

// Mode says how the panes of one window relate to each other.
type Mode uint8

const (
	// Accumulating panes each hold the whole window so far (Flink's default):
	// a reader replaces the previous value.
	Accumulating Mode = iota
	// Discarding panes hold only what came since the previous firing,
	// possibly nothing: a reader adds them up.
	Discarding
	// Retracting panes accumulate, and before each later pane comes a
	// retraction of the previous one (also when sessions merge): a reader
	// subtracts the retraction and adds the new pane.
	Retracting
)

// String returns accumulating, discarding or retracting.
func (m Mode) String() string {
	switch m {
	case Accumulating:
		return "accumulating"
	case Discarding:
		return "discarding"
	case Retracting:
		return "retracting"
	}
	return "unknown"
}

// Strategy is everything about a windowed aggregation except the aggregation:
// where (Assigner), when (Trigger), how long late data is accepted
// (AllowedLateness) and how panes relate (Mode).
//
// With AllowedLateness L, an event is too late for a window when, on arrival,
// End-1 ms + L <= W; the window's state is deleted when W reaches End-1 ms + L,
// and it then emits a closing pane with Final set. With L = 0 the on-time pane
// is the final one.
type Strategy struct {
	Assigner        Assigner
	Trigger         trigger.Trigger
	AllowedLateness mtime.Time
	Mode            Mode
}

// NewStrategy returns a strategy with the default trigger, no allowed lateness
// and accumulating panes.
func NewStrategy(a Assigner) Strategy { return Strategy{Assigner: a} }

// WithLateness returns s with the allowed lateness set.
func (s Strategy) WithLateness(d time.Duration) Strategy {
	s.AllowedLateness = mtime.Millis(d)
	return s
}

// WithTrigger returns s with the trigger set.
func (s Strategy) WithTrigger(t trigger.Trigger) Strategy {
	s.Trigger = t
	return s
}

// WithMode returns s with the accumulation mode set.
func (s Strategy) WithMode(m Mode) Strategy {
	s.Mode = m
	return s
}

// Validate reports the first configuration error.
func (s Strategy) Validate() error {
	if s.Assigner == nil {
		return errors.New("window: no assigner")
	}
	if err := s.Assigner.Validate(); err != nil {
		return fmt.Errorf("window %s: %w", s.Assigner, err)
	}
	if err := s.Trigger.Validate(); err != nil {
		return fmt.Errorf("trigger: %w", err)
	}
	if s.AllowedLateness < 0 {
		return errors.New("allowed lateness must not be negative")
	}
	if s.Mode > Retracting {
		return errors.New("unknown accumulation mode")
	}
	return nil
}
