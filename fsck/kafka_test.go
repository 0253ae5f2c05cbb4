package fsck

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

const corpusDir = "../testdata/kafka-client"

var corpusCodecs = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// kafkaDir lays a broker's stored log out as a Kafka partition directory
// (a .log with no index files, as after copying only the data) inside a
// log.dir, and returns the partition directory.
func kafkaDir(t testing.TB, fsys vfs.FS, codec string) string {
	t.Helper()
	dir := "/kafka-logs/events-0"
	if err := fsys.MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	data := vfstest.ReadFile(t, vfs.Default, filepath.Join(corpusDir, codec+".broker-log"))
	vfstest.WriteFile(t, fsys, filepath.Join(dir, layout.FileName(0, ".log")), data)
	return dir
}

type corpusRecord struct {
	Key         *string `json:"key"`
	Value       *string `json:"value"`
	TimestampMs int64   `json:"timestamp_ms"`
}

func b64(b []byte) *string {
	if b == nil {
		return nil
	}
	s := base64.StdEncoding.EncodeToString(b)
	return &s
}

func sameB64(a, b *string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

func TestKafkaBrokerLog(t *testing.T) {
	for _, codec := range corpusCodecs {
		t.Run(codec, func(t *testing.T) {
			t.Parallel()
			fsys := vfs.NewMem()
			dir := kafkaDir(t, fsys, codec)
			r := mustCheck(t, fsys, dir, Options{Deep: true})
			// Exactly the two missing indexes: the batches are a real
			// broker's and must pass every check.
			if len(r.Problems) != 2 || !hasProblem(r, layout.FileName(0, ".index"), 0, KindIndexMissing) ||
				!hasProblem(r, layout.FileName(0, ".timeindex"), 0, KindIndexMissing) {
				t.Fatalf("want the two missing indexes, got:%s", dumpProblems(r))
			}
			if r.Stats.Codecs[codec] == 0 {
				t.Errorf("no %s batches counted: %v", codec, r.Stats.Codecs)
			}
			rr, err := Repair(fsys, dir, RepairOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rr.ExitCode() != ExitRepaired {
				t.Fatalf("exit %d after repair:%s", rr.ExitCode(), dumpProblems(rr))
			}
			if after := mustCheck(t, fsys, dir, Options{Deep: true}); !after.Clean() {
				t.Fatalf("not clean after repair:%s", dumpProblems(after))
			}

			var want []corpusRecord
			for _, line := range strings.Split(strings.TrimSpace(string(vfstest.ReadFile(t, vfs.Default, filepath.Join(corpusDir, codec+".records.jsonl")))), "\n") {
				var c corpusRecord
				if err := json.Unmarshal([]byte(line), &c); err != nil {
					t.Fatal(err)
				}
				want = append(want, c)
			}
			got := readRecords(t, fsys, dir)
			if len(got) != len(want) {
				t.Fatalf("Log read %d records, want %d", len(got), len(want))
			}
			for i, g := range got {
				if !sameB64(b64(g.Key), want[i].Key) || !sameB64(b64(g.Value), want[i].Value) || g.Timestamp != want[i].TimestampMs {
					t.Fatalf("record %d (offset %d) differs from records.jsonl", i, g.Offset)
				}
			}
		})
	}
}

// TestTxnIndex checks a .txnindex against the ABORT markers of the zstd
// corpus, which used transactions.
func TestTxnIndex(t *testing.T) {
	fsys := vfs.NewMem()
	dir := kafkaDir(t, fsys, "zstd")
	if _, err := Repair(fsys, dir, RepairOptions{}); err != nil {
		t.Fatal(err)
	}
	// Find the aborts the way the checker does, then write a correct
	// txnindex and check it is accepted, then break it.
	data := vfstest.ReadFile(t, fsys, filepath.Join(dir, layout.FileName(0, ".log")))
	var aborts []abortRef
	open := map[int64]int64{}
	sc := NewScanner(bytes.NewReader(data), int64(len(data)), 0)
	for {
		e, ok, err := sc.Next()
		if err != nil || !ok {
			break
		}
		b := e.Batch
		if !b.IsTransactional() {
			continue
		}
		if !b.IsControl() {
			if _, ok := open[b.ProducerID()]; !ok {
				open[b.ProducerID()] = b.BaseOffset()
			}
			continue
		}
		for rec, err := range b.Records() {
			if err != nil {
				t.Fatal(err)
			}
			if rec.Key[3] == 0 { // ABORT
				aborts = append(aborts, abortRef{pid: b.ProducerID(), first: open[b.ProducerID()], last: b.BaseOffset()})
			}
		}
		delete(open, b.ProducerID())
	}
	if len(aborts) == 0 {
		t.Fatal("the zstd corpus has no ABORT markers")
	}
	var idx []byte
	for _, a := range aborts {
		idx = append(idx, 0, 0)
		idx = be64(idx, a.pid)
		idx = be64(idx, a.first)
		idx = be64(idx, a.last)
		idx = be64(idx, a.first)
	}
	name := layout.FileName(0, ".txnindex")
	vfstest.WriteFile(t, fsys, filepath.Join(dir, name), idx)
	if r := mustCheck(t, fsys, dir, Options{}); !r.Clean() {
		t.Fatalf("correct txnindex rejected:%s", dumpProblems(r))
	}
	// Drop the last entry: its ABORT marker has no entry.
	vfstest.WriteFile(t, fsys, filepath.Join(dir, name), idx[:len(idx)-34])
	if r := mustCheck(t, fsys, dir, Options{}); !hasProblem(r, name, int64(len(idx)-34), KindTxnIndex) {
		t.Fatalf("missing entry not found:%s", dumpProblems(r))
	}
	// Point the first entry at a commit or data offset.
	bad := bytes.Clone(idx)
	bad[25]++
	vfstest.WriteFile(t, fsys, filepath.Join(dir, name), bad)
	if r := mustCheck(t, fsys, dir, Options{}); !hasProblem(r, name, 0, KindTxnIndex) {
		t.Fatalf("wrong entry not found:%s", dumpProblems(r))
	}
}

func be64(b []byte, v int64) []byte {
	return append(b, byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32), byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
}

// TestKafkaParentCheckpoints checks that a partition directory's line in
// its log.dir's recovery-point checkpoint is checked: beyond the end of the
// log it says synced data is missing, and repair leaves it (and every
// other partition's line) as it is, the evidence.
func TestKafkaParentCheckpoints(t *testing.T) {
	fsys := vfs.NewMem()
	dir := kafkaDir(t, fsys, "none")
	cp := "/kafka-logs/recovery-point-offset-checkpoint"
	const contents = "0\n2\nother 3 77\nevents 0 99999\n"
	vfstest.WriteFile(t, fsys, cp, []byte(contents))
	r := mustCheck(t, fsys, dir, Options{})
	if r.Layout != "kafka" {
		t.Errorf("layout %q, want kafka", r.Layout)
	}
	end := r.Stats.LastOffset + 1
	if !hasProblem(r, "../recovery-point-offset-checkpoint", int64(len("0\n2\nother 3 77\n")), KindMissingData) ||
		!strings.Contains(dumpProblems(r), fmt.Sprintf("data missing: offsets %d–99998", end)) {
		t.Fatalf("recovery point beyond the end not reported as missing data:%s", dumpProblems(r))
	}
	rr, err := Repair(fsys, dir, RepairOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rr.ExitCode() != ExitUncorrected {
		t.Fatalf("exit %d, want %d:%s", rr.ExitCode(), ExitUncorrected, dumpProblems(rr))
	}
	if got := string(vfstest.ReadFile(t, fsys, cp)); got != contents {
		t.Fatalf("checkpoint after repair %q, want it unchanged", got)
	}
	if after := mustCheck(t, fsys, dir, Options{}); !hasProblem(after, "../recovery-point-offset-checkpoint", int64(len("0\n2\nother 3 77\n")), KindMissingData) {
		t.Fatalf("the missing data is no longer reported after repair:%s", dumpProblems(after))
	}
}
