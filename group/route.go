package group

import (
	"fmt"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Route watches, in a task, that the events' keys belong to the task's
// partition by Kafka's default partitioner: when they do not, the input is
// not keyed by the job's key, and a key's events are split between tasks
// (each computing windows of its own). It checks one event in 64 (Sample),
// and says so once, in the task's log.
type Route struct {
	part, parts int32
	part0       kgo.TopicPartitioner
	n           int
	misrouted   atomic.Int64
	rec         kgo.Record
	// Log takes the warning (default: the task's log).
	Log func(string)
}

func newRoute(t *Task) *Route {
	r := &Route{part: t.Partition, parts: t.Partitions, part0: kgo.StickyKeyPartitioner(nil).ForTopic(t.Topic)}
	r.Log = func(s string) { fmt.Fprintf(t.Log, "weir: %s\n", s) }
	return r
}

// Sample says whether the next event is one to Check: one in 64. A Route
// is used by one goroutine, the one that decodes the task's input.
func (r *Route) Sample() bool {
	r.n++
	return r.n&63 == 1
}

// Check checks the event at offset whose key, as a producer keyed by it
// writes it, is key; shown is the key as the warning shows it.
func (r *Route) Check(key []byte, shown string, offset int64) {
	r.rec.Key = key
	if p := int32(r.part0.Partition(&r.rec, int(r.parts))); p != r.part {
		if r.misrouted.Add(1) == 1 {
			r.Log(fmt.Sprintf("warning: the event at offset %d has the key %s, which Kafka's default partitioner (murmur2) puts in partition %d, not %d: the input is not keyed by the job's key, so a key's events are split between tasks and each computes windows of its own; key the input by it, or set source.kafka.repartition: true", offset, shown, p, r.part))
		}
	}
	r.rec.Key = nil
}

// Misrouted counts the sampled events that did not belong to the task.
func (r *Route) Misrouted() int64 { return r.misrouted.Load() }
