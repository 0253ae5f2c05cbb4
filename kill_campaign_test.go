package seglog_test

import (
	"bufio"
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/internal/soak"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// killCampaignEnv names the directory killCampaignChild writes to when
// the test binary runs as TestKillCampaign's child.
const killCampaignEnv = "SEGLOG_KILL_CAMPAIGN_DIR"

func init() { seglog.RegisterTestChild(killCampaignEnv, killCampaignChild) }

func killOptions() seglog.Options {
	return seglog.Options{
		LogConfig: seglog.LogConfig{
			SegmentBytes:       32 << 10,
			IndexIntervalBytes: 1024,
			MaxIndexBytes:      4096,
			Sync:               seglog.SyncAlways,
		},
		Logger: discard(),
	}
}

// killValue is the value of the record with key k written as uniq: a
// reader checks any record alone (key, uniq and the bytes all agree).
func killValue(key string, uniq uint64) []byte {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", key, uniq)
	r := rand.New(rand.NewPCG(h.Sum64(), uniq))
	v := []byte(fmt.Sprintf("%s|%d|", key, uniq))
	for range 20 + r.IntN(200) {
		v = append(v, byte('a'+r.IntN(26)))
	}
	return v
}

// checkKillValue reports whether v is killValue of key for its own uniq.
func checkKillValue(key string, v []byte) bool {
	parts := strings.SplitN(string(v), "|", 3)
	if len(parts) != 3 || parts[0] != key {
		return false
	}
	uniq, err := strconv.ParseUint(parts[1], 10, 64)
	return err == nil && string(killValue(key, uniq)) == string(v)
}

// killCampaignChild is the child process of TestKillCampaign, which
// TestMain runs when killCampaignEnv names dir: it appends from four
// writers with SyncAlways and prints "offset key" for each acknowledged
// record, while other goroutines roll, run retention and compact, until
// killed.
func killCampaignChild(dir string) {
	l, err := seglog.Open(dir, killOptions())
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(3)
	}
	seed, _ := strconv.ParseUint(os.Getenv(killCampaignEnv+"_SEED"), 10, 64)
	out := bufio.NewWriter(os.Stdout)
	var outMu sync.Mutex
	for w := range 4 {
		go func() {
			r := rand.New(rand.NewPCG(seed, uint64(w)))
			for {
				n := 1 + r.IntN(4)
				recs := make([]record.Record, n)
				keys := make([]string, n)
				for j := range recs {
					keys[j] = fmt.Sprintf("k%d", r.IntN(300))
					recs[j] = record.Record{Key: []byte(keys[j]), Value: killValue(keys[j], r.Uint64())}
				}
				info, err := l.Append(recs...)
				if err != nil {
					fmt.Fprintln(os.Stderr, "child append:", err)
					os.Exit(4)
				}
				outMu.Lock()
				for j, k := range keys {
					fmt.Fprintln(out, info.FirstOffset+int64(j), k)
				}
				out.Flush()
				outMu.Unlock()
			}
		}()
	}
	c := cleaner.New(cleaner.Options{Logger: discard()})
	c.SetCompaction(cleaner.CompactionOptions{DedupeBufferBytes: 1 << 20, SegmentBytes: 32 << 10})
	p := cleaner.DefaultPolicy()
	p.FileDeleteDelay = 0
	p.RetentionBytes = 64 << 10
	if err := c.Add(cleaner.Wrap(l), p); err != nil {
		os.Exit(5)
	}
	go func() { // rolls, by hand too
		for {
			time.Sleep(7 * time.Millisecond) // pacing: a roll every few appends, not a wait for anything
			l.Roll()
		}
	}()
	cp := p
	cp.CleanupPolicy = cleaner.CompactDelete
	for { // retention and compaction, one after the other
		c.RunOnce(context.Background())
		c.Compact(context.Background(), cleaner.Wrap(l), cp)
		time.Sleep(3 * time.Millisecond) // pacing between rounds, not a wait for anything
	}
}

