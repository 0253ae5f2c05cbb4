package seglog

import "github.com/seglog/seglog/record"

// Limits are the options an open Log can change (SetLimits): a topic
// config altered while its partitions are open (Kafka's segment.bytes,
// max.message.bytes, compression.type) takes effect without a reopen.
type Limits struct {
	// SegmentBytes is Options.SegmentBytes; the active segment rolls by
	// it from the next append.
	SegmentBytes int64
	// MaxBatchBytes is Options.MaxBatchBytes, for the next append.
	MaxBatchBytes int
	// Compression is Options.Compression, for the next Append.
	Compression record.Codec
}

// SetLimits changes the Log's limits for the appends that follow. Zero
// values mean the defaults, as in Options; values Options.Validate refuses
// are refused (ErrInvalidOptions) and change nothing. Batches already
// stored stay readable: reads keep the largest batch size the Log ever
// allowed.
func (l *Log) SetLimits(lim Limits) error {
	if l.ro != nil {
		return ErrReadOnly
	}
	o := l.opts
	o.SegmentBytes, o.MaxBatchBytes, o.Compression = lim.SegmentBytes, lim.MaxBatchBytes, lim.Compression
	if err := o.Validate(); err != nil {
		return err
	}
	o = o.withDefaults()
	l.limits.Store(&Limits{SegmentBytes: o.SegmentBytes, MaxBatchBytes: o.MaxBatchBytes, Compression: o.Compression})
	return nil
}

// lim returns the current limits: Options' until SetLimits.
func (l *Log) lim() Limits {
	if p := l.limits.Load(); p != nil {
		return *p
	}
	return Limits{SegmentBytes: l.opts.SegmentBytes, MaxBatchBytes: l.opts.MaxBatchBytes, Compression: l.opts.Compression}
}

// readBatchBytes is the largest batch this Log's readers accept: the
// largest limit it was opened with or given since, so that lowering
// max.message.bytes never makes a stored batch unreadable.
func (l *Log) readBatchBytes() int {
	return max(l.opts.MaxBatchBytes, l.lim().MaxBatchBytes)
}
