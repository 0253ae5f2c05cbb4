package record

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Builder encodes records into one RecordBatch v2. Create it with
// NewBuilder, set the batch-level fields, Add records, then Build. Reset
// starts the next batch; the builder keeps its buffers (and its settings),
// so once the buffers have grown to the batch size, adding records
// allocates nothing.
//
// Setters that affect timestamps (SetBaseTimestamp, SetDeleteHorizon) must
// be called before the first record is added, because record timestamps
// are encoded as deltas from the base timestamp.
type Builder struct {
	codec         Codec
	attrs         byte
	baseOffset    int64
	leaderEpoch   int32
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	appendTime    int64

	baseTS       int64
	baseTSSet    bool
	maxTS        int64
	lastDelta    int32
	minLastDelta int32
	count        int32

	// out holds the header followed by the record section. Uncompressed
	// records are encoded straight into it; compressed ones go to raw and
	// are compressed into out by Build.
	out []byte
	raw []byte
}

// NewBuilder returns a builder for batches compressed with codec. Producer
// id, epoch and base sequence start at -1, the leader epoch at -1, the
// base offset at 0, the timestamp type at CreateTime.
func NewBuilder(codec Codec) *Builder {
	b := &Builder{codec: codec, producerID: -1, producerEpoch: -1, baseSequence: -1, leaderEpoch: -1}
	b.Reset()
	return b
}

// Reset discards the records added so far, keeping the settings and the
// buffers. A Batch returned by an earlier Build is overwritten by the next
// batch built.
func (b *Builder) Reset() {
	b.out = append(b.out[:0], make([]byte, HeaderSize)...)
	b.raw = b.raw[:0]
	b.count, b.lastDelta, b.maxTS = 0, -1, -1
	b.baseTSSet = b.attrs&attrDeleteHorizon != 0
	if !b.baseTSSet {
		b.baseTS = -1
	}
}

// Codec is the builder's codec.
func (b *Builder) Codec() Codec { return b.codec }

// SetCodec changes the codec and, because records already added were
// encoded for the old one, Resets the builder.
func (b *Builder) SetCodec(c Codec) {
	b.codec = c
	b.Reset()
}

// SetBaseOffset sets the offset record offsets are relative to.
func (b *Builder) SetBaseOffset(off int64) { b.baseOffset = off }

// SetPartitionLeaderEpoch sets the leader epoch field.
func (b *Builder) SetPartitionLeaderEpoch(epoch int32) { b.leaderEpoch = epoch }

// SetProducer sets the idempotent producer's id, epoch and the sequence
// of the first record (-1, -1, -1 for none).
func (b *Builder) SetProducer(id int64, epoch int16, baseSequence int32) {
	b.producerID, b.producerEpoch, b.baseSequence = id, epoch, baseSequence
}

// SetTransactional marks the batch as part of a transaction.
func (b *Builder) SetTransactional(on bool) { b.setAttr(attrTransactional, on) }

// SetControl marks the batch as holding control records.
func (b *Builder) SetControl(on bool) { b.setAttr(attrControl, on) }

// SetLogAppendTime switches the batch to LogAppendTime with the given
// append time as its max timestamp; a negative ts switches back to
// CreateTime.
func (b *Builder) SetLogAppendTime(ts int64) {
	b.setAttr(attrLogAppendTime, ts >= 0)
	b.appendTime = ts
}

// SetBaseTimestamp fixes the base timestamp of the current batch instead
// of taking the first record's; AddRecord deltas are relative to it. Reset
// clears it (unlike the other settings).
func (b *Builder) SetBaseTimestamp(ts int64) { b.baseTS, b.baseTSSet = ts, true }

// SetDeleteHorizon sets the compaction delete horizon (KIP-534): attribute
// bit 6, and ts stored as the base timestamp. A negative ts clears it.
func (b *Builder) SetDeleteHorizon(ts int64) {
	b.setAttr(attrDeleteHorizon, ts >= 0)
	if ts >= 0 {
		b.SetBaseTimestamp(ts)
	}
}

// SetLastOffsetDelta makes the batch's lastOffsetDelta at least d, for
// rewriting a compacted batch whose last records were removed but whose
// last offset must survive. It stays in force until set to 0.
func (b *Builder) SetLastOffsetDelta(d int32) { b.minLastDelta = d }

func (b *Builder) setAttr(bit byte, on bool) {
	if on {
		b.attrs |= bit
	} else {
		b.attrs &^= bit
	}
}

// NumRecords is the number of records added since the last Reset.
func (b *Builder) NumRecords() int { return int(b.count) }

// UncompressedSize is the size the batch would have uncompressed: the
// header plus the encoded records.
func (b *Builder) UncompressedSize() int {
	if b.codec == None {
		return len(b.out)
	}
	return HeaderSize + len(b.raw)
}

