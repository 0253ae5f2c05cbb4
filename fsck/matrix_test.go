package fsck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// damageCase injects one kind of damage into a fresh log and says where it
// must be reported.
type damageCase struct {
	name string
	// inject damages the log in dir and returns the file and byte position
	// the problem must be reported at, and how many records (from offset 0)
	// must survive a repair.
	inject func(t *testing.T, m *mutator) (file string, pos int64, keep int)
	kind   Kind
	// midLog damage needs TruncateDamaged; unfixable is never repaired.
	midLog, unfixable bool
	deep              bool
}

// mutator edits the files of a test log.
type mutator struct {
	t    *testing.T
	fs   vfs.FS
	dir  string
	logs []string
	orig map[string][]byte // the .log files before any damage
}

func (m *mutator) path(name string) string { return filepath.Join(m.dir, name) }
func (m *mutator) read(name string) []byte { return readAll(m.t, m.fs, m.path(name)) }
func (m *mutator) write(name string, b []byte) {
	writeFile(m.t, m.fs, m.path(name), b)
}
func (m *mutator) lastLog() string { return m.logs[len(m.logs)-1] }
func (m *mutator) idx(log string) string {
	return strings.TrimSuffix(log, ".log") + ".index"
}
func (m *mutator) tidx(log string) string {
	return strings.TrimSuffix(log, ".log") + ".timeindex"
}

// recordsBefore counts the records of the batches in the given .log files
// (all of the earlier segments) plus those before pos in the last one.
func (m *mutator) recordsBefore(log string, pos int64) int {
	n := 0
	for _, l := range m.logs {
		data := m.orig[l]
		for _, p := range batchStarts(m.t, data) {
			if l == log && p >= pos {
				return n
			}
			n += int(record.Batch(data[p:]).NumRecords())
		}
		if l == log {
			return n
		}
	}
	return n
}

// batch returns the k-th batch position of a .log (negative k counts from
// the end) and the file's bytes.
func (m *mutator) batch(log string, k int) (int64, []byte) {
	data := m.read(log)
	starts := batchStarts(m.t, data)
	if k < 0 {
		k += len(starts)
	}
	return starts[k], data
}

