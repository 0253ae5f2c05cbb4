package fsck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestKafkaRecoveryPoint checks that repair of a Kafka partition directory
// takes its recovery point from the log.dir's checkpoint line for the
// partition (and everything as synced under the log.dir's clean-shutdown
// marker) unless the directory has a checkpoint of its own, as Open does:
// a torn tail below it is reported and left, one past it is cut, and the
// other partitions' lines are never rewritten.
func TestKafkaRecoveryPoint(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rp     string // this partition's line offset
		own    string // the directory's own checkpoint, if any
		marker bool
		cut    bool
	}{
		{name: "below the log.dir's recovery point", rp: "1000000"},
		{name: "under the log.dir's clean-shutdown marker", rp: "0", marker: true},
		{name: "past the log.dir's recovery point", rp: "0", cut: true},
		// As Open reads them: the directory's own checkpoint comes first.
		{name: "past the directory's own recovery point", rp: "1000000", own: "0\n1\nevents 0 0\n", cut: true},
		{name: "below the directory's own recovery point", rp: "0", own: "0\n1\nevents 0 1000000\n"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			fsys := vfs.NewMem()
			dir := kafkaDir(t, fsys, "none")
			name := layout.FileName(0, ".log")
			data := vfstest.ReadFile(t, fsys, filepath.Join(dir, name))
			starts := batchStarts(t, data)
			torn := starts[len(starts)-1]
			vfstest.WriteFile(t, fsys, filepath.Join(dir, name), data[:torn+40])
			cp := fmt.Sprintf("0\n3\nother 0 7\nevents 0 %s\nevents 1 9\n", tc.rp)
			vfstest.WriteFile(t, fsys, "/kafka-logs/recovery-point-offset-checkpoint", []byte(cp))
			if tc.marker {
				vfstest.WriteFile(t, fsys, "/kafka-logs/.kafka_cleanshutdown", nil)
			}
			if tc.own != "" {
				vfstest.WriteFile(t, fsys, filepath.Join(dir, "recovery-point-offset-checkpoint"), []byte(tc.own))
			}
			r, err := Repair(fsys, dir, RepairOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := vfstest.ReadFile(t, fsys, filepath.Join(dir, name))
			if tc.cut {
				if !bytes.Equal(got, data[:torn]) {
					t.Fatalf("torn tail past the recovery point: %d bytes left, want %d:%s", len(got), torn, dumpProblems(r))
				}
			} else {
				if int64(len(got)) != torn+40 {
					t.Fatalf("damage below the recovery point was cut: %d bytes left, want %d", len(got), torn+40)
				}
				p := problemAt(r, name, torn, KindBadLength)
				if p.Repaired || !strings.Contains(p.Detail, "below the recovery point") {
					t.Fatalf("damage below the recovery point not reported as such:%s", dumpProblems(r))
				}
			}
			// Repair may lower this partition's line (only when no damage
			// remains), never another's.
			after := string(vfstest.ReadFile(t, fsys, "/kafka-logs/recovery-point-offset-checkpoint"))
			if !strings.Contains(after, "other 0 7\n") || !strings.Contains(after, "events 1 9\n") {
				t.Fatalf("other partitions' lines rewritten:\n%s", after)
			}
			if !tc.cut && after != cp {
				t.Fatalf("checkpoint changed while damage remains:\n%s", after)
			}
		})
	}
}

