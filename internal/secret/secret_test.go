package secret

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"slices"
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

// Every secret of a connection string is found, in every form the drivers
// accept, and in the forms it is written in: a URL that does not parse (an
// unescaped %), a password in both the user information and a parameter,
// characters a URL should escape.
func TestDSNSecrets(t *testing.T) {
	for dsn, want := range map[string][]string{
		"postgres://weir:p%2Fw@db/m":                              {"p%2Fw", "p/w"},
		"postgres://weir@db/m?password=x%20y&sslmode=1":           {"x%20y", "x y"},
		"postgres://weir:50%off@db/m":                             {"50%off"},
		"postgres://weir:one@db/m?password=two":                   {"one", "two"},
		"postgres://weir:a@b/c?d@db:5432/m?sslmode=verify-full":   {"a@b/c?d"},
		"postgres://weir@db/m?sslpassword=k3y&application_name=x": {"k3y"},
		"postgres://weir:pw@db/m#frag":                            {"pw"},
		"host=db password='a b\\'c' user=weir":                    {"a b'c"},
		"host=db password=plain sslpassword=other":                {"plain", "other"},
		"postgres://weir@db/m":                                    nil,
		"host=db user=weir passfile=/home/w/.pgpass":              nil,
	} {
		if got := DSNSecrets(dsn); !slices.Equal(got, want) {
			t.Errorf("DSNSecrets(%q) = %q, want %q", dsn, got, want)
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
