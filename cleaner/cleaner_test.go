package cleaner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/vfs"
)

func TestRunOnceDeletesByTime(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	l := openLog(t, fs, "/a", clock)
	defer l.Close()
	segmentsOf(t, l, clock, 72*time.Hour, 48*time.Hour, time.Hour)
	var mu sync.Mutex
	var deleted []SegmentDeleted
	var cleaned []LogCleaned
	c := New(Options{Clock: clock, Events: Events{
		SegmentDeleted: func(e SegmentDeleted) { mu.Lock(); deleted = append(deleted, e); mu.Unlock() },
		LogCleaned:     func(e LogCleaned) { mu.Lock(); cleaned = append(cleaned, e); mu.Unlock() },
	}})
	log := Wrap(l)
	if err := c.Add(log, retention(36*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := c.Add(log, retention(time.Hour)); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("second Add = %v", err)
	}
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 10 || l.NumSegments() != 2 {
		t.Fatalf("start %d, %d segments; want 10 and 2", l.StartOffset(), l.NumSegments())
	}
	if len(deleted) != 2 || deleted[0].BaseOffset != 0 || deleted[1].BaseOffset != 5 || deleted[0].Reason != ByTime || deleted[0].Dir != "/a" {
		t.Fatalf("segment events %+v", deleted)
	}
	if len(cleaned) != 1 || cleaned[0].Segments != 2 || cleaned[0].Records != 10 || cleaned[0].NewStartOffset != 10 {
		t.Fatalf("log events %+v", cleaned)
	}
	m := c.Metrics()
	if m.SegmentsDeleted != 2 || m.RecordsDeleted != 10 || m.BytesDeleted != deleted[0].Size+deleted[1].Size || m.BytesDeleted == 0 ||
		m.Passes != 1 || !m.LastRun.Equal(clock.Now()) || len(m.Logs) != 1 || m.Logs[0].StartOffset != 10 || m.Logs[0].Failed {
		t.Fatalf("metrics %+v", m)
	}
	if lm := m.Logs[0]; lm.Dir != "/a" || lm.SegmentsDeleted != 2 || lm.RecordsDeleted != 10 || lm.BytesDeleted != m.BytesDeleted ||
		!lm.LastRun.Equal(clock.Now()) || lm.Failures != 0 || lm.PinnedBy != -1 {
		t.Fatalf("the log's metrics %+v", lm)
	}
	// Nothing more to do: a second round changes nothing.
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 10 || c.Metrics().SegmentsDeleted != 2 {
		t.Fatalf("second round moved the start to %d", l.StartOffset())
	}
	// The records left are the ones the policy keeps.
	n := 0
	for r, err := range l.Records(l.StartOffset()) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset != int64(10+n) {
			t.Fatalf("record %d at offset %d", n, r.Offset)
		}
		n++
	}
	if n != 5 {
		t.Fatalf("%d records left, want 5", n)
	}
}

