package server

import (
	"context"
	"errors"

	"github.com/seglog/seglog/server/acl"
)

// The fake cluster keeps no ACLs: ACLs in a cluster are tested on a real
// one (internal/cluster/acls_test.go).

func (f *fakeCluster) ACLs() []acl.ACL { return nil }

func (f *fakeCluster) CreateACLs(context.Context, []acl.ACL) error {
	return errors.New("fakeCluster: no ACLs")
}

func (f *fakeCluster) DeleteACLs(context.Context, []acl.Filter) ([][]acl.ACL, error) {
	return nil, errors.New("fakeCluster: no ACLs")
}
