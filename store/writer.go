package store

import (
	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
)

// Writer appends to one partition of a store: with its View, it is all a
// store's user may do to a partition directly. Records are stored as
// given (no timestamp is stamped, no partitioner runs: Produce and
// ProduceTo do that), and the offsets topic is not refused, for a broker
// that writes its group coordinator's own records there. Deleting records
// is Store.DeleteRecords; retention, compaction and closing are the
// store's alone, and truncation is only for a replicated partition's raft
// log (AppendEpochBatches, TruncateTo), which holds the cleaner back with
// SetCleaningFloor. A Writer stays usable until the topic is deleted
// or the store closed; its appends then fail with seglog.ErrClosed. It is
// safe for concurrent use.
type Writer struct {
	l *seglog.Log
	p *partition
}

// Writer returns a Writer for a partition, opening the partition if it
// was closed. Like Log's, the partition stays open until Close, outside
// the budget of open Logs (Options.MaxOpenLogs). A read-only store
// refuses it (ErrReadOnly).
func (s *Store) Writer(name string, partition int32) (Writer, error) {
	if s.readOnly {
		return Writer{}, s.errReadOnly("append to " + name)
	}
	l, p, err := s.foreverLog(name, partition)
	if err != nil {
		return Writer{}, err
	}
	return Writer{l, p}, nil
}

// Append appends records as one batch (seglog.Log.Append).
func (w Writer) Append(recs ...record.Record) (seglog.AppendInfo, error) {
	return w.l.Append(recs...)
}

// AppendBatch appends a batch a producer encoded (seglog.Log.AppendBatch):
// it is checked, given its offsets and stored as sent.
func (w Writer) AppendBatch(batch []byte) (seglog.AppendInfo, error) {
	return w.l.AppendBatch(batch)
}

// View returns a read-only view of the partition.
func (w Writer) View() seglog.View { return w.l.View() }

// Sync makes every record appended so far durable, whatever the topic's
// flush settings (seglog.Log.Sync).
func (w Writer) Sync() error { return w.l.Sync() }

// AppendEpochBatches appends batches as a replica stores its leader's:
// each is stamped with the log end as its base offset and with its epoch
// (seglog.Log.AppendEpochBatches). It is for a replicated partition's raft
// log (package internal/cluster/replica), which owns the partition's
// offsets: nothing else may append to such a partition.
func (w Writer) AppendEpochBatches(epochs []int32, batches [][]byte) ([]seglog.AppendInfo, error) {
	return w.l.AppendEpochBatches(epochs, batches)
}

// AppendAsFollower stores batches copied from a replica's leader at the
// offsets they carry, compaction's gaps kept (seglog.Log.AppendAsFollower):
// a replicated partition's snapshot install (internal/cluster/replica).
func (w Writer) AppendAsFollower(batches [][]byte) ([]seglog.AppendInfo, error) {
	return w.l.AppendAsFollower(batches)
}

// TruncateTo removes every record at or after offset
// (seglog.Log.TruncateTo): a replica dropping the uncommitted entries that
// conflict with its leader's, which is why a Writer may do it at all.
func (w Writer) TruncateTo(offset int64) error { return w.l.TruncateTo(offset) }

// RestartAt empties the partition and restarts it at offset
// (seglog.Log.RestartAt, Kafka's truncateFullyAndStartAt): a replica
// installing its leader's snapshot when its own log ends below the
// leader's start.
func (w Writer) RestartAt(offset int64) error { return w.l.RestartAt(offset) }

// DeleteBefore moves the log start up to offset and removes the segments
// wholly below it (seglog.Log.DeleteBefore): a replica installing its
// leader's snapshot takes the leader's log start, as a Kafka follower
// takes the start its leader's fetch answers carry. It is for a replicated
// partition's raft log (internal/cluster/replica) only: a user deletes
// records through Store.DeleteRecords.
func (w Writer) DeleteBefore(offset int64) (int, error) { return w.l.DeleteBefore(offset) }
