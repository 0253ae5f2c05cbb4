package seglog_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/compaction"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// TestRestartAtWaitsForSwap holds a compaction's swap between its commit
// point and the segment-set change (at the rename of a .swap file to its
// final name) and calls RestartAt meanwhile. RestartAt must wait for the
// swap, as TruncateTo and DeleteBefore do: run inside that window it
// removed every segment and then the swap inserted its new ones, leaving
// records below the restart offset in the log and on disk.
func TestRestartAtWaitsForSwap(t *testing.T) {
	var (
		armed  sync.Once
		paused = make(chan struct{})
		resume = make(chan struct{})
	)
	mem := vfs.NewMem()
	fs := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpRename && strings.HasSuffix(op.Path, ".log.swap") {
			armed.Do(func() {
				close(paused)
				<-resume
			})
		}
		return nil
	}))
	opts := campaignOptions(fs)
	l, err := seglog.Open("/s", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for l.NumSegments() < 6 {
		key := fmt.Sprintf("k%d", l.EndOffset()%4) // few keys: compaction removes most
		if _, err := l.Append(record.Record{Key: []byte(key), Value: campaignValue(l.EndOffset(), key)}); err != nil {
			t.Fatal(err)
		}
	}
	const restart = 100_000
	cleaned := make(chan error, 1)
	go func() {
		_, err := compaction.Clean(l, compaction.NewOffsetMap(1<<16, 0), 0, l.EndOffset(), compaction.Options{SegmentBytes: 1024})
		cleaned <- err
	}()
	select {
	case <-paused:
	case err := <-cleaned:
		t.Fatalf("the round ended without swapping: %v", err)
	}
	restarted := make(chan error, 1)
	go func() { restarted <- l.RestartAt(restart) }()
	// Either RestartAt runs inside the swap's window (the bug), or it
	// blocks on a lock the swap holds.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if len(restarted) > 0 || restartBlockedOnLock() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("RestartAt neither returned nor waits for a lock")
		}
	}
	close(resume)
	// Later groups of the round find the restart: ErrSegmentsChanged.
	if err := <-cleaned; err != nil && !errors.Is(err, seglog.ErrSegmentsChanged) {
		t.Fatalf("Clean: %v", err)
	}
	if err := <-restarted; err != nil {
		t.Fatalf("RestartAt: %v", err)
	}
	check := func(l *seglog.Log, when string) {
		t.Helper()
		if l.StartOffset() != restart || l.EndOffset() != restart {
			t.Fatalf("%s: log spans [%d, %d), want [%d, %d)", when, l.StartOffset(), l.EndOffset(), restart, restart)
		}
		for _, s := range l.Segments() {
			if s.BaseOffset < restart {
				t.Fatalf("%s: segment at %d below the restart offset %d: %+v", when, s.BaseOffset, restart, l.Segments())
			}
		}
	}
	check(l, "after the swap")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, err = seglog.Open("/s", campaignOptions(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	check(l, "reopened")
}

// restartBlockedOnLock reports whether a goroutine is waiting for a mutex
// inside Log.RestartAt.
func restartBlockedOnLock() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("seglog.(*Log).RestartAt")) && bytes.Contains(g, []byte("[sync.Mutex.Lock")) {
			return true
		}
	}
	return false
}
