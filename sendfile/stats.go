package sendfile

// Stats counts how a Sender moved bytes, so a program can report how much of
// its output was zero-copy and a test can prove which path ran.
type Stats struct {
	// SendfileBytes is the number of bytes written by sendfile(2).
	SendfileBytes int64
	// SendfileCalls is the number of sendfile(2) system calls made,
	// including ones that returned EAGAIN or EINTR.
	SendfileCalls int64
	// Declined is the number of SendFile calls that returned handled ==
	// false (including those made by Copy before falling back).
	Declined int64
	// CopyBytes is the number of bytes written by Copy's read-and-write
	// fallback.
	CopyBytes int64
}

// Stats returns a snapshot of the counters. Each field is read atomically;
// the fields are not read together, so a snapshot taken while transfers run
// can mix moments.
func (s *Sender) Stats() Stats {
	return Stats{
		SendfileBytes: s.sendfileBytes.Load(),
		SendfileCalls: s.sendfileCalls.Load(),
		Declined:      s.declined.Load(),
		CopyBytes:     s.copyBytes.Load(),
	}
}

// Sub returns the counts accumulated since the snapshot prev.
func (st Stats) Sub(prev Stats) Stats {
	return Stats{
		SendfileBytes: st.SendfileBytes - prev.SendfileBytes,
		SendfileCalls: st.SendfileCalls - prev.SendfileCalls,
		Declined:      st.Declined - prev.Declined,
		CopyBytes:     st.CopyBytes - prev.CopyBytes,
	}
}
