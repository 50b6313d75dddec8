package formats

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/twmb/avro"

	"github.com/weirstream/weir/internal/text"
)

// A record whose writer's schema is the reader's is written as JSON straight
// from its Avro binary, guided by the schema: no value of it is made in
// between (the library's decoding into maps costs more than the rest of
// reading a record). It writes what appendAvroJSON writes of the library's
// values, except that a map's keys keep their order on the wire. A record
// that needs resolving to the reader's schema goes through the library.

// errAvro is a payload that does not decode with its schema.
var errAvro = errors.New("the payload does not decode with its schema")

// maxDepth bounds the nesting of a recursive schema's values.
const maxDepth = 64

// maxNulls bounds the items of an array of nulls, which take no bytes (a
// record of a few bytes could say 2^62): a record's JSON text is bounded by
// its bytes' length otherwise. Its text is a line of at most 320 KiB.
const maxNulls = 1 << 16

// transcoder writes the records of one schema as JSON.
type transcoder struct {
	root  *avro.SchemaNode
	named map[string]*avro.SchemaNode
	// keys are each record's fields' names as JSON keys ("name":).
	keys map[*avro.SchemaNode][][]byte
	// noTree: a record has two fields of one name (a schema the library
	// should have refused), which an object built in a tree cannot hold.
	noTree bool
	// troot is root compiled for tree.
	troot *tnode
}

// newTranscoder is the transcoder of a schema's tree (references expanded).
func newTranscoder(root *avro.SchemaNode) *transcoder {
	t := &transcoder{root: root, named: map[string]*avro.SchemaNode{}, keys: map[*avro.SchemaNode][][]byte{}}
	t.index(root, 0)
	t.troot = t.compile(root, map[*avro.SchemaNode]*tnode{})
	return t
}

func (t *transcoder) index(n *avro.SchemaNode, depth int) {
	if n == nil || depth > maxDepth {
		return
	}
	switch n.Type {
	case "record", "error", "enum", "fixed":
		if _, ok := t.named[n.Name]; !ok {
			t.named[n.Name] = n
			if n.Namespace != "" {
				t.named[n.Namespace+"."+n.Name] = n
			}
		}
	}
	// Every record node has its keys, also a named type's copies where
	// references were expanded (a recursive one stays a reference: no
	// fields).
	if (n.Type == "record" || n.Type == "error") && t.keys[n] == nil {
		keys := make([][]byte, len(n.Fields))
		seen := map[string]bool{}
		for i := range n.Fields {
			keys[i] = append(text.AppendJSONString(nil, []byte(n.Fields[i].Name)), ':')
			t.noTree = t.noTree || seen[n.Fields[i].Name]
			seen[n.Fields[i].Name] = true
		}
		t.keys[n] = keys
	}
	for i := range n.Fields {
		t.index(&n.Fields[i].Type, depth+1)
	}
	for i := range n.Branches {
		t.index(&n.Branches[i], depth+1)
	}
	t.index(n.Items, depth+1)
	t.index(n.Values, depth+1)
}

// appendJSON appends the record in src as JSON; src must hold it exactly.
func (t *transcoder) appendJSON(dst, src []byte) ([]byte, error) {
	out, rest, err := t.value(dst, src, t.root, 0)
	if err != nil {
		return dst, err
	}
	if len(rest) > 0 {
		return dst, errors.New("bytes after the record")
	}
	return out, nil
}

