package fsck

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestPartitionDirsFindsNoneInAHome (issue 26 item 6): a directory holding
// no partition (a home directory, a copy of testdata/) is ErrNoPartition,
// never a list of "partitions" with nothing in them; hidden directories
// are not searched (a segment file under .ssh is not looked at) and
// symbolic links below the root are not followed (one to a log elsewhere
// is not checked). A log.dir's partitions, and a log given itself, are
// found.
func TestPartitionDirsFindsNoneInAHome(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	elsewhere := filepath.Join(root, "elsewhere", "orders-0")
	writeLog(t, vfs.Default, elsewhere, record.None, 4, 2)
	vfstest.WriteFile(t, vfs.Default, filepath.Join(home, ".ssh", layout.FileName(0, ".log")), []byte("not read"))
	vfstest.WriteFile(t, vfs.Default, filepath.Join(home, "notes.txt"), []byte("hello"))
	vfstest.WriteFile(t, vfs.Default, filepath.Join(home, "src", "testdata", "kafka-client", "none.broker-log"), []byte("x"))
	if err := os.Symlink(elsewhere, filepath.Join(home, "logs")); err != nil { //vfs:allow a symbolic link, which vfs cannot make
		t.Fatal(err)
	}
	dirs, err := PartitionDirs(vfs.Default, home)
	var np *NoPartitionError
	if !errors.Is(err, ErrNoPartition) || !errors.As(err, &np) {
		t.Fatalf("PartitionDirs(home) = %v, %v; want ErrNoPartition", dirs, err)
	}
	for _, skipped := range []string{filepath.Join(home, ".ssh"), filepath.Join(home, "logs")} {
		if !slices.Contains(np.Skipped, skipped) || !strings.Contains(err.Error(), skipped) {
			t.Errorf("%s not named as skipped: %v", skipped, err)
		}
	}
	if !slices.Equal(np.Strays, []string{"notes.txt"}) {
		t.Errorf("strays %v", np.Strays)
	}
	// The link itself, given as the root, is taken as given.
	if dirs, err := PartitionDirs(vfs.Default, filepath.Join(home, "logs")); err != nil || len(dirs) != 1 {
		t.Fatalf("PartitionDirs(link to a log) = %v, %v", dirs, err)
	}
	if dirs, err := PartitionDirs(vfs.Default, filepath.Dir(elsewhere)); err != nil || !slices.Equal(dirs, []string{elsewhere}) {
		t.Fatalf("PartitionDirs(log.dir) = %v, %v", dirs, err)
	}
	if _, err := PartitionDirs(vfs.Default, t.TempDir()); !errors.Is(err, ErrNoPartition) {
		t.Fatalf("an empty directory: %v, want ErrNoPartition", err)
	}
}

// TestStrayFileInALog (issue 26 item 6): a file that is not a log's beside
// a log's (notes.txt) is not a problem, as for every other command and for
// Kafka: the check is clean and names it; a file named like a segment's
// that is not one is an error, as Open refuses the log over it.
func TestStrayFileInALog(t *testing.T) {
	fsys := vfs.NewMem()
	writeLog(t, fsys, "/p", record.None, 20, 5)
	vfstest.WriteFile(t, fsys, "/p/notes.txt", []byte("hello"))
	r := mustCheck(t, fsys, "/p", Options{Deep: true})
	if !r.Clean() || !slices.Equal(r.Stats.Strays, []string{"notes.txt"}) {
		t.Fatalf("stray file: clean %v, strays %v:%s", r.Clean(), r.Stats.Strays, dumpProblems(r))
	}
	vfstest.WriteFile(t, fsys, "/p/server.log", []byte("app"))
	r = mustCheck(t, fsys, "/p", Options{})
	if p := problemAt(r, "server.log", 0, KindSegmentName); p.Severity != Error {
		t.Fatalf("misnamed segment file not an error:%s", dumpProblems(r))
	}
	if err := fsys.MkdirAll("/p/sub"); err != nil {
		t.Fatal(err)
	}
	if r = mustCheck(t, fsys, "/p", Options{}); !hasProblem(r, "sub", 0, KindDirectory) {
		t.Fatalf("a directory inside the log not reported:%s", dumpProblems(r))
	}
}

