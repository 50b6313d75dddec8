package table

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
)

// The encoding of a pre-commit (what a checkpoint keeps for Commit):
//
//	version byte (preVersion)
//	run       string: the identity of the run that wrote it
//	keys      uvarint: the number of key columns
//	values    uvarint: the number of value columns
//	rows      uvarint
//	rows × {
//	    key values (tagged)
//	    window start, window end, revision, version, emitted at (varints)
//	    flags (uvarint): final 1, retract 2, timing << 2, status << 4
//	    values (tagged)
//	}
//
// A tagged value is a tag (uvarint) and its payload: nothing for NULL and the
// booleans, a length-prefixed string, a varint, a float's 8 bytes, or a
// decimal's unscaled varint and scale varint. Key values are normalized
// (integers to int64, decimals without trailing zeros, -0 to 0) so that
// equal keys have equal bytes.
const preVersion = 1

const (
	tagNull = iota
	tagText
	tagInt
	tagReal
	tagDecimal
	tagFalse
	tagTrue
	tagMax = tagTrue
)

const (
	flagFinal   = 1
	flagRetract = 2
)

var timings = [...]string{"EARLY", "ON_TIME", "LATE"}

const (
	statusProvisional = iota
	statusClosed
	statusRetracted
)

var statuses = [...]string{"provisional", "closed", "retracted"}

// val is a decoded value; s aliases the pre-commit.
type val struct {
	tag   uint8
	scale int8
	i     int64 // tagInt, tagDecimal's unscaled
	f     float64
	s     []byte
}

func (v *val) decimal() Decimal { return Decimal{Unscaled: v.i, Scale: v.scale} }

// prow is a decoded row.
type prow struct {
	pk                []byte // the encoded key values and window: the row's identity in the table
	ws, we, emitted   mtime.Time
	revision, version int64
	final, retract    bool
	timing, status    uint8
	vals              []val  // key values, then values
	deltaID           []byte // Discarding mode
}

func (r *prow) timingText() string { return timings[r.timing] }
func (r *prow) statusText() string { return statuses[r.status] }

// appendRow checks r against the schema and appends its encoding.
func (s *Sink) appendRow(b []byte, r *Row) ([]byte, error) {
	sc := &s.schema
	if len(r.Key) != len(sc.Keys) {
		return b, fmt.Errorf("table %s: a row has %d key values, the table %d key columns", sc.Table, len(r.Key), len(sc.Keys))
	}
	if len(r.Values) != len(sc.Values) {
		return b, fmt.Errorf("table %s: a row has %d values, the table %d value columns", sc.Table, len(r.Values), len(sc.Values))
	}
	var err error
	for i, c := range sc.Keys {
		if b, err = appendValue(b, r.Key[i], c, true); err != nil {
			return b, fmt.Errorf("table %s: %w", sc.Table, err)
		}
	}
	if r.WindowStart < mtime.MinTime || r.WindowEnd > mtime.MaxTime || r.WindowStart > r.WindowEnd {
		return b, fmt.Errorf("table %s: window [%d, %d) is out of range", sc.Table, r.WindowStart, r.WindowEnd)
	}
	if r.Revision < 0 {
		return b, fmt.Errorf("table %s: revision %d is negative", sc.Table, r.Revision)
	}
	version := r.Version
	if version == 0 {
		version = 1
	} else if version < 0 {
		return b, fmt.Errorf("table %s: version %d is negative", sc.Table, r.Version)
	}
	timing := slices.Index(timings[:], r.Timing)
	if timing < 0 {
		return b, fmt.Errorf("table %s: timing %q is not EARLY, ON_TIME or LATE", sc.Table, r.Timing)
	}
	status := statusProvisional
	switch {
	case r.Retract && sc.Mode != Discarding:
		status = statusRetracted
	case r.Status == "":
		if r.Final {
			status = statusClosed
		}
	case r.Status == statuses[statusProvisional], r.Status == statuses[statusClosed]:
		status = slices.Index(statuses[:], r.Status)
	default:
		return b, fmt.Errorf("table %s: status %q is not provisional or closed (a retraction's row is retracted by itself)", sc.Table, r.Status)
	}
	b = enc.AppendVarint(b, int64(r.WindowStart))
	b = enc.AppendVarint(b, int64(r.WindowEnd))
	b = enc.AppendVarint(b, r.Revision)
	b = enc.AppendVarint(b, version)
	b = enc.AppendVarint(b, int64(r.EmittedAt))
	flags := uint64(timing<<2 | status<<4)
	if r.Final {
		flags |= flagFinal
	}
	if r.Retract {
		flags |= flagRetract
	}
	b = enc.AppendUvarint(b, flags)
	for i, c := range sc.Values {
		if b, err = appendValue(b, r.Values[i], c, false); err != nil {
			return b, fmt.Errorf("table %s: %w", sc.Table, err)
		}
	}
	return b, nil
}

