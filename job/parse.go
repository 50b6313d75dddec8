package job

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/expression"
	"github.com/weirstream/weir/group"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/internal/jsontree"
	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/jobfile"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"github.com/weirstream/weir/source"
	"github.com/weirstream/weir/window"
)

// Quarantine reasons, as written in the quarantine file and the summary.
const (
	ReasonNotJSON      = "not_json"
	ReasonNoEventTime  = linedec.NoEventTime
	ReasonBadEventTime = linedec.BadEventTime
	ReasonImplausible  = linedec.Implausible
	ReasonFuture       = linedec.Future
	ReasonNoKey        = "no_key"
	ReasonBadKey       = "bad_key"
	ReasonKeyTooLong   = "key_too_long"
	ReasonNoID         = "no_id"
	ReasonNoVersion    = "no_version"
	ReasonBadVersion   = "bad_version"
	ReasonNoArrival    = linedec.NoArrival
	ReasonBadArrival   = linedec.BadArrival
	ReasonNoSent       = linedec.NoSent
	ReasonBadSent      = linedec.BadSent
	ReasonNoPartition  = "no_partition"
	ReasonBadValue     = "bad_value"
	ReasonBadWatermark = linedec.BadWatermark
	ReasonLineTooLong  = "line_too_long"
	// ReasonExpression: a derived field's expression or the where failed
	// on the line (a field it needs is missing, a type it cannot take).
	ReasonExpression = "expression_failed"
)

// maxSummed bounds the numbers a sum or an average adds up: no sum of
// fewer than 10^58 numbers below it reaches a float's range, so a pane's sum
// is never infinite (which JSON cannot write and tables would keep as Inf).
const maxSummed = 1e250

// maxLine is the longest line accepted; longer lines are quarantined, read
// past by the source without being held (source.Lines.SetMaxLine).
const maxLine = source.DefaultMaxLine

// parsed is one line, read.
type parsed struct {
	reason string // non-empty: the line is rejected
	detail string

	wmOnly bool // a line that only moves the scripted watermark
	wm     mtime.Time

	arrival    mtime.Time
	hasArrival bool

	ts  mtime.Time
	key string // canonical JSON of the key ("" without key)
	id  []byte // canonical id, type-prefixed (valid until the next parse)
	// version is the event's version_field
	version int64
	part    int
	rec     record
	// filtered: the where does not hold for it.
	filtered bool
	// heartbeat: a source's heartbeat (the job's heartbeat holds), ts its
	// time, part its partition.
	heartbeat bool
}

// lineParser reads the fields a job uses from a JSON line. It decodes with
// fastjson into a reused parser, so reading a line allocates nothing in the
// steady state: keys are interned, values go into slabs.
type lineParser struct {
	j       *jobfile.Job
	p       fastjson.Parser
	fields  []jobfile.Path // the distinct fields the aggregates read
	numeric []bool         // whether a field must be a number
	summed  []bool         // whether a sum or an average adds it up
	texted  []bool         // whether an aggregate reads its identity (value.text): count_distinct, first, last, top
	// times are the rules of the line's times; their latest event time is
	// the latest whose windows, and their allowed lateness, end before the
	// last instant weir can write (9999-12-31).
	times linedec.Rules
	agg   *aggs

	recTS    mtime.Time // the record's own timestamp (Kafka), for record_timestamp
	keys     *keyTable
	keyName  []byte // a top-level key's quoted name, for Ahead; nil otherwise
	keyBuf   []byte
	idBuf    []byte
	vals     []value        // slab
	text     []byte         // slab
	parts    map[string]int // partition identity -> number
	partIDs  []string       // identities, by number
	partKeys []string       // names (canonical JSON), by number

	route  *group.Route // in a task of a group job
	forked bool         // a fork (Fork): Decode does not Settle

	// The job's derived fields and where, this parser's own (a program
	// keeps what it makes while it evaluates), and the arena of the
	// fields' values, reset for each line.
	derive []*expression.Program
	where  *expression.Program
	beat   *expression.Program // the job's heartbeat
	// deletion says a temporal join's table record is a deletion.
	deletion *expression.Program
	arena    fastjson.Arena
	// The fields the rules read, each in a slot of its own (slots.go),
	// read once a record.
	slotted

	// format, when the source's records are not JSON lines, turns each
	// into the JSON object parse reads, in the slab formatBuf (format.go);
	// build, when it can, builds the object in tree without its text.
	format    plan.Decoder
	formatBuf []byte
	build     jsontree.Builder
	tree      jsontree.Tree
	find      jsontree.StringFinder // for Ahead: with a top-level key
	// proj, when the format can, reads the fields of a record without its
	// object (a job without expressions: they read objects).
	proj linedec.Projection
}

