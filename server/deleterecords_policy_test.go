package server

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/store"
)

// TestDeleteRecordsCompactOnly: a single node refuses DeleteRecords on a
// topic whose cleanup.policy is compact alone with POLICY_VIOLATION, as
// Kafka does (and as a cluster does), moving nothing; compact,delete is
// accepted.
func TestDeleteRecordsCompactOnly(t *testing.T) {
	ts := startServer(t, "", Options{})
	c := dialRaw(t, ts.addr)
	for topic, policy := range map[string]string{"compacted": "compact", "both": "compact,delete"} {
		cfg := store.DefaultTopicConfig()
		if err := cfg.Set("cleanup.policy", policy); err != nil {
			t.Fatal(err)
		}
		if err := ts.st.CreateTopic(topic, 1, cfg); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if rp := produceOne(t, c, 9, topic, makeBatch(t, record.None, -1, 0, 0, 10, fmt.Sprint(i))); rp.ErrorCode != 0 {
				t.Fatalf("%s: produce %d: error %d", policy, i, rp.ErrorCode)
			}
		}
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.SetVersion(2)
		req.Topics = []kmsg.DeleteRecordsRequestTopic{{Topic: topic, Partitions: []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 15}}}}
		got := c.do(req).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
		l, err := ts.st.Log(topic, 0)
		if err != nil {
			t.Fatal(err)
		}
		switch policy {
		case "compact":
			if got.ErrorCode != kerr.PolicyViolation.Code || got.LowWatermark != -1 || l.StartOffset() != 0 {
				t.Fatalf("%s: %+v, the log starts at %d; want POLICY_VIOLATION and nothing moved", policy, got, l.StartOffset())
			}
		default:
			if got.ErrorCode != 0 || got.LowWatermark != 15 || l.StartOffset() != 15 {
				t.Fatalf("%s: %+v, the log starts at %d; want the start at 15", policy, got, l.StartOffset())
			}
		}
	}
}
