package formats

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/weirstream/weir/plan"
)

// The reasons a record that a registry's framing or its schema refuses is
// quarantined with.
const (
	// ReasonBadMagicByte: the record does not begin with the framing's
	// magic byte 0 and a 4-byte schema id.
	ReasonBadMagicByte = "bad_magic_byte"
	// ReasonUnknownSchema: the registry has no schema of the record's id,
	// or one the format cannot read.
	ReasonUnknownSchema = "unknown_schema"
	// ReasonNotDecodable: the payload does not decode with its schema.
	ReasonNotDecodable = "not_decodable"
)

// registryClient fetches schemas by id from a schema registry, once each:
// an id the registry has is kept for the run (a registry's ids are
// immutable), one it does not have is remembered as unknown. A registry
// that cannot be reached is asked again with backoff, for as long as it
// takes: the record waits, and with it the source (backpressure), while
// records of schemas already fetched never ask.
type registryClient struct {
	cl  *sr.Client
	url string
	log func(string)

	mu sync.Mutex
	// fetched are the schemas by id (an int) and by subject and version
	// (a subjectVersion: a Protobuf schema's references).
	fetched map[any]*fetch
	// wait is the longest wait between two tries (tests shorten it).
	wait time.Duration
}

// fetch is one id's schema, fetched once; done is closed when it is.
type fetch struct {
	done   chan struct{}
	schema sr.Schema
	err    error // a *plan.BadRecord: the id is unknown
}

// newRegistryClient is a client of the registry reg. Its credentials go in
// the requests' headers only: no log line or error shows them.
func newRegistryClient(reg *plan.Registry, log func(string)) (*registryClient, error) {
	opts := []sr.ClientOpt{sr.URLs(reg.URL), sr.UserAgent("weir")}
	switch {
	case reg.Token != "":
		opts = append(opts, sr.BearerToken(reg.Token))
	case reg.Username != "" || reg.Password != "":
		opts = append(opts, sr.BasicAuth(reg.Username, reg.Password))
	}
	cl, err := sr.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("registry.url: %w", err)
	}
	if log == nil {
		log = func(string) {}
	}
	return &registryClient{cl: cl, url: reg.URL, log: log, fetched: map[any]*fetch{}, wait: 30 * time.Second}, nil
}

// schema is the schema of id, fetched at most once at a time.
func (c *registryClient) schema(id int) (sr.Schema, error) {
	return c.once(id, func() (sr.Schema, error) {
		return c.fetchRetrying(fmt.Sprintf("schema %d", id), func(ctx context.Context) (sr.Schema, error) {
			return c.cl.SchemaByID(ctx, id)
		}, func() error { return plan.Bad(ReasonUnknownSchema, "the registry has no schema of id %d", id) })
	})
}

// subjectVersion names a version of a subject: what a schema's reference
// names.
type subjectVersion struct {
	subject string
	version int
}

// version is the schema of a subject's version (a reference's), fetched at
// most once at a time: a version, like an id, is immutable.
func (c *registryClient) version(subject string, version int) (sr.Schema, error) {
	return c.once(subjectVersion{subject, version}, func() (sr.Schema, error) {
		return c.fetchRetrying(fmt.Sprintf("subject %s version %d", subject, version), func(ctx context.Context) (sr.Schema, error) {
			ss, err := c.cl.SchemaByVersion(ctx, subject, version)
			return ss.Schema, err
		}, func() error {
			return plan.Bad(ReasonUnknownSchema, "the registry has no version %d of subject %s", version, subject)
		})
	})
}

// once is the schema that get fetches for key, fetched once: those who
// ask while it is fetched wait for it.
func (c *registryClient) once(key any, get func() (sr.Schema, error)) (sr.Schema, error) {
	c.mu.Lock()
	f, ok := c.fetched[key]
	if !ok {
		f = &fetch{done: make(chan struct{})}
		c.fetched[key] = f
		c.mu.Unlock()
		f.schema, f.err = get()
		close(f.done)
		return f.schema, f.err
	}
	c.mu.Unlock()
	<-f.done
	return f.schema, f.err
}

