package cleaner

import (
	"context"
	"fmt"
	"path"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// fileCounter counts files open on an FS (opened and not yet closed).
type fileCounter struct {
	fs         vfs.FS // the FS under the injector, to tell opens that will fail
	open, peak atomic.Int64
	mu         sync.Mutex
	byName     map[string]int // handles open, by the name they were opened by
}

func (f *fileCounter) inject(op vfs.Op) error {
	switch op.Kind {
	case vfs.OpOpen, vfs.OpOpenReadWrite:
		if _, err := f.fs.Stat(op.Path); err != nil {
			return nil // it will fail: nothing opened
		}
		fallthrough
	case vfs.OpCreate:
		f.mu.Lock()
		f.byName[op.Path]++
		f.mu.Unlock()
		n := f.open.Add(1)
		for {
			p := f.peak.Load()
			if n <= p || f.peak.CompareAndSwap(p, n) {
				break
			}
		}
	case vfs.OpClose:
		f.mu.Lock()
		if f.byName[op.Path]--; f.byName[op.Path] == 0 {
			delete(f.byName, op.Path)
		}
		f.mu.Unlock()
		f.open.Add(-1)
	}
	return nil
}

// TestThousandLogs runs one cleaner over 1,000 logs while appenders write
// to them: the cleaner's goroutines stay at its workers however many logs
// there are, deleted segments' files are closed (open files stay bounded
// by the segments retention keeps, and none is open under a deleted
// segment's name), every log ends within its policy with its records
// contiguous, and Stop in the middle of a round returns once the passes
// in flight end, running no other pass of the round.
func TestThousandLogs(t *testing.T) {
	const (
		logs      = 1000
		workers   = 4
		keepBytes = 600
		appenders = 2
	)
	clock := newFakeClock()
	files := fileCounter{fs: vfs.NewMem(), byName: map[string]int{}}
	fs := vfs.Inject(files.fs, vfs.InjectorFunc(files.inject))
	all := make([]*seglog.Log, logs)
	wrapped := make([]Log, logs)
	var goroutinePeak atomic.Int64
	sample := func() {
		n := int64(runtime.NumGoroutine())
		for {
			p := goroutinePeak.Load()
			if n <= p || goroutinePeak.CompareAndSwap(p, n) {
				return
			}
		}
	}
	c := New(Options{Clock: clock, Workers: workers, Events: Events{LogCleaned: func(LogCleaned) { sample() }}})
	policy := retention(Forever)
	policy.RetentionBytes = keepBytes
	for i := range all {
		l, err := seglog.Open(fmt.Sprintf("/data/log-%04d", i), seglog.Options{
			FS: fs, LogConfig: seglog.LogConfig{SegmentBytes: 256, MaxIndexBytes: 64}, MaxMappedIndexes: 4, Clock: clock,
		})
		if err != nil {
			t.Fatal(err)
		}
		all[i], wrapped[i] = l, Wrap(l)
		if err := c.Add(wrapped[i], policy); err != nil {
			t.Fatal(err)
		}
	}
	defer func() {
		for _, l := range all {
			l.Close()
		}
	}()
	value := make([]byte, 100)
	appendRound := func(from int) {
		for i := from; i < logs; i += appenders {
			if _, err := all[i].Append(record.Record{Value: value, Timestamp: 1}); err != nil {
				t.Error(err)
				return
			}
		}
	}
	for range 4 { // four batches per log: more than retention keeps
		for a := range appenders {
			appendRound(a)
		}
	}
	runtime.GC()
	baseline := int64(runtime.NumGoroutine())

	// Rounds from the scheduler with appenders running.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 2 {
				appendRound(a)
			}
		}()
	}
	// The scheduler arms its next timer when a round ends.
	for range 3 {
		clock.WaitForTimers(t, 1)
		clock.Advance(DefaultCheckInterval)
	}
	wg.Wait()
	// Stop while a round is busy: every worker is held inside a pass
	// (in its SegmentDeleted event) when Start's context ends. Stop then
	// returns once those passes end, and no other pass of the round runs:
	// the remaining logs wait for the next round.
	clock.WaitForTimers(t, 1)
	passesBefore := c.Metrics().Passes
	busy, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var stopped atomic.Bool
	var cleanedInRound, cleanedAfterStop atomic.Int64
	c.opts.Events.SegmentDeleted = func(SegmentDeleted) {
		once.Do(func() { close(busy) })
		<-release
	}
	c.opts.Events.LogCleaned = func(LogCleaned) {
		sample()
		cleanedInRound.Add(1)
		if stopped.Load() {
			cleanedAfterStop.Add(1)
		}
	}
	for a := range appenders {
		appendRound(a) // something to delete in every log
	}
	clock.Advance(DefaultCheckInterval)
	<-busy
	cancel()
	stopped.Store(true)
	close(release)
	c.Stop()
	c.opts.Events.SegmentDeleted = nil
	c.opts.Events.LogCleaned = func(LogCleaned) { sample() }
	if n := cleanedAfterStop.Load(); n > workers {
		t.Fatalf("%d passes ended after the stop, want at most the %d in flight", n, workers)
	}
	if n, m := cleanedInRound.Load(), c.Metrics(); n >= logs || m.Passes != passesBefore {
		t.Fatalf("the stopped round cleaned %d of %d logs and counted as a pass (%d, was %d)", n, logs, m.Passes, passesBefore)
	}
	if m := c.Metrics(); m.Failures != 0 {
		var errs []string
		for _, lm := range m.Logs {
			if lm.Failures > 0 {
				errs = append(errs, fmt.Sprintf("%s: %v", lm.Dir, lm.Err))
			}
		}
		t.Fatalf("after the rounds: %d failures: %v", m.Failures, errs)
	}
	// The scheduler plus the workers (and the appenders) over the baseline.
	if extra := goroutinePeak.Load() - baseline; extra > workers+1+appenders {
		t.Fatalf("%d goroutines over the baseline of %d while cleaning, want at most %d", extra, baseline, workers+1+appenders)
	}

	// One final round with nothing appending: every log then holds what
	// its policy keeps and no more, readable from its start.
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Seven batches of about 170 bytes went to each log: with 600 bytes
	// kept, at least three of its one-batch segments are gone.
	if m := c.Metrics(); m.Failures != 0 || m.SegmentsDeleted < 3*logs {
		t.Fatalf("after the last round: %d failures, %d segments deleted", m.Failures, m.SegmentsDeleted)
	}
	// Each log keeps at most keepBytes plus one segment of 256 bytes, in
	// segments of three files each, and holds its lock open.
	maxSegments := int64(keepBytes/100 + 3)
	var kept int64
	for _, l := range all {
		kept += int64(l.NumSegments())
	}
	if open := files.open.Load(); open > 3*kept+logs || kept > logs*maxSegments {
		t.Fatalf("%d files open for %d logs of %d segments in all", open, logs, kept)
	}
	// No descriptor outlives its segment's deletion: nothing is open under
	// the name of a segment file that is gone (no reader holds one here).
	files.mu.Lock()
	for name := range files.byName {
		if _, _, ok := segment.ParseFileName(path.Base(name)); !ok {
			continue // a checkpoint a background flush is writing
		}
		if _, err := files.fs.Stat(name); err != nil {
			t.Errorf("%s is open after its segment was deleted: %v", name, err)
		}
	}
	files.mu.Unlock()
	for i, l := range all {
		if p := Decide(Input{Segments: wrapped[i].Segments(), Policy: policy, Now: clock.Now(), StartOffset: l.StartOffset(), UpperBound: -1}); !p.Empty() {
			t.Fatalf("log %d still has %d segments to delete after a quiet round", i, len(p.Delete))
		}
		if i%97 != 0 {
			continue
		}
		next := l.StartOffset()
		for r, err := range l.Records(next) {
			if err != nil || r.Offset != next {
				t.Fatalf("log %d: record %d: offset %d, %v", i, next, r.Offset, err)
			}
			next++
		}
		if next != l.EndOffset() || l.Size() < keepBytes-256 {
			t.Fatalf("log %d: read to %d of %d, %d bytes kept", i, next, l.EndOffset(), l.Size())
		}
	}
	for _, w := range wrapped {
		if err := c.Remove(w); err != nil {
			t.Fatal(err)
		}
	}
	if m := c.Metrics(); len(m.Logs) != 0 || m.SegmentsDeleted == 0 {
		t.Fatalf("after removing every log: %d logs, %d deleted in total", len(m.Logs), m.SegmentsDeleted)
	}
}
