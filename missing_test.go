package seglog

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// gapLog writes a log of seven segments at dir and closes it. It returns
// the segments' base offsets and the log's end.
func gapLog(t *testing.T, fsys vfs.FS, dir string) ([]int64, int64) {
	t.Helper()
	l, err := Open(dir, Options{FS: fsys, LogConfig: LogConfig{SegmentBytes: 6 << 10, IndexIntervalBytes: 300, MaxIndexBytes: 4096}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for l.NumSegments() < 7 {
		if _, err := l.Append(recordsAt(l.EndOffset(), 1+int(l.EndOffset()%5))...); err != nil {
			t.Fatal(err)
		}
	}
	var bases []int64
	for _, s := range l.Segments() {
		bases = append(bases, s.BaseOffset)
	}
	end := l.EndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return bases, end
}

// A way of losing a middle segment's data, as a user (or a failing disk)
// does it: it changes the segment at base and returns the first offset
// lost.
type gapMaker struct {
	name string
	make func(t *testing.T, fsys vfs.FS, dir string, base int64) int64
	// indexed: the segment's offset index still names the lost offsets,
	// which is missing data even in a compacted log.
	indexed bool
}

var gapMakers = []gapMaker{
	{"emptied", func(t *testing.T, fsys vfs.FS, dir string, base int64) int64 {
		// : > 000….log
		vfstest.WriteFile(t, fsys, filepath.Join(dir, layout.FileName(base, layout.LogSuffix)), nil)
		return base
	}, true},
	{"deleted", func(t *testing.T, fsys vfs.FS, dir string, base int64) int64 {
		for _, suf := range []string{layout.LogSuffix, layout.IndexSuffix, layout.TimeIndexSuffix} {
			if err := fsys.Remove(filepath.Join(dir, layout.FileName(base, suf))); err != nil {
				t.Fatal(err)
			}
		}
		return base
	}, false},
	{"cut", func(t *testing.T, fsys vfs.FS, dir string, base int64) int64 {
		// Cut at the first batch boundary past half the file: whole
		// batches remain, the index names the ones after.
		path := filepath.Join(dir, layout.FileName(base, layout.LogSuffix))
		data := vfstest.ReadFile(t, fsys, path)
		pos := 0
		for pos < len(data)/2 {
			size, _, err := record.PeekEntry(data[pos:])
			if err != nil {
				t.Fatal(err)
			}
			pos += size
		}
		vfstest.WriteFile(t, fsys, path, data[:pos])
		return record.Batch(data[pos:]).BaseOffset()
	}, true},
}

// wantMissing checks that err is a *MissingDataError for [from, to) of
// dir.
func wantMissing(t *testing.T, what string, err error, dir string, from, to int64) {
	t.Helper()
	var me *MissingDataError
	if !errors.Is(err, ErrMissingData) || !errors.As(err, &me) {
		t.Fatalf("%s: %v, want a MissingDataError for [%d, %d)", what, err, from, to)
	}
	if me.From != from || me.To != to || me.Dir != dir || me.File == "" {
		t.Fatalf("%s: %+v, want [%d, %d) in %s with a file", what, me, from, to, dir)
	}
	if want := fmt.Sprintf("data missing: offsets %d–%d", from, to-1); !strings.Contains(err.Error(), want) {
		t.Fatalf("%s: %q does not say %q", what, err, want)
	}
	if errors.Is(err, ErrCorrupt) {
		t.Fatalf("%s: %v also matches ErrCorrupt", what, err)
	}
}

// readUntil reads l from from with Records until the end or an error,
// checking that the offsets it yields are consecutive; it returns the
// offset after the last one and the error.
func readUntil(t *testing.T, l *Log, from int64) (int64, error) {
	t.Helper()
	next := from
	for r, err := range l.Records(from) {
		if err != nil {
			return next, err
		}
		if r.Offset != next {
			t.Fatalf("Records(%d): offset %d after %d", from, r.Offset, next-1)
		}
		next++
	}
	return next, nil
}

// readSlices reads l from from with Read, as consume --raw and a Fetch do,
// until the end or an error; it returns the offset after the last slice
// and the error.
func readSlices(t *testing.T, l *Log, from int64) (int64, error) {
	t.Helper()
	next := from
	for next < l.EndOffset() {
		sl, err := l.Read(next, 1<<20, ReadOptions{})
		if err != nil {
			return next, err
		}
		first, last := sl.FirstOffset(), sl.LastOffset()
		sl.Close()
		if sl.Len() == 0 || first > next {
			t.Fatalf("Read(%d): a slice of [%d, %d], %d bytes", next, first, last, sl.Len())
		}
		next = last + 1
	}
	return next, nil
}

// followAll is readUntil through Follow: it stops the follower when it
// yields the log's last record, so a follower that jumps a gap ends too.
func followAll(t *testing.T, l *Log, from int64) (int64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), followGuard)
	defer cancel()
	next, end := from, l.EndOffset()
	for r, err := range l.Follow(ctx, from) {
		if err != nil {
			return next, err
		}
		if r.Offset != next {
			t.Fatalf("Follow(%d): offset %d after %d", from, r.Offset, next-1)
		}
		next++
		if next == end {
			cancel()
		}
	}
	return next, nil
}

