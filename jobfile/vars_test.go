package jobfile

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// ${NAME} and ${NAME:-default} work in every string value of a job file,
// $$ is a dollar, and a $ before anything else stays a dollar.
func TestVariablesInEveryField(t *testing.T) {
	t.Setenv("WEIR_IN", "orders.jsonl")
	t.Setenv("WEIR_TS", "ts")
	t.Setenv("WEIR_WINDOW", "1m")
	t.Setenv("WEIR_EMPTY", "")
	t.Setenv("WEIR_AMOUNT", "amount")
	t.Setenv("WEIR_MIN", "5")
	t.Setenv("WEIR_PAR", "2")
	t.Setenv("WEIR_TOPIC", "alerts")
	yaml := `name: ${WEIR_NAME:-fraud}
source: {file: "${WEIR_IN}"}
time: {field: "${WEIR_TS}"}
key: ${WEIR_KEY:-card}
window: {tumbling: "${WEIR_WINDOW}"}
aggregates: {orders: count, spent: "sum(${WEIR_AMOUNT})"}
having: "orders >= ${WEIR_MIN}"
parallelism: ${WEIR_PAR}
output: [out-$$1.jsonl, "pa$word.jsonl", "$${WEIR_IN}.jsonl", "x${WEIR_EMPTY:-y}.jsonl", "z${WEIR_EMPTY}.jsonl",
         {kafka: {brokers: ["${WEIR_BROKER:-localhost:9092}"], topic: "${WEIR_TOPIC}", security.protocol: SASL_PLAINTEXT, sasl.mechanism: PLAIN, sasl.username: u, sasl.password: "pa$word"}}]
`
	j, err := Parse([]byte(yaml), "job.yaml", "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	if j.Name != "fraud" || j.Input != "/jobs/orders.jsonl" || j.TimeField.String() != "ts" || j.Key.String() != "card" ||
		j.Window.Assigner.String() != "tumbling 1m0s" || j.Aggregates[1].Field.String() != "amount" || j.Having != "orders >= 5" || j.Parallelism != 2 {
		t.Errorf("job: %q %q %q %q %q %q %q %d", j.Name, j.Input, j.TimeField, j.Key, j.Window.Assigner, j.Aggregates[1].Field, j.Having, j.Parallelism)
	}
	var files []string
	for _, o := range j.Outputs[:5] {
		files = append(files, strings.TrimPrefix(o.File, "/jobs/"))
	}
	if got := strings.Join(files, " "); got != "out-$1.jsonl pa$word.jsonl ${WEIR_IN}.jsonl xy.jsonl z.jsonl" {
		t.Errorf("outputs: %s", got)
	}
	k := j.Outputs[5].Kafka
	if k.Brokers[0] != "localhost:9092" || k.Topic != "alerts" || k.SASLPassword != "pa$word" {
		t.Errorf("kafka: %v %q %q", k.Brokers, k.Topic, k.SASLPassword)
	}
}

// A variable that is not set, and has no default, is a one-line error
// naming it and the field; so is a ${ that does not close.
func TestUnsetVariableIsAnError(t *testing.T) {
	for yaml, want := range map[string]string{
		strings.Replace(minimal, "results.jsonl", "${WEIR_UNSET_OUT}/results.jsonl", 1):                  "job.yaml:6: output: ${WEIR_UNSET_OUT} is not set, and has no default (${WEIR_UNSET_OUT:-default} gives one)",
		strings.Replace(minimal, "output: results.jsonl", `output: [results.jsonl, "${WEIR_UNSET}"]`, 1): "job.yaml:6: output[1]: ${WEIR_UNSET} is not set, and has no default (${WEIR_UNSET:-default} gives one)",
		strings.Replace(minimal, "input.jsonl", `"in${.jsonl"`, 1):                                       `job.yaml:2: source.file: "${.jsonl" has a ${ with no closing }; write $$ for a literal $`,
		strings.Replace(minimal, "input.jsonl", `"${1IN}"`, 1):                                           "job.yaml:2: source.file: ${1IN}: expected ${NAME} or ${NAME:-default}, NAME of letters, digits and _ (write $$ for a literal $)",
	} {
		_, err := Parse([]byte(yaml), "job.yaml", "/jobs")
		if err == nil || err.Error() != want {
			t.Errorf("got  %v\nwant %s", err, want)
		}
	}
}

// A password from the environment lands in a PostgreSQL connection string
// escaped for where it goes: in a URL's user information, in a key=value
// setting, or given apart in password:. pgx reads back the very password.
func TestPasswordInConnectionString(t *testing.T) {
	const pw = `p/@#$%:w 'x"\y`
	t.Setenv("PGPASSWORD_TEST", pw)
	for dsn, want := range map[string]string{
		`dsn: "postgres://weir:${PGPASSWORD_TEST}@db:5432/metrics?sslmode=disable"`:          "postgres://weir:p%2F%40%23%24%25%3Aw%20%27x%22%5Cy@db:5432/metrics?sslmode=disable",
		`dsn: "host=db user=weir password=${PGPASSWORD_TEST} dbname=metrics"`:                `host=db user=weir password='p/@#$%:w \'x"\\y' dbname=metrics`,
		`dsn: "host=db user=weir password='${PGPASSWORD_TEST}' dbname=metrics"`:              `host=db user=weir password='p/@#$%:w \'x"\\y' dbname=metrics`,
		`{dsn: "postgres://weir@db:5432/metrics", password: "${PGPASSWORD_TEST}"}`:           "postgres://weir:p%2F%40%23$%25%3Aw%20%27x%22%5Cy@db:5432/metrics",
		`{dsn: "host=db user=weir dbname=metrics", password: "${PGPASSWORD_TEST}"}`:          `host=db user=weir dbname=metrics password='p/@#$%:w \'x"\\y'`,
		`dsn: "postgres://weir@db:5432/metrics?password=${PGPASSWORD_TEST}&sslmode=disable"`: "postgres://weir@db:5432/metrics?password=p%2F%40%23%24%25%3Aw%20%27x%22%5Cy&sslmode=disable",
	} {
		pg := dsn
		if !strings.HasPrefix(dsn, "{") {
			pg = "{" + dsn + "}"
		}
		pg = strings.TrimSuffix(pg, "}") + ", table: alerts}"
		yaml := strings.Replace(minimal, "output: results.jsonl", "output: {postgres: "+pg+"}", 1)
		j, err := Parse([]byte(yaml), "job.yaml", "/jobs")
		if err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		got := j.Outputs[0].Table.DSN
		if got != want {
			t.Errorf("%s:\ngot  %s\nwant %s", dsn, got, want)
		}
		cfg, err := pgconn.ParseConfig(got)
		if err != nil {
			t.Errorf("%s: pgx: %v", dsn, err)
		} else if cfg.Password != pw || cfg.User != "weir" || cfg.Database != "metrics" {
			t.Errorf("%s: pgx reads %v %q %q %q", dsn, err, cfg.Password, cfg.User, cfg.Database)
		}
		if r := j.Redact(got + " " + pw); strings.Contains(r, "p/@") || strings.Contains(r, "p%2F") {
			t.Errorf("%s: not redacted: %s", dsn, r)
		}
	}
	yaml := strings.Replace(minimal, "output: results.jsonl", `output: {postgres: {dsn: "postgres://weir:x@db/m", password: hunter2, table: t}}`, 1)
	if _, err := Parse([]byte(yaml), "job.yaml", "/jobs"); err == nil || err.Error() != "job.yaml:6: output.postgres.password: the dsn has a password already: give it in one place" {
		t.Errorf("two passwords: %v", err)
	}
}

// The job file as the console shows it: every secret written in it
// redacted, variables shown as written, comments and layout kept.
func TestTextRedactsSecrets(t *testing.T) {
	t.Setenv("WEIR_SASL", "from-the-env")
	yaml := `name: t   # the password is hunter2, the token s3cr3t-token
source: {kafka: {brokers: [b:9092], topic: in, security.protocol: SASL_PLAINTEXT, sasl.mechanism: PLAIN, sasl.username: u, sasl.password: hunter2}}
time: {field: ts}
window: {tumbling: 1m}
aggregates: {n: count}
output:
  - {postgres: {dsn: "postgres://weir:pg-pass@db/m", table: a}}
  - {postgres: {dsn: 'host=db user=weir password=kv-pass', table: b}}
  - {postgres: {dsn: "postgres://weir:${PGPASSWORD:-default-pass}@db/m", table: c}}
  - {postgres: {dsn: "postgres://weir:${WEIR_SASL}@db2/m", table: d}}
  - {postgres: {dsn: "postgres://weir:ui-pass@db4/m?password=q-pass&sslmode=disable", table: f}}
  - postgres:
      dsn: "postgres://weir@db3/m"
      password: |-
        block-pass
      table: e
  - {kafka: {brokers: [b:9092], topic: out, security.protocol: SASL_PLAINTEXT, sasl.mechanism: PLAIN, sasl.username: u, sasl.password: "${WEIR_SASL}"}}
`
	j, err := Parse([]byte(yaml), "job.yaml", "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	got := j.Text()
	for _, secret := range []string{"hunter2", "pg-pass", "kv-pass", "default-pass", "from-the-env", "block-pass", "ui-pass", "q-pass"} {
		if strings.Contains(got, secret) {
			t.Errorf("%s shown:\n%s", secret, got)
		}
	}
	if !strings.Contains(got, `${WEIR_SASL}`) || !strings.Contains(got, "sasl.username: u") {
		t.Errorf("the variables or the rest are not as written:\n%s", got)
	}
	// Without a scalar over several lines, the file keeps its layout.
	yaml = strings.Replace(yaml, "  - postgres:\n      dsn: \"postgres://weir@db3/m\"\n      password: |-\n        block-pass\n      table: e", "  - {postgres: {dsn: \"postgres://weir@db3/m\", password: 'block-pass', table: e}}", 1)
	j, err = Parse([]byte(yaml), "job.yaml", "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	want := `name: t   # the password is [redacted], the token s3cr3t-token
source: {kafka: {brokers: [b:9092], topic: in, security.protocol: SASL_PLAINTEXT, sasl.mechanism: PLAIN, sasl.username: u, sasl.password: "[redacted]"}}
time: {field: ts}
window: {tumbling: 1m}
aggregates: {n: count}
output:
  - {postgres: {dsn: "postgres://weir:[redacted]@db/m", table: a}}
  - {postgres: {dsn: "host=db user=weir password=[redacted]", table: b}}
  - {postgres: {dsn: "postgres://weir:[redacted]@db/m", table: c}}
  - {postgres: {dsn: "postgres://weir:${WEIR_SASL}@db2/m", table: d}}
  - {postgres: {dsn: "postgres://weir:[redacted]@db4/m?password=[redacted]&sslmode=disable", table: f}}
  - {postgres: {dsn: "postgres://weir@db3/m", password: "[redacted]", table: e}}
  - {kafka: {brokers: [b:9092], topic: out, security.protocol: SASL_PLAINTEXT, sasl.mechanism: PLAIN, sasl.username: u, sasl.password: "${WEIR_SASL}"}}
`
	if got := j.Text(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Every line weir writes goes through the same redaction.
	if got := j.Redact("dial db: password pg-pass, kv-pass, hunter2 or from-the-env (from-the-env%21)"); got != "dial db: password [redacted], [redacted], [redacted] or ${WEIR_SASL} (${WEIR_SASL}%21)" {
		t.Errorf("Redact: %s", got)
	}
}

// http: an address, or the address with who may use the console.
func TestHTTPSettings(t *testing.T) {
	t.Setenv("WEIR_TOKEN_TEST", "t0ken")
	j, err := Parse([]byte(minimal+"http: {listen: \"0.0.0.0:8080\", token: \"${WEIR_TOKEN_TEST}\", allowed_hosts: [weir.example.com, 10.0.0.5]}\n"), "job.yaml", "/jobs")
	if err != nil {
		t.Fatal(err)
	}
	if j.HTTP != "0.0.0.0:8080" || j.HTTPToken != "t0ken" || strings.Join(j.HTTPHosts, " ") != "weir.example.com 10.0.0.5" {
		t.Errorf("http: %q %q %q", j.HTTP, j.HTTPToken, j.HTTPHosts)
	}
	if got := j.Redact("token t0ken"); got != "token ${WEIR_TOKEN_TEST}" {
		t.Errorf("the token is not a secret: %s", got)
	}
	for http, want := range map[string]string{
		"http: 8080":           `job.yaml:7: http: expected host:port, such as 127.0.0.1:8080, got "8080"`,
		"http: {listen: 8080}": `job.yaml:7: http.listen: expected host:port, such as 127.0.0.1:8080, got "8080"`,
		"http: {listen: \":1\", allowed_hosts: [a:80]}":     `job.yaml:7: http.allowed_hosts: expected host names without port, such as [weir.example.com], got "a:80"`,
		"http: {listen: \":1\", tokn: x}":                   `job.yaml:7: http.tokn: unknown field "tokn" (did you mean "token"?)`,
		"http: {listen: \":1\", allowed_hosts: [http://a]}": `job.yaml:7: http.allowed_hosts: expected host names without port, such as [weir.example.com], got "http://a"`,
	} {
		if _, err := Parse([]byte(minimal+http+"\n"), "job.yaml", "/jobs"); err == nil || err.Error() != want {
			t.Errorf("%s:\ngot  %v\nwant %s", http, err, want)
		}
	}
}
