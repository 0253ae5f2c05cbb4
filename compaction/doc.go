// Package compaction implements Kafka's key compaction (cleanup.policy =
// compact) for seglog logs: an offset map from key hashes to the latest
// offset of each key, bounded by a preallocated table, and the rewriting of
// runs of sealed segments into new ones that keep the latest record of
// every key, with Kafka's rules for keyless records, tombstones and their
// delete horizon (KIP-534), aborted transactions and transaction markers.
// Legacy (v0/v1) messages are compacted too, in their own magic and codec.
// The new segments are written by segment.Cleaned and swapped in by the
// Log's crash-safe swap, which is not part of the Log's exported API: only
// this package can reach it. See docs/compaction.md.
//
// Start with Clean, which runs one round on a Log with an OffsetMap made
// by NewOffsetMap; keep the map for the next round (it is large and
// allocated once). Most embedders do not call it: package cleaner runs
// rounds on a schedule by each log's dirty ratio, and a store runs its
// cleaner for topics whose cleanup.policy is compact.
package compaction
