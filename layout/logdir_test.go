package layout

import (
	"testing"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// A partition directory is in a log.dir when its parent holds what a
// store or a broker keeps there; a standalone log named like a partition,
// beside unrelated files, is not.
func TestPartitionLogDir(t *testing.T) {
	for _, c := range []struct {
		name   string
		parent []string // files in /d
		dir    string
		want   bool
	}{
		{"store topic file", []string{"events.seglog-topic"}, "/d/events-0", true},
		{"another topic's file only", []string{"other.seglog-topic"}, "/d/events-0", false},
		{"store checkpoints", []string{RecoveryPointFile}, "/d/events-3", true},
		{"broker meta.properties", []string{MetaPropertiesFile}, "/d/orders-12", true},
		{"broker log-start checkpoint", []string{LogStartOffsetFile}, "/d/a.b-0", true},
		{"a lock and a marker are a standalone log's too", []string{LockFile, CleanShutdownFile}, "/d/events-0", false},
		{"unrelated files", []string{"notes.txt"}, "/d/events-0", false},
		{"not a partition name", []string{RecoveryPointFile}, "/d/events", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			if err := fsys.MkdirAll(c.dir); err != nil {
				t.Fatal(err)
			}
			for _, n := range c.parent {
				vfstest.WriteFile(t, fsys, "/d/"+n, nil)
			}
			before := vfstest.Snapshot(t, fsys, "/d")
			logDir, _, _, ok, err := PartitionLogDir(fsys, c.dir)
			if err != nil || ok != c.want || (ok && logDir != "/d") {
				t.Fatalf("PartitionLogDir(%s) = %q, %v, %v; want %v", c.dir, logDir, ok, err, c.want)
			}
			after := vfstest.Snapshot(t, fsys, "/d")
			if len(before) != len(after) {
				t.Fatal("PartitionLogDir changed the directory")
			}
		})
	}
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/d/events-7"); err != nil {
		t.Fatal(err)
	}
	vfstest.WriteFile(t, fsys, "/d/"+MetaPropertiesFile, nil)
	if _, topic, part, ok, err := PartitionLogDir(fsys, "/d/events-7/"); !ok || err != nil || topic != "events" || part != 7 {
		t.Fatalf("PartitionLogDir with a trailing slash: %q %d %v %v", topic, part, ok, err)
	}
}

func TestHolderRoundTrip(t *testing.T) {
	for _, h := range []Holder{
		{Command: "seglog serve", PID: 4242, Listener: "127.0.0.1:9092"},
		{Command: "seglog produce", PID: 7},
		{Command: "seglog consume", PID: 8, Brief: true},
		{Command: "a\nforged=line", PID: 1},
	} {
		got, ok := ParseHolder(h.Format())
		if !ok {
			t.Fatalf("ParseHolder(%q): not ok", h.Format())
		}
		want := h
		if h.Command == "a\nforged=line" {
			want.Command = "a forged=line" // one line per key: a newline cannot add a key
		}
		if got != want {
			t.Fatalf("round trip of %+v: %+v", h, got)
		}
	}
	if _, ok := ParseHolder(nil); ok {
		t.Fatal("an empty lock file names a holder")
	}
	if _, ok := ParseHolder([]byte("4242\n")); ok {
		t.Fatal("someone else's format names a holder")
	}
	for h, want := range map[Holder]string{
		{Command: "seglog serve", PID: 4242, Listener: "127.0.0.1:9092"}: "`seglog serve` (pid 4242, listening on 127.0.0.1:9092)",
		{Command: "seglog produce", PID: 7}:                              "`seglog produce` (pid 7)",
		{}:                                                               "another process (its lock file does not say which)",
	} {
		if got := h.String(); got != want {
			t.Errorf("%+v.String() = %q, want %q", h, got, want)
		}
	}
}

// "." inside a partition directory is that partition: its log.dir is the
// working directory's parent.
func TestPartitionLogDirDot(t *testing.T) {
	base := t.TempDir()
	part := base + "/events-3"
	if err := vfs.Default.MkdirAll(part); err != nil {
		t.Fatal(err)
	}
	vfstest.WriteFile(t, vfs.Default, base+"/"+RecoveryPointFile, nil)
	t.Chdir(part)
	logDir, topic, p, ok, err := PartitionLogDir(vfs.Default, ".")
	if err != nil || !ok || topic != "events" || p != 3 || logDir != base {
		t.Fatalf("PartitionLogDir(.) = %q %q %d %v %v", logDir, topic, p, ok, err)
	}
}
