package jobfile

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/weirstream/weir/internal/text"
	"github.com/weirstream/weir/mtime"
)

// Error is a mistake in a job file: where it is and what was expected. It
// prints on one line: "job.yaml:7: window.sliding.slide: ...".
type Error struct {
	File  string
	Line  int
	Field string
	Msg   string
}

// Error is the mistake on one line: the file, its line and the field when
// known, then the message.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// node is a YAML mapping being read.
type node struct {
	file string
	path string // dotted field path of this mapping
	n    *yaml.Node
}

func (p *node) errf(n *yaml.Node, field, format string, args ...any) *Error {
	line := 0
	if n != nil {
		line = n.Line
	} else if p.n != nil {
		line = p.n.Line
	}
	return &Error{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)}
}

func (p *node) field(name string) string {
	if p.path == "" {
		return name
	}
	return p.path + "." + name
}

func asMapping(file, path string, n *yaml.Node) (*node, error) {
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: n.Line, Field: path, Msg: "expected a mapping of fields (name: value)"}
	}
	return &node{file: file, path: path, n: n}, nil
}

// get returns the value of key, or nil.
func (p *node) get(key string) *yaml.Node {
	for i := 0; i+1 < len(p.n.Content); i += 2 {
		if p.n.Content[i].Value == key {
			return p.n.Content[i+1]
		}
	}
	return nil
}

// strict reports the first key that is not one of known, with the closest
// known name as a suggestion. It is called before a mapping's fields are
// read, so that a typo is reported as a typo, not as a missing field.
func (p *node) strict(known ...string) error {
	for i := 0; i+1 < len(p.n.Content); i += 2 {
		k := p.n.Content[i]
		if contains(known, k.Value) {
			continue
		}
		msg := fmt.Sprintf("unknown field %q", k.Value)
		if s := text.Suggest(k.Value, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		} else {
			sorted := append([]string(nil), known...)
			sort.Strings(sorted)
			msg += "; expected one of " + strings.Join(sorted, ", ")
		}
		return p.errf(k, p.field(k.Value), "%s", msg)
	}
	return nil
}

func (p *node) str(key string) (string, *yaml.Node, error) {
	v := p.get(key)
	if v == nil {
		return "", nil, nil
	}
	if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
		return "", v, p.errf(v, p.field(key), "expected a string")
	}
	return v.Value, v, nil
}

func (p *node) boolean(key string) (bool, error) {
	v := p.get(key)
	if v == nil {
		return false, nil
	}
	b, err := strconv.ParseBool(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil {
		return false, p.errf(v, p.field(key), "expected true or false, got %q", v.Value)
	}
	return b, nil
}

func (p *node) integer(key string) (int, bool, error) {
	v := p.get(key)
	if v == nil {
		return 0, false, nil
	}
	i, err := strconv.Atoi(v.Value)
	if v.Kind != yaml.ScalarNode || err != nil || i < 0 {
		return 0, true, p.errf(v, p.field(key), "expected a whole number, got %q", v.Value)
	}
	return i, true, nil
}

// duration reads a duration ("2s", "1m30s", "250ms", "1d", or 0).
func (p *node) duration(key string) (mtime.Time, bool, error) {
	v := p.get(key)
	if v == nil {
		return 0, false, nil
	}
	d, err := p.durationOf(v, p.field(key))
	return d, true, err
}

func (p *node) durationOf(v *yaml.Node, field string) (mtime.Time, error) {
	if v.Kind != yaml.ScalarNode {
		return 0, p.errf(v, field, "expected a duration such as 2s, 5m or 1h")
	}
	d, err := mtime.ParseDuration(v.Value)
	if err != nil {
		return 0, p.errf(v, field, "expected a duration such as 2s, 5m or 1h, got %q", v.Value)
	}
	if d < 0 {
		return 0, p.errf(v, field, "must not be negative, got %q", v.Value)
	}
	return d, nil
}

func (p *node) sub(key string) (*node, error) {
	v := p.get(key)
	if v == nil {
		return nil, nil
	}
	m, err := asMapping(p.file, p.field(key), v)
	if err != nil {
		return nil, err
	}
	return m, nil
}
