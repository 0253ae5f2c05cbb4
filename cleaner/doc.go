// Package cleaner keeps many seglog logs within their retention policies, as
// Kafka's log manager does: a background service that, every check
// interval, deletes from each log the oldest whole segments that its policy
// says have expired, by time (retention.ms), by size (retention.bytes) or
// by start offset (DeleteRecords).
//
// The package decides; the Log deletes. Decide is a pure function from a
// log's segment view, its policy, the time and an upper bound (a high
// watermark) to a new start offset; the Cleaner applies it through
// Log.DeleteBefore, which renames the segments to .deleted, checkpoints the
// new start and unlinks the files when file.delete.delay.ms has passed and
// the last reader has let go. The cleaner never touches segment files
// itself.
//
// For a log whose policy says compact (cleanup.policy compact or
// compact,delete) the same worker runs a compaction round after the
// retention pass (package compaction), charging the Throttle the workers
// share; a compact-only log gets only the start-offset rule of retention.
// See docs/retention.md and docs/compaction.md.
//
// Start with New, then Add each open log, Wrap(log), under a Policy built
// from DefaultPolicy; Start runs rounds in the background (RunOnce runs
// one now), and Stop ends them. Remove a log before closing it. A
// seglog store (package store) runs its own Cleaner over its partitions,
// so a store's embedder does not use this package directly.
package cleaner
