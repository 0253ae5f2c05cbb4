package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// answersLog writes a log of several segments with produce and returns its
// directory and its .log paths.
func answersLog(t *testing.T) (string, []string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "orders-0")
	mustInvoke(t, numberedLines(1, 300), "produce", dir, "--batch", "10", "--segment-bytes", "2048")
	logs := storedLogs(t, dir)
	if len(logs) < 3 {
		t.Fatalf("%d segments, want 3 or more", len(logs))
	}
	return dir, logs
}

// TestFsckMissingDataCLI (issue 26 item 4): a middle segment emptied (:
// > its .log) or deleted with its three files: fsck says "data missing:
// offsets X–Y" and exits 4; fsck --repair cannot fix it and exits 4; fsck
// afterwards still says so. Before, the emptied segment showed only index
// errors, which --repair "repaired" (then fsck said clean), and the
// deleted one was clean.
func TestFsckMissingDataCLI(t *testing.T) {
	for _, how := range []string{"emptied", "deleted"} {
		t.Run(how, func(t *testing.T) {
			dir, logs := answersLog(t)
			if how == "emptied" {
				writeVFS(t, logs[1], nil)
			} else {
				for _, suf := range []string{".log", ".index", ".timeindex"} {
					if err := vfs.Default.Remove(strings.TrimSuffix(logs[1], ".log") + suf); err != nil {
						t.Fatal(err)
					}
				}
			}
			want := fmt.Sprintf("data missing: offsets %d–%d", baseOf(t, logs[1]), baseOf(t, logs[2])-1)
			for _, args := range [][]string{{"fsck", dir}, {"fsck", "--repair", dir}, {"fsck", dir}} {
				r := invoke(t, "", args...)
				if r.code != 4 || !strings.Contains(r.stdout, want) {
					t.Fatalf("seglog %s: exit %d, want 4 and %q\n%s%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
				}
			}
		})
	}
}

// TestFsckNoPartitionCLI (issue 26 item 6): fsck on a directory holding no
// partition (a copy of testdata/, a home directory) says no partition was
// found and exits 8, and never descends into hidden directories (nor
// follows a symbolic link): a segment file under .ssh is not checked.
func TestFsckNoPartitionCLI(t *testing.T) {
	home := t.TempDir()
	writeVFS(t, filepath.Join(home, ".ssh", "00000000000000000000.log"), []byte("private"))
	writeVFS(t, filepath.Join(home, "notes.txt"), []byte("hello"))
	testdata := filepath.Join(home, "testdata")
	copyTree(t, filepath.Join("..", "..", "testdata"), testdata)
	other, _ := answersLog(t)
	if err := os.Symlink(other, filepath.Join(home, "orders-0")); err != nil { //vfs:allow a symbolic link, which vfs cannot make
		t.Fatal(err)
	}
	for _, dir := range []string{home, testdata} {
		before := dirSnapshot(t, home)
		r := invoke(t, "", "fsck", "--repair", dir)
		if r.code != 8 || !strings.Contains(r.stderr, "no partition directory found") {
			t.Fatalf("fsck %s: exit %d, want 8 and \"no partition directory found\"\n%s%s", dir, r.code, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout, ".ssh") || strings.Contains(r.stdout, "orders-0") {
			t.Fatalf("fsck %s checked a hidden directory or a link:\n%s", dir, r.stdout)
		}
		vfstest.Unchanged(t, "fsck of a directory holding no partition", before, dirSnapshot(t, home))
	}
	if r := invoke(t, "", "fsck", home); !strings.Contains(r.stderr, filepath.Join(home, ".ssh")) {
		t.Fatalf("the message does not name the hidden directory it skipped: %s", r.stderr)
	}
}

// copyTree copies the regular files below src into dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	names, err := vfs.Default.List(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := vfs.Default.MkdirAll(dst); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		fi, err := vfs.Default.Stat(filepath.Join(src, n))
		if err != nil {
			t.Fatal(err)
		}
		if fi.IsDir() {
			copyTree(t, filepath.Join(src, n), filepath.Join(dst, n))
			continue
		}
		writeVFS(t, filepath.Join(dst, n), readVFS(t, filepath.Join(src, n)))
	}
}

// TestDumpLeftoverCLI (issue 26 item 6): dump of a directory with a
// leftover copy of a segment (….log.deleted) shows the healthy segment's
// batches as the valid batches they are, and the leftover as a leftover.
// Before, every batch of the healthy segment was "damaged (offset-range)".
func TestDumpLeftoverCLI(t *testing.T) {
	dir, logs := answersLog(t)
	writeVFS(t, logs[1]+".deleted", readVFS(t, logs[1]))
	out := mustInvoke(t, "", "dump", dir).stdout
	if strings.Contains(out, "damaged") {
		t.Fatalf("dump calls a healthy batch damaged:\n%.2000s", out)
	}
	if !strings.Contains(out, "("+filepath.Base(logs[1])+".deleted is a leftover, not part of the log: file scheduled for deletion") {
		t.Fatalf("dump does not name the leftover:\n%.2000s", out)
	}
}

