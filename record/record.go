package record

import "bytes"

// Record is one record of a batch. A nil Key or Value is Kafka's null,
// distinct from an empty, non-nil one.
//
// Offset and Timestamp are absolute: base offset plus offset delta, base
// timestamp plus timestamp delta (or the batch's max timestamp under
// LogAppendTime).
type Record struct {
	Offset    int64
	Timestamp int64
	Key       []byte
	Value     []byte
	Headers   []Header
}

// Header is a record header. Keys are never null; a nil Value is null.
type Header struct {
	Key   string
	Value []byte
}

// Clone returns a deep copy of r: its Key, Value and header values in
// fresh memory, nil staying nil. Records yielded by an Iterator,
// Batch.Records or a Log's Records alias buffers that are reused once the
// loop body returns; Clone is how to keep one.
func (r Record) Clone() Record {
	c := r
	c.Key = bytes.Clone(r.Key)
	c.Value = bytes.Clone(r.Value)
	if r.Headers != nil {
		c.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			c.Headers[i] = Header{Key: h.Key, Value: bytes.Clone(h.Value)}
		}
	}
	return c
}
