package server

import (
	"crypto/rand"
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// batchesToRetain is Kafka's NUM_BATCHES_TO_RETAIN: a retried batch among
// a producer's last five on a partition is recognised as a duplicate.
const batchesToRetain = 5

// Producer state expires as in Kafka: an entry not written for
// producerExpiry (producer.id.expiration.ms) is dropped, checked at most
// every expiryCheck (producer.id.expiration.check.interval.ms) when the
// partition is produced to. An expired producer is unknown again, and its
// next batch is accepted at any sequence.
const (
	producerExpiry = 24 * time.Hour
	expiryCheck    = 10 * time.Minute
)

// producers is the idempotent producers' state, per partition: for each
// producer id its epoch and its last batches. It is a cache of what the
// batch headers in the log say (producer id, epoch, base sequence), built
// by reading them once (load) and then kept by every append: on one node
// the produce path records what it appends; in a cluster the replication
// reports every batch it stores and every truncation (Cluster.SetObserver,
// observe.go), on followers as on the leader, so a new leader has the
// state of its log and a retried batch is found wherever it was first
// written. A producer not found is unknown, and an unknown producer's batch
// is accepted at any sequence, as Kafka does since KIP-360 for producers
// whose state expired.
type producers struct {
	fs    vfs.FS // the store's: snapshots are in its partition directories
	mu    sync.Mutex
	parts map[tp]*partProducers
}

type tp struct {
	topic     string
	partition int32
}

// loadState is where a partition's producer state is: not read from the
// log yet, being read, or read and kept up to date since.
type loadState uint8

const (
	unloaded loadState = iota
	loading
	loaded
)

// partProducers serializes the check-and-append of idempotent batches on
// one partition: the check must see every batch appended before it.
type partProducers struct {
	mu sync.Mutex
	fs vfs.FS
	// view is the log the state describes: a topic deleted and created
	// again under the name is another log, with a state of its own.
	view  seglog.View
	state loadState
	// While loading: ready is closed when the load ends; cut says a
	// truncation came meanwhile (the load read what it removed and is
	// thrown away); observed holds the batches reported meanwhile, which
	// the load may have read too.
	ready     chan struct{}
	cut       bool
	observed  []observedBatch
	m         map[int64]*producerEntry
	lastSweep time.Time
	// segments is the log's segment count at the last look: when it grows
	// after an append the log rolled, and a snapshot is written then, as
	// Kafka writes one at every roll.
	segments int

	// In a cluster (clusterproduce.go), locks serialize each producer's
	// check-propose-answer, so that a retry of a batch still being
	// replicated waits for it instead of being proposed a second time.
	locks map[int64]*producerLock
}

// observedBatch is what the state keeps of a reported batch.
type observedBatch struct {
	pid               int64
	epoch             int16
	firstSeq, lastSeq int32
	firstOff, lastOff int64
	maxTS             int64
}

// producerLock is one producer's lock on a partition, dropped from
// partProducers.locks when nobody holds or waits for it.
type producerLock struct {
	mu   sync.Mutex
	refs int
}

type producerEntry struct {
	epoch   int16
	batches []batchMeta // oldest first, at most batchesToRetain
	// lastTS is the last batch's max timestamp, which a snapshot keeps
	// as Kafka's does: the batch's, so replicas write the same bytes (the
	// wall clock of each node's append made them differ; found by a
	// walk comparing replicas).
	lastTS   int64
	lastSeen time.Time
}

type batchMeta struct {
	firstSeq, lastSeq int32
	firstOff, lastOff int64
}

func newProducers(fsys vfs.FS) *producers {
	return &producers{fs: fsys, parts: make(map[tp]*partProducers)}
}

// partition returns the producer state of a partition whose log is l: the
// one held, or a new one (unloaded) if none is held or the one held
// describes another log under the name.
func (p *producers) partition(topic string, partition int32, l seglog.View) *partProducers {
	p.mu.Lock()
	defer p.mu.Unlock()
	pp := p.parts[tp{topic, partition}]
	if pp == nil || pp.view != l {
		pp = &partProducers{fs: p.fs, view: l, m: make(map[int64]*producerEntry), locks: make(map[int64]*producerLock)}
		// The name may alias a request's frame; the map outlives it.
		p.parts[tp{strings.Clone(topic), partition}] = pp
	}
	return pp
}

// forgetTopic drops a deleted topic's state: a topic created again under
// the name starts empty.
func (p *producers) forgetTopic(topic string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.parts {
		if k.topic == topic {
			delete(p.parts, k)
		}
	}
}

// verdict is what the producer state says about a batch.
type verdict struct {
	code      int16 // a Kafka error code, 0 to append
	duplicate bool  // already stored at dupOffset: answer it, append nothing
	dupOffset int64
}

// check judges a batch of producer pid against its state (pp.mu held).
func (pp *partProducers) check(b record.Batch) verdict {
	e := pp.m[b.ProducerID()]
	if e == nil {
		return verdict{}
	}
	epoch, first, last := b.ProducerEpoch(), b.BaseSequence(), b.LastSequence()
	switch {
	case epoch < e.epoch:
		return verdict{code: kerr.InvalidProducerEpoch.Code}
	case epoch > e.epoch:
		// A new epoch starts its sequences over.
		if first != 0 {
			return verdict{code: kerr.OutOfOrderSequenceNumber.Code}
		}
		return verdict{}
	}
	for _, m := range e.batches {
		if m.firstSeq == first && m.lastSeq == last {
			return verdict{duplicate: true, dupOffset: m.firstOff}
		}
	}
	if len(e.batches) > 0 && first != nextSeq(e.batches[len(e.batches)-1].lastSeq) {
		return verdict{code: kerr.OutOfOrderSequenceNumber.Code}
	}
	return verdict{}
}

func nextSeq(s int32) int32 {
	if s == math.MaxInt32 {
		return 0
	}
	return s + 1
}

// record notes a stored batch (pp.mu held).
func (pp *partProducers) record(pid int64, epoch int16, first, last int32, firstOff, lastOff, maxTS int64) {
	e := pp.m[pid]
	if e == nil {
		e = &producerEntry{epoch: epoch}
		pp.m[pid] = e
	}
	if epoch != e.epoch {
		e.epoch, e.batches = epoch, e.batches[:0]
	}
	if len(e.batches) == batchesToRetain {
		e.batches = append(e.batches[:0], e.batches[1:]...)
	}
	e.batches = append(e.batches, batchMeta{firstSeq: first, lastSeq: last, firstOff: firstOff, lastOff: lastOff})
	e.lastTS = maxTS
	now := time.Now()
	e.lastSeen = now
	if now.Sub(pp.lastSweep) > expiryCheck {
		pp.lastSweep = now
		for id, e := range pp.m {
			if now.Sub(e.lastSeen) > producerExpiry {
				delete(pp.m, id)
			}
		}
	}
}

// lockProducer takes producer pid's lock on the partition and returns
// the function that releases it.
func (pp *partProducers) lockProducer(pid int64) (unlock func()) {
	pp.mu.Lock()
	l := pp.locks[pid]
	if l == nil {
		l = &producerLock{}
		pp.locks[pid] = l
	}
	l.refs++
	pp.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		pp.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(pp.locks, pid)
		}
		pp.mu.Unlock()
	}
}

