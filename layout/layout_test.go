package layout

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

func TestPlanLeftovers(t *testing.T) {
	n := FileName
	names := []string{
		n(0, LogSuffix), n(0, IndexSuffix),
		n(10, LogSuffix+DeletedSuffix),
		n(20, LogSuffix+SwapSuffix), n(20, IndexSuffix+SwapSuffix), // below the lowest .cleaned: complete
		n(30, LogSuffix+CleanedSuffix),
		n(40, LogSuffix+SwapSuffix), // at or above it: uncommitted, delete
		RecoveryPointFile + CheckpointTmpSuffix,
		"partition.metadata",
	}
	p := PlanLeftovers(names)
	wantRemove := []string{n(10, LogSuffix+DeletedSuffix), n(30, LogSuffix+CleanedSuffix), RecoveryPointFile + CheckpointTmpSuffix, n(40, LogSuffix+SwapSuffix)}
	slices.Sort(p.Remove)
	slices.Sort(wantRemove)
	if !slices.Equal(p.Remove, wantRemove) {
		t.Fatalf("Remove = %v, want %v", p.Remove, wantRemove)
	}
	if want := []string{n(20, LogSuffix+SwapSuffix), n(20, IndexSuffix+SwapSuffix)}; !slices.Equal(p.Swaps, want) {
		t.Fatalf("Swaps = %v, want %v", p.Swaps, want)
	}
	if PlanLeftovers([]string{n(0, LogSuffix), RecoveryPointFile}).Empty() != true {
		t.Fatal("a clean listing plans changes")
	}
}

func TestSegmentFilesAndOrphans(t *testing.T) {
	names := []string{FileName(5, LogSuffix), FileName(5, IndexSuffix), FileName(0, LogSuffix),
		FileName(9, IndexSuffix), FileName(9, TimeIndexSuffix), FileName(0, LogSuffix+DeletedSuffix)}
	files, bases := SegmentFiles(names)
	if !slices.Equal(bases, []int64{0, 5}) || files[5] != HasLog|HasIndex || files[0] != HasLog {
		t.Fatalf("SegmentFiles = %v, %v", files, bases)
	}
	if got := Orphans(names); !slices.Equal(got, []string{FileName(9, IndexSuffix), FileName(9, TimeIndexSuffix)}) {
		t.Fatalf("Orphans = %v", got)
	}
}

// TestResolve: a committed swap replaces the segments in its range, and
// everything else a crash left is removed, durably.
func TestResolve(t *testing.T) {
	fs := vfs.NewMem()
	dir := "/p"
	if err := fs.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{
		FileName(0, LogSuffix), FileName(0, IndexSuffix), FileName(10, LogSuffix), FileName(20, LogSuffix),
		FileName(0, LogSuffix+SwapSuffix), FileName(0, IndexSuffix+SwapSuffix),
		FileName(7, LogSuffix+DeletedSuffix), FileName(99, TimeIndexSuffix),
		LogStartOffsetFile + CheckpointTmpSuffix,
	} {
		vfstest.WriteFile(t, fs, dir+"/"+name, []byte(name))
	}
	end := func(_ vfs.FS, path string, base int64) (int64, error) {
		if path != dir+"/"+FileName(0, LogSuffix+SwapSuffix) || base != 0 {
			return 0, fmt.Errorf("unexpected LogEnd(%s, %d)", path, base)
		}
		return 20, nil // the swap covers [0, 20): segments 0 and 10
	}
	names, changed, err := Resolve(fs, dir, end)
	if err != nil || !changed {
		t.Fatalf("Resolve: %v, changed %v", err, changed)
	}
	want := []string{FileName(0, IndexSuffix), FileName(0, LogSuffix), FileName(20, LogSuffix)}
	if !slices.Equal(names, want) {
		t.Fatalf("after Resolve: %v, want %v", names, want)
	}
	if got := string(vfstest.ReadFile(t, fs, dir+"/"+FileName(0, LogSuffix))); got != FileName(0, LogSuffix+SwapSuffix) {
		t.Fatalf("segment 0 holds %q, want the swapped-in file", got)
	}
	// Durable: a power loss now keeps the resolved directory.
	after, err := fs.CrashClone().List(dir)
	if err != nil || !slices.Equal(after, want) {
		t.Fatalf("after a crash: %v, %v", after, err)
	}
	if _, changed, err := Resolve(fs, dir, end); err != nil || changed {
		t.Fatalf("second Resolve: %v, changed %v", err, changed)
	}
}

