package seglog

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestReadersDuringAppends runs one appender and eight readers: every
// reader sees contiguous offsets with the values written there, never a
// partial batch, and never reads past the end offset it observed.
func TestReadersDuringAppends(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		l, err := Open(dir, Options{FS: fs, LogConfig: LogConfig{SegmentBytes: 32 << 10, IndexIntervalBytes: 1024, MaxIndexBytes: 4096}, MaxOpenSegmentFiles: 2, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		const total = 3000
		var done atomic.Bool
		var wg sync.WaitGroup
		errs := make(chan error, 9)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done.Store(true)
			for l.EndOffset() < total {
				if _, err := l.Append(recordsAt(l.EndOffset(), 1+int(l.EndOffset()%5))...); err != nil {
					errs <- err
					return
				}
			}
		}()
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for !done.Load() {
					end := l.EndOffset()
					// Half the readers tail the log, half start inside it.
					from := max(0, end-20)
					if g%2 == 0 {
						from = int64(g) * end / 8
					}
					next := from
					for r, err := range l.Records(from) {
						if err != nil {
							errs <- err
							return
						}
						if r.Offset != next || !sameBytes(r.Value, crashValue(r.Offset, len(r.Value))) {
							errs <- fmt.Errorf("reader from %d: offset %d (want %d) holds a wrong value or is out of place", from, r.Offset, next)
							return
						}
						next++
						if next-from > 300 {
							break
						}
					}
					if next < end && next-from <= 300 {
						errs <- fmt.Errorf("reader from %d stopped at %d before the end %d it had observed", from, next, end)
						return
					}
				}
			}(g)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	})
}

// countSyncs counts fdatasyncs, each made to take as long as a real disk's
// (in-memory syncs are so fast that appenders would never overlap).
func countSyncs(fs vfs.FS) (vfs.FS, *atomic.Int64) {
	var n atomic.Int64
	return vfs.Inject(fs, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync {
			n.Add(1)
			time.Sleep(500 * time.Microsecond)
		}
		return nil
	})), &n
}

