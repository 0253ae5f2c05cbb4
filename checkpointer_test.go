package seglog

import (
	"slices"
	"sync"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

type mapCheckpointer struct {
	mu    sync.Mutex
	m     map[string]int64
	clean bool
}

func (c *mapCheckpointer) Checkpoint(name string) (int64, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	off, ok := c.m[name]
	return off, ok, nil
}

func (c *mapCheckpointer) SetCheckpoint(name string, off int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[name] = off
	return nil
}

func (c *mapCheckpointer) CleanShutdown() bool { return c.clean }

// A Log with a Checkpointer keeps its recovery point, log start and
// clean-shutdown state there, writes none of those files, and recovers
// from what the Checkpointer says.
func TestCheckpointerReplacesFiles(t *testing.T) {
	fs := vfs.NewMem()
	c := &mapCheckpointer{m: map[string]int64{}}
	o := Options{FS: fs, checkpoints: c, LogConfig: LogConfig{SegmentBytes: 1 << 10, MaxIndexBytes: 1 << 10}}
	l, err := Open("/d/t-0", o)
	if err != nil {
		t.Fatal(err)
	}
	for range 40 {
		if _, err := l.Append(record.Record{Value: make([]byte, 100)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.DeleteBefore(l.Segments()[1].BaseOffset); err != nil {
		t.Fatal(err)
	}
	start := l.StartOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	names, _ := fs.List("/d/t-0")
	for _, n := range []string{RecoveryPointFile, LogStartOffsetFile, CleanShutdownFile} {
		if slices.Contains(names, n) {
			t.Errorf("the log wrote %s itself", n)
		}
	}
	if c.m[RecoveryPointFile] != 40 || c.m[LogStartOffsetFile] != start {
		t.Errorf("checkpointer holds %v, want recovery point 40 and log start %d", c.m, start)
	}
	// Unclean, with the recovery point behind: recovery scans and keeps
	// the valid records; the log start comes from the Checkpointer.
	c.m[RecoveryPointFile] = 0
	l, err = Open("/d/t-0", o)
	if err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != start || l.EndOffset() != 40 {
		t.Errorf("reopened [%d, %d), want [%d, 40)", l.StartOffset(), l.EndOffset(), start)
	}
	l.Close()
}