// fetchRetrying asks the registry for what (a schema's id, a subject's
// version) until it answers: with the schema, or that it has none
// (missing's error).
func (c *registryClient) fetchRetrying(what string, get func(context.Context) (sr.Schema, error), missing func() error) (sr.Schema, error) {
	wait := 100 * time.Millisecond
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := get(ctx)
		cancel()
		if err == nil {
			return s, nil
		}
		if notFound(err) {
			return sr.Schema{}, missing()
		}
		// sr's errors name the URL, never the credentials.
		c.log(fmt.Sprintf("schema registry %s: %s: %v (try %d; trying again in %s)", c.url, what, err, try, wait))
		time.Sleep(wait)
		wait = min(2*wait, c.wait)
	}
}

// latest is the latest schema of subject, or ok false when the registry
// has no such subject; a registry that cannot be reached is asked again.
func (c *registryClient) latest(subject string) (s sr.Schema, ok bool) {
	wait := 100 * time.Millisecond
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ss, err := c.cl.SchemaByVersion(ctx, subject, -1)
		cancel()
		if err == nil {
			return ss.Schema, true
		}
		if notFound(err) {
			return sr.Schema{}, false
		}
		c.log(fmt.Sprintf("schema registry %s: subject %s: %v (try %d; trying again in %s)", c.url, subject, err, try, wait))
		time.Sleep(wait)
		wait = min(2*wait, c.wait)
	}
}

// notFound says the registry answered that it has no such thing (rather
// than not answering).
func notFound(err error) bool {
	var re *sr.ResponseError
	if errors.As(err, &re) {
		return sr.IsNotFoundError(re.ErrorCode) || re.StatusCode == 404
	}
	return false
}

// compiled is what a decoder made of each id's schema (compiled, resolved):
// made once per id, as the registry's ids never change, however many
// goroutines ask for it first.
type compiled[T any] struct {
	mu sync.Mutex
	m  map[int]*built[T]
	// last is the id read last, made: a topic's records mostly share one
	// id, found without the lock.
	last atomic.Pointer[built[T]]
}

// built is an id's T, made once: done is closed when it is.
type built[T any] struct {
	id   int
	done chan struct{}
	v    T
}

// get is what build made of the schema of id, fetched from reg the first
// time; an id the registry does not have, or does not answer for, is the
// fetch's error. Those who ask while it is built wait for it.
func (c *compiled[T]) get(reg *registryClient, id int, build func(int, sr.Schema) T) (T, error) {
	if b := c.last.Load(); b != nil && b.id == id {
		return b.v, nil // made: last is stored once it is
	}
	c.mu.Lock()
	b, ok := c.m[id]
	c.mu.Unlock()
	if ok {
		<-b.done
		c.last.Store(b)
		return b.v, nil
	}
	w, err := reg.schema(id)
	if err != nil {
		var zero T
		return zero, err
	}
	c.mu.Lock()
	if b, ok = c.m[id]; ok {
		c.mu.Unlock()
		<-b.done
		return b.v, nil
	}
	if c.m == nil {
		c.m = map[int]*built[T]{}
	}
	b = &built[T]{id: id, done: make(chan struct{})}
	c.m[id] = b
	c.mu.Unlock()
	b.v = build(id, w)
	close(b.done)
	c.last.Store(b)
	return b.v, nil
}

// peek is what was made of id when it is the id read last, without
// waiting: for a hint, which must not fetch.
func (c *compiled[T]) peek(id int) (T, bool) {
	if b := c.last.Load(); b != nil && b.id == id {
		return b.v, true
	}
	var zero T
	return zero, false
}

// frame splits a record in the registry's framing: the magic byte 0, a
// 4-byte big-endian schema id, the payload.
func frame(b []byte) (id int, payload []byte, err error) {
	if len(b) < 5 {
		return 0, nil, plan.Bad(ReasonBadMagicByte, "%d bytes, shorter than the framing's 5", len(b))
	}
	if b[0] != 0 {
		return 0, nil, plan.Bad(ReasonBadMagicByte, "the first byte is %d, not the framing's 0", b[0])
	}
	return int(uint32(b[1])<<24 | uint32(b[2])<<16 | uint32(b[3])<<8 | uint32(b[4])), b[5:], nil
}
