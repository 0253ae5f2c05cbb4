package seglog

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The child side of TestKillDuringAppends: when this variable names a
// directory, the test binary appends to the log there with SyncAlways and
// prints each acknowledged end offset, until it is killed.
const killChildEnv = "SEGLOG_KILL_CHILD_DIR"

// testChildren maps an environment variable to the child process it
// selects: when TestMain finds one set, the test binary runs that child
// (which runs until killed or exits) with the variable's value instead of
// the tests. A child is not a test, so a normal run neither runs nor
// counts it. The external test package adds its children with
// RegisterTestChild.
var testChildren = map[string]func(value string){
	killChildEnv: killChild,
	roChildEnv:   func(spec string) { os.Exit(roChild(spec)) },
}

// RegisterTestChild makes TestMain run child when env is set (see
// testChildren); for the external test package's init functions.
func RegisterTestChild(env string, child func(value string)) { testChildren[env] = child }

func TestMain(m *testing.M) {
	for env, child := range testChildren {
		if v := os.Getenv(env); v != "" {
			child(v)
			os.Exit(0)
		}
	}
	code := m.Run()
	for _, f := range benchCleanups {
		f()
	}
	os.Exit(code)
}

func killChild(dir string) {
	l, err := Open(dir, Options{LogConfig: LogConfig{Sync: SyncAlways, SegmentBytes: 64 << 10}, Logger: discardLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	out := bufio.NewWriter(os.Stdout)
	for {
		info, err := l.Append(recordsAt(l.EndOffset(), 1+int(l.EndOffset()%4))...)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child append:", err)
			os.Exit(4)
		}
		fmt.Fprintln(out, info.LastOffset+1)
		out.Flush()
	}
}

// TestKillDuringAppends runs a real child process that appends with
// SyncAlways and reports every acknowledged offset, SIGKILLs it at a
// random moment, reopens the log and checks that everything acknowledged
// survived intact — twenty times over the same directory.
func TestKillDuringAppends(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes; run without -short")
	}
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(11, 12))
	for round := 0; round < 20; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := make(chan int64, 1)
		go func() {
			last := int64(0)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if v, err := strconv.ParseInt(sc.Text(), 10, 64); err == nil {
					last = v
				}
			}
			acked <- last
		}()
		// The kill comes at a random moment of the appends: the moment is
		// the test's subject, not a condition to wait for.
		time.Sleep(time.Duration(20+r.IntN(120)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		last := <-acked
		cmd.Wait()

		l, err := Open(dir, Options{Logger: discardLogger()})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		next := int64(0)
		for rec, err := range l.Records(0) {
			if err != nil {
				t.Fatalf("round %d: read at %d: %v", round, next, err)
			}
			if rec.Offset != next || !sameBytes(rec.Value, crashValue(rec.Offset, len(rec.Value))) {
				// Everything needed to tell a gap from a wrong value, and
				// where: this failed once under heavy load and has not
				// been reproduced since.
				t.Fatalf("round %d: offset %d holds the wrong record: offset %d, %d-byte value (acknowledged up to %d); segments %s",
					round, next, rec.Offset, len(rec.Value), last, l.debugSegments())
			}
			next++
		}
		if next < last {
			t.Fatalf("round %d: acknowledged up to %d, only %d survived", round, last, next)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
