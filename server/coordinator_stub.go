package server

// This file is a placeholder for the classic consumer-group coordinator,
// which the groups branch builds in server/coordinator*.go and which
// replaces this file at merge. It keeps the contract so the server compiles
// and runs without groups: handle answers nothing and apiKeys advertises
// nothing.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

type coordinatorConfig struct {
	NodeID int32
	Host   string
	Port   int32
}

type coordinator struct{}

func newCoordinator(st *store.Store, cfg coordinatorConfig) *coordinator { return &coordinator{} }

// handle answers FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit, OffsetFetch,
// ListGroups, DescribeGroups, DeleteGroups, OffsetDelete; ok is false for any other key. It may block
// (JoinGroup waits for the rebalance) until ctx ends. The response's version is set by handle.
func (c *coordinator) handle(ctx context.Context, req kmsg.Request) (resp kmsg.Response, ok bool) {
	return nil, false
}

// apiKeys lists the keys and version ranges handle answers, for ApiVersions.
func (c *coordinator) apiKeys() []kmsg.ApiVersionsResponseApiKey { return nil }

func (c *coordinator) close() {}