func TestCheckpoints(t *testing.T) {
	fs := vfs.NewMem()
	if err := fs.MkdirAll("/kafka"); err != nil {
		t.Fatal(err)
	}
	entries := []CheckpointEntry{{Topic: "a", Partition: 0, Offset: 5}, {Topic: "t-x", Partition: 3, Offset: 42}}
	if err := WriteCheckpoint(fs, "/kafka/"+RecoveryPointFile, entries); err != nil {
		t.Fatal(err)
	}
	got, err := ReadCheckpoint(fs, "/kafka/"+RecoveryPointFile)
	if err != nil || !slices.Equal(got, entries) {
		t.Fatalf("ReadCheckpoint = %v, %v", got, err)
	}
	topic, part, ok := KafkaPartition("/kafka/t-x-3/")
	if !ok || topic != "t-x" || part != 3 {
		t.Fatalf("KafkaPartition = %q %d %v", topic, part, ok)
	}
	for _, d := range []string{"/kafka/log", "/kafka/-3", "/kafka/t-x"} {
		if _, _, ok := KafkaPartition(d); ok {
			t.Fatalf("KafkaPartition(%q) ok", d)
		}
	}
	if off, ok, err := PartitionOffset(fs, "/kafka/"+RecoveryPointFile, "t-x", 3); err != nil || !ok || off != 42 {
		t.Fatalf("PartitionOffset = %d %v %v", off, ok, err)
	}
	if _, ok, err := PartitionOffset(fs, "/kafka/"+RecoveryPointFile, "t-x", 4); err != nil || ok {
		t.Fatalf("PartitionOffset of a missing line: %v %v", ok, err)
	}
	if _, ok, err := PartitionOffset(fs, "/kafka/missing", "t-x", 3); err != nil || ok {
		t.Fatalf("PartitionOffset of a missing file: %v %v", ok, err)
	}
}

// TestSwapProtocol: .cleaned files are rolled back by a crash before the
// commit and completed by one after it.
func TestSwapProtocol(t *testing.T) {
	setup := func() *vfs.MemFS {
		fs := vfs.NewMem()
		if err := fs.MkdirAll("/p"); err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{FileName(0, LogSuffix), FileName(10, LogSuffix)} {
			writeSynced(t, fs, "/p/"+n, "old "+n)
		}
		writeSynced(t, fs, "/p/"+FileName(0, LogSuffix+CleanedSuffix), "compacted")
		if err := fs.SyncDir("/p"); err != nil {
			t.Fatal(err)
		}
		return fs
	}
	end := func(vfs.FS, string, int64) (int64, error) { return 20, nil }
	old := []string{FileName(0, LogSuffix), FileName(10, LogSuffix)}

	// Crash before the commit: rolled back.
	names, _, err := Resolve(setup().CrashClone(), "/p", end)
	if err != nil || !slices.Equal(names, old) {
		t.Fatalf("before the commit: %v, %v; want %v", names, err, old)
	}
	// Crash after it: completed.
	fs := setup()
	swaps, err := CommitCleaned(fs, "/p", []string{FileName(0, LogSuffix+CleanedSuffix)})
	if err != nil || !slices.Equal(swaps, []string{FileName(0, LogSuffix+SwapSuffix)}) {
		t.Fatalf("CommitCleaned = %v, %v", swaps, err)
	}
	crashed := fs.CrashClone()
	names, _, err = Resolve(crashed, "/p", end)
	if err != nil || !slices.Equal(names, []string{FileName(0, LogSuffix)}) {
		t.Fatalf("after the commit: %v, %v", names, err)
	}
	if got := string(vfstest.ReadFile(t, crashed, "/p/"+FileName(0, LogSuffix))); got != "compacted" {
		t.Fatalf("segment 0 holds %q after the swap", got)
	}
	if _, err := CommitCleaned(fs, "/p", []string{FileName(10, LogSuffix)}); err == nil {
		t.Fatal("CommitCleaned accepted a file that is not .cleaned")
	}
}

