package segment

import "github.com/seglog/seglog/layout"

// File-name suffixes of a segment's files, as package layout defines them
// (kept here so callers of the segment layer need one import).
const (
	// LogSuffix names the file holding the batches.
	LogSuffix = layout.LogSuffix
	// IndexSuffix names the sparse offset index.
	IndexSuffix = layout.IndexSuffix
	// TimeIndexSuffix names the sparse time index.
	TimeIndexSuffix = layout.TimeIndexSuffix
	// TxnIndexSuffix names the aborted-transaction index.
	TxnIndexSuffix = layout.TxnIndexSuffix
	// SnapshotSuffix names a producer-state snapshot.
	SnapshotSuffix = layout.SnapshotSuffix
	// DeletedSuffix marks a file scheduled for deletion.
	DeletedSuffix = layout.DeletedSuffix
	// CleanedSuffix marks the output of compaction not yet swapped in.
	CleanedSuffix = layout.CleanedSuffix
	// SwapSuffix marks a compacted file being swapped in.
	SwapSuffix = layout.SwapSuffix
)

// FileName is layout.FileName: the name of the file with the given base
// offset and suffix.
func FileName(base int64, suffix string) string { return layout.FileName(base, suffix) }

// ParseFileName is layout.ParseFileName: a segment-directory file name's
// base offset and suffix.
func ParseFileName(name string) (base int64, suffix string, ok bool) {
	return layout.ParseFileName(name)
}
