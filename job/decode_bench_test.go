package job

import (
	"fmt"
	"testing"

	"github.com/weirstream/weir/connector"
	"github.com/weirstream/weir/engine"
)

// BenchmarkDecode reads the lines of the fraud job: it allocates nothing per
// line once its keys are interned.
func BenchmarkDecode(b *testing.B) {
	j, err := Parse([]byte(fraudJob), "job.yaml", "/d")
	if err != nil {
		b.Fatal(err)
	}
	lines := make([][]byte, 1000)
	for i := range lines {
		lines[i] = fmt.Appendf(nil, `{"event_id":"e%d","card":"c%d","ts":%d,"arrival":%d,"amount":%d.%02d,"user":"u%d"}`, i, i%100, 1788782400000+i, 1788782400000+i, i%300, i%100, i%7)
	}
	lp := newLineParser(j)
	var d engine.Decoded[string, record]
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		lp.Decode(&connector.Record{Value: lines[i%len(lines)], Offset: int64(i)}, &d)
	}
}
