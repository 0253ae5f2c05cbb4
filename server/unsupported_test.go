package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// A key the server does not serve, or a version outside its range, gets
// UNSUPPORTED_VERSION in that API's own response (top-level and in every
// entry named by the request), and the connection goes on serving. kgo's
// Client.Request never sends a key the broker did not advertise, so the
// requests go through a raw connection at exact versions.
func TestUnservedKeysAndVersions(t *testing.T) {
	ts := startServer(t, "", Options{})
	if err := ts.st.CreateTopic("u", 1, store.DefaultTopicConfig()); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, ts.addr)
	unsupported := kerr.UnsupportedVersion.Code

	lr := kmsg.NewPtrListPartitionReassignmentsRequest() // key 46, not served
	lr.SetVersion(0)
	if r := c.do(lr).(*kmsg.ListPartitionReassignmentsResponse); r.ErrorCode != unsupported || r.ErrorMessage == nil {
		t.Errorf("ListPartitionReassignments v0: error %d, message %v", r.ErrorCode, r.ErrorMessage)
	}

	reassign := kmsg.NewPtrAlterPartitionAssignmentsRequest() // key 45, not served
	reassign.SetVersion(0)
	rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
	rt.Topic = "u"
	rt.Partitions = []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0}}
	reassign.Topics = append(reassign.Topics, rt)
	r45 := c.do(reassign).(*kmsg.AlterPartitionAssignmentsResponse)
	if r45.ErrorCode != unsupported || len(r45.Topics) != 1 || r45.Topics[0].Topic != "u" ||
		len(r45.Topics[0].Partitions) != 1 || r45.Topics[0].Partitions[0].ErrorCode != unsupported {
		t.Errorf("AlterPartitionReassignments v0: %+v", r45)
	}

	prod := kmsg.NewPtrDescribeProducersRequest() // key 61 v0, not served
	prod.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: "u", Partitions: []int32{0}}}
	if r := c.do(prod).(*kmsg.DescribeProducersResponse); len(r.Topics) != 1 || r.Topics[0].Topic != "u" {
		t.Errorf("DescribeProducers v0: %+v", r)
	}

	// A served key below its range: Fetch v3 (served from v4).
	f := fetchReq(3, 0, "u", map[int32]int64{0: 0})
	fr := c.do(f).(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || fr.Topics[0].Topic != "u" || len(fr.Topics[0].Partitions) != 1 ||
		fr.Topics[0].Partitions[0].ErrorCode != unsupported {
		t.Errorf("Fetch v3: %+v", fr)
	}

	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("u")}}
	if r := c.do(md).(*kmsg.MetadataResponse); len(r.Topics) != 1 || r.Topics[0].ErrorCode != 0 {
		t.Errorf("metadata after the unserved requests: %+v", r.Topics)
	}
}
