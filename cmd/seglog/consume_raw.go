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
// and Slice.WriteTo: sendfile(2) when w is a file, pipe or socket.
func consumeRaw(l *seglog.Log, w io.Writer, from int64) error {
	end := l.EndOffset()
	if err := checkRange(l, from); err != nil {
		return err
	}
	for off := from; off < end; {
		s, err := l.Read(off, rawChunk, seglog.ReadOptions{UpperBound: end, Bounded: true})
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