// appendValue appends v, converted to what column c holds, tagged.
func appendValue(b []byte, v any, c Column, key bool) ([]byte, error) {
	var i int64
	switch x := v.(type) {
	case nil:
		if key {
			return b, fmt.Errorf("key column %q is NULL: a key column is part of the primary key", c.Name)
		}
		return append(b, tagNull), nil
	case string:
		if c.Type != Text {
			return b, mismatch(c, v)
		}
		return enc.AppendString(append(b, tagText), x), nil
	case bool:
		if c.Type != Boolean {
			return b, mismatch(c, v)
		}
		if x {
			return append(b, tagTrue), nil
		}
		return append(b, tagFalse), nil
	case float64:
		return appendFloat(b, x, c, key)
	case float32:
		return appendFloat(b, float64(x), c, key)
	case Decimal:
		if c.Type != Numeric {
			return b, mismatch(c, v)
		}
		if key {
			x = x.normalized()
		}
		return enc.AppendVarint(enc.AppendVarint(append(b, tagDecimal), x.Unscaled), int64(x.Scale)), nil
	case int64:
		i = x
	case int:
		i = int64(x)
	case int32:
		i = int64(x)
	case int16:
		i = int64(x)
	case int8:
		i = int64(x)
	case uint32:
		i = int64(x)
	case uint16:
		i = int64(x)
	case uint8:
		i = int64(x)
	case uint64:
		if x > math.MaxInt64 {
			return b, fmt.Errorf("column %q: %d is out of range", c.Name, x)
		}
		i = int64(x)
	case uint:
		if uint64(x) > math.MaxInt64 {
			return b, fmt.Errorf("column %q: %d is out of range", c.Name, x)
		}
		i = int64(x)
	default:
		return b, mismatch(c, v)
	}
	switch c.Type {
	case Integer:
		return enc.AppendVarint(append(b, tagInt), i), nil
	case Real:
		return appendFloat(b, float64(i), c, key)
	case Numeric:
		return enc.AppendVarint(enc.AppendVarint(append(b, tagDecimal), i), 0), nil
	}
	return b, mismatch(c, v)
}

func appendFloat(b []byte, f float64, c Column, key bool) ([]byte, error) {
	if c.Type != Real && c.Type != Numeric {
		return b, mismatch(c, f)
	}
	if key {
		if math.IsNaN(f) {
			return b, fmt.Errorf("key column %q is NaN", c.Name)
		}
		if f == 0 {
			f = 0 // -0 is 0
		}
	}
	return enc.AppendFloat(append(b, tagReal), f), nil
}

func mismatch(c Column, v any) error {
	return fmt.Errorf("column %q is %s and cannot hold %T %v", c.Name, c.Type, v, v)
}

