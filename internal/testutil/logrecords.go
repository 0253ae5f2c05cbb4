package testutil

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// LogRecords is a slog.Handler keeping every record as one line
// ("LEVEL msg key=value ..."), for tests to look for what was logged.
type LogRecords struct {
	mu    sync.Mutex
	lines []string
}

// Enabled takes every level.
func (r *LogRecords) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs keeps nothing of the attributes: tests look at records.
func (r *LogRecords) WithAttrs([]slog.Attr) slog.Handler { return r }

// WithGroup keeps nothing of the group.
func (r *LogRecords) WithGroup(string) slog.Handler { return r }

// Handle keeps rec as a line.
func (r *LogRecords) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", rec.Level, rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	r.mu.Lock()
	r.lines = append(r.lines, b.String())
	r.mu.Unlock()
	return nil
}

// Take returns the lines kept since the last Take and forgets them.
func (r *LogRecords) Take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.lines
	r.lines = nil
	return out
}

// Find returns the first line kept holding every one of parts, "" if none.
func (r *LogRecords) Find(parts ...string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range r.lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return l
		}
	}
	return ""
}
