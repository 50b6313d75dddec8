package mqtt

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/url"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/internal/enc"
	"github.com/weirstream/weir/mtime"
)

// MaxBatch is the most records one Read returns.
const MaxBatch = 1024

// Source reads the messages of its topic filters, each filter a partition
// of the input (and so, by default, a watermark of its own, with its own
// idleness): a message belongs to the first filter, in the order given,
// that its topic matches. A record is a message's payload.
//
// With AckAtCheckpoints, a QoS 1 message is acknowledged to the broker once
// a checkpoint that holds it is durable (connector.Committer), in the order
// the messages came; the broker sends at most its window of unacknowledged
// messages (MaxInflight), and when the job holds that many the source asks
// for a checkpoint at once (Waiting). Without, a message is acknowledged
// as it is handed to the engine.
//
// Its position counts the records read, in all and per filter, across runs:
// there is nothing to rewind, and Open only takes the counts back.
//
// A broker that cannot be reached is tried again, waiting longer each time
// up to MaxBackoff; meanwhile every partition reports the error
// (connector.Reporter), as the status and the console show it. A broker
// that refuses the credentials, the client id or a subscription stops the
// job: trying again would not help.
type Source struct {
	Config
	// AckAtCheckpoints acknowledges QoS 1 messages once checkpoints hold
	// them (a job with checkpoints); else as they are read.
	AckAtCheckpoints bool
	// Log takes the source's log lines; the password is never in them.
	Log func(string)

	client  paho.Client
	stop    chan struct{}
	wg      sync.WaitGroup
	wake    chan struct{}
	ackWake chan struct{}

	mu        sync.Mutex
	queue     []incoming     // received, not handed to the engine yet
	unacked   []pending      // handed to the engine, not acknowledged yet
	toAck     []paho.Message // for the acknowledging goroutine, in order
	gen       uint64         // the connection's number: messages of an earlier one cannot be acknowledged
	read      int64          // records read, in all, across runs
	counts    []int64        // records read per filter, across runs
	connected bool
	down      string // why the broker cannot be reached, or ""
	fatal     error
	sent      bool
	closed    bool
}

// incoming is a message received.
type incoming struct {
	msg  paho.Message
	part int
	gen  uint64
}

// pending is a message handed to the engine (or skipped, retained) and not
// acknowledged: seq is the count of records read once it was.
type pending struct {
	seq int64
	msg paho.Message
	gen uint64
}

// Open implements connector.Source: it takes back the counts of a restored
// position and starts connecting (in the background: a broker that is
// down is tried again until it answers, the job running meanwhile).
func (s *Source) Open(ctx context.Context, position []byte) error {
	s.counts = make([]int64, len(s.Topics))
	if position != nil {
		if err := s.restore(position); err != nil {
			return err
		}
	}
	if s.Log == nil {
		s.Log = func(string) {}
	}
	s.stop, s.wake, s.ackWake = make(chan struct{}), make(chan struct{}, 1), make(chan struct{}, 1)
	o := paho.NewClientOptions().AddBroker(s.Broker).SetClientID(s.ClientID).SetCleanSession(s.CleanSession).
		SetAutoAckDisabled(true).SetOrderMatters(true).SetResumeSubs(false).
		SetAutoReconnect(true).SetConnectRetry(false).SetMaxReconnectInterval(s.MaxBackoff).
		SetConnectTimeout(10 * time.Second).SetKeepAlive(30 * time.Second).SetPingTimeout(10 * time.Second).
		SetDefaultPublishHandler(s.received).
		SetOnConnectHandler(s.onConnect).SetConnectionAttemptHandler(s.onAttempt).
		SetConnectionLostHandler(s.onLost)
	if s.Username != "" {
		o.SetUsername(s.Username).SetPassword(s.Password)
	}
	s.client = paho.NewClient(o)
	s.wg.Add(2)
	go s.connect()
	go s.acknowledge()
	return nil
}

// restore takes back the counts of a position: the records read in all,
// and per filter (a filter new since has read none).
func (s *Source) restore(position []byte) error {
	d := enc.NewDecoder(position)
	if v := d.Uvarint(); v != 1 && d.Err() == nil {
		return fmt.Errorf("mqtt: a position of version %d, which this weir does not know", v)
	}
	s.read = d.Varint()
	n := d.Count(1 << 16)
	for i := 0; i < n && d.Err() == nil; i++ {
		f, c := d.String(), d.Varint()
		for j, t := range s.Topics {
			if t == f {
				s.counts[j] = c
			}
		}
	}
	if d.Err() != nil {
		return fmt.Errorf("mqtt: the restored position does not decode: %w", d.Err())
	}
	return nil
}

// position is the source's position: the records read, in all and per
// filter.
func (s *Source) position() []byte {
	b := enc.AppendUvarint(nil, 1)
	b = enc.AppendVarint(b, s.read)
	b = enc.AppendUvarint(b, uint64(len(s.Topics)))
	for i, t := range s.Topics {
		b = enc.AppendString(b, t)
		b = enc.AppendVarint(b, s.counts[i])
	}
	return b
}

