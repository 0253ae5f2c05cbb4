package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/segment"
)

// exitUnserved is consume's exit status when it printed what the log
// serves but valid batches lie past damage at the end of the last segment
// (a writable open keeps them in a quarantine file): nothing valid is
// hidden without a word, and a script can tell it from success (0) and
// from failure (1).
const exitUnserved = 3

// reportUnserved tells, on stderr, what the read-only log l holds at the
// end of its last segment file that consume did not print, and returns the
// error that sets the exit status: nil for a torn tail (a warning only: a
// crash leaves one, and a writable open cuts it), an exitError with
// exitUnserved when valid batches follow the damage.
func reportUnserved(l *seglog.Log, stderr io.Writer) error {
	u, ok, err := l.UnservedTail()
	if err != nil || !ok {
		return err
	}
	end := u.Pos + u.Bytes
	if !u.HoldsValid() {
		what := "a torn tail, or a batch still being written"
		if !errors.Is(u.Reason, segment.ErrTornTail) {
			what = "damaged bytes, as a crash can leave at the end of a log"
		}
		fmt.Fprintf(stderr, "seglog: warning: %s bytes %d-%d (%d bytes) not printed: they hold no valid batch (%s: %s); a writable open cuts them\n",
			u.File, u.Pos, end, u.Bytes, what, reasonText(u.Reason))
		return nil
	}
	held := fmt.Sprintf("%d valid batches with %d records (offsets %d-%d)", u.Batches, u.Records, u.FirstOffset, u.LastOffset)
	if u.Unsure {
		held = "bytes not fully checked, which may hold valid batches"
	}
	base, _, _ := layout.ParseFileName(baseName(u.File))
	fmt.Fprintf(stderr, "seglog: %s bytes %d-%d (%d bytes) not printed: damage at byte %d (%v) is followed by %s; a writable open cuts the log there and keeps these bytes in the quarantine file %s, which seglog dump reads\n",
		u.File, u.Pos, end, u.Bytes, u.Pos, reasonText(u.Reason), held, layout.QuarantineName(base, u.Pos, 0))
	return &exitError{code: exitUnserved, err: errors.New("consume: valid batches after damage were not printed (see above)")}
}

// reasonText is a scan's reason without the file and position its error
// repeats.
func reasonText(err error) string {
	var ce *seglog.CorruptionError
	var pe *segment.PositionError
	switch {
	case errors.As(err, &ce):
		return ce.Reason.Error()
	case errors.As(err, &pe):
		return pe.Err.Error()
	case err != nil:
		return err.Error()
	}
	return ""
}

// baseName is the last element of a slash-separated path.
func baseName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}
