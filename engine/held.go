package engine

import (
	"fmt"
	"sync/atomic"

	"github.com/weirstream/weir/checkpoint"
	"github.com/weirstream/weir/internal/text"
)

// heldOutput is what one sink holds in memory for its next pre-commit, as
// it last said (connector.Holder), for the source loop to read.
type heldOutput struct {
	name  string
	bytes atomic.Int64
}

// maxHeld is the bound on what a sink holds, or 0 for none.
func (e *Engine) maxHeld() int64 {
	switch m := e.cfg.Checkpoint.MaxHeld; {
	case m < 0 || e.store == nil:
		return 0
	case m == 0:
		return DefaultMaxHeld
	default:
		return m
	}
}

// setHeld records that h holds n bytes now, waking the source loop when
// that crosses the bound.
func (e *Engine) setHeld(h *heldOutput, n int64) {
	old := h.bytes.Swap(n)
	if m := e.maxHeld(); m > 0 && (old >= m) != (n >= m) {
		e.wakeHeld()
	}
}

func (e *Engine) wakeHeld() {
	select {
	case e.heldWake <- struct{}{}:
	default:
	}
}

// heldOver is the first sink that holds the bound or more, or nil.
func (e *Engine) heldOver() *heldOutput {
	m := e.maxHeld()
	if m <= 0 {
		return nil
	}
	for _, h := range e.held {
		if h.bytes.Load() >= m {
			return h
		}
	}
	return nil
}

// holdBack is called by the source loop before it reads: while a sink holds
// the bound or more, a checkpoint is started if none is under way (it takes
// the sink's output), and reading waits until the sink has handed its
// output over and, if it filled up again meanwhile, until that checkpoint is
// done. It says whether to read.
func (e *Engine) holdBack() bool {
	h := e.heldOver()
	if h == nil {
		return true
	}
	if e.coord.inflight.Load() == 0 {
		if !e.heldLog {
			e.heldLog = true
			e.log(fmt.Sprintf("%s holds %s for its next checkpoint, checkpoint.max_held_output is %s: a checkpoint is taken now, and whenever it fills up again before the interval", h.name, text.Size(h.bytes.Load()), text.Size(e.maxHeld())))
		}
		e.barrier(checkpoint.Periodic, nil)
	}
	return false
}

// heldStatus says why reading is paused for a sink's held output, or "".
func (e *Engine) heldStatus() string {
	h := e.heldOver()
	if h == nil {
		return ""
	}
	return fmt.Sprintf("%s holds %s for its next checkpoint (checkpoint.max_held_output is %s): reading is paused until the checkpoint takes it", h.name, text.Size(h.bytes.Load()), text.Size(e.maxHeld()))
}