// committedCount is the count of records read in a position.
func committedCount(position []byte) (int64, bool) {
	d := enc.NewDecoder(position)
	v, n := d.Uvarint(), d.Varint()
	return n, v == 1 && d.Err() == nil
}

// connect makes the first connection, trying again with a growing wait
// while the broker cannot be reached; paho reconnects after that.
func (s *Source) connect() {
	defer s.wg.Done()
	wait := 100 * time.Millisecond
	for {
		tok := s.client.Connect()
		select {
		case <-tok.Done():
		case <-s.stop:
			return
		}
		err := tok.Error()
		if err == nil {
			return
		}
		if ct, ok := tok.(*paho.ConnectToken); ok {
			switch rc := ct.ReturnCode(); rc {
			case packets.ErrRefusedBadUsernameOrPassword, packets.ErrRefusedNotAuthorised, packets.ErrRefusedIDRejected, packets.ErrRefusedBadProtocolVersion:
				s.fail(fmt.Errorf("mqtt %s: the broker refused the connection: %s", s.Broker, packets.ConnackReturnCodes[rc]))
				return
			}
		}
		s.setDown(fmt.Sprintf("cannot connect: %v", err), fmt.Sprintf("retrying, at most every %s", s.MaxBackoff))
		select {
		case <-time.After(wait):
		case <-s.stop:
			return
		}
		wait = min(2*wait, s.MaxBackoff)
	}
}

// setDown records why the broker cannot be reached, logging it when it
// changes.
func (s *Source) setDown(why, next string) {
	s.mu.Lock()
	changed := s.down != why
	s.down, s.connected = why, false
	s.mu.Unlock()
	if changed {
		s.Log(fmt.Sprintf("mqtt %s: %s; %s", s.Broker, why, next))
	}
}

// fail stops the job with err at the next Read.
func (s *Source) fail(err error) {
	s.mu.Lock()
	if s.fatal == nil {
		s.fatal = err
	}
	s.mu.Unlock()
	s.signal(s.wake)
}

func (s *Source) signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// onAttempt is called before every attempt to connect, once the messages
// of the connection before are all received: it forgets what that
// connection received and did not acknowledge, which the broker sends
// again.
func (s *Source) onAttempt(_ *url.URL, cfg *tls.Config) *tls.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	if !s.CleanSession && s.QoS == 1 {
		// Unacknowledged QoS 1 messages of the old connection come again
		// (MQTT 3.1.1, 4.4): those not handed over yet are dropped, not
		// read twice; those handed over cannot be acknowledged any more.
		q := s.queue[:0]
		for _, m := range s.queue {
			if m.msg.Qos() == 0 {
				q = append(q, m)
			}
		}
		clear(s.queue[len(q):])
		s.queue = q
		clear(s.unacked)
		s.unacked = s.unacked[:0]
	}
	return cfg
}

// onConnect subscribes at every connection (a session the broker lost has
// none).
func (s *Source) onConnect(c paho.Client) {
	s.mu.Lock()
	was := s.down
	s.down, s.connected = "", true
	s.mu.Unlock()
	if was != "" {
		s.Log(fmt.Sprintf("mqtt %s: connected again", s.Broker))
	}
	filters := map[string]byte{}
	for _, t := range s.Topics {
		filters[t] = s.QoS
	}
	tok := c.SubscribeMultiple(filters, nil)
	select {
	case <-tok.Done():
	case <-s.stop:
		return
	}
	if err := tok.Error(); err != nil {
		s.Log(fmt.Sprintf("mqtt %s: subscribing: %v (tried again at the next connection)", s.Broker, err))
		return
	}
	if st, ok := tok.(*paho.SubscribeToken); ok {
		for f, code := range st.Result() {
			if code == 0x80 {
				s.fail(fmt.Errorf("mqtt %s: the broker refused the subscription to %q (is the client allowed to read it?)", s.Broker, f))
			}
		}
	}
}

// onLost notes that the connection was lost: paho reconnects, waiting
// longer each time up to MaxBackoff.
func (s *Source) onLost(c paho.Client, err error) {
	if c.IsConnectionOpen() {
		return // connected again already
	}
	s.setDown(fmt.Sprintf("connection lost: %v", err), fmt.Sprintf("reconnecting, at most every %s", s.MaxBackoff))
}

// received takes a message from paho, in the order they came; it must not
// block.
func (s *Source) received(_ paho.Client, m paho.Message) {
	part := -1
	for i, f := range s.Topics {
		if match(f, m.Topic()) {
			part = i
			break
		}
	}
	if part < 0 {
		part = 0 // the broker matched it to a subscription: the first
	}
	s.mu.Lock()
	s.queue = append(s.queue, incoming{msg: m, part: part, gen: s.gen})
	s.mu.Unlock()
	s.signal(s.wake)
}

