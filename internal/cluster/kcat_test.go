package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seglog/seglog/internal/testenv"
)

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
	testenv.Kcat(t, c.seeds(), in, "-P", "-t", topic, "-K", ":", "-X", "acks=all", "-X", "enable.idempotence=true")
	got := sortedLines(testenv.Kcat(t, c.seeds(), "", "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%k:%s\n"))
	if !slices.Equal(got, want) {
		t.Fatalf("consumed %d lines, want %d", len(got), len(want))
	}
	group := []string{"-G", "g1", "-X", "auto.offset.reset=earliest", "-e", "-f", "%k:%s\n", topic}
	if got := sortedLines(testenv.Kcat(t, c.seeds(), "", group...)); !slices.Equal(got, want) {
		t.Fatalf("the group consumed %d lines, want %d", len(got), len(want))
	}

	// A node leading a partition stops; what is produced next is all
	// the group reads: its commits were replicated.
	c.stopNode(c.leaderOf(topic, 0).id)
	in, want = lines(200, 260)
	testenv.Kcat(t, c.seeds(), in, "-P", "-t", topic, "-K", ":", "-X", "acks=all", "-X", "enable.idempotence=true")
	if got := sortedLines(testenv.Kcat(t, c.seeds(), "", group...)); !slices.Equal(got, want) {
		t.Fatalf("after the stop the group consumed %d lines (%q...), want the %d new ones", len(got), got[:min(3, len(got))], len(want))
	}
}
