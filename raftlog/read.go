package raftlog

import (
	"errors"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// batchCache keeps the entries of the batch read last: raft's replication
// reads one index at a time through a batch of up to 64, and decoding it
// once serves them all. Writes that remove or replace offsets invalidate
// it; a read that raced with one stores nothing (gen moved).
type batchCache struct {
	mu      sync.Mutex
	gen     uint64
	base    int64
	entries []raft.Log
}

func (c *batchCache) invalidate() {
	c.mu.Lock()
	c.gen++
	c.entries = nil
	c.mu.Unlock()
}

// get copies the cached entry at offset into out.
func (c *batchCache) get(offset int64, out *raft.Log) (gen uint64, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := offset - c.base; c.entries != nil && i >= 0 && i < int64(len(c.entries)) {
		*out = c.entries[i]
		return c.gen, true
	}
	return c.gen, false
}

func (c *batchCache) put(gen uint64, base int64, entries []raft.Log) {
	c.mu.Lock()
	if c.gen == gen {
		c.base, c.entries = base, entries
	}
	c.mu.Unlock()
}

// GetLog fills out with the entry at index, or returns exactly
// raft.ErrLogNotFound (raft compares it with ==) when the log does not
// hold it: below the start, past the end, deleted or truncated.
func (s *Store) GetLog(index uint64, out *raft.Log) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	off := toOffset(index)
	if index == 0 || off < s.log.StartOffset() || off >= s.log.EndOffset() {
		return raft.ErrLogNotFound
	}
	gen, ok := s.cache.get(off, out)
	if ok {
		// The cache is invalidated by every write that removes offsets,
		// but a prefix delete may have passed off since the check above.
		if off < s.log.StartOffset() {
			return raft.ErrLogNotFound
		}
		return nil
	}
	b, err := s.readBatch(off)
	if err != nil {
		if errors.Is(err, seglog.ErrOffsetOutOfRange) || errors.Is(err, raft.ErrLogNotFound) || errors.Is(err, seglog.ErrTruncated) {
			return raft.ErrLogNotFound
		}
		return err
	}
	entries, err := decodeBatch(b)
	if err != nil {
		return err
	}
	i := off - b.BaseOffset()
	if i < 0 || i >= int64(len(entries)) || entries[i].Index != index {
		return raft.ErrLogNotFound
	}
	s.cache.put(gen, b.BaseOffset(), entries)
	*out = entries[i]
	if off < s.log.StartOffset() {
		return raft.ErrLogNotFound
	}
	return nil
}

// minRecordBytes is the smallest uncompressed record: a length, the
// attributes, two deltas, a null key and value and a header count, one
// byte each.
const minRecordBytes = 7

// decodeBatch validates a stored batch (CRC included, by Records) and
// decodes its records as entries. The record count in the header only sizes the slice
// as far as the batch's bytes could hold that many records: a damaged or
// hostile header whose CRC was made to match must not make it allocate by
// its count.
func decodeBatch(b record.Batch) ([]raft.Log, error) {
	n := 0
	if len(b) >= record.HeaderSize {
		n = max(min(int(b.NumRecords()), (len(b)-record.HeaderSize)/minRecordBytes), 0)
	}
	entries := make([]raft.Log, 0, n)
	for r, err := range b.Records() {
		if err != nil {
			return nil, err
		}
		var l raft.Log
		if err := decode(r, b.PartitionLeaderEpoch(), &l); err != nil {
			return nil, err
		}
		entries = append(entries, l)
	}
	return entries, nil
}
