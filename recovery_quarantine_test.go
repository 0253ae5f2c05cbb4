package seglog

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// issueLog writes the log of issue 26's reproductions: records in batches
// of ten, over several segments, closed cleanly. It returns the segments'
// bases and the end offset.
func issueLog(t *testing.T, fs vfs.FS, dir string, records int) ([]int64, int64) {
	t.Helper()
	l, err := Open(dir, Options{FS: fs, LogConfig: LogConfig{SegmentBytes: 64 << 10}, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for l.EndOffset() < int64(records) {
		if _, err := l.Append(recordsAt(l.EndOffset(), 10)...); err != nil {
			t.Fatal(err)
		}
	}
	end := l.EndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, bases := layout.SegmentFiles(names)
	if len(bases) < 3 {
		t.Fatalf("%d segments, want several", len(bases))
	}
	return bases, end
}

// quarantineFiles lists dir's quarantine files.
func quarantineFiles(t *testing.T, fs vfs.FS, dir string) []string {
	t.Helper()
	names, err := fs.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(names, func(n string) bool { return !layout.IsQuarantine(n) })
}

// TestIssue26FlippedByteKeepsEveryValidBatch is issue 26 item 3b: no
// clean-shutdown marker, recovery point 0, one byte flipped early in the
// first segment. Kafka (and seglog before) cut the log at the damage and
// deleted every valid batch after it, logging a WARN. Now the log is still
// cut there, but nothing valid is deleted: the rest of the first segment
// is kept byte for byte in a quarantine file, every later segment is
// renamed to one, each is logged and handed to OnQuarantine, and a second
// Open quarantines nothing more.
func TestIssue26FlippedByteKeepsEveryValidBatch(t *testing.T) {
	for _, fsName := range []string{"os", "mem"} {
		t.Run(fsName, func(t *testing.T) {
			fs, dir := vfs.FS(vfs.NewMem()), "/data/log"
			if fsName == "os" {
				fs, dir = vfs.Default, filepath.Join(t.TempDir(), "log")
			}
			bases, end := issueLog(t, fs, dir, 2900)
			logPath := func(base int64) string { return filepath.Join(dir, segment.FileName(base, segment.LogSuffix)) }
			first := logPath(bases[0])
			data := vfstest.ReadFile(t, fs, first)
			firstBatch := int64(binary.BigEndian.Uint32(data[8:])) + 12
			flipBytes(t, fs, first, firstBatch+70) // inside the second batch's records
			if err := fs.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
				t.Fatal(err)
			}
			if err := layout.WriteCheckpoint(fs, filepath.Join(dir, RecoveryPointFile), []layout.CheckpointEntry{{Topic: "log", Offset: 0}}); err != nil {
				t.Fatal(err)
			}
			before := map[string][]byte{}
			for _, b := range bases {
				before[logPath(b)] = vfstest.ReadFile(t, fs, logPath(b))
			}

			var logged bytes.Buffer
			var events []Quarantine
			opts := Options{FS: fs, Logger: slog.New(slog.NewTextHandler(&logged, nil)),
				OnQuarantine: func(q Quarantine) { events = append(events, q) }}
			l, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			if l.EndOffset() != 10 || l.NumSegments() != 1 {
				t.Fatalf("end %d, %d segments; want the cut at offset 10, one segment", l.EndOffset(), l.NumSegments())
			}
			checkIssueRecords(t, l, 0, 10)
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}

			// The rest of the first segment, then every later one.
			if len(events) != len(bases) {
				t.Fatalf("%d quarantines, want %d: %v", len(events), len(bases), events)
			}
			var records int64
			for i, q := range events {
				src, pos := first, firstBatch
				if i > 0 {
					src, pos = logPath(bases[i]), 0
				}
				base := bases[i]
				if q.Source != src || q.Pos != pos || q.File != filepath.Join(dir, layout.QuarantineName(base, pos, 0)) || (i == 0) != (q.Reason != nil) {
					t.Fatalf("quarantine %d: %+v, want %s from byte %d", i, q, src, pos)
				}
				if got := vfstest.ReadFile(t, fs, q.File); !bytes.Equal(got, before[src][pos:]) {
					t.Fatalf("%s does not hold %s from byte %d byte for byte", q.File, src, pos)
				}
				records += q.Records
			}
			// Every record but the damaged batch's ten is in a quarantine.
			if records != end-20 || events[len(events)-1].LastOffset != end-1 {
				t.Fatalf("the quarantines hold %d records up to offset %d; want %d up to %d", records, events[len(events)-1].LastOffset, end-20, end-1)
			}
			if n := strings.Count(logged.String(), "quarantine file"); n != len(bases) {
				t.Fatalf("%d quarantines logged, want %d:\n%s", n, len(bases), logged.String())
			}
			for _, b := range bases[1:] {
				for _, suffix := range []string{segment.LogSuffix, segment.IndexSuffix, segment.TimeIndexSuffix} {
					if _, err := fs.Stat(filepath.Join(dir, segment.FileName(b, suffix))); err == nil {
						t.Fatalf("segment %d's %s is still there", b, suffix)
					}
				}
			}

			// Reopened (after a clean close, and after an unclean one):
			// nothing more goes to quarantine, and the files stay.
			files := quarantineFiles(t, fs, dir)
			for _, clean := range []bool{true, false} {
				if !clean {
					if err := fs.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
						t.Fatal(err)
					}
				}
				events = nil
				l, err = Open(dir, opts)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := l.Append(recordsAt(l.EndOffset(), 3)...); err != nil {
					t.Fatal(err)
				}
				checkIssueRecords(t, l, 0, l.EndOffset())
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if len(events) != 0 || !slices.Equal(quarantineFiles(t, fs, dir), files) {
					t.Fatalf("reopen (clean %v): quarantined again: %v", clean, events)
				}
			}
		})
	}
}

