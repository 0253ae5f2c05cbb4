package raftlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// Positions of RecordBatch v2 header fields (Kafka's fixed layout) that a
// record read alone needs rewritten in its one-record stand-in header.
const (
	batchLengthAt     = 8
	lastOffsetDeltaAt = 23
	recordsCountAt    = 57
)

// tableBudget bounds the memory of the entry tables: a table costs
// tableOverhead bytes plus 4 per record, so 4 MiB holds the tables of
// about 10,800 batches of 64 entries (700 MiB of 1 KiB entries).
const (
	tableBudget   = 4 << 20
	tableOverhead = 160
)

// batchCache keeps what spares a GetLog from decoding a whole batch:
//
//   - the entries of the batch decoded last, for sequential reads: raft's
//     replication reads one index at a time through a batch of up to 64,
//     and decoding it once serves them all;
//   - entry tables, for random reads: the byte position of each record of
//     a batch read (and CRC-checked) before, so a later read of any of its
//     entries reads and decodes that record alone. Tables are kept within
//     tableBudget, evicted by a clock (second chance).
//
// Writes that remove or replace offsets call beginWrite and endWrite
// around the change (or invalidate, when nothing is readable meanwhile);
// both clear everything and move gen. A read uses a table or the decoded
// batch only when no such write is under way, stores only if gen did not
// move since it began, and trusts a record it read through a table only
// if gen did not move while it read it: a table never meets the bytes of
// another batch at the same offsets.
type batchCache struct {
	mu      sync.Mutex
	gen     atomic.Uint64
	writing int // writes under way that remove or replace offsets

	base    int64
	entries []raft.Log

	tables map[int64]*entryTable // by batch base offset
	ring   []*entryTable         // the clock's order
	hand   int
	bytes  int

	// last is the offset the previous GetLog asked for: a read of the
	// next one is taken as a sequential run, which decodes whole batches.
	last atomic.Int64
}

// entryTable locates the records of one stored batch.
type entryTable struct {
	base int64
	size int64 // the batch's bytes: a slice at base must have this length
	hdr  [record.HeaderSize]byte
	pos  []uint32 // record i (offset base+i) is at pos[i], up to pos[i+1]
	ref  bool
}

func (t *entryTable) cost() int { return tableOverhead + 4*len(t.pos) }

func (c *batchCache) clearLocked() {
	c.gen.Add(1)
	c.entries = nil
	clear(c.tables)
	clear(c.ring)
	c.ring, c.hand, c.bytes = c.ring[:0], 0, 0
}

// invalidate forgets everything: for a change made while the log holds
// no entry a read could reach, and for Close.
func (c *batchCache) invalidate() {
	c.mu.Lock()
	c.clearLocked()
	c.mu.Unlock()
}

// beginWrite and endWrite bracket a write that removes or replaces offsets.
func (c *batchCache) beginWrite() {
	c.mu.Lock()
	c.writing++
	c.clearLocked()
	c.mu.Unlock()
}

func (c *batchCache) endWrite() {
	c.mu.Lock()
	c.writing--
	c.clearLocked()
	c.mu.Unlock()
}

// get copies the cached entry at offset into out. usable is false while a
// write that removes offsets is under way.
func (c *batchCache) get(offset int64, out *raft.Log) (gen uint64, usable, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writing > 0 {
		return 0, false, false
	}
	if i := offset - c.base; c.entries != nil && i >= 0 && i < int64(len(c.entries)) {
		*out = c.entries[i]
		return c.gen.Load(), true, true
	}
	return c.gen.Load(), true, false
}

func (c *batchCache) put(gen uint64, base int64, entries []raft.Log) {
	c.mu.Lock()
	if c.writing == 0 && c.gen.Load() == gen {
		c.base, c.entries = base, entries
	}
	c.mu.Unlock()
}

// table returns the table of the batch at base, if it is size bytes.
func (c *batchCache) table(gen uint64, base, size int64) *entryTable {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writing > 0 || c.gen.Load() != gen {
		return nil
	}
	t := c.tables[base]
	if t == nil || t.size != size {
		return nil
	}
	t.ref = true
	return t
}

func (c *batchCache) putTable(gen uint64, t *entryTable) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.writing > 0 || c.gen.Load() != gen || c.tables[t.base] != nil || t.cost() > tableBudget {
		return
	}
	for c.bytes+t.cost() > tableBudget && len(c.ring) > 0 {
		c.hand %= len(c.ring)
		v := c.ring[c.hand]
		if v.ref {
			v.ref = false
			c.hand++
			continue
		}
		delete(c.tables, v.base)
		c.bytes -= v.cost()
		last := len(c.ring) - 1
		c.ring[c.hand], c.ring[last] = c.ring[last], nil
		c.ring = c.ring[:last]
	}
	if c.tables == nil {
		c.tables = make(map[int64]*entryTable)
	}
	c.tables[t.base] = t
	c.ring = append(c.ring, t)
	c.bytes += t.cost()
}

// recordBufs holds the buffers a record read through a table goes into:
// its stand-in header and its bytes.
var recordBufs = sync.Pool{New: func() any { return new([]byte) }}

