package store

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// lazyStore makes, on the real filesystem, a closed store with a topic of
// three partitions holding records and the default fifty offsets
// partitions, a group "other" having committed: the store of issue 26's
// `consume --group` measurement.
func lazyStore(t *testing.T) (string, Options) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	opts := Options{Logger: quiet, MaxOpenLogs: testMaxOpenLogs}
	s, err := Open(dir, opts)
	mustf(t, err, "open")
	mustf(t, s.CreateTopic("events", 3, smallConfig()), "create")
	for i := range 30 {
		_, err := s.ProduceTo("events", int32(i%3), kv("", fmt.Sprint(i)))
		mustf(t, err, "produce")
	}
	mustf(t, s.Commit("other", "events", map[int32]int64{0: 3, 2: 5}), "commit")
	mustf(t, s.Close(), "close")
	return dir, opts
}

// checkpointLines returns a log.dir checkpoint file's lines, by partition.
func checkpointLines(t *testing.T, dir, name string) map[tp]int64 {
	t.Helper()
	entries, err := layout.ReadCheckpoint(vfs.Default, filepath.Join(dir, name))
	mustf(t, err, "read %s", name)
	m := make(map[tp]int64)
	for _, e := range entries {
		m[tp{e.Topic, e.Partition}] = e.Offset
	}
	return m
}

// Issue 26, item 2: "With --group, the group's commits are the only
// write." A commit on a closed, clean store (Open, Commit, Close: what
// `seglog consume --group` does for each commit) changes, contents and
// mtimes:
//
//   - the files of the group's offsets partition (its active segment: the
//     commit appended to its .log; opening it writable re-extended its
//     indexes and closing it trimmed them);
//   - the log.dir's .lock (the holder's record, written when the lock is
//     taken and cleared when it is released);
//   - .kafka_cleanshutdown, removed durably before the partition was
//     opened writable and written again at Close: same bytes, new mtime;
//   - the checkpoint files only in that partition's lines (its recovery
//     point rose; the log start line a first open adds), and the log.dir
//     itself (the marker's and the checkpoints' renames);
//
// and nothing else: not the other 49 offsets partitions, which the open
// rebuilt the groups from without opening them writable, nor the topic.
// An Open and Close that write nothing change only the .lock.
func TestCommitChangesOnlyItsPartition(t *testing.T) {
	dir, opts := lazyStore(t)
	group := fmt.Sprintf("%s-%d", OffsetsTopic, OffsetsPartitionFor("g", DefaultOffsetsPartitions))
	if group == fmt.Sprintf("%s-%d", OffsetsTopic, OffsetsPartitionFor("other", DefaultOffsetsPartitions)) {
		t.Fatal("g and other share an offsets partition")
	}

	before := vfstest.Snapshot(t, vfs.Default, dir)
	s, err := Open(dir, opts)
	mustf(t, err, "open")
	if c, ok := s.CommittedOffset("other", "events", 2); !ok || c.Offset != 5 {
		t.Fatalf("other's commit on events-2: %v %v, want 5", c, ok)
	}
	mustf(t, s.Close(), "close")
	after := vfstest.Snapshot(t, vfs.Default, dir)
	for _, k := range changedEntries(before, after) {
		if k != layout.LockFile {
			t.Errorf("an Open and Close that wrote nothing changed %s: %q -> %q", k, before[k], after[k])
		}
	}

	before = after
	ckptBefore := map[string]map[tp]int64{}
	for _, name := range checkpointFiles {
		ckptBefore[name] = checkpointLines(t, dir, name)
	}
	s, err = Open(dir, opts)
	mustf(t, err, "open")
	mustf(t, s.Commit("g", "events", map[int32]int64{0: 4, 1: 10}), "commit")
	mustf(t, s.Close(), "close")
	after = vfstest.Snapshot(t, vfs.Default, dir)
	changedPartition := false
	for _, k := range changedEntries(before, after) {
		switch {
		case strings.HasPrefix(k, group+"/"):
			changedPartition = true
		case k == "/" || k == layout.LockFile || k == layout.CleanShutdownFile || slices.Contains(checkpointFiles, k):
		default:
			t.Errorf("a commit changed %s: %q -> %q", k, before[k], after[k])
		}
	}
	if !changedPartition {
		t.Fatalf("the commit did not change %s", group)
	}
	if got, want := vfstest.ReadFile(t, vfs.Default, filepath.Join(dir, layout.CleanShutdownFile)), `{"version":0,"brokerEpoch":-1}`; string(got) != want {
		t.Fatalf("clean-shutdown marker %q after the commit, want %q", got, want)
	}
	for _, name := range checkpointFiles {
		was, is := ckptBefore[name], checkpointLines(t, dir, name)
		keys := slices.Collect(maps.Keys(was))
		for k := range is {
			keys = append(keys, k)
		}
		for _, k := range keys {
			o, hadOld := was[k]
			n, hasNew := is[k]
			if (o != n || hadOld != hasNew) && fmt.Sprintf("%s-%d", k.topic, k.part) != group {
				t.Errorf("%s: the commit changed %s-%d's line: %d (%v) -> %d (%v)", name, k.topic, k.part, o, hadOld, n, hasNew)
			}
		}
	}

	s, err = Open(dir, opts)
	mustf(t, err, "reopen")
	defer s.Close()
	for _, c := range []struct {
		group string
		p     int32
		off   int64
	}{{"g", 0, 4}, {"g", 1, 10}, {"other", 0, 3}, {"other", 2, 5}} {
		if got, ok := s.CommittedOffset(c.group, "events", c.p); !ok || got.Offset != c.off {
			t.Errorf("%s on events-%d: %v %v, want %d", c.group, c.p, got, ok, c.off)
		}
	}
}

