package server

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupMemberClientInfo: the server hands the request header's client
// id and the connection's address to the coordinator, so member ids start
// with the client id and DescribeGroups shows both, as Kafka's do.
func TestGroupMemberClientInfo(t *testing.T) {
	ts := startServer(t, "", Options{GroupInitialRebalanceDelay: -1})
	c := dialRaw(t, ts.addr)

	join := kmsg.NewPtrJoinGroupRequest()
	join.SetVersion(3) // before KIP-394's member-id round trip
	join.Group = "g"
	join.SessionTimeoutMillis = 10_000
	join.RebalanceTimeoutMillis = 10_000
	join.ProtocolType = "consumer"
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0}}}
	jr := c.do(join).(*kmsg.JoinGroupResponse)
	if jr.ErrorCode != 0 {
		t.Fatalf("JoinGroup error %d", jr.ErrorCode)
	}
	if !strings.HasPrefix(jr.MemberID, "test-") {
		t.Errorf("member id %q does not start with the client id", jr.MemberID)
	}

	desc := kmsg.NewPtrDescribeGroupsRequest()
	desc.SetVersion(3)
	desc.Groups = []string{"g"}
	dr := c.do(desc).(*kmsg.DescribeGroupsResponse)
	if len(dr.Groups) != 1 || len(dr.Groups[0].Members) != 1 {
		t.Fatalf("DescribeGroups: %+v", dr.Groups)
	}
	m := dr.Groups[0].Members[0]
	if m.ClientID != "test" || m.ClientHost != "/127.0.0.1" {
		t.Errorf("member client id %q, host %q; want \"test\", \"/127.0.0.1\"", m.ClientID, m.ClientHost)
	}
}