// Read implements connector.Source: the messages received, a record each,
// in the order they came. A retained message (a topic's last message,
// which the broker sends again at every subscription) is not an event: it
// is skipped.
func (s *Source) Read(ctx context.Context, b *connector.Batch) error {
	if !s.sent {
		s.sent = true
		for _, t := range s.Topics {
			b.Partitions = append(b.Partitions, connector.Partition{Name: t})
		}
		b.Position = s.position()
		return nil
	}
	for {
		s.mu.Lock()
		if s.fatal != nil {
			err := s.fatal
			s.mu.Unlock()
			return err
		}
		n := 0
		for _, in := range s.queue {
			if len(b.Records) == MaxBatch {
				break
			}
			n++
			m := in.msg
			ack := m.Qos() > 0 && s.AckAtCheckpoints
			if m.Retained() {
				if ack {
					s.unacked = append(s.unacked, pending{seq: s.read, msg: m, gen: in.gen})
				} else {
					s.toAck = append(s.toAck, m)
				}
				continue
			}
			s.read++
			s.counts[in.part]++
			b.Records = append(b.Records, connector.Record{
				Value: m.Payload(), Timestamp: mtime.MinTime, Arrival: mtime.MinTime,
				Partition: in.part, Offset: s.counts[in.part],
			})
			if ack {
				s.unacked = append(s.unacked, pending{seq: s.read, msg: m, gen: in.gen})
			} else if m.Qos() > 0 {
				s.toAck = append(s.toAck, m)
			}
		}
		clear(s.queue[:n])
		s.queue = s.queue[n:]
		if len(s.queue) == 0 {
			s.queue = nil
		}
		if len(b.Records) > 0 {
			b.Position = s.position()
		}
		acks := len(s.toAck) > 0
		s.mu.Unlock()
		if acks {
			s.signal(s.ackWake)
		}
		if len(b.Records) > 0 {
			return nil
		}
		select {
		case <-s.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Committed implements connector.Committer: the messages a durable
// checkpoint holds are acknowledged, in the order they came; those of an
// earlier connection are not (the broker sends them again).
func (s *Source) Committed(position []byte) {
	n, ok := committedCount(position)
	if !ok {
		return
	}
	s.mu.Lock()
	i := 0
	for ; i < len(s.unacked) && s.unacked[i].seq <= n; i++ {
		if p := s.unacked[i]; p.gen == s.gen {
			s.toAck = append(s.toAck, p.msg)
		}
	}
	clear(s.unacked[:i])
	s.unacked = s.unacked[i:]
	s.mu.Unlock()
	if i > 0 {
		s.signal(s.ackWake)
	}
}

// Waiting implements connector.Committer: the job holds as many
// unacknowledged messages as the broker sends before it waits.
func (s *Source) Waiting() bool {
	if !s.AckAtCheckpoints {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.unacked) >= s.MaxInflight
}

// acknowledge sends the acknowledgements, in order, from a goroutine of its
// own: paho's may wait for the connection, which neither the engine's
// checkpoints nor Read should.
func (s *Source) acknowledge() {
	defer s.wg.Done()
	for {
		stopping := false
		select {
		case <-s.ackWake:
		case <-s.stop:
			stopping = true // what a last savepoint holds goes out first
		}
		s.mu.Lock()
		acks := s.toAck
		s.toAck = nil
		s.mu.Unlock()
		for _, m := range acks {
			m.Ack()
		}
		if stopping {
			if len(acks) > 0 {
				// Give paho a moment to write the acknowledgements
				// before the DISCONNECT; one that does not reach the
				// broker is sent again by it, as at a crash.
				time.Sleep(100 * time.Millisecond)
			}
			return
		}
	}
}

// Report implements connector.Reporter: how much is waiting cannot be
// known (the broker does not say); a partition is caught up while nothing
// received waits to be read, and every partition carries the error while
// the broker cannot be reached.
func (s *Source) Report() []connector.PartitionReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	waiting := make([]int, len(s.Topics))
	for _, in := range s.queue {
		waiting[in.part]++
	}
	out := make([]connector.PartitionReport, len(s.Topics))
	for i, t := range s.Topics {
		out[i] = connector.PartitionReport{Partition: i, Name: t, Backlog: -1, CaughtUp: s.connected && waiting[i] == 0, Err: s.down}
		if !s.connected && s.down == "" && s.fatal == nil {
			out[i].Err = "connecting"
		}
	}
	return out
}

// Close implements connector.Source: it disconnects, leaving the
// persistent session (and what it did not acknowledge) to the broker.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed || s.stop == nil {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	s.wg.Wait()
	if s.client.IsConnectionOpen() {
		s.client.Disconnect(250)
	}
	return nil
}

var (
	_ connector.Source    = (*Source)(nil)
	_ connector.Committer = (*Source)(nil)
	_ connector.Reporter  = (*Source)(nil)
)
