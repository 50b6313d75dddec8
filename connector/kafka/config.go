// Package kafka is weir's connector for Apache Kafka, on franz-go: a source
// that reads every partition of a topic with a position per partition that
// checkpoints keep, and a sink that writes results in one Kafka transaction
// per checkpoint (two-phase commit, as Flink's exactly-once Kafka sink does)
// or at least once. For a consumer group (package group) it has the
// membership (Group), and the threads whose one client each reads for many
// tasks and commits their checkpoints, fenced by the group's generation
// (Thread, Txn: Kafka Streams' exactly-once v2).
//
// Readers of a topic written exactly once must read committed records only
// (isolation.level=read_committed; kcat -X isolation.level=read_committed).
package kafka

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/weirstream/weir/connector"
)

// Config is how to reach a cluster, named as Kafka clients name it.
type Config struct {
	// Brokers are the seed brokers, host:port.
	Brokers []string
	// Topic is the topic read or written.
	Topic string
	// ClientID names the client to the brokers, in their logs and in a
	// group's description (default weir-HOST-PID, naming the process, so
	// that a broker's connections say which instance holds them).
	ClientID string
	// SecurityProtocol is PLAINTEXT (default), SSL, SASL_PLAINTEXT or
	// SASL_SSL (security.protocol).
	SecurityProtocol string
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
	// (sasl.mechanism), with SASLUsername and SASLPassword.
	SASLMechanism string
	SASLUsername  string
	SASLPassword  string
	// SSLCALocation, SSLCertificateLocation and SSLKeyLocation are PEM
	// files (ssl.ca.location, ssl.certificate.location, ssl.key.location).
	SSLCALocation          string
	SSLCertificateLocation string
	SSLKeyLocation         string
	// Log receives a line when the connection is lost or comes back.
	Log func(string)

	hook *connHook
}

// connHook logs lost and regained connections to the brokers: the first
// failure, then at most every 30 s while they fail, and the recovery.
type connHook struct {
	c      *Config
	mu     sync.Mutex
	down   bool
	since  time.Time
	logged time.Time
	fails  int
}

func (h *connHook) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	if err == nil {
		if h.down {
			h.c.logf("kafka %s: connected to %s:%d again after %s (%d failed attempts)", h.c.Topic, meta.Host, meta.Port, now.Sub(h.since).Round(time.Millisecond), h.fails)
		}
		h.down, h.fails = false, 0
		return
	}
	h.fails++
	if !h.down {
		h.down, h.since = true, now
	} else if now.Sub(h.logged) < 30*time.Second {
		return
	}
	h.logged = now
	h.c.logf("kafka %s: cannot reach the broker %s:%d (%v); retrying with backoff", h.c.Topic, meta.Host, meta.Port, err)
}

// Down reports whether the last attempt to reach a broker failed: the
// transport is interrupted.
func (c *Config) Down() bool {
	if c.hook == nil {
		return false
	}
	c.hook.mu.Lock()
	defer c.hook.mu.Unlock()
	return c.hook.down
}

// Validate reports a configuration mistake, naming the setting as Kafka
// does.
func (c *Config) Validate() error {
	if len(c.Brokers) == 0 {
		return errors.New("brokers: at least one host:port")
	}
	if c.Topic == "" {
		return errors.New("topic: missing")
	}
	switch c.SecurityProtocol {
	case "", "PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL":
	default:
		return fmt.Errorf("security.protocol: expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, got %q", c.SecurityProtocol)
	}
	if strings.HasPrefix(c.SecurityProtocol, "SASL_") {
		switch c.SASLMechanism {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		default:
			return fmt.Errorf("sasl.mechanism: expected PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, got %q", c.SASLMechanism)
		}
		if c.SASLUsername == "" {
			return errors.New("sasl.username: missing")
		}
	} else if c.SASLMechanism != "" {
		return fmt.Errorf("sasl.mechanism: needs security.protocol SASL_PLAINTEXT or SASL_SSL, not %q", c.SecurityProtocol)
	}
	if (c.SSLCertificateLocation == "") != (c.SSLKeyLocation == "") {
		return errors.New("ssl.certificate.location and ssl.key.location: give both or neither")
	}
	return nil
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		c.Log(fmt.Sprintf(format, args...))
	}
}

