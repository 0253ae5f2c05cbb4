package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/crc32c"
	"github.com/seglog/seglog/internal/soak"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/segment"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// The peak resident memory of one command over a hostile directory of a
// few KiB is bounded by the command's footprint on a healthy log plus
// less than the smallest lie a case tells (the 60 MiB length field): the
// test binary and the command's buffers, 15-20 MiB, read-only opens
// (consume, clean --dry-run) included. Their in-memory indexes,
// preallocated at 10 MiB each, cost only the pages written, as sparse
// files on disk do; a read-only open peaked at 77 MiB before MemFS kept
// track of the zero tail it need not copy. Anything allocated by a length
// field of 60 MiB or 2 GiB, a count of 2^31 records or a checkpoint's
// 10^12 entries goes over. Under the race detector, which triples a
// process's memory, the bound is four times larger: a 2 GiB lie still
// shows, a 60 MiB one is left to the plain run.
var (
	hostileRSSLimit = int64(56<<20) * raceFactor
	raceFactor      = map[bool]int64{false: 1, true: 4}[soak.Race]
)

// hostileTimeout ends a command that hangs (on a FIFO, a symlink loop).
const hostileTimeout = 30 * time.Second

// lstatSnapshot describes every entry below dir as it is, without
// following symlinks or opening anything but regular files: type, mode,
// size, modification time and, for a regular file, a hash of its bytes.
func lstatSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	snap := map[string]string{}
	var walk func(rel string)
	walk = func(rel string) {
		name := filepath.Join(dir, rel)
		fi, err := os.Lstat(name) //vfs:allow a view below vfs: symlinks and FIFOs as they are
		if err != nil {
			t.Fatal(err)
		}
		desc := fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		switch {
		case fi.Mode().IsRegular():
			snap[rel] = fmt.Sprintf("%s %x", desc, sha256.Sum256(readVFS(t, name)))
		case fi.IsDir():
			snap[rel+"/"] = desc
			names, err := vfs.Default.List(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				walk(filepath.Join(rel, n))
			}
		default:
			target, _ := os.Readlink(name) //vfs:allow a symlink's target, which vfs does not give
			snap[rel] = desc + " " + target
		}
	}
	walk("")
	return snap
}

// batchStarts returns the byte position of every entry of a .log.
func batchStarts(t *testing.T, file string) []int {
	t.Helper()
	data := readVFS(t, file)
	var out []int
	for pos := 0; pos+record.PeekSize <= len(data); {
		size, _, err := record.PeekEntry(data[pos:])
		if err != nil || size <= 0 {
			t.Fatalf("%s at byte %d: %v", file, pos, err)
		}
		out = append(out, pos)
		pos += size
	}
	return out
}

// patchBatch changes the first batch at pos of file with fn and, if
// fixCRC, makes its CRC match again: a header that lies but that no CRC
// check catches.
func patchBatch(t *testing.T, file string, pos int, fixCRC bool, fn func(b []byte)) {
	t.Helper()
	data := readVFS(t, file)
	b := data[pos:]
	size := int(binary.BigEndian.Uint32(b[8:])) + record.LogOverhead
	fn(b)
	if fixCRC {
		binary.BigEndian.PutUint32(b[17:], crc32c.Checksum(b[21:size]))
	}
	writeVFS(t, file, data)
}

// hostileCase damages a copy of a healthy log. file is the base name of
// the file the commands must name when they refuse, at (when not -1) the
// byte position they must give; mayPass lists the commands for which
// success is right: the damage is in something they do not need (a
// retention pass by size reads no record of the segment it deletes, an
// index is rebuilt in memory or not needed, a checkpoint beyond the end
// is Kafka's to ignore or act on). dump, like Kafka's DumpLogSegments,
// exits 0 over data damage and shows it at its byte position instead.
type hostileCase struct {
	name    string
	damage  func(t *testing.T, dir string, logs []string) (file string, at int)
	mayPass []string
}

