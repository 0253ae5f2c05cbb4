package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/fsck"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// startServe runs seglog serve on dir as a process and returns the
// address it listens on, as its lock file names it, and a function that
// stops it (SIGTERM) and returns its exit status.
func startServe(t *testing.T, dir string, extra ...string) (string, func() int) {
	t.Helper()
	var stderr lockedBuffer
	cmd := seglogProcess(t, &stderr, append([]string{"serve", dir, "--listen", "127.0.0.1:0"}, extra...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("serve: no output; stderr: %s", stderr.String())
	}
	h, ok := layout.ParseHolder(readVFS(t, filepath.Join(dir, layout.LockFile)))
	if !ok || h.Command != "seglog serve" || h.Listener == "" || !strings.Contains(lines.Text(), h.Listener) {
		t.Fatalf("serve printed %q; its lock file names %+v", lines.Text(), h)
	}
	done := make(chan struct{})
	go func() {
		for lines.Scan() {
		}
		close(done)
	}()
	return h.Listener, func() int {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		<-done
		return exitCode(t, cmd.Wait(), &stderr)
	}
}

// produceKafka produces values to topic's partition p through the server
// at addr, acknowledged by it, and returns their offsets.
func produceKafka(t *testing.T, addr, topic string, p int32, values ...string) []int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*kgo.Record
	for _, v := range values {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(v)})
	}
	res := cl.ProduceSync(ctx, recs...)
	if err := res.FirstErr(); err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for _, r := range res {
		offs = append(offs, r.Record.Offset)
	}
	return offs
}

// noPartitionFiles fails if a partition directory holds a file that only
// a log.dir may hold: a lock, a marker, a checkpoint.
func noPartitionFiles(t *testing.T, part string) {
	t.Helper()
	names, err := vfs.Default.List(part)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if layout.IsLogDirFile(strings.TrimSuffix(n, layout.CheckpointTmpSuffix)) {
			t.Errorf("%s holds %s, which only its log.dir may hold", part, n)
		}
	}
}

// Item 1: while seglog serve holds a store, clean (and produce) of one of
// its partition directories is refused, naming the server and how to go
// through it, and changes nothing; so are topics create, delete and alter
// and groups reset and delete, each naming the Kafka tool's command line;
// DeleteRecords goes through the server.
// No acknowledged record is lost, no offset is given twice, and the
// partition directory gains no file of its own.
func TestServeHoldsTheStoreNothingLost(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "topics", "create", dir, "events", "--partitions", "1")
	addr, stop := startServe(t, dir)
	if offs := produceKafka(t, addr, "events", 0, "a", "b"); !slices.Equal(offs, []int64{0, 1}) {
		t.Fatalf("offsets %v", offs)
	}
	part := filepath.Join(dir, "events-0")
	before := dirSnapshot(t, part)
	for _, c := range []struct {
		args    []string
		instead string
	}{
		{[]string{"clean", part, "--retention-ms", "0"}, "seglog clean " + part + " --delete-records-before OFFSET"},
		{[]string{"produce", part}, "kcat -P -b " + addr + " -t events -p 0"},
		{[]string{"topics", "delete", dir, "events"}, "kafka-topics.sh --bootstrap-server " + addr + " --delete --topic events"},
		{[]string{"topics", "alter", dir, "events", "--partitions", "3"}, "kafka-topics.sh --bootstrap-server " + addr + " --alter --topic events --partitions 3"},
		{[]string{"fsck", part, "--repair"}, ""},
		{[]string{"topics", "create", dir, "more", "--partitions", "2"}, "kafka-topics.sh --bootstrap-server " + addr + " --create --topic more --partitions 2"},
		{[]string{"groups", "reset", dir, "g", "--topic", "events", "--to-earliest"}, "kafka-consumer-groups.sh --bootstrap-server " + addr + " --group g --topic events --reset-offsets --to-earliest --execute"},
		{[]string{"groups", "delete", dir, "g"}, "kafka-consumer-groups.sh --bootstrap-server " + addr + " --delete --group g"},
		// The same serve again: refused by the bind, which comes first,
		// saying who serves the store.
		{[]string{"serve", dir, "--listen", addr}, "address already in use"},
	} {
		r := invoke(t, "x\n", c.args...)
		held := "is held by `seglog serve` (pid "
		if r.code == 0 || !strings.Contains(r.stderr, held) || !strings.Contains(r.stderr, "listening on "+addr) || !strings.Contains(r.stderr, c.instead) {
			t.Errorf("seglog %s beside the server: exit %d, stderr %q; want a refusal naming the server and %q", strings.Join(c.args, " "), r.code, r.stderr, c.instead)
		}
		vfstest.Unchanged(t, "a refused "+c.args[0], before, dirSnapshot(t, part))
	}
	if _, err := vfs.Default.Stat(filepath.Join(dir, "more-0")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused topics create beside the server left more-0: %v", err)
	}
	if offs := produceKafka(t, addr, "events", 0, "c"); !slices.Equal(offs, []int64{2}) {
		t.Fatalf("offsets %v", offs)
	}
	r := mustInvoke(t, "", "clean", part, "--delete-records-before", "1")
	if !strings.Contains(r.stdout, "start offset 1 (through the server at "+addr) {
		t.Fatalf("DeleteRecords through the server: %q", r.stdout)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	noPartitionFiles(t, part)
	mustInvoke(t, "d\n", "produce", dir, "--topic", "events")
	recs := parseConsumed(t, mustInvoke(t, "", "consume", part, "--json").stdout)
	var got []string
	for _, r := range recs {
		v := "null"
		if r.Value != nil {
			b, err := base64.StdEncoding.DecodeString(*r.Value)
			if err != nil {
				t.Fatal(err)
			}
			v = string(b)
		}
		got = append(got, fmt.Sprintf("%d=%s", r.Offset, v))
	}
	if want := []string{"1=b", "2=c", "3=d"}; !slices.Equal(got, want) {
		t.Fatalf("after a restart the partition holds %v, want %v", got, want)
	}
	noPartitionFiles(t, part)
}

