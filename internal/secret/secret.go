// Package secret is weir's one rule for what a secret is and how it is kept
// out of what weir shows: log lines, errors, the console's status, the job
// file as the console serves it.
//
// A secret is a value weir was given to authenticate with: the value of a
// field whose name says so (Named: sasl.password, http.token, a postgres
// password), the passwords of a connection string (DSNSecrets), what the
// settings of a registered kind say they hold (plan.Secreter: a webhook's
// URL and header values), and a value that came from an environment
// variable into one of those, or from a variable whose own name says so. A Set holds a job's secrets and replaces
// every occurrence of one, in any of the forms it travels in (as written,
// URL-escaped, quoted), by what may be shown instead: the ${NAME} it came
// from, or [redacted].
package secret

import (
	"encoding/json"
	"io"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Mask is what a secret written in the job file itself is shown as.
const Mask = "[redacted]"

// secretWords are the parts of a name that say it holds a secret.
var secretWords = []string{"password", "passwd", "pwd", "secret", "token", "credential", "passphrase", "apikey", "api_key", "private_key", "access_key", "auth_key"}

// secretParts are whole parts of a name (between _, . and -) that say it
// holds a secret, too short to be looked for inside words.
var secretParts = []string{"pass", "pw"}

// Named reports whether a field or variable name says that its value is a
// secret: sasl.password, http.token, PGPASSWORD, DB_PASS,
// AWS_SECRET_ACCESS_KEY. Names of things that are not secrets themselves
// (ssl.key.location, key, key_column) are not.
func Named(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	for _, part := range strings.FieldsFunc(n, func(r rune) bool { return r == '_' || r == '.' || r == '-' }) {
		for _, w := range secretParts {
			if part == w {
				return true
			}
		}
	}
	return false
}

// DSNSecrets returns the secrets of a connection string, each in the
// forms it is written in there: the password of a URL's user information
// (postgres://user:password@host/db), the value of every URL parameter and
// key=value setting whose name says it is a secret (password, sslpassword),
// as written and, when it is escaped, unescaped. It reads every form the
// drivers accept, and more: a URL that does not parse (a % that is not an
// escape, a password with @ or /) still has its password found, since a
// secret missed is shown and one found too many is only masked.
func DSNSecrets(dsn string) []string {
	var out []string
	add := func(v string) {
		if v == "" {
			return
		}
		out = append(out, v)
		for _, unescape := range []func(string) (string, error){url.PathUnescape, url.QueryUnescape} {
			if u, err := unescape(v); err == nil && u != v && u != "" && !slices.Contains(out, u) {
				out = append(out, u)
			}
		}
	}
	i := strings.Index(dsn, "://")
	if i < 0 {
		for _, kv := range KeyValues(dsn) {
			if Named(kv.Key) {
				add(kv.Value)
			}
		}
		return out
	}
	rest := dsn[i+3:]
	query := rest
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		// The user information ends at the last @: a password may hold
		// one, a host cannot.
		if colon := strings.IndexByte(rest[:at], ':'); colon >= 0 {
			add(rest[colon+1 : at])
		}
		query = rest[at+1:]
	}
	if q := strings.IndexByte(query, '?'); q >= 0 {
		query = query[q+1:]
		if f := strings.IndexByte(query, '#'); f >= 0 {
			query = query[:f]
		}
		for _, kv := range strings.Split(query, "&") {
			k, v, _ := strings.Cut(kv, "=")
			if name, err := url.QueryUnescape(k); err == nil {
				k = name
			}
			if Named(k) {
				add(v)
			}
		}
	}
	return out
}

// KeyValue is one setting of a key=value connection string, with where its
// value is in the string ([Start, End), quotes included).
type KeyValue struct {
	Key, Value string
	Start, End int
}

// KeyValues reads a key=value connection string as libpq does: settings
// separated by spaces, a value in single quotes when it holds spaces, with
// \' and \\ inside.
func KeyValues(s string) []KeyValue {
	var out []KeyValue
	i := 0
	for i < len(s) {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		k := i
		for i < len(s) && s[i] != '=' && s[i] != ' ' {
			i++
		}
		key := s[k:i]
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) || s[i] != '=' {
			return out // not key=value
		}
		i++
		for i < len(s) && s[i] == ' ' {
			i++
		}
		start := i
		raw := ""
		if i < len(s) && s[i] == '\'' {
			i++
			j := i
			for i < len(s) && s[i] != '\'' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			raw = s[j:min(i, len(s))]
			i++ // the closing quote
		} else {
			j := i
			for i < len(s) && s[i] != ' ' {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			raw = s[j:min(i, len(s))]
		}
		v := unquote.Replace(raw)
		out = append(out, KeyValue{Key: key, Value: v, Start: start, End: min(i, len(s))})
	}
	return out
}