// opts are the client options every client of c shares.
func (c *Config) opts() ([]kgo.Opt, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	id := c.ClientID
	if id == "" {
		id = DefaultClientID()
	}
	if c.hook == nil {
		c.hook = &connHook{c: c}
	}
	o := []kgo.Opt{
		kgo.SeedBrokers(c.Brokers...), kgo.ClientID(id), kgo.WithHooks(c.hook),
		// Retry for as long as the job lives: a broker that goes away for
		// a while comes back; the engine stops the job if it must.
		kgo.RetryTimeout(time.Hour), kgo.RequestRetries(1 << 30),
		kgo.RetryBackoffFn(func(n int) time.Duration { return min(100*time.Millisecond<<min(n, 7), 10*time.Second) }),
	}
	if strings.HasSuffix(c.SecurityProtocol, "SSL") {
		tc := &tls.Config{MinVersion: tls.VersionTLS12}
		if c.SSLCALocation != "" {
			pem, err := os.ReadFile(c.SSLCALocation)
			if err != nil {
				return nil, fmt.Errorf("ssl.ca.location: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("ssl.ca.location: %s holds no PEM certificate", c.SSLCALocation)
			}
			tc.RootCAs = pool
		}
		if c.SSLCertificateLocation != "" {
			cert, err := tls.LoadX509KeyPair(c.SSLCertificateLocation, c.SSLKeyLocation)
			if err != nil {
				return nil, fmt.Errorf("ssl.certificate.location: %w", err)
			}
			tc.Certificates = []tls.Certificate{cert}
		}
		o = append(o, kgo.DialTLSConfig(tc))
	}
	if strings.HasPrefix(c.SecurityProtocol, "SASL_") {
		var m sasl.Mechanism
		auth := scram.Auth{User: c.SASLUsername, Pass: c.SASLPassword}
		switch c.SASLMechanism {
		case "PLAIN":
			m = plain.Auth{User: c.SASLUsername, Pass: c.SASLPassword}.AsMechanism()
		case "SCRAM-SHA-256":
			m = auth.AsSha256Mechanism()
		case "SCRAM-SHA-512":
			m = auth.AsSha512Mechanism()
		}
		o = append(o, kgo.SASL(m))
	}
	return o, nil
}

// DefaultClientID is a client's id when its Config gives none:
// weir-HOST-PID, naming the process.
func DefaultClientID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("weir-%s-%d", host, os.Getpid())
}

// client is a plain client of c, for metadata and admin requests; the
// caller closes it.
func (c *Config) client() (*kgo.Client, error) {
	opts, err := c.opts()
	if err != nil {
		return nil, err
	}
	return kgo.NewClient(opts...)
}

// committedReader is a client that reads the partitions of topic from the
// offsets given, read_committed, with the transactions' markers (control
// records) too, so that a reader knows when it has reached an offset that
// a marker holds (the last stable offset, often). wait is how long a fetch
// waits for records.
func (c *Config) committedReader(topic string, from map[int32]kgo.Offset, wait time.Duration) (*kgo.Client, error) {
	opts, err := c.opts()
	if err != nil {
		return nil, err
	}
	return kgo.NewClient(append(opts,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords(),
		kgo.FetchMaxWait(wait))...)
}

// classify marks errors as the engine should retry them: Kafka's own
// retriable errors and lost connections are transient; an authentication,
// authorization or configuration error is permanent.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		if ke.Retriable {
			return connector.Transient(err)
		}
		return connector.Permanent(err)
	}
	// A broker that closes a connection as soon as it is made: a broker
	// starting or stopping (or one that wants TLS or SASL, which the error
	// says; retried as the source retries it, with that in the log).
	var eof *kgo.ErrFirstReadEOF
	if errors.As(err, &eof) {
		return connector.Transient(err)
	}
	if connector.Retryable(err) {
		return connector.Transient(err)
	}
	return err
}