// produce and clean given a partition directory of a store go through
// the store: its lock (a second writer is refused, naming the holder),
// the log.dir's checkpoints, and no file of the partition's own.
func TestPartitionOfStoreGoesThroughTheStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "topics", "create", dir, "events", "--partitions", "2")
	part := filepath.Join(dir, "events-1")
	mustInvoke(t, numberedLines(1, 10), "produce", part, "--batch", "3")
	mustInvoke(t, "", "clean", part, "--delete-records-before", "4")
	mustInvoke(t, "", "fsck", part, "--repair")
	noPartitionFiles(t, part)
	if off, ok, err := layout.PartitionOffset(vfs.Default, filepath.Join(dir, layout.LogStartOffsetFile), "events", 1); err != nil || !ok || off != 4 {
		t.Fatalf("the log.dir's log-start line: %d %v %v", off, ok, err)
	}
	r := mustInvoke(t, "", "topics", "describe", dir, "events")
	if !strings.Contains(r.stdout, "1          4      10") {
		t.Fatalf("describe after produce and clean of the partition:\n%s", r.stdout)
	}
	if r := invoke(t, "", "produce", part, "--segment-bytes", "1000"); r.code == 0 || !strings.Contains(r.stderr, "topic config decides") {
		t.Fatalf("a log flag for a store's partition: exit %d, %q", r.code, r.stderr)
	}
	// Both partitions hold records, so that fsck --repair below meets
	// the writer's lock in each.
	mustInvoke(t, numberedLines(1, 3), "produce", filepath.Join(dir, "events-0"))
	w, err := store.Open(dir, store.Options{Holder: store.Holder{Command: "test writer", PID: 77}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	before := dirSnapshot(t, dir)
	for _, args := range [][]string{{"produce", part}, {"clean", part, "--retention-ms", "0"}, {"clean", dir}, {"groups", "reset", dir, "g", "--topic", "events", "--to-earliest"}} {
		r := invoke(t, "x\n", args...)
		if r.code == 0 || !strings.Contains(r.stderr, "is held by `test writer` (pid 77)") {
			t.Errorf("seglog %s beside a writer: exit %d, %q", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	// fsck --repair checks only, and says why once, not once for each
	// of the store's partitions.
	if r := invoke(t, "", "fsck", dir, "--repair"); r.code&fsck.ExitOperational == 0 || strings.Count(r.stderr, "checking only") != 1 || !strings.Contains(r.stderr, "is held by `test writer` (pid 77)") {
		t.Errorf("fsck --repair beside a writer: exit %d, stderr %q; want the refusal once", r.code, r.stderr)
	}
	vfstest.Unchanged(t, "refused writers", before, dirSnapshot(t, dir))
}

// Item 5: DeleteRecords through the store (a partition's directory, or
// the store with --topic and --partition) moves the start for every
// reader: a group reading from the beginning does not get the deleted
// records again, and groups describe agrees.
func TestDeleteRecordsEveryReaderAgreesCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "3")
	var in strings.Builder
	for i := range 30 {
		fmt.Fprintf(&in, "k%d\tv%d\n", i, i)
	}
	r := mustInvoke(t, in.String(), "produce", dir, "--topic", "bookings", "--verbose")
	deleted := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		f := strings.Split(line, "\t")
		if f[1] == "bookings-2" && (f[2] == "0" || f[2] == "1") {
			deleted[f[0]] = true
		}
		if f[1] == "bookings-0" && f[2] == "0" {
			deleted[f[0]] = true
		}
	}
	if len(deleted) != 3 {
		t.Fatalf("keys at the offsets to delete: %v", deleted)
	}
	mustInvoke(t, "", "clean", filepath.Join(dir, "bookings-2"), "--delete-records-before", "2")
	mustInvoke(t, "", "clean", dir, "--topic", "bookings", "--partition", "0", "--delete-records-before", "1")
	out := mustInvoke(t, "", "consume", dir, "--topic", "bookings", "--group", "n", "--from-beginning").stdout
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 27 {
		t.Errorf("the group read %d records, want 27", len(lines))
	}
	for _, line := range lines {
		if k, _, _ := strings.Cut(line, "\t"); deleted[k] {
			t.Errorf("the group read %q, deleted before", line)
		}
	}
	desc := mustInvoke(t, "", "groups", "describe", dir, "n").stdout
	for _, want := range []string{"n      bookings  0          ", "TOTAL LAG: 0"} {
		if !strings.Contains(desc, want) {
			t.Fatalf("groups describe:\n%s", desc)
		}
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(desc, "\n") {
		if f := strings.Fields(line); len(f) == 7 && f[0] == "n" {
			rows[f[2]] = f
		}
	}
	if rows["0"][4] != "1" || rows["2"][4] != "2" || rows["1"][4] != "0" {
		t.Fatalf("LOG-START-OFFSET per partition: %v", rows)
	}
	for p := range 3 {
		noPartitionFiles(t, filepath.Join(dir, fmt.Sprintf("bookings-%d", p)))
	}
}

// Item 2: consume --topic takes no lock and writes nothing: it reads
// beside a writer in this process; following, it sees what produce
// --topic (which its reading must not lock out) and serve append; a
// --group's commits go through the server while it holds the store.
func TestConsumeTopicBesideWriters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "2")
	mustInvoke(t, "k1\tv1\nk2\tv2\nk3\tv3\n", "produce", dir, "--topic", "bookings")
	w, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := dirSnapshot(t, dir)
	if r := mustInvoke(t, "", "consume", dir, "--topic", "bookings", "--from-beginning"); strings.Count(r.stdout, "\n") != 3 {
		t.Fatalf("consume beside a writer: %q", r.stdout)
	}
	vfstest.Unchanged(t, "consume --topic", before, dirSnapshot(t, dir))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	var stderr lockedBuffer
	cmd := seglogProcess(t, &stderr, "consume", dir, "--topic", "bookings", "--from-beginning", "--follow", "--group", "followers")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	expect := func(want ...string) {
		t.Helper()
		var got []string
		timeout := time.After(time.Minute)
		for len(got) < len(want) {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("the follower stopped after %q; stderr: %s", got, stderr.String())
				}
				got = append(got, l)
			case <-timeout:
				t.Fatalf("the follower printed %q, want %q; stderr: %s", got, want, stderr.String())
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("the follower printed %q, want %q", got, want)
		}
	}
	expect("k1\tv1", "k2\tv2", "k3\tv3")
	mustInvoke(t, "k4\tv4\n", "produce", dir, "--topic", "bookings")
	expect("k4\tv4")
	addr, stop := startServe(t, dir)
	produceKafka(t, addr, "bookings", 1, "from-kafka")
	expect("from-kafka")
	mustInvoke(t, "k5\tv5\n", "produce", dir, "--topic", "bookings") // through the server
	expect("k5\tv5")
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd.Wait(), &stderr); code != 0 {
		t.Fatalf("the follower exited %d: %s", code, stderr.String())
	}
	// Its last commit went through the server: the group's lag is 0.
	if r := mustInvoke(t, "", "groups", "describe", dir, "followers"); !strings.Contains(r.stdout, "TOTAL LAG: 0") {
		t.Fatalf("groups describe beside the server:\n%s", r.stdout)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	if r := mustInvoke(t, "", "groups", "describe", dir, "followers"); !strings.Contains(r.stdout, "TOTAL LAG: 0") || strings.Count(r.stdout, "followers") != 2 {
		t.Fatalf("groups describe after the server stopped:\n%s", r.stdout)
	}
}

