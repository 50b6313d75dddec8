package secret

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"testing"
)

func TestNamed(t *testing.T) {
	for name, want := range map[string]bool{
		"sasl.password": true, "http.token": true, "password": true, "PGPASSWORD": true, "DB_PASS": true,
		"AWS_SECRET_ACCESS_KEY": true, "api_key": true, "GITHUB_TOKEN": true,
		"key": false, "key_column": false, "ssl.key.location": false, "sasl.username": false, "compass": false, "dsn": false,
	} {
		if Named(name) != want {
			t.Errorf("Named(%q) = %v", name, !want)
		}
	}
}

func TestDSNPassword(t *testing.T) {
	for dsn, want := range map[string]string{
		"postgres://weir:p%2Fw@db/m":                    "p/w",
		"postgres://weir@db/m?password=x%20y&sslmode=1": "x y",
		"host=db password='a b\\'c' user=weir":          "a b'c",
		"host=db password=plain":                        "plain",
		"postgres://weir@db/m":                          "",
		"host=db user=weir":                             "",
	} {
		got, ok := DSNPassword(dsn)
		if got != want || ok != (want != "") {
			t.Errorf("DSNPassword(%q) = %q, %v", dsn, got, ok)
		}
	}
}

// A secret is redacted in every form it travels in; in JSON only inside
// strings, so that a secret of digits leaves the numbers alone.
func TestSetRedacts(t *testing.T) {
	s := &Set{}
	s.Add(`a/b@c "d"`, "${PW}")
	s.Add("1234", Mask)
	for in, want := range map[string]string{
		`raw a/b@c "d" end`:       "raw ${PW} end",
		"url a%2Fb%40c%20%22d%22": "url ${PW}",
		`go "a/b@c \"d\""`:        `go "${PW}"`,
		"pin 1234":                "pin [redacted]",
	} {
		if got := s.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	doc, _ := json.Marshal(map[string]any{"n": 1234, "err": `dial: a/b@c "d" refused, pin 1234`})
	got := s.RedactJSON(doc)
	if want := `{"err":"dial: ${PW} refused, pin [redacted]","n":1234}`; string(got) != want {
		t.Errorf("RedactJSON: %s, want %s", got, want)
	}
	var b bytes.Buffer
	s.Writer(&b).Write([]byte("weir: pin 1234\n"))
	if b.String() != "weir: pin [redacted]\n" {
		t.Errorf("Writer: %q", b.String())
	}
	err := s.RedactError(&fs.PathError{Op: "open", Path: "1234", Err: fs.ErrNotExist})
	var pe *fs.PathError
	if err.Error() != "open [redacted]: file does not exist" || !errors.As(err, &pe) {
		t.Errorf("RedactError: %v", err)
	}
	var none *Set
	if none.Redact("1234") != "1234" {
		t.Error("a nil set redacts")
	}
}
