package job

import (
	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/jobfile"
)

// Decoder decodes records of j's source as a run's head does: its format,
// its line rules (time, key, id, partition, where, derived fields) and the
// values its aggregates read, one record at a time. It is what weir bench
// measures of each format; a run decodes in its head, in batches.
type Decoder struct {
	lp *lineParser
	d  engine.Decoded[string, record]
}

// NewDecoder is the decoder of the records of j's source (a topic's, or a
// registered kind's: a file of a format is read whole, not record by
// record).
func NewDecoder(j *jobfile.Job) (*Decoder, error) {
	lp := newLineParser(j)
	dec, err := newDecoder(j, func(string) {})
	if err != nil {
		return nil, err
	}
	lp.useDecoder(dec)
	return &Decoder{lp: lp}, nil
}

// Decode decodes r, and reports whether it is an event (not rejected, not
// a heartbeat nor a watermark line).
func (d *Decoder) Decode(r *connector.Record) bool {
	var zero engine.Decoded[string, record]
	d.d = zero
	d.d.Partition, d.d.Arrival = -1, r.Arrival
	d.lp.Decode(r, &d.d)
	return d.d.Kind == engine.Event
}
