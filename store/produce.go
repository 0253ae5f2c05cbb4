package store

import (
	"fmt"

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
	// counts[p] records go to partition p; order lists the partitions
	// in the order first touched.
	counts := make([]int, len(t.parts))
	var order []int32
	sticky := int32(-1)
	for i := range recs {
		var p int32
		if recs[i].Key != nil {
			p = PartitionForKey(recs[i].Key, len(t.parts))
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
	now := s.opts.Now().UnixMilli()
	batch := make([]record.Record, 0, len(recs))
	for _, p := range order {
		batch = batch[:0]
		for i := range recs {
			if out[i].Partition == p {
				r := recs[i] // a copy: the caller's records are not stamped
				if r.Timestamp == 0 {
					r.Timestamp = now
				}
				batch = append(batch, r)
			}
		}
		info, err := t.parts[p].Append(batch...)
		if err != nil {
			return out, fmt.Errorf("store: produce to %s-%d: %w", name, p, err)
		}
		j := int64(0)
		for i := range recs {
			if out[i].Partition == p {
				out[i].Offset = info.FirstOffset + j
				j++
			}
		}
	}
	return out, nil
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
	l, err := s.logLocked(name, partition)
	if err != nil {
		return seglog.AppendInfo{}, err
	}
	now := s.opts.Now().UnixMilli()
	batch := make([]record.Record, len(recs))
	for i, r := range recs {
		if r.Timestamp == 0 {
			r.Timestamp = now // on a copy: the caller's records are not stamped
		}
		batch[i] = r
	}
	return l.Append(batch...)
}
