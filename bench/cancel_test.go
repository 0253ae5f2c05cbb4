package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seglog/seglog"
)

// TestWriteCancelledMidRound: a cancelled write run (and a paired durable
// one) stops inside its round rather than waiting out the round's share of
// --duration, says why, and leaves nothing behind (the spare floor's
// zeroer included).
func TestWriteCancelledMidRound(t *testing.T) {
	for _, floor := range []string{FloorPlain, FloorSpare} {
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		start := time.Now()
		_, err := RunWrite(ctx, Env{Dir: dir}, WriteConfig{RecordSize: 100, Batch: 10, Duration: 10 * time.Minute, Rounds: 2, Floor: floor,
			Options: seglog.Options{SegmentBytes: 1 << 20}})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: cancelled run returned %v", floor, err)
		}
		// The rounds are five minutes each: any return this side of one
		// means the round itself stopped.
		if d := time.Since(start); d > time.Minute {
			t.Fatalf("%s: cancelled run took %v to return", floor, d)
		}
		leftovers(t, dir)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := RunDurable(ctx, Env{Dir: dir}, DurableConfig{RecordSize: 100, Batch: 1, Duration: 10 * time.Minute, Rounds: 2,
		MaxWriters: 4, Paired: true, Options: seglog.Options{Sync: seglog.SyncAlways}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("paired: cancelled run returned %v", err)
	}
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("paired: cancelled run took %v to return", d)
	}
	leftovers(t, dir)
}
