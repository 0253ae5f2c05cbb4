package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
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
	vfstest.Unchanged(t, "the read commands", before, dirSnapshot(t, dir))

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

// readOnlyFixture makes, under base, a store (topic bookings of 3
// partitions, records, group billing's commits) and a single log of
// several segments, both left as a crash leaves them (no clean-shutdown
// marker), so that a writable open would recover, rebuild and mark them.
func readOnlyFixture(t *testing.T, base string) (storeDir, logDir string) {
	t.Helper()
	storeDir, logDir = filepath.Join(base, "data"), filepath.Join(base, "log")
	mustInvoke(t, "", "topics", "create", storeDir, "bookings", "--partitions", "3")
	mustInvoke(t, "b1\tBookingCreated\nb2\tBookingCreated\nb3\tBookingCreated\n", "produce", storeDir, "--topic", "bookings")
	mustInvoke(t, "", "consume", storeDir, "--topic", "bookings", "--group", "billing", "--from-beginning")
	mustInvoke(t, numberedLines(1, 200), "produce", logDir, "--batch", "9", "--segment-bytes", "2048", "--max-index-bytes", "4096")
	for _, marker := range []string{filepath.Join(storeDir, layout.CleanShutdownFile), filepath.Join(logDir, layout.CleanShutdownFile)} {
		if err := vfs.Default.Remove(marker); err != nil {
			t.Fatal(err)
		}
	}
	return storeDir, logDir
}

// readCommands is every command that only reads, on a store and on a
// single log, with what its output must hold. ui is run apart: it serves
// until stopped.
func readCommands(storeDir, logDir string) []readCommand {
	part := filepath.Join(storeDir, "bookings-0")
	return []readCommand{
		{[]string{"consume", logDir}, "line-200"},
		{[]string{"consume", logDir, "--json", "--from", "-5"}, `"offset":199`},
		{[]string{"consume", logDir, "--raw", "--from", "-1"}, ""},
		{[]string{"dump", logDir, "--records"}, "line-17"},
		{[]string{"fsck", logDir}, ""},
		{[]string{"clean", logDir, "--dry-run", "--retention-bytes", "1"}, "would delete"},
		{[]string{"consume", storeDir, "--topic", "bookings", "--from-beginning"}, "BookingCreated"},
		{[]string{"topics", "list", storeDir}, "bookings\n"},
		{[]string{"topics", "describe", storeDir, "bookings"}, "PartitionCount: 3"},
		{[]string{"groups", "list", storeDir}, "billing\n"},
		{[]string{"groups", "describe", storeDir, "billing"}, "TOTAL LAG: 0\n"},
		{[]string{"clean", storeDir, "--dry-run"}, "nothing changed (dry run)"},
		{[]string{"consume", part}, ""},
		{[]string{"dump", part}, ""},
		{[]string{"fsck", part}, ""},
		{[]string{"clean", part, "--dry-run", "--retention-bytes", "1"}, "nothing changed (dry run)"},
	}
}

type readCommand struct {
	args []string
	want string
}

// uiStoreLoad runs seglog ui on storeDir as proc makes it, loads the
// store's state from it as the page does, and stops it.
func uiStoreLoad(t *testing.T, start func(stderr *lockedBuffer, args ...string) *exec.Cmd, storeDir string) {
	t.Helper()
	var stderr lockedBuffer
	cmd := start(&stderr, "ui", storeDir, "--listen", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatalf("ui: no output; stderr %s", stderr.String())
	}
	_, url, ok := strings.Cut(sc.Text(), " at ")
	url, _, _ = strings.Cut(url, " ")
	if !ok {
		t.Fatalf("ui printed %q", sc.Text())
	}
	resp, err := http.Get(url + "api/state")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "bookings") || !strings.Contains(string(body), "billing") {
		t.Fatalf("ui's state: %d %v %.300s", resp.StatusCode, err, body)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
	}
	if code := exitCode(t, cmd.Wait(), &stderr); code != 0 {
		t.Fatalf("ui exited %d: %s", code, stderr.String())
	}
}

// TestReadCommandsWriteNothing: every command that only reads (consume of
// a log, of a store's topic and of a store's partition, dump, fsck without
// --repair, topics list|describe, groups list|describe, clean --dry-run,
// and ui's loading of a store) changes no byte, mode, time or entry of a
// store or a log left as a crash leaves them; then the same commands, run
// as a user who cannot write them (nobody, when the test runs as root),
// on the tree made read-only, succeed and change nothing either. A
// writing command fails there first, so the test cannot pass on a tree
// that user could write.
func TestReadCommandsWriteNothing(t *testing.T) {
	base := t.TempDir()
	storeDir, logDir := readOnlyFixture(t, base)
	cmds := readCommands(storeDir, logDir)
	check := func(who string, run func(args ...string) (int, string, string), start func(*lockedBuffer, ...string) *exec.Cmd) {
		t.Helper()
		before := dirSnapshot(t, base)
		for _, c := range cmds {
			code, stdout, stderr := run(c.args...)
			if code != 0 || !strings.Contains(stdout, c.want) {
				t.Errorf("%s: seglog %s: exit %d, stdout %.200q, stderr %q; want %q", who, strings.Join(c.args, " "), code, stdout, stderr, c.want)
			}
			vfstest.Unchanged(t, who+": seglog "+strings.Join(c.args, " "), before, dirSnapshot(t, base))
		}
		uiStoreLoad(t, start, storeDir)
		vfstest.Unchanged(t, who+": seglog ui", before, dirSnapshot(t, base))
	}
	check("the owner", func(args ...string) (int, string, string) {
		r := invoke(t, "", args...)
		return r.code, r.stdout, r.stderr
	}, func(stderr *lockedBuffer, args ...string) *exec.Cmd { return seglogProcess(t, stderr, args...) })

	for _, dir := range []string{storeDir, logDir} {
		chmodTree(t, dir, 0o555, 0o444)
		t.Cleanup(func() { chmodTree(t, dir, 0o755, 0o644) })
	}
	other := func(args ...string) (int, string, string) { return invokeAsOtherUser(t, base, "", args...) }
	for _, args := range [][]string{{"topics", "create", storeDir, "other"}, {"produce", logDir}} {
		if code, _, _ := invokeAsOtherUser(t, base, "x\n", args...); code == 0 {
			t.Fatalf("seglog %s succeeded: the tree is writable, so the test proves nothing", strings.Join(args, " "))
		}
	}
	check("another user, read-only tree", other, func(stderr *lockedBuffer, args ...string) *exec.Cmd {
		return otherUserProcess(t, base, stderr, args...)
	})
}
