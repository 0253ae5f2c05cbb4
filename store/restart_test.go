package store

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
)

// opRecorder records the operations made through an injecting FS.
type opRecorder struct {
	mu  sync.Mutex
	ops []vfs.Op
}

func (r *opRecorder) Inject(op vfs.Op) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, op)
	return nil
}

// changes returns the recorded operations that change a file or a
// directory or make one durable, except the preallocation of index files,
// which every open of an active segment makes (after a clean shutdown
// too) to map them.
func (r *opRecorder) changes() []vfs.Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []vfs.Op
	for _, op := range r.ops {
		switch op.Kind {
		case vfs.OpPreallocate:
			if strings.HasSuffix(op.Path, ".index") || strings.HasSuffix(op.Path, ".timeindex") {
				continue
			}
		case vfs.OpCreate, vfs.OpRemove, vfs.OpRename, vfs.OpSyncDir, vfs.OpWrite, vfs.OpWriteAt,
			vfs.OpSync, vfs.OpTruncate, vfs.OpReserve, vfs.OpFlush:
		default:
			continue
		}
		out = append(out, op)
	}
	return out
}

const restartOffsetsPartitions = 8

func restartOptions(fs vfs.FS, logger *slog.Logger) Options {
	return Options{FS: fs, OffsetsPartitions: restartOffsetsPartitions, OffsetsConfig: &offsetsCfg,
		Logger: logger, RecoveryWorkers: 3}
}

// crashedStore builds a store of a topic of six partitions, every record
// durable when acknowledged, and a group's commits, and returns the state
// a power loss leaves after the last acknowledgement, with what each
// partition holds.
func crashedStore(t *testing.T) (*vfs.MemFS, map[int32][]string) {
	t.Helper()
	fs := vfs.NewMem()
	s, err := Open(testDir, restartOptions(fs, quiet))
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig()
	cfg.FlushMessages = 1
	mustf(t, s.CreateTopic("events", 6, cfg), "create")
	want := make(map[int32][]string)
	for i := range 240 {
		v := fmt.Sprintf("value-%d", i)
		p := int32(i % 6)
		if _, err := s.ProduceTo("events", p, kv("", v)); err != nil {
			t.Fatal(err)
		}
		want[p] = append(want[p], v)
	}
	mustf(t, s.Commit("g1", "events", map[int32]int64{0: 7, 3: 11}), "commit")
	mustf(t, s.Commit("g2", "events", map[int32]int64{5: 2}), "commit")
	crashed := fs.CrashClone()
	mustf(t, s.Close(), "close")
	return crashed, want
}

// checkStore verifies every partition's records and the groups' commits.
func checkStore(t *testing.T, s *Store, want map[int32][]string) {
	t.Helper()
	for p, vals := range want {
		var got []string
		for _, r := range partitionRecords(t, s, "events", p, 0) {
			got = append(got, string(r.Value))
		}
		if !slices.Equal(got, vals) {
			t.Fatalf("events-%d holds %d records %v, want %d", p, len(got), got, len(vals))
		}
	}
	for _, c := range []struct {
		group string
		p     int32
		off   int64
	}{{"g1", 0, 7}, {"g1", 3, 11}, {"g2", 5, 2}} {
		if got, ok := s.CommittedOffset(c.group, "events", c.p); !ok || got.Offset != c.off {
			t.Fatalf("%s committed %v, %v on events-%d, want %d", c.group, got, ok, c.p, c.off)
		}
	}
}

