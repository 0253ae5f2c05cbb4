package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authorizeGroups checks the group coordinator's requests as KafkaApis
// does: READ on the group to be a member or commit, DESCRIBE to find its
// coordinator, fetch its offsets or describe it, DELETE to delete it or
// its offsets; READ (commit, delete) or DESCRIBE (fetch) on each topic
// whose offsets are touched. Requests it does not know pass unchecked:
// ApiVersions and SASL's own.
func authorizeGroups(req kmsg.Request, az *authorizer) (kmsg.Response, func(kmsg.Response)) {
	const (
		read     = kmsg.ACLOperationRead
		describe = kmsg.ACLOperationDescribe
		del      = kmsg.ACLOperationDelete
	)
	switch r := req.(type) {
	case *kmsg.FindCoordinatorRequest:
		return authorizeFindCoordinator(r, az)
	case *kmsg.JoinGroupRequest:
		if az.group(read, r.Group) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.SetVersion(r.Version)
		resp.ErrorCode, resp.Generation, resp.MemberID = groupDenied, -1, r.MemberID
		return resp, nil
	case *kmsg.SyncGroupRequest:
		if az.group(read, r.Group) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.SetVersion(r.Version)
		resp.ErrorCode = groupDenied
		return resp, nil
	case *kmsg.HeartbeatRequest:
		if az.group(read, r.Group) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.SetVersion(r.Version)
		resp.ErrorCode = groupDenied
		return resp, nil
	case *kmsg.LeaveGroupRequest:
		if az.group(read, r.Group) {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.SetVersion(r.Version)
		resp.ErrorCode = groupDenied
		return resp, nil
	case *kmsg.OffsetCommitRequest:
		return authorizeOffsetCommit(r, az)
	case *kmsg.OffsetFetchRequest:
		return authorizeOffsetFetch(r, az)
	case *kmsg.DescribeGroupsRequest:
		var out []kmsg.DescribeGroupsResponseGroup
		r.Groups = keep(r.Groups, func(g string) bool { return az.group(describe, g) }, func(g string) {
			dg := kmsg.NewDescribeGroupsResponseGroup()
			dg.Group, dg.ErrorCode = g, groupDenied
			out = append(out, dg)
		})
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.DescribeGroupsResponse)
			if r.IncludeAuthorizedOperations {
				for i := range p.Groups {
					p.Groups[i].AuthorizedOperations = groupOperationsOf(az, p.Groups[i].Group)
				}
			}
			p.Groups = append(p.Groups, out...)
		}
	case *kmsg.ListGroupsRequest:
		if az.cluster(describe) {
			return nil, nil
		}
		// Without DESCRIBE on the cluster, the groups it may describe.
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.ListGroupsResponse)
			p.Groups = keep(p.Groups, func(g kmsg.ListGroupsResponseGroup) bool { return az.group(describe, g.Group) },
				func(kmsg.ListGroupsResponseGroup) {})
		}
	case *kmsg.DeleteGroupsRequest:
		var out []kmsg.DeleteGroupsResponseGroup
		r.Groups = keep(r.Groups, func(g string) bool { return az.group(del, g) }, func(g string) {
			out = append(out, kmsg.DeleteGroupsResponseGroup{Group: g, ErrorCode: groupDenied})
		})
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.DeleteGroupsResponse)
			p.Groups = append(p.Groups, out...)
		}
	case *kmsg.OffsetDeleteRequest:
		if !az.group(del, r.Group) {
			resp := r.ResponseKind().(*kmsg.OffsetDeleteResponse)
			resp.SetVersion(r.Version)
			resp.ErrorCode = groupDenied
			return resp, nil
		}
		var out []kmsg.OffsetDeleteResponseTopic
		r.Topics = keep(r.Topics, func(t kmsg.OffsetDeleteRequestTopic) bool { return az.topic(read, t.Topic) },
			func(t kmsg.OffsetDeleteRequestTopic) {
				rt := kmsg.OffsetDeleteResponseTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.OffsetDeleteResponseTopicPartition{Partition: p.Partition, ErrorCode: topicDenied})
				}
				out = append(out, rt)
			})
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.OffsetDeleteResponse)
			p.Topics = append(p.Topics, out...)
		}
	}
	return nil, nil
}

// authorizeFindCoordinator checks DESCRIBE on the group (or the
// transactional id) whose coordinator is asked for; v4+ asks for many.
func authorizeFindCoordinator(r *kmsg.FindCoordinatorRequest, az *authorizer) (kmsg.Response, func(kmsg.Response)) {
	ok := func(key string) (bool, int16) {
		if r.CoordinatorType == 1 {
			return az.allowed(kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, key), kerr.TransactionalIDAuthorizationFailed.Code
		}
		return az.group(kmsg.ACLOperationDescribe, key), groupDenied
	}
	if r.Version < 4 {
		allowed, code := ok(r.CoordinatorKey)
		if allowed {
			return nil, nil
		}
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		resp.SetVersion(r.Version)
		resp.ErrorCode, resp.NodeID, resp.Port = code, -1, -1
		return resp, nil
	}
	var out []kmsg.FindCoordinatorResponseCoordinator
	r.CoordinatorKeys = keep(r.CoordinatorKeys, func(k string) bool { allowed, _ := ok(k); return allowed }, func(k string) {
		_, code := ok(k)
		out = append(out, kmsg.FindCoordinatorResponseCoordinator{Key: k, NodeID: -1, Port: -1, ErrorCode: code})
	})
	return nil, func(resp kmsg.Response) {
		p := resp.(*kmsg.FindCoordinatorResponse)
		p.Coordinators = append(p.Coordinators, out...)
	}
}

