package vfs

// ModTimeKeeper is implemented by files that can change their size without
// moving their modification time.
type ModTimeKeeper interface {
	// TruncateKeepingModTime is Truncate with the file's modification
	// time left as it was.
	TruncateKeepingModTime(size int64) error
}

// TruncateKeepingModTime sets f's size as Truncate does and, when f can
// (ModTimeKeeper), leaves its modification time as it was: for a trim that
// is housekeeping rather than a write, such as the blocks reserved past a
// sealed segment's end let go by the flusher after the roll, when that
// time is what retention by time falls back to. Other files are truncated
// and take a new modification time.
func TruncateKeepingModTime(f File, size int64) error {
	if k, ok := f.(ModTimeKeeper); ok {
		return k.TruncateKeepingModTime(size)
	}
	return f.Truncate(size)
}
