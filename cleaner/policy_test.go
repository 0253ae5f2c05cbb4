package cleaner

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestDefaultPolicyIsKafkas(t *testing.T) {
	p := DefaultPolicy()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if p.CleanupPolicy != Delete || p.Retention != 604_800_000*time.Millisecond || p.RetentionBytes != -1 ||
		p.FileDeleteDelay != 60_000*time.Millisecond || p.DeleteRetention != 86_400_000*time.Millisecond ||
		p.MinCleanableDirtyRatio != 0.5 || p.MinCompactionLag != 0 || p.MaxCompactionLag != math.MaxInt64 {
		t.Fatalf("defaults differ from Kafka's: %+v", p)
	}
	// log.retention.check.interval.ms and log.cleaner.threads, which the
	// zero Options get (TestStartRunsEveryIntervalAndStops times a round
	// by DefaultCheckInterval).
	if c := New(Options{}); DefaultCheckInterval != 300_000*time.Millisecond || c.opts.CheckInterval != DefaultCheckInterval || c.opts.Workers != 1 {
		t.Fatalf("check interval %v (default %v), %d workers; want Kafka's 5 minutes and 1", c.opts.CheckInterval, DefaultCheckInterval, c.opts.Workers)
	}
}

func TestPolicyValidate(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Policy)
	}{
		{"cleanup.policy", func(p *Policy) { p.CleanupPolicy = 3 }},
		{"retention.ms", func(p *Policy) { p.Retention = -2 * time.Millisecond }},
		{"retention.bytes", func(p *Policy) { p.RetentionBytes = -2 }},
		{"file.delete.delay.ms", func(p *Policy) { p.FileDeleteDelay = -time.Second }},
		{"delete.retention.ms", func(p *Policy) { p.DeleteRetention = -time.Second }},
		{"min.cleanable.dirty.ratio", func(p *Policy) { p.MinCleanableDirtyRatio = 1.5 }},
		{"min.cleanable.dirty.ratio", func(p *Policy) { p.MinCleanableDirtyRatio = math.NaN() }},
		{"min.compaction.lag.ms", func(p *Policy) { p.MinCompactionLag = -1 }},
		{"max.compaction.lag.ms", func(p *Policy) { p.MaxCompactionLag = 0 }},
		{"max.compaction.lag.ms", func(p *Policy) { p.MinCompactionLag = time.Hour; p.MaxCompactionLag = time.Minute }},
	}
	for _, c := range cases {
		p := DefaultPolicy()
		c.change(&p)
		err := p.Validate()
		var pe *PolicyError
		if !errors.Is(err, ErrInvalidPolicy) || !errors.As(err, &pe) || pe.Name != c.name {
			t.Errorf("%s: Validate = %v", c.name, err)
		}
	}
	ok := DefaultPolicy()
	ok.Retention, ok.RetentionBytes, ok.FileDeleteDelay = Forever, 0, 0
	if err := ok.Validate(); err != nil {
		t.Errorf("forever, zero bytes, no delay: %v", err)
	}
}

func TestParseCleanupPolicy(t *testing.T) {
	for in, want := range map[string]CleanupPolicy{
		"delete": Delete, "compact": Compact, "compact,delete": CompactDelete, "delete, compact": CompactDelete,
	} {
		got, err := ParseCleanupPolicy(in)
		if err != nil || got != want {
			t.Errorf("%q: %v, %v", in, got, err)
		}
		if in != "delete, compact" && got.String() != in {
			t.Errorf("%v prints as %q", got, got.String())
		}
	}
	for _, in := range []string{"", "remove", "delete,"} {
		if _, err := ParseCleanupPolicy(in); !errors.Is(err, ErrInvalidPolicy) {
			t.Errorf("%q: %v", in, err)
		}
	}
}
