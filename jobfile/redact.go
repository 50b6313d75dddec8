package jobfile

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/weirstream/weir/internal/secret"
	"github.com/weirstream/weir/plan"
)

// Redact returns s with every secret of the job replaced by what may be
// shown instead (the ${NAME} it came from, or [redacted]): the one function
// every log line, error, status and view of the job file goes through (see
// package internal/secret for what a secret is).
func (j *Job) Redact(s string) string { return j.secrets.Redact(s) }

// RedactJSON is Redact applied to the strings of a JSON document.
func (j *Job) RedactJSON(doc []byte) []byte { return j.secrets.RedactJSON(doc) }

// RedactError is err with its message redacted.
func (j *Job) RedactError(err error) error { return j.secrets.RedactError(err) }

// RedactWriter returns a writer that redacts each Write (a log line) before
// passing it on to w.
func (j *Job) RedactWriter(w io.Writer) io.Writer { return j.secrets.Writer(w) }

// Shown is a setting of the job as the console shows it: redacted, and
// every value that came from an environment variable shown as the
// ${NAME} it came from, secret or not.
func (j *Job) Shown(s string) string {
	s = j.Redact(s)
	vars := slices.Clone(j.vars)
	slices.SortStableFunc(vars, func(a, b expansion) int { return len(b.Value) - len(a.Value) })
	for _, v := range vars {
		if v.Value != "" {
			s = strings.ReplaceAll(s, v.Value, "${"+v.Var+"}")
		}
	}
	return s
}

// ShownAll is Shown of each of list.
func (j *Job) ShownAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = j.Shown(s)
	}
	return out
}

// addSecrets adds to the set the values of the tree under n (expanded) that
// are secrets: every value of a field named like one, and the password of
// every connection string.
func addSecrets(set *secret.Set, field string, n *yaml.Node) {
	walkScalars(field, n, func(field string, v *yaml.Node) {
		if secret.Named(lastPart(field)) {
			set.Add(v.Value, secret.Mask)
		}
		for _, pw := range secret.DSNSecrets(v.Value) {
			set.Add(pw, secret.Mask)
		}
	})
}

// addKindSecrets adds to the set the secrets a registered kind's settings
// say they hold (plan.Secreter).
func addKindSecrets(set *secret.Set, cfg any) {
	if s, ok := cfg.(plan.Secreter); ok {
		for _, v := range s.Secrets() {
			set.Add(v, secret.Mask)
		}
	}
}

func lastPart(field string) string {
	if i := strings.LastIndexAny(field, ".]"); i >= 0 {
		return field[i+1:]
	}
	return field
}

// walkScalars calls f for every scalar value under n, with its field.
func walkScalars(field string, n *yaml.Node, f func(field string, v *yaml.Node)) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			walkScalars(field, c, f)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			name := n.Content[i].Value
			if field != "" {
				name = field + "." + name
			}
			walkScalars(name, n.Content[i+1], f)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			walkScalars(fmt.Sprintf("%s[%d]", field, i), c, f)
		}
	case yaml.ScalarNode:
		f(field, n)
	}
}

// Text is the job file as it was read, with its secrets redacted: the value
// of every field named like a secret and the password of every connection
// string are [redacted] unless they are nothing but variables (${NAME},
// which shows no secret), and every secret is then redacted wherever else
// it occurs (a comment). The rest is as written, comments and layout
// included.
func (j *Job) Text() string {
	return redactText(j.text, j.secrets)
}

// redactText is Text for a file's bytes.
func redactText(text []byte, set *secret.Set) string {
	var doc yaml.Node
	if err := yaml.Unmarshal(text, &doc); err != nil {
		return set.Redact(string(text))
	}
	type change struct {
		n    *yaml.Node
		with string
	}
	var changes []change
	walkScalars("", &doc, func(field string, v *yaml.Node) {
		if r, ok := redactValue(field, v.Value); ok {
			changes = append(changes, change{v, r})
		}
	})
	if len(changes) == 0 {
		return set.Redact(string(text))
	}
	lines := bytes.SplitAfter(text, []byte("\n"))
	// From the end of the file, so that a change leaves the positions of
	// those before it as they are.
	sort.Slice(changes, func(a, b int) bool {
		if changes[a].n.Line != changes[b].n.Line {
			return changes[a].n.Line > changes[b].n.Line
		}
		return changes[a].n.Column > changes[b].n.Column
	})
	for _, c := range changes {
		line, col := c.n.Line-1, c.n.Column-1
		end, ok := 0, line < len(lines) && col <= len(lines[line])
		if ok {
			end, ok = scalarEnd(lines[line], col, c.n)
		}
		if !ok {
			// A scalar over several lines: the file is shown as YAML
			// writes it instead (without its comments' places).
			for _, c := range changes {
				c.n.Value, c.n.Style = c.with, yaml.DoubleQuotedStyle
			}
			b, err := yaml.Marshal(&doc)
			if err != nil {
				return secret.Mask
			}
			return set.Redact(string(b))
		}
		l := lines[line]
		lines[line] = append(append(append([]byte(nil), l[:col]...), strconv.Quote(c.with)...), l[end:]...)
	}
	return set.Redact(string(bytes.Join(lines, nil)))
}

