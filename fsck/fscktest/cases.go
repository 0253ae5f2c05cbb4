package fscktest

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// The log the corruption cases damage. A test writes it with the Log
// (seglog.Open with these options and a Now that advances one millisecond
// per call, Batches() appended in order, then Close), so that this package
// does not depend on the engine it is used to test; the cases need at least
// three segments, several index entries per segment, and 5-record batches.
const (
	SegmentBytes       = 16 << 10
	IndexIntervalBytes = 512
	MaxIndexBytes      = 16 << 10
	NumBatches         = 120
	RecordsPerBatch    = 5
)

// Batches returns the records to append, one Append per element.
func Batches() [][]record.Record {
	out := make([][]record.Record, NumBatches)
	for i := range out {
		recs := make([]record.Record, RecordsPerBatch)
		for j := range recs {
			recs[j] = record.Record{
				Timestamp: 1_700_000_000_000 + int64(i*RecordsPerBatch+j),
				Key:       []byte(fmt.Sprintf("key-%d", j%7)),
				Value:     []byte(strings.Repeat(fmt.Sprintf("value %d.%d ", i, j), 4)),
			}
		}
		out[i] = recs
	}
	return out
}

// Case is one kind of damage to a partition directory and what fsck must
// say about it.
type Case struct {
	Name string
	// Kind is the problem fsck reports at Damage.File, Damage.Pos (for a
	// Data case, when the damage lies past the recovery point).
	Kind fsck.Kind
	// SyncedKind, when set, is the kind reported when a Data case's damage
	// lies below the recovery point: a log ending inside an entry is a
	// torn write only where the log had not synced; in synced data it is
	// a bad length field.
	SyncedKind fsck.Kind
	// Data says the damage is in the batches of a .log: whether repair (or
	// the Log's recovery) may cut it depends on where the recovery point
	// is (see Placement). Other cases are about indexes, leftovers and
	// metadata, which repair fixes without touching a batch.
	Data bool
	// Deep says only a deep check (fsck.Options.Deep) finds it.
	Deep bool
	// Unfixable says repair never fixes it (it would need state the
	// directory does not hold).
	Unfixable bool
	// Refused says the Log's Open refuses the directory as it is, with an
	// error that names the file and says to run fsck --repair, which
	// fixes it (an unusable checkpoint).
	Refused bool
	// Inject damages the log in d and says where.
	Inject func(t testing.TB, d *Dir) Damage
}

// WantKind is the kind fsck must report for the case, given whether its
// damage lies below the recovery point.
func (c Case) WantKind(below bool) fsck.Kind {
	if below && c.SyncedKind != "" {
		return c.SyncedKind
	}
	return c.Kind
}

// Damage is where a case's problem must be reported.
type Damage struct {
	File string // name in the partition directory
	Pos  int64  // byte position in File
	// Keep is, for Data cases, how many records (offsets 0 to Keep-1) lie
	// before the damage: what survives a cut there. -1 otherwise.
	Keep int
}

// Dir is a written log being damaged by a case.
type Dir struct {
	t    testing.TB
	FS   vfs.FS
	Path string
	// Logs are the .log names in order; Orig their bytes before damage.
	Logs []string
	Orig map[string][]byte
}

// NewDir reads the .log files of the log in dir.
func NewDir(t testing.TB, fsys vfs.FS, dir string) *Dir {
	t.Helper()
	d := &Dir{t: t, FS: fsys, Path: dir, Orig: map[string][]byte{}}
	names, err := fsys.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if filepath.Ext(n) == ".log" {
			d.Logs = append(d.Logs, n)
			d.Orig[n] = d.Read(n)
		}
	}
	if len(d.Logs) < 3 {
		t.Fatalf("the corruption cases need at least 3 segments, %s has %d", dir, len(d.Logs))
	}
	return d
}

// Read returns the bytes of the file name in the directory.
func (d *Dir) Read(name string) []byte {
	return vfstest.ReadFile(d.t, d.FS, filepath.Join(d.Path, name))
}

// Write replaces the file name in the directory.
func (d *Dir) Write(name string, b []byte) {
	vfstest.WriteFile(d.t, d.FS, filepath.Join(d.Path, name), b)
}

func (d *Dir) remove(name string) {
	if err := d.FS.Remove(filepath.Join(d.Path, name)); err != nil {
		d.t.Fatal(err)
	}
}

func (d *Dir) lastLog() string        { return d.Logs[len(d.Logs)-1] }
func (d *Dir) idx(log string) string  { return strings.TrimSuffix(log, ".log") + ".index" }
func (d *Dir) tidx(log string) string { return strings.TrimSuffix(log, ".log") + ".timeindex" }

// damaged returns a Data case's Damage at pos of log.
func (d *Dir) damaged(log string, pos int64) Damage {
	return Damage{File: log, Pos: pos, Keep: d.recordsBefore(log, pos)}
}

// recordsBefore counts the records of the batches of the segments before
// log plus those before pos in log, in the undamaged files.
func (d *Dir) recordsBefore(log string, pos int64) int {
	n := 0
	for _, l := range d.Logs {
		data := d.Orig[l]
		for _, p := range BatchStarts(d.t, data) {
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

// batch returns the position of the k-th batch of a .log (negative k
// counts from the end) and the file's current bytes.
func (d *Dir) batch(log string, k int) (int64, []byte) {
	data := d.Read(log)
	starts := BatchStarts(d.t, data)
	if k < 0 {
		k += len(starts)
	}
	return starts[k], data
}

// BatchStarts returns the positions of the entries of undamaged .log bytes.
func BatchStarts(t testing.TB, data []byte) []int64 {
	t.Helper()
	var out []int64
	for p := 0; p < len(data); {
		n, _, err := record.PeekEntry(data[p:])
		if err != nil {
			t.Fatalf("test log unreadable at %d: %v", p, err)
		}
		out = append(out, int64(p))
		p += n
	}
	return out
}

// segName is a segment file name: the base offset in 20 digits.
func segName(base int64, suffix string) string { return fmt.Sprintf("%020d%s", base, suffix) }

// resum recomputes the CRC-32C of the batch at p.
func resum(data []byte, p int64) {
	b := record.Batch(data[p : p+int64(record.Batch(data[p:]).Size())])
	binary.BigEndian.PutUint32(b[17:], b.ComputeCRC())
}

// none is the Damage of a case that is not in a .log's batches.
func none(file string, pos int64) Damage { return Damage{File: file, Pos: pos, Keep: -1} }