func damageCases() []damageCase {
	return []damageCase{
		{name: "torn tail", kind: KindTornTail, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			l := m.lastLog()
			p, data := m.batch(l, -1)
			m.write(l, data[:p+30])
			return l, p, m.recordsBefore(l, p)
		}},
		{name: "zero-filled tail", kind: KindTornTail, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			l := m.lastLog()
			data := m.read(l)
			m.write(l, append(data, make([]byte, 4096)...))
			return l, int64(len(data)), m.recordsBefore(l, 1<<40)
		}},
		{name: "crc at tail", kind: KindCRC, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			l := m.lastLog()
			p, data := m.batch(l, -1)
			data[p+70] ^= 0x40
			m.write(l, data)
			return l, p, m.recordsBefore(l, p)
		}},
		{name: "crc mid-log", kind: KindCRC, midLog: true, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			l := m.logs[0]
			p, data := m.batch(l, 2)
			data[p+record.HeaderSize+3] ^= 0x01
			m.write(l, data)
			return l, p, m.recordsBefore(l, p)
		}},
		{name: "short length mid-log", kind: KindBadLength, midLog: true, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			l := m.logs[1]
			p, data := m.batch(l, 1)
			binary.BigEndian.PutUint32(data[p+8:], 5)
			m.write(l, data)
			return l, p, m.recordsBefore(l, p)
		}},
		{name: "huge length mid-log", kind: KindBadLength, midLog: true, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			l := m.logs[0]
			p, data := m.batch(l, 1)
			binary.BigEndian.PutUint32(data[p+8:], 0x7fffffff)
			m.write(l, data)
			return l, p, m.recordsBefore(l, p)
		}},
		{name: "bad magic", kind: KindBadMagic, midLog: true, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			l := m.logs[0]
			p, data := m.batch(l, 3)
			data[p+16] = 7
			m.write(l, data)
			return l, p, m.recordsBefore(l, p)
		}},
		{name: "unknown codec", kind: KindBadHeader, midLog: true, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			l := m.logs[0]
			p, data := m.batch(l, 1)
			data[p+22] |= 0x07
			b := record.Batch(data[p : p+int64(record.Batch(data[p:]).Size())])
			binary.BigEndian.PutUint32(b[17:], b.ComputeCRC())
			m.write(l, data)
			return l, p, m.recordsBefore(l, p)
		}},
		{name: "offsets go backwards", kind: KindOffsetOrder, midLog: true, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			l := m.logs[0]
			p, data := m.batch(l, 2)
			// The base offset is outside the CRC, so the batch stays valid.
			binary.BigEndian.PutUint64(data[p:], 1)
			m.write(l, data)
			return l, p, m.recordsBefore(l, p)
		}},
		{name: "segment below its base offset", kind: KindOffsetOrder, midLog: true, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			l := m.logs[1]
			p, data := m.batch(l, 0)
			base := record.Batch(data).BaseOffset()
			binary.BigEndian.PutUint64(data[p:], uint64(base-1))
			m.write(l, data)
			return l, p, m.recordsBefore(l, p)
		}},
		{name: "offsets reach the next segment", kind: KindOffsetRange, midLog: true, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			l := m.logs[0]
			p, data := m.batch(l, -1)
			next := m.read(m.logs[1])
			binary.BigEndian.PutUint64(data[p:], uint64(record.Batch(next).BaseOffset()))
			m.write(l, data)
			return l, p, m.recordsBefore(l, p)
		}},
		{name: "bad record framing (deep)", kind: KindBadRecords, midLog: true, deep: true, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			l := m.logs[0]
			p, data := m.batch(l, 1)
			b := record.Batch(data[p : p+int64(record.Batch(data[p:]).Size())])
			binary.BigEndian.PutUint32(b[57:], uint32(b.NumRecords()+1)) // count one record too many
			binary.BigEndian.PutUint32(b[17:], b.ComputeCRC())
			m.write(l, data)
			return l, p, m.recordsBefore(l, p)
		}},
		{name: "record offsets out of order (deep)", kind: KindBadRecords, midLog: true, deep: true, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			l := m.logs[0]
			p, data := m.batch(l, 1)
			b := record.Batch(data[p : p+int64(record.Batch(data[p:]).Size())])
			// Uncompressed record 0: length, attributes, timestamp delta
			// (one byte each here), then the offset delta, zig-zag 0 -> 2.
			if b[record.HeaderSize+3] != 0 {
				t.Fatalf("unexpected record layout")
			}
			b[record.HeaderSize+3] = 8 // offset delta 4: above record 1's
			binary.BigEndian.PutUint32(b[17:], b.ComputeCRC())
			m.write(l, data)
			return l, p, m.recordsBefore(l, p)
		}},
		{name: "index missing", kind: KindIndexMissing, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := m.idx(m.logs[1])
			if err := m.fs.Remove(m.path(name)); err != nil {
				t.Fatal(err)
			}
			return name, 0, -1
		}},
		{name: "timeindex missing", kind: KindIndexMissing, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := m.tidx(m.lastLog())
			if err := m.fs.Remove(m.path(name)); err != nil {
				t.Fatal(err)
			}
			return name, 0, -1
		}},
		{name: "index size", kind: KindIndexSize, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := m.idx(m.logs[0])
			data := m.read(name)
			m.write(name, append(data, 1, 2, 3))
			return name, int64(len(data)), -1
		}},
		{name: "index entry wrong offset", kind: KindIndexEntry, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := m.idx(m.logs[0])
			data := m.read(name)
			// The second entry names the offset just after the first's,
			// which lies in an earlier batch than the one it points at.
			binary.BigEndian.PutUint32(data[8:], binary.BigEndian.Uint32(data)+1)
			m.write(name, data)
			return name, 8, -1
		}},
		{name: "index entry wrong position", kind: KindIndexEntry, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := m.idx(m.logs[0])
			data := m.read(name)
			binary.BigEndian.PutUint32(data[4:], binary.BigEndian.Uint32(data[4:])+1)
			m.write(name, data)
			return name, 0, -1
		}},
		{name: "index order", kind: KindIndexOrder, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := m.idx(m.logs[0])
			data := m.read(name)
			copy(data[8:16], data[0:8])
			m.write(name, data)
			return name, 8, -1
		}},
		{name: "index contains rule", kind: KindIndexContains, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := m.idx(m.logs[0])
			data := m.read(name)
			rel := binary.BigEndian.Uint32(data)
			binary.BigEndian.PutUint32(data, rel-1) // still inside the 5-record batch
			m.write(name, data)
			return name, 0, -1
		}},
		{name: "index entry of a multi-batch append", kind: KindIndexContains, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			// Kafka 3.x indexed a follower's append of several batches by
			// the append's last offset and its first batch's position.
			name := m.idx(m.logs[0])
			data := m.read(name)
			log := m.orig[m.logs[0]]
			p0 := int64(binary.BigEndian.Uint32(data[4:]))
			p1 := int64(binary.BigEndian.Uint32(data[12:]))
			starts := batchStarts(t, log)
			for k, p := range starts {
				if p == p0 && starts[k+1] < p1 {
					next := record.Batch(log[starts[k+1]:])
					binary.BigEndian.PutUint32(data, uint32(next.LastOffset())) // segment 0: relative = absolute
					m.write(name, data)
					return name, 0, -1
				}
			}
			t.Fatal("no two batches between the first two index entries")
			return "", 0, 0
		}},
		{name: "index untrimmed", kind: KindIndexTrim, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := m.idx(m.logs[0])
			data := m.read(name)
			m.write(name, append(data, make([]byte, 64)...))
			return name, int64(len(data)), -1
		}},
		{name: "timeindex order", kind: KindIndexOrder, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := m.tidx(m.logs[0])
			data := m.read(name)
			binary.BigEndian.PutUint64(data[12:], binary.BigEndian.Uint64(data)-5)
			m.write(name, data)
			return name, 12, -1
		}},
		{name: "timeindex not the running max", kind: KindIndexEntry, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := m.tidx(m.logs[0])
			data := m.read(name)
			binary.BigEndian.PutUint64(data, binary.BigEndian.Uint64(data)+1)
			m.write(name, data)
			return name, 0, -1
		}},
		{name: "timeindex last entry", kind: KindIndexLast, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := m.tidx(m.logs[0])
			data := m.read(name)
			m.write(name, data[:len(data)-12])
			return name, int64(len(data) - 24), -1
		}},
		{name: "leftover deleted", kind: KindLeftover, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := m.logs[0] + ".deleted"
			m.write(name, []byte("old"))
			return name, 0, -1
		}},
		{name: "leftover cleaned", kind: KindLeftover, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := m.logs[0] + ".cleaned"
			m.write(name, m.read(m.logs[0]))
			return name, 0, -1
		}},
		{name: "leftover swap", kind: KindLeftover, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			// A finished compaction output for segment 0 waiting to be
			// renamed: a copy of the segment.
			name := m.logs[0] + ".swap"
			m.write(name, m.read(m.logs[0]))
			return name, 0, -1
		}},
		{name: "leftover tmp", kind: KindLeftover, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := "recovery-point-offset-checkpoint.tmp"
			m.write(name, []byte("0\n1\n"))
			return name, 0, -1
		}},
		{name: "orphan index", kind: KindOrphanIndex, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := fileName(99_999, ".timeindex")
			m.write(name, make([]byte, 12))
			return name, 0, -1
		}},
		{name: "recovery point beyond end", kind: KindCheckpoint, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			m.write("recovery-point-offset-checkpoint", []byte("0\n1\np 0 123456\n"))
			return "recovery-point-offset-checkpoint", 4, -1
		}},
		{name: "malformed checkpoint", kind: KindCheckpoint, unfixable: true, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			m.write("log-start-offset-checkpoint", []byte("0\n1\np zero 0\n"))
			return "log-start-offset-checkpoint", 4, -1
		}},
		{name: "bad segment name", kind: KindSegmentName, unfixable: true, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			m.write("123.log", nil)
			return "123.log", 0, -1
		}},
		{name: "corrupt snapshot", kind: KindSnapshot, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			name := fileName(100, ".snapshot")
			m.write(name, []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
			return name, 2, -1
		}},
		{name: "bad partition.metadata", kind: KindMetadata, unfixable: true, inject: func(t *testing.T, m *mutator) (string, int64, int) {
			m.write("partition.metadata", []byte("version: 0\ntopic_id: nope\n"))
			return "partition.metadata", 0, -1
		}},
	}
}

