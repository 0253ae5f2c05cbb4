package server

import (
	"context"
	"errors"
)

// The fake cluster keeps no ACLs: ACLs in a cluster are tested on a real
// one (internal/cluster/acls_test.go).

func (f *fakeCluster) ACLs() []ACL { return nil }

func (f *fakeCluster) CreateACLs(context.Context, []ACL) error {
	return errors.New("fakeCluster: no ACLs")
}

func (f *fakeCluster) DeleteACLs(context.Context, []ACLFilter) ([][]ACL, error) {
	return nil, errors.New("fakeCluster: no ACLs")
}