// scalarEnd is where the scalar n, starting at col of line, ends on that
// line; ok is false when it does not end there.
func scalarEnd(line []byte, col int, n *yaml.Node) (int, bool) {
	rest := line[col:]
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		for i := 1; i < len(rest); i++ {
			switch rest[i] {
			case '\\':
				i++
			case '"':
				return col + i + 1, true
			}
		}
	case n.Style&yaml.SingleQuotedStyle != 0:
		for i := 1; i < len(rest); i++ {
			if rest[i] == '\'' {
				if i+1 < len(rest) && rest[i+1] == '\'' {
					i++
					continue
				}
				return col + i + 1, true
			}
		}
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0:
		if bytes.HasPrefix(rest, []byte(n.Value)) {
			return col + len(n.Value), true
		}
	}
	return 0, false
}

// redactValue is a value of the job file as written (variables
// unexpanded) with its secrets hidden, and whether that changed it. A
// value made only of variables (${NAME}, no default) shows no secret.
func redactValue(field, v string) (string, bool) {
	pieces, err := splitVars(v)
	if err != nil {
		if secret.Named(lastPart(field)) {
			return secret.Mask, true
		}
		return v, false
	}
	// Each variable as a token of letters and digits, so that a
	// connection string with variables still parses.
	var b strings.Builder
	tokens := map[string]string{}
	for i, pc := range pieces {
		if pc.name == "" || pc.hasDef {
			b.WriteString(pc.lit)
			if pc.hasDef {
				b.WriteString(pc.def) // a default is written in the file
			}
			continue
		}
		tok := fmt.Sprintf("WEIRVAR%dX", i)
		tokens[tok] = pc.raw
		b.WriteString(tok)
	}
	text := b.String()
	onlyVars := func(s string) bool {
		for tok := range tokens {
			s = strings.ReplaceAll(s, tok, "")
		}
		return s == ""
	}
	restore := func(s string) string {
		for tok, raw := range tokens {
			s = strings.ReplaceAll(s, tok, raw)
		}
		return s
	}
	if secret.Named(lastPart(field)) {
		if onlyVars(text) {
			return v, false
		}
		return secret.Mask, true
	}
	shows := false
	for _, pw := range secret.DSNSecrets(text) {
		shows = shows || !onlyVars(pw)
	}
	if !shows {
		return v, false
	}
	if !strings.Contains(text, "://") {
		kvs := secret.KeyValues(text)
		for i := len(kvs) - 1; i >= 0; i-- {
			if kv := kvs[i]; secret.Named(kv.Key) {
				text = text[:kv.Start] + secret.Mask + text[kv.End:]
			}
		}
		return restore(text), true
	}
	return restore(redactURLSecrets(text)), true
}

// redactURLSecrets replaces the secrets of a URL (the password of its user
// information, every parameter named like a secret) by the mask, leaving
// the rest as written. It finds them as secret.DSNSecrets does.
func redactURLSecrets(u string) string {
	start := strings.Index(u, "://") + 3
	q := start
	if at := strings.LastIndexByte(u[start:], '@'); at >= 0 {
		if colon := strings.IndexByte(u[start:start+at], ':'); colon >= 0 {
			u = u[:start+colon+1] + secret.Mask + u[start+at:]
		}
		q = strings.LastIndexByte(u, '@') + 1
	}
	k := strings.IndexByte(u[q:], '?')
	if k < 0 {
		return u
	}
	head, query, frag := u[:q+k+1], u[q+k+1:], ""
	if f := strings.IndexByte(query, '#'); f >= 0 {
		query, frag = query[:f], query[f:]
	}
	params := strings.Split(query, "&")
	for i, kv := range params {
		name, _, _ := strings.Cut(kv, "=")
		if n, err := url.QueryUnescape(name); err == nil && secret.Named(n) {
			params[i] = name + "=" + secret.Mask
		}
	}
	return head + strings.Join(params, "&") + frag
}