// A --group's commits are consume's only write (issue 26, item 2). The
// store's open for the commit opens only the group's offsets partition
// writable (the groups are read through read-only views), so what changes,
// contents or mtimes, is: that partition's files (the commit appended; its
// active segment's indexes re-extended at open, trimmed at close; a first
// commit creates its first segment), the log.dir's .lock (the holder's
// record, cleared at release), .kafka_cleanshutdown (removed before the
// partition's writable open, written again at close: same bytes), the
// checkpoint files in that partition's lines only, and the log.dir's own
// entry. The data partitions, the topic files and the other 49 offsets
// partitions are untouched, mtimes included: before, every offsets
// partition's index files got new mtimes from the open's replay.
func TestConsumeGroupCommitsAreTheOnlyWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "3")
	mustInvoke(t, numberedLines(1, 20), "produce", dir, "--topic", "bookings")
	mustInvoke(t, "", "consume", dir, "--topic", "bookings", "--group", "other", "--from-beginning", "--max", "5")
	group := fmt.Sprintf("%s-%d", store.OffsetsTopic, store.OffsetsPartitionFor("g", store.DefaultOffsetsPartitions))
	for _, run := range [][]string{
		{"consume", dir, "--topic", "bookings", "--group", "g", "--from-beginning", "--max", "7"}, // its first commit
		{"consume", dir, "--topic", "bookings", "--group", "g"},                                   // and a later one
	} {
		before := dirSnapshot(t, dir)
		ckptBefore := checkpointsOf(t, dir)
		mustInvoke(t, "", run...)
		after := dirSnapshot(t, dir)
		changed := false
		for _, k := range slices.Sorted(maps.Keys(after)) {
			switch {
			case before[k] == after[k]:
			case strings.HasPrefix(k, group+"/"):
				changed = true
			case k == "/" || k == layout.LockFile || k == layout.CleanShutdownFile || k == layout.RecoveryPointFile || k == layout.LogStartOffsetFile || k == layout.CleanerOffsetFile:
			default:
				t.Errorf("seglog %s changed %s: %s -> %s", strings.Join(run, " "), k, before[k], after[k])
			}
		}
		if !changed {
			t.Fatalf("seglog %s did not change %s: nothing was committed", strings.Join(run, " "), group)
		}
		for name, lines := range checkpointsOf(t, dir) {
			for k, off := range lines {
				if was, ok := ckptBefore[name][k]; (!ok || was != off) && k != group {
					t.Errorf("seglog %s changed %s's line in %s: %d -> %d", strings.Join(run, " "), k, name, was, off)
				}
			}
		}
	}
	if r := mustInvoke(t, "", "groups", "describe", dir, "g"); !strings.Contains(r.stdout, "TOTAL LAG: 0") {
		t.Fatalf("groups describe:\n%s", r.stdout)
	}
}