// unquote undoes the escapes of a key=value setting's value, as pgx does.
var unquote = strings.NewReplacer(`\\`, `\`, `\'`, `'`)

// QuoteValue is v as a key=value connection string's value: quoted, with
// ' and \ escaped.
func QuoteValue(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// EscapeURL escapes a value for the user information (user:password@) or
// a query value of a URL: every byte but letters, digits and -._~ as %XX,
// so that a password with /, @, #, %, : or a space stays one password.
func EscapeURL(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte("0123456789ABCDEF"[c>>4])
		b.WriteByte("0123456789ABCDEF"[c&15])
	}
	return b.String()
}

// Set is the secrets of a job, with what each is shown as instead. The zero
// Set holds none; a nil *Set redacts nothing. Safe for concurrent use once
// filled.
type Set struct {
	mu    sync.RWMutex
	forms []form // every form of every secret, longest first
}

type form struct{ text, shown string }

// Add adds a secret, shown as shown (a ${NAME}, or Mask). An empty value is
// no secret; a value added twice keeps its first shown.
func (s *Set) Add(value, shown string) {
	if value == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.forms {
		if f.text == value {
			return
		}
	}
	q := strconv.Quote(value)
	j, _ := json.Marshal(value)
	kv := QuoteValue(value)
	ui := strings.TrimPrefix(url.UserPassword("", value).String(), ":")
	for _, text := range []string{value, EscapeURL(value), ui, url.QueryEscape(value), url.PathEscape(value), kv, kv[1 : len(kv)-1], q[1 : len(q)-1], string(j[1 : len(j)-1])} {
		dup := false
		for _, f := range s.forms {
			dup = dup || f.text == text
		}
		if !dup {
			s.forms = append(s.forms, form{text, shown})
		}
	}
	sort.SliceStable(s.forms, func(a, b int) bool { return len(s.forms[a].text) > len(s.forms[b].text) })
}

// Len is the number of secrets' forms held.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.forms)
}

// Redact returns text with every secret replaced by what it is shown as:
// the one function every line, error and status weir shows goes through.
func (s *Set) Redact(text string) string {
	if s == nil {
		return text
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, f := range s.forms {
		if strings.Contains(text, f.text) {
			text = strings.ReplaceAll(text, f.text, f.shown)
		}
	}
	return text
}

// RedactJSON is Redact applied to every string (keys and values) of a
// JSON document, so that the result is still JSON: a secret of digits
// leaves the numbers alone.
func (s *Set) RedactJSON(doc []byte) []byte {
	if s.Len() == 0 {
		return doc
	}
	var out []byte
	last := 0
	for i := 0; i < len(doc); i++ {
		if doc[i] != '"' {
			continue
		}
		end := i + 1
		for end < len(doc) && doc[end] != '"' {
			if doc[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(doc) {
			break
		}
		lit := doc[i : end+1]
		var v string
		if json.Unmarshal(lit, &v) == nil {
			if r := s.Redact(v); r != v {
				enc, _ := json.Marshal(r)
				out = append(append(out, doc[last:i]...), enc...)
				last = end + 1
			}
		}
		i = end
	}
	if out == nil {
		return doc
	}
	return append(out, doc[last:]...)
}

// Writer returns a writer that redacts each Write before passing it on
// (weir writes a log line, or a progress line, per Write).
func (s *Set) Writer(w io.Writer) io.Writer {
	if w == nil || s.Len() == 0 {
		return w
	}
	return &writer{s: s, w: w}
}

type writer struct {
	s *Set
	w io.Writer
}

func (w *writer) Write(b []byte) (int, error) {
	r := w.s.Redact(string(b))
	if r == string(b) {
		return w.w.Write(b)
	}
	if _, err := io.WriteString(w.w, r); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Error is an error whose message is redacted; Unwrap gives the original
// (for errors.Is and errors.As, never for printing).
type Error struct {
	Msg string
	Err error
}

// Error is the message, with no secret in it.
func (e *Error) Error() string { return e.Msg }

// Unwrap is the error it came from.
func (e *Error) Unwrap() error { return e.Err }

// RedactError returns err with its message redacted, or err itself when
// the message holds no secret.
func (s *Set) RedactError(err error) error {
	if err == nil || s.Len() == 0 {
		return err
	}
	msg := err.Error()
	if r := s.Redact(msg); r != msg {
		return &Error{Msg: r, Err: err}
	}
	return err
}
