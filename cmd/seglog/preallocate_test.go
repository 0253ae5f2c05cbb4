package main

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"
)

// TestProducePreallocate: produce --preallocate writes a log whose segments
// (sealed on each roll, and the active one on close) end at their last
// batch, which consume reads back and fsck finds clean.
func TestProducePreallocate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "log")
	in := strings.Repeat(strings.Repeat("v", 200)+"\n", 60)
	mustInvoke(t, in, "produce", dir, "--preallocate", "--segment-bytes", "4096", "--batch", "3")
	logs := storedLogs(t, dir)
	if len(logs) < 3 {
		t.Fatalf("%d segments, want several", len(logs))
	}
	for _, l := range logs {
		data := readVFS(t, l)
		pos := 0
		for pos+12 <= len(data) {
			n := int(binary.BigEndian.Uint32(data[pos+8:]))
			if n == 0 {
				break
			}
			pos += 12 + n
		}
		if pos != len(data) {
			t.Errorf("%s: batches end at byte %d of %d", l, pos, len(data))
		}
	}
	if got := parseConsumed(t, mustInvoke(t, "", "consume", dir, "--json").stdout); len(got) != 60 {
		t.Errorf("consumed %d records, want 60", len(got))
	}
	if r := invoke(t, "", "fsck", dir); r.code != 0 {
		t.Errorf("fsck: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
