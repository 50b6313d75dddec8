package jobfile

import (
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/weirstream/weir/formats"
	"github.com/weirstream/weir/plan"
	"go.yaml.in/yaml/v3"
)

// SourceFormat is the format of a source's records other than JSON lines.
type SourceFormat struct {
	Name   string
	Config plan.FormatConfig
	// Registry is the schema registry the source names, or nil.
	Registry *plan.Registry

	file formats.FileFormat // a file of the format, read whole
}

// File is the format of a file read whole (source.file), or nil.
func (f *SourceFormat) File() formats.FileFormat { return f.file }

// registryFields are the settings of source.registry.
var registryFields = []string{"url", "username", "password", "token", "subject"}

// registrySettings reads the registry of m (a source or an output: field
// names it), of the settings given, or nil when it has none.
func registrySettings(m *node, field string, settings []string) (*plan.Registry, error) {
	rn, err := m.sub("registry")
	if err != nil || rn == nil {
		return nil, err
	}
	if err := rn.strict(settings...); err != nil {
		return nil, err
	}
	reg := &plan.Registry{}
	for _, f := range []struct {
		name string
		to   *string
	}{{"url", &reg.URL}, {"username", &reg.Username}, {"password", &reg.Password}, {"token", &reg.Token}, {"subject", &reg.Subject}} {
		if *f.to, _, err = rn.str(f.name); err != nil {
			return nil, err
		}
	}
	if reg.URL == "" {
		return nil, rn.errf(nil, field+".registry.url", "missing: the schema registry's URL (http://127.0.0.1:8081)")
	}
	if u, err := url.Parse(reg.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, rn.errf(rn.get("url"), field+".registry.url", "expected an http or https URL, such as http://127.0.0.1:8081")
	}
	if reg.Token != "" && (reg.Username != "" || reg.Password != "") {
		return nil, rn.errf(rn.get("token"), field+".registry.token", "choose one of token (bearer) and username and password (basic)")
	}
	return reg, nil
}

// formatFieldNames are the fields of a source that belong to its format:
// format, registry, and every registered format's settings.
func formatFieldNames() []string {
	names := []string{"format", "registry"}
	for _, k := range plan.Formats() {
		for _, f := range k.Fields {
			if !slices.Contains(names, f.Name) {
				names = append(names, f.Name)
			}
		}
	}
	return names
}

// sourceFormat reads a source's format and its settings, after the source
// itself.
func (p *parser) sourceFormat(root *node, j *Job) error {
	v := root.get("source")
	if v == nil || v.Kind != yaml.MappingNode {
		return nil
	}
	s, err := root.sub("source")
	if err != nil {
		return err
	}
	name, n, err := s.str("format")
	if err != nil {
		return err
	}
	if name == "" || name == "json" {
		for _, f := range formatFieldNames()[1:] {
			if s.get(f) != nil {
				return s.errf(s.get(f), s.field(f), "belongs to a format: give format (one of %s)", strings.Join(formatNames(), ", "))
			}
		}
		return nil
	}
	k, ok := plan.LookupFormat(name)
	if !ok {
		return s.errf(n, "source.format", "unknown format %q; expected one of %s", name, strings.Join(formatNames(), ", "))
	}
	for _, f := range formatFieldNames()[2:] {
		if s.get(f) != nil && !slices.Contains(plan.Names(k.Fields), f) {
			return s.errf(s.get(f), s.field(f), "is not a setting of format %s", name)
		}
	}
	reg, err := registrySettings(s, "source", registryFields)
	if err != nil {
		return err
	}
	if reg != nil && !k.Registry {
		return s.errf(s.get("registry"), "source.registry", "format %s is not read through a schema registry", name)
	}
	cfg, err := k.Parse(yamlSettings{p: p, m: s}, reg)
	if err != nil {
		return err
	}
	f := &SourceFormat{Name: name, Config: cfg, Registry: reg}
	if j.Kafka == nil && j.Custom == nil {
		// A file of its own: read whole, a row a record.
		ff, ok := cfg.(formats.FileFormat)
		switch {
		case !ok || reg != nil:
			return s.errf(n, "source.format", "format %s is read from a Kafka topic, not a file", name)
		case j.Input == "-" || j.Follow:
			return s.errf(n, "source.format", "a file of format %s is read whole: not standard input, not followed", name)
		}
		f.file = ff
		j.Format = f
		return nil
	}
	if rc, ok := cfg.(plan.RecordsChecker); ok {
		if err := rc.CheckRecords(); err != nil {
			return s.errf(n, "source.format", "%v", err)
		}
	}
	j.Format = f
	return nil
}

func formatNames() []string {
	names := []string{"json"}
	for _, k := range plan.Formats() {
		names = append(names, k.Name)
	}
	sort.Strings(names[1:])
	return names
}

// formatShapes are the source's fields of its format, as the job file's
// schema lists them: format, registry, and every registered format's
// settings.
func formatShapes() []field {
	fs := []field{
		{"format", enum("What the records are written in (default json: JSON lines).", formatNames()...)},
		{"registry", object("The schema registry whose framing the records have (magic byte 0, the schema's id), and that serves their schemas by id.", []string{"url"},
			field{"url", str("The registry's URL (http://127.0.0.1:8081).")},
			field{"username", str("Basic authentication's user (with password).")},
			field{"password", str("Basic authentication's password: give it as ${VAR}.")},
			field{"token", str("A bearer token: give it as ${VAR}.")},
			field{"subject", str("The subject whose latest schema records are read as (default TOPIC-value).")},
		)},
	}
	seen := map[string]bool{}
	for _, k := range plan.Formats() {
		for _, f := range kindShape(k.Doc, k.Fields).Fields {
			if !seen[f.Name] {
				seen[f.Name] = true
				fs = append(fs, f)
			}
		}
	}
	return fs
}
