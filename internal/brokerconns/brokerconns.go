// Package brokerconns is a Kafka broker's view of its connections, for
// tests and benchmarks that run the development broker (kfake) in their
// process: a listener (kfake.ListenFn) that reads the client id each
// connection gives in its first request, and counts the open connections
// by it.
package brokerconns

import (
	"encoding/binary"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Conns is the open connections of a broker, by client id. Its zero value
// is ready; Listen is its kfake.ListenFn.
type Conns struct {
	mu   sync.Mutex
	live map[string]int
}

// Listen listens as net.Listen does, and counts what it accepts.
func (cs *Conns) Listen(network, address string) (net.Listener, error) {
	ln, err := net.Listen(network, address)
	if err != nil {
		return nil, err
	}
	return &listener{Listener: ln, cs: cs}, nil
}

// Count is how many connections with the client id id are open.
func (cs *Conns) Count(id string) int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.live[id]
}

// Clients is the client ids of the open connections that begin with
// prefix, each once, in order.
func (cs *Conns) Clients(prefix string) []string {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var out []string
	for id, n := range cs.live {
		if n > 0 && strings.HasPrefix(id, prefix) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Connections is how many connections whose client id begins with prefix
// are open.
func (cs *Conns) Connections(prefix string) int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	n := 0
	for id, c := range cs.live {
		if strings.HasPrefix(id, prefix) {
			n += c
		}
	}
	return n
}

func (cs *Conns) add(id string, n int) {
	cs.mu.Lock()
	if cs.live == nil {
		cs.live = map[string]int{}
	}
	cs.live[id] += n
	cs.mu.Unlock()
}

type listener struct {
	net.Listener
	cs *Conns
}

func (l *listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, cs: l.cs}, nil
}

// conn reads the client id from the header of the first request it
// passes on (size, api key, version, correlation id, then the client id
// as an int16-sized string, in every header version; -1: none).
type conn struct {
	net.Conn
	cs    *Conns
	known atomic.Bool // id is read; only Read sets it

	mu     sync.Mutex // guards what follows, between Read and Close
	head   []byte
	id     string
	counts bool // the connection is in cs
	closed bool
}

func (c *conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.known.Load() {
		c.mu.Lock()
		c.head = append(c.head, b[:n]...)
		if len(c.head) >= 14 {
			l := max(int(int16(binary.BigEndian.Uint16(c.head[12:14]))), 0)
			if len(c.head) >= 14+l {
				c.id = string(c.head[14 : 14+l])
				c.head = nil
				c.known.Store(true)
				if !c.closed {
					c.cs.add(c.id, 1)
					c.counts = true
				}
			}
		}
		c.mu.Unlock()
	}
	return n, err
}

func (c *conn) Close() error {
	c.mu.Lock()
	if !c.closed && c.counts {
		c.cs.add(c.id, -1)
	}
	c.closed = true
	c.mu.Unlock()
	return c.Conn.Close()
}
