package lint

import (
	"fmt"
	"os/exec"
	"path"
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestPublicAPIFromOutsideModule runs a program of a scratch module that
// requires seglog through a replace directive, so it can use exported names
// only, as an embedder does: the in-memory filesystem and its crash clone,
// the fault injector, Open (writable and read-only), checkpoints, the
// corruption error and fsck. The docs test only compiles snippets; this one
// checks that what an embedder can name also works from there.
func TestPublicAPIFromOutsideModule(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build the program: %v", err)
	}
	root := moduleRoot(t)
	abs, err := exec.Command(gobin, "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	modDir := strings.TrimSpace(string(abs))
	scratch := t.TempDir()
	gomod := fmt.Sprintf("module embedder\n\ngo 1.26\n\nrequire github.com/seglog/seglog v0.0.0\n\nreplace github.com/seglog/seglog => %s\n", modDir)
	vfstest.WriteFile(t, vfs.Default, path.Join(scratch, "go.mod"), []byte(gomod))
	vfstest.WriteFile(t, vfs.Default, path.Join(scratch, "go.sum"), readFile(t, path.Join(root, "go.sum")))
	vfstest.WriteFile(t, vfs.Default, path.Join(scratch, "main.go"), []byte(embedderProgram))
	cmd := exec.Command(gobin, "run", ".")
	cmd.Dir = scratch
	cmd.Env = append(cmd.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(string(out), "ok\n") {
		t.Fatalf("the embedder's program failed (%v):\n%s", err, out)
	}
}

// embedderProgram exits non-zero with a message at the first thing that
// does not work as documented, and prints "ok" at the end.
const embedderProgram = `package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

func fail(format string, args ...any) {
	fmt.Printf(format+"\n", args...)
	os.Exit(1)
}

func main() {
	const dir = "/data/events-0"
	mem := vfs.NewMem()
	l, err := seglog.Open(dir, seglog.Options{FS: mem})
	if err != nil {
		fail("open: %v", err)
	}
	for i := range 100 {
		if _, err := l.Append(record.Record{Key: []byte("k"), Value: []byte(fmt.Sprintf("value %d", i))}); err != nil {
			fail("append: %v", err)
		}
	}
	if err := l.Sync(); err != nil {
		fail("sync: %v", err)
	}
	// A power loss after the Sync: every record survives.
	crashed := mem.CrashClone()
	if err := l.Close(); err != nil {
		fail("close: %v", err)
	}
	l, err = seglog.Open(dir, seglog.Options{FS: crashed})
	if err != nil {
		fail("open after the crash: %v", err)
	}
	n := 0
	for r, err := range l.Records(0) {
		if err != nil {
			fail("records: %v", err)
		}
		if want := fmt.Sprintf("value %d", n); string(r.Value) != want || r.Offset != int64(n) {
			fail("record %d: offset %d value %q", n, r.Offset, r.Value)
		}
		n++
	}
	if n != 100 {
		fail("%d records after the crash, want 100", n)
	}
	if err := l.Close(); err != nil {
		fail("close: %v", err)
	}

	// Checkpoints are readable with the exported functions.
	cp, err := layout.ReadCheckpoint(crashed, dir+"/"+seglog.RecoveryPointFile)
	if err != nil || len(cp) != 1 || cp[0].Offset != 100 {
		fail("recovery point checkpoint %+v, %v; want one line at 100", cp, err)
	}

	// A failing fsync, injected, is an error, not an acknowledgement.
	boom := errors.New("injected")
	faulty := vfs.Inject(crashed, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpSync {
			return boom
		}
		return nil
	}))
	l, err = seglog.Open(dir, seglog.Options{FS: faulty, LogConfig: seglog.LogConfig{Sync: seglog.SyncAlways}})
	if err != nil {
		fail("open over a failing fsync: %v", err)
	}
	if _, err = l.Append(record.Record{Value: []byte("lost")}); !errors.Is(err, boom) {
		fail("append over a failing fsync: %v, want the injected error", err)
	}
	l.Close()

	// Damage below the recovery point: Open refuses it with the file and
	// position fsck reports, read-only too, and changes nothing.
	lines, err := layout.ReadCheckpoint(crashed, dir+"/"+seglog.RecoveryPointFile)
	if err != nil {
		fail("read checkpoint: %v", err)
	}
	if err := layout.WriteCheckpoint(crashed, dir+"/"+seglog.RecoveryPointFile, lines); err != nil {
		fail("write checkpoint: %v", err)
	}
	crashed.Remove(dir + "/" + seglog.CleanShutdownFile)
	logFile := dir + "/00000000000000000000.log"
	f, err := crashed.OpenReadWrite(logFile)
	if err != nil {
		fail("open .log: %v", err)
	}
	b := []byte{0}
	f.ReadAt(b, 200)
	b[0] ^= 0xff
	f.WriteAt(b, 200)
	f.Close()
	rep, err := fsck.Check(crashed, dir, fsck.Options{})
	if err != nil || rep.Clean() {
		fail("fsck found nothing: %v", err)
	}
	pos := rep.Problems[0].Position
	for _, ro := range []bool{true, false} {
		_, err := seglog.Open(dir, seglog.Options{FS: crashed, ReadOnly: ro})
		var ce *seglog.CorruptionError
		if !errors.Is(err, seglog.ErrCorrupt) || !errors.As(err, &ce) || ce.File != logFile || ce.Pos != pos {
			fail("read-only=%v: open of a damaged log: %v; want a CorruptionError at %s byte %d", ro, err, logFile, pos)
		}
	}
	fmt.Println("ok")
}
`
