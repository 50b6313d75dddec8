// Package mqtttest starts throwaway MQTT brokers for tests, from Debian's
// mosquitto package, as package pgtest starts PostgreSQL: a broker of its
// own per test, on 127.0.0.1 at a free port, its persistence in a directory
// of the test's, so that a restart keeps the persistent sessions and the
// QoS 1 messages queued for them.
package mqtttest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/weirstream/weir/internal/freeport"
)

// Broker is a mosquitto started by Start.
type Broker struct {
	// Addr is its address, tcp://127.0.0.1:PORT.
	Addr string
	dir  string
	conf string
	log  string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Bin is mosquitto's path: in PATH, else Debian's /usr/sbin/mosquitto.
func Bin() (string, error) {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p, nil
	}
	if _, err := os.Stat("/usr/sbin/mosquitto"); err == nil {
		return "/usr/sbin/mosquitto", nil
	}
	return "", errors.New("mosquitto is not installed: not in PATH nor /usr/sbin/mosquitto (install it, e.g. apt-get install mosquitto)")
}

// Start starts a broker in dir (an existing directory, which the caller
// removes): anonymous clients, listening on 127.0.0.1 only at a free port,
// persistence on (saved at every change and when it stops), no bound on
// the QoS 1 messages queued for a session, and maxInflight QoS 1 messages
// in flight to a client at most (0: mosquitto's default, 20). It returns
// once the broker accepts connections.
func Start(dir string, maxInflight int) (*Broker, error) {
	bin, err := Bin()
	if err != nil {
		return nil, err
	}
	// Another port if another process took its first (freeport.Start).
	var b *Broker
	err = freeport.Start(func(port int) error {
		b, err = start(bin, dir, port, maxInflight)
		return err
	})
	return b, err
}

// start starts mosquitto on port; an error that is syscall.EADDRINUSE
// when another process has it.
func start(bin, dir string, port, maxInflight int) (*Broker, error) {
	var conf strings.Builder
	fmt.Fprintf(&conf, "listener %d 127.0.0.1\nallow_anonymous true\n", port)
	fmt.Fprintf(&conf, "persistence true\npersistence_location %s/\nautosave_interval 1\nautosave_on_changes true\n", dir)
	conf.WriteString("max_queued_messages 0\nlog_dest stderr\nlog_type all\n")
	if maxInflight > 0 {
		fmt.Fprintf(&conf, "max_inflight_messages %d\n", maxInflight)
	}
	if os.Geteuid() == 0 {
		conf.WriteString("user root\n") // else it changes to the user mosquitto, who cannot write dir
	}
	b := &Broker{Addr: "tcp://127.0.0.1:" + strconv.Itoa(port), dir: dir, conf: filepath.Join(dir, "mosquitto.conf"), log: filepath.Join(dir, "mosquitto.log")}
	if err := os.WriteFile(b.conf, []byte(conf.String()), 0o644); err != nil {
		return nil, err
	}
	if err := b.start(bin); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *Broker) start(bin string) error {
	logf, err := os.OpenFile(b.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "-c", b.conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting mosquitto: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	b.mu.Lock()
	b.cmd, b.exited = cmd, exited
	b.mu.Unlock()
	addr := strings.TrimPrefix(b.Addr, "tcp://")
	_, port, _ := strings.Cut(addr, ":")
	deadline := time.Now().Add(30 * time.Second)
	for {
		// Up once it says it runs (after it bound its port) and accepts
		// there: a connection alone may be another process's, on a port
		// taken before mosquitto could bind it.
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			if strings.Contains(b.Log(), " running") {
				return nil
			}
		}
		select {
		case <-exited:
			if strings.Contains(b.Log(), "Address already in use") {
				return fmt.Errorf("mosquitto on port %s: %w", port, syscall.EADDRINUSE)
			}
			return fmt.Errorf("mosquitto exited: %s", b.Log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Stop()
			return fmt.Errorf("mosquitto did not accept connections within 30s: %s", b.Log())
		}
	}
}

// Stop stops the broker as a service stops it (SIGTERM: it saves its
// database first), and waits until it has exited.
func (b *Broker) Stop() {
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.cmd = nil
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

// Restart stops the broker and starts it again at the same address, with
// what it had saved: sessions, subscriptions and queued messages.
func (b *Broker) Restart() error {
	b.Stop()
	bin, err := Bin()
	if err != nil {
		return err
	}
	return b.start(bin)
}

// Log is what the broker logged so far.
func (b *Broker) Log() string {
	data, _ := os.ReadFile(b.log)
	return strings.TrimSpace(string(data))
}

// connect connects a client of the broker.
func (b *Broker) connect(clientID string, clean bool) (paho.Client, error) {
	o := paho.NewClientOptions().AddBroker(b.Addr).SetClientID(clientID).SetCleanSession(clean).
		SetAutoReconnect(false).SetConnectTimeout(10 * time.Second)
	c := paho.NewClient(o)
	if err := wait(c.Connect()); err != nil {
		return nil, fmt.Errorf("connecting %s to %s: %w", clientID, b.Addr, err)
	}
	return c, nil
}

// Subscribe makes the persistent session of clientID (clean session
// false) and its subscriptions at QoS 1, as the job's first run would, so
// that what is published from now on is queued for it.
func (b *Broker) Subscribe(clientID string, filters ...string) error {
	c, err := b.connect(clientID, false)
	if err != nil {
		return err
	}
	defer c.Disconnect(100)
	m := map[string]byte{}
	for _, f := range filters {
		m[f] = 1
	}
	return wait(c.SubscribeMultiple(m, nil))
}

// Publish publishes each payload to its topic, in order, with qos, and
// returns once the broker has acknowledged them all.
func (b *Broker) Publish(qos byte, msgs ...Message) error {
	c, err := b.connect(fmt.Sprintf("mqtttest-pub-%d", time.Now().UnixNano()), true)
	if err != nil {
		return err
	}
	defer c.Disconnect(100)
	toks := make([]paho.Token, 0, len(msgs))
	for _, m := range msgs {
		toks = append(toks, c.Publish(m.Topic, qos, false, m.Payload))
		if len(toks) == 500 {
			for _, t := range toks {
				if err := wait(t); err != nil {
					return err
				}
			}
			toks = toks[:0]
		}
	}
	for _, t := range toks {
		if err := wait(t); err != nil {
			return err
		}
	}
	return nil
}

// Message is one message to publish.
type Message struct {
	Topic   string
	Payload []byte
}

func wait(t paho.Token) error {
	if !t.WaitTimeout(30 * time.Second) {
		return errors.New("no answer from the broker within 30s")
	}
	return t.Error()
}

// StartT starts a broker for the test t (see Start) in a temporary
// directory of its own, and stops it, and removes the directory, when t
// ends; the broker's log goes to t's if it failed.
func StartT(t testing.TB, maxInflight int) *Broker {
	t.Helper()
	dir, err := os.MkdirTemp("", "weir-mosquitto-")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Start(dir, maxInflight)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		b.Stop()
		if t.Failed() {
			l := strings.Split(b.Log(), "\n")
			t.Logf("mosquitto's log, its end:\n%s", strings.Join(l[max(0, len(l)-60):], "\n"))
		}
		os.RemoveAll(dir)
	})
	return b
}
