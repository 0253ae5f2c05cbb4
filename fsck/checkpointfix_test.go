package fsck

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestUnusableCheckpoints (issue 26 item 6): a checkpoint consume and
// produce refuse is reported with its line, as an error, and repair
// rewrites it in the way that keeps every record and says what it wrote.
// Before, fsck --repair reported "0 repaired" and gave no hint.
func TestUnusableCheckpoints(t *testing.T) {
	type tc struct {
		name, file, contents string
		sev                  Severity
		line                 string
		// want is the file after repair; "" means unchanged.
		want string
		// damage flips a byte in synced data first.
		damage bool
		// start is the log start after repair: the records below it stay
		// deleted.
		start int
	}
	cases := []tc{
		{name: "garbage recovery point", file: "recovery-point-offset-checkpoint", contents: "garbage\n",
			sev: Error, line: "line 1 (byte 0)", want: "0\n1\np 0 0\n"},
		{name: "negative recovery point", file: "recovery-point-offset-checkpoint", contents: "0\n1\np 0 -5\n",
			sev: Error, line: "line 3 (byte 4)", want: "0\n1\np 0 0\n"},
		{name: "garbage recovery point beside damage", file: "recovery-point-offset-checkpoint", contents: "garbage\n",
			sev: Error, line: "line 1 (byte 0)", damage: true},
		{name: "recovery point whose line still parses", file: "recovery-point-offset-checkpoint", contents: "0\n3\np 0 40\n",
			sev: Error, line: "line 4 (byte 11)", want: "0\n1\np 0 40\n"},
		{name: "garbage log start", file: "log-start-offset-checkpoint", contents: "0\n1\np 0 zz\n",
			sev: Error, line: "line 3 (byte 4)", want: "0\n1\np 0 0\n"},
		{name: "log start whose line still parses", file: "log-start-offset-checkpoint", contents: "0\n2\np 0 7\n",
			sev: Error, line: "line 4 (byte 10)", want: "0\n1\np 0 7\n", start: 7},
		{name: "garbage cleaner offset", file: "cleaner-offset-checkpoint", contents: "\x00\x01junk",
			sev: Warning, line: "line 1 (byte 0)", want: "0\n1\np 0 0\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := vfs.NewMem()
			writeLog(t, fsys, "/p", record.None, 60, 5)
			path := filepath.Join("/p", c.file)
			vfstest.WriteFile(t, fsys, path, []byte(c.contents))
			if c.damage {
				first := "/p/" + logFiles(t, fsys, "/p")[0]
				data := vfstest.ReadFile(t, fsys, first)
				data[batchStarts(t, data)[2]+30] ^= 0xff
				vfstest.WriteFile(t, fsys, first, data)
			}
			r := mustCheck(t, fsys, "/p", Options{})
			p := problemAt(r, c.file, problemPos(r, c.file), KindCheckpoint)
			if p.Kind == "" || p.Severity != c.sev || !strings.Contains(p.Detail, "unusable: "+c.line) {
				t.Fatalf("want an unusable-checkpoint %v naming %s:%s", c.sev, c.line, dumpProblems(r))
			}
			rr, err := Repair(fsys, "/p", RepairOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got := string(vfstest.ReadFile(t, fsys, path))
			rp := problemAt(rr, c.file, p.Position, KindCheckpoint)
			if c.want == "" {
				if got != c.contents || rp.Repaired {
					t.Fatalf("rewritten while damage remains: %q, repaired %v", got, rp.Repaired)
				}
				return
			}
			if got != c.want {
				t.Fatalf("after repair %s holds %q, want %q", c.file, got, c.want)
			}
			if !rp.Repaired || !strings.Contains(rp.Repair, "wrote "+c.file+" with the line") {
				t.Fatalf("repair does not say what it wrote:%s", dumpProblems(rr))
			}
			if after := mustCheck(t, fsys, "/p", Options{}); !after.Clean() {
				t.Fatalf("not clean after repair:%s", dumpProblems(after))
			}
			if n := len(readRecords(t, fsys, "/p")); n != 300-c.start {
				t.Fatalf("%d records after repair, want %d", n, 300-c.start)
			}
		})
	}
}

func problemPos(r *Report, file string) int64 {
	for _, p := range r.Problems {
		if p.File == file {
			return p.Position
		}
	}
	return -1
}

