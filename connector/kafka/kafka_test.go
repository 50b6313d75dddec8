package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/mtime"
)

func cluster(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func client(t *testing.T, c *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produce(t *testing.T, cl *kgo.Client, topic string, part int32, values ...string) {
	t.Helper()
	for _, v := range values {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: topic, Partition: part, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// readAll reads a source until it has n records, with their partitions.
func readAll(t *testing.T, s *Source, n int) ([]string, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []string
	var pos []byte
	for len(got) < n {
		var b connector.Batch
		if err := s.Read(ctx, &b); err != nil {
			t.Fatalf("after %d records: %v", len(got), err)
		}
		for _, r := range b.Records {
			got = append(got, fmt.Sprintf("%d:%s", r.Partition, r.Value))
		}
		pos = b.Position
	}
	return got, pos
}

// Every partition is read, with a position per partition that a restore
// resumes from exactly.
func TestSourcePositions(t *testing.T) {
	c := cluster(t, kfake.SeedTopics(3, "orders"))
	cl := client(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	produce(t, cl, "orders", 0, "a", "b")
	produce(t, cl, "orders", 1, "c")
	produce(t, cl, "orders", 2, "d", "e", "f")
	s := &Source{Config: Config{Brokers: c.ListenAddrs(), Topic: "orders"}}
	if err := s.Open(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	var first connector.Batch
	s.Read(context.Background(), &first)
	if len(first.Partitions) != 3 || first.Partitions[1].Name != "orders/1" {
		t.Fatalf("partitions %+v", first.Partitions)
	}
	got, pos := readAll(t, s, 6)
	slices.Sort(got)
	if strings.Join(got, " ") != "0:a 0:b 1:c 2:d 2:e 2:f" {
		t.Errorf("read %v", got)
	}
	s.Close()
	produce(t, cl, "orders", 1, "g")
	produce(t, cl, "orders", 2, "h")
	r := &Source{Config: Config{Brokers: c.ListenAddrs(), Topic: "orders"}}
	if err := r.Open(context.Background(), pos); err != nil {
		t.Fatal(err)
	}
	r.Read(context.Background(), &first)
	got, _ = readAll(t, r, 2)
	slices.Sort(got)
	if strings.Join(got, " ") != "1:g 2:h" {
		t.Errorf("resumed: %v", got)
	}
	rep := r.Report()
	if len(rep) != 3 || rep[2].Backlog != 0 || !rep[2].CaughtUp {
		t.Errorf("report %+v", rep)
	}
	r.Close()
	if err := (&Source{Config: Config{Brokers: c.ListenAddrs(), Topic: "nope"}}).Open(context.Background(), nil); err == nil || !strings.Contains(err.Error(), "topic nope does not exist") {
		t.Errorf("missing topic: %v", err)
	}
}

func committed(t *testing.T, c *kfake.Cluster, topic string) []string {
	t.Helper()
	// Read up to the last stable offset of every partition, markers
	// included, however slow the machine.
	ends, err := kadm.NewClient(client(t, c)).ListCommittedOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset > 0 {
			want[o.Partition] = o.Offset
		}
	})
	cl := client(t, c, kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(), kgo.FetchMaxWait(50*time.Millisecond))
	var out []string
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for len(want) > 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s: %v", topic, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 >= want[r.Partition] {
				delete(want, r.Partition)
			}
			if !r.Attrs.IsControl() {
				out = append(out, string(r.Value))
			}
		})
	}
	return out
}

func strSink(c *kfake.Cluster) *Sink[string] {
	return &Sink[string]{
		Config: Config{Brokers: c.ListenAddrs(), Topic: "alerts"}, Delivery: connector.ExactlyOnce,
		TransactionalID: "weir-test-output", TransactionTimeout: time.Minute,
		Encode: func(v string) ([]byte, []byte) { return nil, []byte(v) },
	}
}

