package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog"
	clusterreplica "github.com/seglog/seglog/internal/cluster/replica"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// raftLog writes a partition directory t-0 as a cluster replica keeps
// it: each entry of batches is a producer batch of its comma-separated
// values, or one of raft's own entries if it starts with "raft", stored
// as the replica store stores them (a control batch of one record of
// clusterreplica.ControlType, the entry as its value), each under leader
// epoch 1 + its index / 2. It returns the directory and the offset after the last batch.
func raftLog(t *testing.T, batches ...string) (string, int64) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "t-0")
	l, err := seglog.Open(dir, seglog.Options{LogConfig: seglog.LogConfig{SegmentBytes: 200}})
	if err != nil {
		t.Fatal(err)
	}
	bld := record.NewBuilder(record.None)
	for i, entry := range batches {
		bld.Reset()
		isRaft := strings.HasPrefix(entry, "raft")
		bld.SetControl(isRaft) // a setting Reset keeps
		ts := 1_700_000_000_000 + int64(i)
		if isRaft {
			err = bld.Add(record.Record{Timestamp: ts, Key: record.AppendControlKey(nil, clusterreplica.ControlType), Value: []byte(entry)})
		} else {
			for j, v := range strings.Split(entry, ",") {
				if err = bld.Add(record.Record{Offset: int64(j), Timestamp: ts, Key: []byte(v), Value: []byte(v)}); err != nil {
					break
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := bld.Build()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendEpochBatch(int32(1+i/2), b); err != nil {
			t.Fatal(err)
		}
	}
	end := l.EndOffset()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, end
}

// dirFetch serves Fetch answers from a partition directory, as a broker
// does: whole batches from the one holding the offset asked, at most
// perAnswer of them, then the first bytes of the next (a broker may cut
// the last batch of an answer short). failFirst answers start with that
// many NOT_LEADER_OR_FOLLOWER errors.
func dirFetch(t *testing.T, dir string, perAnswer int, failFirst int) fetchFunc {
	var stored []record.Batch
	for e, err := range batches(vfs.Default, dir, math.MaxInt64) {
		if err != nil || e.Damaged() {
			t.Fatalf("reading %s: %v %v", dir, err, e.Err)
		}
		stored = append(stored, slices.Clone(e.Batch))
	}
	return func(ctx context.Context, offset int64) (*kmsg.FetchResponseTopicPartition, error) {
		rp := kmsg.NewFetchResponseTopicPartition()
		if failFirst > 0 {
			failFirst--
			rp.ErrorCode = kerr.NotLeaderForPartition.Code
			return &rp, nil
		}
		n := 0
		for _, b := range stored {
			switch {
			case b.LastOffset() < offset:
			case n < perAnswer:
				rp.RecordBatches = append(rp.RecordBatches, b...)
				n++
			case n == perAnswer:
				rp.RecordBatches = append(rp.RecordBatches, b[:len(b)/2]...)
				n++
			}
		}
		return &rp, nil
	}
}

// values lists records as value@offset.
func values(recs []Record) string {
	var s []string
	for _, r := range recs {
		s = append(s, fmt.Sprintf("%s@%d", r.Value, r.Offset))
	}
	return strings.Join(s, " ")
}

// TestReadPartitionEndsWithControlBatch: the final read of a partition
// whose log ends with raft's own entry (a control batch: no record at
// end-1 for a consumer) reaches the end, skipping control batches
// wherever they are, across answers that stop inside a batch and
// answers that are errors.
func TestReadPartitionEndsWithControlBatch(t *testing.T) {
	dir, end := raftLog(t, "raft", "a,b", "c", "raft", "d,e,f", "raft", "raft")
	if end != 10 {
		t.Fatalf("the hand-built log ends at %d, want 10", end)
	}
	const want = "a@1 b@2 c@3 d@5 e@6 f@7"
	for _, perAnswer := range []int{1, 2, 100} {
		t.Run(fmt.Sprint(perAnswer, " batches an answer"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			got, err := readPartition(ctx, dirFetch(t, dir, perAnswer, 2), p0, end)
			if err != nil {
				t.Fatal(err)
			}
			if values(got) != want {
				t.Fatalf("read %s, want %s", values(got), want)
			}
		})
	}
	// Up to an end inside the log: the read stops there (the records of
	// the last batch fetched beyond it are kept: the checker sees them).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := readPartition(ctx, dirFetch(t, dir, 1, 0), p0, 4)
	if err != nil || values(got) != "a@1 b@2 c@3" {
		t.Fatalf("read to 4: %s, %v", values(got), err)
	}
	// An empty partition is read at once.
	got, err = readPartition(ctx, func(context.Context, int64) (*kmsg.FetchResponseTopicPartition, error) {
		t.Fatal("fetched an empty partition")
		return nil, nil
	}, p0, 0)
	if err != nil || len(got) != 0 {
		t.Fatalf("read of an empty partition: %v, %v", got, err)
	}
}

// TestReadPartitionShort: a partition that never reaches its end offset
// (the log ends short of it, or every answer is an error) is an error
// naming the partition, where the read stopped and the last error; a
// batch that does not decode is an error at once, naming its offset.
func TestReadPartitionShort(t *testing.T) {
	dir, end := raftLog(t, "a,b", "raft", "c")
	for _, c := range []struct {
		name  string
		fetch fetchFunc
		want  string
	}{
		{"log short of the end", dirFetch(t, dir, 1, 0), fmt.Sprintf("t-0 read up to offset %d of %d (last error: <nil>)", end, end+2)},
		{"errors only", dirFetch(t, dir, 1, math.MaxInt), fmt.Sprintf("t-0 read up to offset 0 of %d (last error: %v)", end+2, kerr.NotLeaderForPartition)},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The bound is the test's patience, not a timing under test.
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			_, err := readPartition(ctx, c.fetch, p0, end+2)
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}

	fetch := dirFetch(t, dir, 100, 0)
	damaged := func(ctx context.Context, off int64) (*kmsg.FetchResponseTopicPartition, error) {
		rp, err := fetch(ctx, off)
		rp.RecordBatches = slices.Clone(rp.RecordBatches)
		rp.RecordBatches[len(rp.RecordBatches)-1] ^= 0xff // the last record of the last batch, under its CRC
		return rp, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got, err := readPartition(ctx, damaged, p0, end)
	if err == nil || !strings.Contains(err.Error(), "t-0: the batch at offset 3 does not decode") {
		t.Fatalf("read of a damaged batch: %v, want an error naming offset 3", err)
	}
	if values(got) != "a@0 b@1" {
		t.Fatalf("read before the damaged batch: %s", values(got))
	}
}

// TestReadAllTransactionMarker runs ReadAll against kfake, whose
// partitions end with a transaction's commit marker (a control batch)
// after a transactional producer commits: it reads every record and
// returns end offsets past the marker.
func TestReadAllTransactionMarker(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(2, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("nemesis"), kgo.DefaultProduceTopic("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 20 {
		v := Value(0, i)
		want = append(want, v)
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}

	recs, ends, err := ReadAll(ctx, c.ListenAddrs(), "t")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	perPartition := map[int32]int64{}
	for _, r := range recs {
		got = append(got, r.Value)
		perPartition[r.Partition]++
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	for p, n := range perPartition {
		// Each partition written to ends with the marker: one offset
		// beyond its records.
		if ends[p] != n+1 {
			t.Errorf("partition %d: end offset %d, want %d records and the marker", p, ends[p], n)
		}
	}
	if len(ends) != 2 {
		t.Errorf("end offsets of %d partitions, want 2: %v", len(ends), ends)
	}
}

// TestCompareReplicasControlBatches: raft's own entries are compared
// byte for byte like the producers' batches, wherever they are, the last
// batch below the high watermark included; fsck finds a log ending with
// one clean.
func TestCompareReplicasControlBatches(t *testing.T) {
	entries := []string{"raft", "a,b", "raft", "c", "raft"}
	ref, end := raftLog(t, entries...)
	same, _ := raftLog(t, entries...)
	lastDiffers, _ := raftLog(t, "raft", "a,b", "raft", "c", "raft-other")
	vs, err := CompareReplicas(vfs.Default, []string{ref, same}, end)
	if err != nil || len(vs) != 0 {
		t.Fatalf("identical replicas: %v, %v", vs, err)
	}
	vs, err = CompareReplicas(vfs.Default, []string{ref, same, lastDiffers}, end)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 1 || !strings.Contains(vs[0].String(), fmt.Sprintf("t-0 offset %d: replica %s's batch (offsets %d-%d", end-1, lastDiffers, end-1, end-1)) {
		t.Fatalf("replicas whose last control batch differs: %v", vs)
	}
	vs, err = FsckClean(vfs.Default, []string{ref, lastDiffers})
	if err != nil || len(vs) != 0 {
		t.Fatalf("fsck of logs ending with a control batch: %v, %v", vs, err)
	}
}