// TestUnusableLogDirCheckpoint: a Kafka log.dir's checkpoint, shared by
// its partitions, that does not parse is rewritten keeping every other
// partition's line that still parses; the dropped lines are named.
func TestUnusableLogDirCheckpoint(t *testing.T) {
	fsys := vfs.NewMem()
	dir := kafkaDir(t, fsys, "none")
	cp := "/kafka-logs/log-start-offset-checkpoint"
	vfstest.WriteFile(t, fsys, cp, []byte("0\n3\nother 3 77\nevents 0 zz\n%%%\n"))
	r := mustCheck(t, fsys, dir, Options{})
	if p := problemAt(r, "../log-start-offset-checkpoint", int64(len("0\n3\nother 3 77\n")), KindCheckpoint); !strings.Contains(p.Detail, "unusable: line 4") {
		t.Fatalf("want the unusable line 4 reported:%s", dumpProblems(r))
	}
	rr, err := Repair(fsys, dir, RepairOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(vfstest.ReadFile(t, fsys, cp)), "0\n2\nother 3 77\nevents 0 0\n"; got != want {
		t.Fatalf("after repair %q, want %q", got, want)
	}
	var said string
	for _, p := range rr.Problems {
		said += p.Repair
	}
	for _, want := range []string{`"events 0 0"`, "kept the 1 other partitions' lines", `line 4 "events 0 zz"`, `line 5 "%%%"`} {
		if !strings.Contains(said, want) {
			t.Fatalf("repair does not say %s:%s", want, dumpProblems(rr))
		}
	}
}

// TestLogStartBeyondEnd (issue 26 item 6): a log start beyond the end of
// the log is an inconsistency (an error, not a warning); repair sets it to
// the end, deleting no segment and bringing back no record a DeleteRecords
// deleted (the log reads empty from there), in a log's own checkpoint and
// in a log.dir's line.
func TestLogStartBeyondEnd(t *testing.T) {
	t.Run("own checkpoint", func(t *testing.T) {
		fsys := vfs.NewMem()
		writeLog(t, fsys, "/p", record.None, 60, 5)
		vfstest.WriteFile(t, fsys, "/p/log-start-offset-checkpoint", []byte("0\n1\np 0 5000\n"))
		logs := logFiles(t, fsys, "/p")
		r := mustCheck(t, fsys, "/p", Options{})
		if p := problemAt(r, "log-start-offset-checkpoint", 4, KindCheckpoint); p.Severity != Error || !strings.Contains(p.Detail, "beyond the end of the log 300") {
			t.Fatalf("want an error for the log start beyond the end:%s", dumpProblems(r))
		}
		rr, err := Repair(fsys, "/p", RepairOptions{})
		if err != nil || rr.ExitCode() != ExitRepaired {
			t.Fatalf("repair: %v, exit %d:%s", err, rr.ExitCode(), dumpProblems(rr))
		}
		if got := string(vfstest.ReadFile(t, fsys, "/p/log-start-offset-checkpoint")); got != "0\n1\np 0 300\n" {
			t.Fatalf("log start checkpoint %q, want the end, 300", got)
		}
		if after := logFiles(t, fsys, "/p"); !slices.Equal(after, logs) {
			t.Fatalf("segments %v after repair, were %v", after, logs)
		}
		if n := len(readRecords(t, fsys, "/p")); n != 0 {
			t.Fatalf("%d records readable after repair; every record lay below the log start", n)
		}
	})
	t.Run("log.dir line", func(t *testing.T) {
		fsys := vfs.NewMem()
		dir := kafkaDir(t, fsys, "none")
		cp := "/kafka-logs/log-start-offset-checkpoint"
		vfstest.WriteFile(t, fsys, cp, []byte("0\n2\nother 3 77\nevents 0 99999\n"))
		r := mustCheck(t, fsys, dir, Options{})
		end := r.Stats.LastOffset + 1
		rr, err := Repair(fsys, dir, RepairOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p := problemAt(rr, "../log-start-offset-checkpoint", int64(len("0\n2\nother 3 77\n")), KindCheckpoint); !p.Repaired {
			t.Fatalf("not repaired:%s", dumpProblems(rr))
		}
		if got, want := string(vfstest.ReadFile(t, fsys, cp)), fmt.Sprintf("0\n2\nother 3 77\nevents 0 %d\n", end); got != want {
			t.Fatalf("checkpoint %q, want %q", got, want)
		}
	})
}
