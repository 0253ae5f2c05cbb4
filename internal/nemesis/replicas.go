package nemesis

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"slices"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
)

// CompareReplicas checks that the partition directories dirs (the same
// partition's replicas, on different nodes) hold the same batches, byte
// for byte, for every batch whose base offset is below upTo (the high
// watermark, or any offset every replica is known to have reached): the
// issue's "a follower's partition directory is identical to the leader's
// up to the high watermark". Segment boundaries may differ between
// replicas (each rolls its own segments); the batches, in order, may not.
// Every replica must reach upTo; a damaged entry below it is a violation
// too. Each violation names the offset of the first batch that differs,
// and dirs[0] is the replica the others are compared with. err is for a
// directory that cannot be read.
func CompareReplicas(fsys vfs.FS, dirs []string, upTo int64) ([]Violation, error) {
	if len(dirs) == 0 {
		return nil, nil
	}
	tp := dirTP(dirs[0])
	var out []Violation
	add := func(off int64, format string, args ...any) {
		out = append(out, Violation{Rule: RuleReplicasDiffer, Record: Record{TP: tp, Offset: off}, Detail: fmt.Sprintf(format, args...)})
	}
	type replica struct {
		dir  string
		next func() (segment.Entry, error, bool)
		end  int64 // the offset after the last batch that agreed
		done bool  // no more batches below upTo
		bad  bool  // reported: after a difference everything may differ, so once is enough
	}
	// pull returns r's next entry below upTo; ok = false at its end or
	// when r was reported for damage.
	pull := func(r *replica) (segment.Entry, bool, error) {
		if r.done {
			return segment.Entry{}, false, nil
		}
		e, err, ok := r.next()
		switch {
		case err != nil:
			return e, false, err
		case !ok:
			r.done = true
			return e, false, nil
		case e.Damaged():
			add(r.end, "replica %s: %s entry at byte %d of a .log after offset %d (%v), below offset %d", r.dir, e.Kind, e.Pos, r.end, e.Err, upTo)
			r.done, r.bad = true, true
			return e, false, nil
		}
		return e, true, nil
	}
	reps := make([]*replica, len(dirs))
	for i, dir := range dirs {
		next, stop := iter.Pull2(batches(fsys, dir, upTo))
		defer stop()
		reps[i] = &replica{dir: dir, next: next}
	}
	ref := reps[0]
	for {
		// One batch of each replica: each is valid until its replica's
		// next one is pulled, so all of them can be compared.
		e0, ok0, err := pull(ref)
		if err != nil {
			return nil, err
		}
		for _, r := range reps[1:] {
			if r.bad {
				continue
			}
			e, ok, err := pull(r)
			switch {
			case err != nil:
				return nil, err
			case r.bad:
			case !ok && !ok0:
			case !ok:
				add(e0.BaseOffset(), "replica %s ends at offset %d; replica %s has a batch at offset %d", r.dir, r.end, ref.dir, e0.BaseOffset())
				r.bad = true
			case !ok0:
				add(e.BaseOffset(), "replica %s has a batch at offset %d; replica %s ends at offset %d", r.dir, e.BaseOffset(), ref.dir, ref.end)
				r.bad = true
			case !bytes.Equal(e.Batch, e0.Batch):
				add(min(e.BaseOffset(), e0.BaseOffset()), "replica %s's batch (offsets %d-%d, %d bytes, epoch %d, crc %08x) differs from replica %s's (offsets %d-%d, %d bytes, epoch %d, crc %08x)",
					r.dir, e.BaseOffset(), e.LastOffset(), len(e.Batch), batchEpoch(e), e.Batch.CRC(),
					ref.dir, e0.BaseOffset(), e0.LastOffset(), len(e0.Batch), batchEpoch(e0), e0.Batch.CRC())
				r.bad = true
			default:
				r.end = e.LastOffset() + 1
			}
		}
		if !ok0 {
			break
		}
		ref.end = e0.LastOffset() + 1
	}
	for _, r := range reps {
		if !r.bad && r.end < upTo {
			add(r.end, "replica %s ends at offset %d, short of %d", r.dir, r.end, upTo)
		}
	}
	return out, nil
}

