package server

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/server/acl"
)

// CreateAcls, DescribeAcls and DeleteAcls (KIP-140), as kafka-acls.sh and
// kadm use them. The ACLs are a single node's ACLFile, or a cluster's
// replicated metadata (Cluster.CreateACLs); with SASL off there is no
// authorizer, and Kafka without one answers SECURITY_DISABLED.

// aclBackend is where the ACLs live: an aclStore or the Cluster.
type aclBackend interface {
	ACLs() []acl.ACL
	CreateACLs(ctx context.Context, acls []acl.ACL) error
	DeleteACLs(ctx context.Context, filters []acl.Filter) ([][]acl.ACL, error)
}

// aclErr is the code and message an ACL request's entry fails with.
func aclErr(err error) (int16, *string) {
	msg := err.Error()
	if errors.Is(err, acl.ErrInvalid) {
		return kerr.InvalidRequest.Code, &msg
	}
	if code := errCode(err); code != 0 && code != kerr.UnknownServerError.Code {
		return code, &msg
	}
	return kerr.UnknownServerError.Code, &msg
}

var securityDisabled = "no authorizer: ACLs need SASL (--sasl-mechanisms)"

func (s *Server) createACLs(ctx context.Context, r *kmsg.CreateACLsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.SetVersion(r.Version)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(r.Creations))
	if s.acls == nil {
		for i := range resp.Results {
			resp.Results[i] = kmsg.CreateACLsResponseResult{ErrorCode: kerr.SecurityDisabled.Code, ErrorMessage: &securityDisabled}
		}
		return resp
	}
	var add []acl.ACL
	var at []int
	for i, c := range r.Creations {
		a := acl.ACL{ResourceType: c.ResourceType, Name: c.ResourceName, Pattern: c.ResourcePatternType,
			Principal: c.Principal, Host: c.Host, Operation: c.Operation, Permission: c.PermissionType}
		if err := acl.Validate(a); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = aclErr(err)
			continue
		}
		add = append(add, a)
		at = append(at, i)
	}
	if len(add) == 0 {
		return resp
	}
	if err := s.acls.CreateACLs(ctx, add); err != nil {
		s.logger.Error("server: creating ACLs", "err", err)
		for _, i := range at {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = aclErr(err)
		}
	}
	return resp
}

func describeFilter(r *kmsg.DescribeACLsRequest) acl.Filter {
	return acl.Filter{ResourceType: r.ResourceType, Name: r.ResourceName, Pattern: r.ResourcePatternType,
		Principal: r.Principal, Host: r.Host, Operation: r.Operation, Permission: r.PermissionType}
}

func (s *Server) describeACLs(r *kmsg.DescribeACLsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.SetVersion(r.Version)
	if s.acls == nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, &securityDisabled
		return resp
	}
	f := describeFilter(r)
	if err := acl.ValidateFilter(f); err != nil {
		resp.ErrorCode, resp.ErrorMessage = aclErr(err)
		return resp
	}
	// The list is sorted by resource first, so one resource's entries
	// are adjacent.
	for _, a := range s.acls.ACLs() {
		if !f.Matches(a) {
			continue
		}
		n := len(resp.Resources)
		if n == 0 || resp.Resources[n-1].ResourceType != a.ResourceType || resp.Resources[n-1].ResourceName != a.Name ||
			resp.Resources[n-1].ResourcePatternType != a.Pattern {
			resp.Resources = append(resp.Resources, kmsg.DescribeACLsResponseResource{
				ResourceType: a.ResourceType, ResourceName: a.Name, ResourcePatternType: a.Pattern})
			n++
		}
		resp.Resources[n-1].ACLs = append(resp.Resources[n-1].ACLs, kmsg.DescribeACLsResponseResourceACL{
			Principal: a.Principal, Host: a.Host, Operation: a.Operation, PermissionType: a.Permission})
	}
	return resp
}

func (s *Server) deleteACLs(ctx context.Context, r *kmsg.DeleteACLsRequest) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.SetVersion(r.Version)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(r.Filters))
	if s.acls == nil {
		for i := range resp.Results {
			resp.Results[i] = kmsg.DeleteACLsResponseResult{ErrorCode: kerr.SecurityDisabled.Code, ErrorMessage: &securityDisabled}
		}
		return resp
	}
	var filters []acl.Filter
	var at []int
	for i, x := range r.Filters {
		f := acl.Filter{ResourceType: x.ResourceType, Name: x.ResourceName, Pattern: x.ResourcePatternType,
			Principal: x.Principal, Host: x.Host, Operation: x.Operation, Permission: x.PermissionType}
		if err := acl.ValidateFilter(f); err != nil {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = aclErr(err)
			continue
		}
		filters = append(filters, f)
		at = append(at, i)
	}
	if len(filters) == 0 {
		return resp
	}
	deleted, err := s.acls.DeleteACLs(ctx, filters)
	if err != nil {
		s.logger.Error("server: deleting ACLs", "err", err)
		for _, i := range at {
			resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = aclErr(err)
		}
		return resp
	}
	for j, i := range at {
		for _, a := range deleted[j] {
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, kmsg.DeleteACLsResponseResultMatchingACL{
				ResourceType: a.ResourceType, ResourceName: a.Name, ResourcePatternType: a.Pattern,
				Principal: a.Principal, Host: a.Host, Operation: a.Operation, PermissionType: a.Permission})
		}
	}
	return resp
}
