package store

import (
	"container/list"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/compaction"
	"github.com/seglog/seglog/internal/embed"
	"github.com/seglog/seglog/layout"
)

// DefaultMaxOpenLogs is Options.MaxOpenLogs' default: at most this many
// partition Logs are open at once.
const DefaultMaxOpenLogs = 512

// mappedIndexesPerLog is the seglog.Options.MaxMappedIndexes of every
// partition: how many sealed segments' indexes, and separately .log files,
// one Log keeps mapped at once, on top of its active segment's. Small,
// because the store's budget multiplies it by MaxOpenLogs.
const mappedIndexesPerLog = 4

// openSegmentFilesPerLog is the seglog.Options.MaxOpenSegmentFiles of
// every partition: how many sealed segments' .log descriptors one Log
// keeps open once read (a consumer reading a partition from its start
// would otherwise hold one per segment until the Log closes). Small, for
// the same reason.
const openSegmentFilesPerLog = 4

// partition is one partition of a topic. Its Log is opened on first use
// and closed again by the store's LRU when it is idle (nobody acquired it)
// and more than Options.MaxOpenLogs are open, so that a store of many
// partitions holds a bounded number of descriptors and mappings.
type partition struct {
	s     *Store
	topic string
	id    int32
	cfg   TopicConfig

	// mu guards everything below. It is held while the Log opens and
	// closes, so nobody sees it half done.
	mu sync.Mutex
	l  *seglog.Log
	// pins counts AcquireLog holders (and the store's own uses); a
	// pinned partition is never closed by the LRU.
	pins int
	// forever is set by Store.Log: that Log stays open until Close.
	forever bool
	// gone is the error acquire returns once the topic is deleted or the
	// store closed.
	gone error
	// unclean is set when closing the Log failed: the next open must not
	// trust the store's clean-shutdown state for it.
	unclean bool
	// opened is set once the Log was opened (so recovered, if the store
	// opened after a crash) in this session.
	opened bool
	// info is the Log's state when the LRU last closed it; nothing writes
	// a closed partition, so it answers without reopening (a read-only
	// store's Refresh drops it: a writer may have appended).
	info    partInfo
	hasInfo bool
	// deleteDelay is the cleaner's file.delete.delay.ms, applied at open.
	deleteDelay time.Duration
	haveDelay   bool
	// floor is the cleaning floor (floor.go), noFloor for none; floorSet
	// says a Writer set it in this session.
	floor    int64
	floorSet bool

	elem *list.Element // in the LRU while open and not forever; lru.mu
}

type partInfo struct {
	start, end, size int64
	segments         int
}

func (p *partition) dir() string {
	return filepath.Join(p.s.dir, layout.PartitionDirName(p.topic, p.id))
}

// lru is the store's budget of open Logs: the open ones that may be
// closed, least recently used at the back.
type lru struct {
	mu     sync.Mutex
	list   list.List
	open   int // every open Log, forever ones included
	budget int
}

// acquire returns the partition's Log, opening it if needed, and pins it
// until release.
func (p *partition) acquire() (*seglog.Log, error) {
	p.mu.Lock()
	if p.gone != nil {
		p.mu.Unlock()
		return nil, p.gone
	}
	opened := false
	if p.l == nil {
		l, err := p.s.openLog(p)
		if err != nil {
			p.mu.Unlock()
			return nil, err
		}
		p.l, p.hasInfo, opened = l, false, true
	}
	p.pins++
	l, forever := p.l, p.forever
	p.mu.Unlock()
	p.s.touch(p, opened, forever)
	if opened {
		p.s.evict()
	}
	return l, nil
}

// release unpins; a Log left open past the budget while it was in use
// may now be closed.
func (p *partition) release() {
	p.mu.Lock()
	p.pins--
	p.mu.Unlock()
	s := p.s
	s.lru.mu.Lock()
	over := s.lru.open > s.lru.budget
	s.lru.mu.Unlock()
	if over {
		s.evict()
	}
}

// with runs f on the partition's Log, pinned.
func (p *partition) with(f func(*seglog.Log) error) error {
	l, err := p.acquire()
	if err != nil {
		return err
	}
	defer p.release()
	return f(l)
}

