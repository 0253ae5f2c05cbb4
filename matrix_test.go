package seglog_test

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestEngineOnCorruptionMatrix opens every one of fsck's corruption cases
// (fscktest.Cases, in each recovery-point placement for damage in batches)
// with the Log, read-only and read-write:
//
//   - read-only changes no byte of the partition directory or its parent,
//     and what it yields is a prefix of the records written (never a
//     record from past the damage, never a wrong one);
//   - read-write, for damage in synced data (below the recovery point),
//     leaves every .log as it was and reports the damage as ErrCorrupt (at
//     Open, or when the data is read after a clean shutdown, which Open
//     trusts without a scan); for a torn tail (past the recovery point) it
//     cuts only that tail: exactly the records before the damage remain;
//   - damage only a deep check finds (record framing inside a batch whose
//     checksum holds) is kept by recovery wherever the recovery point is,
//     and reading reports it before handing out a record of that batch;
//   - the error's file and byte position are the ones fsck reports;
//   - read-write, for damage outside the batches (indexes, leftovers,
//     checkpoints, names), never changes a .log's bytes, opens and reads
//     every record written, except in the cases fsck calls unfixable (a
//     bad segment name) or that only fsck --repair settles (a malformed
//     checkpoint), which it refuses with the directory unchanged; read-only reads every record too, or refuses
//     those cases and a swap it would have to complete (ErrReadOnly).
func TestEngineOnCorruptionMatrix(t *testing.T) {
	const dir = "/data/p-0"
	template := vfs.NewMem()
	all := writeCaseLog(t, template, dir)
	end := int64(len(all))
	for _, tc := range fscktest.Cases() {
		places := []fscktest.Placement{fscktest.Clean}
		if tc.Data {
			places = fscktest.Placements()
		}
		for _, pl := range places {
			t.Run(strings.ReplaceAll(tc.Name, " ", "_")+"/"+pl.String(), func(t *testing.T) {
				t.Parallel()
				fsys := vfs.NewMem()
				fscktest.CopyDir(t, template, fsys, dir)
				d := fscktest.NewDir(t, fsys, dir)
				dmg := tc.Inject(t, d)
				fscktest.Place(t, fsys, dir, pl, dmg, end)
				below := tc.Data && pl.Below(dmg, end)
				before := fscktest.TakeSnapshot(t, fsys, dir, "/data")

				// Read-only.
				n, err := readChecked(t, fsys, dir, true, all)
				if diff := before.Diff(fscktest.TakeSnapshot(t, fsys, dir, "/data")); len(diff) > 0 {
					t.Fatalf("a read-only open changed files: %v", diff)
				}
				if tc.Data && n > dmg.Keep {
					t.Fatalf("read-only: %d records read, only %d lie before the damage", n, dmg.Keep)
				}
				if below && err == nil && n < len(all) {
					t.Fatalf("read-only: damage below the recovery point ended the read at %d records without an error", n)
				}
				if below && err != nil && !errors.Is(err, seglog.ErrCorrupt) {
					t.Fatalf("read-only: damage below the recovery point: %v, want ErrCorrupt", err)
				}
				if !tc.Data {
					// Outside the batches: every record, or a refusal
					// of what only a writer or fsck may settle (a name
					// or checkpoint no rule fixes, a swap to complete).
					switch {
					case err == nil && n != len(all):
						t.Fatalf("read-only: %d records read, %d written", n, len(all))
					case err != nil && !tc.Unfixable && !tc.Refused && !errors.Is(err, seglog.ErrReadOnly):
						t.Fatalf("read-only: %v; only an unfixable or refused case or a swap to complete may refuse", err)
					}
				}

				// Read-write.
				n, err = readChecked(t, fsys, dir, false, all)
				after := fscktest.TakeSnapshot(t, fsys, dir, "/data")
				logsChanged := func() []string {
					var changed []string
					for _, l := range d.Logs {
						p := filepath.Join(dir, l)
						if !bytes.Equal(before[p], after[p]) {
							changed = append(changed, l)
						}
					}
					return changed
				}
				switch {
				case tc.Deep:
					// Recovery checks framing and checksums, not each
					// record (fsck --deep does): the batch stays, and
					// reading it reports the damage, wherever the
					// recovery point is.
					if ch := logsChanged(); len(ch) > 0 {
						t.Fatalf("damage only a deep check finds: Open changed %v", ch)
					}
					var ce *seglog.CorruptionError
					if !errors.As(err, &ce) || ce.File != filepath.Join(dir, dmg.File) || ce.Pos != dmg.Pos || n > dmg.Keep {
						t.Fatalf("%d records read, err %v; want ErrCorrupt at %s byte %d", n, err, dmg.File, dmg.Pos)
					}
				case below:
					if ch := logsChanged(); len(ch) > 0 {
						t.Fatalf("damage below the recovery point: Open changed %v", ch)
					}
					if !errors.Is(err, seglog.ErrCorrupt) {
						t.Fatalf("damage below the recovery point: %d records read, err %v; want ErrCorrupt", n, err)
					}
					var ce *seglog.CorruptionError
					if !errors.As(err, &ce) || ce.File != filepath.Join(dir, dmg.File) || ce.Pos != dmg.Pos {
						t.Fatalf("the error does not name %s byte %d, where fsck reports the damage: %v", dmg.File, dmg.Pos, err)
					}
				case tc.Data:
					if err != nil {
						t.Fatalf("torn tail past the recovery point: %v", err)
					}
					if n != dmg.Keep {
						t.Fatalf("torn tail: %d records left, want the %d before the damage", n, dmg.Keep)
					}
					for _, l := range d.Logs {
						p := filepath.Join(dir, l)
						if l < dmg.File && !bytes.Equal(before[p], after[p]) {
							t.Fatalf("%s, before the damaged segment, changed", l)
						}
						if l == dmg.File && !bytes.HasPrefix(before[p], after[p]) {
							t.Fatalf("%s was rewritten, not cut", l)
						}
					}
				default:
					if ch := logsChanged(); len(ch) > 0 {
						t.Fatalf("damage outside the batches: Open changed %v", ch)
					}
					if err == nil && n != len(all) {
						t.Fatalf("%d records read, %d written", n, len(all))
					}
					// Recovery fixes every such case but the ones no
					// rule fixes (fsck's Unfixable) and the ones only
					// fsck --repair settles (Refused), which Open
					// refuses with the directory as it was.
					if err != nil && !tc.Unfixable && !tc.Refused {
						t.Fatalf("damage outside the batches that recovery fixes: %v", err)
					}
					if err != nil {
						if diff := before.Diff(after); len(diff) > 0 {
							t.Fatalf("a refused open changed files: %v", diff)
						}
					}
				}
			})
		}
	}
}

