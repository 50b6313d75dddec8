package jobfile

import (
	"fmt"
	"strings"
)

// Reference is the job file's reference in Markdown: every field, by its
// path, with what its value may be and what it does, generated from the
// definitions the parser reads the fields with (as Schema is), so that it
// cannot drift from them (docs/job-file-reference.md).
func Reference() []byte {
	var b strings.Builder
	b.WriteString("# The job file: every field\n\n")
	b.WriteString("Generated from the definitions weir reads a job file with (`go test ./jobfile -run TestReferenceFile -update-schema` writes it; a test fails when it differs). ")
	b.WriteString("A path names a field as errors and `--set` do: `a.b` is field `b` of mapping `a`, `a[]` an item of list `a`, `a.NAME` any name of mapping `a`. ")
	b.WriteString("Where a field takes one of several forms, each form's fields are listed under the same path. ")
	b.WriteString("[The job file](job-file.md) explains them with an example.\n\n")
	b.WriteString("| field | value | what it does |\n|---|---|---|\n")
	r := referenceRows{seen: map[string]bool{}}
	r.object("", withKinds(jobShape, map[*shape]*shape{}), 0)
	for _, row := range r.rows {
		b.WriteString(row)
	}
	return []byte(b.String())
}

// referenceRows are the reference's rows, a field a row, once per path.
type referenceRows struct {
	rows []string
	seen map[string]bool
}

// object adds the rows of the fields of the object shape s at path.
func (r *referenceRows) object(path string, s *shape, depth int) {
	for _, f := range s.Fields {
		p := f.Name
		if path != "" {
			p = path + "." + f.Name
		}
		r.field(p, f.Shape, depth)
	}
}

// field adds the row of the field at path and those of what it holds.
func (r *referenceRows) field(path string, s *shape, depth int) {
	if r.seen[path] || depth > 8 {
		return
	}
	r.seen[path] = true
	r.rows = append(r.rows, fmt.Sprintf("| `%s` | %s | %s |\n", path, cell(valueOf(s)), cell(s.Doc)))
	r.inner(path, s, depth)
}

// inner adds the rows of the fields s holds at path: an object's, a list's
// items', a mapping's values', each form's of a oneOf.
func (r *referenceRows) inner(path string, s *shape, depth int) {
	switch s.Kind {
	case kObject:
		r.object(path, s, depth+1)
	case kList:
		if s.Item.Kind == kObject || s.Item.Kind == kOneOf {
			r.inner(path+"[]", s.Item, depth+1)
		}
	case kMap:
		if s.Item.Kind == kObject || s.Item.Kind == kOneOf {
			r.inner(path+".NAME", s.Item, depth+1)
		}
	case kOneOf:
		for _, o := range s.OneOf {
			r.inner(path, o, depth+1)
		}
	}
}

// valueOf says what a value of s may be.
func valueOf(s *shape) string {
	switch s.Kind {
	case kString:
		if s.Pattern != "" {
			return "text matching `" + s.Pattern + "`"
		}
		return "text"
	case kField:
		return "a field name (`a.b` for a nested one)"
	case kDuration:
		return "a duration (`500ms`, `2s`, `5m`, `1h30m`)"
	case kBool:
		return "true or false"
	case kInt:
		switch {
		case s.Max > 0:
			return fmt.Sprintf("a whole number from %d to %d", s.Min, s.Max)
		case s.Min != 0:
			return fmt.Sprintf("a whole number from %d", s.Min)
		}
		return "a whole number"
	case kEnum:
		return "one of " + strings.Join(quoted(s.Enum), ", ")
	case kObject:
		if len(s.Required) > 0 {
			req := strings.Join(quoted(s.Required), ", ")
			var alts []string
			for _, set := range s.Either {
				alts = append(alts, strings.Join(quoted(set), ", "))
			}
			if len(alts) > 0 {
				req += "; and " + strings.Join(alts, ", or ")
			}
			return "a mapping (required: " + req + ")"
		}
		return "a mapping"
	case kMap:
		return "a mapping of names to " + itemOf(s.Item)
	case kList:
		return "a list of " + itemOf(s.Item)
	case kRef:
		return "a trigger (a mapping of one of the fields `trigger.count` to `trigger.or_finally`)"
	case kOneOf:
		var alts []string
		for _, o := range s.OneOf {
			alts = append(alts, valueOf(o))
		}
		return strings.Join(alts, "; or ")
	}
	return "?"
}

// itemOf is valueOf an item of a list or a mapping, bracketed when it
// takes several forms.
func itemOf(s *shape) string {
	if s.Kind == kOneOf {
		return "(" + valueOf(s) + ")"
	}
	return valueOf(s)
}

func quoted(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = "`" + s + "`"
	}
	return out
}

// cell is s fit for a Markdown table's cell: its pipes escaped, on one line.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}