// TestKillCampaign SIGKILLs a child appending from four writers with
// SyncAlways while it rolls, runs retention and compacts, at a random
// moment, over and over on the same directory (the log grows across
// kills). After each kill the log reopens; every record holds a value
// made for its key (nothing partial); offsets rise; every acknowledged
// record at or above the start is there, or compaction replaced it by a
// later record of its key; the end never goes back; and fsck finds the
// directory clean once the log is closed.
func TestKillCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes; run without -short")
	}
	dir := t.TempDir()
	rounds := 20 * soak.Scale()
	r := rand.New(rand.NewPCG(soak.Seed(), 21))
	acked := map[int64]string{} // every acknowledged offset, across rounds
	lastEnd := int64(0)
	verified, replaced, retained := 0, 0, 0
	for round := 0; round < rounds; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$") // TestMain runs the child, never a test
		cmd.Env = append(os.Environ(), killCampaignEnv+"="+dir, fmt.Sprintf("%s_SEED=%d", killCampaignEnv, r.Uint64()))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The kill comes at a random moment of the child's work, counted
		// in the records it has acknowledged this round rather than in
		// time: a child slowed down by a loaded machine (or -race) still
		// gets as far between kills, so retention and compaction have
		// work to be killed in.
		want := 1 + r.IntN(600)
		reached := make(chan struct{})
		done := make(chan map[int64]string, 1)
		go func() {
			got := map[int64]string{}
			sc := bufio.NewScanner(stdout)
			acks := 0
			for sc.Scan() {
				var off int64
				var key string
				if _, err := fmt.Sscan(sc.Text(), &off, &key); err == nil {
					got[off] = key
				}
				if acks++; acks == want {
					close(reached)
				}
			}
			if acks < want {
				close(reached) // the child ended early: the check below says so
			}
			done <- got
		}()
		<-reached
		cmd.Process.Signal(syscall.SIGKILL)
		got := <-done
		werr := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: the child ended on its own (%v): %s", round, werr, stderr.String())
		}
		for off, k := range got {
			acked[off] = k
		}
		l, err := seglog.Open(dir, killOptions())
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		present := map[int64]string{}
		lastOfKey := map[string]int64{}
		prev := int64(-1)
		for rec, err := range l.Records(l.StartOffset()) {
			if err != nil {
				t.Fatalf("round %d: read after %d: %v", round, prev, err)
			}
			if rec.Offset <= prev || !checkKillValue(string(rec.Key), rec.Value) {
				t.Fatalf("round %d: offset %d (after %d) holds a record never written whole", round, rec.Offset, prev)
			}
			prev = rec.Offset
			present[rec.Offset] = string(rec.Key)
			lastOfKey[string(rec.Key)] = rec.Offset
		}
		start, end := l.StartOffset(), l.EndOffset()
		if end < lastEnd {
			t.Fatalf("round %d: end went back from %d to %d", round, lastEnd, end)
		}
		lastEnd = end
		for off, k := range acked {
			if off < start {
				delete(acked, off) // retention took it
				retained++
				continue
			}
			if off >= end {
				t.Fatalf("round %d: acknowledged offset %d is past the end %d", round, off, end)
			}
			if pk, ok := present[off]; ok {
				if pk != k {
					t.Fatalf("round %d: offset %d holds key %s, acknowledged as %s", round, off, pk, k)
				}
			} else if lastOfKey[k] <= off {
				t.Fatalf("round %d: acknowledged offset %d (key %s) is gone and no later record of its key replaced it", round, off, k)
			} else {
				replaced++
			}
			verified++
		}
		if err := l.Close(); err != nil {
			t.Fatalf("round %d: close: %v", round, err)
		}
		fscktest.CheckClean(t, vfs.Default, dir)
		if t.Failed() {
			t.FailNow()
		}
	}
	t.Logf("%d kills, %d acknowledged records verified, log end %d; %d records removed by retention, %d checks found a record replaced by compaction", rounds, verified, lastEnd, retained, replaced)
	if retained == 0 || replaced == 0 {
		t.Errorf("the child's retention (%d) or compaction (%d) never removed anything: the kills did not land mid-retention or mid-compaction", retained, replaced)
	}
	soak.Count(t, "kills", rounds)
	soak.Count(t, "records_verified", verified)
}
