package store

import (
	"fmt"
	"sync"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// Produced says where one record went.
type Produced struct {
	Partition int32
	Offset    int64
}

// Produce appends records to a topic: a keyed record goes to Kafka's
// partition for its key (PartitionForKey), so one key's records stay in
// order in one partition; a call's keyless records all go to one sticky
// partition. Records are batched per partition: one Append, one batch,
// per partition touched, in the order given. A record with no timestamp
// is stamped with the store's clock. The result has one entry per record,
// in order. When a partition's append fails, the records before it in
// other partitions may have been stored; the error names the partition.
func (s *Store) Produce(name string, recs ...record.Record) ([]Produced, error) {
	if s.readOnly {
		return nil, s.errReadOnly("produce")
	}
	if name == OffsetsTopic {
		return nil, fmt.Errorf("%w: %s", ErrInternalTopic, name)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	t, ok := s.topics[name]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, name)
	}
	out := make([]Produced, len(recs))
	// Per partition (indexed by partition, from a pool and left zeroed):
	// how many records go there, where its batch starts in sorted, how
	// many are placed so far, and the batch's first offset. order lists
	// the partitions in the order first touched.
	n := len(t.parts)
	sc := getScratch(4 * n)
	defer putScratch(sc, n)
	counts, first, placed, base := sc.v[:n], sc.v[n:2*n], sc.v[2*n:3*n], sc.v[3*n:4*n]
	var order []int32
	sticky := int32(-1)
	for i := range recs {
		var p int32
		if recs[i].Key != nil {
			p = PartitionForKey(recs[i].Key, n)
		} else {
			if sticky < 0 {
				sticky = s.sticky.next(t)
			}
			p = sticky
		}
		if counts[p] == 0 {
			order = append(order, p)
		}
		counts[p]++
		out[i].Partition = p
	}
	sc.order = order
	now := s.opts.Clock.Now().UnixMilli()
	// One pass sorts the records into their partitions' batches, each in
	// call order, one batch after another in the order first touched.
	var at int64
	for _, p := range order {
		first[p] = at
		at += counts[p]
	}
	sorted, where := sc.records(len(recs)) // where[i]: record i's place in its batch
	for i := range recs {
		p := out[i].Partition
		r := recs[i] // a copy: the caller's records are not stamped
		if r.Timestamp == 0 {
			r.Timestamp = now
		}
		where[i] = placed[p]
		sorted[first[p]+placed[p]] = r
		placed[p]++
	}
	for _, p := range order {
		batch := sorted[first[p] : first[p]+counts[p]]
		var info seglog.AppendInfo
		err := t.parts[p].with(func(l *seglog.Log) (err error) {
			info, err = l.Append(batch...)
			return err
		})
		if err != nil {
			return out, fmt.Errorf("store: produce to %s-%d: %w", name, p, err)
		}
		base[p] = info.FirstOffset
	}
	for i := range recs {
		out[i].Offset = base[out[i].Partition] + where[i]
	}
	return out, nil
}

// scratch is Produce's per-partition bookkeeping and its per-record
// buffers, pooled: a topic of many partitions would otherwise allocate and
// clear the bookkeeping on every call, and the records' copies were most
// of what a call of 1 KiB records allocated (the collector's work showed
// in its profile).
type scratch struct {
	v     []int64
	order []int32 // the entries to clear when it goes back
	// sorted holds the call's records batch by batch, where each one's
	// place in its batch; sorted is cleared when it goes back, so that
	// the pool keeps no caller's keys or values alive.
	sorted []record.Record
	where  []int64
}

// records returns sorted and where of length n, reused when large enough.
func (sc *scratch) records(n int) ([]record.Record, []int64) {
	if cap(sc.sorted) < n {
		sc.sorted, sc.where = make([]record.Record, n), make([]int64, n)
	}
	sc.sorted, sc.where = sc.sorted[:n], sc.where[:n]
	return sc.sorted, sc.where
}

// maxPooledRecords bounds the record buffers a pooled scratch keeps: a
// rare huge call should not pin its buffers for good.
const maxPooledRecords = 1 << 16

var scratchPool sync.Pool

func getScratch(n int) *scratch {
	if sc, ok := scratchPool.Get().(*scratch); ok && cap(sc.v) >= n {
		sc.v = sc.v[:n]
		return sc
	}
	return &scratch{v: make([]int64, n)}
}

func putScratch(sc *scratch, parts int) {
	for k := range 4 {
		for _, p := range sc.order {
			sc.v[k*parts+int(p)] = 0
		}
	}
	sc.order = nil
	clear(sc.sorted)
	if cap(sc.sorted) > maxPooledRecords {
		sc.sorted, sc.where = nil, nil
	}
	scratchPool.Put(sc)
}

// ProduceTo appends records to one partition, as a producer with its own
// partitioner would.
func (s *Store) ProduceTo(name string, partition int32, recs ...record.Record) (seglog.AppendInfo, error) {
	if s.readOnly {
		return seglog.AppendInfo{}, s.errReadOnly("produce")
	}
	if name == OffsetsTopic {
		return seglog.AppendInfo{}, fmt.Errorf("%w: %s", ErrInternalTopic, name)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	part, err := s.partLocked(name, partition)
	if err != nil {
		return seglog.AppendInfo{}, err
	}
	now := s.opts.Clock.Now().UnixMilli()
	batch := make([]record.Record, len(recs))
	for i, r := range recs {
		if r.Timestamp == 0 {
			r.Timestamp = now // on a copy: the caller's records are not stamped
		}
		batch[i] = r
	}
	var info seglog.AppendInfo
	err = part.with(func(l *seglog.Log) (err error) {
		info, err = l.Append(batch...)
		return err
	})
	return info, err
}