// changedEntries lists the entries that differ between two snapshots,
// sorted.
func changedEntries(before, after map[string]string) []string {
	var out []string
	for k, v := range after {
		if before[k] != v {
			out = append(out, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// viewRecords reads a partition's records through a read-only view, as
// Open's replay does; err is the view's.
func viewRecords(fsys vfs.FS, dir string) ([]string, error) {
	l, err := seglog.Open(dir, seglog.Options{FS: fsys, ReadOnly: true, Logger: quiet})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	var out []string
	for r, err := range l.Records(l.StartOffset()) {
		if err != nil {
			return out, err
		}
		out = append(out, fmt.Sprintf("%d %x %x", r.Offset, r.Key, r.Value))
	}
	return out, nil
}

// Open rebuilds the groups from read-only views of the offsets partitions
// and leaves them unrecovered after a crash: what the views serve must be
// what recovery keeps, or a group would see commits that recovery then
// cuts (a torn tail) or sets aside (valid batches after damage, in a
// quarantine file). Power losses at several points of a workload of
// unsynced commits in small segments, keeping random prefixes of unsynced
// writes, holes and directory entries: for each image, every offsets
// partition read through a view before Open equals the partition as the
// writable open then recovers it (where the view serves it: a view
// refuses a segment that later segments follow, and Open then recovers
// the partition writable), and the groups Open rebuilt equal a replay of
// the recovered partitions. The images include quarantines (reported to
// Options.OnQuarantine with the partition) and partitions only a writable
// open can read.
func TestReplayViewsMatchRecovery(t *testing.T) {
	clock := newFakeClock()
	mem := vfs.NewMem()
	ocfg := offsetsCfg
	ocfg.FlushMessages = DefaultTopicConfig().FlushMessages // commits not synced
	ocfg.SegmentBytes = 1 << 10
	ocfg.MaxMessageBytes = 512
	opts := func(fsys vfs.FS) Options {
		// Room for every partition: an eviction's Close would sync at the
		// gate below.
		return Options{FS: fsys, OffsetsPartitions: 3, OffsetsConfig: &ocfg, Logger: quiet,
			MaxOpenLogs: 8, Clock: clock}
	}
	// The flusher syncs a segment a roll sealed soon after the roll; a
	// power loss before it is what leaves a torn segment that later ones
	// follow (a quarantine, and a partition a view refuses). Whether the
	// images caught one depended on the scheduler (none under -race), so
	// the offsets partitions' .log syncs wait at a gate while the commits
	// run, as on a slow disk, and the gate opens for the test's own syncs
	// and the Close.
	gate := newSyncGate()
	s, err := Open(testDir, opts(vfs.Inject(mem, gate)))
	mustf(t, err, "open")
	mustf(t, s.CreateTopic("events", 2, smallConfig()), "create")
	for i := range 40 {
		_, err := s.ProduceTo("events", int32(i%2), kv("", fmt.Sprint(i)))
		mustf(t, err, "produce")
	}
	var images []*vfs.MemFS
	rng := rand.New(rand.NewPCG(26, 2))
	gate.hold(true)
	for i := range 240 {
		mustf(t, s.Commit(fmt.Sprintf("g%d", i%7), "events", map[int32]int64{int32(i % 2): int64(i % 20)}), "commit")
		if i%7 == 3 {
			mustf(t, s.DeleteGroup(fmt.Sprintf("g%d", i%5)), "delete group")
		}
		if i%40 == 17 {
			gate.hold(false)
			l, release, err := s.acquireLog(OffsetsTopic, int32(i%3))
			mustf(t, err, "acquire")
			mustf(t, l.Sync(), "sync")
			release()
			gate.hold(true)
		}
		if i%30 == 29 {
			for range 4 {
				images = append(images, mem.CrashCloneWith(vfs.CrashOptions{Rand: rng, KeepUnsynced: 0.7,
					KeepUnsyncedStores: 0.5, KeepUnsyncedEntries: 0.5, HoleUnsynced: 0.5}))
			}
		}
	}
	gate.hold(false)
	mustf(t, s.Close(), "close")

	var writableOnly, compared int
	var quarantines atomic.Int64 // OnQuarantine runs on every partition recovering at once
	for n, img := range images {
		label := fmt.Sprintf("image %d", n)
		views := make([][]string, 3)
		viewErr := make([]error, 3)
		for p := range 3 {
			views[p], viewErr[p] = viewRecords(img, filepath.Join(testDir, layout.PartitionDirName(OffsetsTopic, int32(p))))
			if viewErr[p] != nil {
				writableOnly++
			}
		}
		o := opts(img)
		o.OnQuarantine = func(topic string, p int32, q seglog.Quarantine) {
			if topic != OffsetsTopic && topic != "events" || !strings.Contains(q.File, layout.PartitionDirName(topic, p)) {
				t.Errorf("%s: quarantine reported for %s-%d: %s", label, topic, p, q.File)
			}
			quarantines.Add(1)
		}
		s, err := Open(testDir, o)
		if err != nil {
			t.Fatalf("%s: open: %v", label, err)
		}
		var recovered groupTable
		recovered.init()
		recovered.next = make([]int64, 3)
		for p, part := range s.topics[OffsetsTopic].parts {
			mustf(t, part.with(func(l *seglog.Log) error {
				if viewErr[p] == nil {
					got, err := viewRecords(img, l.Dir())
					mustf(t, err, "%s: reading the recovered partition %d", label, p)
					if !slices.Equal(got, views[p]) {
						t.Fatalf("%s: offsets partition %d: the view before recovery served %d records, recovery kept %d:\n%v\n%v",
							label, p, len(views[p]), len(got), views[p], got)
					}
					compared++
				}
				return recovered.replayLocked(l, p)
			}), "%s: replaying partition %d", label, p)
		}
		if !maps.EqualFunc(s.groups.m, recovered.m, maps.Equal) {
			t.Fatalf("%s: Open rebuilt the groups\n%v\nrecovery leaves\n%v", label, s.groups.m, recovered.m)
		}
		mustf(t, s.Close(), "%s: close", label)
	}
	t.Logf("%d images: %d partitions compared, %d read only writable, %d quarantines", len(images), compared, writableOnly, quarantines.Load())
	if quarantines.Load() == 0 || writableOnly == 0 || compared == 0 {
		t.Fatalf("the images did not exercise every case: %d compared, %d writable only, %d quarantines", compared, writableOnly, quarantines.Load())
	}
}

// The store's cleaner compacts the offsets topic by swapping cleaned
// segments in (.cleaned, .swap, .deleted files, then renames). A power
// loss at any operation of a compaction round leaves an image whose Open
// rebuilds the groups as they were: through a view where the partition's
// files are whole, and through a writable open, which completes or rolls
// back the swap, where a view cannot serve them (an interrupted swap).
func TestReplayAfterCrashDuringCompaction(t *testing.T) {
	mem, clock := vfs.NewMem(), newFakeClock()
	oc := offsetsTopicConfig()
	oc.SegmentBytes = 4 << 10
	oc.MaxMessageBytes = 2 << 10
	oc.SegmentIndexBytes = 4096
	var images []*vfs.MemFS
	var compacting atomic.Bool
	fsys := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		// A power loss keeps what was synced: the image changes only
		// with a sync.
		if compacting.Load() && (op.Kind == vfs.OpSync || op.Kind == vfs.OpSyncDir) {
			images = append(images, mem.CrashClone())
		}
		return nil
	}))
	opts := func(fsys vfs.FS) Options {
		return Options{FS: fsys, OffsetsPartitions: 1, OffsetsConfig: &oc, Clock: clock,
			Logger: quiet, DedupeBufferBytes: 1 << 20, MaxOpenLogs: testMaxOpenLogs, CleanerWorkers: 1}
	}
	s, err := Open(testDir, opts(fsys))
	mustf(t, err, "open")
	mustf(t, s.CreateTopic("t", 4, smallConfig()), "create")
	for i := range 40 {
		_, err := s.ProduceTo("t", int32(i%4), kv("", "v"))
		mustf(t, err, "produce")
	}
	for i := range 300 {
		mustf(t, s.Commit(fmt.Sprintf("g%d", i%3), "t", map[int32]int64{int32(i % 4): int64(i % 11)}), "commit")
	}
	want := make(map[string][]int64)
	for _, g := range s.Groups() {
		want[g] = committedOf(s, g, 4)
	}
	compacting.Store(true)
	mustf(t, s.CleanOnce(context.Background()), "cleaner round")
	compacting.Store(false)
	mustf(t, s.Close(), "close")
	images = append(images, mem)
	if recs, err := viewRecords(mem, filepath.Join(testDir, OffsetsTopic+"-0")); err != nil || len(recs) >= 300 {
		t.Fatalf("the offsets partition holds %d records after the round (%v): nothing was compacted", len(recs), err)
	}

	swaps := 0
	for n, img := range images {
		names, err := img.List(filepath.Join(testDir, OffsetsTopic+"-0"))
		mustf(t, err, "list")
		if len(layout.PlanLeftovers(names).Swaps) > 0 {
			swaps++
		}
		for round := range 2 { // the image as the crash left it, then after a Close
			s, err := Open(testDir, opts(img))
			mustf(t, err, "image %d of %d, open %d", n, len(images), round)
			if names, _ := img.List(filepath.Join(testDir, OffsetsTopic+"-0")); len(layout.PlanLeftovers(names).Swaps) > 0 {
				t.Fatalf("image %d of %d: Open left the interrupted swap %v: it read the partition without completing it", n, len(images), names)
			}
			for g, offs := range want {
				if got := committedOf(s, g, 4); !slices.Equal(got, offs) {
					t.Fatalf("image %d of %d, open %d: %s committed %v, want %v", n, len(images), round, g, got, offs)
				}
			}
			mustf(t, s.Close(), "image %d, close", n)
		}
	}
	t.Logf("%d images of a compaction round, %d with an interrupted swap", len(images), swaps)
	if swaps == 0 {
		t.Fatal("no image holds an interrupted swap")
	}
}

// The clean-shutdown marker vouches for every partition's files. A
// session removes it, durably, before its first writable open of a
// partition (an open re-extends the indexes, an append adds bytes a power
// loss may tear), and writes it at Close; a session that opened no
// partition writable (the store's reads answered from views and the
// checkpoints) leaves it, and every other file but the lock, untouched.
func TestMarkerOnlyAroundWrites(t *testing.T) {
	mem, clock := vfs.NewMem(), newFakeClock()
	s := openStore(t, mem, clock)
	mustf(t, s.CreateTopic("t", 3, smallConfig()), "create")
	for i := range 9 {
		_, err := s.ProduceTo("t", int32(i%3), kv("", "v"))
		mustf(t, err, "produce")
	}
	mustf(t, s.Commit("g", "t", map[int32]int64{1: 2}), "commit")
	mustf(t, s.Close(), "close")
	marker := filepath.Join(testDir, layout.CleanShutdownFile)

	before := vfstest.Snapshot(t, mem, testDir)
	s = openStore(t, mem, clock)
	info, err := s.DescribeTopic("t")
	mustf(t, err, "describe")
	if info.Partitions[2].EndOffset != 3 {
		t.Fatalf("t-2 ends at %d, want 3", info.Partitions[2].EndOffset)
	}
	lag, _, err := s.DescribeGroup("g")
	mustf(t, err, "describe group")
	if len(lag) != 1 {
		t.Fatalf("group g: %+v", lag)
	}
	mustf(t, s.Close(), "close")
	for _, k := range changedEntries(before, vfstest.Snapshot(t, mem, testDir)) {
		if k != layout.LockFile {
			t.Errorf("a session that wrote nothing changed %s", k)
		}
	}

	var mu sync.Mutex
	var ops []vfs.Op
	rec := vfs.Inject(mem, vfs.InjectorFunc(func(op vfs.Op) error {
		mu.Lock()
		defer mu.Unlock()
		ops = append(ops, op)
		return nil
	}))
	s, err = Open(testDir, Options{FS: rec, OffsetsPartitions: 5, Clock: clock, Logger: quiet, OffsetsConfig: &offsetsCfg, MaxOpenLogs: testMaxOpenLogs})
	mustf(t, err, "open")
	if _, err := mem.CrashClone().Stat(marker); err != nil {
		t.Fatalf("Open removed the marker: %v", err)
	}
	mustf(t, s.Commit("g", "t", map[int32]int64{1: 3}), "commit")
	if _, err := mem.CrashClone().Stat(marker); err == nil {
		t.Fatal("the marker survives a power loss after a commit")
	}
	removed, synced, firstWrite := -1, -1, -1
	writes := []vfs.OpKind{vfs.OpCreate, vfs.OpOpenReadWrite, vfs.OpRemove, vfs.OpRename, vfs.OpMkdirAll, vfs.OpWrite,
		vfs.OpWriteAt, vfs.OpSync, vfs.OpTruncate, vfs.OpPreallocate, vfs.OpReserve, vfs.OpFlush}
	for i, op := range ops {
		inPartition := strings.HasPrefix(op.Path, testDir+"/") && strings.Count(op.Path, "/") > 2
		switch {
		case op.Kind == vfs.OpRemove && op.Path == marker:
			removed = i
		case op.Kind == vfs.OpSyncDir && op.Path == testDir && removed >= 0 && synced < 0:
			synced = i
		case inPartition && firstWrite < 0 && slices.Contains(writes, op.Kind):
			firstWrite = i
		}
	}
	if removed < 0 || synced < removed || firstWrite < synced {
		t.Fatalf("marker removed at op %d, the log.dir synced at op %d, first writable use of a partition at op %d: want them in that order", removed, synced, firstWrite)
	}
	mustf(t, s.Close(), "close")
	if _, err := mem.Stat(marker); err != nil {
		t.Fatalf("no marker after a clean Close: %v", err)
	}
}

// syncGate holds the syncs of the offsets partitions' .log files while
// closed (hold(true)) until it opens again.
type syncGate struct {
	mu     sync.Mutex
	cond   *sync.Cond
	closed bool
}

func newSyncGate() *syncGate {
	g := &syncGate{}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *syncGate) hold(closed bool) {
	g.mu.Lock()
	g.closed = closed
	g.mu.Unlock()
	g.cond.Broadcast()
}

// Inject implements vfs.Injector: it fails nothing, it only waits.
func (g *syncGate) Inject(op vfs.Op) error {
	if op.Kind != vfs.OpSync || !strings.HasSuffix(op.Path, ".log") || !strings.Contains(op.Path, OffsetsTopic) {
		return nil
	}
	g.mu.Lock()
	for g.closed {
		g.cond.Wait()
	}
	g.mu.Unlock()
	return nil
}
