package record

import (
	"errors"
	"fmt"
	"iter"
)

// Iterator decodes the records of one batch at a time. The zero value is
// ready to use; Reset points it at a batch. It keeps its decompression
// buffer and header slice between batches, so iterating warm allocates
// only for header keys (which are strings).
//
// A Record returned by Record aliases the batch (uncompressed) or the
// iterator's buffer (compressed): its Key, Value, Headers and header
// values are valid until the next call to Next or Reset. Copy what must be
// kept.
//
// Every record's framing is checked: the declared length must equal the
// bytes its fields take, lengths must be -1 (null) or fit in what is left,
// varints may not be overlong, offset deltas must rise strictly and leave
// room below the header's last offset delta for the records still to come
// (so a count or delta that does not fit fails before a record is handed
// out with another's offset), exactly NumRecords records must be
// present and no byte may follow the last one.
type Iterator struct {
	// MaxDecompressed caps the decompressed size of a record section; zero
	// means DefaultMaxDecompressed.
	MaxDecompressed int

	data       []byte // the record section, decoded
	base       int    // position of data[0] in the batch, for errors; -1 if decompressed
	pos        int
	read       int32
	count      int32
	baseOffset int64
	// lastDelta is the previous record's offset delta (-1 before the
	// first), maxDelta the header's last offset delta: deltas must rise
	// strictly and stay within it, or records would get offsets that are
	// not theirs.
	lastDelta, maxDelta int32
	baseTS              int64
	appendTS            int64
	logAppend           bool
	err                 error
	rec                 Record
	dbuf                []byte
	headers             []Header
}

// Reset prepares the iterator for b. It checks the header's structure
// (size, length field, magic, codec, count) but not the CRC: run
// Batch.Validate first on bytes not already validated. For a compressed
// batch Reset decompresses the record section, so it reports decompression
// errors; record errors come from Next.
func (it *Iterator) Reset(b Batch) error {
	it.data, it.err, it.read, it.pos, it.base = nil, nil, 0, 0, -1
	if err := checkStructure(b); err != nil {
		it.err = err
		return err
	}
	it.count = b.NumRecords()
	it.baseOffset = b.BaseOffset()
	it.lastDelta, it.maxDelta = -1, b.LastOffsetDelta()
	it.baseTS = b.BaseTimestamp()
	it.appendTS = b.MaxTimestamp()
	it.logAppend = b.TimestampType() == LogAppendTime
	section := b[HeaderSize:]
	if b.Codec() == None || len(section) == 0 {
		it.data, it.base = section, HeaderSize
		return nil
	}
	limit := it.MaxDecompressed
	if limit <= 0 {
		limit = DefaultMaxDecompressed
	}
	out, err := decompress(it.dbuf, b.Codec(), section, limit)
	if cap(out) <= limit {
		it.dbuf = out[:0]
	}
	if err != nil {
		if !errors.Is(err, ErrDecompressLimit) {
			err = corruptWrap(HeaderSize, fmt.Errorf("%v records: %w", b.Codec(), err))
		}
		it.err = err
		return err
	}
	it.data, it.base = out, -1
	return nil
}

// checkStructure is Validate without the CRC.
func checkStructure(b Batch) error {
	if len(b) < PeekSize {
		return corruptWrap(len(b), fmt.Errorf("%d bytes: %w", len(b), ErrShortHeader))
	}
	if m := b.Magic(); m != CurrentMagic {
		return fmt.Errorf("%w %d at byte %d", ErrUnsupportedMagic, m, offMagic)
	}
	if len(b) < HeaderSize {
		return corrupt(len(b), "%d bytes, shorter than the %d-byte header", len(b), HeaderSize)
	}
	if n := b.BatchLength(); int64(n) != int64(len(b))-LogOverhead {
		return corrupt(offBatchLength, "length field %d, want %d for %d bytes", n, len(b)-LogOverhead, len(b))
	}
	if !b.Codec().Valid() {
		return corruptWrap(offAttributes+1, fmt.Errorf("%w: id %d", ErrUnknownCodec, b.Codec()))
	}
	if n := b.NumRecords(); n < 0 {
		return corrupt(offRecordsCount, "negative record count %d", n)
	}
	return nil
}

// Next decodes the next record. It returns false at the end of the batch
// or on an error; Err tells which.
func (it *Iterator) Next() bool {
	if it.err != nil {
		return false
	}
	if it.read == it.count {
		if it.pos != len(it.data) {
			it.err = it.fail(it.pos, "%d bytes left after the %d records the header counts", len(it.data)-it.pos, it.count)
		}
		return false
	}
	if it.pos >= len(it.data) {
		it.err = it.fail(it.pos, "header counts %d records, only %d present", it.count, it.read)
		return false
	}
	if err := it.decode(); err != nil {
		it.err = err
		return false
	}
	it.read++
	return true
}

// Record returns the record Next decoded.
func (it *Iterator) Record() Record { return it.rec }

// Offset is the current record's offset, Record().Offset without copying
// the record.
func (it *Iterator) Offset() int64 { return it.rec.Offset }

// Pos is the byte position in the batch where the next record starts:
// HeaderSize after Reset, the end of the record just decoded after Next,
// the batch's size after the last. It is -1 for a compressed batch, whose
// records lie in the decompressed section, and after Reset failed. A
// reader that keeps positions (an index of records within a batch) takes
// them from here rather than walking the framing again.
func (it *Iterator) Pos() int {
	if it.base < 0 {
		return -1
	}
	return it.base + it.pos
}

// Err returns the error that stopped iteration, nil at a clean end.
func (it *Iterator) Err() error { return it.err }

