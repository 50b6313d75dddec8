package job

import (
	"errors"
	"io"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"go.yaml.in/yaml/v3"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/formats"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/plan"
)

// A source's records are JSON lines unless the source names a format
// registered in package plan (source: {kafka: {...}, format: avro,
// registry: {url: ...}}): its decoder turns each record into the JSON
// object the line rules read, which parse then reads as it reads a line.
// A record the decoder refuses is quarantined with the decoder's reason,
// its raw bytes and its place (partition and offset), and the job goes on.

// SourceFormat is the format of a source's records other than JSON lines.
type SourceFormat struct {
	Name   string
	Config plan.FormatConfig
	// Registry is the schema registry the source names, or nil.
	Registry *plan.Registry

	dec  plan.Decoder
	file formats.FileFormat // a file of the format, read whole
	log  atomic.Pointer[func(string)]
}

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
	topic := ""
	if j.Kafka != nil {
		topic = j.Kafka.Topic
	}
	if f.dec, err = cfg.New(plan.Env{Job: j.Name, Field: "source", Log: f.logLine}, topic); err != nil {
		return s.errf(n, "source.format", "%v", err)
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

// logLine logs a line of the format's decoder in the job's log.
func (f *SourceFormat) logLine(s string) {
	if l := f.log.Load(); l != nil {
		(*l)(s)
	}
}

// useFormat gives the runnable's line parser the source's decoder, its
// log lines in the job's log.
func (rn *Runnable) useFormat() {
	if f := rn.j.Format; f != nil {
		l := func(s string) { rn.logf("%s", rn.j.Redact(s)) }
		f.log.Store(&l)
	}
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

// sampleRows is SampleInput of a file of a format of its own: its first n
// rows, as weir run reads them.
func sampleRows(j *Job, s *Sample, n int) (*Sample, error) {
	rows, err := j.Format.file.OpenFile(j.Input)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	s.Source = j.inputName
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
	}
	return s, nil
}
