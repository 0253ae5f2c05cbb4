package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/internal/testenv"
)

// kcat runs kcat (librdkafka) against brokers with stdin and returns its
// standard output; without kcat the test skips, or fails under CI.
func kcat(t *testing.T, brokers []string, stdin string, args ...string) string {
	t.Helper()
	path := testenv.LookPath(t, "kcat", "kcat")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, append([]string{"-b", strings.Join(brokers, ","), "-X", "topic.metadata.refresh.interval.ms=1000"}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

// sortedLines splits kcat's output into sorted lines.
func sortedLines(out string) []string {
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if out == "" {
		got = nil
	}
	slices.Sort(got)
	return got
}

// TestKcatCluster: kcat (librdkafka) against three nodes: an idempotent
// producer with acks=all, a consumer, and a group whose committed offsets
// survive the stop of a node that leads a partition of the topic.
func TestKcatCluster(t *testing.T) {
	testenv.LookPath(t, "kcat", "kcat")
	c := newServedCluster(t, 3)
	const topic = "kc"
	if err := c.controller().node.CreateTopic(ctxTimeout(t), topic, 2, 3, nil); err != nil {
		t.Fatal(err)
	}
	lines := func(from, to int) (string, []string) {
		var in strings.Builder
		var want []string
		for i := from; i < to; i++ {
			l := fmt.Sprintf("k%d:value %d", i%7, i)
			in.WriteString(l + "\n")
			want = append(want, l)
		}
		slices.Sort(want)
		return in.String(), want
	}
	in, want := lines(0, 200)
	kcat(t, c.seeds(), in, "-P", "-t", topic, "-K", ":", "-X", "acks=all", "-X", "enable.idempotence=true")
	got := sortedLines(kcat(t, c.seeds(), "", "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k:%s\n"))
	if !slices.Equal(got, want) {
		t.Fatalf("consumed %d lines, want %d", len(got), len(want))
	}
	group := []string{"-G", "g1", "-X", "auto.offset.reset=earliest", "-e", "-f", "%k:%s\n", topic}
	if got := sortedLines(kcat(t, c.seeds(), "", group...)); !slices.Equal(got, want) {
		t.Fatalf("the group consumed %d lines, want %d", len(got), len(want))
	}

	// A node leading a partition stops; what is produced next is all
	// the group reads: its commits were replicated.
	c.stopNode(c.leaderOf(topic, 0).id)
	in, want = lines(200, 260)
	kcat(t, c.seeds(), in, "-P", "-t", topic, "-K", ":", "-X", "acks=all", "-X", "enable.idempotence=true")
	if got := sortedLines(kcat(t, c.seeds(), "", group...)); !slices.Equal(got, want) {
		t.Fatalf("after the stop the group consumed %d lines (%q...), want the %d new ones", len(got), got[:min(3, len(got))], len(want))
	}
}
