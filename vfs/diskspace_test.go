package vfs

import "testing"

// The OS file system reports a size through statfs; the in-memory one
// says it cannot.
func TestDiskSpace(t *testing.T) {
	total, usable, err := DiskSpace(Default, t.TempDir())
	if err != nil || total <= 0 || usable < 0 || usable > total {
		t.Errorf("os: total %d usable %d: %v", total, usable, err)
	}
	if _, _, err := DiskSpace(NewMem(), "/"); err != ErrNoDiskSpace {
		t.Errorf("mem: %v", err)
	}
}
