package lateness

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/valyala/fastjson"

	"github.com/weirstream/weir/formats"
	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/source"
)

// producer reads an input and hands its batches to emit, in input order,
// until emit returns false.
type producer func(p *pool, emit func(*batch) bool) error

// errStopped ends a producer whose consumer stopped.
var errStopped = errors.New("lateness: stopped")

// maxLine is the longest JSON line weir run accepts.
const maxLine = source.DefaultMaxLine

// openInput opens the input of c, checks that the fields it names exist
// where a schema says so (CSV header, Parquet schema), and returns its
// producer.
func openInput(c *config, stdin io.Reader) (producer, io.Closer, error) {
	var f *os.File
	var r io.Reader
	if c.path == "-" {
		r = stdin
	} else {
		var err error
		f, err = os.Open(c.path)
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, nil, usagef("cannot read %s: %v", c.path, err)
		}
		if st, err := f.Stat(); err == nil && st.IsDir() {
			f.Close()
			return nil, nil, usagef("%s is a directory, expected a file", c.path)
		}
		r = f
	}
	var prod producer
	var err error
	switch c.format {
	case FormatJSON:
		prod = func(p *pool, emit func(*batch) bool) error { return readJSON(r, c, p, emit) }
	case FormatCSV:
		prod, err = openCSV(r, c)
	case FormatParquet:
		prod, err = openParquet(f, c)
	case FormatAvro:
		prod, err = openRows(c, func() (formats.RowReader, error) { return formats.OpenAvroFile(c.path, "") })
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, nil, err
	}
	var closer io.Closer = io.NopCloser(nil)
	if f != nil {
		closer = f
	}
	return prod, closer, nil
}

// openRows reads a file of a format of weir run's (package formats): each
// row as the JSON object weir run reads, with weir run's rules.
func openRows(c *config, open func() (formats.RowReader, error)) (producer, error) {
	rows, err := open()
	if err != nil {
		return nil, usagef("cannot read %s: %v", c.path, err)
	}
	return func(p *pool, emit func(*batch) bool) error {
		defer rows.Close()
		jp := &jsonParser{c: c}
		var buf []byte
		var n int64 // the rows read, for a record's number
		return inBatches(p, emit, func(b *batch) (bool, error) {
			row, _, err := rows.Next(buf[:0])
			if errors.Is(err, io.EOF) {
				return false, nil
			}
			if err != nil {
				return false, fmt.Errorf("reading %s: %w", c.path, err)
			}
			buf = row
			n++
			rec := jp.line(row, b)
			rec.line = n
			b.recs = append(b.recs, rec)
			return true, nil
		})
	}, nil
}

// inBatches emits in batches of batchSize the records that add appends, one
// or none a call, until add says the input has ended.
func inBatches(p *pool, emit func(*batch) bool, add func(b *batch) (more bool, err error)) error {
	b := p.get()
	for {
		more, err := add(b)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		if len(b.recs) == batchSize {
			if !emit(b) {
				return errStopped
			}
			b = p.get()
		}
	}
	if len(b.recs) > 0 && !emit(b) {
		return errStopped
	}
	return nil
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' {
			return false
		}
	}
	return true
}

