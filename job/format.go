package job

import (
	"errors"
	"fmt"
	"io"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/formats"
	"github.com/weirstream/weir/internal/jsontree"
	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

// A source's records are JSON lines unless the source names a format
// registered in package plan (source: {kafka: {...}, format: avro,
// registry: {url: ...}}): its decoder turns each record into the JSON
// object the line rules read, which parse then reads as it reads a line.
// A record the decoder refuses is quarantined with the decoder's reason,
// its raw bytes and its place (partition and offset), and the job goes on.

// sourceDecoder is the decoder of the records of the job's source (its log
// lines in the job's log): the group's, or one of its own; nil for JSON
// lines. It is safe for concurrent use: every aggregation of the job, which
// reads the one source, reads its records with it.
func (rn *Runnable) sourceDecoder() (plan.Decoder, error) {
	if rn.o.decoder != nil {
		return rn.o.decoder, nil
	}
	return newDecoder(rn.j, func(s string) { rn.logf("%s", rn.j.Redact(s)) })
}

// useDecoder has the parser read its records with dec, the source's
// format's decoder (nil: JSON lines).
func (lp *lineParser) useDecoder(dec plan.Decoder) {
	lp.format = dec
	lp.build, _ = dec.(jsontree.Builder)
	lp.find = nil
	if len(lp.j.Key) == 1 && lp.j.KeyParts == nil {
		lp.find, _ = dec.(jsontree.StringFinder)
	}
	lp.proj = nil
	if p, ok := dec.(linedec.Projector); ok && len(lp.derive) == 0 && lp.where == nil && lp.beat == nil && lp.deletion == nil {
		lp.proj = p.Project(lp.paths)
	}
}

// project reads the fields of a record of a format that reads them without
// its object into the slots; not ok for one to read from its object.
func (lp *lineParser) project(r *connector.Record) bool {
	lp.slab = lp.slab[:0]
	return lp.proj.Read(r.Value, lp.slots, &lp.slab, maxLine)
}

// buildTree is the object of a record of a format that builds it without
// its text, or nil: a record to read from its text (also one that does not
// decode, whose reason formatDecode gives, and one whose text would be
// longer than a line may be, which parse refuses).
func (lp *lineParser) buildTree(r *connector.Record) *fastjson.Value {
	if lp.build == nil {
		return nil
	}
	lp.tree.Reset()
	v := lp.build.Build(&lp.tree, r.Value)
	if v == nil || lp.tree.Len() > maxLine {
		return nil
	}
	return v
}

// recordText is the JSON text of an event's record: its raw text, or, for a
// record of the source's format built without it (record.encoded), the
// text the format writes of it.
func (lp *lineParser) recordText(r record) ([]byte, error) {
	if !r.encoded {
		return r.raw, nil
	}
	return lp.format.AppendJSON(nil, r.raw)
}

// json is raw's JSON text: raw itself, or the text of a record of the
// source's format (record.encoded), made in f's buffer; not ok if the
// format no longer reads it.
func (f *format) json(raw []byte, encoded bool) ([]byte, bool) {
	if !encoded {
		return raw, true
	}
	if f.dec == nil {
		return raw, false
	}
	out, err := f.dec.AppendJSON(f.buf[:0], raw)
	if err != nil {
		return raw, false
	}
	f.buf = out
	return out, true
}

// newDecoder builds the decoder of the records of j's source when they are
// of a format (a topic's, a registered kind's source's, a file's whose rows
// are read as their records: formats.RawFileFormat), or nil: JSON lines, or
// a file of a format read as JSON rows. The grammar checked its
// settings (plan.RecordsChecker), so an error here is the run's.
func newDecoder(j *jobfile.Job, log func(string)) (plan.Decoder, error) {
	f := j.Format
	if f == nil {
		return nil, nil
	}
	if file := f.File(); file != nil {
		// A file of a format whose rows can be read as their records.
		raw, ok := file.(formats.RawFileFormat)
		if !ok {
			return nil, nil
		}
		dec, err := raw.RowDecoder(j.Input)
		if err != nil {
			return nil, &RuntimeError{Msg: fmt.Sprintf("%s: source: %s: %v", j.File, j.Input, err), Err: err}
		}
		return dec, nil
	}
	topic := ""
	if j.Kafka != nil {
		topic = j.Kafka.Topic
	}
	dec, err := f.Config.New(plan.Env{Job: j.Name, Field: "source", Log: log}, topic)
	if err != nil {
		return nil, &RuntimeError{Msg: fmt.Sprintf("%s: source.format: %v", j.File, j.Redact(err.Error())), Err: err}
	}
	return dec, nil
}

// formatDecode turns a record of the source's format into the JSON object
// the line rules read, kept in the parser's slab (an event keeps it as its
// raw text: what its late output writes). A record the format refuses is
// rejected with its reason.
func (lp *lineParser) formatDecode(r *connector.Record, d *engine.Decoded[string, record]) ([]byte, bool) {
	if cap(lp.formatBuf)-len(lp.formatBuf) < 4<<10 {
		// A new slab: the old one stays with the records that hold it.
		lp.formatBuf = make([]byte, 0, 64<<10)
	}
	out, err := lp.format.AppendJSON(lp.formatBuf[:0], r.Value)
	if err != nil {
		var bad *plan.BadRecord
		if !errors.As(err, &bad) {
			bad = &plan.BadRecord{Reason: ReasonNotDecodable, Detail: err.Error()}
		}
		d.Kind, d.Reason, d.Detail = engine.Rejected, bad.Reason, bad.Detail
		d.Arrival = mtime.MinTime
		return nil, false
	}
	lp.formatBuf = out[len(out):]
	return out[:len(out):len(out)], true
}

// ReasonNotDecodable: a record of the source's format does not decode.
const ReasonNotDecodable = "not_decodable"

// sampleRows is SampleInput of a file of a format of its own: its first n
// rows, as weir run reads them.
func sampleRows(j *jobfile.Job, s *Sample, n int) (*Sample, error) {
	rows, err := j.Format.File().OpenFile(j.Input)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	s.Source = j.InputName()
	lp := newLineParser(j)
	now := mtime.Now()
	for s.Lines < int64(n) {
		row, place, err := rows.Next(nil)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		r := connector.Record{Value: row, Offset: place, Arrival: now, Timestamp: mtime.MinTime}
		var d engine.Decoded[string, record]
		lp.Decode(&r, &d)
		s.observe(row, d.Kind, d.Reason, place)
		s.key(&d)
	}
	return s, nil
}

// formatDecoder is the decoder of the source's format of the job's aggregation
// (nil: JSON lines, or a join, whose records keep their JSON text).
func (rn *Runnable) formatDecoder() plan.Decoder {
	if rn.lp == nil {
		return nil
	}
	return rn.lp.format
}
