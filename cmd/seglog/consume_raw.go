package main

import (
	"io"

	"github.com/seglog/seglog"
)

// rawChunk is how much one Read asks for; a slice never crosses a segment,
// so a large log is sent in several slices.
const rawChunk = 1 << 20

// consumeRaw writes the stored batches from the one holding from to the
// end of the log (as it is when the command starts) to w, with Log.Read
// and Slice.WriteTo: sendfile(2) when w is a file, pipe or socket. A
// non-negative limit stops it after that many batches.
func consumeRaw(l *seglog.Log, w io.Writer, from, limit int64) error {
	end := l.EndOffset()
	if err := checkRange(l, from); err != nil {
		return err
	}
	chunk := rawChunk
	if limit >= 0 {
		// A Read of one byte returns the one batch holding the offset
		// (a batch is never split): one slice per batch counted.
		chunk = 1
	}
	for off, n := from, int64(0); off < end && (limit < 0 || n < limit); n++ {
		s, err := l.Read(off, chunk, seglog.ReadOptions{UpperBound: end, Bounded: true})
		if err != nil {
			return err
		}
		if s.Len() == 0 {
			s.Close()
			return nil
		}
		_, err = s.WriteTo(w)
		off = s.LastOffset() + 1
		s.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
