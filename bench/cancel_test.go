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
	// Every run below has rounds of five minutes: a return within one
	// means the round itself stopped.
	cancelled := func(name string, run func(ctx context.Context, env Env) error) {
		t.Helper()
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(300*time.Millisecond, cancel)
		start := time.Now()
		if err := run(ctx, Env{Dir: dir}); !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: cancelled run returned %v", name, err)
		}
		if d := time.Since(start); d > time.Minute {
			t.Fatalf("%s: cancelled run took %v to return", name, d)
		}
		leftovers(t, dir)
	}
	for _, floor := range []string{FloorPlain, FloorSpare} {
		cancelled(floor, func(ctx context.Context, env Env) error {
			_, err := RunWrite(ctx, env, WriteConfig{RecordSize: 100, Batch: 10, Duration: 10 * time.Minute, Rounds: 2, Floor: floor,
				Options: seglog.Options{LogConfig: seglog.LogConfig{SegmentBytes: 1 << 20}}})
			return err
		})
	}
	cancelled("paired", func(ctx context.Context, env Env) error {
		_, err := RunDurable(ctx, env, DurableConfig{RecordSize: 100, Batch: 1, Duration: 10 * time.Minute, Rounds: 2,
			MaxWriters: 4, Paired: true, Options: seglog.Options{LogConfig: seglog.LogConfig{Sync: seglog.SyncAlways}}})
		return err
	})
}