// checkpointsOf reads the log.dir's checkpoint files: partition → offset.
func checkpointsOf(t *testing.T, dir string) map[string]map[string]int64 {
	t.Helper()
	out := make(map[string]map[string]int64)
	for _, name := range []string{layout.RecoveryPointFile, layout.LogStartOffsetFile, layout.CleanerOffsetFile} {
		entries, err := layout.ReadCheckpoint(vfs.Default, filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = make(map[string]int64)
		for _, e := range entries {
			out[name][fmt.Sprintf("%s-%d", e.Topic, e.Partition)] = e.Offset
		}
	}
	return out
}

// Item 2: a directory that is not a store gets a clear error from every
// store command that does not create one, and stays as it was: no store
// is made to fail in.
func TestNoStoreMadeByAccident(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := vfs.Default.MkdirAll(empty); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"consume", empty, "--topic", "t"},
		{"consume", empty, "--topic", "t", "--group", "g"},
		{"produce", empty, "--topic", "t"},
		{"topics", "list", empty},
		{"topics", "describe", empty},
		{"topics", "delete", empty, "t"},
		{"groups", "list", empty},
		{"groups", "reset", empty, "g", "--topic", "t", "--to-earliest"},
		{"groups", "delete", empty, "g"},
		{"clean", empty, "--topic", "t"},
	} {
		r := invoke(t, "x\n", args...)
		if r.code == 0 || !strings.Contains(r.stderr, "not a store") && !strings.Contains(r.stderr, "not a log") && !strings.Contains(r.stderr, "holds no") {
			t.Errorf("seglog %s on an empty directory: exit %d, stderr %q", strings.Join(args, " "), r.code, r.stderr)
		}
		if names, _ := vfs.Default.List(empty); len(names) != 0 {
			t.Fatalf("seglog %s left %v in an empty directory", strings.Join(args, " "), names)
		}
	}
}

