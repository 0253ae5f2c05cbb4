package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreCommandsDirFirst: `seglog topics DIR create NAME` (the issue's
// and kafka-topics.sh users' order) does what `seglog topics create DIR
// NAME` does, flags included; a wrong verb names the right ones.
func TestStoreCommandsDirFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustInvoke(t, "", "topics", dir, "create", "bookings", "--partitions", "3", "--config", "retention.ms=3600000")
	r := mustInvoke(t, "", "topics", dir, "describe", "bookings")
	if !strings.Contains(r.stdout, "PartitionCount: 3") || !strings.Contains(r.stdout, "retention.ms=3600000") {
		t.Errorf("describe after a dir-first create:\n%s", r.stdout)
	}
	if r := mustInvoke(t, "", "topics", "list", dir); r.stdout != "bookings\n" {
		t.Errorf("verb-first list after a dir-first create: %q", r.stdout)
	}
	mustInvoke(t, "b1\tBookingCreated\n", "produce", dir, "--topic", "bookings")
	mustInvoke(t, "", "consume", dir, "--topic", "bookings", "--group", "billing", "--from-beginning")
	if r := mustInvoke(t, "", "groups", dir, "list"); r.stdout != "billing\n" {
		t.Errorf("groups DIR list: %q", r.stdout)
	}
	r = invoke(t, "", "topics", dir, "bogus")
	if r.code == 0 || !strings.Contains(r.stderr, "create") {
		t.Errorf("topics DIR bogus: exit %d, stderr %q", r.code, r.stderr)
	}
	r = invoke(t, "", "topics", dir, "create", "x", "--partitions", "0")
	if r.code == 0 {
		t.Error("topics DIR create with --partitions 0 succeeded")
	}
	if r := mustInvoke(t, "", "topics", dir, "create", "--help"); !strings.Contains(r.stdout, "Create a topic") {
		t.Errorf("topics DIR create --help:\n%s", r.stdout)
	}
}
