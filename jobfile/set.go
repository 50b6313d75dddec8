package jobfile

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LoadOptions change a job file as it is read.
type LoadOptions struct {
	// Set are overrides, path=value each (weir run --set): the value
	// replaces the field at path, or adds it. A path names fields as errors
	// do (window.tumbling, output[1].sqlite.path, source.kafka.sasl.password);
	// a value is YAML ({sliding: {size: 10m, slide: 1m}}, [a, b], 4) or,
	// when it does not read as one value, the text itself (-, a: b). They
	// are applied in order, before ${NAME} is expanded, and the result is
	// checked as the file is.
	Set []string
}

// setPath is one step of a --set path: a field, or an item of a list.
type setStep struct {
	name  string
	index int // -1: the field itself, not an item of it
}

// parseSetPath reads a --set path: fields by dots (a Kafka setting keeps
// its own dots: sasl.password), a list's item by [i].
func parseSetPath(path string) ([]setStep, error) {
	if path == "" {
		return nil, fmt.Errorf("expected path=value, such as window.tumbling=5m")
	}
	var steps []setStep
	for _, part := range splitSchemaPath(path) {
		st := setStep{name: part, index: -1}
		if i := strings.IndexByte(part, '['); i >= 0 {
			if !strings.HasSuffix(part, "]") {
				return nil, fmt.Errorf("%q: expected name[index]", part)
			}
			n, err := strconv.Atoi(part[i+1 : len(part)-1])
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%q: expected name[index] with an index from 0", part)
			}
			st.name, st.index = part[:i], n
		}
		if st.name == "" {
			return nil, fmt.Errorf("%q: a field name is missing", path)
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// setValue is the YAML node of a --set value.
func setValue(v string) *yaml.Node {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(v), &doc); err == nil && len(doc.Content) == 1 {
		n := doc.Content[0]
		switch {
		case strings.HasPrefix(strings.TrimSpace(v), "{") || strings.HasPrefix(strings.TrimSpace(v), "["):
			clearLines(n)
			return n
		case n.Kind == yaml.ScalarNode && (n.Style != 0 || n.Value == strings.TrimSpace(v)):
			clearLines(n)
			return n // a number, true, a quoted string: as YAML reads it
		}
	}
	n := &yaml.Node{}
	n.SetString(v) // "-", "a: b", "x #y": the text itself
	return n
}

// clearLines drops the positions of a node that did not come from the
// file: an error about it names no line.
func clearLines(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	for _, c := range n.Content {
		clearLines(c)
	}
}

// applySets applies the overrides to the job file's document.
func applySets(file string, doc *yaml.Node, sets []string) error {
	for _, s := range sets {
		path, value, ok := strings.Cut(s, "=")
		errf := func(format string, args ...any) error {
			return &Error{File: file, Field: path, Msg: "--set: " + fmt.Sprintf(format, args...)}
		}
		if !ok {
			return errf("expected path=value, such as window.tumbling=5m, got %q", s)
		}
		steps, err := parseSetPath(path)
		if err != nil {
			return errf("%v", err)
		}
		if len(doc.Content) == 0 {
			doc.Kind, doc.Content = yaml.DocumentNode, []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
		}
		n := doc.Content[0]
		where := ""
		for i, st := range steps {
			last := i == len(steps)-1
			if n.Kind != yaml.MappingNode {
				return errf("%s is not a mapping of fields: set it whole (--set %s={...})", orTop(where), orTop(where))
			}
			if where != "" {
				where += "."
			}
			where += st.name
			var val *yaml.Node
			for k := 0; k+1 < len(n.Content); k += 2 {
				if n.Content[k].Value == st.name {
					val = n.Content[k+1]
					if last && st.index < 0 {
						n.Content[k+1] = setValue(value)
					}
					break
				}
			}
			if val == nil {
				key := &yaml.Node{}
				key.SetString(st.name)
				val = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				switch {
				case st.index >= 0:
					val = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
				case last:
					val = setValue(value)
				}
				n.Content = append(n.Content, key, val)
			}
			if st.index >= 0 {
				where += fmt.Sprintf("[%d]", st.index)
				if val.Kind != yaml.SequenceNode {
					return errf("%s is not a list", st.name)
				}
				switch {
				case st.index < len(val.Content):
				case st.index == len(val.Content):
					val.Content = append(val.Content, &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"})
				default:
					return errf("%s has %d items: the next is [%d]", st.name, len(val.Content), len(val.Content))
				}
				if last {
					val.Content[st.index] = setValue(value)
				}
				val = val.Content[st.index]
			}
			n = val
		}
	}
	return nil
}

func orTop(where string) string {
	if where == "" {
		return "the job file"
	}
	return where
}

// Resolved is the job file as weir reads it: with the --set overrides
// applied and every ${NAME} expanded, as YAML that reads back to the same
// job. A secret shows as the ${NAME} it came from, or [redacted] when it
// was written in the file; a $ that would read as a variable is written $$.
func (j *Job) Resolved() []byte {
	if j.doc == nil {
		return nil
	}
	doc := copyNode(j.doc)
	walkScalars("", doc, func(_ string, v *yaml.Node) {
		if r := j.secrets.Redact(v.Value); r != v.Value {
			v.Value, v.Style = r, yaml.DoubleQuotedStyle
			return
		}
		if e := escapeDollars(v.Value); e != v.Value {
			v.Value = e
		}
	})
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return []byte(j.Text())
	}
	enc.Close()
	return b.Bytes()
}

// escapeDollars writes a $ that ${NAME} expansion would read as a variable
// or a $$ as $$: a $ before { or $.
func escapeDollars(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '$' && i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '$') {
			b.WriteString("$$")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func copyNode(n *yaml.Node) *yaml.Node {
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, k := range n.Content {
		c.Content[i] = copyNode(k)
	}
	return &c
}
