package jobfile

import (
	"slices"

	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
	"go.yaml.in/yaml/v3"
)

// CustomSource is a source of a registered kind.
type CustomSource struct {
	Kind   string
	Config plan.SourceConfig
}

// CustomOutput is an output of a registered kind.
type CustomOutput struct {
	Kind   string
	Config plan.SinkConfig
}

// yamlSettings are a registered kind's settings in a job file.
type yamlSettings struct {
	p *parser
	m *node
}

var _ plan.Settings = yamlSettings{}

func (s yamlSettings) String(name string) (string, bool, error) {
	v, n, err := s.m.str(name)
	return v, n != nil, err
}

func (s yamlSettings) Int(name string) (int, bool, error) { return s.m.integer(name) }

func (s yamlSettings) Bool(name string) (bool, bool, error) {
	b, err := s.m.boolean(name)
	return b, s.m.get(name) != nil, err
}

func (s yamlSettings) Duration(name string) (mtime.Time, bool, error) { return s.m.duration(name) }

func (s yamlSettings) Strings(name string) ([]string, bool, error) {
	v := s.m.get(name)
	switch {
	case v == nil:
		return nil, false, nil
	case v.Kind == yaml.ScalarNode && v.Tag != "!!null":
		return []string{v.Value}, true, nil
	case v.Kind == yaml.SequenceNode:
		var out []string
		for _, c := range v.Content {
			if c.Kind != yaml.ScalarNode {
				return nil, true, s.m.errf(c, s.m.field(name), "expected a list of strings")
			}
			out = append(out, c.Value)
		}
		return out, true, nil
	}
	return nil, true, s.m.errf(v, s.m.field(name), "expected a string or a list of strings")
}

func (s yamlSettings) Path(name string) (string, bool, error) {
	v, ok, err := s.String(name)
	if err != nil || !ok || v == "" {
		return v, ok, err
	}
	return s.p.resolve(v), true, nil
}

func (s yamlSettings) StringMap(name string) (map[string]string, bool, error) {
	v := s.m.get(name)
	switch {
	case v == nil || v.Kind == yaml.ScalarNode && v.Tag == "!!null":
		return nil, v != nil, nil
	case v.Kind != yaml.MappingNode:
		return nil, true, s.m.errf(v, s.m.field(name), "expected a mapping of names to strings")
	}
	out := make(map[string]string, len(v.Content)/2)
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		if val.Kind != yaml.ScalarNode || val.Tag == "!!null" {
			return nil, true, s.m.errf(val, s.m.field(name)+"."+k.Value, "expected a string")
		}
		out[k.Value] = val.Value
	}
	return out, true, nil
}

func (s yamlSettings) Errorf(name, format string, args ...any) error {
	return s.m.errf(s.m.get(name), s.m.field(name), format, args...)
}

// kindMapping checks a registered kind's mapping (its settings' names, and
// those it requires) and gives its settings.
func (p *parser) kindMapping(parent *node, kind string, fields []plan.Field) (yamlSettings, error) {
	m, err := parent.sub(kind)
	if err != nil {
		return yamlSettings{}, err
	}
	if m == nil {
		m, _ = asMapping(p.file, parent.field(kind), &yaml.Node{Kind: yaml.MappingNode, Line: parent.get(kind).Line})
	}
	if err := m.strict(plan.Names(fields)...); err != nil {
		return yamlSettings{}, err
	}
	for _, f := range fields {
		if f.Required && m.get(f.Name) == nil {
			return yamlSettings{}, m.errf(nil, m.field(f.Name), "missing: %s", f.Doc)
		}
	}
	return yamlSettings{p: p, m: m}, nil
}

// registeredKind is the first registered kind named in a mapping.
func registeredKind[K any](m *node, lookup func(string) (K, bool)) (string, K, bool) {
	for i := 0; i+1 < len(m.n.Content); i += 2 {
		if k, ok := lookup(m.n.Content[i].Value); ok {
			return m.n.Content[i].Value, k, true
		}
	}
	var zero K
	return "", zero, false
}

// sourceKindNames are the fields source may name: its own and the
// registered kinds'.
func sourceKindNames() []string {
	names := append(sourceShape.names(), formatFieldNames()...)
	for _, k := range plan.SourceKinds() {
		names = append(names, k.Name)
	}
	return names
}

// outputKindNames are the fields an output may name: its own and the
// registered kinds'.
func outputKindNames() []string {
	names := outputObject.names()
	for _, k := range plan.SinkKinds() {
		names = append(names, k.Name)
	}
	return names
}

// customSource reads source: {KIND: {...}} of a registered kind.
func (p *parser) customSource(s *node, j *Job, name string, k plan.SourceKind) error {
	for i := 0; i < len(s.n.Content); i += 2 {
		if f := s.n.Content[i].Value; f != name && !slices.Contains(formatFieldNames(), f) {
			return s.errf(nil, "source", "choose one of file, kafka and %s", name)
		}
	}
	set, err := p.kindMapping(s, name, k.Fields)
	if err != nil {
		return err
	}
	cfg, err := k.Parse(set)
	if err != nil {
		return err
	}
	j.Custom = &CustomSource{Kind: name, Config: cfg}
	j.inputName, j.inputLine = cfg.Reads(), s.get(name).Line
	return nil
}

// customOutput reads output: {KIND: {...}} of a registered kind.
func (p *parser) customOutput(m *node, field, name string, k plan.SinkKind, o *Output) error {
	set, err := p.kindMapping(m, name, k.Fields)
	if err != nil {
		return err
	}
	cfg, err := k.Parse(set)
	if err != nil {
		return err
	}
	if o.Field = field; k.PanesOnly && o.Role() != "results" {
		return m.errf(m.get(name), field+"."+name, "a %s output holds panes only: give %s a file or a topic", name, field)
	}
	o.Custom = &CustomOutput{Kind: name, Config: cfg}
	return nil
}