// Item 2: a log-start checkpoint line beyond a partition's end makes no
// read delete anything: consume --topic prints the other partitions and
// leaves every file as it was.
func TestLogStartBeyondEndDeletesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "3")
	mustInvoke(t, numberedLines(1, 30), "produce", dir, "--topic", "bookings", "--batch", "1")
	ckpt := filepath.Join(dir, layout.LogStartOffsetFile)
	entries, err := layout.ReadCheckpoint(vfs.Default, ckpt)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range entries {
		if e.Topic == "bookings" && e.Partition == 0 {
			entries[i].Offset = 1000
		}
	}
	if err := layout.WriteCheckpoint(vfs.Default, ckpt, entries); err != nil {
		t.Fatal(err)
	}
	before := dirSnapshot(t, dir)
	r := invoke(t, "", "consume", dir, "--topic", "bookings", "--from-beginning")
	vfstest.Unchanged(t, "consume --topic", before, dirSnapshot(t, dir))
	others := 0
	for _, p := range []int{1, 2} {
		l := parseConsumed(t, mustInvoke(t, "", "consume", filepath.Join(dir, fmt.Sprintf("bookings-%d", p)), "--json").stdout)
		others += len(l)
	}
	if got := strings.Count(r.stdout, "\n"); got < others || others == 0 {
		t.Fatalf("consume --topic printed %d records, want the other partitions' %d; stderr %q", got, others, r.stderr)
	}
	if r.code != 0 && !strings.Contains(r.stderr, "bookings-0") {
		t.Fatalf("consume --topic: exit %d without naming the partition: %q", r.code, r.stderr)
	}
}

// clean STORE applies each topic's own config, through the store: a topic
// with a retention.bytes loses its oldest sealed segments, another keeps
// them; --topic cleans one topic only; the rules of a single log do not
// apply to a store.
func TestCleanStoreByTopicConfigs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	small := []string{"--config", "segment.bytes=2000", "--config", "max.message.bytes=1000"}
	mustInvoke(t, "", append([]string{"topics", "create", dir, "short", "--config", "retention.bytes=1"}, small...)...)
	mustInvoke(t, "", append([]string{"topics", "create", dir, "keep"}, small...)...)
	mustInvoke(t, "", append([]string{"topics", "create", dir, "later", "--config", "retention.bytes=1"}, small...)...)
	lines := strings.Repeat(strings.Repeat("x", 300)+"\n", 30)
	for _, topic := range []string{"short", "keep", "later"} {
		mustInvoke(t, lines, "produce", dir, "--topic", topic, "--batch", "1")
	}
	segments := func(topic string) int {
		t.Helper()
		names, _ := vfs.Default.List(filepath.Join(dir, topic+"-0"))
		n := 0
		for _, name := range names {
			if strings.HasSuffix(name, layout.LogSuffix) {
				n++
			}
		}
		return n
	}
	keep, later := segments("keep"), segments("later")
	if keep < 3 {
		t.Fatalf("%d segments, want several", keep)
	}
	if r := invoke(t, "", "clean", dir, "--retention-ms", "0"); r.code == 0 || !strings.Contains(r.stderr, "do not apply to a store") {
		t.Fatalf("a single log's rule on a store: exit %d, %q", r.code, r.stderr)
	}
	dry := mustInvoke(t, "", "clean", dir, "--dry-run", "--topic", "short").stdout
	if !strings.Contains(dry, "short-0: would delete") || strings.Contains(dry, "later-0") {
		t.Fatalf("clean --dry-run --topic short:\n%s", dry)
	}
	r := mustInvoke(t, "", "clean", dir, "--topic", "short")
	if !strings.Contains(r.stdout, "short-0: deleted") || segments("short") >= keep || segments("later") != later || segments("keep") != keep {
		t.Fatalf("clean --topic short: %q; segments short %d, later %d (was %d), keep %d (was %d)", r.stdout, segments("short"), segments("later"), later, segments("keep"), keep)
	}
	mustInvoke(t, "", "clean", dir)
	if segments("later") >= later || segments("keep") != keep {
		t.Fatalf("clean: segments later %d (was %d), keep %d (was %d)", segments("later"), later, segments("keep"), keep)
	}
	for _, topic := range []string{"short", "keep", "later"} {
		noPartitionFiles(t, filepath.Join(dir, topic+"-0"))
	}
	desc := mustInvoke(t, "", "topics", "describe", dir, "short").stdout
	if strings.Contains(desc, "0          0      30") {
		t.Fatalf("describe after clean: the start did not move:\n%s", desc)
	}
}

