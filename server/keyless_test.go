package server

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// batchOfKeys builds one gzip batch with a record per key (nil: no key).
func batchOfKeys(t *testing.T, keys ...[]byte) []byte {
	t.Helper()
	b := record.NewBuilder(record.Gzip)
	b.SetBaseTimestamp(time.Now().UnixMilli())
	b.SetPartitionLeaderEpoch(-1)
	b.SetProducer(-1, -1, -1)
	for i, k := range keys {
		if err := b.AddRecord(int32(i), int64(i), k, []byte("v"), nil); err != nil {
			t.Fatal(err)
		}
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(out)
}

// keylessCases produces to topic (created with cleanup.policy policy) and
// checks Kafka's rule: on a topic that compacts, a batch holding a
// record without a key is refused whole (INVALID_RECORD) and nothing is
// stored; an empty key is a key; a topic that only deletes takes both.
func keylessCases(t *testing.T, ts *testServer, c *rawConn, topic, policy string) {
	t.Helper()
	refuse := policy != "delete"
	end := logEnd(t, ts, topic)
	rp := produceOne(t, c, 9, topic, batchOfKeys(t, []byte("a"), nil, []byte("b")))
	switch {
	case refuse && rp.ErrorCode != kerr.InvalidRecord.Code:
		t.Fatalf("%s: a batch with a keyless record: error %d, want INVALID_RECORD", policy, rp.ErrorCode)
	case refuse && logEnd(t, ts, topic) != end:
		t.Fatalf("%s: the refused batch moved the log end from %d", policy, end)
	case !refuse && rp.ErrorCode != 0:
		t.Fatalf("%s: keyless record: error %d", policy, rp.ErrorCode)
	}
	if rp := produceOne(t, c, 9, topic, batchOfKeys(t, []byte("a"), []byte{})); rp.ErrorCode != 0 {
		t.Fatalf("%s: keyed records (one key empty): error %d", policy, rp.ErrorCode)
	}
}

func TestCompactedTopicRefusesKeylessRecords(t *testing.T) {
	for _, policy := range []string{"compact", "compact,delete", "delete"} {
		t.Run(policy, func(t *testing.T) {
			ts := startServer(t, t.TempDir(), Options{})
			c := dialRaw(t, ts.addr)
			createTopic(t, c, "k", map[string]string{"cleanup.policy": policy})
			keylessCases(t, ts, c, "k", policy)
		})
	}
}

// TestClusterCompactedTopicRefusesKeylessRecords: the same on a cluster's
// leader, before anything is proposed.
func TestClusterCompactedTopicRefusesKeylessRecords(t *testing.T) {
	ts, _ := startCluster(t, Options{})
	cfg := store.DefaultTopicConfig()
	if err := cfg.Set("cleanup.policy", "compact"); err != nil {
		t.Fatal(err)
	}
	if err := ts.st.CreateTopic("k", 1, cfg); err != nil {
		t.Fatal(err)
	}
	keylessCases(t, ts, dialRaw(t, ts.addr), "k", "compact")
}
