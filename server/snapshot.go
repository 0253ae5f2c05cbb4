package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/crc32c"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// Producer-state snapshots are Kafka's <offset>.snapshot files in the
// partition directory (version 1): the state as of offset, so that after a
// restart only the batches after it are read. The server writes one when an
// idempotent append finds that the log has rolled (snapshotOnRoll: Kafka
// writes one at every roll, and the log has no roll hook) and one per
// partition it holds producer state for when it shuts down.
//
//	int16 version=1 | uint32 crc | int32 count | count × entry
//	entry: int64 producerId, int16 epoch, int32 lastSequence, int64 lastOffset,
//	       int32 offsetDelta, int64 timestamp, int32 coordinatorEpoch,
//	       int64 currentTxnFirstOffset (-1)
//
// The CRC-32C covers everything from byte 6 on. Like Kafka, a snapshot
// holds only each producer's last batch, not the last five.
const (
	snapshotVersion   = 1
	snapshotHeader    = 10
	snapshotEntrySize = 46
)

// maxSnapshotBytes bounds the snapshot read: a damaged file's size never
// makes us allocate more.
const maxSnapshotBytes = 64 << 20

func encodeSnapshot(pp *partProducers) []byte {
	ids := make([]int64, 0, len(pp.m))
	for id, e := range pp.m {
		if len(e.batches) > 0 {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	b := make([]byte, snapshotHeader, snapshotHeader+len(ids)*snapshotEntrySize)
	binary.BigEndian.PutUint16(b, snapshotVersion)
	binary.BigEndian.PutUint32(b[6:], uint32(len(ids)))
	for _, id := range ids {
		e := pp.m[id]
		last := e.batches[len(e.batches)-1]
		b = binary.BigEndian.AppendUint64(b, uint64(id))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(last.lastSeq))
		b = binary.BigEndian.AppendUint64(b, uint64(last.lastOff))
		b = binary.BigEndian.AppendUint32(b, uint32(last.lastOff-last.firstOff))
		b = binary.BigEndian.AppendUint64(b, uint64(e.lastTS))
		b = binary.BigEndian.AppendUint32(b, 0xffffffff) // coordinator epoch: none
		b = binary.BigEndian.AppendUint64(b, 0xffffffffffffffff)
	}
	binary.BigEndian.PutUint32(b[2:], crc32c.Checksum(b[6:]))
	return b
}

// decodeSnapshot parses a snapshot into producer entries; a damaged one is
// an error naming the byte.
func decodeSnapshot(path string, b []byte) (map[int64]*producerEntry, error) {
	bad := func(pos int, what string) error {
		return fmt.Errorf("server: producer snapshot %s: byte %d: %s", path, pos, what)
	}
	if len(b) < snapshotHeader {
		return nil, bad(0, "shorter than the header")
	}
	if v := binary.BigEndian.Uint16(b); v != snapshotVersion {
		return nil, bad(0, fmt.Sprintf("version %d", v))
	}
	if crc32c.Checksum(b[6:]) != binary.BigEndian.Uint32(b[2:]) {
		return nil, bad(2, "CRC mismatch")
	}
	n := int64(int32(binary.BigEndian.Uint32(b[6:])))
	if n < 0 || snapshotHeader+n*snapshotEntrySize != int64(len(b)) {
		return nil, bad(6, fmt.Sprintf("entry count %d for %d bytes", n, len(b)))
	}
	m := make(map[int64]*producerEntry, n)
	for p := b[snapshotHeader:]; len(p) > 0; p = p[snapshotEntrySize:] {
		id := int64(binary.BigEndian.Uint64(p))
		lastSeq := int32(binary.BigEndian.Uint32(p[10:]))
		lastOff := int64(binary.BigEndian.Uint64(p[14:]))
		delta := int64(int32(binary.BigEndian.Uint32(p[22:])))
		first := int64(lastSeq) - delta
		if first < 0 { // the batch's sequences wrapped past int32 max
			first += 1 << 31
		}
		firstSeq := int32(first)
		m[id] = &producerEntry{
			epoch:   int16(binary.BigEndian.Uint16(p[8:])),
			batches: []batchMeta{{firstSeq: firstSeq, lastSeq: lastSeq, firstOff: lastOff - delta, lastOff: lastOff}},
			lastTS:  int64(binary.BigEndian.Uint64(p[26:])),
		}
	}
	return m, nil
}

// snapshots lists a partition directory's snapshot offsets, newest first.
func snapshots(fsys vfs.FS, dir string) ([]int64, error) {
	names, err := fsys.List(dir)
	if err != nil {
		return nil, err
	}
	var offs []int64
	for _, n := range names {
		if off, suffix, ok := layout.ParseFileName(n); ok && suffix == layout.SnapshotSuffix {
			offs = append(offs, off)
		}
	}
	slices.Sort(offs)
	slices.Reverse(offs)
	return offs, nil
}

// loadSnapshot returns the newest usable snapshot of l at or below its end
// and at or above notBefore, and its offset; ok is false when there is
// none. Damaged snapshots are skipped (an older one is tried, as Kafka
// does); they are left for fsck to report.
func loadSnapshot(fsys vfs.FS, l seglog.View, notBefore int64) (map[int64]*producerEntry, int64, bool) {
	offs, err := snapshots(fsys, l.Dir())
	if err != nil {
		return nil, 0, false
	}
	end := l.EndOffset()
	for _, off := range offs {
		if off > end {
			continue // the log was truncated below it: it describes batches that are gone
		}
		if off < notBefore {
			return nil, 0, false
		}
		path := filepath.Join(l.Dir(), layout.FileName(off, layout.SnapshotSuffix))
		data, err := vfs.ReadFileLimit(fsys, path, maxSnapshotBytes)
		if err != nil {
			continue
		}
		m, err := decodeSnapshot(path, data)
		if err != nil {
			continue
		}
		return m, off, true
	}
	return nil, 0, false
}

// writeSnapshot writes pp's state as of the log's end and removes the
// partition's older snapshots.
func writeSnapshot(l seglog.View, pp *partProducers) error {
	fsys := pp.fs
	end := l.EndOffset()
	path := filepath.Join(l.Dir(), layout.FileName(end, layout.SnapshotSuffix))
	if err := vfs.WriteFileAtomic(fsys, path, encodeSnapshot(pp)); err != nil {
		return err
	}
	offs, err := snapshots(fsys, l.Dir())
	if err != nil {
		return err
	}
	var errs []error
	for _, off := range offs {
		if off != end {
			if err := fsys.Remove(filepath.Join(l.Dir(), layout.FileName(off, layout.SnapshotSuffix))); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