// lockLoaded locks pp.mu with the state loaded: it reads the log if
// nobody has, or waits for the load under way. The log is read without
// pp.mu held, so that the batches a cluster's replication reports
// meanwhile are not held up behind the read (observe.go).
func (pp *partProducers) lockLoaded() {
	pp.mu.Lock()
	for pp.state != loaded {
		if pp.state == loading {
			ready := pp.ready
			pp.mu.Unlock()
			<-ready
			pp.mu.Lock()
			continue
		}
		pp.beginLoad()
		pp.mu.Unlock()
		pp.runLoad()
		pp.mu.Lock()
	}
}

// beginLoad marks a load under way (pp.mu held); runLoad then does it.
func (pp *partProducers) beginLoad() {
	pp.state, pp.ready, pp.cut, pp.observed = loading, make(chan struct{}), false, nil
}

// runLoad reads the state from the log (without pp.mu) and installs it,
// with the batches reported meanwhile past what the read covered; a
// truncation reported meanwhile leaves the state unloaded, for the next
// look to read again.
func (pp *partProducers) runLoad() {
	m, end := readProducers(pp.fs, pp.view)
	pp.mu.Lock()
	defer pp.mu.Unlock()
	defer close(pp.ready)
	observed := pp.observed
	pp.observed = nil
	if pp.cut {
		pp.state = unloaded
		return
	}
	pp.m, pp.state, pp.segments = m, loaded, pp.view.NumSegments()
	for _, o := range observed {
		if o.firstOff >= end {
			pp.record(o.pid, o.epoch, o.firstSeq, o.lastSeq, o.firstOff, o.lastOff, o.maxTS)
		}
	}
}