// TestRestartAfterCrashChangesNothing: a store a crash left intact opens
// (reading its offsets partitions through views), recovers the partitions
// it uses on first use, without writing, truncating or syncing anything;
// every record and commit is there. Its Close then recovers the rest and
// leaves the clean-shutdown marker.
func TestRestartAfterCrashChangesNothing(t *testing.T) {
	crashed, want := crashedStore(t)
	rec := &opRecorder{}
	s, err := Open(testDir, restartOptions(vfs.Inject(crashed, rec), quiet))
	if err != nil {
		t.Fatal(err)
	}
	if ops := rec.changes(); len(ops) > 0 {
		t.Fatalf("Open after a crash changed or synced: %v", ops)
	}
	checkStore(t, s, want)
	if ops := rec.changes(); len(ops) > 0 {
		t.Fatalf("recovering every partition changed or synced: %v", ops)
	}
	mustf(t, s.Close(), "close")
	if _, err := crashed.Stat(filepath.Join(testDir, layout.CleanShutdownFile)); err != nil {
		t.Fatalf("no clean-shutdown marker after recovering every partition: %v", err)
	}
	s, err = Open(testDir, restartOptions(crashed, quiet))
	if err != nil {
		t.Fatal(err)
	}
	checkStore(t, s, want)
	mustf(t, s.Close(), "close")
}

// lockedBuffer is where the Log's background goroutines log while the
// test writes and reads too.
type lockedBuffer = testutil.LockedBuffer

// failReads fails every read of the .log files of the partition
// directories named.
func failReads(fs vfs.FS, dirs ...string) vfs.FS {
	return vfs.Inject(fs, vfs.If(func(op vfs.Op) bool {
		if op.Kind != vfs.OpRead || !strings.HasSuffix(op.Path, ".log") {
			return false
		}
		return slices.Contains(dirs, filepath.Base(filepath.Dir(op.Path)))
	}, errors.New("disk on fire")))
}

// TestParallelRecoveryReportsEachPartition: partitions recovered together
// fail alone. Offsets partitions that cannot be recovered fail Open with
// an error naming each of them; a topic's partition that cannot be
// recovered fails its own reads, names itself in Close's warning and keeps
// the clean-shutdown marker away, while every other partition is
// recovered and read as if nothing had happened.
func TestParallelRecoveryReportsEachPartition(t *testing.T) {
	crashed, want := crashedStore(t)

	// Both groups' commits are in offsets partitions of their own.
	p1 := fmt.Sprintf("%s-%d", OffsetsTopic, OffsetsPartitionFor("g1", restartOffsetsPartitions))
	p2 := fmt.Sprintf("%s-%d", OffsetsTopic, OffsetsPartitionFor("g2", restartOffsetsPartitions))
	if p1 == p2 {
		t.Fatalf("g1 and g2 share %s", p1)
	}
	_, err := Open(testDir, restartOptions(failReads(crashed, p1, p2), quiet))
	if !errors.Is(err, vfs.ErrInjected) {
		t.Fatalf("Open with two unreadable offsets partitions: %v, want the injected error", err)
	}
	for _, p := range []string{p1, p2} {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("Open's error does not name %s: %v", p, err)
		}
	}
	if n := strings.Count(err.Error(), "store: partition "); n != 2 {
		t.Fatalf("Open's error names %d partitions, want the 2 that failed: %v", n, err)
	}

	logs := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := Open(testDir, restartOptions(failReads(crashed, "events-3"), logger))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Log("events", 3); !errors.Is(err, vfs.ErrInjected) || !strings.Contains(err.Error(), "events-3") {
		t.Fatalf("opening events-3: %v, want the injected error naming the partition", err)
	}
	mustf(t, s.Close(), "close") // the others are recovered here, together
	if !strings.Contains(logs.String(), "events-3") {
		t.Fatalf("Close's warnings do not name events-3:\n%s", logs)
	}
	if _, err := crashed.Stat(filepath.Join(testDir, layout.CleanShutdownFile)); err == nil {
		t.Fatal("clean-shutdown marker written with events-3 never recovered")
	}
	s, err = Open(testDir, restartOptions(crashed, quiet))
	if err != nil {
		t.Fatal(err)
	}
	checkStore(t, s, want)
	mustf(t, s.Close(), "close")
}
