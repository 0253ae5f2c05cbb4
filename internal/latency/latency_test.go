package latency

import (
	"slices"
	"testing"
	"time"
)

// TestBuckets: an observation lands in the first bucket whose bound is at
// or above it, the cumulative counts add up, and one above every bound
// counts only in the total.
func TestBuckets(t *testing.T) {
	var h Histogram
	h.Observe(500 * time.Microsecond) // exactly the first bound
	h.Observe(3 * time.Millisecond)   // the 5 ms bucket
	h.Observe(time.Minute)            // above every bound
	cum, count, sum := h.Snapshot()
	if count != 3 {
		t.Fatalf("count %d, want 3", count)
	}
	want := make([]uint64, len(Bounds))
	for i, b := range Bounds {
		switch {
		case b >= 0.005:
			want[i] = 2
		default:
			want[i] = 1
		}
	}
	if !slices.Equal(cum, want) {
		t.Fatalf("cumulative %v, want %v", cum, want)
	}
	if wantSum := (500*time.Microsecond + 3*time.Millisecond + time.Minute).Seconds(); sum != wantSum {
		t.Fatalf("sum %v, want %v", sum, wantSum)
	}
}
