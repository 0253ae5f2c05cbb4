package seglog

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs"
)

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// tolerated are operations whose failure a Log may absorb without telling
// the caller: closing files it is done with and best-effort cleanup.
func tolerated(op vfs.Op) bool {
	switch op.Kind {
	case vfs.OpClose, vfs.OpUnmap, vfs.OpUnlock:
		return true
	case vfs.OpRemove:
		return true // a leftover file is resolved by the next open
	case vfs.OpReserve:
		return true // a hint: the write that follows reports a real failure
	case vfs.OpWriteAt:
		// Zeros warming an index's next pages: a hint too. The .log is
		// only ever appended to with Write.
		return !strings.HasSuffix(op.Path, ".log")
	}
	return false
}

// TestErrorInjection fails the i-th filesystem operation of a small
// workload, for every i: the error must surface from some call (or be one
// the Log may tolerate), nothing may panic, the log must reopen, and every
// acknowledged record must be there, also after a power loss.
func TestErrorInjection(t *testing.T) {
	w := crashWorkload{appends: 40, sync: SyncAlways, seed: 5}
	counter := &vfs.Counter{}
	w.run(vfs.Inject(vfs.NewMem(), counter), func(int64) {})
	total := counter.Count()
	if total < 100 {
		t.Fatalf("workload ran only %d operations; the test would prove little", total)
	}
	for i := int64(1); i <= total; i++ {
		mem := vfs.NewMem()
		inj := vfs.OnIndex(i, nil)
		var acked int64
		surfaced := false
		runInjected(t, w, vfs.Inject(mem, inj), &acked, &surfaced)
		op, fired := inj.Fired()
		if !fired {
			continue // the workload took another path and ended earlier
		}
		if !surfaced && !tolerated(op) {
			t.Errorf("op %d (%v %s): injected error was swallowed", i, op.Kind, op.Path)
		}
		label := fmt.Sprintf("after failing op %d (%v %s)", i, op.Kind, op.Path)
		verifyCrashState(t, mem, acked, label)
		verifyCrashState(t, mem.CrashClone(), acked, label+" and a power loss")
	}
}

// runInjected is crashWorkload.run that also records whether any call
// returned an injected error.
func runInjected(t *testing.T, w crashWorkload, fs vfs.FS, acked *int64, surfaced *bool) {
	note := func(err error) bool {
		if err != nil && errors.Is(err, vfs.ErrInjected) {
			*surfaced = true
		}
		return err != nil
	}
	l, err := Open("/log", w.options(fs))
	if note(err) {
		return
	}
	defer func() { note(l.Close()) }()
	for i := 0; i < w.appends; i++ {
		base := l.EndOffset()
		info, err := l.Append(recordsAt(base, 1+i%3)...)
		if note(err) {
			// The log refuses appends after a failed write or sync; keep
			// calling to prove it keeps refusing rather than panicking.
			if errors.Is(err, ErrSyncFailed) || errors.Is(err, ErrWriteFailed) {
				if _, err := l.Append(recordsAt(base, 1)...); err == nil {
					t.Errorf("append accepted after %v", err)
				}
			}
			return
		}
		*acked = info.LastOffset + 1
	}
}
