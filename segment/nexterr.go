package segment

// NextOffsetErr is NextOffset with the error that kept a sealed segment's
// next offset from being computed, instead of a logged warning: an offset
// index whose last entry points past the end of the .log (the file lost
// the bytes under it), damage in the batch headers after that entry, an
// I/O error. With an error the offset returned is the best known, which
// may be only the index's word, so a reader must not trust it: the .log
// decides what the segment holds.
func (s *Segment) NextOffsetErr() (int64, error) {
	if v := s.next.Load(); v >= 0 {
		return v, nil
	}
	return s.ensureTail()
}