// peek returns the partition's offsets and size without opening it when
// it is closed and its state is known.
func (p *partition) peek() (partInfo, error) {
	p.mu.Lock()
	if p.gone == nil {
		if l := p.l; l != nil {
			defer p.mu.Unlock()
			return partInfo{l.StartOffset(), l.EndOffset(), l.Size(), l.NumSegments()}, nil
		}
		if p.hasInfo {
			defer p.mu.Unlock()
			return p.info, nil
		}
		if info, ok := p.s.infoFromDisk(p); ok {
			p.info, p.hasInfo = info, true
			p.mu.Unlock()
			return info, nil
		}
		if !p.s.readOnly && p.blankLocked() {
			// Created, never written: empty, and opening it would
			// make its first segment (cleanerPart.Segments).
			p.mu.Unlock()
			return partInfo{segments: 1}, nil
		}
	}
	p.mu.Unlock()
	var info partInfo
	err := p.with(func(l *seglog.Log) error {
		info = partInfo{l.StartOffset(), l.EndOffset(), l.Size(), l.NumSegments()}
		return nil
	})
	return info, err
}

// blank reports whether p was never opened in this session, its
// directory holds no segment and nothing for recovery to resolve, and its
// checkpoints put nothing above offset 0: a partition created and not
// yet written, whose Log would open empty at 0.
func (p *partition) blank() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blankLocked()
}

// blankLocked is blank with p.mu held.
func (p *partition) blankLocked() bool {
	if p.l != nil || p.opened || p.gone != nil {
		return false
	}
	names, err := p.s.fs.List(p.dir())
	if err != nil || !layout.PlanLeftovers(names).Empty() {
		return false
	}
	return p.emptyIn(names)
}

// emptyIn reports whether names, p's directory's listing, hold no
// segment and p's checkpoints put nothing above offset 0.
func (p *partition) emptyIn(names []string) bool {
	if _, bases := layout.SegmentFiles(names); len(bases) > 0 {
		return false
	}
	k := tp{p.topic, p.id}
	for _, f := range []string{layout.RecoveryPointFile, layout.LogStartOffsetFile} {
		if off, ok := p.s.ckpt.get(f, k); ok && off != 0 {
			return false
		}
	}
	return true
}

// infoFromDisk describes a partition not opened since a clean shutdown
// without opening it (p.mu held, p closed): its end is its recovery point
// (a clean Close records the end there), its start the log-start line or
// its first segment, its size that of its .log files. Opening a Log costs
// a few syscalls and syncs; describing 10,000 partitions this way costs a
// directory listing each. ok is false when the directory is not in that
// state (a crash, leftovers to resolve, no line for its segments): the
// caller opens the Log.
func (s *Store) infoFromDisk(p *partition) (partInfo, bool) {
	if s.readOnly || !s.ckpt.clean || p.unclean {
		return partInfo{}, false
	}
	k := tp{p.topic, p.id}
	rp, haveRP := s.ckpt.get(layout.RecoveryPointFile, k)
	logStart, _ := s.ckpt.get(layout.LogStartOffsetFile, k)
	names, err := s.fs.List(p.dir())
	if err != nil || !layout.PlanLeftovers(names).Empty() {
		return partInfo{}, false
	}
	_, bases := layout.SegmentFiles(names)
	if len(bases) == 0 {
		if haveRP {
			return partInfo{}, false
		}
		return partInfo{segments: 1}, true // created, never opened: an empty Log has its active segment
	}
	if !haveRP || rp < bases[len(bases)-1] {
		return partInfo{}, false
	}
	info := partInfo{start: max(logStart, bases[0]), end: rp, segments: len(bases)}
	for _, b := range bases {
		fi, err := s.fs.Stat(filepath.Join(p.dir(), layout.FileName(b, layout.LogSuffix)))
		if err != nil {
			return partInfo{}, false
		}
		info.size += fi.Size()
	}
	info.start = min(info.start, info.end)
	return info, true
}

// closeLocked closes the Log (p.mu held), keeping its state for peek.
func (p *partition) closeLocked() error {
	l := p.l
	if l == nil {
		return nil
	}
	p.info = partInfo{l.StartOffset(), l.EndOffset(), l.Size(), l.NumSegments()}
	p.hasInfo = true
	p.l = nil
	err := l.Close()
	if err != nil {
		p.unclean = true
	}
	p.s.lru.mu.Lock()
	p.s.lru.open--
	if p.elem != nil {
		p.s.lru.list.Remove(p.elem)
		p.elem = nil
	}
	p.s.lru.mu.Unlock()
	return err
}

