package server

import (
	"context"
	"net"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/server/acl"
)

// Authorization (docs/security.md, "ACLs"). With SASL on, every request
// but ApiVersions and SASL's own is checked against the ACLs as Kafka's
// KafkaApis does, before it is answered: the parts of a request the
// principal may not touch are taken out of it and answered with Kafka's
// authorization error, so a handler never sees them and nothing stored
// changes for them. Super users are not checked. With SASL off nothing
// is.

// authorizer decides one request: the principal and host asking, and
// the ACLs as they were when the request arrived. A nil *authorizer
// allows everything (SASL off, or a super user).
type authorizer struct {
	who  acl.Request
	acls []acl.ACL
}

// authorizer returns the request's authorizer, nil when nothing is
// checked.
func (c *conn) authorizer() *authorizer {
	if c.sasl == nil || c.s.acls == nil {
		return nil
	}
	user := c.sasl.user
	if slices.Contains(c.s.cfg.SuperUsers, user) {
		return nil
	}
	host := c.nc.RemoteAddr().String()
	if a, ok := c.nc.RemoteAddr().(*net.TCPAddr); ok {
		host = a.IP.String()
	} else if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return &authorizer{who: acl.Request{Principal: acl.UserPrefix + user, Host: host}, acls: c.s.acls.ACLs()}
}

func (a *authorizer) allowed(op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	return a == nil || acl.Allowed(a.acls, a.who, op, rt, name)
}

func (a *authorizer) topic(op kmsg.ACLOperation, name string) bool {
	return a.allowed(op, kmsg.ACLResourceTypeTopic, name)
}

func (a *authorizer) group(op kmsg.ACLOperation, name string) bool {
	return a.allowed(op, kmsg.ACLResourceTypeGroup, name)
}

