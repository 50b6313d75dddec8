package weir

// Stream is a typed stream of elements in a pipeline. Streams are values:
// every function that takes a stream adds a consumer to it, and one stream
// may feed several.
type Stream[T any] struct {
	p *Pipeline
	n *node[T]
}

// node is where a stream's elements go: to each consumer in turn,
// synchronously.
type node[T any] struct {
	subs []func(T)
}

func (n *node[T]) push(v T) {
	for _, f := range n.subs {
		f(v)
	}
}

func (n *node[T]) add(f func(T)) { n.subs = append(n.subs, f) }

// Map applies f to every element.
func Map[T, U any](s Stream[T], f func(T) U) Stream[U] {
	out := &node[U]{}
	s.n.add(func(v T) { out.push(f(v)) })
	return Stream[U]{s.p, out}
}

// Filter keeps the elements for which keep returns true.
func Filter[T any](s Stream[T], keep func(T) bool) Stream[T] {
	out := &node[T]{}
	s.n.add(func(v T) {
		if keep(v) {
			out.push(v)
		}
	})
	return Stream[T]{s.p, out}
}

// FlatMap calls f for every element; f emits zero or more results.
func FlatMap[T, U any](s Stream[T], f func(v T, emit func(U))) Stream[U] {
	out := &node[U]{}
	emit := out.push
	s.n.add(func(v T) { f(v, emit) })
	return Stream[U]{s.p, out}
}

// Sink consumes a stream. f is called from one goroutine per stream, in the
// stream's order; an error stops the pipeline, and Run returns it.
func Sink[T any](s Stream[T], f func(T) error) {
	p := s.p
	p.sinks++
	s.n.add(func(v T) {
		if p.sinkErr.Load() != nil {
			return
		}
		if err := f(v); err != nil {
			p.setErr(err)
		}
	})
}
