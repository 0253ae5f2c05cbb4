package seglog

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seglog/seglog/segment"
)

// groupCommit lets concurrent SyncAlways appenders share fdatasyncs. An
// appender that needs its batch durable either finds a sync already covering
// it, waits for the one in flight, or becomes the leader and runs the next
// sync itself, covering every batch written before the sync started. With N
// appenders waiting, one fsync acknowledges all of them.
type groupCommit struct {
	mu      sync.Mutex
	cond    sync.Cond
	durable int64 // every offset below is on disk
	syncing bool
	err     error // sticky: the first failed sync

	// Pacing (see gather). appends counts the appends deferred since the
	// last sync began; lastGroup is how many that sync covered, lastSync
	// how long its fdatasync took (nanoseconds).
	appends   atomic.Int64
	lastGroup atomic.Int64
	lastSync  atomic.Int64
}

func (g *groupCommit) init(durable int64) {
	g.cond.L = &g.mu
	g.durable = durable
}

// lower moves the durable mark down after a truncation, so a later append at
// the same offsets waits for its own sync.
func (g *groupCommit) lower(end int64) {
	g.mu.Lock()
	if g.durable > end {
		g.durable = end
	}
	g.mu.Unlock()
}

// waitDurable returns once every offset below target is on disk. gen is
// the truncation generation when the batch ending at target was appended:
// if a truncation has cut it since, the batch is gone (or its offsets hold
// someone else's batch) and the wait fails with ErrAppendTruncated.
func (l *Log) waitDurable(target int64, gen uint64) error {
	g := &l.commit
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.durable < target {
		if g.err != nil {
			return g.err
		}
		if l.truncations.affects(gen, target-1) {
			return fmt.Errorf("%w: offsets below %d", ErrAppendTruncated, target)
		}
		if g.syncing {
			g.cond.Wait()
			continue
		}
		g.syncing = true
		g.mu.Unlock()
		g.gather()
		err := l.syncActive() // advances g.durable itself
		g.mu.Lock()
		g.syncing = false
		if err != nil {
			g.err = l.fail(err)
		}
		g.cond.Broadcast()
	}
	return nil
}

// gather holds a new leader back, briefly, while the group is still
// filling. When a sync completes it wakes every appender it covered; they
// come back with their next appends one after another, and a leader that
// synced at once would cover only the first few, leaving the rest to wait
// a whole extra sync. So the leader waits until as many appends are
// pending as the last sync covered, for at most half that sync's duration
// (the idea of PostgreSQL's commit_delay, with the delay and the group
// size learned rather than configured). A lone appender (a last group of
// one) never waits, and a group that shrank is learned from the next sync.
func (g *groupCommit) gather() {
	want := g.lastGroup.Load()
	if want <= 1 || g.appends.Load() >= want {
		return
	}
	deadline := time.Now().Add(time.Duration(g.lastSync.Load() / 2))
	for g.appends.Load() < want && time.Now().Before(deadline) {
		runtime.Gosched()
	}
}

// syncActive writes the batches waiting for this group commit with one
// write call, fdatasyncs the active segment's .log and advances the durable
// mark and the recovery point to what the sync covers: everything published
// before it started — unless a truncation ran meanwhile, in which case the
// offsets below that mark may now hold newer, unsynced batches, and the
// next round decides. Under
// SyncAlways every older segment was synced when it was rolled, and indexes
// need no sync: after a crash they are rebuilt from the .log (recovery
// always rebuilds the indexes above the recovery point).
func (l *Log) syncActive() error {
	l.mu.Lock()
	group := l.commit.appends.Swap(0)
	if err := l.publishLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	seg := l.segs.active
	upTo := l.end.Load()
	gen := l.truncations.current()
	ok := seg.Acquire()
	l.mu.Unlock()
	if !ok {
		// The active segment was removed under us (truncation); the next
		// round picks the new one.
		return nil
	}
	defer seg.Release()
	t0 := time.Now()
	if err := l.syncDirIfPending(); err != nil {
		return err
	}
	if err := seg.File().Sync(); err != nil {
		return err
	}
	l.commit.lastSync.Store(int64(time.Since(t0)))
	l.countFlush(t0)
	l.commit.lastGroup.Store(group)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.truncations.current() != gen {
		return nil
	}
	if upTo > l.mu.recoveryPoint {
		l.mu.recoveryPoint = upTo
	}
	l.commit.mu.Lock() // lock order: mu, then commit.mu
	if upTo > l.commit.durable {
		l.commit.durable = upTo
	}
	l.commit.mu.Unlock()
	return nil
}

