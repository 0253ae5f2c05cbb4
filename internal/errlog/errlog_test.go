package errlog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The first failure is logged at once, the same one again only after
// Every, saying how many were left out; another key or message is its
// own line.
func TestLogThrottles(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	e := New(slog.New(slog.NewTextHandler(&out, nil)), func() time.Time { return now })
	lines := func() []string { return strings.Split(strings.TrimSpace(out.String()), "\n") }

	for range 5 {
		e.Error("t-0", "open failed", "err", "permission denied")
		now = now.Add(time.Second)
	}
	if l := lines(); len(l) != 1 || !strings.Contains(l[0], "level=ERROR") || strings.Contains(l[0], "repeated") {
		t.Fatalf("five failures within %v: %q, want one line", Every, l)
	}
	e.Error("t-1", "open failed", "err", "permission denied")
	e.Log(slog.LevelWarn, "t-0", "another failure")
	if l := lines(); len(l) != 3 || !strings.Contains(l[2], "level=WARN") {
		t.Fatalf("another key and another message: %q, want a line each", l)
	}
	now = now.Add(Every)
	e.Error("t-0", "open failed", "err", "permission denied")
	if l := lines(); len(l) != 4 || !strings.Contains(l[3], "repeated=4") || !strings.Contains(l[3], "since=2026-12-06T00:00:00Z") {
		t.Fatalf("the failure %v later: %q, want a line saying repeated=4 since the first", Every, l)
	}
}
