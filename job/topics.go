package job

import (
	"context"

	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/plan"
)

// TopicWarnings asks the brokers of the job's Kafka outputs (of every
// aggregation, each once) about their topics, as weir lint does before a
// run, within ctx: a topic that gets an aggregation's revised panes and is
// not compacted (revisions read as new events by an append-only consumer),
// and a missing topic the job would not create (weir run refuses to
// start). A broker that does not answer in time is said too: those topics
// are not checked.
func TopicWarnings(ctx context.Context, j *jobfile.Job) []string {
	var out []string
	for a, o := range j.EveryOutput() {
		k := o.Kafka
		if k == nil {
			continue
		}
		what := o.Field + " (" + o.Kind() + "): "
		c := k.KafkaConn
		c.Log = nil
		st, err := c.DescribeTopic(ctx, k.Topic)
		switch {
		case err != nil:
			out = append(out, what+"the brokers did not answer ("+text.ErrorText(err)+"): the topic was not checked")
		case !st.Exists && !k.Create:
			out = append(out, what+"the topic does not exist, and weir run refuses to start without it: create it, or give create: true")
		case st.Exists && !st.Compacted && len(a.Revisions()) > 0 && o.Role() == "results":
			out = append(out, what+kafka.NotCompacted)
		}
	}
	return out
}

// StoreWarnings asks the places the job's outputs of registered kinds write
// to whether they are there and answer (plan.Prober: an object store's
// bucket, with the job's credentials), as weir lint does before a run,
// within ctx: what each answered that a run would meet.
func StoreWarnings(ctx context.Context, j *jobfile.Job) []string {
	var out []string
	for _, o := range j.EveryOutput() {
		c, ok := o.Destination().(*jobfile.CustomOutput)
		if !ok {
			continue
		}
		p, ok := c.Config.(plan.Prober)
		if !ok {
			continue
		}
		if err := p.Probe(ctx); err != nil {
			out = append(out, o.Field+" ("+o.Kind()+"): "+text.ErrorText(err)+": weir run would meet it")
		}
	}
	return out
}
