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
// on a partition's first idempotent produce by reading the headers of the
// log's last two segments. A producer whose batches lie further back is
// unknown, and an unknown producer's batch is accepted at any sequence, as
// Kafka does since KIP-360 for producers whose state expired.
type producers struct {
	mu    sync.Mutex
	parts map[tp]*partProducers
}

type tp struct {
	topic     string
	partition int32
}

// partProducers serializes the check-and-append of idempotent batches on
// one partition: the check must see every batch appended before it.
type partProducers struct {
	mu        sync.Mutex
	loaded    bool
	m         map[int64]*producerEntry
	lastSweep time.Time
	// segments is the log's segment count at the last look: when it grows
	// after an append the log rolled, and a snapshot is written then, as
	// Kafka writes one at every roll.
	segments int

	// In a cluster (clusterproduce.go): epoch is the leader epoch the
	// state was loaded in, and locks serialize each producer's
	// check-propose-record, so that a retry of a batch still being
	// replicated waits for it instead of being proposed a second time.
	epoch int32
	locks map[int64]*producerLock
}

// producerLock is one producer's lock on a partition, dropped from
// partProducers.locks when nobody holds or waits for it.
type producerLock struct {
	mu   sync.Mutex
	refs int
}

type producerEntry struct {
	epoch    int16
	batches  []batchMeta // oldest first, at most batchesToRetain
	lastSeen time.Time
}

type batchMeta struct {
	firstSeq, lastSeq int32
	firstOff, lastOff int64
}

func newProducers() *producers { return &producers{parts: make(map[tp]*partProducers)} }

func (p *producers) partition(topic string, partition int32) *partProducers {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := tp{topic, partition}
	pp := p.parts[k]
	if pp == nil {
		pp = &partProducers{m: make(map[int64]*producerEntry), epoch: -1, locks: make(map[int64]*producerLock)}
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
func (pp *partProducers) record(pid int64, epoch int16, first, last int32, firstOff, lastOff int64) {
	e := pp.m[pid]
	if e == nil {
		e = &producerEntry{epoch: epoch}
		pp.m[pid] = e
	}
	if epoch != e.epoch {
		e.epoch, e.batches = epoch, e.batches[:0]
	}
	if n := len(e.batches); n > 0 && e.batches[n-1].firstOff == firstOff {
		// Already noted: a replicated write that settled after a reload
		// had read it from the log.
		return
	}
	if len(e.batches) == batchesToRetain {
		e.batches = append(e.batches[:0], e.batches[1:]...)
	}
	e.batches = append(e.batches, batchMeta{firstSeq: first, lastSeq: last, firstOff: firstOff, lastOff: lastOff})
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

// reset drops the state (pp.mu held): the next check reloads it from the
// log. A cluster resets when the leader epoch changes (a node that led,
// lost and regained leadership holds what other leaders wrote
// meanwhile) and when a replicated write ends in an error (it may still
// be in the log).
func (pp *partProducers) reset(epoch int32) {
	pp.loaded, pp.epoch = false, epoch
	clear(pp.m)
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

// load rebuilds the state (pp.mu held) from the batch headers of the log's
// last two segments, which give each producer found there its last five
// batches, and from the partition's newest producer snapshot for the
// producers not found there (a snapshot holds each producer's last batch
// only, as Kafka's does). A snapshot older than those two segments is not
// used: producers whose batches lie between it and the scanned segments
// would be left with a stale last sequence. Without a snapshot the whole
// log is read. Reading stops quietly at anything it cannot read: the
// state is then partial, and a producer not found is treated as new.
func (pp *partProducers) load(l seglog.View) {
	if pp.loaded {
		return
	}
	pp.loaded = true
	segs := l.Segments()
	pp.segments = len(segs)
	from := l.StartOffset()
	if len(segs) >= 2 {
		from = max(from, segs[len(segs)-2].BaseOffset)
	}
	if snap, _, ok := loadSnapshot(l, from); ok {
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
		// No snapshot holds the producers before those segments (a
		// cluster writes none: a new leader's log has only what raft
		// replicated): the whole log is read. From the last two segments
		// alone, a producer whose batches lie further back would be taken
		// for a new one, which may write any sequence, and a late retry
		// of its batch stored twice (TestNemesisCluster found such
		// batches 30,000 offsets apart after a node's SIGSTOP).
		from = l.StartOffset()
	}
	end := l.EndOffset()
	var hdr [record.HeaderSize]byte
	for from < end {
		sl, err := l.Read(from, math.MaxInt32, seglog.ReadOptions{})
		if err != nil {
			return
		}
		if sl.Len() == 0 {
			sl.Close()
			return
		}
		for pos := int64(0); pos+int64(len(hdr)) <= sl.Len(); {
			if _, err := sl.ReadAt(hdr[:], pos); err != nil {
				sl.Close()
				return
			}
			b := record.Batch(hdr[:])
			if b.BatchLength() <= 0 {
				break
			}
			if b.ProducerID() >= 0 && !b.IsControl() && b.BaseOffset() >= from {
				pp.record(b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), b.LastSequence(), b.BaseOffset(), b.LastOffset())
			}
			pos += int64(b.Size())
		}
		next := sl.LastOffset() + 1
		sl.Close()
		if next <= from {
			return
		}
		from = next
	}
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
