package defaults

import (
	"math"
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
		{"retention.ms", int64(Retention / time.Millisecond), 604800000},
		{"retention.bytes", RetentionBytes, -1},
		{"file.delete.delay.ms", int64(FileDeleteDelay / time.Millisecond), 60000},
		{"delete.retention.ms", int64(DeleteRetention / time.Millisecond), 86400000},
		{"min.compaction.lag.ms", int64(MinCompactionLag / time.Millisecond), 0},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, Kafka's default is %d", c.name, c.got, c.want)
		}
	}
	if MinCleanableDirtyRatio != 0.5 {
		t.Errorf("min.cleanable.dirty.ratio = %v, Kafka's default is 0.5", MinCleanableDirtyRatio)
	}
	// Kafka's max.compaction.lag.ms is Long.MAX_VALUE: no limit, which a
	// Duration can only say as its own largest value.
	if MaxCompactionLag != time.Duration(math.MaxInt64) {
		t.Errorf("max.compaction.lag.ms = %v, want no limit (the largest Duration)", MaxCompactionLag)
	}
}