// recovered reports whether the partition may be trusted by the next
// Open after a clean shutdown: its last close did not fail and, if this
// session started after a crash, it was opened (so recovered) or holds no
// segment.
func (p *partition) recovered() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.unclean {
		return false
	}
	if p.opened || p.s.ckpt.clean {
		return true
	}
	names, err := p.s.fs.List(p.dir())
	if err != nil {
		return false
	}
	return p.emptyIn(names)
}

// shut closes the partition for good (topic deleted, store closed):
// acquire fails with why from now on.
func (p *partition) shut(why error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gone = why
	return p.closeLocked()
}

// touch records a use: an opened Log joins the budget, and the LRU order
// moves it to the front (a forever Log leaves the LRU: it cannot close).
func (s *Store) touch(p *partition, opened, forever bool) {
	s.lru.mu.Lock()
	defer s.lru.mu.Unlock()
	if opened {
		s.lru.open++
	}
	switch {
	case forever:
		if p.elem != nil {
			s.lru.list.Remove(p.elem)
			p.elem = nil
		}
	case p.elem == nil:
		p.elem = s.lru.list.PushFront(p)
	default:
		s.lru.list.MoveToFront(p.elem)
	}
}

// evict closes the least recently used idle Logs while more than the
// budget are open. Partitions in use are skipped: the budget is exceeded
// until they are released.
func (s *Store) evict() {
	for {
		s.lru.mu.Lock()
		if s.lru.open <= s.lru.budget {
			s.lru.mu.Unlock()
			return
		}
		var victim *partition
		for e := s.lru.list.Back(); e != nil && victim == nil; e = e.Prev() {
			c := e.Value.(*partition)
			if !c.mu.TryLock() {
				continue // busy: in use
			}
			if c.pins == 0 && !c.forever && c.l != nil {
				victim = c // returned locked
			} else {
				c.mu.Unlock()
			}
		}
		s.lru.mu.Unlock()
		if victim == nil {
			return
		}
		if err := victim.closeLocked(); err != nil {
			s.logger.Warn("store: closing an idle partition failed; it recovers when reopened", "dir", victim.dir(), "err", err)
		}
		victim.mu.Unlock()
	}
}

// openLog opens p's Log (p.mu held).
func (s *Store) openLog(p *partition) (*seglog.Log, error) {
	if s.readOnly {
		return s.openReadOnlyPartition(p.topic, p.id, p.cfg, readOnlyIndexBytes)
	}
	if err := s.beginWrites(); err != nil {
		return nil, fmt.Errorf("store: partition %s-%d: %w", p.topic, p.id, err)
	}
	o := p.cfg.logOptions()
	o.FS = s.fs
	o.Logger = s.logger
	o.Clock = s.opts.Clock
	o.Stats = &s.stats
	o = embed.WithHooks(o, embed.Hooks{
		Checkpoints: partitionCheckpoints{d: s.ckpt, k: tp{p.topic, p.id}, unclean: p.unclean},
		FlushPool:   s.pool,
		LockHeld:    true, // the store holds the log.dir's
	}).(seglog.Options)
	o.MaxMappedIndexes = mappedIndexesPerLog
	o.MaxOpenSegmentFiles = openSegmentFilesPerLog
	if f := s.opts.OnQuarantine; f != nil {
		o.OnQuarantine = func(q seglog.Quarantine) { f(p.topic, p.id, q) }
	}
	l, err := seglog.Open(p.dir(), o)
	if err != nil {
		return nil, fmt.Errorf("store: partition %s-%d: %w", p.topic, p.id, err)
	}
	if p.haveDelay {
		l.SetFileDeleteDelay(p.deleteDelay)
	}
	p.unclean = false
	p.opened = true
	return l, nil
}

// newPartitions makes the partitions [from, n) of a topic and registers
// them with the cleaner. None is opened.
func (s *Store) newPartitions(t *topic, from, n int) error {
	for i := from; i < n; i++ {
		p := &partition{s: s, topic: t.name, id: int32(i), cfg: t.cfg, floor: noFloor}
		if !s.readOnly {
			if err := s.clean.Add(cleanerPart{p}, t.cfg.policy()); err != nil {
				return err
			}
		}
		t.parts = append(t.parts, p)
	}
	return nil
}

