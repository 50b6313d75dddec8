package mqtt

import (
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/plan"
)

func TestParse(t *testing.T) {
	cfg, err := Parse(plan.Values{"broker": "127.0.0.1:1883", "topics": []string{"factory/+/count", "alarms/#"}, "client_id": "weir-1"})
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.(*Config)
	if c.Broker != "tcp://127.0.0.1:1883" || c.QoS != 1 || c.CleanSession || c.MaxInflight != DefaultMaxInflight || c.MaxBackoff != DefaultMaxBackoff {
		t.Errorf("defaults: %+v", c)
	}
	if got := c.Reads(); got != "mqtt tcp://127.0.0.1:1883 topics factory/+/count, alarms/#" {
		t.Errorf("Reads: %q", got)
	}
	cfg, err = Parse(plan.Values{"broker": "ssl://broker:8883", "topics": "a", "clean_session": true, "qos": 0, "username": "u", "password": "secret", "max_backoff": 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.(*Config); c.QoS != 0 || !c.CleanSession || c.ClientID != "" || c.MaxBackoff != 2*time.Second || strings.Contains(c.Reads(), "secret") {
		t.Errorf("%+v", c)
	}
}

// Every refusal names the setting.
func TestParseErrors(t *testing.T) {
	base := func(kv ...any) plan.Values {
		v := plan.Values{"broker": "tcp://127.0.0.1:1883", "topics": []string{"a/#"}, "client_id": "x"}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(v, kv[i].(string))
			} else {
				v[kv[i].(string)] = kv[i+1]
			}
		}
		return v
	}
	for _, c := range []struct {
		v    plan.Values
		want string
	}{
		{base("broker", ""), "broker: expected the broker's address"},
		{base("broker", "ws://h:1"), `broker: "ws://h:1": expected the scheme`},
		{base("broker", "tcp://h"), "broker: \"tcp://h\": expected host:port"},
		{base("broker", "tcp://u:p@h:1"), "broker: give the user name and password as username and password"},
		{base("topics", []string{}), "topics: expected at least one topic filter"},
		{base("topics", []string{"a/b#"}), `topics: "a/b#": # must be a level of its own`},
		{base("topics", []string{"a+/b"}), `topics: "a+/b": + must be a level of its own`},
		{base("topics", []string{"#/a"}), `topics: "#/a": # matches the rest`},
		{base("topics", []string{"a", "a"}), `topics: "a" is listed twice`},
		{base("qos", 2), "qos: 2 is not supported"},
		{base("qos", 3), "qos: expected 0 or 1, got 3"},
		{base("client_id", nil), "client_id: missing"},
		{base("password", "p"), "password: given without a username"},
		{base("max_inflight", 0), "max_inflight: expected 1 to 65535"},
		{base("max_backoff", time.Millisecond), "max_backoff: must be at least 100ms"},
		{base("qos", "1"), "qos: expected an int"},
	} {
		_, err := Parse(c.v)
		if err == nil || !strings.HasPrefix(err.Error(), strings.SplitN(c.want, ":", 2)[0]+":") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v; want %q", c.v, err, c.want)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		filter, topic string
		want          bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/c", false},
		{"a/+", "a/b", true},
		{"a/+", "a/b/c", false},
		{"a/+/c", "a/b/c", true},
		{"a/#", "a", true},
		{"a/#", "a/b/c", true},
		{"#", "a/b", true},
		{"#", "$SYS/x", false},
		{"+/x", "$SYS/x", false},
		{"$SYS/#", "$SYS/x", true},
		{"a/+", "a/", true},
		{"+", "a/b", false},
	} {
		if got := match(c.filter, c.topic); got != c.want {
			t.Errorf("match(%q, %q) = %v", c.filter, c.topic, got)
		}
	}
}

// A position carries the counts across runs, per filter by its name.
func TestPositionRestored(t *testing.T) {
	a := &Source{Config: Config{Topics: []string{"x/#", "y/#"}}}
	a.counts = []int64{3, 4}
	a.read = 7
	b := &Source{Config: Config{Topics: []string{"y/#", "z"}}}
	b.counts = make([]int64, 2)
	if err := b.restore(a.position()); err != nil {
		t.Fatal(err)
	}
	if b.read != 7 || b.counts[0] != 4 || b.counts[1] != 0 {
		t.Errorf("restored %d, %v", b.read, b.counts)
	}
	if n, ok := committedCount(a.position()); !ok || n != 7 {
		t.Errorf("committedCount: %d %v", n, ok)
	}
	if err := b.restore([]byte{9}); err == nil {
		t.Error("a position of an unknown version restored")
	}
}
