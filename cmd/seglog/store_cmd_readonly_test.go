package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/store"
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