// Add appends r at its absolute Offset and Timestamp; the batch stores
// them as deltas from the base offset (SetBaseOffset, default 0) and the
// base timestamp. Offsets must increase within a batch. Errors are AddAt's.
func (b *Builder) Add(r Record) error {
	// Small enough to be inlined, so r is copied once, into the caller's
	// frame, and read in place from there on.
	return b.AddAt(r.Offset, r.Timestamp, &r)
}

// AddRecord appends a record given by its deltas from the base offset and
// base timestamp. A nil key or value is encoded as null.
func (b *Builder) AddRecord(offsetDelta int32, timestampDelta int64, key, value []byte, headers []Header) error {
	if offsetDelta <= b.lastDelta {
		return fmt.Errorf("%w: offset delta %d does not follow %d", ErrOffsetOrder, offsetDelta, b.lastDelta)
	}
	if !b.baseTSSet {
		b.baseTS, b.baseTSSet = 0, true
	}
	// AddAt subtracts the bases again, which gives back the deltas exactly
	// even where the sums overflow. One encoder serves both entry points,
	// and Add, the hot one, makes a single call.
	return b.AddAt(b.baseOffset+int64(offsetDelta), b.baseTS+timestampDelta,
		&Record{Key: key, Value: value, Headers: headers})
}

// AddAt appends a record with the given absolute offset and timestamp (as
// for Add), and the key, value and headers of *r; r.Offset and r.Timestamp
// are ignored. r must not be nil, is only read, and is not retained. An
// offset that does not follow the previous record's, or lies below the base
// offset or more than 2^31-1 past it, matches ErrOffsetOrder; a record too
// large to encode, or one past 2^31-1 records, matches ErrTooLarge.
// A refused record adds nothing.
//
// It is Add for a caller that assigns offsets or default timestamps
// itself: passing &recs[i] spares the modified copy of the Record that
// Add would need. Copying a struct that was itself just written stalls
// store-to-load forwarding, which costs about as much as encoding a
// small record.
func (b *Builder) AddAt(offset, timestamp int64, r *Record) error {
	d := offset - b.baseOffset
	if d < 0 || d > math.MaxInt32 {
		return fmt.Errorf("%w: offset %d outside the batch (base %d)", ErrOffsetOrder, offset, b.baseOffset)
	}
	if !b.baseTSSet {
		b.baseTS, b.baseTSSet = timestamp, true
	}
	offsetDelta, timestampDelta := int32(d), timestamp-b.baseTS
	if offsetDelta <= b.lastDelta {
		return fmt.Errorf("%w: offset delta %d does not follow %d", ErrOffsetOrder, offsetDelta, b.lastDelta)
	}
	if b.count == math.MaxInt32 {
		return fmt.Errorf("record: more than 2^31-1 records: %w", ErrTooLarge)
	}
	if len(r.Headers) != 0 {
		return b.appendRecord(offsetDelta, timestampDelta, r)
	}
	// Records without headers, most of them, are encoded here rather than
	// by appendRecord: nothing below calls a function but the copies of
	// the key and value, and everything else is done before those, so
	// nothing has to be saved on the stack across a call. The 2 are the
	// attributes and the header count.
	body := 2 + varintLen(timestampDelta) + varintLen(int64(offsetDelta)) +
		bytesLen(r.Key) + bytesLen(r.Value)
	if body > math.MaxInt32 {
		return fmt.Errorf("record: record of %d bytes too large: %w", body, ErrTooLarge)
	}
	dst, i := reserve(b.records(), varintLen(int64(body))+body)
	b.added(offsetDelta, timestampDelta)
	dst[len(dst)-1] = 0 // no headers
	i = putUvarintAt(dst, i, zigzag(int64(body)))
	dst[i] = 0 // attributes
	i = putUvarintAt(dst, i+1, zigzag(timestampDelta))
	i = putUvarintAt(dst, i, zigzag(int64(offsetDelta)))
	// This is putBytesAt written out: as a call it would cost more than
	// all the rest. r's fields are loaded again rather than held, which
	// would take stores to the stack.
	if r.Key == nil {
		dst[i] = 1 // zig-zag -1
		i++
	} else {
		i = putUvarintAt(dst, i, zigzag(int64(len(r.Key))))
		i += copy(dst[i:], r.Key)
	}
	if r.Value == nil {
		dst[i] = 1
	} else {
		i = putUvarintAt(dst, i, zigzag(int64(len(r.Value))))
		copy(dst[i:], r.Value)
	}
	return nil
}

// appendRecord encodes r's key, value and headers, once AddAt has
// checked the deltas.
func (b *Builder) appendRecord(offsetDelta int32, timestampDelta int64, r *Record) error {
	body := 1 + varintLen(timestampDelta) + varintLen(int64(offsetDelta)) +
		bytesLen(r.Key) + bytesLen(r.Value) + headersLen(r.Headers)
	if body > math.MaxInt32 {
		return fmt.Errorf("record: record of %d bytes too large: %w", body, ErrTooLarge)
	}
	dst, i := reserve(b.records(), varintLen(int64(body))+body)
	b.added(offsetDelta, timestampDelta)
	i = putUvarintAt(dst, i, zigzag(int64(body)))
	dst[i] = 0 // attributes
	i = putUvarintAt(dst, i+1, zigzag(timestampDelta))
	i = putUvarintAt(dst, i, zigzag(int64(offsetDelta)))
	i = putBytesAt(dst, i, r.Key)
	i = putBytesAt(dst, i, r.Value)
	putHeadersAt(dst, i, r.Headers)
	return nil
}