// encode returns the pre-commit of the buffered rows.
func (s *Sink) encode() []byte {
	var h [headerRoom]byte
	hdr := append(h[:0], preVersion)
	hdr = enc.AppendString(hdr, s.run)
	hdr = enc.AppendUvarint(hdr, uint64(len(s.schema.Keys)))
	hdr = enc.AppendUvarint(hdr, uint64(len(s.schema.Values)))
	hdr = enc.AppendUvarint(hdr, uint64(s.rows))
	b := s.rowBuf()
	start := headerRoom - len(hdr)
	copy(b[start:], hdr)
	return b[start:]
}

// headerRoom is the room the row buffer keeps at its start for the header
// of a pre-commit (the version, the run's identity of 16 hex digits, three
// uvarints), so that a pre-commit is the buffer itself, never a copy of it.
const headerRoom = 1 + binary.MaxVarintLen64 + 16 + 3*binary.MaxVarintLen64

// rowBuf is the buffer of encoded rows, with its header room.
func (s *Sink) rowBuf() []byte {
	if len(s.buf) < headerRoom {
		s.buf = make([]byte, headerRoom, headerRoom+4<<10)
	}
	return s.buf
}

type header struct {
	run  string
	rows int
}

// decodeHeader decodes the start of a pre-commit; former are the value
// columns of a checkpoint the sink resumes from (Options.FormerValues).
func decodeHeader(pre []byte, sc *Schema, former []string) (header, error) {
	_, h, _, err := readHeader(pre, sc, former)
	return h, err
}

// readHeader decodes the start of a pre-commit, and returns its number of
// values.
func readHeader(pre []byte, sc *Schema, former []string) (*enc.Decoder, header, int, error) {
	if len(pre) == 0 {
		return nil, header{}, 0, errors.New("empty")
	}
	if pre[0] != preVersion {
		return nil, header{}, 0, fmt.Errorf("encoding version %d, this weir reads %d", pre[0], preVersion)
	}
	d := enc.NewDecoder(pre[1:])
	var h header
	h.run = d.String()
	nk, nv := d.Count(1<<16), d.Count(1<<16)
	h.rows = d.Items(math.MaxInt32)
	if err := d.Err(); err != nil {
		return nil, header{}, 0, err
	}
	if nk != len(sc.Keys) || nv != len(sc.Values) && (former == nil || nv != len(former)) {
		return nil, header{}, 0, fmt.Errorf("the rows have %d key values and %d values, the table %d key columns and %d value columns: the job's output changed since the checkpoint", nk, nv, len(sc.Keys), len(sc.Values))
	}
	return d, h, nv, nil
}

// scratch is what Commit decodes into, reused from one commit to the next.
type scratch struct {
	refs  []rowRef // the commit's index
	rows  []prow   // one chunk of decoded rows
	vals  []val
	one   []val // a row's values while indexing
	ids   []byte
	ident []byte
	d     enc.Decoder
}

// rowRef is a row of a pre-commit as a commit's index holds it: where it
// starts and how long its primary key is. A commit indexes every row (16
// bytes each) and decodes only commitChunk of them at a time, so that a
// commit of a million rows does not hold a million decoded rows with their
// values (about 300 bytes each).
type rowRef struct {
	at    int // offset in the pre-commit
	pkLen uint32
}

func (r rowRef) pk(pre []byte) []byte { return pre[r.at : r.at+int(r.pkLen)] }

// order is what coalesce orders the rows of one key by: their version,
// revision and retract flag, which follow the key in the encoding.
func (r rowRef) order(pre []byte) (version, revision int64, retract bool) {
	var d enc.Decoder
	d.Reset(pre[r.at+int(r.pkLen):])
	revision, version = d.Varint(), d.Varint()
	d.Varint() // emitted at
	return version, revision, d.Count(63)&flagRetract != 0
}

// commitChunk is how many rows of a commit are decoded at a time.
const commitChunk = 8192

// keepRows is the largest index a scratch keeps between commits: a commit of
// more rows (a window of a million keys) allocates what it needs, and release
// lets it go once the commit is done, so that one large commit does not hold
// its memory for the rest of the run.
const keepRows = 1 << 14

