package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seglog/seglog/cleaner"
)

func TestRetentionSmoke(t *testing.T) {
	for _, memory := range []bool{true, false} {
		res, err := RunRetention(context.Background(), Env{Dir: t.TempDir()},
			RetentionConfig{Logs: 20, Segments: 3, Rounds: 1, Appends: 200, Workers: 2, Memory: memory})
		if err != nil {
			t.Fatal(err)
		}
		if res.Deleted != 20 || res.LookPass <= 0 || res.DeletePass <= 0 || res.AppendP99Baseline <= 0 || res.Ratio <= 0 {
			t.Fatalf("memory %v: %+v", memory, res)
		}
		var out bytes.Buffer
		if err := WriteRetention(&out, res); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "20 logs × 3 segments") || !strings.Contains(out.String(), "(20 segments deleted)") {
			t.Fatalf("table:\n%s", out.String())
		}
	}
	if _, err := RunRetention(context.Background(), Env{}, RetentionConfig{Segments: 1}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("one segment per log: %v", err)
	}
}

// BenchmarkRetentionPass times a cleaner pass over 1,000 in-memory logs of
// 10 segments each that finds nothing to delete: "look" with a policy
// changed before every pass, so every segment is looked at (the cost of
// looking), "quiet" with nothing changed since the last pass.
func BenchmarkRetentionPass(b *testing.B) {
	cfg := RetentionConfig{Logs: 1000, Segments: 10, Memory: true}
	if err := cfg.defaults(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	setup, err := setupRetention(ctx, Env{}, cfg)
	if setup != nil {
		defer setup.close()
	}
	if err != nil {
		b.Fatal(err)
	}
	c := setup.c
	b.Run("look", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			p := cleaner.DefaultPolicy()
			p.Retention = 30*24*time.Hour + time.Duration(i+1)*time.Millisecond
			for _, l := range setup.logs {
				if err := c.SetPolicy(cleaner.Wrap(l), p); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			if err := c.RunOnce(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("quiet", func(b *testing.B) {
		for b.Loop() {
			if err := c.RunOnce(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	if m := c.Metrics(); m.SegmentsDeleted != 0 || m.Failures != 0 {
		b.Fatalf("passes deleted %d segments, %d failures", m.SegmentsDeleted, m.Failures)
	}
}
