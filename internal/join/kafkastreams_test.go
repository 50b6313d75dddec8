package join

import (
	"testing"

	"github.com/weirstream/weir/mtime"
)

// Kafka Streams' KStreamKStreamJoinTest.testJoin: an inner join of two
// streams within 100 ms either way (JoinWindows.of(100)), every record at
// time 0, so that nothing expires: each record joins, as it comes, the
// other side's records of its key, in their order of arrival.
func TestKafkaStreamsJoin(t *testing.T) {
	h, left, right := kafkaJoin(t)
	all := []string{"0", "1", "2", "3"}
	left("A", 0, 0, "0", "1")
	h.expect()
	right("a", 0, 0, "0", "1")
	h.expect("0:A0+a0", "1:A1+a1")
	left("B", 0, 0, all...)
	h.expect("0:B0+a0", "1:B1+a1")
	right("b", 0, 0, all...)
	h.expect("0:A0+b0", "0:B0+b0", "1:A1+b1", "1:B1+b1", "2:B2+b2", "3:B3+b3")
	left("C", 0, 0, all...)
	h.expect("0:C0+a0", "0:C0+b0", "1:C1+a1", "1:C1+b1", "2:C2+b2", "3:C3+b3")
	right("c", 0, 0, "0", "1")
	h.expect("0:A0+c0", "0:B0+c0", "0:C0+c0", "1:A1+c1", "1:B1+c1", "1:C1+c1")
}

// kafkaJoin is an inner join within 100 ms either way, as Kafka Streams'
// JoinWindows.of(100), and its inputs: left(prefix, ts, step, keys...)
// adds for each key the record prefix+key at ts, ts+step, ….
func kafkaJoin(t *testing.T) (h *temporal, left, right func(prefix string, ts, step int64, keys ...string)) {
	h = rowOp(t, Config{Lower: -100, Upper: 100}, func(r row, _ mtime.Time) string { return r.v }, "%[1]s:%[2]s+%[3]s", "", "")
	add := func(f func(ts int64, key, v string) *temporal) func(string, int64, int64, ...string) {
		return func(prefix string, ts, step int64, keys ...string) {
			for i, k := range keys {
				f(ts+int64(i)*step, k, prefix+k)
			}
		}
	}
	return h, add(h.el1), add(h.el2)
}

// Kafka Streams' KStreamKStreamJoinTest.testWindowing, its part from
// "advance time to not join with existing data": the right records at
// 2000 to 2003, then left ones at 2100, 2101, … and 1899, 1900, each
// joining those within 100 ms of it, both bounds included. The watermark
// does not move: nothing is late or expires.
func TestKafkaStreamsJoinWindowing(t *testing.T) {
	h, left, right := kafkaJoin(t)
	all := []string{"0", "1", "2", "3"}
	right("l", 2000, 1, all...)
	h.expect()
	left("C", 2100, 0, all...)
	h.expect("0:C0+l0", "1:C1+l1", "2:C2+l2", "3:C3+l3")
	left("D", 2101, 0, all...)
	h.expect("1:D1+l1", "2:D2+l2", "3:D3+l3")
	left("E", 2102, 0, all...)
	h.expect("2:E2+l2", "3:E3+l3")
	left("F", 2103, 0, all...)
	h.expect("3:F3+l3")
	left("G", 2104, 0, all...)
	h.expect()
	left("H", 1899, 0, all...)
	h.expect()
	left("I", 1900, 0, all...)
	h.expect("0:I0+l0")
}
