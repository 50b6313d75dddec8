package job

import (
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

// deadRecord is a pane or a too-late event an output refused, as the
// dead_letter output writes it.
type deadRecord struct {
	Sink, Reason string
	Kind         string // "pane" or "late"
	At           mtime.Time
	Key          []byte // the Kafka key of the item
	JSON         []byte // the item as its output would have written it
}

// appendDead formats a dead-letter record as a JSON line.
func (f *format) appendDead(b []byte, d deadRecord) []byte {
	b = append(b, `{"reason":"refused","output":`...)
	b = text.AppendJSONString(b, []byte(d.Sink))
	b = append(b, `,"error":`...)
	b = text.AppendJSONString(b, []byte(d.Reason))
	b = append(b, `,"set_aside_at":`...)
	b = appendTime(b, d.At)
	b = append(b, ',', '"')
	b = append(b, d.Kind...)
	b = append(b, '"', ':')
	b = append(b, d.JSON...)
	return append(b, '}', '\n')
}

// deadID is a dead-letter record's identity: the output, and the item.
func deadID(d deadRecord) uint64 {
	return uint64(newIdentity().string(d.Sink).string(d.Kind).bytes(d.JSON))
}

// deadLetters gathers what every output of the window stage refuses into
// the dead_letter output. The outputs are fed by one goroutine, and each
// passes every signal on after the items before it: a signal goes on once
// every output has passed it, so that a checkpoint holds the refusals of
// the items it holds.
type deadLetters struct {
	next   engine.Consumer[deadRecord]
	inputs int
	seen   map[engine.SignalKind]int
	bars   map[uint64]int
}

func newDeadLetters(next engine.Consumer[deadRecord]) *deadLetters {
	return &deadLetters{next: next, seen: map[engine.SignalKind]int{}, bars: map[uint64]int{}}
}

func (d *deadLetters) signal(s engine.Signal) {
	switch s.Kind {
	case engine.Proc, engine.Watermark:
		return
	case engine.Flush:
		d.next.Signal(s)
		return
	case engine.Barrier:
		id := s.Barrier.ID
		if d.bars[id]++; d.bars[id] < d.inputs {
			return
		}
		delete(d.bars, id)
	default:
		if d.seen[s.Kind]++; d.seen[s.Kind] < d.inputs {
			return
		}
	}
	d.next.Signal(s)
}

// addPanes takes the refusals of a results output.
func (d *deadLetters) addPanes(n *engine.SinkNode[pane], f *format) {
	d.inputs++
	n.Refusals().Subscribe(engine.Func[engine.Refused[pane]]{
		OnPush: func(r engine.Refused[pane]) {
			key, _ := f.paneRecord(r.Item)
			line := f.appendPane(nil, r.Item)
			d.next.Push(deadRecord{Sink: r.Sink, Reason: r.Reason, Kind: "pane", At: r.Item.EmittedAt, Key: key, JSON: line[:len(line)-1]})
		},
		OnSignal: d.signal,
	})
}

// addLate takes the refusals of the late output, its events formatted.
func (d *deadLetters) addLate(n *engine.SinkNode[plan.Item]) {
	d.inputs++
	n.Refusals().Subscribe(engine.Func[engine.Refused[plan.Item]]{
		OnPush: func(r engine.Refused[plan.Item]) {
			d.next.Push(deadRecord{Sink: r.Sink, Reason: r.Reason, Kind: "late", At: r.Item.At, Key: r.Item.Key, JSON: r.Item.JSON})
		},
		OnSignal: d.signal,
	})
}

// refused are the refusals of the job's outputs, by field, for the
// summary (nil if none).
func (rn *Runnable) refused() map[string]int64 {
	m := map[string]int64{}
	add := func(field string, n int64) {
		if n > 0 {
			m[field] = n
		}
	}
	for i, n := range rn.outs {
		add(rn.j.Outputs[i].Field, n.RefusedCount())
	}
	if rn.late != nil {
		add(rn.j.Late.Field, rn.late.RefusedCount())
	}
	if len(m) == 0 {
		return nil
	}
	return m
}
