package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/seglog/seglog/store"
)

// TestTopicsDescribeMatchesDescribeConfigs: `seglog topics describe`,
// beside a running seglog serve, prints every topic config with the value
// and source the server's DescribeConfigs gives, after a create with
// configs and an alter that sets, deletes and appends.
func TestTopicsDescribeMatchesDescribeConfigs(t *testing.T) {
	dir := t.TempDir()
	addr, stop := startServe(t, dir)
	defer stop()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	create := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "t", 2, 1
	for k, v := range map[string]string{"retention.ms": "1000", "segment.bytes": "2000000", "compression.type": "zstd"} {
		rt.Configs = append(rt.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: k, Value: kmsg.StringPtr(v)})
	}
	create.Topics = append(create.Topics, rt)
	if resp, err := create.RequestWith(ctx, cl); err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create: %+v %v", resp, err)
	}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ar := kmsg.NewIncrementalAlterConfigsRequestResource()
	ar.ResourceType, ar.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	ar.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{
		{Name: "compression.type", Op: kmsg.IncrementalAlterConfigOpDelete},
		{Name: "cleanup.policy", Op: kmsg.IncrementalAlterConfigOpAppend, Value: kmsg.StringPtr("compact")},
		{Name: "min.cleanable.dirty.ratio", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("0.5")},
	}
	alter.Resources = append(alter.Resources, ar)
	if resp, err := alter.RequestWith(ctx, cl); err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter: %+v %v", resp, err)
	}

	describe := kmsg.NewPtrDescribeConfigsRequest()
	dr := kmsg.NewDescribeConfigsRequestResource()
	dr.ResourceType, dr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
	describe.Resources = append(describe.Resources, dr)
	resp, err := describe.RequestWith(ctx, cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("describe configs: %+v %v", resp, err)
	}
	server := make(map[string]string)
	for _, c := range resp.Resources[0].Configs {
		server[c.Name] = *c.Value + " " + c.Source.String()
	}

	r := mustInvoke(t, "", "topics", "describe", dir, "t")
	cli := make(map[string]string)
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) == 3 && store.IsKey(f[0]) {
			cli[f[0]] = f[1] + " " + f[2]
		}
	}
	if len(cli) != len(store.Keys()) || len(server) != len(store.Keys()) {
		t.Fatalf("%d configs printed, %d described, want %d:\n%s", len(cli), len(server), len(store.Keys()), r.stdout)
	}
	for k, want := range server {
		if cli[k] != want {
			t.Errorf("%s: topics describe says %q, DescribeConfigs %q", k, cli[k], want)
		}
	}
	// What the steps above made of it, so the comparison is not of two
	// lists of defaults.
	for k, want := range map[string]string{"retention.ms": "1000 DYNAMIC_TOPIC_CONFIG", "compression.type": "none DEFAULT_CONFIG",
		"cleanup.policy": "compact,delete DYNAMIC_TOPIC_CONFIG", "min.cleanable.dirty.ratio": "0.5 DYNAMIC_TOPIC_CONFIG",
		"retention.bytes": "-1 DEFAULT_CONFIG"} {
		if server[k] != want {
			t.Errorf("%s: %q, want %q", k, server[k], want)
		}
	}
	if !strings.Contains(r.stdout, "Configs: cleanup.policy=compact,delete,retention.ms=1000,segment.bytes=2000000,min.cleanable.dirty.ratio=0.5\n") {
		t.Errorf("the Configs: field lists the configs set on the topic:\n%s", r.stdout)
	}
}
