package compaction

import (
	"time"

	"github.com/seglog/seglog/defaults"
)

// DefaultDeleteRetention is Kafka's delete.retention.ms: how long
// tombstones and removable transaction markers stay after the first clean
// that sees them.
const DefaultDeleteRetention = defaults.DeleteRetention

// Options configures a compaction round. The zero value means Kafka's
// defaults.
type Options struct {
	// DeleteRetention is delete.retention.ms, the delete horizon's distance
	// from the clean that sets it. Zero means DefaultDeleteRetention; a
	// negative value means 0 (tombstones go on the clean after the one that
	// sets the horizon, at the same instant or later).
	DeleteRetention time.Duration
	// SegmentBytes is segment.bytes: consecutive segments are merged into
	// one new segment while their sizes sum to at most this. Zero means
	// Kafka's 1 GiB.
	SegmentBytes int64
	// Now is the clock for delete horizons. Nil means time.Now.
	Now func() time.Time
	// Throttle, if set, is charged every byte read and written and may
	// block to hold the cleaner's I/O rate; an error ends the round (the
	// segments already swapped stay swapped).
	Throttle func(n int64) error
	// Force rewrites the whole sealed part of the log even when nothing
	// past the checkpoint is dirty, so that segments holding only records
	// to drop (expired tombstones and markers) are cleaned too.
	Force bool
}

func (o Options) withDefaults() Options {
	switch {
	case o.DeleteRetention == 0:
		o.DeleteRetention = DefaultDeleteRetention
	case o.DeleteRetention < 0:
		o.DeleteRetention = 0
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = defaults.SegmentBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Throttle == nil {
		o.Throttle = func(int64) error { return nil }
	}
	return o
}
