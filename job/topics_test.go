package job

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/jobfile"
)

// weir lint asks the brokers of a job's Kafka outputs about their topics:
// revised panes into a topic that is not compacted are the anti-pattern it
// names; a missing topic weir run would refuse is said; a compacted topic,
// a topic weir creates, or panes never revised are fine; brokers that do
// not answer are said, and nothing is checked.
func TestTopicWarnings(t *testing.T) {
	addr := broker(t, "plain")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	policy := "compact"
	if _, err := kadm.NewClient(cl).CreateTopic(context.Background(), 1, 1, map[string]*string{"cleanup.policy": &policy}, "table"); err != nil {
		t.Fatal(err)
	}
	const job = "name: t\nsource: {file: in.jsonl}\ntime: {field: ts}\nkey: card\nwindow: {tumbling: 1m}\n" +
		"aggregates: {n: count}\ncheckpoint: {dir: ck}\n"
	const revised = "allowed_lateness: 1m\n"
	out := func(topic, more string) string {
		return "output: {kafka: {brokers: [" + addr + "], topic: " + topic + more + "}}\n"
	}
	for _, c := range []struct {
		name, yaml string
		want       []string
	}{
		{"revisions, not compacted", job + revised + out("plain", ""), []string{"output (kafka topic plain): " + kafka.NotCompacted}},
		{"revisions, compacted", job + revised + out("table", ""), nil},
		{"one pane a window", job + out("plain", ""), nil},
		{"missing", job + out("nowhere", ""), []string{"output (kafka topic nowhere): the topic does not exist, and weir run refuses to start without it: create it, or give create: true"}},
		{"missing, created", job + revised + out("nowhere", ", create: true"), nil},
		{"late events, not compacted", job + revised + out("table", "") +
			"late_output: {kafka: {brokers: [" + addr + "], topic: plain}}\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			j, err := jobfile.Parse([]byte(c.yaml), "job.yaml", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			if got := TopicWarnings(context.Background(), j); !slices.Equal(got, c.want) {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
		})
	}
	// Nothing listens on port 1: the brokers cannot answer, whatever the
	// deadline (it only bounds the wait).
	j, err := jobfile.Parse([]byte(job+revised+"output: {kafka: {brokers: [127.0.0.1:1], topic: plain}}\n"), "job.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	got := TopicWarnings(ctx, j)
	if len(got) != 1 || !strings.HasPrefix(got[0], "output (kafka topic plain): the brokers did not answer (") || !strings.HasSuffix(got[0], "): the topic was not checked") {
		t.Errorf("unreachable: %q", got)
	}
}

// weir lint asks the store of an output to object storage whether its
// bucket is there and takes the job's credentials: a refusal is said with
// the store's words, and the secret key is in no warning; a local Parquet
// directory and the other outputs are not probed.
func TestStoreWarnings(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided.</Message></Error>`)
	}))
	defer srv.Close()
	yaml := "name: t\nsource: {file: in.jsonl}\ntime: {field: ts}\nkey: card\nwindow: {tumbling: 1m}\naggregates: {n: count}\ncheckpoint: {dir: ck}\n" +
		"output:\n  - parquet: {dir: s3://lake/t, s3: {endpoint: \"" + srv.URL + "\", access_key_id: AKIAWEIRTEST, secret_access_key: notsosecret}}\n" +
		"  - parquet: {dir: lake}\n  - out.jsonl\n"
	j, err := jobfile.Parse([]byte(yaml), "job.yaml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got := StoreWarnings(context.Background(), j)
	want := []string{"output[0] (parquet s3://lake/t): listing s3://lake/t: SignatureDoesNotMatch: The request signature we calculated does not match the signature you provided. (HTTP 403): weir run would meet it"}
	if !slices.Equal(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if s := j.Redact(strings.Join(got, "\n")); strings.Contains(s, "notsosecret") || strings.Contains(s, "AKIAWEIRTEST") {
		t.Fatalf("a warning shows a secret: %s", s)
	}
}