// checkIssueRecords reads [from, end) and checks every record's value.
func checkIssueRecords(t *testing.T, l *Log, from, end int64) {
	t.Helper()
	next := from
	for r, err := range l.Records(from) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset != next || (r.Offset < 2900 && !bytes.Equal(r.Value, crashValue(r.Offset, len(r.Value)))) {
			t.Fatalf("offset %d after %d, or a value never written", r.Offset, next-1)
		}
		next++
	}
	if next != end {
		t.Fatalf("read up to %d, want %d", next, end)
	}
}

// TestIssue26LogStartBeyondEndDeletesNothing is issue 26 item 3a: a
// log-start-offset checkpoint beyond the end of the log. Kafka (and seglog
// before) deleted every segment and started empty there (`echo x | seglog
// produce DIR` lost all 2,900 records). Now Open, writable or read-only,
// clean or not, fails with a *LogStartError naming the checkpoint file,
// its offset and the log's end, and changes nothing.
func TestIssue26LogStartBeyondEndDeletesNothing(t *testing.T) {
	fs, dir := vfs.NewMem(), "/data/log"
	_, end := issueLog(t, fs, dir, 2900)
	ckpt := filepath.Join(dir, LogStartOffsetFile)
	if err := layout.WriteCheckpoint(fs, ckpt, []layout.CheckpointEntry{{Topic: "log", Offset: end + 100}}); err != nil {
		t.Fatal(err)
	}
	for _, clean := range []bool{true, false} {
		if !clean {
			if err := fs.Remove(filepath.Join(dir, CleanShutdownFile)); err != nil {
				t.Fatal(err)
			}
		}
		for _, readOnly := range []bool{false, true} {
			before := dirSnapshot(t, fs, dir)
			l, err := Open(dir, Options{FS: fs, ReadOnly: readOnly, Logger: discardLogger()})
			if err == nil {
				l.Close()
			}
			var lse *LogStartError
			if !errors.Is(err, ErrLogStartBeyondEnd) || !errors.As(err, &lse) || lse.File != ckpt || lse.LogStart != end+100 || lse.End != end {
				t.Fatalf("clean %v, read-only %v: %v; want a *LogStartError for %s: %d beyond %d", clean, readOnly, err, ckpt, end+100, end)
			}
			vfstest.Unchanged(t, "refused open", before, dirSnapshot(t, fs, dir))
		}
	}
	// With the checkpoint corrected, every record is there.
	if err := layout.WriteCheckpoint(fs, ckpt, []layout.CheckpointEntry{{Topic: "log", Offset: 0}}); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir, Options{FS: fs, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	checkIssueRecords(t, l, 0, end)
}

// TestLogStartBeyondEndInKafkaLogDir: a read-only open of a partition of a
// Kafka log.dir names the log.dir's line for the partition as the
// checkpoint; a writable open is refused before it reads the segments
// (only the store writes a log.dir's partitions). Neither changes anything.
func TestLogStartBeyondEndInKafkaLogDir(t *testing.T) {
	fs, part, end := kafkaLogDir(t, true, 1<<20)
	before := dirSnapshot(t, fs, "/kafka")
	_, err := Open(part, Options{FS: fs, ReadOnly: true, Logger: discardLogger()})
	var lse *LogStartError
	if !errors.As(err, &lse) || lse.File != "/kafka/"+LogStartOffsetFile || lse.End != end || lse.LogStart != 1<<20 {
		t.Fatalf("%v: want a *LogStartError naming the log.dir's checkpoint", err)
	}
	if _, err := Open(part, Options{FS: fs, Logger: discardLogger()}); !errors.Is(err, ErrInLogDir) {
		t.Fatalf("writable open: %v, want ErrInLogDir", err)
	}
	vfstest.Unchanged(t, "refused open", before, dirSnapshot(t, fs, "/kafka"))
}