// batchEpoch is a batch's partition leader epoch, -1 for a legacy entry.
func batchEpoch(e segment.Entry) int32 {
	if e.Magic != record.CurrentMagic {
		return -1
	}
	return e.Batch.PartitionLeaderEpoch()
}

// batches yields the entries of the partition directory dir whose base
// offset is below upTo, across its segments in offset order, scanned by
// segment.Scanner (the framing and checks fsck and recovery use). An
// entry's bytes are valid until the next one is asked for.
func batches(fsys vfs.FS, dir string, upTo int64) iter.Seq2[segment.Entry, error] {
	return func(yield func(segment.Entry, error) bool) {
		names, err := fsys.List(dir)
		if err != nil {
			yield(segment.Entry{}, err)
			return
		}
		var bases []int64
		for _, name := range names {
			if base, suffix, ok := segment.ParseFileName(name); ok && suffix == segment.LogSuffix {
				bases = append(bases, base)
			}
		}
		slices.Sort(bases)
		for _, base := range bases {
			if base >= upTo {
				return
			}
			f, err := fsys.Open(filepath.Join(dir, segment.FileName(base, segment.LogSuffix)))
			if err != nil {
				yield(segment.Entry{}, err)
				return
			}
			more, err := scanSegment(f, upTo, yield)
			f.Close()
			if err != nil {
				yield(segment.Entry{}, err)
				return
			}
			if !more {
				return
			}
		}
	}
}

// scanSegment yields the entries of the open .log f below upTo; more is
// false when the caller should stop (yield said so, or upTo was reached).
func scanSegment(f vfs.File, upTo int64, yield func(segment.Entry, error) bool) (more bool, err error) {
	size, err := f.Size()
	if err != nil {
		return false, err
	}
	sc := segment.NewScanner(f, size, 0)
	for {
		e, ok, err := sc.Next()
		if err != nil || !ok {
			return err == nil, err
		}
		if !e.Damaged() && e.BaseOffset() >= upTo {
			return false, nil
		}
		if !yield(e, nil) {
			return false, nil
		}
	}
}

// FsckClean runs fsck (fsck.Check, deep: every record decoded) on each
// partition directory and reports every problem it finds as a violation
// naming the directory, the file and the byte. Run it after the broker
// stopped cleanly: then a clean report is the only right answer.
func FsckClean(fsys vfs.FS, dirs []string) ([]Violation, error) {
	var out []Violation
	for _, dir := range dirs {
		rep, err := fsck.Check(fsys, dir, fsck.Options{Deep: true})
		if err != nil {
			return nil, fmt.Errorf("fsck %s: %w", dir, err)
		}
		for _, p := range rep.Problems {
			out = append(out, Violation{Rule: RuleFsck, Record: Record{TP: dirTP(dir), Offset: -1}, Detail: dir + ": " + p.String()})
		}
	}
	return out, nil
}

// PartitionDirs returns the directories of topic's partitions in the
// store (a Kafka log.dir) storeDir, ordered by partition.
func PartitionDirs(fsys vfs.FS, storeDir, topic string) ([]string, error) {
	names, err := fsys.List(storeDir)
	if err != nil {
		return nil, err
	}
	var parts []layout.PartitionDir
	for _, name := range names {
		if d, ok := layout.ParsePartitionDir(name); ok && d.Suffix == "" && d.Topic == topic {
			parts = append(parts, d)
		}
	}
	if len(parts) == 0 {
		return nil, errors.New("no partition of topic " + topic + " in " + storeDir)
	}
	slices.SortFunc(parts, func(a, b layout.PartitionDir) int { return int(a.Partition - b.Partition) })
	dirs := make([]string, len(parts))
	for i, d := range parts {
		dirs[i] = filepath.Join(storeDir, layout.PartitionDirName(d.Topic, d.Partition))
	}
	return dirs, nil
}

// dirTP is the topic partition a partition directory's name says, or the
// directory's base name and partition 0 for another name.
func dirTP(dir string) TP {
	if topic, p, ok := layout.KafkaPartition(dir); ok {
		return TP{topic, p}
	}
	return TP{Topic: filepath.Base(dir)}
}
