package vfs

// WriteBacker is implemented by files that can start writing a range's
// dirty pages back to the device without waiting for it to finish, as
// sync_file_range(SYNC_FILE_RANGE_WRITE) does. It makes nothing durable:
// no metadata is written, no device cache is flushed, and the crash model
// is unchanged (only Sync makes data survive). An appender calls it every
// few MiB so that the writeback of a file is spread over its writes instead
// of being left to one long fdatasync (RocksDB's bytes_per_sync).
type WriteBacker interface {
	// WriteBack starts writeback of [off, off+length); it may wait for a
	// congested device queue, but not for the writes to complete.
	WriteBack(off, length int64) error
}

// WriteBack starts writeback of f's [off, off+length) when f can
// (WriteBacker), and does nothing otherwise: the memory filesystem, whose
// crash model already keeps only what was synced, has nothing to start.
func WriteBack(f File, off, length int64) error {
	if w, ok := f.(WriteBacker); ok {
		return w.WriteBack(off, length)
	}
	return nil
}