// hostileCases are damaged and hostile directories of every kind.
func hostileCases() []hostileCase {
	first := func(logs []string) string { return logs[0] }
	mid := func(logs []string) string { return logs[len(logs)/2] }
	base := filepath.Base
	lie := func(pos int, fixCRC bool, fn func(b []byte)) func(t *testing.T, dir string, logs []string) (string, int) {
		return func(t *testing.T, dir string, logs []string) (string, int) {
			starts := batchStarts(t, mid(logs))
			at := starts[min(pos, len(starts)-1)]
			patchBatch(t, mid(logs), at, fixCRC, fn)
			return base(mid(logs)), at
		}
	}
	setLen := func(n uint32) func(b []byte) { return func(b []byte) { binary.BigEndian.PutUint32(b[8:], n) } }
	replace := func(pick func([]string) string, suffix string, with func(t *testing.T, name string)) func(t *testing.T, dir string, logs []string) (string, int) {
		return func(t *testing.T, dir string, logs []string) (string, int) {
			name := strings.TrimSuffix(pick(logs), segment.LogSuffix) + suffix
			if err := vfs.Default.Remove(name); err != nil {
				t.Fatal(err)
			}
			with(t, name)
			return base(name), -1
		}
	}
	bytesOf := func(data []byte) func(t *testing.T, name string) {
		return func(t *testing.T, name string) { writeVFS(t, name, data) }
	}
	extra := func(name string, make func(t *testing.T, path string)) func(t *testing.T, dir string, logs []string) (string, int) {
		return func(t *testing.T, dir string, logs []string) (string, int) {
			make(t, filepath.Join(dir, name))
			return name, -1
		}
	}
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(i*131 + i/7)
	}
	far := segment.FileName(1<<40, segment.LogSuffix)
	retention := []string{"dump", "clean-dry", "clean"}
	all := []string{"dump", "consume", "clean-dry", "clean"}
	return []hostileCase{
		{name: "length 2GiB", damage: lie(1, false, setLen(0x7ffffff0)), mayPass: retention},
		{name: "length 2GiB first batch", damage: lie(0, false, setLen(0x7ffffff0)), mayPass: retention},
		{name: "length 60MiB", damage: lie(2, false, setLen(60<<20)), mayPass: retention},
		{name: "length below header", damage: lie(1, false, setLen(12)), mayPass: retention},
		{name: "bad magic", damage: lie(1, false, func(b []byte) { b[16] = 9 }), mayPass: retention},
		{name: "bad crc", damage: lie(1, false, func(b []byte) { b[record.HeaderSize+2] ^= 0x5a }), mayPass: retention},
		{name: "record count 2^31-1", damage: lie(1, true, func(b []byte) { binary.BigEndian.PutUint32(b[57:], 1<<31-1) }), mayPass: retention},
		{name: "last offset delta 2^31-1", damage: lie(1, true, func(b []byte) { binary.BigEndian.PutUint32(b[23:], 1<<31-1) }), mayPass: retention},
		{name: "record length lies", damage: lie(1, true, func(b []byte) { b[record.HeaderSize] = 0x7e }), mayPass: retention},
		{name: "truncated mid-log", damage: func(t *testing.T, dir string, logs []string) (string, int) {
			starts := batchStarts(t, mid(logs))
			data := readVFS(t, mid(logs))
			cut := starts[len(starts)-1] + 30
			writeVFS(t, mid(logs), data[:cut])
			return base(mid(logs)), starts[len(starts)-1]
		}, mayPass: retention},
		{name: "garbage index", damage: replace(first, segment.IndexSuffix, bytesOf(garbage)), mayPass: all},
		{name: "garbage odd-sized index", damage: replace(first, segment.IndexSuffix, bytesOf(garbage[:1001])), mayPass: all},
		{name: "garbage timeindex", damage: replace(mid, segment.TimeIndexSuffix, bytesOf(garbage)), mayPass: all},
		{name: "0-byte index", damage: replace(mid, segment.IndexSuffix, bytesOf(nil)), mayPass: all},
		{name: "log is a directory", damage: replace(mid, segment.LogSuffix, func(t *testing.T, name string) { must(t, vfs.Default.MkdirAll(name)) }),
			mayPass: []string{"clean-dry", "clean"}},
		{name: "symlink loop", damage: extra(far, func(t *testing.T, p string) {
			must(t, os.Symlink(filepath.Base(p), p)) //vfs:allow a symlink loop, which vfs cannot make
		})},
		{name: "fifo segment", damage: extra(far, func(t *testing.T, p string) { must(t, syscall.Mkfifo(p, 0o644)) })},
		{name: "non-UTF-8 name", damage: extra("\xff\xfe-x.log", func(t *testing.T, p string) { writeVFS(t, p, garbage[:100]) }),
			mayPass: []string{"dump"}},
		{name: "recovery point 2^63-1", damage: extra("recovery-point-offset-checkpoint", func(t *testing.T, p string) {
			writeVFS(t, p, []byte("0\n1\nlog 0 9223372036854775807\n"))
		}), mayPass: all},
		{name: "log start 2^63-1", damage: extra("log-start-offset-checkpoint", func(t *testing.T, p string) {
			writeVFS(t, p, []byte("0\n1\nlog 0 9223372036854775807\n"))
		}), mayPass: all},
		{name: "checkpoint count 10^12", damage: func(t *testing.T, dir string, logs []string) (string, int) {
			writeVFS(t, filepath.Join(dir, "recovery-point-offset-checkpoint"), []byte("0\n999999999999\n"))
			return "recovery-point-offset-checkpoint", 2 // the count line
		}, mayPass: []string{"dump"}},
		{name: "leader epoch count 10^12", damage: extra("leader-epoch-checkpoint", func(t *testing.T, p string) {
			writeVFS(t, p, []byte("0\n999999999999\n0 0\n"))
		}), mayPass: all},
	}
}