// TestReadStopsAtMissingData: a middle segment emptied, deleted, or cut
// short under its index, in a log that was never compacted. Every reader
// (Records, Read, Follow, OffsetForTime), on a writable and a read-only
// open, delivers what lies before the gap and then stops with a
// MissingDataError naming it; none jumps to the next segment.
func TestReadStopsAtMissingData(t *testing.T) {
	for _, gm := range gapMakers {
		for _, ro := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/readonly=%v", gm.name, ro), func(t *testing.T) {
				damagedFilesystems(t, func(t *testing.T, fsys vfs.FS, dir string) {
					bases, end := gapLog(t, fsys, dir)
					from, to := gm.make(t, fsys, dir, bases[3]), bases[4]
					l, err := Open(dir, Options{FS: fsys, ReadOnly: ro, Logger: discardLogger()})
					if err != nil {
						t.Fatal(err)
					}
					defer l.Close()
					if l.EndOffset() != end {
						t.Fatalf("end %d, want %d", l.EndOffset(), end)
					}

					got, err := readUntil(t, l, 0)
					wantMissing(t, "Records(0)", err, dir, from, to)
					if got != from {
						t.Fatalf("Records(0) delivered up to %d, want %d", got, from)
					}
					_, err = readUntil(t, l, to-1)
					wantMissing(t, "Records in the gap", err, dir, from, to)
					if got, err := readUntil(t, l, to); err != nil || got != end {
						t.Fatalf("Records(%d) after the gap: to %d, %v", to, got, err)
					}

					got, err = readSlices(t, l, 0)
					wantMissing(t, "Read from 0", err, dir, from, to)
					if got != from {
						t.Fatalf("Read delivered up to %d, want %d", got, from)
					}
					for _, off := range []int64{from, (from + to) / 2, to - 1} {
						_, err := l.Read(off, 1<<20, ReadOptions{})
						wantMissing(t, fmt.Sprintf("Read(%d)", off), err, dir, from, to)
					}

					got, err = followAll(t, l, 0)
					wantMissing(t, "Follow(0)", err, dir, from, to)
					if got != from {
						t.Fatalf("Follow delivered up to %d, want %d", got, from)
					}

					// recordsAt's timestamps rise with the offset.
					ts := func(off int64) int64 { return recordsAt(off, 1)[0].Timestamp }
					if off, err := l.OffsetForTime(ts(from - 1)); err != nil || off != from-1 {
						t.Fatalf("OffsetForTime before the gap: %d, %v", off, err)
					}
					_, err = l.OffsetForTime(ts(from))
					wantMissing(t, "OffsetForTime in the gap", err, dir, from, to)
				})
			})
		}
	}
}

// closedLogDir makes dir's parent the log.dir of a store closed cleanly
// (its recovery point line for dir and its marker), as the log.dir's
// lines and marker, not dir's own files, speak for a partition there.
func closedLogDir(t *testing.T, fsys vfs.FS, dir string) {
	t.Helper()
	topic, part, _ := layout.KafkaPartition(dir)
	vfstest.WriteFile(t, fsys, filepath.Join(filepath.Dir(dir), RecoveryPointFile),
		layout.FormatCheckpoint([]layout.CheckpointEntry{{Topic: topic, Partition: part, Offset: 1 << 40}}))
	vfstest.WriteFile(t, fsys, filepath.Join(filepath.Dir(dir), CleanShutdownFile), nil)
}