// copyDir copies the files of dir from one filesystem to another.
func copyDir(t testing.TB, from, to vfs.FS, dir string) {
	t.Helper()
	if err := to.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	names, err := from.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		writeFile(t, to, p, readAll(t, from, p))
	}
}

func TestCorruptionMatrix(t *testing.T) {
	// One log, written by the Log, copied fresh for every case.
	const dir = "/data/p-0"
	template := vfs.NewMem()
	written := writeLog(t, template, dir, record.None, 120, 5)
	for _, tc := range damageCases() {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			t.Parallel()
			fsys := vfs.NewMem()
			copyDir(t, template, fsys, dir)
			m := &mutator{t: t, fs: fsys, dir: dir, logs: logFiles(t, fsys, dir), orig: map[string][]byte{}}
			for _, l := range m.logs {
				m.orig[l] = m.read(l)
			}
			if len(m.logs) < 3 {
				t.Fatalf("want at least 3 segments, got %d", len(m.logs))
			}
			file, pos, keep := tc.inject(t, m)
			opts := Options{Deep: tc.deep}

			r := mustCheck(t, fsys, dir, opts)
			if !hasProblem(r, file, pos, tc.kind) {
				t.Fatalf("want %s at %s byte %d; got:%s", tc.kind, file, pos, dumpProblems(r))
			}
			if r.ExitCode() != ExitUncorrected {
				t.Fatalf("exit %d before repair, want 4", r.ExitCode())
			}
			if tc.deep && !tc.unfixable {
				if shallow := mustCheck(t, fsys, dir, Options{}); hasProblem(shallow, file, pos, tc.kind) {
					t.Fatalf("a shallow check decoded records")
				}
			}

			if tc.midLog {
				// Without the explicit flag mid-log damage stays.
				rr, err := Repair(fsys, dir, RepairOptions{Options: opts})
				if err != nil {
					t.Fatal(err)
				}
				if rr.ExitCode() != ExitUncorrected || !hasProblem(mustCheck(t, fsys, dir, opts), file, pos, tc.kind) {
					t.Fatalf("mid-log damage repaired without TruncateDamaged (exit %d):%s", rr.ExitCode(), dumpProblems(rr))
				}
				if !strings.Contains(problemAt(r, file, pos, tc.kind).Detail, "records in") {
					t.Errorf("detail does not say how many records truncation drops: %s", problemAt(r, file, pos, tc.kind).Detail)
				}
			}
			rr, err := Repair(fsys, dir, RepairOptions{Options: opts, TruncateDamaged: tc.midLog, IndexIntervalBytes: 512})
			if err != nil {
				t.Fatal(err)
			}
			after := mustCheck(t, fsys, dir, opts)
			if tc.unfixable {
				if rr.ExitCode() != ExitUncorrected || !hasProblem(after, file, pos, tc.kind) {
					t.Fatalf("unfixable problem reported fixed: exit %d:%s", rr.ExitCode(), dumpProblems(rr))
				}
				return
			}
			if rr.ExitCode() != ExitRepaired {
				t.Fatalf("exit %d after repair, want 1:%s", rr.ExitCode(), dumpProblems(rr))
			}
			if !after.Clean() {
				t.Fatalf("second check not clean:%s", dumpProblems(after))
			}
			if keep < 0 {
				keep = len(written)
			}
			got := readRecords(t, fsys, dir)
			if len(got) != keep {
				t.Fatalf("read back %d records, want %d", len(got), keep)
			}
			for i := range got {
				if !bytes.Equal(got[i].Value, written[i].Value) || got[i].Offset != int64(i) {
					t.Fatalf("record %d: offset %d value %q, want %q", i, got[i].Offset, got[i].Value, written[i].Value)
				}
			}
		})
	}
}

func problemAt(r *Report, file string, pos int64, kind Kind) Problem {
	for _, p := range r.Problems {
		if p.File == file && p.Position == pos && p.Kind == kind {
			return p
		}
	}
	return Problem{}
}

func hasProblem(r *Report, file string, pos int64, kind Kind) bool {
	return problemAt(r, file, pos, kind).Kind != ""
}

// readRecords opens the directory with the Log and reads every record.
func readRecords(t testing.TB, fsys vfs.FS, dir string) []record.Record {
	t.Helper()
	l, err := seglog.Open(dir, seglog.Options{FS: fsys, SegmentBytes: 16 << 10, MaxIndexBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out []record.Record
	for rec, err := range l.Records(l.StartOffset()) {
		if err != nil {
			t.Fatalf("reading records: %v", err)
		}
		rec.Value = bytes.Clone(rec.Value)
		rec.Key = bytes.Clone(rec.Key)
		out = append(out, rec)
	}
	return out
}

var _ = fmt.Sprint