// fail builds the corruption error for position p of the record section.
func (it *Iterator) fail(p int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if it.base < 0 {
		return corrupt(HeaderSize, "record %d at decompressed byte %d: %s", it.read, p, msg)
	}
	return corrupt(it.base+p, "record %d: %s", it.read, msg)
}

func (it *Iterator) varintFail(p int, e varintErr, field string) error {
	if e == varintShort {
		return it.fail(p, "%s varint runs past the record", field)
	}
	return it.fail(p, "%s varint is overlong", field)
}

// decode parses one record at it.pos. Each varint is first tried with
// the inlined one- or two-byte decoder, the sizes almost every field takes;
// anything else goes through the checked decoder, which also reports errors.
func (it *Iterator) decode() error {
	d := it.data
	start := it.pos
	length, n := varintFast(d, start)
	p := start + n
	if n == 0 {
		var e varintErr
		if length, p, e = varint32(d, start); e != varintOK {
			return it.varintFail(start, e, "length")
		}
	}
	if length < 6 || int(length) > len(d)-p {
		return it.fail(start, "record length %d out of range (%d bytes left)", length, len(d)-p)
	}
	end := p + int(length)
	body := d[:end] // bounds every field read to this record
	p++             // attributes: unused, any value accepted as Java does
	var tsDelta int64
	if v, n := varintFast(body, p); n > 0 {
		tsDelta, p = int64(v), p+n
	} else {
		q, e := 0, varintOK
		if tsDelta, q, e = varint64(body, p); e != varintOK {
			return it.varintFail(p, e, "timestamp delta")
		}
		p = q
	}
	offDelta, n := varintFast(body, p)
	if n > 0 {
		p += n
	} else {
		q, e := 0, varintOK
		if offDelta, q, e = varint32(body, p); e != varintOK {
			return it.varintFail(p, e, "offset delta")
		}
		p = q
	}
	// The records still to come need deltas of their own above this one,
	// so the bound tightens by one per remaining record: a batch whose
	// count or deltas do not fit fails at its first record, before any
	// record with an offset not its own is handed out.
	if offDelta <= it.lastDelta || offDelta > it.maxDelta-(it.count-1-it.read) {
		return it.fail(start, "offset delta %d after %d does not fit %d records within the batch's last delta %d",
			offDelta, it.lastDelta, it.count, it.maxDelta)
	}
	it.lastDelta = offDelta
	var key, value []byte
	var err error
	if key, p, err = it.bytesField(body, p, "key"); err != nil {
		return err
	}
	if value, p, err = it.bytesField(body, p, "value"); err != nil {
		return err
	}
	nh, n := varintFast(body, p)
	q := p + n
	if n == 0 {
		e := varintOK
		if nh, q, e = varint32(body, p); e != varintOK {
			return it.varintFail(p, e, "header count")
		}
	}
	if nh < 0 || int(nh) > (end-q)/2 {
		return it.fail(p, "header count %d out of range", nh)
	}
	p = q
	it.headers = it.headers[:0]
	for range nh {
		hk, q, e := varint32(body, p)
		if e != varintOK {
			return it.varintFail(p, e, "header key length")
		}
		if hk < 0 || int(hk) > end-q {
			return it.fail(p, "header key length %d out of range", hk)
		}
		k := string(body[q : q+int(hk)])
		var v []byte
		if v, p, err = it.bytesField(body, q+int(hk), "header value"); err != nil {
			return err
		}
		it.headers = append(it.headers, Header{Key: k, Value: v})
	}
	if p != end {
		return it.fail(start, "record length %d, fields take %d bytes", length, p-(end-int(length)))
	}
	it.pos = end
	ts := it.baseTS + tsDelta
	if it.logAppend {
		ts = it.appendTS
	}
	it.rec = Record{Offset: it.baseOffset + int64(offDelta), Timestamp: ts, Key: key, Value: value}
	if nh > 0 {
		it.rec.Headers = it.headers
	}
	return nil
}

// bytesField reads a varint length (-1 = null) and that many bytes.
func (it *Iterator) bytesField(b []byte, p int, field string) ([]byte, int, error) {
	n, w := varintFast(b, p)
	q := p + w
	if w == 0 {
		e := varintOK
		if n, q, e = varint32(b, p); e != varintOK {
			return nil, q, it.varintFail(p, e, field+" length")
		}
	}
	if n == -1 {
		return nil, q, nil
	}
	if n < 0 || int(n) > len(b)-q {
		return nil, q, it.fail(p, "%s length %d out of range (%d bytes left)", field, n, len(b)-q)
	}
	return b[q : q+int(n) : q+int(n)], q + int(n), nil
}

// Records validates b (CRC included) and yields its records. An error is
// yielded once, with a zero Record, and ends the sequence. Records alias
// memory that is reused: they are valid only until the loop body returns.
// Each call uses a fresh Iterator; loops over many batches should keep one
// Iterator instead.
func (b Batch) Records() iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		if err := b.Validate(); err != nil {
			yield(Record{}, err)
			return
		}
		var it Iterator
		if err := it.Reset(b); err != nil {
			yield(Record{}, err)
			return
		}
		for it.Next() {
			if !yield(it.Record(), nil) {
				return
			}
		}
		if err := it.Err(); err != nil {
			yield(Record{}, err)
		}
	}
}

// All yields the records of the batch the iterator was Reset to, then its
// error if any, like Batch.Records but reusing the iterator's buffers.
func (it *Iterator) All() iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		for it.Next() {
			if !yield(it.Record(), nil) {
				return
			}
		}
		if err := it.Err(); err != nil {
			yield(Record{}, err)
		}
	}
}