func TestActiveSegmentBreachIsRolledAndDeleted(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	l := openLog(t, fs, "/a", clock)
	defer l.Close()
	appendAt(t, l, clock.Now().Add(-2*time.Hour).UnixMilli(), 4)
	c := New(Options{Clock: clock})
	if err := c.Add(Wrap(l), retention(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 4 || l.EndOffset() != 4 || l.NumSegments() != 1 {
		t.Fatalf("start %d end %d, %d segments", l.StartOffset(), l.EndOffset(), l.NumSegments())
	}
	if info := appendAt(t, l, clock.Now().UnixMilli(), 1); info.FirstOffset != 4 {
		t.Fatalf("append after the breach got offset %d", info.FirstOffset)
	}
	// A high watermark below the end keeps the active segment.
	appendAt(t, l, clock.Now().Add(-2*time.Hour).UnixMilli(), 1)
	if err := c.SetUpperBound(Wrap(l), 5); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Hour)
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 4 {
		t.Fatalf("retention passed the upper bound: start %d", l.StartOffset())
	}
}

func TestDeleteRecords(t *testing.T) {
	fs, clock := vfs.NewMem(), newFakeClock()
	l := openLog(t, fs, "/a", clock)
	defer l.Close()
	segmentsOf(t, l, clock, time.Hour, time.Hour, time.Hour)
	c := New(Options{Clock: clock})
	log := Wrap(l)
	if err := c.Add(log, retention(Forever)); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteRecords(log, 16); !errors.Is(err, ErrBeyondUpperBound) {
		t.Fatalf("DeleteRecords past the end = %v", err)
	}
	if err := c.DeleteRecords(log, 7); err != nil {
		t.Fatal(err)
	}
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 7 || l.NumSegments() != 3 {
		t.Fatalf("start %d, %d segments; want 7 and 3", l.StartOffset(), l.NumSegments())
	}
	if _, err := l.Read(6, 100, seglog.ReadOptions{}); !errors.Is(err, seglog.ErrOffsetOutOfRange) {
		t.Fatalf("read below the new start: %v", err)
	}
	if err := c.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(log); !errors.Is(err, ErrUnknownLog) {
		t.Fatalf("second Remove = %v", err)
	}
}

// fakeLog is a Log whose behaviour a test scripts.
type fakeLog struct {
	dir      string
	segs     []Segment
	start    atomic.Int64
	panicMsg string
	err      error
	// block, if set, is waited on inside DeleteBefore.
	block   chan struct{}
	entered chan string
	// afterDelete, if set, is called as DeleteBefore returns.
	afterDelete func()
	deletes     atomic.Int64
	views       atomic.Int64 // Segments calls
}

func (f *fakeLog) Dir() string                      { return f.dir }
func (f *fakeLog) StartOffset() int64               { return f.start.Load() }
func (f *fakeLog) EndOffset() int64                 { return f.segs[len(f.segs)-1].NextOffset }
func (f *fakeLog) Roll() error                      { return nil }
func (f *fakeLog) SetFileDeleteDelay(time.Duration) {}
func (f *fakeLog) ExpireDeleted() int               { return 0 }
func (f *fakeLog) Segments() []Segment {
	f.views.Add(1)
	if f.panicMsg != "" {
		panic(f.panicMsg)
	}
	return f.segs
}
func (f *fakeLog) DeleteBefore(offset int64) (int, error) {
	if f.entered != nil {
		f.entered <- f.dir
	}
	if f.block != nil {
		<-f.block
	}
	if f.err != nil {
		return 0, f.err
	}
	f.deletes.Add(1)
	var kept []Segment
	for i, s := range f.segs {
		if i < len(f.segs)-1 && f.segs[i+1].BaseOffset <= offset {
			continue
		}
		kept = append(kept, s)
	}
	n := len(f.segs) - len(kept)
	f.segs = kept
	f.start.Store(offset)
	if f.afterDelete != nil {
		f.afterDelete()
	}
	return n, nil
}

func expiredLog(dir string) *fakeLog {
	return &fakeLog{dir: dir, segs: []Segment{seg(0, 72), emptyActive(100)}}
}

func TestFailureStaysWithItsLog(t *testing.T) {
	clock := newFakeClock()
	var failures []Failure
	var mu sync.Mutex
	c := New(Options{Clock: clock, Workers: 2, Events: Events{Failure: func(f Failure) {
		mu.Lock()
		failures = append(failures, f)
		mu.Unlock()
	}}})
	good1, good2 := expiredLog("/a"), expiredLog("/d")
	panicky := expiredLog("/b")
	panicky.panicMsg = "boom"
	failing := expiredLog("/c")
	failing.err = errors.New("disk on fire")
	for _, l := range []*fakeLog{good1, panicky, failing, good2} {
		if err := c.Add(l, retention(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if good1.StartOffset() != 100 || good2.StartOffset() != 100 {
		t.Fatalf("healthy logs not cleaned: %d, %d", good1.StartOffset(), good2.StartOffset())
	}
	m := c.Metrics()
	if m.Failures != 2 || m.SegmentsDeleted != 2 || len(failures) != 2 {
		t.Fatalf("metrics %+v, failures %+v", m, failures)
	}
	byDir := map[string]LogMetrics{}
	for _, lm := range m.Logs {
		byDir[lm.Dir] = lm
	}
	var pe *PanicError
	if b := byDir["/b"]; !b.Failed || !errors.As(b.Err, &pe) || pe.Value != "boom" || len(pe.Stack) == 0 {
		t.Fatalf("panicking log: %+v", b)
	}
	if c := byDir["/c"]; !c.Failed || c.Err != failing.err || c.Failures != 1 {
		t.Fatalf("failing log: %+v", c)
	}
	// The failure is retried each round, and cleared once a pass works.
	failing.err = nil
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, lm := range c.Metrics().Logs {
		if lm.Dir == "/c" && (lm.Failed || lm.Err != nil || lm.Failures != 1 || lm.StartOffset != 100) {
			t.Fatalf("recovered log: %+v", lm)
		}
	}
}

func TestPinnedByFutureTimestampIsReported(t *testing.T) {
	c := New(Options{Clock: newFakeClock()})
	l := &fakeLog{dir: "/a", segs: []Segment{seg(0, 72), seg(100, -3), seg(200, 72), emptyActive(300)}}
	var got []LogCleaned
	c.opts.Events.LogCleaned = func(e LogCleaned) { got = append(got, e) }
	if err := c.Add(l, retention(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := c.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 100 || len(got) != 1 || got[0].PinnedBy != 100 || c.Metrics().Logs[0].PinnedBy != 100 {
		t.Fatalf("start %d, events %+v", l.StartOffset(), got)
	}
}

func TestStartRunsEveryIntervalAndStops(t *testing.T) {
	clock := newFakeClock()
	cleaned := make(chan LogCleaned, 10)
	var logs testutil.LockedBuffer
	c := New(Options{Clock: clock, Events: Events{LogCleaned: func(e LogCleaned) { cleaned <- e }},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	l := expiredLog("/a")
	if err := c.Add(l, retention(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(context.Background()); !errors.Is(err, ErrRunning) {
		t.Fatalf("second Start = %v", err)
	}
	// The first round comes DefaultInitialDelay after Start (Kafka's
	// log.initial.task.delay.ms), not a whole interval: a restarted
	// process applies retention again within half a minute.
	clock.WaitForTimers(t, 1)
	clock.Advance(DefaultInitialDelay - time.Second)
	select {
	case e := <-cleaned:
		t.Fatalf("round before the initial delay: %+v", e)
	default:
	}
	clock.Advance(time.Second)
	if e := <-cleaned; e.NewStartOffset != 100 {
		t.Fatalf("first round: %+v", e)
	}
	// The deletion is logged at Info, where an operator looks.
	if got := logs.String(); !strings.Contains(got, "level=INFO msg=\"cleaner: deleted segments\" dir=/a") || !strings.Contains(got, "start_offset=100") {
		t.Fatalf("the cleaner's log after deleting: %q", got)
	}
	// Then every interval.
	clock.WaitForTimers(t, 1)
	clock.Advance(DefaultCheckInterval - time.Second)
	select {
	case e := <-cleaned:
		t.Fatalf("second round before the interval: %+v", e)
	default:
	}
	clock.Advance(time.Second)
	if e := <-cleaned; e.Segments != 0 {
		t.Fatalf("second round: %+v", e)
	}
	clock.WaitForTimers(t, 1) // the round has ended
	c.Stop()
	c.Stop() // idempotent
	if got := c.Metrics().Passes; got != 2 {
		t.Fatalf("%d passes", got)
	}
}

func TestStopWhileBusyWaitsForPassesInFlight(t *testing.T) {
	clock := newFakeClock()
	const workers, logs = 3, 50
	c := New(Options{Clock: clock, Workers: workers})
	block := make(chan struct{})
	entered := make(chan string, logs)
	all := make([]*fakeLog, logs)
	for i := range all {
		all[i] = expiredLog(fmt.Sprintf("/log%03d", i))
		all[i].block, all[i].entered = block, entered
		if err := c.Add(all[i], retention(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	clock.WaitForTimers(t, 1)
	clock.Advance(DefaultCheckInterval)
	for range workers {
		<-entered
	}
	if b := c.Metrics().Backlog; b != logs-workers && b != logs-workers-1 {
		t.Fatalf("backlog %d with %d workers busy of %d logs", b, workers, logs)
	}
	// Ending Start's context stops the cleaner as Stop does; Stop then
	// waits for the passes in flight.
	cancel()
	stopped := make(chan struct{})
	go func() { c.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while passes were in flight")
	default:
	}
	close(block)
	<-stopped
	var done int64
	for _, l := range all {
		done += l.deletes.Load()
	}
	// Stop let the in-flight passes finish and started no other.
	if done != workers {
		t.Fatalf("%d passes ran, want the %d in flight", done, workers)
	}
	if m := c.Metrics(); m.Passes != 0 || m.Failures != 0 || m.Backlog != 0 {
		t.Fatalf("after an interrupted round: %+v", m)
	}
}

func TestSetPolicyValidates(t *testing.T) {
	c := New(Options{})
	l := expiredLog("/a")
	bad := DefaultPolicy()
	bad.RetentionBytes = -5
	if err := c.Add(l, bad); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("Add with a bad policy = %v", err)
	}
	if err := c.SetPolicy(l, DefaultPolicy()); !errors.Is(err, ErrUnknownLog) {
		t.Fatalf("SetPolicy of an unknown log = %v", err)
	}
	if err := c.Add(l, DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPolicy(l, bad); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("SetPolicy with a bad policy = %v", err)
	}
}

// TestQuietLogIsNotLookedAtAgain: after a pass that found nothing to
// delete, later passes skip the segment view until the first segment can
// expire or an input changes, and then look again.
func TestQuietLogIsNotLookedAtAgain(t *testing.T) {
	clock := newFakeClock()
	c := New(Options{Clock: clock})
	l := &fakeLog{dir: "/a", segs: []Segment{seg(0, 2), active(seg(100, 1))}}
	if err := c.Add(l, retention(3*time.Hour)); err != nil {
		t.Fatal(err)
	}
	round := func(wantViews int64, wantStart int64) {
		t.Helper()
		if err := c.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := l.views.Load(); got != wantViews {
			t.Fatalf("%d segment views, want %d", got, wantViews)
		}
		if got := l.StartOffset(); got != wantStart {
			t.Fatalf("start %d, want %d", got, wantStart)
		}
	}
	round(1, 0)
	round(1, 0) // nothing changed
	clock.Advance(time.Hour)
	round(1, 0)                // exactly at the first segment's retention: not yet expired
	l.segs[1].NextOffset += 50 // appends do not make the time rule fire sooner
	round(1, 0)
	p := retention(3 * time.Hour)
	p.FileDeleteDelay = time.Second
	if err := c.SetPolicy(l, p); err != nil {
		t.Fatal(err)
	}
	round(2, 0) // a new policy is looked at
	clock.Advance(time.Millisecond)
	round(3, 100) // the first segment expired
	round(4, 100) // a pass after a deletion looks at the new view
	round(4, 100) // which is quiet

	// Under retention.bytes, any append is a reason to look.
	p.RetentionBytes = 100_000
	if err := c.SetPolicy(l, p); err != nil {
		t.Fatal(err)
	}
	round(5, 100)
	round(5, 100)
	l.segs[len(l.segs)-1].NextOffset++
	round(6, 100)
	// A DeleteRecords request is too.
	if err := c.DeleteRecords(l, 120); err != nil {
		t.Fatal(err)
	}
	round(7, 120)
}

// TestRemoveWaitsForPassInFlight: Remove of a log in its pass returns only
// once the pass has ended (so the caller may close the log), and a log
// removed while its round is under way is not cleaned in that round, nor
// reported any more.
func TestRemoveWaitsForPassInFlight(t *testing.T) {
	c := New(Options{Clock: newFakeClock()})
	busy, waiting := expiredLog("/a"), expiredLog("/b")
	busy.block, busy.entered = make(chan struct{}), make(chan string, 1)
	var passEnded atomic.Bool
	busy.afterDelete = func() { passEnded.Store(true) }
	for _, l := range []*fakeLog{busy, waiting} {
		if err := c.Add(l, retention(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	round := make(chan error)
	go func() { round <- c.RunOnce(context.Background()) }()
	<-busy.entered // the one worker is in /a's pass; /b waits for it
	if err := c.Remove(waiting); err != nil {
		t.Fatal(err)
	}
	removed := make(chan bool, 1)
	go func() {
		if err := c.Remove(busy); err != nil {
			t.Error(err)
		}
		removed <- passEnded.Load()
	}()
	// Give a Remove that does not wait every chance to return first.
	for i := 0; i < 10_000 && len(removed) == 0; i++ {
		runtime.Gosched()
	}
	close(busy.block)
	if !<-removed {
		t.Fatal("Remove returned while the log's pass was in flight")
	}
	if err := <-round; err != nil {
		t.Fatal(err)
	}
	if waiting.deletes.Load() != 0 || waiting.StartOffset() != 0 {
		t.Fatalf("a log removed before its turn was cleaned: start %d", waiting.StartOffset())
	}
	if m := c.Metrics(); len(m.Logs) != 0 || m.SegmentsDeleted != 1 {
		t.Fatalf("after removing both: %d logs, %d segments deleted", len(m.Logs), m.SegmentsDeleted)
	}
}