func newLineParser(j *jobfile.Job) *lineParser {
	lp := &lineParser{j: j, keys: newKeyTable(keyTableKeys(j.State.MemoryBudget, 1)), parts: map[string]int{}}
	if len(j.Key) == 1 {
		lp.keyName = text.AppendJSONString(nil, []byte(j.Key[0]))
	}
	if j.Format != nil {
		// Records of a format: the runnable gives the parser its decoder
		// (useDecoder); the key is read from the object it makes.
		lp.keyName = nil
	}
	lp.expressions()
	lp.agg = &aggs{list: j.Aggregates}
	for _, a := range j.Aggregates {
		if a.Kind == jobfile.AggCount {
			lp.agg.field = append(lp.agg.field, -1)
			continue
		}
		idx := -1
		for i, f := range lp.fields {
			if f.String() == a.Field.String() {
				idx = i
			}
		}
		if idx < 0 {
			idx = len(lp.fields)
			lp.fields = append(lp.fields, a.Field)
			lp.numeric = append(lp.numeric, false)
			lp.summed = append(lp.summed, false)
			lp.texted = append(lp.texted, false)
		}
		switch a.Kind {
		case jobfile.AggCountField:
		case jobfile.AggCountDistinct, jobfile.AggApproxDistinct, jobfile.AggFirst, jobfile.AggLast, jobfile.AggTop:
			lp.texted[idx] = true
		default:
			lp.numeric[idx] = true
		}
		if a.Kind == jobfile.AggSum || a.Kind == jobfile.AggAvg {
			lp.summed[idx] = true
		}
		lp.agg.field = append(lp.agg.field, idx)
	}
	lp.times = linedec.Rules{
		Time: j.TimeField, RecordTime: j.RecordTime, Ingestion: j.Ingestion, Arrival: j.ArrivalField, Sent: j.SentField, Watermark: j.WMField,
		MaxFuture: j.MaxFuture,
		Latest:    latestEventTime(j), LatestDetail: "its windows would end after 9999-12-31, the last instant weir writes",
	}
	lp.layout()
	return lp
}

// latestEventTime is the latest event time of a job whose every window ends,
// with its allowed lateness, before the last instant weir can write: a
// later one would be counted in a window that no output can hold.
func latestEventTime(j *jobfile.Job) mtime.Time {
	return mtime.MaxTime - window.Length(j.Window.Assigner) - j.Window.AllowedLateness - 1
}

func get(v *fastjson.Value, p jobfile.Path) *fastjson.Value { return source.Get(v, p) }

// Decode implements engine.Decoder: it reads one line of the input. In a
// live job r.Arrival is the time the line was taken; in a replay the line's
// arrival field gives it.
func (lp *lineParser) Decode(r *connector.Record, d *engine.Decoded[string, record]) {
	lp.decode(r, d)
	if !lp.forked {
		lp.Settle(r, d)
	}
}

// Fork implements engine.ForkingDecoder: a parser of its own (its own key
// table and slabs) for another goroutine. A job with a partition field is
// not forked: its partitions are numbered in order of first appearance as
// the line is read.
func (lp *lineParser) Fork() engine.Decoder[string, record] {
	if lp.j.PartitionField != nil {
		return nil
	}
	keys := newKeyTable(lp.keys.max)
	keys.off = lp.keys.off
	f := &lineParser{j: lp.j, fields: lp.fields, numeric: lp.numeric, summed: lp.summed, texted: lp.texted, times: lp.times, agg: lp.agg,
		keys: keys, keyName: lp.keyName, forked: true, format: lp.format, build: lp.build, find: lp.find, proj: lp.proj,
		slotted: lp.slotted.fork()}
	f.expressions()
	return f
}

// expressions gives the parser programs of its own of the job's derived
// fields and where.
func (lp *lineParser) expressions() {
	j := lp.j
	lp.derive = nil
	for _, f := range j.Fields {
		lp.derive = append(lp.derive, f.Expr.Clone())
	}
	if j.Where != nil {
		lp.where = j.Where.Clone()
	}
	if j.Heartbeat != nil {
		lp.beat = j.Heartbeat.Clone()
	}
	if j.Deletion != nil {
		lp.deletion = j.Deletion.Clone()
	}
}