// readJSON splits r into lines in one goroutine, parses batches of them in
// as many goroutines as there are processors, and emits the batches in
// order.
func readJSON(r io.Reader, c *config, p *pool, emit func(*batch) bool) error {
	workers := max(1, runtime.GOMAXPROCS(0))
	type work struct {
		seq   int
		lines []source.Line
		b     *batch
	}
	in := make(chan *work, 2*workers)
	out := make(chan *work, 2*workers)
	stop := make(chan struct{})
	var readErr error
	go func() {
		defer close(in)
		lines := source.NewLines(r, 4<<20, 0, 0)
		lines.SetMaxLine(maxLine)
		seq := 0
		w := &work{lines: make([]source.Line, 0, batchSize)}
		flush := func() bool {
			w.seq = seq
			seq++
			select {
			case in <- w:
			case <-stop:
				return false
			}
			w = &work{lines: make([]source.Line, 0, batchSize)}
			return true
		}
		for {
			ln, ok := lines.Next()
			if !ok {
				break
			}
			w.lines = append(w.lines, ln)
			if len(w.lines) == batchSize && !flush() {
				return
			}
		}
		if len(w.lines) > 0 && !flush() {
			return
		}
		readErr = lines.Err()
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jp := &jsonParser{c: c}
			for w := range in {
				w.b = p.get()
				jp.parse(w.lines, w.b)
				w.lines = nil
				select {
				case out <- w:
				case <-stop:
					return
				}
			}
		}()
	}
	go func() {
		wg.Wait()
		close(out)
	}()
	pending := map[int]*batch{}
	next, stopped := 0, false
	for w := range out {
		if stopped {
			continue
		}
		pending[w.seq] = w.b
		for !stopped {
			b, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if !emit(b) {
				stopped = true
				close(stop)
			}
		}
	}
	if stopped {
		return errStopped
	}
	if readErr != nil {
		return fmt.Errorf("reading %s: %w", c.path, readErr)
	}
	return nil
}

// jsonParser reads the fields of JSON lines with weir run's rules.
type jsonParser struct {
	c    *config
	p    fastjson.Parser
	buf  []byte
	slab []byte // the texts of the line's numbers
}

func (jp *jsonParser) parse(lines []source.Line, b *batch) {
	for _, ln := range lines {
		if isBlank(ln.Text) {
			b.blank++
			continue
		}
		if ln.Cut != nil {
			b.recs = append(b.recs, record{w: 1, why: rLineTooLong, line: ln.No})
			continue
		}
		rec := jp.line(ln.Text, b)
		rec.line = ln.No
		b.recs = append(b.recs, rec)
	}
}

// line reads one line, in the order of weir run's checks: JSON object, its
// times (package linedec: arrival, watermark line, event time, plausible
// event time, arrival again, max_future), partition; then the weight and
// the groups, which weir run does not read.
func (jp *jsonParser) line(text []byte, b *batch) (rec record) {
	c := jp.c
	rec.w = 1
	if len(text) > maxLine {
		rec.why = rLineTooLong
		return rec
	}
	v, err := jp.p.ParseBytes(text)
	if err != nil || v.Type() != fastjson.TypeObject {
		rec.why = rNotJSON
		return rec
	}
	var t linedec.Times
	jp.slab = jp.slab[:0]
	tf := c.times.JSON(v, &jp.slab)
	c.times.Read(&t, &tf, 0, mtime.MinTime)
	rec.arr, rec.hasArrival = t.Arrival, t.HasArrival
	switch t.Kind {
	case linedec.Rejected:
		rec.why = reasonOf(t.Reason)
		return rec
	case linedec.Watermark:
		rec.why = rWatermarkLine
		return rec
	}
	rec.ts = t.Time
	var part span
	if c.partP != nil {
		pv := source.ValueOf(source.Get(v, c.partP), &jp.slab)
		if !linedec.IsScalar(&pv) {
			rec.why = rNoPartition
			return rec
		}
		// A partition is its value with its JSON type, as weir run numbers
		// them: "1" and 1 are two.
		jp.buf = linedec.AppendIdentity(jp.buf[:0], &pv)
		part = b.text(jp.buf)
	}
	// A weight field named: every line must have it. sample_weight by
	// default: a line without it weighs 1. Either way a line with anything
	// but a non-negative number there is rejected, as a CSV cell would be.
	wp, required := c.weightP, true
	if wp == nil && c.defWeight {
		wp, required = defaultWeightP, false
	}
	if wp != nil {
		wv := source.Get(v, wp)
		if wv != nil || required {
			if wv == nil || wv.Type() != fastjson.TypeNumber {
				rec.why = rBadWeight
				return rec
			}
			if rec.w = wv.GetFloat64(); !goodWeight(rec.w) {
				rec.why = rBadWeight
				return rec
			}
			rec.weighted = true
		}
	}
	for _, p := range c.byP {
		gv := source.Get(v, p)
		if gv == nil {
			b.groups = append(b.groups, b.text(missingText))
			continue
		}
		b.groups = append(b.groups, b.text(jp.value(gv)))
	}
	if c.partP != nil {
		b.groups = append(b.groups, part)
	}
	if c.matchP != nil {
		// The id of a ledger join: a string as is, a number as written;
		// missing, null, "", an object or an array: no id.
		mv := source.Get(v, c.matchP)
		if mv == nil || !linedec.Scalar(mv, &jp.buf) || (mv.Type() == fastjson.TypeString && len(mv.GetStringBytes()) == 0) {
			b.groups = append(b.groups, noSpan)
		} else {
			b.groups = append(b.groups, b.text(jp.value(mv)))
		}
	}
	return rec
}

