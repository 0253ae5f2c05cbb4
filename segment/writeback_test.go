package segment

import (
	"bytes"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/vfs"
)

// TestWriteBackCoversAppendsInOrder: with Options.WriteBackBytes, the
// writebacks an active segment starts cover its .log from the front in
// contiguous ranges, each at least WriteBackBytes long, none past what was
// appended; a failing writeback (a hint) fails no append; and after Close
// none is still running.
func TestWriteBackCoversAppendsInOrder(t *testing.T) {
	const chunk = 4096
	m := vfs.NewMem()
	if err := m.MkdirAll("/seg"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ops []vfs.Op
	closed := false
	fsys := vfs.Inject(m, vfs.InjectorFunc(func(op vfs.Op) error {
		if !strings.HasSuffix(op.Path, LogSuffix) {
			return nil
		}
		mu.Lock()
		defer mu.Unlock()
		switch op.Kind {
		case vfs.OpClose:
			closed = true
		case vfs.OpWriteBack:
			if closed {
				t.Errorf("writeback of %+v after the .log was closed", op)
			}
			ops = append(ops, op)
			if len(ops)%2 == 0 {
				return syscall.EIO
			}
		}
		return nil
	}))
	s, err := Create(fsys, "/seg", 0, Options{WriteBackBytes: chunk})
	if err != nil {
		t.Fatal(err)
	}
	g := newGen(5, 0, 600)
	var all []byte
	for range 200 {
		b := g.batch(t)
		if err := s.Append(b.bytes); err != nil {
			t.Fatalf("append: %v", err)
		}
		all = append(all, b.bytes...)
		// One writeback runs at a time and an append finding it busy
		// starts none: waiting for it makes each chunk appended start
		// one, however the goroutines are scheduled.
		testutil.WaitFor(t, "the writeback under way to end", func() bool { return !s.writeBackBusy.Load() })
	}
	size := s.Size()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ops) < 2 {
		t.Fatalf("%d writebacks for %d bytes in chunks of %d", len(ops), size, chunk)
	}
	var next int64
	for _, op := range ops {
		if op.Off != next || op.Len < chunk || op.Off+op.Len > size {
			t.Fatalf("writeback [%d, +%d) after %d bytes written back, of %d appended", op.Off, op.Len, next, size)
		}
		next = op.Off + op.Len
	}
	got, err := vfs.ReadFileLimit(m, "/seg/"+FileName(0, LogSuffix), 1<<24)
	if err != nil || !bytes.Equal(got, all) {
		t.Fatalf("the .log does not hold the appended batches (%v)", err)
	}
}

// TestWriteBackOffByDefault: without WriteBackBytes nothing is written back.
func TestWriteBackOffByDefault(t *testing.T) {
	m := vfs.NewMem()
	if err := m.MkdirAll("/seg"); err != nil {
		t.Fatal(err)
	}
	n := 0
	fsys := vfs.Inject(m, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpWriteBack {
			n++
		}
		return nil
	}))
	s := mustCreate(t, env{"mem", fsys, "/seg"}, 0, Options{})
	g := newGen(6, 0, 600)
	for range 50 {
		if err := s.Append(g.batch(t).bytes); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d writebacks with WriteBackBytes 0", n)
	}
}
