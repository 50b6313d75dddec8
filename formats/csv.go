package formats

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weirstream/weir/internal/linedec"
	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/plan"
)

func init() {
	plan.RegisterFormat(plan.FormatKind{
		Name: "csv",
		Doc:  "A CSV file (RFC 4180 quoting): a row is an event, its columns its fields.",
		Fields: []plan.Field{
			{Name: "delimiter", Type: plan.String, Doc: "The character between fields (default ,)."},
			{Name: "header", Type: plan.Bool, Doc: "The first row names the columns (default true); false: columns names them."},
			{Name: "columns", Type: plan.Strings, Doc: "Columns with their type, NAME:string, NAME:number or NAME:bool (a column not listed has the type its cell reads as); without a header row, every column in order."},
		},
		Parse: parseCSV,
	})
}

// The types of CSV columns.
const (
	colInfer = iota // a number if it reads as one, true and false as bools, else a string
	colString
	colNumber
	colBool
)

// csvConfig is the csv format's settings.
type csvConfig struct {
	comma  rune
	header bool
	names  []string // the columns' names, in order, when given
	types  map[string]int
}

func parseCSV(s plan.Settings, reg *plan.Registry) (plan.FormatConfig, error) {
	c := &csvConfig{comma: ',', header: true, types: map[string]int{}}
	if d, ok, err := s.String("delimiter"); err != nil {
		return nil, err
	} else if ok {
		if d == `\t` {
			d = "\t"
		}
		r, n := utf8.DecodeRuneInString(d)
		if n != len(d) || r == '"' || r == '\r' || r == '\n' || r == utf8.RuneError {
			return nil, s.Errorf("delimiter", "expected one character other than a quote or a line end, got %q", d)
		}
		c.comma = r
	}
	if h, ok, err := s.Bool("header"); err != nil {
		return nil, err
	} else if ok {
		c.header = h
	}
	cols, _, err := s.Strings("columns")
	if err != nil {
		return nil, err
	}
	for _, col := range cols {
		name, typ, _ := strings.Cut(col, ":")
		t := colInfer
		switch typ {
		case "":
		case "string":
			t = colString
		case "number":
			t = colNumber
		case "bool":
			t = colBool
		default:
			return nil, s.Errorf("columns", "%s: expected the type string, number or bool, got %q", name, typ)
		}
		if name == "" || slices.Contains(c.names, name) {
			return nil, s.Errorf("columns", "%q: a column needs a name of its own", col)
		}
		c.names = append(c.names, name)
		c.types[name] = t
	}
	if !c.header && len(c.names) == 0 {
		return nil, s.Errorf("header", "a file without a header row needs columns naming its columns")
	}
	return c, nil
}

func (c *csvConfig) Describe() string {
	if c.comma != ',' {
		return fmt.Sprintf("csv, delimiter %q", c.comma)
	}
	return "csv"
}

func (c *csvConfig) New(plan.Env, string) (plan.Decoder, error) {
	return nil, errors.New("csv is read from a file (source: {file: orders.csv, format: csv})")
}

// OpenFile implements FileFormat.
func (c *csvConfig) OpenFile(path string) (RowReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return c.Rows(f, path)
}

// Rows reads CSV rows from r (named name in errors): its header first,
// when it has one.
func (c *csvConfig) Rows(r io.ReadCloser, name string) (RowReader, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<20))
	cr.Comma, cr.ReuseRecord, cr.FieldsPerRecord = c.comma, true, -1
	rows := &csvRows{c: c, r: r, cr: cr, names: c.names}
	if c.header {
		h, err := cr.Read()
		if err != nil {
			r.Close()
			if errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("%s is empty: a CSV file needs a header row naming its columns (or header: false and columns)", name)
			}
			return nil, fmt.Errorf("%s: its header row: %w", name, err)
		}
		rows.names = slices.Clone(h)
		if len(rows.names) > 0 { // a byte order mark is not the column's name
			rows.names[0] = strings.TrimPrefix(rows.names[0], "\ufeff")
		}
		for _, col := range c.names {
			if !slices.Contains(rows.names, col) {
				r.Close()
				return nil, fmt.Errorf("%s has no column %s (its columns: %s)", name, col, strings.Join(rows.names, ", "))
			}
		}
	}
	for _, n := range rows.names {
		rows.quoted = append(rows.quoted, text.AppendJSONString(nil, []byte(n)))
		rows.types = append(rows.types, c.types[n])
	}
	return rows, nil
}

// csvRows are a CSV file's rows, each as a JSON object of its columns.
type csvRows struct {
	c      *csvConfig
	r      io.Closer
	cr     *csv.Reader
	names  []string
	quoted [][]byte
	types  []int // each column's type, by its place
}

// Next implements RowReader. A row with another number of fields than
// the columns, or one that does not parse, is given as its fields joined:
// not a JSON object, it is quarantined.
func (rs *csvRows) Next(dst []byte) ([]byte, int64, error) {
	row, err := rs.cr.Read()
	line := int64(0)
	if err == nil || row != nil {
		l, _ := rs.cr.FieldPos(0)
		line = int64(l)
	}
	var pe *csv.ParseError
	switch {
	case errors.Is(err, io.EOF):
		return dst, 0, io.EOF
	case errors.As(err, &pe):
		return append(dst, fmt.Sprintf("not CSV: %v", pe.Err)...), int64(pe.Line), nil
	case err != nil:
		return dst, 0, err
	case len(row) != len(rs.names):
		return append(dst, strings.Join(row, string(rs.c.comma))...), line, nil
	}
	dst = append(dst, '{')
	first := true
	for i, cell := range row {
		t := rs.types[i]
		if cell == "" && t != colString {
			continue // an empty cell is an absent field
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, rs.quoted[i]...)
		dst = append(dst, ':')
		dst = appendCell(dst, cell, t)
	}
	return append(dst, '}'), line, nil
}

// appendCell appends a cell as a JSON value of its column's type: a cell
// that is not of it stays a string, which what reads it as its type then
// refuses (a sum of a string is a bad value).
func appendCell(dst []byte, cell string, t int) []byte {
	switch {
	case (t == colInfer || t == colNumber) && linedec.ValidNumber([]byte(cell)):
		return append(dst, cell...)
	case (t == colInfer || t == colBool) && (cell == "true" || cell == "false"):
		return strconv.AppendBool(dst, cell == "true")
	}
	return text.AppendJSONString(dst, []byte(cell))
}

func (rs *csvRows) Close() error { return rs.r.Close() }