// consume --group beside another command that holds the store prints what
// it reads, then fails: the group's commits wait for the holder, and once
// consume stops they are reported, holder and offsets named, uncommitted.
func TestConsumeGroupBesideAnotherWriter(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "topics", "create", dir, "bookings", "--partitions", "1")
	mustInvoke(t, "a\nb\n", "produce", dir, "--topic", "bookings")
	w, err := store.Open(dir, store.Options{Holder: store.Holder{Command: "seglog produce", PID: 99}})
	if err != nil {
		t.Fatal(err)
	}
	r := invoke(t, "", "consume", dir, "--topic", "bookings", "--group", "g", "--from-beginning")
	if r.stdout != "a\nb\n" || r.code == 0 || !strings.Contains(r.stderr, "printed but not committed (bookings-0 at 2)") || !strings.Contains(r.stderr, "held by `seglog produce` (pid 99)") {
		t.Fatalf("consume --group beside a writer: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if r := invoke(t, "", "groups", "describe", dir, "g"); r.code == 0 {
		t.Fatalf("the group has commits: %s", r.stdout)
	}
	mustInvoke(t, "", "consume", dir, "--topic", "bookings", "--group", "g", "--from-beginning")
	if r := mustInvoke(t, "", "groups", "describe", dir, "g"); !strings.Contains(r.stdout, "TOTAL LAG: 0") {
		t.Fatalf("groups describe:\n%s", r.stdout)
	}
}

// A writer that finds the store held by a holder that has not written its
// name yet (between taking the lock and naming itself, as a consumer's
// brief commit is for a moment) waits for it instead of failing: CI's race
// run caught produce --topic refused in that window beside
// consume --follow --group.
func TestWriterWaitsForAnUnnamedHolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "topics", "create", dir, "events", "--partitions", "1")
	lock, err := vfs.Default.Lock(filepath.Join(dir, layout.LockFile))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan cliResult, 1)
	go func() { done <- invoke(t, "k\tv\n", "produce", dir, "--topic", "events") }()
	testutil.WaitBlocked(t, "produce waits for the unnamed holder", "seglog.openStoreAs(", 1)
	if err := lock.Close(); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.code != 0 {
		t.Fatalf("produce after the unnamed holder let go: exit %d, %s", r.code, r.stderr)
	}
}

// TestStoreWithoutTopicSaysGiveTopic: consume and produce given a store
// without --topic are refused as before (a store is not a log), and the
// refusal says that --topic is what works on it.
func TestStoreWithoutTopicSaysGiveTopic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	mustInvoke(t, "", "topics", "create", dir, "events", "--partitions", "1")
	before := dirSnapshot(t, dir)
	for _, name := range []string{"consume", "produce"} {
		r := invoke(t, "x\n", name, dir)
		if r.code == 0 || !strings.Contains(r.stderr, "is not a log directory") || !strings.Contains(r.stderr, "is a store: give --topic TOPIC to "+name) {
			t.Errorf("seglog %s STORE: exit %d, stderr %q; want the refusal saying to give --topic", name, r.code, r.stderr)
		}
	}
	vfstest.Unchanged(t, "consume and produce without --topic", before, dirSnapshot(t, dir))
}