func (a *authorizer) cluster(op kmsg.ACLOperation) bool {
	return a.allowed(op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

// supportedOperations are the operations Kafka's authorizer knows for
// each resource type (AclEntry.supportedOperations): KIP-430's
// authorized-operations bit field reports only these.
var supportedOperations = map[kmsg.ACLResourceType][]kmsg.ACLOperation{
	kmsg.ACLResourceTypeTopic: {kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate,
		kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs},
	kmsg.ACLResourceTypeGroup: {kmsg.ACLOperationRead, kmsg.ACLOperationDescribe, kmsg.ACLOperationDelete},
	kmsg.ACLResourceTypeCluster: {kmsg.ACLOperationCreate, kmsg.ACLOperationClusterAction,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs, kmsg.ACLOperationIdempotentWrite,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe},
}

// operations is KIP-430's authorized-operations bit field for one
// resource: bit op set for each operation the resource type supports that
// the principal may do. A nil authorizer (SASL off, a super user) may do
// them all. The one helper Metadata, DescribeCluster and DescribeGroups
// answer with, so the three cannot disagree.
func (a *authorizer) operations(rt kmsg.ACLResourceType, name string) int32 {
	var bits int32
	for _, op := range supportedOperations[rt] {
		if a.allowed(op, rt, name) {
			bits |= 1 << op
		}
	}
	return bits
}

type authorizerKey struct{}

// withAuthorizer carries a request's authorizer to a handler that needs
// more than the request (Metadata decides per topic while it answers).
func withAuthorizer(ctx context.Context, a *authorizer) context.Context {
	if a == nil {
		return ctx
	}
	return context.WithValue(ctx, authorizerKey{}, a)
}

func authorizerFrom(ctx context.Context) *authorizer {
	a, _ := ctx.Value(authorizerKey{}).(*authorizer)
	return a
}

// keep splits items into those pass allows, which it returns for the
// request to keep, and the rest, given to denied.
func keep[T any](items []T, pass func(T) bool, denied func(T)) []T {
	out := items[:0:0]
	for _, it := range items {
		if pass(it) {
			out = append(out, it)
		} else {
			denied(it)
		}
	}
	return out
}

var (
	topicDenied   = kerr.TopicAuthorizationFailed.Code
	groupDenied   = kerr.GroupAuthorizationFailed.Code
	clusterDenied = kerr.ClusterAuthorizationFailed.Code
)

// authorize checks req before it is answered. A non-nil deny is the
// whole answer (nothing of the request is allowed); otherwise req may
// have lost the parts that are denied, and merge, if not nil, adds their
// answers to the response the rest gets.
func (c *conn) authorize(req kmsg.Request, az *authorizer) (deny kmsg.Response, merge func(kmsg.Response)) {
	if az == nil {
		return nil, nil
	}
	const (
		read     = kmsg.ACLOperationRead
		write    = kmsg.ACLOperationWrite
		describe = kmsg.ACLOperationDescribe
		del      = kmsg.ACLOperationDelete
		alter    = kmsg.ACLOperationAlter
		create   = kmsg.ACLOperationCreate
	)
	switch r := req.(type) {
	case *kmsg.ProduceRequest:
		var out []kmsg.ProduceResponseTopic
		r.Topics = keep(r.Topics, func(t kmsg.ProduceRequestTopic) bool { return az.topic(write, t.Topic) },
			func(t kmsg.ProduceRequestTopic) {
				rt := kmsg.ProduceResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rp := kmsg.NewProduceResponseTopicPartition()
					rp.Partition, rp.ErrorCode, rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = p.Partition, topicDenied, -1, -1, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				out = append(out, rt)
			})
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.ProduceResponse)
			p.Topics = append(p.Topics, out...)
		}
	case *kmsg.FetchRequest:
		c.fetchDenied = nil
		r.Topics = keep(r.Topics, func(t kmsg.FetchRequestTopic) bool { return az.topic(read, t.Topic) },
			func(t kmsg.FetchRequestTopic) {
				ft := fetchTopic{name: t.Topic}
				for _, p := range t.Partitions {
					ft.parts = append(ft.parts, fetchPart{partition: p.Partition, code: topicDenied, hwm: -1, logStart: -1})
				}
				c.fetchDenied = append(c.fetchDenied, ft)
			})
		return nil, nil
	case *kmsg.ListOffsetsRequest:
		var out []kmsg.ListOffsetsResponseTopic
		r.Topics = keep(r.Topics, func(t kmsg.ListOffsetsRequestTopic) bool { return az.topic(describe, t.Topic) },
			func(t kmsg.ListOffsetsRequestTopic) {
				rt := kmsg.ListOffsetsResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rp := kmsg.NewListOffsetsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, topicDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				out = append(out, rt)
			})
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.ListOffsetsResponse)
			p.Topics = append(p.Topics, out...)
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		var out []kmsg.OffsetForLeaderEpochResponseTopic
		r.Topics = keep(r.Topics, func(t kmsg.OffsetForLeaderEpochRequestTopic) bool { return az.topic(describe, t.Topic) },
			func(t kmsg.OffsetForLeaderEpochRequestTopic) {
				rt := kmsg.OffsetForLeaderEpochResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
					rp.Partition, rp.ErrorCode, rp.LeaderEpoch, rp.EndOffset = p.Partition, topicDenied, -1, -1
					rt.Partitions = append(rt.Partitions, rp)
				}
				out = append(out, rt)
			})
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.OffsetForLeaderEpochResponse)
			p.Topics = append(p.Topics, out...)
		}
	case *kmsg.InitProducerIDRequest:
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.SetVersion(r.Version)
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		if r.TransactionalID != nil {
			if !az.allowed(write, kmsg.ACLResourceTypeTransactionalId, *r.TransactionalID) {
				resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				return resp, nil
			}
			return nil, nil
		}
		// KIP-679: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic.
		if !az.cluster(kmsg.ACLOperationIdempotentWrite) && !acl.AllowedAny(az.acls, az.who, write, kmsg.ACLResourceTypeTopic) {
			resp.ErrorCode = clusterDenied
			return resp, nil
		}
		return nil, nil
	case *kmsg.CreateTopicsRequest:
		var out []kmsg.CreateTopicsResponseTopic
		if !az.cluster(create) {
			r.Topics = keep(r.Topics, func(t kmsg.CreateTopicsRequestTopic) bool { return az.topic(create, t.Topic) },
				func(t kmsg.CreateTopicsRequestTopic) {
					rt := kmsg.NewCreateTopicsResponseTopic()
					rt.Topic, rt.ErrorCode = t.Topic, topicDenied
					rt.ConfigErrorCode = topicDenied
					out = append(out, rt)
				})
		}
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.CreateTopicsResponse)
			for i := range p.Topics {
				// A new topic's configs only to who may describe them
				// (KafkaApis.handleCreateTopicsRequest): no configs, no
				// partition count or replication factor, and why.
				if rt := &p.Topics[i]; rt.ErrorCode == 0 && !az.topic(kmsg.ACLOperationDescribeConfigs, rt.Topic) {
					rt.Configs, rt.NumPartitions, rt.ReplicationFactor = nil, -1, -1
					rt.ConfigErrorCode = topicDenied
				}
			}
			p.Topics = append(p.Topics, out...)
		}
	case *kmsg.DeleteTopicsRequest:
		return c.authorizeDeleteTopics(r, az)
	case *kmsg.DeleteRecordsRequest:
		var out []kmsg.DeleteRecordsResponseTopic
		r.Topics = keep(r.Topics, func(t kmsg.DeleteRecordsRequestTopic) bool { return az.topic(del, t.Topic) },
			func(t kmsg.DeleteRecordsRequestTopic) {
				rt := kmsg.DeleteRecordsResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.DeleteRecordsResponseTopicPartition{Partition: p.Partition, LowWatermark: -1, ErrorCode: topicDenied})
				}
				out = append(out, rt)
			})
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.DeleteRecordsResponse)
			p.Topics = append(p.Topics, out...)
		}
	case *kmsg.CreatePartitionsRequest:
		var out []kmsg.CreatePartitionsResponseTopic
		r.Topics = keep(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) bool { return az.topic(alter, t.Topic) },
			func(t kmsg.CreatePartitionsRequestTopic) {
				out = append(out, kmsg.CreatePartitionsResponseTopic{Topic: t.Topic, ErrorCode: topicDenied})
			})
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.CreatePartitionsResponse)
			p.Topics = append(p.Topics, out...)
		}
	case *kmsg.DescribeConfigsRequest, *kmsg.AlterConfigsRequest, *kmsg.IncrementalAlterConfigsRequest:
		return authorizeConfigs(req, az)
	case *kmsg.ElectLeadersRequest:
		if az.cluster(alter) {
			return nil, nil
		}
		// Kafka's answer: the error at the top (v1+) and on every
		// partition named.
		resp := r.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.ErrorCode = clusterDenied
		for _, t := range r.Topics {
			rt := kmsg.ElectLeadersResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.ElectLeadersResponseTopicPartition{Partition: p, ErrorCode: clusterDenied})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	case *kmsg.DescribeClusterRequest:
		if az.cluster(describe) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.DescribeClusterResponse)
		resp.SetVersion(r.Version)
		resp.ErrorCode = clusterDenied
		return resp, nil
	case *kmsg.DescribeLogDirsRequest:
		if az.cluster(describe) {
			return nil, nil
		}
		// Kafka answers no directories; v3+ says why.
		resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
		resp.SetVersion(r.Version)
		if r.Version >= 3 {
			resp.ErrorCode = clusterDenied
		}
		return resp, nil
	case *kmsg.DescribeUserSCRAMCredentialsRequest:
		if az.cluster(describe) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		resp.SetVersion(r.Version)
		resp.ErrorCode = clusterDenied
		return resp, nil
	case *kmsg.AlterUserSCRAMCredentialsRequest:
		if az.cluster(alter) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		resp.SetVersion(r.Version)
		seen := map[string]bool{}
		add := func(user string) {
			if !seen[user] {
				seen[user] = true
				resp.Results = append(resp.Results, kmsg.AlterUserSCRAMCredentialsResponseResult{User: user, ErrorCode: clusterDenied})
			}
		}
		for _, d := range r.Deletions {
			add(d.Name)
		}
		for _, u := range r.Upsertions {
			add(u.Name)
		}
		return resp, nil
	case *kmsg.DescribeACLsRequest:
		if az.cluster(describe) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
		resp.SetVersion(r.Version)
		resp.ErrorCode = clusterDenied
		return resp, nil
	case *kmsg.CreateACLsRequest:
		if az.cluster(alter) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
		resp.SetVersion(r.Version)
		for range r.Creations {
			resp.Results = append(resp.Results, kmsg.CreateACLsResponseResult{ErrorCode: clusterDenied})
		}
		return resp, nil
	case *kmsg.DeleteACLsRequest:
		if az.cluster(alter) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
		resp.SetVersion(r.Version)
		for range r.Filters {
			resp.Results = append(resp.Results, kmsg.DeleteACLsResponseResult{ErrorCode: clusterDenied})
		}
		return resp, nil
	}
	return authorizeGroups(req, az)
}

