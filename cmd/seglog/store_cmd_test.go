package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// The store commands as a user runs them: a bookings topic, two groups, a
// rewind, and the mistakes a user makes.
func TestStoreCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "12", "--config", "retention.ms=604800000")
	if r := mustInvoke(t, "", "topics", "list", dir); r.stdout != "bookings\n" {
		t.Errorf("topics list: %q", r.stdout)
	}
	in := "b1\tBookingCreated\nb2\tBookingCreated\nb1\tPaymentCaptured\nb1\tTicketIssued\nlonely\n"
	r := mustInvoke(t, in, "produce", dir, "--topic", "bookings", "--verbose")
	p1 := store.PartitionForKey([]byte("b1"), 12)
	for i, line := range strings.Split(strings.TrimSpace(r.stdout), "\n")[:4] {
		fields := strings.Split(line, "\t")
		if fields[0] == "b1" && fields[1] != "bookings-"+strconv.Itoa(int(p1)) {
			t.Errorf("line %d: b1 went to %s, Kafka's partitioner says %d", i, fields[1], p1)
		}
	}
	r = mustInvoke(t, "", "consume", dir, "--topic", "bookings", "--group", "billing", "--from-beginning")
	if strings.Count(r.stdout, "\n") != 5 || !strings.Contains(r.stdout, "b1\tBookingCreated\nb1\tPaymentCaptured\nb1\tTicketIssued\n") {
		t.Errorf("billing read:\n%s", r.stdout)
	}
	// Nothing new for billing; email has read nothing and starts at the
	// end without --from-beginning (auto.offset.reset=latest).
	if r := mustInvoke(t, "", "consume", dir, "--topic", "bookings", "--group", "billing"); r.stdout != "" {
		t.Errorf("billing re-read: %q", r.stdout)
	}
	mustInvoke(t, "b3\tBookingCreated\n", "produce", dir, "--topic", "bookings")
	r = mustInvoke(t, "", "groups", "describe", dir, "billing")
	if !strings.Contains(r.stdout, "TOTAL LAG: 1\n") || !strings.Contains(r.stdout, "LAG") {
		t.Errorf("describe billing:\n%s", r.stdout)
	}
	mustInvoke(t, "", "groups", "reset", dir, "billing", "--topic", "bookings", "--to-earliest")
	r = mustInvoke(t, "", "consume", dir, "--topic", "bookings", "--group", "billing", "--max", "100")
	if strings.Count(r.stdout, "\n") != 6 {
		t.Errorf("after rewind billing read %d records:\n%s", strings.Count(r.stdout, "\n"), r.stdout)
	}
	mustInvoke(t, "", "groups", "reset", dir, "billing", "--topic", "bookings", "--shift-by", "-1")
	if r := mustInvoke(t, "", "groups", "list", dir); r.stdout != "billing\n" {
		t.Errorf("groups list: %q", r.stdout)
	}
	r = mustInvoke(t, "", "topics", "describe", dir, "bookings")
	if !strings.Contains(r.stdout, "PartitionCount: 12") || !strings.Contains(r.stdout, "billing=") {
		t.Errorf("describe:\n%s", r.stdout)
	}
	mustInvoke(t, "", "topics", "add-partitions", dir, "bookings", "--partitions", "13")
	r = mustInvoke(t, "", "groups", "reset", dir, "billing", "--topic", "bookings", "--to-datetime", "2999-01-01T00:00:00")
	if !strings.Contains(r.stdout, "NEW-OFFSET") || strings.Count(r.stdout, "\n") != 14 {
		t.Errorf("reset to a future time:\n%s", r.stdout)
	}
	if r := mustInvoke(t, "", "groups", "describe", dir, "billing"); !strings.Contains(r.stdout, "TOTAL LAG: 0\n") {
		t.Errorf("after reset to the future, lag:\n%s", r.stdout)
	}
	// --follow stops at --max.
	r = mustInvoke(t, "", "consume", dir, "--topic", "bookings", "--from-beginning", "--follow", "--max", "3")
	if strings.Count(r.stdout, "\n") != 3 {
		t.Errorf("--follow --max 3 printed:\n%s", r.stdout)
	}

	// The single-log produce and consume still work on a plain directory.
	logDir := filepath.Join(t.TempDir(), "log")
	mustInvoke(t, "k\tv\n", "produce", logDir)
	if r := mustInvoke(t, "", "consume", logDir); !strings.Contains(r.stdout, "v") {
		t.Errorf("single-log consume: %q", r.stdout)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"topics", "create", dir, "bad/name"}, "invalid topic name"},
		{[]string{"topics", "create", dir, "bookings"}, "already exists"},
		{[]string{"topics", "create", dir, "x", "--partitions", "0"}, "invalid --partitions 0: must be from 1 to 100000"},
		{[]string{"topics", "create", dir, "x", "--config", "retention.ms=soon"}, "not an integer"},
		{[]string{"topics", "create", dir, "x", "--config", "nokey"}, "not key=value"},
		{[]string{"topics", "create", dir, "__consumer_offsets"}, "internal topic"},
		{[]string{"topics", "list", filepath.Join(dir, "missing")}, "no such store directory"},
		{[]string{"topics", "describe", dir, "nope"}, "unknown topic"},
		{[]string{"topics", "add-partitions", dir, "bookings", "--partitions", "2"}, "can only grow"},
		{[]string{"topics", "add-partitions", dir, "bookings"}, `required flag(s) "partitions" not set`},
		{[]string{"topics", "delete", dir, "nope"}, "unknown topic"},
		{[]string{"produce", dir, "--topic", "nope"}, "unknown topic"},
		{[]string{"consume", dir, "--group", "g"}, "--group only applies with --topic"},
		{[]string{"consume", dir, "--topic", "bookings", "--json"}, "--json does not apply with --topic"},
		{[]string{"groups", "describe", dir, "nobody"}, "unknown group"},
		{[]string{"groups", "reset", dir, "billing", "--topic", "bookings"}, "exactly one of"},
		{[]string{"groups", "reset", dir, "billing", "--to-latest"}, `required flag(s) "topic" not set`},
		{[]string{"groups", "reset", dir, "billing", "--topic", "bookings", "--to-datetime", "yesterday"}, "--to-datetime"},
		{[]string{"groups", "reset", dir, "billing", "--topic", "bookings", "--to-earliest", "--to-latest"}, "exactly one of"},
		{[]string{"groups", "delete", dir, "nobody"}, "unknown group"},
	} {
		r := invoke(t, "", c.args...)
		if r.code == 0 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("seglog %s: exit %d, stderr %q; want an error about %q", strings.Join(c.args, " "), r.code, r.stderr, c.want)
		}
	}
	if _, err := vfs.Default.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Error("a command on a missing store created it")
	}
	fresh := filepath.Join(t.TempDir(), "fresh")
	if r := invoke(t, "", "topics", "create", fresh, "t", "--partitions", "-1"); r.code == 0 {
		t.Error("--partitions -1 accepted")
	}
	if _, err := vfs.Default.Stat(fresh); err == nil {
		t.Error("a refused create left a store directory behind")
	}

	mustInvoke(t, "", "groups", "delete", dir, "billing")
	mustInvoke(t, "", "topics", "delete", dir, "bookings")
	if r := mustInvoke(t, "", "topics", "list", dir); r.stdout != "" {
		t.Errorf("after delete: %q", r.stdout)
	}
	names, err := vfs.Default.List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "bookings") {
			t.Errorf("left behind after delete: %s", n)
		}
	}
}