// release drops the index of a large commit, and every reference to the
// pre-commit the rows alias.
func (sc *scratch) release() {
	if cap(sc.refs) > keepRows {
		sc.refs = nil
	}
	clear(sc.rows[:cap(sc.rows)])
	clear(sc.vals[:cap(sc.vals)])
	clear(sc.one[:cap(sc.one)])
	sc.d.Reset(nil)
}

// rowSet is the rows of one commit, in the order they are written, decoded a
// chunk at a time.
type rowSet struct {
	pre    []byte
	refs   []rowRef
	sc     *scratch
	schema *Schema
	to     []int  // from index: where each value goes (nil: in order)
	job    string // with deltas: the job whose delta ids the rows get
	deltas bool
}

// len is the number of rows.
func (s *rowSet) len() int { return len(s.refs) }

// rows decodes rows i to j (j excluded, at most commitChunk of them) and
// returns them; their bytes alias the pre-commit, and they are valid until
// the next call.
func (s *rowSet) rows(i, j int) []prow {
	sc := s.sc
	width := len(s.schema.Keys) + len(s.schema.Values)
	n := j - i
	sc.rows = slices.Grow(sc.rows[:0], n)[:n]
	sc.vals = slices.Grow(sc.vals[:0], n*width)[:n*width]
	clear(sc.vals) // a column the pre-commit has no value for is NULL
	for k := range n {
		r := &sc.rows[k]
		*r = prow{vals: sc.vals[k*width : (k+1)*width : (k+1)*width]}
		sc.d.Reset(s.pre[s.refs[i+k].at:])
		// The index decoded every row once: this cannot fail.
		decodeRow(&sc.d, s.pre, r, len(s.schema.Keys), s.to)
	}
	if s.deltas {
		sc.deltaIDs(sc.rows, s.job)
	}
	return sc.rows
}

// index checks that every row of pre decodes and indexes them, in the order
// written. A pre-commit of another run than own, with the values of former
// (the checkpoint's, Options.FormerValues), has its values put in the
// columns of their names: to says where each goes (-1: a column removed
// since, left out); the columns added since are NULL.
func (sc *scratch) index(pre []byte, schema *Schema, former []string, own string) (run string, rows []rowRef, to []int, err error) {
	if len(pre) == 0 {
		return "", nil, nil, nil
	}
	d, h, nv, err := readHeader(pre, schema, former)
	if err != nil {
		return "", nil, nil, err
	}
	if former != nil && h.run != own && nv == len(former) {
		to = make([]int, nv)
		for i, name := range former {
			to[i] = slices.IndexFunc(schema.Values, func(c Column) bool { return c.Name == name })
		}
	}
	nk := len(schema.Keys)
	sc.refs = slices.Grow(sc.refs[:0], h.rows)[:h.rows]
	sc.one = slices.Grow(sc.one[:0], nk+len(schema.Values))[:nk+len(schema.Values)]
	for i := range sc.refs {
		at := len(pre) - d.Len()
		r := prow{vals: sc.one}
		decodeRow(d, pre, &r, nk, to)
		if d.Err() != nil {
			return "", nil, nil, d.Err()
		}
		if len(r.pk) > math.MaxUint32 {
			return "", nil, nil, fmt.Errorf("a row's key of %d bytes", len(r.pk))
		}
		sc.refs[i] = rowRef{at: at, pkLen: uint32(len(r.pk))}
	}
	if d.Len() != 0 {
		return "", nil, nil, fmt.Errorf("%d bytes after the last row", d.Len())
	}
	return h.run, sc.refs, to, nil
}