// decodeOn sets the size of the key tables of lp and of its forks for
// decoders goroutines, which share the budget of key tables; before lp
// decodes or forks. With more than one, lp decodes the small batches
// itself: one table more than decoders.
func (lp *lineParser) decodeOn(decoders int) {
	tables := decoders
	if decoders > 1 {
		tables++
	}
	lp.keys.max = keyTableKeys(lp.j.State.MemoryBudget, tables)
}

// Ahead implements engine.Aheader: it finds a top-level key's string in the
// line without parsing it and asks for its slot in the key table, so that
// decoding the line finds the slot in the cache.
func (lp *lineParser) Ahead(r *connector.Record) {
	if lp.keys.off {
		return // no table to ask (a join's keys)
	}
	if lp.find != nil {
		// A record of a format: its key's string found by the format.
		if raw, ok := lp.find.String(r.Value, lp.j.Key[0]); ok {
			lp.keys.prefetch(raw)
		}
		return
	}
	if lp.keyName == nil {
		return
	}
	if raw, ok := keyAhead(r.Value, lp.keyName); ok {
		lp.keys.prefetch(raw)
	}
}

// Settle implements engine.ForkingDecoder: in arrival order, the sample of
// a group task's routing.
func (lp *lineParser) Settle(r *connector.Record, d *engine.Decoded[string, record]) {
	if d.Kind == engine.Event && lp.route != nil && lp.route.Sample() {
		// As a producer keyed by it wrote it.
		lp.route.Check([]byte(keyValue(d.Key)), d.Key, r.Offset)
	}
}

// decode is Decode without Settle: what a fork does.
func (lp *lineParser) decode(r *connector.Record, d *engine.Decoded[string, record]) {
	if isBlank(r.Value) && (lp.format == nil || len(r.Value) == 0) {
		d.Kind = engine.Blank
		return
	}
	lp.recTS = r.Timestamp
	if r.Cut != nil {
		d.Kind, d.Reason, d.Detail = engine.Rejected, ReasonLineTooLong, fmt.Sprintf("%d bytes, longer than the %d a line may have", r.Cut.Length, maxLine)
		d.Arrival = mtime.MinTime
		return
	}
	var p parsed
	if lp.proj != nil && lp.project(r) {
		p = lp.read(nil, r.Value, r.Arrival)
		p.rec.encoded = true
	} else if v := lp.buildTree(r); v != nil {
		p = lp.readJSON(v, r.Value, r.Arrival)
		p.rec.encoded = true
	} else {
		value := r.Value
		if lp.format != nil {
			var ok bool
			if value, ok = lp.formatDecode(r, d); !ok {
				return
			}
		}
		p = lp.parse(value, r.Arrival)
	}
	d.Arrival = mtime.MinTime
	if p.hasArrival {
		d.Arrival = p.arrival
	}
	switch {
	case p.reason != "":
		d.Kind, d.Reason, d.Detail = engine.Rejected, p.reason, p.detail
	case p.wmOnly:
		d.Kind, d.Watermark = engine.WatermarkOnly, p.wm
	case p.heartbeat:
		d.Kind, d.Time = engine.Heartbeat, p.ts
		if lp.j.PartitionField != nil {
			d.Partition = p.part
		}
	default:
		d.Kind, d.Time, d.Key, d.ID, d.Filtered, d.Version = engine.Event, p.ts, p.key, p.id, p.filtered, p.version
		if lp.j.PartitionField != nil {
			d.Partition = p.part
		}
		p.rec.line, p.rec.part, p.rec.ts = r.Offset, int32(r.Partition), p.ts
		d.Value = p.rec
	}
}

// partitionField is the record's value of the job's partition field (its
// slot): nil without one, and not ok when the record lacks it or it is not
// a scalar.
func (lp *lineParser) partitionField() (part *source.Value, ok bool) {
	if lp.sPart < 0 {
		return nil, true
	}
	part = &lp.slots[lp.sPart]
	return part, linedec.IsScalar(part)
}

// PartitionNames implements engine.PartitionNamer: with a partition field,
// the partitions are its values, in order of first appearance.
// A string value is named without its quotes.
func (lp *lineParser) PartitionNames() ([]string, bool) {
	names := make([]string, len(lp.partKeys))
	for i, k := range lp.partKeys {
		names[i] = keyValue(k)
	}
	return names, lp.j.PartitionField != nil
}

