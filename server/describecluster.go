package server

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/server/acl"
)

// describeCluster answers as Metadata does about the cluster: this one
// broker, also the controller. v1's endpoint type 2 (controllers) is what
// a Kafka broker refuses with UNSUPPORTED_ENDPOINT_TYPE (KIP-919: only a
// controller lists controllers). KIP-430's cluster authorized operations
// are answered when asked for (ctx carries the request's authorizer).
func (s *Server) describeCluster(ctx context.Context, req *kmsg.DescribeClusterRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = authorizerFrom(ctx).operations(kmsg.ACLResourceTypeCluster, acl.ClusterName)
	}
	if req.Version >= 1 {
		resp.EndpointType = req.EndpointType
		switch req.EndpointType {
		case 1:
		case 2:
			resp.ErrorCode = kerr.UnsupportedEndpointType.Code
			resp.ErrorMessage = kmsg.StringPtr("this is a broker: it lists brokers (endpoint type 1), not controllers")
			return resp
		default:
			resp.ErrorCode = kerr.InvalidRequest.Code
			resp.ErrorMessage = kmsg.StringPtr("endpoint type must be 1 (brokers) or 2 (controllers)")
			return resp
		}
	}
	resp.ClusterID = s.cfg.ClusterID
	if s.cluster != nil {
		s.clusterDescribeCluster(resp)
		return resp
	}
	resp.ControllerID = s.cfg.NodeID
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{{NodeID: s.cfg.NodeID, Host: s.host, Port: s.port}}
	return resp
}
