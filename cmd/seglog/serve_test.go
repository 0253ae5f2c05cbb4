package main

import (
	"bufio"
	"context"
	"maps"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/layout"
	"github.com/seglog/seglog/store"
	"github.com/seglog/seglog/vfs"
)

// TestServeProcess runs seglog serve as a process: a kgo client produces
// and a consumer is parked in a long poll when SIGTERM arrives; the
// process answers, stops, exits 0 and leaves a cleanly closed store with
// every acknowledged record.
func TestServeProcess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	var stderr lockedBuffer
	cmd := seglogProcess(t, &stderr, "serve", dir, "--listen", "127.0.0.1:0", "--num-partitions", "2")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatalf("no output; stderr: %s", stderr.String())
	}
	first := lines.Text()
	addr, _, ok := strings.Cut(strings.TrimPrefix(first, "seglog serve: listening on "), ",")
	if !ok {
		t.Fatalf("unexpected first line %q", first)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("p"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var recs []*kgo.Record
	for i := range 100 {
		recs = append(recs, &kgo.Record{Value: []byte(strings.Repeat("v", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("p"), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	cons.PollFetches(pctx) // leaves a fetch parked at the end
	pcancel()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var rest []string
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	if code := exitCode(t, cmd.Wait(), &stderr); code != 0 {
		t.Fatalf("exit %d; stderr: %s", code, stderr.String())
	}
	if len(rest) != 1 || rest[0] != "seglog serve: stopped" {
		t.Fatalf("after SIGTERM: %q; stderr: %s", rest, stderr.String())
	}
	if !exists(filepath.Join(dir, layout.CleanShutdownFile)) {
		t.Fatal("the store was not closed cleanly")
	}
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	info, err := st.DescribeTopic("p")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, p := range info.Partitions {
		total += p.EndOffset - p.StartOffset
	}
	if total != 100 {
		t.Fatalf("%d records stored, want 100", total)
	}
}

// TestServeRefusesNonStoreDir: serve (and a store command) pointed at a
// partition directory, or at a directory of other things, exits non-zero
// naming the reason and leaves the directory as it was.
func TestServeRefusesNonStoreDir(t *testing.T) {
	logDir := t.TempDir()
	mustInvoke(t, "a\nb\n", "produce", logDir)
	other := t.TempDir()
	if err := vfs.Default.MkdirAll(filepath.Join(other, "kafka-client")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{logDir, other} {
		before := dirSnapshot(t, dir)
		for _, args := range [][]string{
			{"serve", dir, "--listen", "127.0.0.1:0"},
			{"topics", dir, "create", "t"},
		} {
			r := invoke(t, "", args...)
			if r.code == 0 || !strings.Contains(r.stderr, "not a store directory") {
				t.Errorf("seglog %s: exit %d, stderr %q; want a refusal naming the directory as not a store", strings.Join(args, " "), r.code, r.stderr)
			}
		}
		if after := dirSnapshot(t, dir); !maps.Equal(before, after) {
			t.Errorf("%s changed: before %v, after %v", dir, before, after)
		}
	}
}

// TestServeConfigReachesOffsetsTopic: --config is the broker-level default
// __consumer_offsets inherits too, as a Kafka broker's does
// (min.insync.replicas is the one users set), under the offsets topic's
// own keys: a --config cleanup.policy=delete must not make commits
// deletable.
func TestServeConfigReachesOffsetsTopic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	_, stop := startServe(t, dir, "--config", "min.insync.replicas=2", "--config", "max.message.bytes=500000",
		"--config", "cleanup.policy=delete", "--config", "retention.ms=60000", "--config", "flush.messages=9223372036854775807")
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg, err := st.TopicConfigOf(store.OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MinInsyncReplicas != 2 || cfg.Get("max.message.bytes") != "500000" {
		t.Errorf("offsets topic: min.insync.replicas %d, max.message.bytes %s; want --config's 2 and 500000",
			cfg.MinInsyncReplicas, cfg.Get("max.message.bytes"))
	}
	if cfg.CleanupPolicy != cleaner.Compact || cfg.RetentionMs != -1 || cfg.FlushMessages != 1 || cfg.SegmentBytes != 100<<20 {
		t.Errorf("offsets topic lost its own keys: %s=%s, retention.ms %d, flush.messages %d, segment.bytes %d",
			"cleanup.policy", cfg.Get("cleanup.policy"), cfg.RetentionMs, cfg.FlushMessages, cfg.SegmentBytes)
	}
	for _, k := range []string{"min.insync.replicas", "cleanup.policy", "flush.messages"} {
		if !cfg.IsSet(k) {
			t.Errorf("%s is not among the offsets topic's own keys (a cluster copies those): %v", k, cfg.Overrides())
		}
	}
}

// TestServeRefusesAnotherNodeID: a start given a --node-id other than the
// one DIR's meta.properties keeps exits non-zero naming both, and leaves
// DIR as it was (a single node went on as its old id before, saying so
// only in its first line).
func TestServeRefusesAnotherNodeID(t *testing.T) {
	dir := t.TempDir()
	mustInvoke(t, "", "topics", dir, "create", "t")
	if err := layout.WriteMetaProperties(vfs.Default, filepath.Join(dir, layout.MetaPropertiesFile), layout.MetaProperties{NodeID: 1, ClusterID: layout.NewID()}); err != nil {
		t.Fatal(err)
	}
	before := dirSnapshot(t, dir)
	r := invoke(t, "", "serve", dir, "--listen", "127.0.0.1:0", "--node-id", "2")
	if r.code == 0 || !strings.Contains(r.stderr, "names node.id=1, and serve was given --node-id 2") {
		t.Errorf("serve --node-id 2 on node 1's directory: exit %d, stderr %q; want a refusal naming both ids", r.code, r.stderr)
	}
	if after := dirSnapshot(t, dir); !maps.Equal(before, after) {
		t.Errorf("%s changed: before %v, after %v", dir, before, after)
	}
}
