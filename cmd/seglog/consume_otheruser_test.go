package main

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestConsumeOtherUsersLog: consume reads, as another user, a log in a
// directory of mode 0555 with files of mode 0444, left unclean with an
// index missing (so a writable open would recover and rebuild): every
// record, and nothing changes. Under root (as in CI) the command runs as
// nobody (65534), for which root's files are someone else's; otherwise the
// mode bits alone deny writing. Either way produce, which must write,
// fails first, so the test cannot pass on a directory it could write.
func TestConsumeOtherUsersLog(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "log")
	mustInvoke(t, numberedLines(1, 200), "produce", dir, "--batch", "9", "--segment-bytes", "2048", "--max-index-bytes", "4096")
	logs := storedLogs(t, dir)
	if len(logs) < 2 {
		t.Fatalf("%d segments, want several", len(logs))
	}
	for _, name := range []string{filepath.Join(dir, ".kafka_cleanshutdown"), strings.TrimSuffix(logs[0], segment.LogSuffix) + segment.IndexSuffix} {
		if err := vfs.Default.Remove(name); err != nil {
			t.Fatal(err)
		}
	}
	readOnlyTree(t, dir)
	before := dirSnapshot(t, dir)

	run := func(args ...string) (int, string, string) {
		t.Helper()
		return invokeAsOtherUser(t, base, "x\n", args...)
	}

	if code, _, _ := run("produce", dir); code == 0 {
		t.Fatal("produce succeeded: the directory is writable, so the test proves nothing")
	}
	code, stdout, stderr := run("consume", dir, "--json")
	if code != 0 {
		t.Fatalf("consume as another user: exit %d: %s", code, stderr)
	}
	recs := parseConsumed(t, stdout)
	if len(recs) != 200 {
		t.Fatalf("consume printed %d records, want 200", len(recs))
	}
	for i, r := range recs {
		if want := base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "line-%d", i+1)); r.Value == nil || *r.Value != want {
			t.Fatalf("record %d: value %v, want %s", i, r.Value, want)
		}
	}
	vfstest.Unchanged(t, "consume", before, dirSnapshot(t, dir))
}