// defaultWeightP is the path of DefaultWeightField.
var defaultWeightP = []string{DefaultWeightField}

// value is the text of a field for grouping: a string as is, anything else
// as JSON.
func (jp *jsonParser) value(v *fastjson.Value) []byte {
	if v.Type() == fastjson.TypeString {
		return v.GetStringBytes()
	}
	jp.buf = v.MarshalTo(jp.buf[:0])
	return jp.buf
}

func goodWeight(w float64) bool { return w >= 0 && !math.IsInf(w, 0) && !math.IsNaN(w) }

// parseTimeText reads a time written as text (CSV): RFC 3339, or a number
// of epoch milliseconds (a fraction is truncated), as source.Time reads
// JSON.
func parseTimeText(s string) (mtime.Time, bool) {
	if s == "" {
		return 0, false
	}
	if c := s[0]; c == '-' || c == '+' || c == '.' || (c >= '0' && c <= '9') {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			if i > int64(mtime.MaxTime) || i < int64(mtime.MinTime) {
				return 0, false
			}
			return mtime.Time(i), true
		}
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			if math.IsNaN(f) || math.IsInf(f, 0) || f > float64(mtime.MaxTime) || f < float64(mtime.MinTime) {
				return 0, false
			}
			return mtime.Time(math.Floor(f)), true
		}
	}
	t, err := mtime.Parse([]byte(s))
	return t, err == nil
}

// openCSV reads the header of a CSV file and checks the columns named.
func openCSV(r io.Reader, c *config) (producer, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if err != nil {
		if err == io.EOF {
			return nil, usagef("%s is empty: a CSV file needs a header row naming its columns", c.path)
		}
		return nil, usagef("cannot read the header of %s: %v", c.path, err)
	}
	header = append([]string(nil), header...)
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff")
	}
	cols := map[string]int{}
	for i, h := range header {
		if _, dup := cols[h]; !dup {
			cols[h] = i
		}
	}
	col := func(what, name string) (int, error) {
		if i, ok := cols[name]; ok {
			return i, nil
		}
		return 0, usagef("%s has no column %q for %s (its columns: %s)", c.path, name, what, strings.Join(header, ", "))
	}
	tsCol, err := col(c.timeWhat(), c.TimeField)
	if err != nil {
		return nil, err
	}
	arrCol, err := col("the arrival time", c.ArrivalField)
	if err != nil {
		return nil, err
	}
	sentCol := -1
	if c.SentField != "" && !c.ledger {
		if sentCol, err = col("the send time", c.SentField); err != nil {
			return nil, err
		}
	}
	partCol, wCol := -1, -1
	if c.PartitionField != "" {
		if partCol, err = col("the partition", c.PartitionField); err != nil {
			return nil, err
		}
	}
	switch {
	case c.NoWeight:
	case c.Weight != "":
		if wCol, err = col("the weight", c.Weight); err != nil {
			return nil, err
		}
	default:
		if i, ok := cols[DefaultWeightField]; ok {
			wCol = i
			c.Weight = DefaultWeightField
		}
	}
	if wCol >= 0 {
		c.weightP = splitPath(c.Weight)
	}
	var byCols []int
	names, what := c.groupFields()
	for j, b := range names {
		i, err := col(what[j], b)
		if err != nil {
			return nil, err
		}
		byCols = append(byCols, i)
	}
	if c.Match != "" {
		i, err := col("--match", c.Match)
		if err != nil {
			return nil, err
		}
		byCols = append(byCols, i) // read like a group, after the partition
	}
	return func(p *pool, emit func(*batch) bool) error {
		field := func(rec []string, i int) string {
			if i < len(rec) {
				return rec[i]
			}
			return ""
		}
		return inBatches(p, emit, func(b *batch) (bool, error) {
			row, err := cr.Read()
			if err == io.EOF {
				return false, nil
			}
			rec := record{w: 1}
			var pe *csv.ParseError
			switch {
			case errors.As(err, &pe):
				rec.why, rec.line = rNotCSV, int64(pe.StartLine)
			case err != nil:
				return false, fmt.Errorf("reading %s: %w", c.path, err)
			default:
				line, _ := cr.FieldPos(0)
				rec = csvRecord(c, row, field, tsCol, arrCol, sentCol, partCol, wCol, byCols, b)
				rec.line = int64(line)
			}
			b.recs = append(b.recs, rec)
			return true, nil
		})
	}, nil
}

