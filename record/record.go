package record

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
