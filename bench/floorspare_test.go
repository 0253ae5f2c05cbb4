package bench

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestSpareFile: the spare floor's writes land in order across segment
// files, a segment begins in the zeroed spare when it is ready (full size,
// zeros past what was written) and in a fallocated file otherwise, and
// close removes every file.
func TestSpareFile(t *testing.T) {
	dir := t.TempDir()
	const seg = 64 << 10
	sf, err := newSpareFile(filepath.Join(dir, "raw"), seg)
	if err != nil {
		t.Fatal(err)
	}
	waitReady := func() {
		t.Helper()
		testutil.WaitFor(t, "the spare is zeroed", sf.ready.Load)
	}
	chunk := func(i int) []byte { return bytes.Repeat([]byte{byte(i + 1)}, 10<<10) }
	var want []byte // the current segment's bytes
	for i := range 20 {
		if i%6 == 0 {
			waitReady() // six chunks fill a segment: the next one begins zeroed
		}
		if sf.pos+int64(len(chunk(i))) > seg {
			want = want[:0]
		}
		if err := sf.write(chunk(i)); err != nil {
			t.Fatal(err)
		}
		want = append(want, chunk(i)...)
	}
	if sf.segIndex != 3 || sf.zeroed != 3 || sf.preallocated != 1 {
		t.Fatalf("segment %d, %d begun zeroed, %d fallocated; want 3, 3, 1", sf.segIndex, sf.zeroed, sf.preallocated)
	}
	if sf.written() != 20*10<<10 {
		t.Fatalf("written %d", sf.written())
	}
	got := vfstest.ReadFile(t, fs, sf.segPath(sf.segIndex))
	if len(got) != seg || !bytes.Equal(got[:len(want)], want) || !bytes.Equal(got[len(want):], make([]byte, seg-len(want))) {
		t.Fatalf("segment %d holds %d bytes, not the %d written followed by zeros to %d", sf.segIndex, len(got), len(want), seg)
	}
	if err := sf.close(); err != nil {
		t.Fatal(err)
	}
	if names, err := fs.List(dir); err != nil || len(names) != 0 {
		t.Fatalf("after close the directory holds %v (%v)", names, err)
	}
}

// TestSpareZeroerErrorFailsRound: a zeroer that cannot write (a full
// disk) fails the floor's round with its error instead of being dropped,
// and the round's files are still removed.
func TestSpareZeroerErrorFailsRound(t *testing.T) {
	defer func(old vfs.FS) { fs = old }(fs)
	fs = vfs.Inject(vfs.Default, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpWriteAt && strings.HasSuffix(op.Path, ".spare") {
			return syscall.ENOSPC
		}
		return nil
	}))
	dir := t.TempDir()
	_, err := RunWrite(context.Background(), Env{Dir: dir}, WriteConfig{RecordSize: 100, Batch: 10, Records: 200, Rounds: 1,
		Floor: FloorSpare, Options: seglog.Options{LogConfig: seglog.LogConfig{SegmentBytes: 1 << 20}}})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("round with a failing zeroer returned %v, want ENOSPC", err)
	}
	leftovers(t, dir)
}
