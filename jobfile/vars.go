package jobfile

import (
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/weirstream/weir/internal/secret"
)

// The job file's one rule for environment variables, applied to every
// string value of the file before anything reads it (expandVars):
//
//	${NAME}            the value of NAME; an error naming it and the field when NAME is not set
//	${NAME:-default}   the value of NAME, or default when NAME is not set or empty
//	$$                 a literal $
//	$ before anything but { or $ stays a literal $ ("pa$word" is pa$word)
//
// Field names (the keys of mappings) are never expanded. In a PostgreSQL
// connection string a value is escaped for where it lands: URL-escaped in
// the user information of a URL (postgres://weir:${PGPASSWORD}@db/metrics
// works whatever the password holds), quoted in a key=value setting
// (password=${PGPASSWORD}).

// varPiece is a piece of a string value: literal text, or a variable.
type varPiece struct {
	lit    string // literal text ($$ already made $)
	name   string // the variable, when not empty
	def    string // its default
	hasDef bool
	raw    string // the variable as written, ${...}
}

var varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// splitVars cuts a string value into literal text and variables.
func splitVars(s string) ([]varPiece, error) {
	var out []varPiece
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			out = append(out, varPiece{lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			lit.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			lit.WriteByte('$')
			i++
		case '{':
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return nil, fmt.Errorf("%q has a ${ with no closing }; write $$ for a literal $", s[i:])
			}
			body := s[i+2 : i+2+end]
			name, def, hasDef := strings.Cut(body, ":-")
			if !varNameRE.MatchString(name) {
				return nil, fmt.Errorf("${%s}: expected ${NAME} or ${NAME:-default}, NAME of letters, digits and _ (write $$ for a literal $)", body)
			}
			flush()
			out = append(out, varPiece{name: name, def: def, hasDef: hasDef, raw: s[i : i+3+end]})
			i += 2 + end
		default:
			lit.WriteByte('$')
		}
	}
	flush()
	return out, nil
}

// expansion is a value that came from an environment variable.
type expansion struct {
	Field string // where: output[0].postgres.dsn
	Var   string
	Value string // as the environment gave it (before any escaping)
	// Secret: the value is a secret (its field or its variable is named
	// like one, or it is the user information of a connection string):
	// it is redacted from everything weir shows.
	Secret bool
}

// expandVars applies the rule above to every string value under n, field
// naming n's place in the file, and returns the values that came from
// variables.
func expandVars(file, field string, n *yaml.Node, lookup func(string) (string, bool)) ([]expansion, error) {
	var out []expansion
	var walk func(field string, n *yaml.Node) error
	walk = func(field string, n *yaml.Node) error {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if err := walk(field, c); err != nil {
					return err
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				f := n.Content[i].Value
				if field != "" {
					f = field + "." + f
				}
				if err := walk(f, n.Content[i+1]); err != nil {
					return err
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if err := walk(fmt.Sprintf("%s[%d]", field, i), c); err != nil {
					return err
				}
			}
		case yaml.ScalarNode:
			if !strings.Contains(n.Value, "$") {
				return nil
			}
			v, exps, err := expandValue(field, n.Value, lookup)
			if err != nil {
				return &Error{File: file, Line: n.Line, Field: field, Msg: err.Error()}
			}
			n.Value = v
			out = append(out, exps...)
		}
		return nil
	}
	return out, walk(field, n)
}

