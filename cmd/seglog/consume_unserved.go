package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
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
		fmt.Fprintf(stderr, "seglog: warning: %s bytes %d-%d (%d bytes) not printed: no valid batch in them (a torn tail, or a batch still being written: %v); a writable open cuts them\n",
			u.File, u.Pos, end, u.Bytes, u.Reason)
		return nil
	}
	held := fmt.Sprintf("%d valid batches with %d records (offsets %d-%d)", u.Batches, u.Records, u.FirstOffset, u.LastOffset)
	if u.Unsure {
		held = "bytes not fully checked, which may hold valid batches"
	}
	base, _, _ := layout.ParseFileName(baseName(u.File))
	fmt.Fprintf(stderr, "seglog: %s bytes %d-%d (%d bytes) not printed: damage at byte %d (%v) is followed by %s; a writable open cuts the log there and keeps these bytes in the quarantine file %s, which seglog dump reads\n",
		u.File, u.Pos, end, u.Bytes, u.Pos, u.Reason, held, layout.QuarantineName(base, u.Pos, 0))
	return &exitError{code: exitUnserved, err: errors.New("consume: valid batches after damage were not printed (see above)")}
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