// readChecked opens the log (read-only or not), reads every record and closes
// it; it checks each record against the ones written and returns how many
// came back and the first error, from Open or the iteration.
func readChecked(t *testing.T, fsys vfs.FS, dir string, readOnly bool, want []record.Record) (int, error) {
	t.Helper()
	l, err := seglog.Open(dir, seglog.Options{FS: fsys, ReadOnly: readOnly, LogConfig: seglog.LogConfig{
		IndexIntervalBytes: fscktest.IndexIntervalBytes,
		SegmentBytes:       fscktest.SegmentBytes,
		MaxIndexBytes:      fscktest.MaxIndexBytes,
	},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return 0, err
	}
	defer l.Close()
	n := 0
	for r, err := range l.Records(l.StartOffset()) {
		if err != nil {
			return n, err
		}
		if r.Offset != int64(n) || r.Offset >= int64(len(want)) ||
			!bytes.Equal(r.Key, want[n].Key) || !bytes.Equal(r.Value, want[n].Value) || r.Timestamp != want[n].Timestamp {
			t.Fatalf("read-only=%v: record %d is not the one written (offset %d)", readOnly, n, r.Offset)
		}
		n++
	}
	return n, nil
}

// writeCaseLog writes the log the corruption cases damage, as fscktest
// asks.
func writeCaseLog(t *testing.T, fsys vfs.FS, dir string) []record.Record {
	t.Helper()
	clock := time.UnixMilli(1_700_000_000_000)
	l, err := seglog.Open(dir, seglog.Options{
		FS: fsys, LogConfig: seglog.LogConfig{
			SegmentBytes:       fscktest.SegmentBytes,
			IndexIntervalBytes: fscktest.IndexIntervalBytes,
			MaxIndexBytes:      fscktest.MaxIndexBytes,
		},
		Clock: testutil.NowFunc(func() time.Time { clock = clock.Add(time.Millisecond); return clock }),
	})
	if err != nil {
		t.Fatal(err)
	}
	var all []record.Record
	for _, recs := range fscktest.Batches() {
		if _, err := l.Append(recs...); err != nil {
			t.Fatal(err)
		}
		all = append(all, recs...)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return all
}