// batchBufs holds the buffers GetLog reads whole batches into; buffers
// above maxPooledBatch are left to the GC rather than kept.
var batchBufs = sync.Pool{New: func() any { return new([]byte) }}

const maxPooledBatch = 1 << 20

// GetLog fills out with the entry at index, or returns exactly
// raft.ErrLogNotFound (raft compares it with ==) when the log does not
// hold it: below the start, past the end, deleted or truncated. Other
// errors are the read's (damage matching seglog.ErrCorrupt, ErrBadEntry,
// I/O). out.Data and out.Extensions may share their bytes with other
// GetLog calls for entries of the same batch (a cache of the last batch
// read): read them, do not modify them.
func (s *Store) GetLog(index uint64, out *raft.Log) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	off := toOffset(index)
	if index == 0 || off < s.log.StartOffset() || off >= s.log.EndOffset() {
		return raft.ErrLogNotFound
	}
	sequential := s.cache.last.Swap(off) == off-1
	gen, usable, ok := s.cache.get(off, out)
	if ok {
		// The cache is invalidated by every write that removes offsets,
		// but a prefix delete may have passed off since the check above.
		if off < s.log.StartOffset() {
			return raft.ErrLogNotFound
		}
		return nil
	}
	if usable && !sequential {
		done, err := s.getByTable(gen, off, out)
		if done {
			return notFound(err)
		}
	}
	// The batch's bytes are needed only until its entries are decoded
	// (decode copies them): a pooled buffer spares a GC of a batch-sized
	// allocation per read.
	bp := batchBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledBatch {
			batchBufs.Put(bp)
		}
	}()
	b, err := s.readBatchInto(off, bp)
	if err != nil {
		return notFound(err)
	}
	i := off - b.BaseOffset()
	if usable {
		if t := buildTable(b); t != nil {
			s.cache.putTable(gen, t)
		}
	}
	if !usable || !sequential {
		// A random read decodes its own record only.
		if err := decodeAt(b, off, out); err != nil {
			return notFound(err)
		}
	} else {
		entries, err := decodeBatch(b)
		if err != nil {
			return err
		}
		if i < 0 || i >= int64(len(entries)) || entries[i].Index != index {
			return raft.ErrLogNotFound
		}
		s.cache.put(gen, b.BaseOffset(), entries)
		*out = entries[i]
	}
	if off < s.log.StartOffset() {
		return raft.ErrLogNotFound
	}
	return nil
}

// notFound turns the errors of an offset the log no longer holds into
// raft.ErrLogNotFound itself.
func notFound(err error) error {
	if errors.Is(err, seglog.ErrOffsetOutOfRange) || errors.Is(err, raft.ErrLogNotFound) || errors.Is(err, seglog.ErrTruncated) {
		return raft.ErrLogNotFound
	}
	return err
}

// getByTable reads the entry at off through its batch's table: only the
// record's bytes are read and decoded. done is false when there is no
// table (or a write moved gen while it read): the caller reads the batch.
func (s *Store) getByTable(gen uint64, off int64, out *raft.Log) (done bool, err error) {
	sl, err := s.log.Read(off, 1, seglog.ReadOptions{})
	if err != nil {
		return true, err
	}
	defer sl.Close()
	t := s.cache.table(gen, sl.FirstOffset(), sl.Len())
	if t == nil {
		return false, nil
	}
	i := off - t.base
	if i < 0 || i >= int64(len(t.pos)-1) {
		return true, raft.ErrLogNotFound
	}
	from, to := int64(t.pos[i]), int64(t.pos[i+1])
	bp := recordBufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooledBatch {
			recordBufs.Put(bp)
		}
	}()
	n := record.HeaderSize + int(to-from)
	if cap(*bp) < n {
		*bp = make([]byte, n)
	}
	buf := (*bp)[:n]
	if _, err := sl.ReadAt(buf[record.HeaderSize:], from); err != nil {
		return true, err
	}
	if s.cache.gen.Load() != gen {
		// A write that removes or replaces offsets began after the
		// table was taken: read the batch instead. Only a truncation
		// changes the bytes under a slice, and ReadAt reports that
		// itself (ErrSliceTruncated), so this is an early way out
		// rather than the guard: the check after decoding is what keeps
		// an entry decoded from older bytes from being returned.
		return false, nil
	}
	if err := decodeOne(t.standIn(buf, i), off, out); err != nil {
		return true, fmt.Errorf("%s: record at byte %d (offset %d): %w", sl.File(), sl.Position()+from, off, err)
	}
	if s.cache.gen.Load() != gen {
		return false, nil
	}
	if off < s.log.StartOffset() {
		return true, raft.ErrLogNotFound
	}
	return true, nil
}