// AppendState implements engine.StatefulDecoder: the partition numbering.
func (lp *lineParser) AppendState(b []byte) []byte {
	b = enc.AppendUvarint(b, uint64(len(lp.partKeys)))
	for i, k := range lp.partKeys {
		b = enc.AppendString(b, lp.partIDs[i])
		b = enc.AppendString(b, k)
	}
	return b
}

// RestoreState implements engine.StatefulDecoder.
func (lp *lineParser) RestoreState(d *enc.Decoder) error {
	n := d.Items(1 << 24)
	for range n {
		id, k := d.String(), d.String()
		if _, dup := lp.parts[id]; dup {
			return fmt.Errorf("partition %s numbered twice", k)
		}
		lp.parts[id] = len(lp.partKeys)
		lp.partIDs = append(lp.partIDs, id)
		lp.partKeys = append(lp.partKeys, k)
	}
	return d.Err()
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// parse reads a line. now is the processing time to use when the job has no
// arrival field.
func (lp *lineParser) parse(text []byte, now mtime.Time) (out parsed) {
	if len(text) > maxLine {
		out.reason = ReasonLineTooLong
		return out
	}
	v, err := lp.p.ParseBytes(text)
	if err != nil || v.Type() != fastjson.TypeObject {
		out.reason = ReasonNotJSON
		return out
	}
	return lp.readJSON(v, text, now)
}

// readJSON reads a line's object v (a record's, when a format builds it);
// raw is what its record keeps of it (the line, or a record of a format).
func (lp *lineParser) readJSON(v *fastjson.Value, raw []byte, now mtime.Time) (out parsed) {
	j := lp.j
	if len(lp.derive) > 0 {
		// The derived fields join the line, each as a field of its own,
		// before anything else of it is read.
		lp.arena.Reset()
		for i, prog := range lp.derive {
			val, err := prog.Eval(v)
			if err != nil {
				out.reason, out.detail = ReasonExpression, fmt.Sprintf("fields.%s (%s): %v", j.Fields[i].Name, prog, err)
				return out
			}
			expression.Set(v, j.Fields[i].Name, val, &lp.arena)
		}
	}
	lp.fillJSON(v)
	return lp.read(v, raw, now)
}

// read reads a record by its fields, in lp's slots; v is its JSON object,
// which the job's expressions read (nil when it has none: its fields are
// read without one); raw is what its record keeps of it.
func (lp *lineParser) read(v *fastjson.Value, raw []byte, now mtime.Time) (out parsed) {
	j := lp.j
	var t linedec.Times
	lp.times.Read(&t, lp.timeFields(), now, lp.recTS)
	out.arrival, out.hasArrival = t.Arrival, t.HasArrival
	switch t.Kind {
	case linedec.Rejected:
		out.reason, out.detail = t.Reason, t.Detail
		return out
	case linedec.Watermark:
		out.wmOnly, out.wm = true, t.Watermark
		return out
	}
	out.ts = t.Time
	if lp.beat != nil {
		// A heartbeat has a time (and a partition), never a key, an id or
		// values: it is told apart before they are read.
		beat, err := lp.beat.Holds(v)
		if expression.IsMissing(err) {
			// Without the field a heartbeat has: an event.
			beat, err = false, nil
		}
		if err != nil {
			out.reason, out.detail = ReasonExpression, fmt.Sprintf("heartbeat (%s): %v", lp.beat, err)
			return out
		}
		if beat {
			part, ok := lp.partitionField()
			if !ok {
				out.reason = ReasonNoPartition
				return out
			}
			if part != nil {
				out.part = lp.partition(part)
			}
			out.heartbeat = true
			return out
		}
	}
	if j.KeyParts != nil {
		key, reason, detail := lp.compositeKey()
		if reason != "" {
			out.reason, out.detail = reason, detail
			return out
		}
		out.key = key
	} else if j.Key != nil {
		k := &lp.slots[lp.sKey]
		if !linedec.IsScalar(k) {
			out.reason = ReasonNoKey
			if k.Type == source.Number {
				out.reason, out.detail = ReasonBadKey, j.Key.String()+" is not a JSON number"
			}
			return out
		}
		if k.Type == source.String {
			if n := len(k.Text); int64(n) > j.KeyBytesLimit() {
				// An output may hold a key of a bounded size only (an
				// index, a message): the line is set aside, not the output.
				out.reason, out.detail = ReasonKeyTooLong, fmt.Sprintf("%s is %d bytes, more than max_key_bytes (%d)", j.Key.String(), n, j.KeyBytesLimit())
				return out
			}
		}
		key, ok := lp.keys.intern(k)
		if !ok {
			// Written as JSON, two different keys would read the same.
			out.reason, out.detail = ReasonBadKey, j.Key.String()+" is not valid UTF-8"
			return out
		}
		if n := len(key); k.Type == source.Number && int64(n) > j.KeyBytesLimit() {
			// A number is written in all its digits: 1e400 is 401 bytes.
			out.reason, out.detail = ReasonKeyTooLong, fmt.Sprintf("%s is %d bytes written in full, more than max_key_bytes (%d)", j.Key.String(), n, j.KeyBytesLimit())
			return out
		}
		out.key = key
	}
	if j.ID != nil {
		id := &lp.slots[lp.sID]
		if !linedec.IsScalar(id) {
			out.reason = ReasonNoID
			return out
		}
		lp.idBuf = linedec.AppendIdentity(lp.idBuf[:0], id)
		out.id = lp.idBuf
	}
	if j.VersionField != nil {
		var reason, detail string
		out.version, reason, detail = readVersion(&lp.slots[lp.sVersion], j.VersionField)
		if reason != "" {
			out.reason, out.detail = reason, detail
			return out
		}
	}
	part, ok := lp.partitionField()
	if !ok {
		out.reason = ReasonNoPartition
		return out
	}
	if lp.where != nil {
		// After the line's validation (its times, key, id and partition)
		// and before its values are read: an event the where leaves out
		// is only de-duplicated and counted.
		keep, err := lp.where.Holds(v)
		if err != nil {
			out.reason, out.detail = ReasonExpression, fmt.Sprintf("where (%s): %v", lp.where, err)
			return out
		}
		if !keep {
			if part != nil {
				out.part = lp.partition(part)
			}
			out.filtered, out.rec = true, record{raw: raw}
			return out
		}
	}
	deleted := false
	if lp.deletion != nil {
		// A temporal join's table: a record without the fields the
		// expression reads is a version, not a deletion.
		var err error
		if deleted, err = lp.deletion.Holds(v); expression.IsMissing(err) {
			deleted, err = false, nil
		}
		if err != nil {
			out.reason, out.detail = ReasonExpression, fmt.Sprintf("deletion (%s): %v", lp.deletion, err)
			return out
		}
	}
	// The values the aggregates read.
	if len(lp.vals) < len(lp.fields) {
		lp.vals = make([]value, max(4096, len(lp.fields)))
	}
	vals := lp.vals[:len(lp.fields):len(lp.fields)]
	lp.vals = lp.vals[len(lp.fields):]
	for i, p := range lp.fields {
		fv := &lp.slots[lp.sFields[i]]
		vals[i] = value{}
		switch fv.Type {
		case source.Absent:
			continue
		case source.Number:
			raw := fv.Text
			if !linedec.IsScalar(fv) {
				out.reason, out.detail = ReasonBadValue, p.String()+" is not a JSON number ("+string(raw)+")"
				return out
			}
			// An integer's float is the one its text reads as: it rounded
			// once.
			n, isInt := fv.Int64()
			fl := float64(n)
			if !isInt {
				fl = fv.Float()
			}
			if lp.numeric[i] && math.IsInf(fl, 0) {
				// A distinct value has an exact identity at any size;
				// what a number aggregate reads must be a float's.
				out.reason, out.detail = ReasonBadValue, p.String()+" is too large for a number ("+string(raw)+")"
				return out
			}
			if lp.summed[i] && math.Abs(fl) >= maxSummed {
				out.reason, out.detail = ReasonBadValue, "overflow: "+p.String()+" is too large to be added up ("+string(raw)+"): a sum of such numbers could be infinite"
				return out
			}
			if isInt {
				vals[i] = value{kind: vInt, i: n, f: fl, dec: n, exact: true}
			} else {
				vals[i] = value{kind: vFloat, f: fl}
				vals[i].dec, vals[i].scale, vals[i].exact = parseDecimal(raw)
			}
			if lp.texted[i] {
				lp.keyBuf = linedec.AppendIdentity(lp.keyBuf[:0], fv)
				vals[i].text = lp.keepText(lp.keyBuf)
			}
		default:
			if lp.numeric[i] || !linedec.IsScalar(fv) {
				out.reason, out.detail = ReasonBadValue, p.String()+" is not a number"
				if !lp.numeric[i] {
					out.detail = p.String() + " is not a string, number or boolean"
				}
				return out
			}
			lp.keyBuf = linedec.AppendIdentity(lp.keyBuf[:0], fv)
			vals[i] = value{kind: vText, text: lp.keepText(lp.keyBuf)}
		}
	}
	if part != nil {
		// Only now, when the line is an event: a rejected line must not make
		// a partition that would hold the watermark back.
		out.part = lp.partition(part)
	}
	out.rec = record{raw: raw, vals: vals, deleted: deleted}
	return out
}

// ReadVersion reads the version of an event from its field f, as weir run
// reads it (version_field): the version, or the quarantine reason and
// detail of a line without a valid one.
func ReadVersion(v *fastjson.Value, f jobfile.Path) (version int64, reason, detail string) {
	var slab []byte
	x := source.ValueOf(v, &slab)
	return readVersion(&x, f)
}

// readVersion reads the version of an event: an integer, or a string that
// holds one in decimal digits ("12"), compared as that integer; anything
// else (a fraction, a date, "v2") is a bad version, and none is no version.
func readVersion(v *source.Value, f jobfile.Path) (int64, string, string) {
	switch v.Type {
	case source.Absent:
		return 0, ReasonNoVersion, f.String() + " is missing"
	case source.Number:
		if n, ok := v.Int64(); ok {
			return n, "", ""
		}
		return 0, ReasonBadVersion, fmt.Sprintf("%s is %s, not an integer of 64 bits", f, v.Text)
	case source.String:
		t := v.Text
		if n, err := strconv.ParseInt(string(t), 10, 64); err == nil && len(t) > 0 && t[0] != '+' {
			return n, "", ""
		}
		return 0, ReasonBadVersion, fmt.Sprintf("%s is %q, not an integer of 64 bits in decimal digits", f, t)
	}
	return 0, ReasonBadVersion, f.String() + " is not an integer"
}

// compositeKey is the key of a job with a composite key: its fields'
// canonical values as a JSON array, interned; or why the line has none.
func (lp *lineParser) compositeKey() (key, reason, detail string) {
	j := lp.j
	b := append(lp.keyBuf[:0], '[')
	for i, f := range j.KeyParts {
		k := &lp.slots[lp.sKeyParts[i]]
		if !linedec.IsScalar(k) {
			switch k.Type {
			case source.Absent:
				return "", ReasonNoKey, f.String() + " is missing"
			case source.Number:
				return "", ReasonBadKey, f.String() + " is not a JSON number"
			}
			return "", ReasonNoKey, f.String() + " is not a string, number or boolean"
		}
		if k.Type == source.String && !utf8.Valid(k.Text) {
			return "", ReasonBadKey, f.String() + " is not valid UTF-8"
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = linedec.AppendCanonical(b, k)
	}
	b = append(b, ']')
	lp.keyBuf = b
	if n := len(b); int64(n) > j.KeyBytesLimit() {
		return "", ReasonKeyTooLong, fmt.Sprintf("%s is %d bytes written in full, more than max_key_bytes (%d)", j.KeyName(), n, j.KeyBytesLimit())
	}
	return lp.keys.canonical(b), "", ""
}

// partition numbers a partition value, in order of first appearance.
func (lp *lineParser) partition(v *source.Value) int {
	lp.keyBuf = linedec.AppendIdentity(lp.keyBuf[:0], v)
	p, ok := lp.parts[string(lp.keyBuf)]
	if !ok {
		p = len(lp.partKeys)
		lp.parts[string(lp.keyBuf)] = p
		lp.partIDs = append(lp.partIDs, string(lp.keyBuf))
		lp.partKeys = append(lp.partKeys, string(linedec.AppendCanonical(nil, v)))
	}
	return p
}

// parseDecimal reads a plain decimal number ("-12.50") as digits and a
// scale; ok is false for exponents, more than 18 digits or more than 18
// decimals.
func parseDecimal(b []byte) (d int64, scale int8, ok bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	digits, point := 0, false
	for _, c := range b {
		switch {
		case c == '.' && !point:
			point = true
		case c >= '0' && c <= '9':
			if digits == 18 {
				return 0, 0, false
			}
			d = d*10 + int64(c-'0')
			if d != 0 {
				digits++
			}
			if point {
				scale++
			}
		default:
			return 0, 0, false
		}
	}
	if neg {
		d = -d
	}
	return d, scale, scale <= 18
}

func (lp *lineParser) keepText(b []byte) []byte {
	if len(lp.text) < len(b) {
		lp.text = make([]byte, max(64<<10, len(b)))
	}
	t := lp.text[:len(b):len(b)]
	copy(t, b)
	lp.text = lp.text[len(b):]
	return t
}
