package store

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
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
		return Options{FS: fsys, OffsetsPartitions: 3, OffsetsConfig: &ocfg, Logger: quiet,
			MaxOpenLogs: testMaxOpenLogs, Now: clock.Now, Clock: clock}
	}
	s, err := Open(testDir, opts(mem))
	mustf(t, err, "open")
	mustf(t, s.CreateTopic("events", 2, smallConfig()), "create")
	for i := range 40 {
		_, err := s.ProduceTo("events", int32(i%2), kv("", fmt.Sprint(i)))
		mustf(t, err, "produce")
	}
	var images []*vfs.MemFS
	rng := rand.New(rand.NewPCG(26, 2))
	for i := range 240 {
		mustf(t, s.Commit(fmt.Sprintf("g%d", i%7), "events", map[int32]int64{int32(i % 2): int64(i % 20)}), "commit")
		if i%7 == 3 {
			mustf(t, s.DeleteGroup(fmt.Sprintf("g%d", i%5)), "delete group")
		}
		if i%40 == 17 {
			l, release, err := s.AcquireLog(OffsetsTopic, int32(i%3))
			mustf(t, err, "acquire")
			mustf(t, l.Sync(), "sync")
			release()
		}
		if i%30 == 29 {
			for range 4 {
				images = append(images, mem.CrashCloneWith(vfs.CrashOptions{Rand: rng, KeepUnsynced: 0.7,
					KeepUnsyncedStores: 0.5, KeepUnsyncedEntries: 0.5, HoleUnsynced: 0.5}))
			}
		}
	}
	mustf(t, s.Close(), "close")

	var quarantines, writableOnly, compared int
	for n, img := range images {
		label := fmt.Sprintf("image %d", n)
		views := make([][]string, 3)
		viewErr := make([]error, 3)
		for p := range 3 {
			views[p], viewErr[p] = viewRecords(img, filepath.Join(testDir, partitionDir(OffsetsTopic, int32(p))))
			if viewErr[p] != nil {
				writableOnly++
			}
		}
		o := opts(img)
		o.OnQuarantine = func(topic string, p int32, q seglog.Quarantine) {
			if topic != OffsetsTopic && topic != "events" || !strings.Contains(q.File, partitionDir(topic, p)) {
				t.Errorf("%s: quarantine reported for %s-%d: %s", label, topic, p, q.File)
			}
			quarantines++
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
	t.Logf("%d images: %d partitions compared, %d read only writable, %d quarantines", len(images), compared, writableOnly, quarantines)
	if quarantines == 0 || writableOnly == 0 || compared == 0 {
		t.Fatalf("the images did not exercise every case: %d compared, %d writable only, %d quarantines", compared, writableOnly, quarantines)
	}
}