// Exactly once: nothing is visible to read_committed readers before the
// commit; after a crash, the restored checkpoint's transaction is committed
// from its record, and what the crashed run had written after it is never
// seen.
func TestSinkTransactions(t *testing.T) {
	c := cluster(t, kfake.SeedTopics(1, "alerts"))
	ctx := context.Background()
	s := strSink(c)
	if err := s.Open(ctx, connector.Resume{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	s.Write(ctx, []string{"p1", "p2"})
	pre1, err := s.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := committed(t, c, "alerts"); len(got) != 0 {
		t.Fatalf("visible before the commit: %v", got)
	}
	if err := s.Commit(ctx, 1, pre1); err != nil {
		t.Fatal(err)
	}
	mark1 := s.Mark()
	s.Write(ctx, []string{"p3"})
	pre2, err := s.PreCommit(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	s.Write(ctx, []string{"zombie"}) // after the barrier: never committed
	// The process dies here: pre2 is in a durable checkpoint, not yet
	// committed. No Close.
	r := strSink(c)
	if err := r.Open(ctx, connector.Resume{From: 2, Pending: []connector.PreCommit{{Checkpoint: 2, Data: pre2}}, Mark: mark1}); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, 2, pre2); err != nil {
		t.Fatal(err)
	}
	if err := r.Commit(ctx, 2, pre2); err != nil {
		t.Fatalf("a second commit of the same checkpoint: %v", err)
	}
	if err := r.Start(ctx); err != nil {
		t.Fatal(err)
	}
	r.Write(ctx, []string{"p4"})
	pre3, _ := r.PreCommit(ctx, 3)
	if err := r.Commit(ctx, 3, pre3); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if got := committed(t, c, "alerts"); strings.Join(got, " ") != "p1 p2 p3 p4" {
		t.Errorf("committed: %v", got)
	}
	// The old producer of the crashed run is fenced: its transaction
	// cannot commit any more (the client ends it with an error, or turns
	// the commit into an abort), and its record is never seen.
	s.slots[s.cur].cl.EndTransaction(ctx, kgo.TryCommit)
	if got := committed(t, c, "alerts"); strings.Join(got, " ") != "p1 p2 p3 p4" {
		t.Errorf("committed after the zombie's attempt: %v", got)
	}
}

// SASL/SCRAM and PLAIN, as Kafka names the settings; a wrong password is a
// clear error.
func TestSASL(t *testing.T) {
	c := cluster(t, kfake.SeedTopics(1, "orders"), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-256", "weir", "secret"), kfake.Superuser("PLAIN", "plainuser", "pw"))
	for _, cfg := range []Config{
		{SecurityProtocol: "SASL_PLAINTEXT", SASLMechanism: "SCRAM-SHA-256", SASLUsername: "weir", SASLPassword: "secret"},
		{SecurityProtocol: "SASL_PLAINTEXT", SASLMechanism: "PLAIN", SASLUsername: "plainuser", SASLPassword: "pw"},
	} {
		cfg.Brokers, cfg.Topic = c.ListenAddrs(), "orders"
		s := &Source{Config: cfg}
		if err := s.Open(context.Background(), nil); err != nil {
			t.Errorf("%s: %v", cfg.SASLMechanism, err)
		}
		s.Close()
	}
	bad := &Source{Config: Config{Brokers: c.ListenAddrs(), Topic: "orders", SecurityProtocol: "SASL_PLAINTEXT", SASLMechanism: "SCRAM-SHA-256", SASLUsername: "weir", SASLPassword: "wrong"}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := bad.Open(ctx, nil); err == nil {
		t.Error("a wrong password was accepted")
	}
	if err := (&Config{Brokers: []string{"x:1"}, Topic: "t", SecurityProtocol: "SASL_SSL", SASLMechanism: "GSSAPI", SASLUsername: "u"}).Validate(); err == nil || !strings.Contains(err.Error(), "sasl.mechanism: expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512") {
		t.Errorf("validate: %v", err)
	}
}

// Where a source without a checkpoint starts: the earliest record, the
// latest, or the first at or after a time.
func TestSourceStart(t *testing.T) {
	base := time.UnixMilli(1_780_000_000_000)
	for name, c2 := range map[string]struct {
		start Start
		want  string
	}{
		"earliest":  {Start{}, "0:a 0:b 0:c 0:d"},
		"latest":    {Start{Latest: true}, "0:d"},
		"timestamp": {Start{At: mtime.FromTime(base.Add(90 * time.Second))}, "0:c 0:d"},
	} {
		t.Run(name, func(t *testing.T) {
			c := cluster(t, kfake.SeedTopics(1, "orders"))
			cl := client(t, c)
			for i, v := range []string{"a", "b", "c"} {
				if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Value: []byte(v), Timestamp: base.Add(time.Duration(i) * time.Minute)}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			s := &Source{Config: Config{Brokers: c.ListenAddrs(), Topic: "orders"}, Start: c2.start}
			if err := s.Open(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var first connector.Batch
			s.Read(context.Background(), &first)
			produce(t, cl, "orders", 0, "d")
			got, _ := readAll(t, s, strings.Count(c2.want, " ")+1)
			if strings.Join(got, " ") != c2.want {
				t.Errorf("read %v, want %s", got, c2.want)
			}
		})
	}
}

// TLS with a CA of the job's: ssl.ca.location.
func TestTLS(t *testing.T) {
	dir := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kb, _ := x509.MarshalECPrivateKey(key)
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.pem")
	os.WriteFile(ca, certPEM, 0o644)
	c := cluster(t, kfake.SeedTopics(1, "orders"), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}}))
	s := &Source{Config: Config{Brokers: c.ListenAddrs(), Topic: "orders", SecurityProtocol: "SSL", SSLCALocation: ca}}
	if err := s.Open(context.Background(), nil); err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := (&Source{Config: Config{Brokers: c.ListenAddrs(), Topic: "orders", SecurityProtocol: "SSL"}}).Open(ctx, nil); err == nil {
		t.Error("a broker signed by an unknown CA was trusted")
	}
}

// A paused partition is not fetched until it is resumed (watermark
// alignment), and then nothing of it is lost.
func TestSourcePause(t *testing.T) {
	c := cluster(t, kfake.SeedTopics(2, "orders"))
	cl := client(t, c, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	s := &Source{Config: Config{Brokers: c.ListenAddrs(), Topic: "orders"}}
	if err := s.Open(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var first connector.Batch
	s.Read(context.Background(), &first)
	s.Pause([]int{1})
	produce(t, cl, "orders", 1, "late-1", "late-2")
	produce(t, cl, "orders", 0, "a", "b", "c")
	got, _ := readAll(t, s, 3)
	if strings.Join(got, " ") != "0:a 0:b 0:c" {
		t.Errorf("while partition 1 is paused: %v", got)
	}
	s.Resume([]int{1})
	got, _ = readAll(t, s, 2)
	if strings.Join(got, " ") != "1:late-1 1:late-2" {
		t.Errorf("resumed: %v", got)
	}
}

// Every client names its process unless client.id says otherwise, so that
// a broker's connections say which instance holds them (as the group's
// member always did).
func TestDefaultClientID(t *testing.T) {
	host, _ := os.Hostname()
	for _, tc := range []struct{ set, want string }{
		{"", fmt.Sprintf("weir-%s-%d", host, os.Getpid())},
		{"orders-7", "orders-7"},
	} {
		c := Config{Brokers: []string{"127.0.0.1:9092"}, Topic: "t", ClientID: tc.set}
		cl, err := c.client()
		if err != nil {
			t.Fatal(err)
		}
		got := cl.OptValue(kgo.ClientID)
		cl.Close()
		if got != tc.want {
			t.Errorf("client.id %q: the client's id is %v, want %q", tc.set, got, tc.want)
		}
	}
}