func csvRecord(c *config, row []string, field func([]string, int) string, tsCol, arrCol, sentCol, partCol, wCol int, byCols []int, b *batch) (rec record) {
	rec.w = 1
	arrWhy := rOK
	if s := field(row, arrCol); s == "" {
		arrWhy = rNoArrival
	} else if t, ok := parseTimeText(s); !ok {
		arrWhy = rBadArrival
	} else {
		rec.arr, rec.hasArrival = t, true
	}
	s := field(row, tsCol)
	if s == "" {
		rec.why = rNoEventTime
		return rec
	}
	t, ok := parseTimeText(s)
	sent := linedec.Times{}
	if sentCol >= 0 {
		if s := field(row, sentCol); s == "" {
			sent.SentFault = linedec.NoSent
		} else if st, ok := parseTimeText(s); !ok {
			sent.SentFault = linedec.BadSent
		} else {
			sent.Sent = st
		}
	}
	if t, rec.why = c.checkTimes(t, ok, arrWhy, rec.arr, sent); rec.why != rOK {
		return rec
	}
	rec.ts = t
	var part span
	if partCol >= 0 {
		v := field(row, partCol)
		if v == "" {
			rec.why = rNoPartition
			return rec
		}
		part = b.text([]byte(v))
	}
	if wCol >= 0 {
		w, err := strconv.ParseFloat(field(row, wCol), 64)
		if err != nil || !goodWeight(w) {
			rec.why = rBadWeight
			return rec
		}
		rec.w = w
	}
	nby := len(c.byP)
	for _, i := range byCols[:nby] {
		v := field(row, i)
		if v == "" {
			v = missing
		}
		b.groups = append(b.groups, b.text([]byte(v)))
	}
	if partCol >= 0 {
		b.groups = append(b.groups, part)
	}
	if c.matchP != nil {
		if v := field(row, byCols[nby]); v == "" {
			b.groups = append(b.groups, noSpan)
		} else {
			b.groups = append(b.groups, b.text([]byte(v)))
		}
	}
	return rec
}

// checkTimes applies weir run's rules (package linedec) to the event time
// of a CSV or Parquet row (parsed is false when it did not parse), its
// arrival (arrWhy says what was wrong with it) and its send time (sent's
// Sent or SentFault, with a job's time.sent_field): the event time, as
// corrected, and the reason the row is no event, in weir run's order, or
// rOK.
func (c *config) checkTimes(t mtime.Time, parsed bool, arrWhy reason, arr mtime.Time, sent linedec.Times) (mtime.Time, reason) {
	if !parsed {
		return t, rBadEventTime
	}
	arrival := ""
	if arrWhy != rOK {
		arrival = reasonNames[arrWhy]
	}
	r := linedec.Times{Time: t, Arrival: arr, Sent: sent.Sent, SentFault: sent.SentFault}
	if c.times.Check(&r, arrival); r.Kind == linedec.Rejected {
		return t, reasonOf(r.Reason)
	}
	return r.Time, rOK
}