// TestPartitionDirsEmptyPartitions: a store creates a new topic's
// partition directories empty, so an empty "topic-N" directory in a
// log.dir (one holding a checkpoint, the lock or meta.properties) is a
// partition with no segment yet, checked clean; an empty directory
// elsewhere is not.
func TestPartitionDirsEmptyPartitions(t *testing.T) {
	fsys := vfs.NewMem()
	for _, d := range []string{"/store/t-0", "/store/t-1", "/home/backup-2"} {
		if err := fsys.MkdirAll(d); err != nil {
			t.Fatal(err)
		}
	}
	vfstest.WriteFile(t, fsys, "/store/recovery-point-offset-checkpoint", []byte("0\n0\n"))
	dirs, err := PartitionDirs(fsys, "/store")
	if err != nil || !slices.Equal(dirs, []string{"/store/t-0", "/store/t-1"}) {
		t.Fatalf("PartitionDirs(store) = %v, %v", dirs, err)
	}
	if dirs, err := PartitionDirs(fsys, "/store/t-1"); err != nil || !slices.Equal(dirs, []string{"/store/t-1"}) {
		t.Fatalf("PartitionDirs(store/t-1) = %v, %v", dirs, err)
	}
	if r := mustCheck(t, fsys, "/store/t-0", Options{}); !r.Clean() {
		t.Fatalf("an empty partition:%s", dumpProblems(r))
	}
	for _, root := range []string{"/home", "/home/backup-2"} {
		if _, err := PartitionDirs(fsys, root); !errors.Is(err, ErrNoPartition) {
			t.Fatalf("PartitionDirs(%s): %v, want ErrNoPartition", root, err)
		}
	}
}

// TestPartitionDirsClusterNode: in a cluster node's DIR (a log.dir), the
// hidden directory holding the cluster's metadata raft log
// (layout.ClusterMetadataDir) is searched, so that fsck of a node's DIR
// covers all of its state; another hidden directory there, and one of
// that name outside a log.dir, are not.
func TestPartitionDirsClusterNode(t *testing.T) {
	fsys := vfs.NewMem()
	writeLog(t, fsys, "/node/orders-0", record.None, 4, 2)
	writeLog(t, fsys, "/node/.other/t-0", record.None, 4, 2)
	// A metadata log is written only by raftlog (seglog.ErrInRaftLog):
	// the fixtures are written elsewhere and moved in.
	for _, top := range []string{"/node", "/home"} {
		writeLog(t, fsys, top+"-fixture/raft-0", record.None, 4, 2)
		if err := fsys.MkdirAll(top + "/" + layout.ClusterMetadataDir); err != nil {
			t.Fatal(err)
		}
		if err := fsys.Rename(top+"-fixture/raft-0", top+"/"+layout.ClusterMetadataDir+"/raft-0"); err != nil {
			t.Fatal(err)
		}
	}
	vfstest.WriteFile(t, fsys, "/node/"+layout.MetaPropertiesFile, []byte("node.id=1\ncluster.id=c\n"))
	dirs, err := PartitionDirs(fsys, "/node")
	want := []string{"/node/" + layout.ClusterMetadataDir + "/raft-0", "/node/orders-0"}
	if err != nil || !slices.Equal(dirs, want) {
		t.Fatalf("PartitionDirs(node) = %v, %v; want %v", dirs, err, want)
	}
	if _, err := PartitionDirs(fsys, "/home"); !errors.Is(err, ErrNoPartition) {
		t.Fatalf("PartitionDirs(home): %v, want ErrNoPartition (its %s is not a node's)", err, layout.ClusterMetadataDir)
	}
}
