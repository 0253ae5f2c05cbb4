//go:build seglog_lockrank

package seglog

import (
	"strings"
	"testing"
)

// TestLockRankChecker: the checker this build runs (lockrank_check.go)
// lets the order through and panics on a lock taken out of it, before
// blocking on it.
func TestLockRankChecker(t *testing.T) {
	l := newLog(t.TempDir(), nil, Options{}, nopCloser{})
	// In order: swapMu, ckptMu, mu, flushMu, segs (shared).
	l.swapMu.Lock()
	l.ckptMu.Lock()
	l.mu.Lock()
	l.flushMu.Lock()
	l.segs.RLock()
	n := l.segs.tree.Len()
	l.segs.RUnlock()
	l.flushMu.Unlock()
	l.mu.Unlock()
	l.ckptMu.Unlock()
	l.swapMu.Unlock()
	if n != 0 {
		t.Fatalf("a new Log holds %d segments", n)
	}

	for _, c := range []struct {
		name        string
		first, then func()
		undo        func()
		want        string
	}{
		{"swapMu under mu", l.mu.Lock, l.swapMu.Lock, l.mu.Unlock, "taking swapMu (rank 1) while holding mu (rank 3)"},
		{"mu under segs", l.segs.Lock, l.mu.Lock, l.segs.Unlock, "taking mu (rank 3) while holding segs (rank 6)"},
		{"segs shared twice", l.segs.RLock, l.segs.RLock, l.segs.RUnlock, "taking segs (rank 6) while holding segs (rank 6)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.first()
			defer c.undo()
			defer func() {
				msg, _ := recover().(string)
				if !strings.Contains(msg, c.want) {
					t.Errorf("panic %q, want one saying %q", msg, c.want)
				}
			}()
			c.then()
		})
	}
}