// TestCompactedGapsAreNotMissing: the same gaps in a log that has a
// cleaner-offset checkpoint (its own file, a Checkpointer's line, or its
// Kafka log.dir's line) are compaction's: every reader goes on past them,
// as Kafka's do. An index naming offsets its .log lost is missing data in
// a compacted log too. A log.dir's partition is read read-only here: a
// standalone writable open of it is refused (ErrInLogDir), only its store
// writes it.
func TestCompactedGapsAreNotMissing(t *testing.T) {
	marks := []struct {
		name string
		// mark makes the log at dir count as compacted, if it does
		// anything, and returns the options to open it with.
		mark      func(t *testing.T, fsys vfs.FS, dir string) Options
		compacted bool
		// logDir: the mark makes dir a partition of a log.dir, which only
		// its store writes (a standalone writable Open is refused).
		logDir bool
	}{
		{"own file", func(t *testing.T, fsys vfs.FS, dir string) Options {
			vfstest.WriteFile(t, fsys, filepath.Join(dir, CleanerOffsetFile), layout.FormatCheckpoint([]layout.CheckpointEntry{{Topic: "events", Partition: 0, Offset: 3}}))
			return Options{}
		}, true, false},
		{"log.dir line", func(t *testing.T, fsys vfs.FS, dir string) Options {
			closedLogDir(t, fsys, dir)
			vfstest.WriteFile(t, fsys, filepath.Join(filepath.Dir(dir), CleanerOffsetFile),
				layout.FormatCheckpoint([]layout.CheckpointEntry{{Topic: "other", Partition: 0, Offset: 9}, {Topic: "events", Partition: 2, Offset: 3}}))
			return Options{}
		}, true, true},
		{"another partition's log.dir line", func(t *testing.T, fsys vfs.FS, dir string) Options {
			closedLogDir(t, fsys, dir)
			vfstest.WriteFile(t, fsys, filepath.Join(filepath.Dir(dir), CleanerOffsetFile),
				layout.FormatCheckpoint([]layout.CheckpointEntry{{Topic: "events", Partition: 1, Offset: 3}, {Topic: "events", Partition: 3, Offset: 3}}))
			return Options{}
		}, false, true},
		{"checkpointer", func(t *testing.T, fsys vfs.FS, dir string) Options {
			return Options{checkpoints: &mapCheckpointer{m: map[string]int64{RecoveryPointFile: 1 << 40, CleanerOffsetFile: 3}, clean: true}}
		}, true, false},
		{"checkpointer without one", func(t *testing.T, fsys vfs.FS, dir string) Options {
			return Options{checkpoints: &mapCheckpointer{m: map[string]int64{RecoveryPointFile: 1 << 40}, clean: true}}
		}, false, false},
	}
	for _, gm := range gapMakers {
		for _, mk := range marks {
			t.Run(gm.name+"/"+mk.name, func(t *testing.T) {
				fsys := vfs.NewMem()
				dir := "/data/events-2" // a Kafka partition directory
				bases, end := gapLog(t, fsys, dir)
				from, to := gm.make(t, fsys, dir, bases[3]), bases[4]
				o := mk.mark(t, fsys, dir)
				o.FS, o.Logger = fsys, discardLogger()
				for _, ro := range []bool{false, true} {
					if ro && o.checkpoints != nil {
						continue // a read-only open ignores a Checkpointer
					}
					o.ReadOnly = ro
					l, err := Open(dir, o)
					if !ro && mk.logDir {
						if !errors.Is(err, ErrInLogDir) {
							t.Fatalf("writable open of a log.dir's partition: %v, want ErrInLogDir", err)
						}
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					what := fmt.Sprintf("readonly=%v", ro)
					if mk.compacted && !gm.indexed {
						// Nothing between from and to; everything else.
						if n := countRecords(t, l); n != end-(to-from) {
							t.Fatalf("%s: %d records, want %d", what, n, end-(to-from))
						}
						if n := countSliced(t, l); n != end-(to-from) {
							t.Fatalf("%s: slices hold %d records, want %d", what, n, end-(to-from))
						}
					} else {
						got, rerr := readUntil(t, l, 0)
						_, serr := readSlices(t, l, 0)
						wantMissing(t, what+": Records", rerr, dir, from, to)
						wantMissing(t, what+": Read", serr, dir, from, to)
						if got != from {
							t.Fatalf("%s: delivered up to %d, want %d", what, got, from)
						}
					}
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

// countRecords counts the records Records yields from the start, failing
// at an error.
func countRecords(t *testing.T, l *Log) int64 {
	t.Helper()
	var n int64
	for _, err := range l.Records(l.StartOffset()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// countSliced counts the records in the slices Read returns from the
// start to the end, failing at an error.
func countSliced(t *testing.T, l *Log) int64 {
	t.Helper()
	var n int64
	for next := l.StartOffset(); next < l.EndOffset(); {
		sl, err := l.Read(next, 1<<20, ReadOptions{})
		if err != nil {
			t.Fatalf("Read(%d): %v", next, err)
		}
		for _, b := range sliceBatches(t, sl) {
			n += int64(b.NumRecords())
		}
		next = sl.LastOffset() + 1
		sl.Close()
	}
	return n
}

// TestMissingDataBelowStartIsGone: a gap wholly below the log start is not
// missing data (those offsets are gone anyway); one the start lies in is
// reported from the start.
func TestMissingDataBelowStartIsGone(t *testing.T) {
	fsys := vfs.NewMem()
	dir := "/data/log"
	bases, end := gapLog(t, fsys, dir)
	from, to := gapMakers[1].make(t, fsys, dir, bases[3]), bases[4]
	l, err := Open(dir, Options{FS: fsys, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	mid := (from + to) / 2
	if _, err := l.DeleteBefore(mid); err != nil {
		t.Fatal(err)
	}
	_, err = readUntil(t, l, l.StartOffset())
	wantMissing(t, "start inside the gap", err, dir, l.StartOffset(), to)
	if _, err := l.DeleteBefore(to); err != nil {
		t.Fatal(err)
	}
	if got, err := readUntil(t, l, l.StartOffset()); err != nil || got != end {
		t.Fatalf("start past the gap: read to %d, %v", got, err)
	}
}

// TestCompactedGapsSurviveRecovery: after a crash, recovery (and the
// read-only view) takes a segment that ends before the next one begins
// for one that lost its tail only in a log never compacted: there the
// later segments leave the log for quarantine files (the offsets must stay
// contiguous). In a compacted log such a gap is compaction's and every
// segment stays, as Kafka keeps them: setting them aside would take valid
// records out of the log on a guess.
func TestCompactedGapsSurviveRecovery(t *testing.T) {
	for _, compacted := range []bool{false, true} {
		t.Run(fmt.Sprintf("compacted=%v", compacted), func(t *testing.T) {
			fsys := vfs.NewMem()
			dir := "/log"
			bases, end := gapLog(t, fsys, dir)
			// The whole segment at bases[3] is gone: the one before it
			// ends at bases[3], the next begins at bases[4].
			gapMakers[1].make(t, fsys, dir, bases[3])
			if compacted {
				vfstest.WriteFile(t, fsys, filepath.Join(dir, CleanerOffsetFile),
					layout.FormatCheckpoint([]layout.CheckpointEntry{{Topic: "log", Offset: bases[1]}}))
			}
			// A crash: no clean-shutdown marker, nothing known synced.
			if err := fsys.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
				t.Fatal(err)
			}
			vfstest.WriteFile(t, fsys, filepath.Join(dir, RecoveryPointFile),
				layout.FormatCheckpoint([]layout.CheckpointEntry{{Topic: "log", Offset: 0}}))
			kept := end - (bases[4] - bases[3])

			ro, err := Open(dir, Options{FS: fsys, ReadOnly: true, Logger: discardLogger()})
			if compacted {
				if err != nil {
					t.Fatalf("read-only view: %v", err)
				}
				if n := countRecords(t, ro); n != kept {
					t.Fatalf("read-only view: %d records, want %d", n, kept)
				}
				ro.Close()
			} else if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read-only view of a log never compacted: %v, want the gap reported as damage a writable open cuts", err)
			}

			l, err := Open(dir, Options{FS: fsys, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			names, err := fsys.List(dir)
			if err != nil {
				t.Fatal(err)
			}
			quarantined := 0
			for _, n := range names {
				if layout.IsQuarantine(n) {
					quarantined++
				}
			}
			if compacted {
				if quarantined != 0 || l.NumSegments() != len(bases)-1 || l.EndOffset() != end {
					t.Fatalf("compacted log: %d quarantine files, %d segments, end %d; want 0, %d, %d (%v)",
						quarantined, l.NumSegments(), l.EndOffset(), len(bases)-1, end, names)
				}
				if n := countRecords(t, l); n != kept {
					t.Fatalf("%d records, want %d", n, kept)
				}
			} else if quarantined != len(bases)-4 || l.EndOffset() != bases[3] {
				t.Fatalf("log never compacted: %d quarantine files, end %d; want %d, %d (%v)",
					quarantined, l.EndOffset(), len(bases)-4, bases[3], names)
			}
		})
	}
}