// records is the buffer records are encoded into: out after the header
// if they are stored uncompressed, raw if they are to be compressed.
func (b *Builder) records() *[]byte {
	if b.codec != None {
		return &b.raw
	}
	return &b.out
}

// reserve lengthens *buf by size bytes, growing it if need be, and
// returns it with the index of the first new byte. Records are sized up
// front so that the buffer is grown at most once per record and the
// fields stored by index, rather than appended with a capacity check
// each.
func reserve(buf *[]byte, size int) ([]byte, int) {
	n := len(*buf)
	if n+size > cap(*buf) {
		*buf = grow(*buf, size)
	}
	// Reslicing in place stores only the length: no write barrier.
	*buf = (*buf)[:n+size]
	return *buf, n
}

// added accounts for a record added with the given deltas.
func (b *Builder) added(offsetDelta int32, timestampDelta int64) {
	b.lastDelta = offsetDelta
	b.count++
	if ts := b.baseTS + timestampDelta; ts > b.maxTS {
		b.maxTS = ts
	}
}

// bytesLen is the encoded size of v as a length-prefixed field.
func bytesLen(v []byte) int {
	if v == nil {
		return 1
	}
	return varintLen(int64(len(v))) + len(v)
}

// putBytesAt stores v as a length-prefixed field at dst[i:], which must
// have room for it, and returns the index after it.
func putBytesAt(dst []byte, i int, v []byte) int {
	if v == nil {
		dst[i] = 1 // zig-zag -1
		return i + 1
	}
	i = putUvarintAt(dst, i, zigzag(int64(len(v))))
	return i + copy(dst[i:], v)
}

// headersLen is the encoded size of the header count and headers.
func headersLen(headers []Header) int {
	n := varintLen(int64(len(headers)))
	for _, h := range headers {
		n += varintLen(int64(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	return n
}

// putHeadersAt stores the header count and headers at dst[i:], which
// must have room for them.
func putHeadersAt(dst []byte, i int, headers []Header) {
	i = putUvarintAt(dst, i, zigzag(int64(len(headers))))
	for _, h := range headers {
		i = putUvarintAt(dst, i, zigzag(int64(len(h.Key))))
		i += copy(dst[i:], h.Key)
		i = putBytesAt(dst, i, h.Value)
	}
}

// Build finishes the batch: compresses the records if needed, fills in the
// header and the CRC. The returned Batch aliases the builder's buffer and
// is valid until the next Reset or Build. An empty batch has no record
// bytes, whatever the codec, and base and max timestamps of -1 (unless
// set otherwise).
func (b *Builder) Build() (Batch, error) {
	if b.codec != None {
		b.out = b.out[:HeaderSize]
		if b.count > 0 {
			var err error
			if b.out, err = compress(b.out, b.codec, b.raw); err != nil {
				return nil, fmt.Errorf("record: %v compression: %w", b.codec, err)
			}
		}
	}
	if len(b.out)-LogOverhead > math.MaxInt32 {
		return nil, fmt.Errorf("record: batch of %d bytes: %w", len(b.out), ErrTooLarge)
	}
	h := b.out[:HeaderSize]
	be := binary.BigEndian
	be.PutUint64(h[offBaseOffset:], uint64(b.baseOffset))
	be.PutUint32(h[offBatchLength:], uint32(len(b.out)-LogOverhead))
	be.PutUint32(h[offLeaderEpoch:], uint32(b.leaderEpoch))
	h[offMagic] = CurrentMagic
	h[offAttributes] = 0
	h[offAttributes+1] = b.attrs | byte(b.codec)&attrCodecMask
	be.PutUint32(h[offLastOffsetDelta:], uint32(max(b.lastDelta, b.minLastDelta, 0)))
	baseTS := b.baseTS
	if !b.baseTSSet {
		baseTS = -1
	}
	be.PutUint64(h[offBaseTimestamp:], uint64(baseTS))
	maxTS := b.maxTS
	if b.attrs&attrLogAppendTime != 0 {
		maxTS = b.appendTime
	}
	be.PutUint64(h[offMaxTimestamp:], uint64(maxTS))
	be.PutUint64(h[offProducerID:], uint64(b.producerID))
	be.PutUint16(h[offProducerEpoch:], uint16(b.producerEpoch))
	be.PutUint32(h[offBaseSequence:], uint32(b.baseSequence))
	be.PutUint32(h[offRecordsCount:], uint32(b.count))
	batch := Batch(b.out)
	be.PutUint32(h[offCRC:], batch.ComputeCRC())
	return batch, nil
}