// TestGroupCommit: 64 concurrent appenders under SyncAlways share
// fdatasyncs — far fewer syncs than appends — and every append returns
// only once its batch is on disk (checked by a power loss right after).
func TestGroupCommit(t *testing.T) {
	mem := vfs.NewMem()
	fs, syncs := countSyncs(mem)
	l, err := Open("/gc", Options{FS: fs, LogConfig: LogConfig{Sync: SyncAlways}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 64, 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[int64][]byte{}
	before := syncs.Load()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				v := []byte{byte(w), byte(i)}
				info, err := l.Append(record.Record{Value: v})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked[info.FirstOffset] = v
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()
	used := syncs.Load() - before
	if used >= writers*each {
		t.Fatalf("%d syncs for %d appends: no group commit", used, writers*each)
	}
	t.Logf("%d appends, %d fdatasyncs", writers*each, used)
	// Power loss without Close: everything acknowledged is there.
	crashed := mem.CrashClone()
	l2, err := Open("/gc", Options{FS: crashed, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	found := 0
	for r, err := range l2.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		if v, ok := acked[r.Offset]; ok && sameBytes(v, r.Value) {
			found++
		}
	}
	if found != len(acked) {
		t.Fatalf("%d of %d acknowledged records survived", found, len(acked))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestSyncFailureStopsAppends: after a failed fdatasync the log refuses
// every append with ErrSyncFailed until reopened, and the reopened log
// holds what was acknowledged before.
func TestSyncFailureStopsAppends(t *testing.T) {
	mem := vfs.NewMem()
	var fail atomic.Bool
	fs := vfs.Inject(mem, vfs.If(func(op vfs.Op) bool { return fail.Load() && op.Kind == vfs.OpSync }, nil))
	l, err := Open("/sf", Options{FS: fs, LogConfig: LogConfig{Sync: SyncAlways}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(recordsAt(0, 3)...); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	if _, err := l.Append(recordsAt(3, 1)...); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("append with failing sync: %v, want ErrSyncFailed", err)
	}
	fail.Store(false)
	if _, err := l.Append(recordsAt(4, 1)...); !errors.Is(err, ErrSyncFailed) {
		t.Fatalf("append after a failed sync: %v, want ErrSyncFailed", err)
	}
	l.Close()
	l2, err := Open("/sf", Options{FS: mem.CrashClone(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	if l2.EndOffset() < 3 {
		t.Fatalf("end %d after reopen: acknowledged records lost", l2.EndOffset())
	}
	if _, err := l2.Append(recordsAt(l2.EndOffset(), 1)...); err != nil {
		t.Fatalf("append after reopen: %v", err)
	}
}

// TestSyncPeriodic: the byte trigger and the interval trigger each flush in
// the background and advance the recovery point, without appends waiting.
func TestSyncPeriodic(t *testing.T) {
	t.Run("bytes", func(t *testing.T) {
		mem := vfs.NewMem()
		l, err := Open("/p", Options{FS: mem, LogConfig: LogConfig{Sync: SyncPeriodic, SyncBytes: 8 << 10}, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := l.Append(recordsAt(0, 3)...); err != nil { // well under the threshold
			t.Fatal(err)
		}
		// Append decides the byte trigger and the flusher carries it out.
		// Stopping the flusher waits out a flush it was asked for, so what
		// is then done or still pending is final: no flush, and none asked.
		l.stopFlusher()
		if rp, target, kicks := l.RecoveryPoint(), l.flushTarget.Load(), len(l.flusher.kick); rp != 0 || target != 0 || kicks != 0 {
			t.Fatalf("before the byte threshold was reached: recovery point %d, flush asked to %d, %d kicks pending", rp, target, kicks)
		}
		l.startFlusher()
		for l.EndOffset() < 100 {
			if _, err := l.Append(recordsAt(l.EndOffset(), 4)...); err != nil {
				t.Fatal(err)
			}
		}
		testutil.WaitFor(t, "a flush after the byte threshold", func() bool { return l.RecoveryPoint() > 0 })
		// What the flush covered survives a power loss.
		rp := l.RecoveryPoint()
		l2, err := Open("/p", Options{FS: mem.CrashClone(), Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer l2.Close()
		if l2.EndOffset() < rp {
			t.Fatalf("recovery point %d, but only %d survived a power loss", rp, l2.EndOffset())
		}
	})
	t.Run("interval", func(t *testing.T) {
		l, err := Open("/q", Options{FS: vfs.NewMem(), LogConfig: LogConfig{Sync: SyncPeriodic, SyncInterval: 20 * time.Millisecond}, Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if _, err := l.Append(recordsAt(0, 2)...); err != nil {
			t.Fatal(err)
		}
		testutil.WaitFor(t, "the interval flush", func() bool { return l.RecoveryPoint() == l.EndOffset() })
	})
}

// TestTruncateBeforeGroupCommit: a SyncAlways append whose batch TruncateTo
// removes before the sync that would acknowledge it fails with
// ErrAppendTruncated instead of waiting forever or being acknowledged for
// batches that took its offsets.
func TestTruncateBeforeGroupCommit(t *testing.T) {
	mem := vfs.NewMem()
	release := make(chan struct{})
	var syncs atomic.Int64
	blockFirst := vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync && filepath.Ext(op.Path) == ".log" && syncs.Add(1) == 1 {
			<-release // the group commit's fdatasync hangs until released
		}
		return nil
	})
	l, err := Open("/tg", Options{FS: vfs.Inject(mem, blockFirst), LogConfig: LogConfig{Sync: SyncAlways}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	done := make(chan error, 1)
	go func() {
		_, err := l.Append(recordsAt(0, 3)...)
		done <- err
	}()
	// Wait until the append is inside its sync, then truncate it away:
	// TruncateTo's own sync is not blocked, so it finishes first, and only
	// then is the append's sync released.
	testutil.WaitFor(t, "the append is inside its sync", func() bool { return syncs.Load() > 0 })
	truncated := make(chan error, 1)
	go func() { truncated <- l.TruncateTo(0) }()
	select {
	case err := <-truncated:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("TruncateTo waits for the sync of the append it removes")
	}
	close(release)
	select {
	case err := <-done:
		if !errors.Is(err, ErrAppendTruncated) {
			t.Fatalf("append whose batch was truncated before its sync: %v, want ErrAppendTruncated", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("append still waiting for a sync of a batch that was truncated")
	}
	if l.EndOffset() != 0 {
		t.Fatalf("end %d after truncating to 0", l.EndOffset())
	}
	// The log goes on: a new append is acknowledged.
	if _, err := l.Append(recordsAt(0, 1)...); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitGather: a new leader waits for as many appends as the last
// sync covered (bounded by half that sync's duration), and never waits when
// the last group was a lone appender.
func TestGroupCommitGather(t *testing.T) {
	returns := func(g *groupCommit) <-chan struct{} {
		done := make(chan struct{})
		go func() { g.gather(); close(done) }()
		return done
	}
	within := func(done <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("gather did not return %s", what)
		}
	}

	var lone groupCommit
	lone.lastGroup.Store(1)
	lone.lastSync.Store(int64(time.Hour))
	within(returns(&lone), "for a lone appender")

	var g groupCommit
	g.lastGroup.Store(3)
	g.lastSync.Store(int64(time.Hour))
	done := returns(&g)
	g.appends.Add(2)
	select {
	case <-done:
		t.Fatal("gather returned with 2 of the 3 appends the last sync covered")
	case <-time.After(20 * time.Millisecond):
	}
	g.appends.Add(1)
	within(done, "once the group was complete")

	var bounded groupCommit
	bounded.lastGroup.Store(64)
	bounded.lastSync.Store(int64(2 * time.Millisecond))
	within(returns(&bounded), "after half the last sync's duration")
}
