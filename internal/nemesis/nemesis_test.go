//go:build linux

package nemesis

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/soak"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

var (
	rounds = flag.Int("nemesis.rounds", 4, "SIGKILLs of the broker in TestNemesisSingleNode, while writing, while starting or while stopping (and half as many SIGSTOPs, at least one); -soak.scale multiplies it")
	seed   = flag.Uint64("nemesis.seed", 0, "seed of the nemesis's schedule (0: -soak.seed if set, else a new one; printed on failure)")
)

// seglogBinary returns the seglog binary: SEGLOG_BIN if set, else one
// built from this module with `go build` into the test's temporary
// directory. Each test builds its own (go's build cache makes the second
// a link): a binary shared between tests would live in the first one's
// temporary directory, which testing removes when that test ends.
func seglogBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("SEGLOG_BIN"); bin != "" {
		return bin
	}
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "seglog")
	args := []string{"build", "-o", bin}
	if soak.Race {
		// Under -race the broker is built with it too: the nemesis
		// then also looks for data races in serve (its report makes
		// the broker's exit status 66, which Stop reports).
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "./cmd/seglog")...)
	build.Dir = strings.TrimSpace(string(root))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/seglog: %v\n%s", err, out)
	}
	return bin
}

// TestNemesisSingleNode runs a real `seglog serve` under five writers
// (each with another codec) with acks=all and idempotence to a topic
// that syncs every message (flush.messages=1), SIGKILLs and restarts it
// -nemesis.rounds times and SIGSTOPs it a few times, at random moments,
// with a consumer reading all along; then stops everything and checks the history: every acknowledged
// record read back exactly once at the offset it was acknowledged with,
// no value twice, no offset given to two values, nothing a consumer saw
// gone, and fsck clean on every partition after the clean stop.
//
// The seed fixes the schedule (which fault, how long each wait), not the
// interleaving with the writers: a replay repeats the faults, and a bug
// the timing hides may need a few runs or more rounds.
func TestNemesisSingleNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs seglog serve processes for tens of seconds; run without -short")
	}
	s := *seed
	switch {
	case s != 0:
	case soak.Seed() != 0:
		s = soak.Seed() // a soak round's schedule, named by the round
	default:
		s = uint64(time.Now().UnixNano())
	}
	// The race detector slows the in-process clients, not the broker:
	// half the faults keep the run at CI's size.
	nRounds := soak.Reduce(*rounds*soak.Scale(), 2)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d; replay: go test ./internal/nemesis -run 'TestNemesisSingleNode$' -count=1 -v -nemesis.seed=%d -nemesis.rounds=%d", s, s, nRounds)
		}
	})
	rng := rand.New(rand.NewPCG(s, 0x6e656d65))
	bin := seglogBinary(t)

	const topic, partitions = "nemesis", 3
	dir := filepath.Join(t.TempDir(), "store")
	p, err := Start(bin, dir, "--listen", "127.0.0.1:0", "--auto-create-topics=false", "--grace", "10s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.Running() {
			p.Kill()
		}
	})
	brokers := []string{p.Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// flush.messages=1: an acknowledgment means the batch was synced, so
	// a SIGKILL (which loses nothing the kernel holds anyway) and, the
	// real subject, a power loss must keep it. Small segments: the
	// faults hit rolls and index writes too.
	if err := CreateTopic(ctx, brokers, topic, partitions, -1, "flush.messages=1", "segment.bytes=262144", "max.message.bytes=65536"); err != nil {
		t.Fatal(err)
	}

	wl := &Workload{Brokers: brokers, Topic: topic, Writers: 5} // one per codec
	if err := wl.Start(true); err != nil {
		t.Fatal(err)
	}
	progress := func(what string) {
		n := wl.Acked()
		testutil.WaitFor(t, fmt.Sprintf("records are acknowledged again %s (%d so far); produce errors: %s", what, n, wl.Errors()),
			func() bool { return wl.Acked() > n })
	}
	progress("at the start")

	// The faults: each round a SIGKILL, while writing ("kill"), during
	// the recovery and start-up that follows one ("kill-starting"), or
	// during a clean shutdown ("term-kill"); and half as many SIGSTOPs.
	var faults []string
	for range nRounds {
		faults = append(faults, []string{"kill", "kill", "kill", "kill-starting", "term-kill"}[rng.IntN(5)])
	}
	for range max(1, nRounds/2) {
		faults = append(faults, "pause")
	}
	rng.Shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
	// The sleeps below are the nemesis: the random moments and lengths
	// of the faults, not waits for a condition (those are WaitFor).
	jitter := func(lo, hi int) time.Duration { return time.Duration(lo+rng.IntN(hi-lo+1)) * time.Millisecond }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range faults {
		time.Sleep(jitter(50, 700))
		at := wl.Acked()
		switch f {
		case "kill":
			must(p.Kill())
			time.Sleep(jitter(0, 300)) // down a while, the writers retrying
		case "kill-starting":
			must(p.Kill())
			must(p.Launch())
			time.Sleep(jitter(0, 150))
			must(p.Kill())
		case "term-kill":
			must(p.Terminate())
			time.Sleep(jitter(0, 100))
			must(p.Kill())
		case "pause":
			must(p.Pause())
			// Up to 3 s: longer than the writers' 2 s produce timeout, so
			// some pauses make them retry on new connections.
			d := jitter(100, 3000)
			time.Sleep(d)
			must(p.Resume())
			t.Logf("fault %d: SIGSTOP at %d acknowledgments for %v", i, at, d)
		}
		if f != "pause" {
			if err := p.Restart(); err != nil {
				t.Fatalf("restart after fault %d (%s): %v", i, f, err)
			}
			t.Logf("fault %d: %s at %d acknowledgments, restarted", i, f, at)
		}
		progress(fmt.Sprintf("after fault %d (%s)", i, f))
	}

	// The nemesis may run for as long as -nemesis.rounds makes it; what
	// follows has bounds of its own.
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
	h := wl.Stop(stopCtx)
	stopCancel()
	readCtx, readCancel := context.WithTimeout(context.Background(), time.Minute)
	h.Read, _, err = ReadAll(readCtx, brokers, topic)
	readCancel()
	if err != nil {
		t.Error(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}

	rep := Check(h)
	dirs, err := PartitionDirs(vfs.Default, dir, topic)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != partitions {
		t.Errorf("%d partition directories, want %d: %v", len(dirs), partitions, dirs)
	}
	fsckVs, err := FsckClean(vfs.Default, dirs)
	if err != nil {
		t.Fatal(err)
	}
	rep.Violations = append(rep.Violations, fsckVs...)
	t.Logf("%d faults; %v", len(faults), rep)
	if errs := wl.Errors(); errs != "" {
		t.Logf("produce errors: %s", errs)
	}
	if strings.Contains(p.Output(), "WARNING: DATA RACE") {
		t.Errorf("the broker reported a data race:\n%s", p.Output())
	}
	if !rep.OK() {
		t.Errorf("the history breaks the rules:\n%v\nbroker output (tail):\n%s", rep, p.Output())
	}
	kills := 0
	for _, f := range faults {
		if f != "pause" {
			kills++
		}
	}
	soak.Count(t, "kills", kills)
	soak.Count(t, "records_verified", rep.Acked)
	if rep.Acked == 0 {
		t.Error("nothing was acknowledged: the run checked nothing")
	}

	// The topic did sync every message: otherwise the run proved less
	// than it says.
	st, err := store.Open(dir, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	info, err := st.DescribeTopic(topic)
	if err != nil {
		t.Fatal(err)
	}
	if info.Config.FlushMessages != 1 {
		t.Errorf("topic %s has flush.messages=%d, want 1", topic, info.Config.FlushMessages)
	}
}
