package cleaner

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/seglog/seglog/defaults"
)

// CleanupPolicy is Kafka's cleanup.policy: which of retention (delete) and
// compaction (compact) apply to a log.
type CleanupPolicy uint8

const (
	// Delete removes whole segments by time and size (Kafka's default).
	Delete CleanupPolicy = iota
	// Compact keeps the last record of each key; only the start-offset
	// rule deletes segments.
	Compact
	// CompactDelete compacts and also applies time and size retention.
	CompactDelete
)

// String returns the policy as Kafka spells it.
func (p CleanupPolicy) String() string {
	switch p {
	case Delete:
		return "delete"
	case Compact:
		return "compact"
	case CompactDelete:
		return "compact,delete"
	}
	return fmt.Sprintf("CleanupPolicy(%d)", uint8(p))
}

// ParseCleanupPolicy parses Kafka's spelling: "delete", "compact", or both
// separated by a comma in either order.
func ParseCleanupPolicy(s string) (CleanupPolicy, error) {
	var del, comp bool
	for _, part := range strings.Split(s, ",") {
		switch strings.TrimSpace(part) {
		case "delete":
			del = true
		case "compact":
			comp = true
		default:
			return 0, &PolicyError{Name: "cleanup.policy", Value: s, Reason: `want "delete", "compact" or "compact,delete"`}
		}
	}
	switch {
	case del && comp:
		return CompactDelete, nil
	case comp:
		return Compact, nil
	}
	return Delete, nil
}

// Kafka's defaults for the topic configs a Policy carries (declared once,
// in package defaults).
const (
	DefaultRetention              = defaults.Retention              // retention.ms
	DefaultRetentionBytes         = defaults.RetentionBytes         // retention.bytes: unlimited
	DefaultFileDeleteDelay        = defaults.FileDeleteDelay        // file.delete.delay.ms
	DefaultDeleteRetention        = defaults.DeleteRetention        // delete.retention.ms
	DefaultMinCleanableDirtyRatio = defaults.MinCleanableDirtyRatio // min.cleanable.dirty.ratio
	DefaultMinCompactionLag       = defaults.MinCompactionLag       // min.compaction.lag.ms
	DefaultMaxCompactionLag       = defaults.MaxCompactionLag       // max.compaction.lag.ms: no limit
	// Forever as a retention time is Kafka's retention.ms=-1.
	Forever time.Duration = -1
)

// Policy is one log's cleanup configuration, named after Kafka's topic
// configs. Build one with DefaultPolicy and change what differs: the zero
// Policy is not the default (zero retention would delete everything).
type Policy struct {
	// CleanupPolicy is cleanup.policy.
	CleanupPolicy CleanupPolicy
	// Retention is retention.ms: a segment whose largest timestamp is
	// older than this goes. Forever (-1) keeps segments regardless of age.
	Retention time.Duration
	// RetentionBytes is retention.bytes, per log: the oldest segments go
	// while the log would still hold at least this many bytes without
	// them. -1 means unlimited.
	RetentionBytes int64
	// FileDeleteDelay is file.delete.delay.ms: how long a deleted
	// segment's .deleted files stay before they are unlinked (later still
	// if a reader holds them).
	FileDeleteDelay time.Duration

	// The compaction knobs, carried for the compaction pass (Kafka §9.1).

	// DeleteRetention is delete.retention.ms: how long tombstones stay
	// after compaction.
	DeleteRetention time.Duration
	// MinCleanableDirtyRatio is min.cleanable.dirty.ratio.
	MinCleanableDirtyRatio float64
	// MinCompactionLag is min.compaction.lag.ms.
	MinCompactionLag time.Duration
	// MaxCompactionLag is max.compaction.lag.ms.
	MaxCompactionLag time.Duration
}

// DefaultPolicy returns Kafka's defaults: delete after 7 days, no size
// limit, a 60 s file deletion delay.
func DefaultPolicy() Policy {
	return Policy{
		CleanupPolicy:          Delete,
		Retention:              DefaultRetention,
		RetentionBytes:         DefaultRetentionBytes,
		FileDeleteDelay:        DefaultFileDeleteDelay,
		DeleteRetention:        DefaultDeleteRetention,
		MinCleanableDirtyRatio: DefaultMinCleanableDirtyRatio,
		MinCompactionLag:       DefaultMinCompactionLag,
		MaxCompactionLag:       DefaultMaxCompactionLag,
	}
}

// ErrInvalidPolicy matches every *PolicyError.
var ErrInvalidPolicy = errors.New("cleaner: invalid policy")

// PolicyError names the config that is out of range.
type PolicyError struct {
	Name   string // Kafka's config name, e.g. "retention.ms"
	Value  string
	Reason string
}

// Error names the config, its value and why it was refused.
func (e *PolicyError) Error() string {
	return fmt.Sprintf("cleaner: invalid %s %s: %s", e.Name, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidPolicy) hold.
func (e *PolicyError) Is(target error) bool { return target == ErrInvalidPolicy }

// Validate reports the first config out of Kafka's range as a *PolicyError.
func (p Policy) Validate() error {
	ms := func(d time.Duration) string { return fmt.Sprint(d.Milliseconds()) }
	switch {
	case p.CleanupPolicy > CompactDelete:
		return &PolicyError{"cleanup.policy", p.CleanupPolicy.String(), "unknown"}
	case p.Retention < 0 && p.Retention != Forever:
		return &PolicyError{"retention.ms", ms(p.Retention), "must be -1 (forever) or at least 0"}
	case p.RetentionBytes < -1:
		return &PolicyError{"retention.bytes", fmt.Sprint(p.RetentionBytes), "must be -1 (unlimited) or at least 0"}
	case p.FileDeleteDelay < 0:
		return &PolicyError{"file.delete.delay.ms", ms(p.FileDeleteDelay), "must not be negative"}
	case p.DeleteRetention < 0:
		return &PolicyError{"delete.retention.ms", ms(p.DeleteRetention), "must not be negative"}
	case math.IsNaN(p.MinCleanableDirtyRatio) || p.MinCleanableDirtyRatio < 0 || p.MinCleanableDirtyRatio > 1:
		return &PolicyError{"min.cleanable.dirty.ratio", fmt.Sprint(p.MinCleanableDirtyRatio), "must be in [0, 1]"}
	case p.MinCompactionLag < 0:
		return &PolicyError{"min.compaction.lag.ms", ms(p.MinCompactionLag), "must not be negative"}
	case p.MaxCompactionLag < 1:
		return &PolicyError{"max.compaction.lag.ms", ms(p.MaxCompactionLag), "must be positive"}
	case p.MaxCompactionLag < p.MinCompactionLag:
		return &PolicyError{"max.compaction.lag.ms", ms(p.MaxCompactionLag), "must not be less than min.compaction.lag.ms"}
	}
	return nil
}

// deletes reports whether time and size retention apply.
func (p Policy) deletes() bool { return p.CleanupPolicy != Compact }