// standIn makes buf, record i's bytes after room for a header, a batch of
// that record alone: its batch's header made to count one record ending at
// its own offset delta, so it decodes with the checks of record.Iterator
// (lengths within the record, varints, no trailing bytes).
func (t *entryTable) standIn(buf []byte, i int64) record.Batch {
	copy(buf, t.hdr[:])
	binary.BigEndian.PutUint32(buf[batchLengthAt:], uint32(len(buf)-record.LogOverhead))
	binary.BigEndian.PutUint32(buf[lastOffsetDeltaAt:], uint32(i))
	binary.BigEndian.PutUint32(buf[recordsCountAt:], 1)
	return record.Batch(buf)
}

// decodeOne decodes the one record of b (not CRC-checked: its header is a
// stand-in) into out, checking that it is the record at off.
func decodeOne(b record.Batch, off int64, out *raft.Log) error {
	var it record.Iterator
	if err := it.Reset(b); err != nil {
		return err
	}
	if !it.Next() {
		return it.Err()
	}
	r := it.Record()
	if r.Offset != off {
		return fmt.Errorf("%w: record holds offset %d", seglog.ErrCorrupt, r.Offset)
	}
	if err := decode(r, b.PartitionLeaderEpoch(), out); err != nil {
		return err
	}
	if it.Next() || it.Err() != nil {
		return fmt.Errorf("%w: bytes after the record: %v", seglog.ErrCorrupt, it.Err())
	}
	return nil
}

// decodeAt decodes the entry at off of a batch readBatch validated (CRC
// included, so not again), and no other.
func decodeAt(b record.Batch, off int64, out *raft.Log) error {
	var it record.Iterator
	if err := it.Reset(b); err != nil {
		return err
	}
	for r, err := range it.All() {
		if err != nil {
			return err
		}
		if r.Offset == off {
			return decode(r, b.PartitionLeaderEpoch(), out)
		}
		if r.Offset > off {
			break
		}
	}
	return raft.ErrLogNotFound
}

// buildTable records where each record of a validated batch starts, or
// returns nil for a batch a table cannot serve: compressed (raftlog never
// compresses), with a record record.Iterator refuses, or with offsets
// that are not dense (record i at base+i). The positions come from the
// iterator, the one parser of the record framing.
func buildTable(b record.Batch) *entryTable {
	if len(b) < record.HeaderSize || b.Codec() != record.None || len(b) > 1<<32-1 {
		return nil
	}
	var it record.Iterator
	if it.Reset(b) != nil {
		return nil
	}
	// The count only sizes the table as far as the bytes could hold that
	// many records: a header whose CRC was made to match must not make it
	// allocate by its count.
	n := max(min(int(b.NumRecords()), (len(b)-record.HeaderSize)/minRecordBytes), 0)
	t := &entryTable{base: b.BaseOffset(), size: int64(len(b)), pos: make([]uint32, 0, n+1)}
	copy(t.hdr[:], b)
	for p := it.Pos(); it.Next(); p = it.Pos() {
		if it.Offset() != t.base+int64(len(t.pos)) {
			return nil
		}
		t.pos = append(t.pos, uint32(p))
	}
	if it.Err() != nil {
		return nil
	}
	t.pos = append(t.pos, uint32(it.Pos()))
	return t
}

// readBatchInto returns the stored batch holding offset, CRC-checked, in
// *buf when it has room (growing it otherwise) or in a new buffer when buf
// is nil.
func (s *Store) readBatchInto(offset int64, buf *[]byte) (record.Batch, error) {
	sl, err := s.log.Read(offset, 1, seglog.ReadOptions{})
	if err != nil {
		return nil, err
	}
	defer sl.Close()
	if sl.Len() < record.HeaderSize {
		return nil, fmt.Errorf("%w: no batch at offset %d", raft.ErrLogNotFound, offset)
	}
	var data []byte
	switch {
	case buf == nil:
		data = make([]byte, sl.Len())
	case int64(cap(*buf)) < sl.Len():
		*buf = make([]byte, sl.Len())
		data = *buf
	default:
		data = (*buf)[:sl.Len()]
	}
	if _, err := sl.ReadAt(data, 0); err != nil {
		return nil, err
	}
	b := record.Batch(data)
	if b.Size() != len(data) {
		return nil, fmt.Errorf("%w: %s: batch at offset %d is %d bytes, slice %d", seglog.ErrCorrupt, sl.File(), offset, b.Size(), len(data))
	}
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("%s at byte %d: %w", sl.File(), sl.Position(), err)
	}
	return b, nil
}

// minRecordBytes is the smallest uncompressed record: a length, the
// attributes, two deltas, a null key and value and a header count, one
// byte each.
const minRecordBytes = 7

// decodeBatch decodes the records of a stored batch readBatch validated
// (CRC included, so not again) as entries. The record count in the header
// only sizes the slice as far as the batch's bytes could hold that many
// records: a damaged or hostile header whose CRC was made to match must
// not make it allocate by its count.
func decodeBatch(b record.Batch) ([]raft.Log, error) {
	n := 0
	if len(b) >= record.HeaderSize {
		n = max(min(int(b.NumRecords()), (len(b)-record.HeaderSize)/minRecordBytes), 0)
	}
	entries := make([]raft.Log, 0, n)
	var it record.Iterator
	if err := it.Reset(b); err != nil {
		return nil, err
	}
	for r, err := range it.All() {
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
