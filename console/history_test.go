package console

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/weirstream/weir/engine"
	"github.com/weirstream/weir/mtime"
)

// The console keeps the last HistoryLength samples of the job's status,
// one per processing time, oldest first: what a page opened late draws.
func TestHistoryKeepsTheLastSamples(t *testing.T) {
	var h history
	st := func(pt mtime.Time) engine.Status {
		return engine.Status{ProcessingTime: pt, Watermark: pt - 5,
			Partitions: []engine.PartitionStatus{{Name: "orders/0", Watermark: pt - 5}},
			Counts:     engine.Counts{LateAccepted: int64(pt) / 10, Accounting: engine.Accounting{TooLate: int64(pt) / 100}}}
	}
	for pt := mtime.Time(1); pt <= HistoryLength+150; pt++ {
		h.add(st(pt))
		h.add(st(pt)) // the same processing time again: nothing new
	}
	h.add(st(3))                                        // behind: nothing new
	h.add(engine.Status{ProcessingTime: mtime.MinTime}) // no clock yet: nothing
	var fresh history
	if fresh.add(engine.Status{ProcessingTime: mtime.MinTime}); len(fresh.samples()) != 0 {
		t.Errorf("a status without a processing time is a sample: %+v", fresh.samples())
	}
	got := h.samples()
	if len(got) != HistoryLength {
		t.Fatalf("%d samples, want %d", len(got), HistoryLength)
	}
	for i, s := range got {
		pt := mtime.Time(151 + i)
		if s.T != pt || s.Watermark != pt-5 || s.Partitions["orders/0"] != pt-5 || s.LateAccepted != int64(pt)/10 || s.TooLate != int64(pt)/100 {
			t.Fatalf("sample %d: %+v, want processing time %d", i, s, pt)
		}
	}
}

// /api/history answers the samples as JSON (times in epoch milliseconds,
// as /api/status gives them), oldest first, and 404 when the
// server runs no job.
func TestHistoryReply(t *testing.T) {
	s := &Server{Control: &engine.Control{}}
	s.hist.add(engine.Status{ProcessingTime: 2000, Watermark: 1000, Partitions: []engine.PartitionStatus{{Name: "p", Watermark: 1000}},
		Counts: engine.Counts{LateAccepted: 3, Accounting: engine.Accounting{TooLate: 1}}})
	s.hist.add(engine.Status{ProcessingTime: 3000, Watermark: 2500})
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/history", nil))
	want := `[{"t":2000,"watermark":1000,"partitions":{"p":1000},"late_accepted":3,"too_late":1},{"t":3000,"watermark":2500,"partitions":{},"late_accepted":0,"too_late":0}]` + "\n"
	if rec.Code != http.StatusOK || rec.Body.String() != want {
		t.Errorf("%d %s\nwant %s", rec.Code, rec.Body.String(), want)
	}
	var decoded []Sample
	if err := json.Unmarshal(rec.Body.Bytes(), &decoded); err != nil || len(decoded) != 2 {
		t.Errorf("decoded %v: %v", decoded, err)
	}
	rec = httptest.NewRecorder()
	(&Server{}).Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/history", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("without a job: %d", rec.Code)
	}
}
