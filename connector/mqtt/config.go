// Package mqtt is weir's MQTT input: source: {mqtt: {broker, topics, qos,
// client_id, ...}} in a job file, ReadKind(p, name, "mqtt", settings, ...)
// in Go. It registers the source kind "mqtt" (package plan); importing it
// is all a program does to use it (the weir command and package weir do).
//
// It speaks MQTT 3.1.1 through github.com/eclipse/paho.mqtt.golang, the
// Eclipse Foundation's Go client, with acknowledgements in the source's
// hands (ClientOptions.SetAutoAckDisabled): a QoS 1 message is acknowledged
// to the broker only once a checkpoint that holds its effects is durable
// (connector.Committer). With a persistent session (clean_session: false, a
// fixed client_id) the broker keeps what it sent and was not acknowledged,
// and what was published meanwhile, across restarts of weir and of the
// broker, and sends it again: at least once from the broker; exactly once in
// the results where the records carry an id and the job de-duplicates by it
// (id:).
//
// MQTT has no offsets to rewind: a restore cannot read again what was
// acknowledged. A restore from the newest checkpoint loses nothing (what it
// holds is all that was acknowledged); a restore from an older checkpoint or
// savepoint does not bring back what newer ones acknowledged.
package mqtt

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/plan"
)

// Kind is the name of the source kind: source: {mqtt: {...}}.
const Kind = "mqtt"

// DefaultMaxInflight is max_inflight when the job file does not say:
// mosquitto's max_inflight_messages.
const DefaultMaxInflight = 20

// DefaultMaxBackoff is max_backoff when the job file does not say.
const DefaultMaxBackoff = 10 * time.Second

// Fields are the settings of source.mqtt.
var Fields = []plan.Field{
	{Name: "broker", Type: plan.String, Required: true, Doc: "the broker's address: tcp://host:1883 (host:port means tcp), or ssl://host:8883 for TLS"},
	{Name: "topics", Type: plan.Strings, Required: true, Doc: "the topic filters to subscribe to (+ and # wildcards allowed), each a partition of the input with its own watermark"},
	{Name: "qos", Type: plan.Int, Doc: "the QoS of the subscriptions: 1 (the default: at least once, acknowledged at checkpoints) or 0 (at most once)"},
	{Name: "client_id", Type: plan.String, Doc: "the client identifier: the broker keeps the persistent session under it; required unless clean_session is true"},
	{Name: "clean_session", Type: plan.Bool, Doc: "false (the default): a persistent session, which keeps what is published while the job is down; true: a new session at every connection, which loses it"},
	{Name: "username", Type: plan.String, Doc: "the user name to authenticate with"},
	{Name: "password", Type: plan.String, Doc: "the password to authenticate with (write ${VARIABLE}: it is never shown)"},
	{Name: "max_inflight", Type: plan.Int, Doc: "how many QoS 1 messages the broker sends before it waits for acknowledgements (mosquitto's max_inflight_messages, 20 by default): when the job holds that many unacknowledged, a checkpoint is taken at once to acknowledge them"},
	{Name: "max_backoff", Type: plan.Duration, Doc: "the longest wait between two attempts to reach a broker that went away (10s by default)"},
}

func init() {
	plan.RegisterSource(plan.SourceKind{
		Name: Kind, Doc: "Messages of MQTT topics (MQTT 3.1.1), a JSON record each: at least once from the broker with a persistent session and QoS 1, acknowledged at checkpoints.",
		Fields: Fields, Parse: Parse,
	})
}

// Config is source.mqtt, read and checked.
type Config struct {
	Broker       string
	Topics       []string
	QoS          byte
	ClientID     string
	CleanSession bool
	Username     string
	Password     string
	MaxInflight  int
	MaxBackoff   time.Duration
}