// TestDamagePositionMatchesEngine checks that fsck reports damage where the
// engine does: for a CRC flipped in the middle of a batch and for a bad
// length field below the recovery point, fsck's problem is at the damaged
// batch's start and its message names the file position of the field at
// fault; the Log's *CorruptionError (from Open) and the engine's segment
// recovery must report one of those two positions. (On main Open reports
// the batch start and segment.Recover the field; the recovery branch
// reports the field in both.)
func TestDamagePositionMatchesEngine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  Kind
		field int64 // the damaged field's offset in the batch
		hurt  func(b []byte)
	}{
		{"crc flip mid-batch", KindCRC, 17, func(b []byte) { b[70] ^= 1 }},
		{"bad length field", KindBadLength, 8, func(b []byte) { binary.BigEndian.PutUint32(b[8:], 5) }},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			fsys := vfs.NewMem()
			writeLog(t, fsys, "/p", record.None, 30, 2)
			logs := logFiles(t, fsys, "/p")
			name := logs[len(logs)-1]
			path := filepath.Join("/p", name)
			data := vfstest.ReadFile(t, fsys, path)
			starts := batchStarts(t, data)
			p := starts[2]
			tc.hurt(data[p:])
			vfstest.WriteFile(t, fsys, path, data)
			crash(t, fsys, "/p", 60) // every batch synced: Open must report, not cut

			r := mustCheck(t, fsys, "/p", Options{})
			prob := problemAt(r, name, p, tc.kind)
			if prob.Kind == "" {
				t.Fatalf("want %s at byte %d:%s", tc.kind, p, dumpProblems(r))
			}
			if !strings.Contains(prob.Detail, fmt.Sprintf("at byte %d", p+tc.field)) {
				t.Errorf("detail does not name the field at byte %d: %s", p+tc.field, prob.Detail)
			}

			_, err := seglog.Open("/p", seglog.Options{FS: fsys})
			var ce *seglog.CorruptionError
			if !errors.As(err, &ce) {
				t.Fatalf("Open: %v, want a *CorruptionError", err)
			}
			if ce.Pos != prob.Position && ce.Pos != p+tc.field {
				t.Fatalf("Open reports byte %d, fsck byte %d (field at byte %d)", ce.Pos, prob.Position, p+tc.field)
			}
			if got := vfstest.ReadFile(t, fsys, path); !bytes.Equal(got, data) {
				t.Fatalf("Open changed the damaged .log")
			}

			_, base, _ := FileKind(name)
			seg, err := segment.Open(fsys, "/p", base, false, segment.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer seg.Close()
			res, err := seg.Recover(segment.RecoverOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var rce *record.CorruptionError
			if !errors.As(res.Reason, &rce) || (rce.Pos != p && rce.Pos != p+tc.field) {
				t.Fatalf("segment recovery reports %v, want byte %d or %d", res.Reason, p, p+tc.field)
			}
		})
	}
}

// TestTailFragmentKind checks that a fragment shorter than an entry header
// at the end of the log is a torn-tail warning, cut by repair, past the
// recovery point, and a bad-length error, left alone, below it.
func TestTailFragmentKind(t *testing.T) {
	for _, synced := range []bool{false, true} {
		fsys := vfs.NewMem()
		writeLog(t, fsys, "/p", record.None, 30, 2)
		logs := logFiles(t, fsys, "/p")
		name := logs[len(logs)-1]
		path := filepath.Join("/p", name)
		data := vfstest.ReadFile(t, fsys, path)
		frag := append(append([]byte(nil), data...), 0, 0, 0, 0, 0, 0, 0, 9, 0, 0)
		vfstest.WriteFile(t, fsys, path, frag)
		rp := int64(60) // the end: the fragment lies past it
		if synced {
			rp = 1 << 40
		}
		crash(t, fsys, "/p", rp)
		want, sev := KindTornTail, Warning
		if synced {
			want, sev = KindBadLength, Error
		}
		r, err := Repair(fsys, "/p", RepairOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := problemAt(r, name, int64(len(data)), want)
		if p.Kind == "" || p.Severity != sev || p.Repaired == synced {
			t.Fatalf("synced %v: want %s (%s, repaired %v) at byte %d:%s", synced, want, sev, !synced, len(data), dumpProblems(r))
		}
		if got := vfstest.ReadFile(t, fsys, path); (synced && !bytes.Equal(got, frag)) || (!synced && !bytes.Equal(got, data)) {
			t.Fatalf("synced %v: %d bytes after repair", synced, len(got))
		}
	}
}
