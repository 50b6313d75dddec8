package engine_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
	"github.com/weirstream/weir/watermark"
)

// hanging is a live source of one partition: its records, then nothing
// until it is stopped.
type hanging struct {
	name string
	recs []string
	sent bool
}

func (s *hanging) Open(context.Context, []byte) error { return nil }
func (s *hanging) Read(ctx context.Context, b *connector.Batch) error {
	if !s.sent {
		s.sent = true
		b.Partitions = []connector.Partition{{Name: s.name}}
		for i, r := range s.recs {
			b.Records = append(b.Records, connector.Record{Value: []byte(r), Offset: int64(i + 1), Arrival: mtime.MinTime})
		}
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}
func (s *hanging) Close() error { return nil }

// A join's watermark is its inputs' slowest: the status names the
// partition that holds it back across both inputs, and their skew, not
// each input's alone (where one partition holds nothing back).
func TestStatusHeldBackAcrossJoinInputs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := engine.New(engine.Config{Name: "held", Live: true})
		if err != nil {
			t.Fatal(err)
		}
		j, err := engine.NewJoin(e, engine.JoinConfig[string, int64, int64]{Name: "join",
			Spec:      engine.JoinSpec{Lower: 0, Upper: 10, Mode: engine.JoinInner},
			Watermark: watermark.BoundedOutOfOrderness(2 * time.Millisecond).WithInterval(0), Parallelism: 1,
			Hash: func(k string) uint64 { return uint64(len(k)) }, Codec: countCodec{}})
		if err != nil {
			t.Fatal(err)
		}
		lh, err := engine.NewHead(e, engine.HeadConfig[string, int64]{Name: "head-left", Decoder: lineDecoder{}, Window: j.LeftTarget()})
		if err != nil {
			t.Fatal(err)
		}
		rh, err := engine.NewHead(e, engine.HeadConfig[string, int64]{Name: "head-right", Decoder: lineDecoder{}, Window: j.RightTarget(), Second: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.AddSource("left", &hanging{name: "orders", recs: []string{"a 5000", "a 5010"}}, lh); err != nil {
			t.Fatal(err)
		}
		if err := e.AddSource("right", &hanging{name: "payments", recs: []string{"a 100", "a 110"}}, rh); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- e.Run(context.Background()) }()
		time.Sleep(300 * time.Millisecond)
		synctest.Wait()
		st := e.Control().Status(context.Background(), time.Second)
		wm := map[string]mtime.Time{}
		for _, p := range st.Partitions {
			wm[p.Name] = p.Watermark
			if p.HoldsBack != (p.Name == "payments") {
				t.Errorf("partition %s holds back: %v", p.Name, p.HoldsBack)
			}
		}
		if st.HeldBy != "payments" || len(wm) != 2 {
			t.Errorf("held back by %q, partitions %v, want payments", st.HeldBy, wm)
		}
		if want := int64(wm["orders"] - wm["payments"]); st.EventTimeSkew != want || want != 4900 {
			t.Errorf("skew %d, want %d (4900)", st.EventTimeSkew, want)
		}
		e.Control().Stop(context.Background(), true)
		<-done
	})
}