// Parse reads and checks the settings of source.mqtt; an error names the
// setting.
func Parse(s plan.Settings) (plan.SourceConfig, error) {
	c := &Config{QoS: 1, MaxInflight: DefaultMaxInflight, MaxBackoff: DefaultMaxBackoff}
	var err error
	if c.Broker, _, err = s.String("broker"); err != nil {
		return nil, err
	}
	if c.Broker, err = brokerURL(c.Broker); err != nil {
		return nil, s.Errorf("broker", "%v", err)
	}
	if c.Topics, _, err = s.Strings("topics"); err != nil {
		return nil, err
	}
	if len(c.Topics) == 0 {
		return nil, s.Errorf("topics", "expected at least one topic filter")
	}
	for i, f := range c.Topics {
		if err := checkFilter(f); err != nil {
			return nil, s.Errorf("topics", "%q: %v", f, err)
		}
		if slices.Contains(c.Topics[:i], f) {
			return nil, s.Errorf("topics", "%q is listed twice", f)
		}
	}
	qos, ok, err := s.Int("qos")
	if err != nil {
		return nil, err
	}
	if ok {
		switch qos {
		case 0, 1:
			c.QoS = byte(qos)
		case 2:
			return nil, s.Errorf("qos", "2 is not supported: QoS 1 with an id and de-duplication (id:) gives each message once in the results, across restarts, which QoS 2 does not (its handshake's state is lost with the process)")
		default:
			return nil, s.Errorf("qos", "expected 0 or 1, got %d", qos)
		}
	}
	if c.CleanSession, _, err = s.Bool("clean_session"); err != nil {
		return nil, err
	}
	if c.ClientID, _, err = s.String("client_id"); err != nil {
		return nil, err
	}
	switch {
	case c.ClientID == "" && !c.CleanSession:
		return nil, s.Errorf("client_id", "missing: a persistent session (clean_session: false, the default) is kept under a fixed client id; give one, unique to this job")
	case len(c.ClientID) > 65535 || !utf8.ValidString(c.ClientID):
		return nil, s.Errorf("client_id", "expected UTF-8 text of at most 65535 bytes")
	}
	if c.Username, _, err = s.String("username"); err != nil {
		return nil, err
	}
	var hasPassword bool
	if c.Password, hasPassword, err = s.String("password"); err != nil {
		return nil, err
	}
	if hasPassword && c.Username == "" {
		return nil, s.Errorf("password", "given without a username (MQTT 3.1.1 sends a password only with one)")
	}
	if n, ok, err := s.Int("max_inflight"); err != nil {
		return nil, err
	} else if ok {
		if n < 1 || n > 65535 {
			return nil, s.Errorf("max_inflight", "expected 1 to 65535, got %d", n)
		}
		c.MaxInflight = n
	}
	if d, ok, err := s.Duration("max_backoff"); err != nil {
		return nil, err
	} else if ok {
		if d < 100 {
			return nil, s.Errorf("max_backoff", "must be at least 100ms")
		}
		c.MaxBackoff = time.Duration(d) * time.Millisecond
	}
	return c, nil
}

// brokerURL checks a broker's address, and gives host:port the scheme tcp.
func brokerURL(s string) (string, error) {
	if s == "" {
		return "", fmt.Errorf("expected the broker's address, e.g. tcp://localhost:1883")
	}
	if !strings.Contains(s, "://") {
		s = "tcp://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("%q is not an address: %v", s, err)
	}
	switch u.Scheme {
	case "tcp", "mqtt", "ssl", "tls", "mqtts":
	default:
		return "", fmt.Errorf("%q: expected the scheme tcp, mqtt, ssl, tls or mqtts, got %q", s, u.Scheme)
	}
	if u.Hostname() == "" || u.Port() == "" {
		return "", fmt.Errorf("%q: expected host:port", s)
	}
	if u.User != nil {
		return "", fmt.Errorf("give the user name and password as username and password, not in the address")
	}
	return s, nil
}

// checkFilter checks a topic filter as MQTT 3.1.1 defines them: # alone
// in the last level, + alone in its level.
func checkFilter(f string) error {
	if f == "" {
		return fmt.Errorf("a topic filter is at least one character")
	}
	if !utf8.ValidString(f) || strings.ContainsRune(f, 0) {
		return fmt.Errorf("not UTF-8 text without NUL")
	}
	levels := strings.Split(f, "/")
	for i, l := range levels {
		switch {
		case l == "#" && i != len(levels)-1:
			return fmt.Errorf("# matches the rest of a topic: it must be the last level")
		case l != "#" && strings.Contains(l, "#"):
			return fmt.Errorf("# must be a level of its own (a/#)")
		case l != "+" && strings.Contains(l, "+"):
			return fmt.Errorf("+ must be a level of its own (a/+/b)")
		}
	}
	return nil
}

// match reports whether topic matches filter: + a level, # the rest (and
// the parent level itself); a topic starting with $ matches no filter that
// starts with a wildcard.
func match(filter, topic string) bool {
	if strings.HasPrefix(topic, "$") && (strings.HasPrefix(filter, "+") || strings.HasPrefix(filter, "#")) {
		return false
	}
	fl, tl := strings.Split(filter, "/"), strings.Split(topic, "/")
	for i, f := range fl {
		if f == "#" {
			return true
		}
		if i >= len(tl) || f != "+" && f != tl[i] {
			return false
		}
	}
	return len(fl) == len(tl)
}

// Reads says what the source reads, as weir plan shows it.
func (c *Config) Reads() string {
	return fmt.Sprintf("mqtt %s topics %s", c.Broker, strings.Join(c.Topics, ", "))
}

// New builds the source.
func (c *Config) New(env plan.Env) (connector.Source, error) {
	logf := env.Log
	if logf == nil {
		logf = func(string) {}
	}
	return &Source{Config: *c, AckAtCheckpoints: env.Checkpointed, Log: logf}, nil
}