// authorizeOffsetCommit checks READ on the group, then on each topic.
func authorizeOffsetCommit(r *kmsg.OffsetCommitRequest, az *authorizer) (kmsg.Response, func(kmsg.Response)) {
	answer := func(t kmsg.OffsetCommitRequestTopic, code int16) kmsg.OffsetCommitResponseTopic {
		rt := kmsg.OffsetCommitResponseTopic{Topic: t.Topic}
		for _, p := range t.Partitions {
			rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: code})
		}
		return rt
	}
	if !az.group(kmsg.ACLOperationRead, r.Group) {
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		resp.SetVersion(r.Version)
		for _, t := range r.Topics {
			resp.Topics = append(resp.Topics, answer(t, groupDenied))
		}
		return resp, nil
	}
	var out []kmsg.OffsetCommitResponseTopic
	r.Topics = keep(r.Topics, func(t kmsg.OffsetCommitRequestTopic) bool { return az.topic(kmsg.ACLOperationRead, t.Topic) },
		func(t kmsg.OffsetCommitRequestTopic) { out = append(out, answer(t, topicDenied)) })
	return nil, func(resp kmsg.Response) {
		p := resp.(*kmsg.OffsetCommitResponse)
		p.Topics = append(p.Topics, out...)
	}
}

// authorizeOffsetFetch checks DESCRIBE on each group, then on each topic
// asked for; a fetch of all of a group's offsets shows only the topics
// the principal may describe.
func authorizeOffsetFetch(r *kmsg.OffsetFetchRequest, az *authorizer) (kmsg.Response, func(kmsg.Response)) {
	describe := kmsg.ACLOperationDescribe
	partitions := func(ps []int32, code int16) []kmsg.OffsetFetchResponseTopicPartition {
		var out []kmsg.OffsetFetchResponseTopicPartition
		for _, p := range ps {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch, rp.ErrorCode = p, -1, -1, code
			out = append(out, rp)
		}
		return out
	}
	if r.Version < 8 {
		if !az.group(describe, r.Group) {
			resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
			resp.SetVersion(r.Version)
			resp.ErrorCode = groupDenied
			for _, t := range r.Topics {
				resp.Topics = append(resp.Topics, kmsg.OffsetFetchResponseTopic{Topic: t.Topic, Partitions: partitions(t.Partitions, groupDenied)})
			}
			return resp, nil
		}
		all := r.Topics == nil
		var out []kmsg.OffsetFetchResponseTopic
		r.Topics = keep(r.Topics, func(t kmsg.OffsetFetchRequestTopic) bool { return az.topic(describe, t.Topic) },
			func(t kmsg.OffsetFetchRequestTopic) {
				out = append(out, kmsg.OffsetFetchResponseTopic{Topic: t.Topic, Partitions: partitions(t.Partitions, topicDenied)})
			})
		if all {
			r.Topics = nil
		}
		return nil, func(resp kmsg.Response) {
			p := resp.(*kmsg.OffsetFetchResponse)
			if all {
				p.Topics = keep(p.Topics, func(t kmsg.OffsetFetchResponseTopic) bool { return az.topic(describe, t.Topic) },
					func(kmsg.OffsetFetchResponseTopic) {})
			}
			p.Topics = append(p.Topics, out...)
		}
	}
	var denied []kmsg.OffsetFetchResponseGroup
	extra := map[string][]kmsg.OffsetFetchResponseGroupTopic{}
	allTopics := map[string]bool{}
	r.Groups = keep(r.Groups, func(g kmsg.OffsetFetchRequestGroup) bool { return az.group(describe, g.Group) },
		func(g kmsg.OffsetFetchRequestGroup) {
			denied = append(denied, kmsg.OffsetFetchResponseGroup{Group: g.Group, ErrorCode: groupDenied})
		})
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Topics == nil {
			allTopics[g.Group] = true
			continue
		}
		g.Topics = keep(g.Topics, func(t kmsg.OffsetFetchRequestGroupTopic) bool { return az.topic(describe, t.Topic) },
			func(t kmsg.OffsetFetchRequestGroupTopic) {
				rt := kmsg.OffsetFetchResponseGroupTopic{Topic: t.Topic}
				for _, p := range t.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1, ErrorCode: topicDenied})
				}
				extra[g.Group] = append(extra[g.Group], rt)
			})
	}
	return nil, func(resp kmsg.Response) {
		p := resp.(*kmsg.OffsetFetchResponse)
		for i := range p.Groups {
			g := &p.Groups[i]
			if allTopics[g.Group] {
				g.Topics = keep(g.Topics, func(t kmsg.OffsetFetchResponseGroupTopic) bool { return az.topic(describe, t.Topic) },
					func(kmsg.OffsetFetchResponseGroupTopic) {})
			}
			g.Topics = append(g.Topics, extra[g.Group]...)
		}
		p.Groups = append(p.Groups, denied...)
	}
}

// groupOperationsOf is DescribeGroups' authorized-operations bit field
// for what the principal may do to a group.
func groupOperationsOf(az *authorizer, group string) int32 {
	return az.operations(kmsg.ACLResourceTypeGroup, group)
}
