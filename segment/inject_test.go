package segment

import (
	"bytes"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestInjectedFailures runs a segment's life (create, appends, seal, close,
// sealed reopen, lookups, truncation, removal) once per filesystem
// operation, failing that operation. Every failure must surface as an error
// (never a panic or a wrong answer), and the .log left on disk must start
// with every batch whose Append succeeded and hold nothing that was not
// appended, so recovery returns exactly the acknowledged prefix.
func TestInjectedFailures(t *testing.T) {
	const base = 20
	// A small ReserveBytes makes the workload reserve space several times.
	opts := Options{IndexIntervalBytes: 150, MaxIndexBytes: 4096, ReserveBytes: 300}
	g := newGen(77, base, 60)
	var batches []mbatch
	for i := 0; i < 12; i++ {
		batches = append(batches, g.batch(t))
	}
	var all []byte
	for _, b := range batches {
		all = append(all, b.bytes...)
	}

	// workload returns the number of acknowledged appends and the first
	// error.
	var removing bool
	workload := func(fsys vfs.FS) (acked int, err error) {
		removing = false
		s, err := Create(fsys, "/seg", base, opts)
		if err != nil {
			return 0, err
		}
		for _, b := range batches {
			if err := s.Append(b.bytes); err != nil {
				s.Close()
				return acked, err
			}
			acked++
		}
		if err := s.Flush(); err != nil {
			s.Close()
			return acked, err
		}
		if err := s.Seal(); err != nil {
			s.Close()
			return acked, err
		}
		if err := s.Close(); err != nil {
			return acked, err
		}
		s, err = Open(fsys, "/seg", base, false, opts)
		if err != nil {
			return acked, err
		}
		for _, b := range batches {
			bp, ok, err := s.FindPosition(b.base)
			if err != nil {
				s.Close()
				return acked, err
			}
			if !ok || bp.Position != b.pos {
				t.Fatalf("wrong answer under injection: FindPosition(%d) = %+v, %v", b.base, bp, ok)
			}
		}
		if _, err := s.Recover(RecoverOptions{}); err != nil {
			s.Close()
			return acked, err
		}
		removing = true
		if err := s.Remove(); err != nil {
			s.Release()
			return acked, err
		}
		s.Release()
		return acked, nil
	}
	pos := int64(0)
	for i := range batches {
		batches[i].pos = pos
		pos += batches[i].size
	}

	count := func() int64 {
		m := vfs.NewMem()
		if err := m.MkdirAll("/seg"); err != nil {
			t.Fatal(err)
		}
		c := &vfs.Counter{}
		if _, err := workload(vfs.Inject(m, c)); err != nil {
			t.Fatal(err)
		}
		return c.Count()
	}()
	if count < 30 {
		t.Fatalf("only %d operations counted", count)
	}
	for i := int64(1); i <= count; i++ {
		m := vfs.NewMem()
		if err := m.MkdirAll("/seg"); err != nil {
			t.Fatal(err)
		}
		inj := vfs.OnIndex(i, nil)
		acked, err := workload(vfs.Inject(m, inj))
		op, fired := inj.Fired()
		if !fired {
			t.Fatalf("op %d never ran", i)
		}
		if err == nil {
			// Only failures that cannot change the outcome may go
			// unreported: closing a read-only descriptor, the
			// directory sync after the removal renames, ...
			switch op.Kind {
			case vfs.OpClose, vfs.OpUnmap, vfs.OpRemove, vfs.OpReserve:
				continue
			case vfs.OpWriteAt:
				// Warming an index's next pages (its only WriteAt).
				if !strings.HasSuffix(op.Path, LogSuffix) {
					continue
				}
			}
			t.Fatalf("op %d (%v %s) failed silently", i, op.Kind, op.Path)
		}
		if !errors.Is(err, vfs.ErrInjected) {
			t.Fatalf("op %d (%v): error %v does not wrap the injected one", i, op.Kind, err)
		}
		logPath := "/seg/" + FileName(base, LogSuffix)
		if _, serr := m.Stat(logPath); serr != nil && removing && !(op.Kind == vfs.OpRename && op.Path == logPath) {
			continue // Remove failed after renaming the .log: it is removed
		}
		if _, serr := m.Stat(logPath); serr != nil {
			if acked > 0 {
				t.Fatalf("op %d (%v): .log gone after %d acknowledged appends", i, op.Kind, acked)
			}
			continue
		}
		got := readFile(t, m, logPath)
		var want []byte
		if acked > 0 {
			want = all[:batches[acked-1].pos+batches[acked-1].size]
		}
		if !bytes.HasPrefix(got, want) || !bytes.HasPrefix(all, got) {
			t.Fatalf("op %d (%v %s): .log of %d bytes is not the %d acknowledged bytes plus appended ones",
				i, op.Kind, op.Path, len(got), len(want))
		}
		s, err := Open(m, "/seg", base, true, opts)
		if err != nil {
			continue // the index files may be what the failure left broken; recovery below the Log's level
		}
		res, err := s.Recover(RecoverOptions{})
		if err != nil || res.ValidBytes < int64(len(want)) {
			t.Fatalf("op %d: recovery after the failure = %+v, %v", i, res, err)
		}
		if bp, ok, err := s.FindPosition(base); err != nil || (acked > 0 && (!ok || !bytes.Equal(readBatch(t, s, bp), batches[0].bytes))) {
			t.Fatalf("op %d: first batch unreadable after recovery: %v", i, err)
		}
		s.Close()
	}
}

// readBatch reads the batch at bp.
func readBatch(t *testing.T, s *Segment, bp BatchPosition) record.Batch {
	t.Helper()
	buf := make([]byte, bp.Size)
	if _, err := s.ReadAt(buf, bp.Position); err != nil {
		t.Fatal(err)
	}
	return buf
}

// TestCreateOnFullDiskLeavesNothing: when the index preallocation fails
// (a full disk), Create removes the files it made, so no half-created
// segment is left for the next Open or fsck to meet.
func TestCreateOnFullDiskLeavesNothing(t *testing.T) {
	for _, suffix := range []string{IndexSuffix, TimeIndexSuffix} {
		m := vfs.NewMem()
		if err := m.MkdirAll("/seg"); err != nil {
			t.Fatal(err)
		}
		full := vfs.InjectorFunc(func(op vfs.Op) error {
			if op.Kind == vfs.OpPreallocate && strings.HasSuffix(op.Path, suffix) {
				return syscall.ENOSPC
			}
			return nil
		})
		if _, err := Create(vfs.Inject(m, full), "/seg", 0, Options{}); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("%s: Create on a full disk: %v, want ENOSPC", suffix, err)
		}
		if names, _ := m.List("/seg"); len(names) != 0 {
			t.Fatalf("%s: a failed Create left %v", suffix, names)
		}
	}
}