// flusher runs the flushes appends do not wait for: segments sealed by a
// roll (as Kafka flushes on roll), SyncPeriodic's byte and interval
// triggers, and the recovery-point checkpoint that follows them.
type flusher struct {
	kick chan struct{}
	quit chan struct{}
	done chan struct{}
}

func (l *Log) startFlusher() {
	if p := l.opts.flushPool; p != nil {
		p.add(l)
		return
	}
	f := &flusher{kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	l.flusher = f
	var ticker *time.Ticker
	var tick <-chan time.Time
	if l.opts.Sync == SyncPeriodic && l.opts.SyncInterval > 0 {
		ticker = time.NewTicker(l.opts.SyncInterval)
		tick = ticker.C
	}
	go func() {
		defer close(f.done)
		if ticker != nil {
			defer ticker.Stop()
		}
		for {
			select {
			case <-f.quit:
				return
			case <-f.kick:
			case <-tick:
			}
			target := l.flushTarget.Swap(0)
			if target == 0 || (tick != nil && target < l.end.Load()) {
				target = l.end.Load() // the interval flushes everything
			}
			if err := l.flushAll(target, true); err != nil {
				l.logger.Error("seglog: background flush failed; appends are refused until the log is reopened",
					"dir", l.dir, "err", err)
			}
		}
	}()
}

// kickFlusher asks the flusher to make offsets below upTo durable, without
// waiting for it.
func (l *Log) kickFlusher(upTo int64) {
	for {
		cur := l.flushTarget.Load()
		if cur >= upTo || l.flushTarget.CompareAndSwap(cur, upTo) {
			break
		}
	}
	if p := l.opts.flushPool; p != nil {
		p.kick(l)
		return
	}
	select {
	case l.flusher.kick <- struct{}{}:
	default:
	}
}

func (l *Log) stopFlusher() {
	if p := l.opts.flushPool; p != nil {
		p.remove(l)
		return
	}
	close(l.flusher.quit)
	<-l.flusher.done
}

// flushAll makes every record below upTo durable: it syncs each segment
// from the one holding the recovery point to the one holding upTo-1,
// advances the recovery point, and with checkpoint set rewrites the
// recovery-point file.
func (l *Log) flushAll(upTo int64, checkpoint bool) error {
	l.mu.Lock()
	if l.failure.Load() != nil {
		err := *l.failure.Load()
		l.mu.Unlock()
		return err
	}
	from := l.mu.recoveryPoint
	gen := l.truncations.current()
	if end := l.end.Load(); upTo > end {
		upTo = end
	}
	if upTo == l.end.Load() {
		l.mu.dirtyBytes = 0
	}
	l.mu.Unlock()
	if upTo <= from {
		return nil
	}
	segs := l.acquireRange(from, upTo)
	defer func() {
		for _, s := range segs {
			s.Release()
		}
	}()
	began := time.Now()
	if err := l.flushSegments(segs); err != nil {
		return l.fail(err)
	}
	l.countFlush(began)
	l.mu.Lock()
	advanced := false
	// A segment sealed by a roll after it was synced here as the active
	// one has trims (of its indexes, of a preallocated .log) and index
	// syncs that no sync covers yet: the point must not pass it, or a
	// power loss would leave a trusted segment with a zero tail. The roll kicked the next flush,
	// which syncs it as a sealed segment and moves the point on.
	for _, s := range segs {
		if s.SyncPending() {
			upTo = min(upTo, s.BaseOffset())
		}
	}
	// For the same reason the point stays inside the active segment while
	// its .log is preallocated (until a roll trims and syncs it, or Close
	// does): otherwise a flush could take it to the active segment's end,
	// the roll that follows make that segment a sealed one below the point,
	// and a power loss before its trim is synced leave it trusted at its
	// preallocated size. Below its end, recovery scans it and ends it at
	// its zero tail. (Under SyncAlways a roll syncs the trim before the new
	// segment exists, so the point may reach the end.)
	if l.opts.Preallocate && l.opts.Sync != SyncAlways {
		upTo = min(upTo, l.end.Load()-1)
	}
	// After a truncation the offsets below upTo may hold newer batches
	// than the ones just synced: then the point stays where it is.
	if upTo > l.mu.recoveryPoint && upTo <= l.end.Load() && l.truncations.current() == gen {
		l.mu.recoveryPoint = upTo
		advanced = true
	}
	l.mu.Unlock()
	if checkpoint && advanced {
		if err := l.checkpointRecoveryPoint(); err != nil {
			l.logger.Warn("seglog: writing the recovery point failed", "dir", l.dir, "err", err)
		}
	}
	return nil
}

// checkpointRecoveryPoint writes the current recovery point. ckptMu keeps
// two writers (the flusher and a truncation) from sharing the .tmp file or
// landing out of order; it is taken before mu, never after.
func (l *Log) checkpointRecoveryPoint() error {
	l.ckptMu.Lock()
	defer l.ckptMu.Unlock()
	l.mu.Lock()
	rp, closed := l.mu.recoveryPoint, l.mu.closed
	l.mu.Unlock()
	if closed {
		return nil
	}
	return l.writeOffsetCheckpoint(RecoveryPointFile, rp)
}

// flushSegments syncs segs. A sealed segment is flushed whole (its .log
// and its trimmed indexes, which recovery will trust once the recovery
// point passes them); the active one only has its .log synced, because
// recovery rebuilds the active segment's indexes anyway and because
// flushing an index mapping while the appender stores into it is a race.
// flushMu keeps TruncateTo from turning a sealed segment active again (and
// appending to it) in the middle of this.
func (l *Log) flushSegments(segs []*segment.Segment) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if err := l.syncDirIfPending(); err != nil {
		return err
	}
	for _, s := range segs {
		var err error
		if s.IsSealed() {
			l.sealedSyncs.Add(1)
			err = s.Flush()
			l.sealedSyncs.Add(-1)
		} else {
			err = s.File().Sync()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// syncDirIfPending syncs the directory if a roll left its new segment's
// entry unsynced (dirSyncPending): before any sync that could make that
// segment's data durable, which without it a power loss could lose.
func (l *Log) syncDirIfPending() error {
	if !l.dirSyncPending.Swap(false) {
		return nil
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		l.dirSyncPending.Store(true)
		return err
	}
	return nil
}

// acquireRange returns, with references taken, the segments holding any
// offset in [from, upTo).
func (l *Log) acquireRange(from, upTo int64) []*segment.Segment {
	l.segs.RLock()
	defer l.segs.RUnlock()
	var out []*segment.Segment
	first := l.floorSegment(from)
	startKey := int64(-1 << 63)
	if first != nil {
		startKey = first.BaseOffset()
	}
	l.segs.tree.AscendGreaterOrEqual(probe(startKey), func(it segItem) bool {
		if it.base >= upTo && len(out) > 0 {
			return false
		}
		if it.seg.Acquire() {
			out = append(out, it.seg)
		}
		return true
	})
	return out
}

// Sync makes every record appended so far durable, whatever the Sync mode.
func (l *Log) Sync() error {
	if l.ro != nil {
		return ErrReadOnly
	}
	l.mu.Lock()
	if l.mu.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if err := l.publishLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	l.mu.Unlock()
	if err := l.flushAll(l.end.Load(), false); err != nil {
		return err
	}
	// Lock order is mu before commit.mu, so read the point first.
	rp := l.RecoveryPoint()
	l.commit.mu.Lock()
	if rp > l.commit.durable {
		l.commit.durable = rp
	}
	l.commit.mu.Unlock()
	return nil
}
