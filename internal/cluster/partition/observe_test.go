package partition

import (
	"bytes"
	"sync"
	"testing"

	"github.com/seglog/seglog/record"
)

// recorder is a server.LogObserver keeping what it was told, per partition.
type recorder struct {
	mu        sync.Mutex
	appended  map[int32][][]byte
	truncated map[int32][]int64
}

func (r *recorder) Appended(_ string, p int32, batches [][]byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range batches {
		r.appended[p] = append(r.appended[p], bytes.Clone(b))
	}
}

func (r *recorder) Truncating(_ string, p int32, offset int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.truncated[p] = append(r.truncated[p], offset)
}

func (r *recorder) TopicDeleted(string) {}

// TestObserverSeesEveryReplica: every replica, followers as the leader,
// reports each batch it stores, as stored (stamped with its offset), in
// log order, and nothing it did not store.
func TestObserverSeesEveryReplica(t *testing.T) {
	c := newCluster(t)
	c.waitLeader(0)
	recs := map[int32]*recorder{}
	ends := map[int32]int64{}
	for id, n := range c.nodes {
		recs[id] = &recorder{appended: map[int32][][]byte{}, truncated: map[int32][]int64{}}
		n.m.SetObserver(recs[id])
		ends[id] = n.view(t, 0).EndOffset()
	}
	for i := range 20 {
		c.produce(0, i)
	}
	c.agree(0)
	for id, n := range c.nodes {
		var want [][]byte
		for _, b := range n.batches(t, 0) {
			if record.Batch(b).BaseOffset() >= ends[id] {
				want = append(want, b)
			}
		}
		r := recs[id]
		r.mu.Lock()
		got, cuts := r.appended[0], r.truncated[0]
		r.mu.Unlock()
		// A batch may have been reported before the test read the end.
		for len(got) > 0 && record.Batch(got[0]).BaseOffset() < ends[id] {
			got = got[1:]
		}
		if len(cuts) != 0 {
			t.Fatalf("node %d: truncations %v reported, none happened", id, cuts)
		}
		if len(got) != len(want) {
			t.Fatalf("node %d: %d batches reported, its log holds %d", id, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("node %d: report %d differs from the stored batch at offset %d", id, i, record.Batch(want[i]).BaseOffset())
			}
		}
	}
}