func (t *transcoder) value(b, src []byte, n *avro.SchemaNode, depth int) ([]byte, []byte, error) {
	if depth > maxDepth {
		return b, src, errors.New("values nested too deep")
	}
	if x, data, rest, ok, err := scalar(src, n); ok {
		if err != nil {
			return b, src, err
		}
		switch n.Type {
		case "null":
			return append(b, "null"...), rest, nil
		case "boolean":
			// As the library and Java's reference read it: only 1 is true.
			return strconv.AppendBool(b, x == 1), rest, nil
		case "int", "long":
			return appendLong(b, x, n.LogicalType), rest, nil
		case "enum":
			return text.AppendJSONString(b, []byte(n.Symbols[x])), rest, nil
		case "float":
			f := math.Float32frombits(binary.LittleEndian.Uint32(data))
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return append(b, "null"...), rest, nil
			}
			return strconv.AppendFloat(b, float64(f), 'g', -1, 32), rest, nil
		case "double":
			f := math.Float64frombits(binary.LittleEndian.Uint64(data))
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return append(b, "null"...), rest, nil
			}
			return appendDouble(b, f), rest, nil
		}
		return appendBytes(b, data, n), rest, nil // string, bytes, fixed
	}
	switch n.Type {
	case "union":
		i, rest, err := varlong(src)
		if err != nil || i < 0 || i >= int64(len(n.Branches)) {
			return b, src, errAvro
		}
		return t.value(b, rest, &n.Branches[i], depth+1)
	case "record", "error":
		b = append(b, '{')
		keys := t.keys[n]
		var err error
		for i := range n.Fields {
			f := &n.Fields[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, keys[i]...)
			if b, src, err = t.value(b, src, &f.Type, depth+1); err != nil {
				return b, src, err
			}
		}
		return append(b, '}'), src, nil
	case "array", "map":
		open, closing := byte('['), byte(']')
		if n.Type == "map" {
			open, closing = '{', '}'
		}
		b = append(b, open)
		first := true
		rest, err := t.items(src, n, func(key, src []byte, item *avro.SchemaNode) (rest []byte, err error) {
			if !first {
				b = append(b, ',')
			}
			first = false
			if key != nil {
				b = append(text.AppendJSONString(b, key), ':')
			}
			b, rest, err = t.value(b, src, item, depth+1)
			return rest, err
		})
		if err != nil {
			return b, rest, err
		}
		return append(b, closing), rest, nil
	}
	if ref, ok := t.named[n.Type]; ok && ref != n {
		return t.value(b, src, ref, depth+1)
	}
	return b, src, errors.New("a type weir does not know: " + n.Type)
}

// appendLong writes an int or long with its logical type, as
// appendAvroJSON writes the library's value of it.
func appendLong(b []byte, v int64, logical string) []byte {
	switch logical {
	case "timestamp-micros", "local-timestamp-micros":
		return appendTime(b, time.UnixMicro(v))
	case "timestamp-nanos", "local-timestamp-nanos":
		return appendTime(b, time.Unix(0, v))
	case "date":
		return time.Unix(v*86400, 0).UTC().AppendFormat(append(b, '"'), `2006-01-02T15:04:05Z"`)
	case "time-micros":
		return strconv.AppendInt(b, v/1000, 10)
	}
	// timestamp-millis and local-timestamp-millis: epoch milliseconds, as
	// they are; time-millis: milliseconds.
	return strconv.AppendInt(b, v, 10)
}

func appendTime(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(append(b, '"'), `2006-01-02T15:04:05.999999999Z"`)
}

// appendBytes writes a string, bytes or fixed with its logical type.
func appendBytes(b, data []byte, n *avro.SchemaNode) []byte {
	switch {
	case n.Type == "string":
		return text.AppendJSONString(b, data)
	case n.LogicalType == "decimal":
		unscaled := new(big.Int).SetBytes(data)
		if len(data) > 0 && data[0]&0x80 != 0 {
			// Two's complement: subtract 2^(8*len).
			unscaled.Sub(unscaled, new(big.Int).Lsh(big.NewInt(1), uint(8*len(data))))
		}
		return append(b, new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n.Scale)), nil)).FloatString(n.Scale)...)
	case n.LogicalType == "uuid" && n.Type == "fixed" && len(data) == 16:
		return append(append(append(b, '"'), uuidString([16]byte(data))...), '"')
	case n.LogicalType == "duration" && n.Type == "fixed" && len(data) == 12:
		return append(b, `{"months":`+strconv.FormatUint(uint64(binary.LittleEndian.Uint32(data)), 10)+
			`,"days":`+strconv.FormatUint(uint64(binary.LittleEndian.Uint32(data[4:])), 10)+
			`,"milliseconds":`+strconv.FormatUint(uint64(binary.LittleEndian.Uint32(data[8:])), 10)+`}`...)
	}
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, data)
	return append(b, '"')
}

// varlong reads a zig-zag varint of at most 10 bytes.
func varlong(src []byte) (int64, []byte, error) {
	u, n := binary.Uvarint(src)
	if n <= 0 {
		return 0, src, errAvro
	}
	return int64(u>>1) ^ -int64(u&1), src[n:], nil
}

