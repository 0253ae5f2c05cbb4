package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
)

func initProducer(t *testing.T, c *rawConn) int64 {
	t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.SetVersion(4)
	req.ProducerID, req.ProducerEpoch = -1, -1
	resp := c.do(req).(*kmsg.InitProducerIDResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("init producer id: error %d", resp.ErrorCode)
	}
	return resp.ProducerID
}

func logEnd(t *testing.T, ts *testServer, topic string) int64 {
	t.Helper()
	l, err := ts.st.Log(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	return l.EndOffset()
}

// TestClusterIdempotenceAcrossEpochs: a node that led, lost the lead and
// regained it holds batches another leader wrote meanwhile; a retry of
// one of them is a duplicate, not stored again.
func TestClusterIdempotenceAcrossEpochs(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "i", 1)
	c := dialRaw(t, ts.addr)
	pid := initProducer(t, c)
	if rp := produceOne(t, c, 9, "i", makeBatch(t, record.None, pid, 0, 0, 2, "a")); rp.ErrorCode != 0 || rp.BaseOffset != 0 {
		t.Fatalf("first batch: %+v", rp)
	}
	fc.setLeader("i", 0, false)
	// The next batch went to the other leader, which replicated it here;
	// its answer was lost, and the producer retries it with us.
	next := makeBatch(t, record.None, pid, 0, 2, 2, "b")
	fc.replicate("i", 0, next)
	if rp := produceOne(t, c, 9, "i", append([]byte(nil), next...)); rp.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("retry to a follower: error %d", rp.ErrorCode)
	}
	fc.setLeader("i", 0, true)
	if rp := produceOne(t, c, 9, "i", append([]byte(nil), next...)); rp.ErrorCode != 0 || rp.BaseOffset != 2 {
		t.Fatalf("retry to the leader again: %+v, want the original offset 2", rp)
	}
	if end := logEnd(t, ts, "i"); end != 4 {
		t.Fatalf("log end %d, want 4: the retry was stored again", end)
	}
	// And the producer goes on in sequence.
	if rp := produceOne(t, c, 9, "i", makeBatch(t, record.None, pid, 0, 4, 1, "c")); rp.ErrorCode != 0 || rp.BaseOffset != 4 {
		t.Fatalf("next batch: %+v", rp)
	}
}

// TestClusterIdempotenceInFlight: a retry of a batch the replicas have
// not confirmed yet waits for it and answers its offset; the batch is
// proposed once.
func TestClusterIdempotenceInFlight(t *testing.T) {
	ts, fc := startCluster(t, Options{})
	createTestTopic(t, ts.st, "i", 1)
	c1, c2 := dialRaw(t, ts.addr), dialRaw(t, ts.addr)
	pid := initProducer(t, c1)
	b := makeBatch(t, record.None, pid, 0, 0, 3, "a")
	gate := make(chan struct{})
	fc.set(func(fc *fakeCluster) { fc.gate = gate })
	first := c1.send(produceReq(9, -1, "i", 0, append([]byte(nil), b...)))
	testutil.WaitBlocked(t, "the first attempt waits for the replicas", "(*fakeCluster).Produce(", 1)
	retry := c2.send(produceReq(9, -1, "i", 0, append([]byte(nil), b...)))
	testutil.WaitBlocked(t, "the retry waits for the first attempt", "(*partProducers).lockProducer(", 1)
	close(gate)
	for i, got := range []kmsg.ProduceResponseTopicPartition{
		c1.recv(produceReq(9, -1, "i", 0, nil), first).(*kmsg.ProduceResponse).Topics[0].Partitions[0],
		c2.recv(produceReq(9, -1, "i", 0, nil), retry).(*kmsg.ProduceResponse).Topics[0].Partitions[0],
	} {
		if got.ErrorCode != 0 || got.BaseOffset != 0 {
			t.Fatalf("answer %d: %+v, want offset 0", i, got)
		}
	}
	fc.mu.Lock()
	produced := fc.produced
	fc.mu.Unlock()
	if end := logEnd(t, ts, "i"); end != 3 || produced != 1 {
		t.Fatalf("log end %d after %d proposals, want 3 after 1", end, produced)
	}

	// A batch whose replication outlived its request: the retry finds
	// it in the log.
	gate = make(chan struct{})
	fc.set(func(fc *fakeCluster) { fc.gate = gate })
	next := makeBatch(t, record.None, pid, 0, 3, 2, "b")
	req := produceReq(9, -1, "i", 0, append([]byte(nil), next...))
	req.TimeoutMillis = 50
	if rp := c1.do(req).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; rp.ErrorCode != kerr.RequestTimedOut.Code {
		t.Fatalf("unconfirmed write: error %d", rp.ErrorCode)
	}
	// The batch is in the leader's log but not committed: the retry is
	// a duplicate, and acks=all answers it only once the high watermark
	// passes it (answered before, it could be lost with the leader).
	fc.holdHW("i", 0, 3)
	fc.set(func(fc *fakeCluster) { fc.gate = nil })
	retryReq := produceReq(9, -1, "i", 0, append([]byte(nil), next...))
	retried := c1.send(retryReq)
	testutil.WaitBlocked(t, "the duplicate waits for the high watermark", "(*Server).awaitCommitted(", 1)
	fc.holdHW("i", 0, -1)
	if rp := c1.recv(retryReq, retried).(*kmsg.ProduceResponse).Topics[0].Partitions[0]; rp.ErrorCode != 0 || rp.BaseOffset != 3 {
		t.Fatalf("retry after a timeout: %+v, want the original offset 3", rp)
	}
	if end := logEnd(t, ts, "i"); end != 5 {
		t.Fatalf("log end %d, want 5: the retry was stored again", end)
	}
}
