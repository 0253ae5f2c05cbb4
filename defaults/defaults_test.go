package defaults

import (
	"testing"
	"time"
)

// TestKafkaValues pins the numbers to Kafka's documented topic defaults:
// every layer takes them from here, so a slip would change them all.
func TestKafkaValues(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"segment.bytes", SegmentBytes, 1073741824},
		{"segment.ms", int64(SegmentAge / time.Millisecond), 604800000},
		{"index.interval.bytes", IndexIntervalBytes, 4096},
		{"segment.index.bytes", MaxIndexBytes, 10485760},
		{"max.message.bytes", MaxBatchBytes, 1048588},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, Kafka's default is %d", c.name, c.got, c.want)
		}
	}
}