// authorizeDeleteTopics checks DELETE on each topic named. Kafka answers
// a topic the principal may not even describe the same way.
func (c *conn) authorizeDeleteTopics(r *kmsg.DeleteTopicsRequest, az *authorizer) (kmsg.Response, func(kmsg.Response)) {
	var out []kmsg.DeleteTopicsResponseTopic
	deniedName := func(name string) {
		out = append(out, kmsg.DeleteTopicsResponseTopic{Topic: kmsg.StringPtr(name), ErrorCode: topicDenied})
	}
	r.TopicNames = keep(r.TopicNames, func(n string) bool { return az.topic(kmsg.ACLOperationDelete, n) }, deniedName)
	r.Topics = keep(r.Topics, func(t kmsg.DeleteTopicsRequestTopic) bool {
		return t.Topic == nil || az.topic(kmsg.ACLOperationDelete, *t.Topic)
	}, func(t kmsg.DeleteTopicsRequestTopic) { deniedName(*t.Topic) })
	return nil, func(resp kmsg.Response) {
		p := resp.(*kmsg.DeleteTopicsResponse)
		p.Topics = append(p.Topics, out...)
	}
}

// authorizeConfigs checks DESCRIBE_CONFIGS or ALTER_CONFIGS on each
// resource: a topic's on the topic (TOPIC_AUTHORIZATION_FAILED), a
// broker's on the cluster (CLUSTER_AUTHORIZATION_FAILED).
func authorizeConfigs(req kmsg.Request, az *authorizer) (kmsg.Response, func(kmsg.Response)) {
	check := func(op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) int16 {
		if typ == kmsg.ConfigResourceTypeTopic {
			if az.topic(op, name) {
				return 0
			}
			return topicDenied
		}
		if az.cluster(op) {
			return 0
		}
		return clusterDenied
	}
	switch r := req.(type) {
	case *kmsg.DescribeConfigsRequest:
		var out []kmsg.DescribeConfigsResponseResource
		r.Resources = keep(r.Resources, func(x kmsg.DescribeConfigsRequestResource) bool {
			return check(kmsg.ACLOperationDescribeConfigs, x.ResourceType, x.ResourceName) == 0
		}, func(x kmsg.DescribeConfigsRequestResource) {
			out = append(out, kmsg.DescribeConfigsResponseResource{ResourceType: x.ResourceType, ResourceName: x.ResourceName,
				ErrorCode: check(kmsg.ACLOperationDescribeConfigs, x.ResourceType, x.ResourceName)})
		})
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.DescribeConfigsResponse)
			p.Resources = append(p.Resources, out...)
		}
	case *kmsg.AlterConfigsRequest:
		var out []kmsg.AlterConfigsResponseResource
		r.Resources = keep(r.Resources, func(x kmsg.AlterConfigsRequestResource) bool {
			return check(kmsg.ACLOperationAlterConfigs, x.ResourceType, x.ResourceName) == 0
		}, func(x kmsg.AlterConfigsRequestResource) {
			out = append(out, kmsg.AlterConfigsResponseResource{ResourceType: x.ResourceType, ResourceName: x.ResourceName,
				ErrorCode: check(kmsg.ACLOperationAlterConfigs, x.ResourceType, x.ResourceName)})
		})
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.AlterConfigsResponse)
			p.Resources = append(p.Resources, out...)
		}
	case *kmsg.IncrementalAlterConfigsRequest:
		var out []kmsg.IncrementalAlterConfigsResponseResource
		r.Resources = keep(r.Resources, func(x kmsg.IncrementalAlterConfigsRequestResource) bool {
			return check(kmsg.ACLOperationAlterConfigs, x.ResourceType, x.ResourceName) == 0
		}, func(x kmsg.IncrementalAlterConfigsRequestResource) {
			out = append(out, kmsg.IncrementalAlterConfigsResponseResource{ResourceType: x.ResourceType, ResourceName: x.ResourceName,
				ErrorCode: check(kmsg.ACLOperationAlterConfigs, x.ResourceType, x.ResourceName)})
		})
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.IncrementalAlterConfigsResponse)
			p.Resources = append(p.Resources, out...)
		}
	}
	return nil, nil
}

// filterMetadataTopic says whether Metadata may show a topic, and the
// error for one asked for by name and refused: DESCRIBE to see it, and,
// for one that does not exist and would be created on first use, CREATE
// on the cluster or the topic (KafkaApis.handleTopicMetadataRequest).
func (a *authorizer) metadataTopic(name string, creating bool) bool {
	if !a.topic(kmsg.ACLOperationDescribe, name) {
		return false
	}
	return !creating || a.cluster(kmsg.ACLOperationCreate) || a.topic(kmsg.ACLOperationCreate, name)
}

// mergeDenied adds the refused parts of the request being answered to
// its response, once.
func (c *conn) mergeDenied(resp kmsg.Response) {
	if c.merge != nil {
		c.merge(resp)
		c.merge = nil
	}
}