// decodeRow decodes one row of pre from d into r, whose vals has room for
// the schema's key values and values (nk of them key values); r.pk aliases
// pre. With to, the pre-commit's values go to the value columns it says
// (-1: none).
func decodeRow(d *enc.Decoder, pre []byte, r *prow, nk int, to []int) {
	start := len(pre) - d.Len()
	for k := 0; k < nk; k++ {
		decodeValue(d, &r.vals[k])
	}
	r.ws, r.we = mtime.Time(d.Varint()), mtime.Time(d.Varint())
	r.pk = pre[start : len(pre)-d.Len()]
	r.revision, r.version, r.emitted = d.Varint(), d.Varint(), mtime.Time(d.Varint())
	flags := d.Count(63)
	r.final, r.retract = flags&flagFinal != 0, flags&flagRetract != 0
	r.timing, r.status = uint8(flags>>2&3), uint8(flags>>4&3)
	if int(r.timing) >= len(timings) || int(r.status) >= len(statuses) {
		d.Fail()
	}
	if to == nil {
		for k := nk; k < len(r.vals); k++ {
			decodeValue(d, &r.vals[k])
		}
		return
	}
	for _, k := range to {
		var v val
		decodeValue(d, &v)
		if k >= 0 {
			r.vals[nk+k] = v
		}
	}
}

func decodeValue(d *enc.Decoder, v *val) {
	v.tag = uint8(d.Count(tagMax))
	switch v.tag {
	case tagText:
		v.s = d.Bytes()
	case tagInt:
		v.i = d.Varint()
	case tagReal:
		v.f = d.Float()
	case tagDecimal:
		v.i = d.Varint()
		sc := d.Varint()
		if sc < math.MinInt8 || sc > math.MaxInt8 {
			d.Fail()
		}
		v.scale = int8(sc)
	}
}

// coalesce keeps, of the rows of each primary key, the one that wins: the
// highest (version, revision), and of equal ones a retraction over the pane
// it withdraws, and of equal rows the last. It returns the winners ordered by
// their encoded key (the same order in every commit and every sink, which
// keeps concurrent writers from deadlocking on each other's rows).
func coalesce(pre []byte, rows []rowRef) []rowRef {
	slices.SortStableFunc(rows, func(a, b rowRef) int {
		if c := bytes.Compare(a.pk(pre), b.pk(pre)); c != 0 {
			return c
		}
		av, ar, ax := a.order(pre)
		bv, br, bx := b.order(pre)
		if c := cmp.Compare(av, bv); c != 0 {
			return c
		}
		if c := cmp.Compare(ar, br); c != 0 {
			return c
		}
		return cmpBool(ax, bx)
	})
	out := rows[:0]
	for i := range rows {
		if i+1 < len(rows) && bytes.Equal(rows[i].pk(pre), rows[i+1].pk(pre)) {
			continue
		}
		out = append(out, rows[i])
	}
	return out
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}

// deltaIDs sets each row's delta id: the hex SHA-256 of its identity.
//
// The identity is, in this order: "weir delta 1", the job's name (a
// length-prefixed string), the version (varint), each key value (tagged, as
// in a pre-commit, normalized), window start and end, the revision (varints)
// and the retract flag (a byte). It does not depend on the values, the timing
// or the time of emission: a delta emitted again is the same delta.
func (sc *scratch) deltaIDs(rows []prow, job string) {
	sc.ids = slices.Grow(sc.ids[:0], len(rows)*2*sha256.Size)[:len(rows)*2*sha256.Size]
	for i := range rows {
		r := &rows[i]
		b := append(sc.ident[:0], "weir delta 1"...)
		b = enc.AppendString(b, job)
		b = enc.AppendVarint(b, r.version)
		b = append(b, r.pk...) // the key values, window start and end
		b = enc.AppendVarint(b, r.revision)
		b = enc.AppendBool(b, r.retract)
		sc.ident = b
		sum := sha256.Sum256(b)
		id := sc.ids[i*2*sha256.Size : (i+1)*2*sha256.Size]
		hex.Encode(id, sum[:])
		r.deltaID = id
	}
}
