package fsck

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestCheckIsReadOnly runs checks of damaged directories on a filesystem
// that fails every operation other than reading: a check must open nothing
// for writing, take no lock and map nothing.
func TestCheckIsReadOnly(t *testing.T) {
	mem := vfs.NewMem()
	writeLog(t, mem, "/p", record.Gzip, 60, 3)
	logs := logFiles(t, mem, "/p")
	data := vfstest.ReadFile(t, mem, filepath.Join("/p", logs[0]))
	data[100] ^= 0xff
	vfstest.WriteFile(t, mem, filepath.Join("/p", logs[0]), data)
	vfstest.WriteFile(t, mem, "/p/"+logs[0]+".swap", data)

	allowed := map[vfs.OpKind]bool{vfs.OpOpen: true, vfs.OpList: true, vfs.OpStat: true, vfs.OpRead: true, vfs.OpSize: true, vfs.OpClose: true}
	var forbidden []vfs.Op
	ro := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		if !allowed[op.Kind] {
			forbidden = append(forbidden, op)
			return errors.New("read-only test filesystem")
		}
		return nil
	}))
	r, err := Check(ro, "/p", Options{Deep: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(forbidden) > 0 {
		t.Fatalf("check attempted %v", forbidden)
	}
	if r.Clean() {
		t.Fatal("damage not found")
	}
	if _, err := Repair(ro, "/p", RepairOptions{}); err == nil {
		t.Fatal("repair on a read-only filesystem reported success")
	}
}

// TestRepairRefusesLockedDir checks that repair leaves a directory alone
// while someone holds its lock, and works once it is released.
func TestRepairRefusesLockedDir(t *testing.T) {
	fsys := vfs.NewMem()
	writeLog(t, fsys, "/p", record.None, 30, 2)
	crash(t, fsys, "/p", 50) // the last batches were not synced: a torn tail there is cut
	logs := logFiles(t, fsys, "/p")
	last := filepath.Join("/p", logs[len(logs)-1])
	data := vfstest.ReadFile(t, fsys, last)
	vfstest.WriteFile(t, fsys, last, data[:len(data)-7])

	lk, err := fsys.Lock("/p/.lock")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Repair(fsys, "/p", RepairOptions{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("repair of a locked directory: %v, want ErrLocked", err)
	}
	// One ErrLocked: a Log's and a store's refusal match the same value,
	// and the holder the lock file records is named.
	if err := lk.SetOwner(layout.Holder{Command: "seglog serve", PID: 4242, Listener: "127.0.0.1:9092"}.Format()); err != nil {
		t.Fatal(err)
	}
	_, err = Repair(fsys, "/p", RepairOptions{})
	if want := "fsck: directory is locked by a running log; stop it before repairing: /p/.lock is held by `seglog serve` (pid 4242, listening on 127.0.0.1:9092)"; !errors.Is(err, seglog.ErrLocked) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("repair of a directory a server holds: %v, want seglog.ErrLocked starting %q", err, want)
	}
	if got := vfstest.ReadFile(t, fsys, last); len(got) != len(data)-7 {
		t.Fatalf("the locked directory was modified")
	}
	if err := lk.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Repair(fsys, "/p", RepairOptions{})
	if err != nil || r.ExitCode() != ExitRepaired {
		t.Fatalf("repair after unlock: %v, exit %d", err, r.ExitCode())
	}
}

// TestRepairLeavesNonLogDirAlone: repair of a directory holding nothing of
// a log must not leave a .lock file there, as no command writes into a
// directory that is not a log: an empty one (an empty log) is only
// checked, clean; one holding only other files is ErrNoPartition, for
// Check too.
func TestRepairLeavesNonLogDirAlone(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/empty"); err != nil {
		t.Fatal(err)
	}
	vfstest.WriteFile(t, fsys, "/photos/notes.txt", []byte("not a log\n"))
	if r, err := Repair(fsys, "/empty", RepairOptions{}); err != nil || r.ExitCode() != ExitClean {
		t.Fatalf("repair of an empty directory: %v", err)
	}
	if _, err := Repair(fsys, "/photos", RepairOptions{}); !errors.Is(err, ErrNoPartition) {
		t.Fatalf("repair of a directory of other files: %v, want ErrNoPartition", err)
	}
	if _, err := Check(fsys, "/photos", Options{}); !errors.Is(err, ErrNoPartition) {
		t.Fatalf("check of a directory of other files: %v, want ErrNoPartition", err)
	}
	for _, dir := range []string{"/empty", "/photos"} {
		if names, _ := fsys.List(dir); slices.Contains(names, ".lock") {
			t.Fatalf("repair of %s left a lock file", dir)
		}
	}
}