// hostileRun is one command's run in a child process.
type hostileRun struct {
	code   int
	stdout string // its first MiB
	stderr string
	rssKiB int64 // peak resident memory (VmHWM), -1 if unknown
	hung   bool
}

// runHostile runs seglog args in a child process, bounded by
// hostileTimeout, and returns its exit, standard error and peak RSS.
func runHostile(t *testing.T, args ...string) hostileRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hostileTimeout)
	defer cancel()
	var stdout, stderr lockedBuffer
	rss := filepath.Join(t.TempDir(), "rss")
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), runAsSeglog+"=1", peakRSSFile+"="+rss)
	cmd.Stderr = &stderr
	cmd.Stdout = &firstBytes{w: &stdout, left: 1 << 20}
	err := cmd.Run()
	r := hostileRun{stdout: stdout.String(), stderr: stderr.String(), hung: ctx.Err() != nil}
	if cmd.ProcessState == nil {
		t.Fatalf("seglog %s: %v", strings.Join(args, " "), err)
	}
	r.code = cmd.ProcessState.ExitCode()
	r.rssKiB = -1 // no figure: the command did not return
	if data, err := vfs.ReadFileLimit(vfs.Default, rss, 64); err == nil {
		if n, err := strconv.ParseInt(string(data), 10, 64); err == nil {
			r.rssKiB = n
		}
	}
	return r
}

// dumpShowsDamage reports whether dump's output shows damage at byte at
// of a .log: the entry there damaged or not read, or the batch there
// followed by an error in its records (a header whose CRC matches but
// whose count, offsets or record lengths lie).
func dumpShowsDamage(out string, at int) bool {
	if strings.Contains(out, fmt.Sprintf("position: %d damaged", at)) || strings.Contains(out, fmt.Sprintf("position: %d not read", at)) {
		return true
	}
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "baseOffset:") && strings.Contains(l, fmt.Sprintf(" position: %d ", at)) {
			for _, r := range lines[i+1:] {
				if !strings.HasPrefix(r, "|") {
					break
				}
				if strings.HasPrefix(r, "| error:") {
					return true
				}
			}
		}
	}
	return false
}

// firstBytes keeps the first left bytes written and discards the rest.
type firstBytes struct {
	w    io.Writer
	left int
}

func (f *firstBytes) Write(p []byte) (int, error) {
	if n := min(len(p), f.left); n > 0 {
		f.left -= n
		f.w.Write(p[:n])
	}
	return len(p), nil
}