// lengthPrefixed reads a long length, then that many bytes.
func lengthPrefixed(src []byte) ([]byte, []byte, error) {
	l, rest, err := varlong(src)
	if err != nil || l < 0 || l > int64(len(rest)) {
		return nil, src, errAvro
	}
	return rest[:l], rest[l:], nil
}

// scalar reads the value of n at the start of src when n is a scalar's type
// (ok): a boolean's byte, or an int's, a long's or an enum's varint, in x
// (an int within its range, an enum an index of its symbols); a float's,
// a double's, a string's, bytes' or a fixed's bytes in data; and what
// follows them. What does not decode is errAvro. The one reading of a
// scalar on the wire, for value and skip.
func scalar(src []byte, n *avro.SchemaNode) (x int64, data, rest []byte, ok bool, err error) {
	size := 0
	switch n.Type {
	case "null":
		return 0, nil, src, true, nil
	case "boolean":
		if len(src) < 1 {
			return 0, nil, src, true, errAvro
		}
		return int64(src[0]), nil, src[1:], true, nil
	case "int", "long", "enum":
		x, rest, err := varlong(src)
		switch {
		case err != nil,
			n.Type == "int" && (x < math.MinInt32 || x > math.MaxInt32),
			n.Type == "enum" && (x < 0 || x >= int64(len(n.Symbols))):
			return 0, nil, src, true, errAvro
		}
		return x, nil, rest, true, nil
	case "string", "bytes":
		data, rest, err := lengthPrefixed(src)
		return 0, data, rest, true, err
	case "float":
		size = 4
	case "double":
		size = 8
	case "fixed":
		size = n.Size
	default:
		return 0, nil, src, false, nil
	}
	if size < 0 || len(src) < size {
		return 0, nil, src, true, errAvro
	}
	return 0, src[:size], src[size:], true, nil
}

// items reads the blocks of the array or map n in src, calling each with
// every item (its bytes on: src; a map's key) and its type, and returns what
// follows them. It refuses what value refuses: more items than bytes (but
// nulls, which take none, of which it takes maxNulls at most).
func (t *transcoder) items(src []byte, n *avro.SchemaNode, each func(key, src []byte, item *avro.SchemaNode) ([]byte, error)) ([]byte, error) {
	item := n.Items
	if n.Type == "map" {
		item = n.Values
	}
	if item == nil {
		return src, errAvro
	}
	nulls := int64(0)
	for {
		count, rest, err := varlong(src)
		if err != nil {
			return src, err
		}
		src = rest
		if count == 0 {
			return src, nil
		}
		if count < 0 {
			// A negative count is followed by the block's size.
			if _, src, err = varlong(src); err != nil {
				return src, err
			}
			count = -count
		}
		if count > int64(len(src)) && !(item.Type == "null" && n.Type == "array") {
			return src, errAvro // more items than bytes
		}
		if item.Type == "null" && n.Type == "array" {
			nulls += count
		}
		if nulls > maxNulls {
			return src, errAvro // a text of unbounded length
		}
		for ; count > 0; count-- {
			var key []byte
			if n.Type == "map" {
				if key, src, err = lengthPrefixed(src); err != nil {
					return src, err
				}
			}
			if src, err = each(key, src, item); err != nil {
				return src, err
			}
		}
	}
}

// skip reads past the value of n in src as value does, refusing what it
// refuses, and writes nothing: where a record ends, when its bytes are
// handed over as they are.
func (t *transcoder) skip(src []byte, n *avro.SchemaNode, depth int) ([]byte, error) {
	if depth > maxDepth {
		return src, errors.New("values nested too deep")
	}
	if _, _, rest, ok, err := scalar(src, n); ok {
		return rest, err
	}
	switch n.Type {
	case "union":
		i, rest, err := varlong(src)
		if err != nil || i < 0 || i >= int64(len(n.Branches)) {
			return src, errAvro
		}
		return t.skip(rest, &n.Branches[i], depth+1)
	case "record", "error":
		var err error
		for i := range n.Fields {
			if src, err = t.skip(src, &n.Fields[i].Type, depth+1); err != nil {
				return src, err
			}
		}
		return src, nil
	case "array", "map":
		return t.items(src, n, func(_, src []byte, item *avro.SchemaNode) ([]byte, error) {
			return t.skip(src, item, depth+1)
		})
	}
	if ref, ok := t.named[n.Type]; ok && ref != n {
		return t.skip(src, ref, depth+1)
	}
	return src, errors.New("a type weir does not know: " + n.Type)
}