// readProducers rebuilds a state from the batch headers of l's last two
// segments, which give each producer found there its last five batches,
// and from the partition's newest producer snapshot for the producers not
// found there (a snapshot holds each producer's last batch only, as
// Kafka's does). A snapshot older than those two segments is not used:
// producers whose batches lie between it and the scanned segments would be
// left with a stale last sequence. Without a snapshot the whole log is
// read. It returns the state and the offset it covers to (the batches
// below end). Reading stops quietly at anything it cannot read: the state
// is then partial, and a producer not found is treated as new.
func readProducers(fsys vfs.FS, l seglog.View) (map[int64]*producerEntry, int64) {
	pp := &partProducers{fs: fsys, m: make(map[int64]*producerEntry)}
	segs := l.Segments()
	from := l.StartOffset()
	if len(segs) >= 2 {
		from = max(from, segs[len(segs)-2].BaseOffset)
	}
	if snap, _, ok := loadSnapshot(fsys, l, from); ok {
		defer func() {
			now := time.Now()
			for id, e := range snap {
				if _, found := pp.m[id]; !found {
					e.lastSeen = now
					pp.m[id] = e
				}
			}
		}()
	} else {
		// No snapshot holds the producers before those segments: the
		// whole log is read. From the last two segments alone, a
		// producer whose batches lie further back would be taken for a
		// new one, which may write any sequence, and a late retry of its
		// batch stored twice (TestNemesisCluster found such batches
		// 30,000 offsets apart after a node's SIGSTOP).
		from = l.StartOffset()
	}
	end := l.EndOffset()
	var hdr [record.HeaderSize]byte
	for from < end {
		sl, err := l.Read(from, math.MaxInt32, seglog.ReadOptions{})
		if err != nil {
			return pp.m, end
		}
		if sl.Len() == 0 {
			sl.Close()
			return pp.m, end
		}
		for pos := int64(0); pos+int64(len(hdr)) <= sl.Len(); {
			if _, err := sl.ReadAt(hdr[:], pos); err != nil {
				sl.Close()
				return pp.m, end
			}
			b := record.Batch(hdr[:])
			if b.BatchLength() <= 0 || b.BaseOffset() >= end {
				// Past end: appended after the read began, and
				// reported to the state as it was.
				break
			}
			if b.ProducerID() >= 0 && !b.IsControl() && b.BaseOffset() >= from {
				pp.record(b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), b.LastSequence(), b.BaseOffset(), b.LastOffset(), b.MaxTimestamp())
			}
			pos += int64(b.Size())
		}
		next := sl.LastOffset() + 1
		sl.Close()
		if next <= from {
			break
		}
		from = next
	}
	return pp.m, end
}

// newProducerID draws a producer id: random, positive, like kfake's, so no
// counter has to survive restarts; two draws colliding among 2^63 is not a
// concern.
func newProducerID() int64 {
	var b [8]byte
	rand.Read(b[:])
	id := int64(binary.BigEndian.Uint64(b[:]) >> 1)
	if id == 0 {
		id = 1
	}
	return id
}
