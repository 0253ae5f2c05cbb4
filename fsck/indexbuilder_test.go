package fsck

import "encoding/binary"

// indexBuilder computes a segment's .index and .timeindex bytes from its
// batches exactly as Kafka 4.x (and segment.Recover, which repair uses)
// builds them, to write test directories fast: when more
// than interval bytes were added since the last entry, the batch's last
// offset is indexed with its start position and the time index is offered
// the running maximum timestamp with the last offset of the batch that
// first reached it; at the end the maximum is offered once more.
type indexBuilder struct {
	base     int64
	interval int64
	since    int64
	maxTS    int64
	maxTSOff int64
	lastTS   int64 // timestamp of the last time-index entry, -1 if none
	off, tim []byte
}

func newIndexBuilder(base int64, interval int) *indexBuilder {
	switch {
	case interval == 0:
		interval = DefaultIndexIntervalBytes
	case interval < 0:
		interval = 0
	}
	return &indexBuilder{base: base, interval: int64(interval), maxTS: -1, maxTSOff: base, lastTS: -1}
}

// add accounts for the batch at pos with the given last offset, max
// timestamp (-1 if none) and size.
func (b *indexBuilder) add(pos, last, maxTS, size int64) {
	if maxTS > b.maxTS {
		b.maxTS, b.maxTSOff = maxTS, last
	}
	if b.since > b.interval {
		b.off = binary.BigEndian.AppendUint32(b.off, uint32(last-b.base))
		b.off = binary.BigEndian.AppendUint32(b.off, uint32(pos))
		b.offerTime()
		b.since = 0
	}
	b.since += size
}

// offerTime appends the running maximum if it is above the last entry.
func (b *indexBuilder) offerTime() {
	if b.maxTS > b.lastTS {
		b.tim = binary.BigEndian.AppendUint64(b.tim, uint64(b.maxTS))
		b.tim = binary.BigEndian.AppendUint32(b.tim, uint32(b.maxTSOff-b.base))
		b.lastTS = b.maxTS
	}
}

// finish appends the final time-index entry and returns both files' bytes.
func (b *indexBuilder) finish() (offsetIndex, timeIndex []byte) {
	b.offerTime()
	return b.off, b.tim
}
