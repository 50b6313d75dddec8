package webhook

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/weirstream/weir/plan"
)

// BenchmarkWrite sends panes to a receiver on the loopback that answers
// 200 at once (what the webhook's own work and HTTP cost, per pane), and
// to one that takes 2ms to answer (what max_in_flight is for).
func BenchmarkWrite(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.Copy(io.Discard, r.Body) }))
	defer srv.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		time.Sleep(2 * time.Millisecond)
	}))
	defer slow.Close()
	var items []plan.Item
	for i := range 512 {
		items = append(items, testPane(fmt.Sprint("card_", i%97), int64(i/97), 0, int64(i)))
	}
	for _, c := range []struct {
		inFlight, batch int
		slow            bool
	}{{1, 1, false}, {4, 1, false}, {16, 1, false}, {4, 100, false}, {1, 1, true}, {4, 1, true}, {16, 1, true}} {
		url, name := srv.URL, fmt.Sprintf("in_flight=%d/batch=%d", c.inFlight, c.batch)
		if c.slow {
			url, name = slow.URL, name+"/answer=2ms"
		}
		b.Run(name, func(b *testing.B) {
			cfg, err := Parse(plan.Values{"url": url + "/hook", "max_in_flight": c.inFlight, "batch": c.batch})
			if err != nil {
				b.Fatal(err)
			}
			s := NewSink(cfg, plan.Env{Job: "bench"})
			defer s.Close()
			n := 0
			for b.Loop() {
				if err := s.Write(context.Background(), items); err != nil {
					b.Fatal(err)
				}
				n += len(items)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "panes/s")
		})
	}
}
