package fsck

import (
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// ErrDisagree is returned by Repair when the engine's segment recovery
// would cut a .log before the point fsck decided on: it found damage in
// bytes fsck's check calls valid. Repair refuses the cut (the guard below
// makes it impossible), so nothing valid is lost; the segment's indexes
// may have been rebuilt up to the engine's point. Report it: one of the
// two checkers is wrong.
var ErrDisagree = errors.New("fsck: the engine's recovery and fsck's check disagree")

// recoverSegment runs the engine's own recovery (segment.Open and
// segment.Recover, what the Log runs on an unclean Open) on the segment at
// base: it rebuilds both indexes from the .log and truncates the .log at
// the first entry it finds invalid. So that the engine and fsck cannot
// disagree at the cost of data, it runs on a filesystem that refuses any
// truncation of this .log below floor (fsck's cut point, or the file's
// size when only the indexes are rebuilt); such a refusal comes back as an
// error wrapping ErrDisagree.
//
// The read limit is passed as the engine's batch limit: repair only runs
// this on segments whose every entry fsck read within that limit, so the
// limit never decides a cut.
func (r *repairer) recoverSegment(base, floor int64, logSize int64) (segment.RecoverResult, error) {
	logPath := r.path(fileName(base, sufLog))
	guard := vfs.Inject(r.fs, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpTruncate && op.Path == logPath && op.Off < floor {
			return fmt.Errorf("%w: it would cut %s at byte %d, before byte %d where fsck's cut is", ErrDisagree, logPath, op.Off, floor)
		}
		return nil
	}))
	interval := r.opts.IndexIntervalBytes
	if interval == 0 {
		interval = DefaultIndexIntervalBytes
	}
	opts := segment.Options{
		IndexIntervalBytes: interval,
		// Room for an entry per smallest possible entry (a legacy v0
		// message is 26 bytes): an index never fills up during the rebuild.
		MaxIndexBytes: int(max(12*(logSize/(record.LogOverhead+14)+2), 1024)),
		MaxBatchBytes: r.opts.readLimit(),
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	seg, err := segment.Open(guard, r.dir, base, false, opts)
	if err != nil {
		return segment.RecoverResult{}, err
	}
	res, err := seg.Recover(r.opts.readLimit())
	if err == nil {
		// Recover leaves the truncation unsynced; the rebuilt indexes were
		// made durable when it sealed them.
		err = seg.Flush()
	}
	if cerr := seg.Close(); err == nil {
		err = cerr
	}
	return res, err
}
