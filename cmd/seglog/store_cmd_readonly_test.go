package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// The read commands (topics list|describe, groups list|describe) open the
// store read-only: they work while a writer holds the log.dir's lock, and
// change nothing in it.
func TestStoreReadCommandsBesideWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "3")
	mustInvoke(t, "b1\tBookingCreated\nb2\tBookingCreated\n", "produce", dir, "--topic", "bookings")
	mustInvoke(t, "", "consume", dir, "--topic", "bookings", "--group", "billing", "--from-beginning")

	reads := func() {
		t.Helper()
		if r := mustInvoke(t, "", "topics", "list", dir); r.stdout != "bookings\n" {
			t.Errorf("topics list: %q", r.stdout)
		}
		if r := mustInvoke(t, "", "topics", "describe", dir, "bookings"); !strings.Contains(r.stdout, "PartitionCount: 3") {
			t.Errorf("topics describe:\n%s", r.stdout)
		}
		if r := mustInvoke(t, "", "groups", "list", dir); r.stdout != "billing\n" {
			t.Errorf("groups list: %q", r.stdout)
		}
		if r := mustInvoke(t, "", "groups", "describe", dir, "billing"); !strings.Contains(r.stdout, "TOTAL LAG: 0\n") {
			t.Errorf("groups describe:\n%s", r.stdout)
		}
	}
	before := dirSnapshot(t, dir)
	reads()
	checkUnchanged(t, "the read commands", before, dirSnapshot(t, dir))

	w, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if r := invoke(t, "", "topics", "create", dir, "other"); r.code == 0 || !strings.Contains(r.stderr, "locked") {
		t.Errorf("a writing command beside the writer: exit %d, %q", r.code, r.stderr)
	}
	reads()
}

// chmodTree sets every directory of the tree to dirMode and every file to
// fileMode.
func chmodTree(t *testing.T, dir string, dirMode, fileMode os.FileMode) {
	t.Helper()
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		p := filepath.Join(dir, n)
		fi, err := vfs.Default.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.IsDir() {
			chmodTree(t, p, dirMode, fileMode)
		} else {
			chmodPath(t, p, fileMode)
		}
	}
	chmodPath(t, dir, dirMode)
}

// The read commands work on a store its user cannot write: directories of
// mode 0555 and files of mode 0444, the commands run as nobody (65534)
// when the test runs as root (as in CI), for whom root's files are
// someone else's. A writing command fails first, so the test cannot pass
// on a store it could write; the tree is unchanged after.
func TestStoreReadCommandsWithoutWritePermission(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "data")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "3")
	mustInvoke(t, "b1\tBookingCreated\nb2\tBookingCreated\nb3\tBookingCreated\n", "produce", dir, "--topic", "bookings")
	mustInvoke(t, "", "consume", dir, "--topic", "bookings", "--group", "billing", "--from-beginning")
	chmodTree(t, dir, 0o555, 0o444)
	t.Cleanup(func() { chmodTree(t, dir, 0o755, 0o644) })
	before := dirSnapshot(t, dir)

	run := func(args ...string) (int, string, string) {
		t.Helper()
		return invokeAsOtherUser(t, base, "", args...)
	}
	if code, _, _ := run("topics", "create", dir, "other"); code == 0 {
		t.Fatal("topics create succeeded: the store is writable, so the test proves nothing")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"topics", "list", dir}, "bookings\n"},
		{[]string{"topics", "describe", dir, "bookings"}, "PartitionCount: 3"},
		{[]string{"groups", "list", dir}, "billing\n"},
		{[]string{"groups", "describe", dir, "billing"}, "TOTAL LAG: 0\n"},
	} {
		code, stdout, stderr := run(c.args...)
		if code != 0 || !strings.Contains(stdout, c.want) {
			t.Errorf("seglog %s without write permission: exit %d, stdout %q, stderr %q", strings.Join(c.args, " "), code, stdout, stderr)
		}
	}
	checkUnchanged(t, "the read commands", before, dirSnapshot(t, dir))
}