// TestStrayFileOneAnswer (issue 26 item 6): a stray notes.txt in a log is
// one answer for every command: the log is a log, and the file is ignored
// (as Kafka's loader ignores it): consume, produce, clean, dump and fsck
// all succeed and leave it alone. Before, consume, produce and clean
// refused the log while fsck called it clean. A file named like a
// segment's that is not one (server.log) is refused by every command that
// opens the log and reported by fsck.
func TestStrayFileOneAnswer(t *testing.T) {
	dir, _ := answersLog(t)
	notes := filepath.Join(dir, "notes.txt")
	writeVFS(t, notes, []byte("hello"))
	if n := len(consumedValues(t, dir)); n != 300 {
		t.Fatalf("consume read %d records, want 300", n)
	}
	mustInvoke(t, "one more\n", "produce", dir)
	mustInvoke(t, "", "clean", dir, "--retention-ms", "100000000000")
	if out := mustInvoke(t, "", "dump", dir).stdout; !strings.Contains(out, "ignored as Kafka ignores them: notes.txt") {
		t.Fatalf("dump does not name the stray file:\n%.300s", out[max(0, len(out)-300):])
	}
	if out := mustInvoke(t, "", "fsck", dir).stdout; !strings.Contains(out, "ignored as Kafka ignores them: notes.txt") {
		t.Fatalf("fsck does not name the stray file:\n%s", out)
	}
	if out, code := fsckJSONRun(t, dir); code != 0 || fmt.Sprint(out.Stats["stray_files"]) != fmt.Sprint([]string{notes}) {
		t.Fatalf("fsck --json: exit %d, stray_files %v, want [%s]", code, out.Stats["stray_files"], notes)
	}
	if got := string(readVFS(t, notes)); got != "hello" {
		t.Fatalf("notes.txt holds %q", got)
	}
	writeVFS(t, filepath.Join(dir, "server.log"), []byte("app"))
	before := dirSnapshot(t, dir)
	for _, args := range [][]string{{"consume", dir}, {"produce", dir}, {"clean", dir, "--retention-ms", "1"}} {
		if r := invoke(t, "x\n", args...); r.code == 0 || !strings.Contains(r.stderr, "server.log") {
			t.Errorf("seglog %s: exit %d, stderr %q; want a refusal naming server.log", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := invoke(t, "", "fsck", dir); r.code != 4 || !strings.Contains(r.stdout, "server.log") || !strings.Contains(r.stdout, "segment-name") {
		t.Errorf("fsck: exit %d, want 4 naming server.log:\n%s", r.code, r.stdout)
	}
	vfstest.Unchanged(t, "refusals", before, dirSnapshot(t, dir))
}

// TestGarbageCheckpointOneAnswer (issue 26 item 6): a garbage checkpoint
// blocks consume, produce and clean, whose error names the file and the
// line and says to run seglog fsck --repair DIR; fsck reports it as an
// error; fsck --repair rewrites it keeping every record, says what it
// wrote and exits 1; then every command works. Before, fsck --repair
// reported 0 repaired and gave no hint.
func TestGarbageCheckpointOneAnswer(t *testing.T) {
	for _, file := range []string{"recovery-point-offset-checkpoint", "log-start-offset-checkpoint"} {
		t.Run(file, func(t *testing.T) {
			dir, _ := answersLog(t)
			cp := filepath.Join(dir, file)
			writeVFS(t, cp, []byte("0\n1\ngarbage\n"))
			for _, args := range [][]string{{"consume", dir}, {"produce", dir}, {"clean", dir, "--retention-ms", "1"}} {
				r := invoke(t, "x\n", args...)
				for _, want := range []string{cp + " line 3", `"seglog fsck --repair ` + dir + `"`} {
					if r.code == 0 || !strings.Contains(r.stderr, want) {
						t.Errorf("seglog %s: exit %d, stderr %q; want a refusal saying %s", strings.Join(args, " "), r.code, r.stderr, want)
					}
				}
			}
			if r := invoke(t, "", "fsck", dir); r.code != 4 || !strings.Contains(r.stdout, "error checkpoint: unusable: line 3") {
				t.Fatalf("fsck: exit %d, want 4 and the unusable line\n%s", r.code, r.stdout)
			}
			r := invoke(t, "", "fsck", "--repair", dir)
			if r.code != 1 || !strings.Contains(r.stdout, "[repaired: wrote "+file+` with the line "orders 0 0"`) {
				t.Fatalf("fsck --repair: exit %d, want 1 and what it wrote\n%s%s", r.code, r.stdout, r.stderr)
			}
			if n := len(consumedValues(t, dir)); n != 300 {
				t.Fatalf("consume after the repair read %d records, want 300", n)
			}
			mustInvoke(t, "", "fsck", dir)
		})
	}
}

// TestLogStartBeyondEndCLI (issue 26 item 6): a log-start checkpoint
// beyond the end of the log is an error for fsck; --repair sets it to the
// end, deleting no segment (nothing comes back either: the log reads
// empty), and says so.
func TestLogStartBeyondEndCLI(t *testing.T) {
	dir, logs := answersLog(t)
	writeVFS(t, filepath.Join(dir, "log-start-offset-checkpoint"), []byte("0\n1\norders 0 99999\n"))
	if r := invoke(t, "", "fsck", dir); r.code != 4 || !strings.Contains(r.stdout, "error checkpoint: log start offset 99999 (line 3) is beyond the end of the log 300") {
		t.Fatalf("fsck: exit %d\n%s", r.code, r.stdout)
	}
	if r := invoke(t, "", "fsck", "--repair", dir); r.code != 1 || !strings.Contains(r.stdout, `"orders 0 300": the end of the log`) {
		t.Fatalf("fsck --repair: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after := storedLogs(t, dir); len(after) != len(logs) {
		t.Fatalf("%d segments after repair, were %d", len(after), len(logs))
	}
	if vals := consumedValues(t, dir); len(vals) != 0 {
		t.Fatalf("consume printed %d records that lay below the log start", len(vals))
	}
	mustInvoke(t, "", "fsck", dir)
}
