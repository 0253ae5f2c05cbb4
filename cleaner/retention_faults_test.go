package cleaner

import (
	"context"
	"log/slog"
	"syscall"
	"testing"
	"time"

	"github.com/seglog/seglog/vfs"
)

// TestStatFailureDeletesNothing is TestLogFaultMatrix's finding: a segment
// whose records carry no timestamp (-1, as old Kafka data) is aged by its
// file's modification time, which Log.Segments reads with a Stat whose
// failure it cannot report. An EIO there made the time look like the zero
// time, thousands of years old, and retention deleted the segments of a
// log written a minute ago.
func TestStatFailureDeletesNothing(t *testing.T) {
	mem, clock := vfs.NewMem(), newFakeClock()
	failStat := false
	fs := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if failStat && op.Kind == vfs.OpStat {
			return syscall.EIO
		}
		return nil
	}))
	l := openLog(t, fs, "/a", clock)
	defer l.Close()
	for range 3 {
		appendAt(t, l, -1, 5)
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
	}
	before := l.NumSegments()
	c := New(Options{Clock: clock, Logger: slog.New(slog.DiscardHandler)})
	if err := c.Add(Wrap(l), retention(time.Hour)); err != nil {
		t.Fatal(err)
	}
	failStat = true
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	failStat = false
	if got := l.NumSegments(); got != before || l.StartOffset() != 0 {
		t.Fatalf("a failed Stat made retention delete: %d segments of %d left, start %d", got, before, l.StartOffset())
	}
}