// TestHostileDirectories runs dump, consume and clean (a dry run and a
// real one) as processes over damaged and hostile copies of a log: a
// length field of 2 GiB or 60 MiB, one below the header, a bad magic, a
// bad CRC, a record count or last offset delta of 2^31-1 and a record
// length that lies (with the CRC fixed to match), a batch truncated in
// the middle of the log, garbage and 0-byte index files, a .log that is a
// directory, a symlink loop and a FIFO named like a segment, a non-UTF-8
// name, checkpoints with an offset of 2^63-1 or an entry count of 10^12.
// Each command must not panic or hang, must stay within its memory bound
// (hostileRSSLimit), and either succeed where
// the case allows it or exit non-zero with a
// message naming the damaged file (and the byte position of data
// damage; dump shows data damage at its position and exits 0, as
// Kafka's tool); dump, consume and clean --dry-run must change nothing.
func TestHostileDirectories(t *testing.T) {
	healthy := filepath.Join(t.TempDir(), "log")
	mustInvoke(t, numberedLines(1, 200), "produce", healthy, "--batch", "5", "--segment-bytes", "1024", "--max-index-bytes", "4096")
	if n := len(storedLogs(t, healthy)); n < 3 {
		t.Fatalf("%d segments, want several", n)
	}
	commands := []struct {
		name     string
		args     []string
		readOnly bool
		rssLimit int64
	}{
		{"dump", []string{"dump", "--records"}, true, hostileRSSLimit},
		{"consume", []string{"consume"}, true, hostileRSSLimit},
		{"clean-dry", []string{"clean", "--retention-bytes", "1", "--dry-run"}, true, hostileRSSLimit},
		{"clean", []string{"clean", "--retention-bytes", "1"}, false, hostileRSSLimit},
	}
	for _, tc := range hostileCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range commands {
				dir := filepath.Join(t.TempDir(), "log")
				copyDir(t, healthy, dir)
				file, at := tc.damage(t, dir, storedLogs(t, dir))
				before := lstatSnapshot(t, dir)
				args := append(slices.Clone(c.args[:1]), dir)
				args = append(args, c.args[1:]...)
				r := runHostile(t, args...)
				what := fmt.Sprintf("seglog %s (exit %d, %d MiB RSS)\nstderr: %s", strings.Join(c.args, " "), r.code, r.rssKiB>>10, r.stderr)
				switch {
				case r.hung:
					t.Errorf("%s: hung for %v", what, hostileTimeout)
				case strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "fatal error:") || strings.Contains(r.stderr, "goroutine "):
					t.Errorf("%s: panicked or died", what)
				case r.rssKiB < 0:
					t.Errorf("%s: the command did not return (no peak RSS written)", what)
				case r.rssKiB<<10 > c.rssLimit:
					t.Errorf("%s: peak RSS over %d MiB", what, c.rssLimit>>20)
				case r.code == 0 && c.name == "dump" && at >= 0 && strings.HasSuffix(file, segment.LogSuffix) && !dumpShowsDamage(r.stdout, at):
					t.Errorf("%s: does not show the damage at byte %d of %s\nstdout: %.3000s", what, at, file, r.stdout)
				case r.code == 0 && !slices.Contains(tc.mayPass, c.name):
					t.Errorf("%s: succeeded over damage in %s", what, file)
				case r.code != 0 && !strings.Contains(r.stderr, file):
					t.Errorf("%s: the message does not name %s", what, file)
				case r.code != 0 && at >= 0 && !strings.Contains(r.stderr, fmt.Sprintf("at byte %d", at)):
					t.Errorf("%s: the message does not give byte %d", what, at)
				}
				if c.readOnly {
					vfstest.Unchanged(t, c.name, before, lstatSnapshot(t, dir))
				}
			}
		})
	}
}

// copyDir copies the files of src (a log directory, files only) into a
// new directory dst.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := vfs.Default.MkdirAll(dst); err != nil {
		t.Fatal(err)
	}
	names, err := vfs.Default.List(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		writeVFS(t, filepath.Join(dst, n), readVFS(t, filepath.Join(src, n)))
	}
}