// expandValue expands one string value of field.
func expandValue(field, s string, lookup func(string) (string, bool)) (string, []expansion, error) {
	pieces, err := splitVars(s)
	if err != nil {
		return "", nil, err
	}
	escape := make([]func(string) string, len(pieces))
	secretAt := make([]bool, len(pieces))
	if strings.HasSuffix(field, ".postgres.dsn") {
		escape, secretAt = dsnEscapes(pieces)
	}
	last := field[strings.LastIndexByte(field, '.')+1:]
	var b strings.Builder
	var exps []expansion
	for i, pc := range pieces {
		if pc.name == "" {
			b.WriteString(pc.lit)
			continue
		}
		v, ok := lookup(pc.name)
		if (!ok || v == "") && pc.hasDef {
			v, ok = pc.def, true
		}
		if !ok {
			return "", nil, fmt.Errorf("${%s} is not set, and has no default (${%s:-default} gives one)", pc.name, pc.name)
		}
		exps = append(exps, expansion{Field: field, Var: pc.name, Value: v,
			Secret: secret.Named(last) || secret.Named(pc.name) || secretAt[i]})
		if escape[i] != nil {
			v = escape[i](v)
		}
		b.WriteString(v)
	}
	return b.String(), exps, nil
}

// literal is the pieces' literal text, a variable standing as \x00.
func literal(pieces []varPiece) string {
	var b strings.Builder
	for _, pc := range pieces {
		if pc.name != "" {
			b.WriteByte(0)
		} else {
			b.WriteString(pc.lit)
		}
	}
	return b.String()
}

// dsnEscapes says how each variable of a connection string is escaped,
// and which are secrets. In a URL: URL-escaped in the user information
// (after "://", before the last @ of the authority, which ends at the first
// /, ? or # of the literal text), a secret there; query-escaped in the
// query, a secret after password=. In key=value form: see keyValueEscapes.
func dsnEscapes(pieces []varPiece) (escape []func(string) string, secretAt []bool) {
	escape, secretAt = make([]func(string) string, len(pieces)), make([]bool, len(pieces))
	text := literal(pieces)
	start := strings.Index(text, "://")
	if start < 0 {
		escape = keyValueEscapes(pieces)
		for i := range pieces {
			secretAt[i] = pieces[i].name != "" && keyValueSecret(pieces, i)
		}
		return escape, secretAt
	}
	start += 3
	end := len(text)
	if k := strings.IndexAny(text[start:], "/?#"); k >= 0 {
		end = start + k
	}
	at := strings.LastIndexByte(text[start:end], '@') + start
	query := strings.IndexByte(text, '?')
	pos := 0
	for i, pc := range pieces {
		if pc.name == "" {
			pos += len(pc.lit)
			continue
		}
		switch {
		case at >= start && pos >= start && pos < at:
			escape[i], secretAt[i] = secret.EscapeURL, true
		case query >= 0 && pos > query:
			escape[i] = secret.EscapeURL
			secretAt[i] = strings.HasSuffix(text[:pos], "password=")
		}
		pos++
	}
	return escape, secretAt
}

// keyValueEscapes escapes the variables of a key=value connection string:
// one that is a whole value is quoted, one inside quotes escaped.
func keyValueEscapes(pieces []varPiece) []func(string) string {
	out := make([]func(string) string, len(pieces))
	text := literal(pieces)
	inQuote := false
	pos := 0
	for i, pc := range pieces {
		if pc.name == "" {
			for j := 0; j < len(pc.lit); j++ {
				switch c := pc.lit[j]; {
				case c == '\\' && inQuote:
					j++
				case c == '\'':
					inQuote = !inQuote
				}
			}
			pos += len(pc.lit)
			continue
		}
		before := strings.TrimRight(text[:pos], " ")
		after := text[pos+1:]
		switch {
		case inQuote:
			out[i] = func(v string) string { q := secret.QuoteValue(v); return q[1 : len(q)-1] }
		case strings.HasSuffix(before, "=") && (after == "" || after[0] == ' '):
			out[i] = secret.QuoteValue
		}
		pos++
	}
	return out
}

// keyValueSecret reports whether the variable i of a key=value connection
// string is in the value of its password setting.
func keyValueSecret(pieces []varPiece, i int) bool {
	text := literal(pieces)
	pos := 0
	for k := 0; k < i; k++ {
		if pieces[k].name != "" {
			pos++
		} else {
			pos += len(pieces[k].lit)
		}
	}
	for _, kv := range secret.KeyValues(text) {
		if pos >= kv.Start && pos < kv.End {
			return kv.Key == "password"
		}
	}
	return false
}