// shutPartitions takes partitions out of the cleaner and closes them.
func (s *Store) shutPartitions(parts []*partition, why error) error {
	var first error
	for _, p := range parts {
		if !s.readOnly {
			s.clean.Remove(cleanerPart{p})
		}
		if err := p.shut(why); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// cleanerPart is a partition as the store's one cleaner sees it. The
// cleaner visits every partition on each pass; what it asks of an idle
// closed one (offsets, the file deletion delay, the checkpoint) is
// answered without reopening it, so a pass that finds nothing to do keeps
// it closed. Reading segments, rolling, deleting and compacting open it.
type cleanerPart struct{ p *partition }

var _ cleaner.Compactable = cleanerPart{}

func (c cleanerPart) Dir() string { return c.p.dir() }

// StartOffset of a partition never opened is its log-start checkpoint, a
// lower bound, so that cleaner.Add opens nothing; a pass asks EndOffset
// and the segments next, which open it.
func (c cleanerPart) StartOffset() int64 {
	p := c.p
	p.mu.Lock()
	if p.l == nil && !p.hasInfo {
		p.mu.Unlock()
		start, _ := p.s.ckpt.get(layout.LogStartOffsetFile, tp{p.topic, p.id})
		return start
	}
	p.mu.Unlock()
	return c.peek().start
}

func (c cleanerPart) EndOffset() int64 { return c.peek().end }

// peek answers offsets for the cleaner; an error (the partition cannot
// be opened) shows as an empty log, which the pass then fails to read.
func (c cleanerPart) peek() partInfo {
	info, _ := c.p.peek()
	return info
}

// Segments of a partition never opened whose directory holds no segment
// yet are none: it has nothing to clean, and opening it would create its
// first segment with that segment's index files preallocated
// (segment.index.bytes each, 10 MiB at the defaults). The first pass, 30 s
// after start, once did so for every idle partition: a cluster node's 50
// offsets partitions, never used, took 1 GB of disk on every node.
func (c cleanerPart) Segments() []cleaner.Segment {
	if c.p.blank() {
		return nil
	}
	var out []cleaner.Segment
	c.p.with(func(l *seglog.Log) error {
		out = cleaner.SegmentsOf(l.View())
		return nil
	})
	return out
}

// Roll rolls the active segment for retention to delete it whole, unless
// the cleaning floor (floor.go) holds the active segment anyway: a roll
// then serves nothing, and a replicated partition's segments are its raft
// log's to start.
func (c cleanerPart) Roll() error {
	return c.p.with(func(l *seglog.Log) error {
		if limit := c.p.cleaningLimit(l); limit >= 0 && limit < l.EndOffset() {
			return nil
		}
		return l.Roll()
	})
}

// DeleteBefore deletes below offset, held below the cleaning floor
// (floor.go): checked here, where the segments go, so that a floor set
// during a pass still holds.
func (c cleanerPart) DeleteBefore(offset int64) (n int, err error) {
	err = c.p.with(func(l *seglog.Log) error {
		offset = belowLimit(l.View(), offset, c.p.cleaningLimit(l))
		n, err = l.DeleteBefore(offset)
		return err
	})
	return n, err
}

func (c cleanerPart) SetFileDeleteDelay(d time.Duration) {
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deleteDelay, p.haveDelay = d, true
	if p.l != nil {
		p.l.SetFileDeleteDelay(d)
	}
}

// ExpireDeleted of a closed partition has nothing to do: Close ended
// every delay.
func (c cleanerPart) ExpireDeleted() int {
	p := c.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.l == nil {
		return 0
	}
	return p.l.ExpireDeleted()
}

func (c cleanerPart) CleanerCheckpoint() (int64, bool, error) {
	off, ok := c.p.s.ckpt.get(layout.CleanerOffsetFile, tp{c.p.topic, c.p.id})
	return off, ok, nil
}

func (c cleanerPart) SetCleanerCheckpoint(offset int64) error {
	return c.p.s.ckpt.set(layout.CleanerOffsetFile, tp{c.p.topic, c.p.id}, offset)
}

// Compact runs a round in segments of the topic's segment.bytes (the
// cleaner's own setting is one for all logs), over the sealed segments
// wholly below both upper and the cleaning floor (floor.go).
func (c cleanerPart) Compact(m *compaction.OffsetMap, firstDirty, upper int64, o compaction.Options) (res compaction.Result, err error) {
	o.SegmentBytes = c.p.config().SegmentBytes
	err = c.p.with(func(l *seglog.Log) error {
		if limit := c.p.cleaningLimit(l); limit >= 0 && (upper < 0 || upper > limit) {
			if upper < 0 {
				upper = l.EndOffset()
			}
			upper = belowLimit(l.View(), upper, limit)
		}
		res, err = compaction.Clean(l, m, firstDirty, upper, o)
		return err
	})
	return res, err
}
