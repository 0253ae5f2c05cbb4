package compaction

import (
	"errors"
	"fmt"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestTruncationDuringRound: a truncation that removes a key's latest
// record after the round mapped it, but before the older segments are
// swapped, makes the round give up: the older record, now the key's
// latest, survives. Without the check the map would drop it.
func TestTruncationDuringRound(t *testing.T) {
	l := openTestLog(t, vfs.NewMem())
	defer l.Close()
	for i := range 200 {
		// Key "a" at offsets 0 and 150, every other key unique.
		key := fmt.Appendf(nil, "u%d", i)
		if i == 0 || i == 150 {
			key = []byte("a")
		}
		if _, err := l.Append(record.Record{Key: key, Value: valueAt(int64(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	// The throttle is charged every byte of the pass over the log that
	// maps it before the rewrite starts: truncate once the rewrite has
	// begun.
	var seen, total int64
	truncated := false
	for _, s := range l.Segments() {
		if s.NextOffset <= 200 {
			total += s.Size
		}
	}
	o := Options{SegmentBytes: 2 << 10, Throttle: func(n int64) error {
		seen += n
		if !truncated && seen > total {
			truncated = true
			return l.TruncateTo(100)
		}
		return nil
	}}
	_, err := Clean(l, NewOffsetMap(1<<20, 0), 0, l.EndOffset(), o)
	if !truncated {
		t.Fatal("the truncation never ran")
	}
	if !errors.Is(err, seglog.ErrSegmentsChanged) {
		t.Fatalf("Clean: %v, want ErrSegmentsChanged", err)
	}
	found := false
	for _, r := range testutil.ReadRecords(t, l, l.StartOffset()) {
		if string(r.Key) == "a" {
			found = r.Offset == 0
		}
	}
	if !found {
		t.Fatal("key a's only remaining record (offset 0) was removed")
	}
}