func writeSynced(t *testing.T, fs vfs.FS, path, data string) {
	t.Helper()
	f, err := fs.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(data), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// TestContentsKind: the one classification every command shares. A log
// with a file that is not a log's beside it is a log (Kafka ignores the
// file); a file named like a segment's that is not one, a directory
// inside, or only files that are not a log's make a directory that
// nothing adopts.
func TestContentsKind(t *testing.T) {
	seg := FileName(0, LogSuffix)
	for _, tc := range []struct {
		name  string
		files []string
		dirs  []string
		want  DirKind
	}{
		{"empty", nil, nil, DirEmpty},
		{"lock only", []string{LockFile}, nil, DirEmpty},
		{"a log", []string{seg, FileName(0, IndexSuffix), RecoveryPointFile, LockFile}, nil, DirLog},
		{"a log with a stray file", []string{seg, "notes.txt", ".DS_Store"}, nil, DirLog},
		{"checkpoints only", []string{RecoveryPointFile, LogStartOffsetFile}, nil, DirLog},
		{"Kafka partition files only", []string{PartitionMetadataFile}, nil, DirLog},
		{"only stray files", []string{"notes.txt"}, nil, DirNotALog},
		{"checkpoints and a stray file (an empty Kafka log.dir)", []string{RecoveryPointFile, "meta.properties"}, nil, DirNotALog},
		{"a log.dir", []string{RecoveryPointFile}, []string{"t-0"}, DirNotALog},
		{"a log with a directory inside", []string{seg}, []string{"sub"}, DirNotALog},
		{"a log with a misnamed segment", []string{seg, "123.log"}, nil, DirNotALog},
		{"a log with an application log", []string{seg, "server.log"}, nil, DirNotALog},
		{"a log with a misnamed swap", []string{seg, "x.index.swap"}, nil, DirNotALog},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			for _, f := range tc.files {
				vfstest.WriteFile(t, fs, "/d/"+f, nil)
			}
			for _, d := range tc.dirs {
				if err := fs.MkdirAll("/d/" + d); err != nil {
					t.Fatal(err)
				}
			}
			if err := fs.MkdirAll("/d"); err != nil {
				t.Fatal(err)
			}
			c, err := ReadContents(fs, "/d")
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Kind(); got != tc.want {
				t.Fatalf("Kind = %v, want %v (%+v)", got, tc.want, c)
			}
		})
	}
}

// TestCheckpointErrorNamesLine: a checkpoint that does not parse is
// refused with a *CheckpointError naming the file, the line and its byte,
// and saying that fsck --repair rewrites it: every command that opens the
// log shows this message.
func TestCheckpointErrorNamesLine(t *testing.T) {
	_, err := ParseCheckpoint("/logs/t-0/log-start-offset-checkpoint", []byte("0\n1\nt 0 zz\n"))
	var ce *CheckpointError
	if !errors.Is(err, ErrBadCheckpoint) || !errors.As(err, &ce) || ce.Line != 3 || ce.Pos != 4 {
		t.Fatalf("err %v (%+v), want a CheckpointError at line 3, byte 4", err, ce)
	}
	for _, want := range []string{"/logs/t-0/log-start-offset-checkpoint line 3, at byte 4", `run "seglog fsck --repair /logs/t-0"`} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("message %q does not say %q", err, want)
		}
	}
}
