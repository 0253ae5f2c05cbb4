package seglog

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestReadOnlyKafkaLogDir: a read-only open judges a Kafka log.dir's
// partition by the broker's checkpoints as a writable open does (damage
// below its recovery point reported, its log start honoured), refuses the
// log.dir itself, and changes nothing anywhere.
func TestReadOnlyKafkaLogDir(t *testing.T) {
	t.Run("log.dir refused", func(t *testing.T) {
		fs, _, _ := kafkaLogDir(t, true, 0)
		before := dirSnapshot(t, fs, "/kafka")
		_, err := Open("/kafka", Options{FS: fs, ReadOnly: true})
		if !errors.Is(err, ErrNotALog) {
			t.Fatalf("read-only open of a log.dir = %v, want ErrNotALog", err)
		}
		vfstest.Unchanged(t, "the log.dir", before, dirSnapshot(t, fs, "/kafka"))
	})
	t.Run("damage below the broker's recovery point", func(t *testing.T) {
		fs, part, _ := kafkaLogDir(t, false, 0)
		bases := segmentBases(t, fs, part)
		path := filepath.Join(part, segment.FileName(bases[len(bases)-1], segment.LogSuffix))
		flipBytes(t, fs, path, record.HeaderSize+5)
		before := dirSnapshot(t, fs, "/kafka")
		_, err := Open(part, Options{FS: fs, ReadOnly: true})
		var ce *CorruptionError
		if !errors.As(err, &ce) || ce.File != path || !strings.Contains(err.Error(), "fsck") {
			t.Fatalf("read-only open = %v, want a *CorruptionError in %s", err, path)
		}
		vfstest.Unchanged(t, "the log.dir", before, dirSnapshot(t, fs, "/kafka"))
	})
	t.Run("log start from the log.dir", func(t *testing.T) {
		fs, part, end := kafkaLogDir(t, false, 9)
		before := dirSnapshot(t, fs, "/kafka")
		l, err := Open(part, Options{FS: fs, ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if l.StartOffset() != 9 || l.EndOffset() != end {
			t.Fatalf("view [%d, %d), want [9, %d)", l.StartOffset(), l.EndOffset(), end)
		}
		for r, err := range l.Records(9) {
			if err != nil || r.Offset != 9 {
				t.Fatalf("first record from 9: offset %d, %v", r.Offset, err)
			}
			break
		}
		l.Close()
		vfstest.Unchanged(t, "the log.dir", before, dirSnapshot(t, fs, "/kafka"))
	})
}

// TestReadOnlyRefusesSwap: a .swap a writable open would complete (no
// .cleaned at or below it) cannot be viewed without renaming files: the
// read-only open refuses it, naming it, and changes nothing. One a writable
// open would delete (an unfinished compaction) is ignored.
func TestReadOnlyRefusesSwap(t *testing.T) {
	fs := vfs.NewMem()
	w := writeLog(t, fs, "/log", 100, 5)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	bases := segmentBases(t, fs, "/log")
	log1 := vfstest.ReadFile(t, fs, filepath.Join("/log", segment.FileName(bases[1], segment.LogSuffix)))
	swap := segment.FileName(bases[1], segment.LogSuffix+segment.SwapSuffix)
	vfstest.WriteFile(t, fs, filepath.Join("/log", swap), log1)
	before := dirSnapshot(t, fs, "/log")
	_, err := Open("/log", roOptions(fs))
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), swap) {
		t.Fatalf("read-only open beside %s = %v, want ErrReadOnly naming it", swap, err)
	}
	vfstest.Unchanged(t, "refused open", before, dirSnapshot(t, fs, "/log"))

	vfstest.WriteFile(t, fs, filepath.Join("/log", segment.FileName(bases[0], segment.LogSuffix+segment.CleanedSuffix)), log1)
	l, err := Open("/log", roOptions(fs))
	if err != nil {
		t.Fatalf("read-only open beside an unfinished compaction's files: %v", err)
	}
	checkRecords(t, l, 0, 100)
	l.Close()
}
