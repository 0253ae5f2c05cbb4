package seglog

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestAppendBatchRefusalIsNotDamage: a batch AppendBatch refuses for its
// contents is the caller's bad input, a *BatchError matching
// ErrCorruptBatch and not ErrCorrupt (nothing stored is damaged), with
// record's message and sentinels; the log is unchanged.
func TestAppendBatchRefusalIsNotDamage(t *testing.T) {
	l, err := Open("/l", Options{FS: vfs.NewMem(), Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	good := producerBatch(t, record.None, []record.Record{{Value: []byte("a")}, {Value: []byte("b")}})
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-1] ^= 0xff
	want := record.Batch(bytes.Clone(badCRC)).Validate()
	if want == nil {
		t.Fatal("the flipped batch validates")
	}
	baseOffset := bytes.Clone(good)
	record.Batch(baseOffset).SetBaseOffset(3)
	for _, tc := range []struct {
		name     string
		batch    []byte
		pos      int64
		producer bool
	}{
		{"bad crc", badCRC, 17, false},
		{"base offset", baseOffset, -1, true},
	} {
		_, err := l.AppendBatch(tc.batch)
		var be *BatchError
		if !errors.As(err, &be) || !errors.Is(err, ErrCorruptBatch) || errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: %v, want a *BatchError matching ErrCorruptBatch and not ErrCorrupt", tc.name, err)
		}
		var ce *CorruptionError
		if errors.As(err, &ce) {
			t.Errorf("%s: a *CorruptionError (damage on disk) inside the refusal", tc.name)
		}
		if be.Pos != tc.pos || errors.Is(err, record.ErrInvalidProducerBatch) != tc.producer {
			t.Errorf("%s: Pos %d (want %d), matches record.ErrInvalidProducerBatch: %v (want %v)", tc.name, be.Pos, tc.pos, !tc.producer, tc.producer)
		}
	}
	if _, err := l.AppendBatch(bytes.Clone(badCRC)); err == nil || err.Error() != want.Error() {
		t.Errorf("message %q, want record's %q", err, want)
	}
	if l.EndOffset() != 0 {
		t.Fatalf("refused batches stored %d records", l.EndOffset())
	}
}

// TestOpenLockedNamesHolder: a directory whose lock another holds (here
// fsck --repair, which records itself in the lock file) is refused with
// the one ErrLocked (vfs.ErrLocked, which fsck and store match too),
// naming the holder; with a lock file that names nobody, the message is
// the plain refusal.
func TestOpenLockedNamesHolder(t *testing.T) {
	fsys := vfs.NewMem()
	const dir = "/l"
	if err := fsys.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	lk, err := fsys.Lock(dir + "/" + LockFile)
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Close()
	_, err = Open(dir, Options{FS: fsys, Logger: discardLogger()})
	const plain = "seglog: directory is locked by another log: /l: "
	if !errors.Is(err, ErrLocked) || !errors.Is(err, vfs.ErrLocked) || !strings.HasPrefix(err.Error(), plain) {
		t.Fatalf("Open of a held directory: %v, want ErrLocked starting %q", err, plain)
	}
	h := layout.Holder{Command: "seglog fsck --repair", PID: 4242}
	if err := lk.SetOwner(h.Format()); err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir, Options{FS: fsys, Logger: discardLogger()})
	if want := "seglog: directory is locked by another log: /l is held by `seglog fsck --repair` (pid 4242"; !errors.Is(err, ErrLocked) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Open of a directory fsck holds: %v, want ErrLocked starting %q", err, want)
	}
}
