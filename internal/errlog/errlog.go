// Package errlog logs what keeps failing (a partition's storage, a topic
// that cannot be placed, a partition a cluster node cannot open) each time
// it is tried again: the first failure at once, then at most one line
// every Every for the same key and message, saying how many it left out
// since the last. A client retries a KAFKA_STORAGE_ERROR every
// retry.backoff.ms (100 ms in the Java client), and a cluster node's
// sync loop every second: a line for each would bury the first one, which
// says what the disk said, under thousands of copies of it.
package errlog

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Every is how often one key's failure is logged again while it keeps
// failing.
const Every = 30 * time.Second

// maxKeys bounds the keys a Log remembers; past it the map starts again
// (a key's next failure is then logged at once).
const maxKeys = 4096

// Log is one component's throttled error log. Safe for concurrent use.
type Log struct {
	logger *slog.Logger
	now    func() time.Time

	mu   sync.Mutex
	last map[key]*line
}

// New returns a Log writing to logger; now is its clock (nil: time.Now).
func New(logger *slog.Logger, now func() time.Time) *Log {
	if now == nil {
		now = time.Now
	}
	return &Log{logger: logger, now: now}
}

// key is what one line is about: a partition (its directory, or topic and
// partition when it has none) or a topic, and what failed.
type key struct {
	about string
	msg   string
}

// line is a key's last logged line and what was left out since.
type line struct {
	at    time.Time
	quiet int
}

// Error logs msg with args about about at Error, unless the same msg
// about it was logged less than Every ago.
func (e *Log) Error(about, msg string, args ...any) {
	e.Log(slog.LevelError, about, msg, args...)
}

// Log is Error at level.
func (e *Log) Log(level slog.Level, about, msg string, args ...any) {
	now := e.now()
	k := key{about, msg}
	e.mu.Lock()
	l := e.last[k]
	if l != nil && now.Sub(l.at) < Every {
		l.quiet++
		e.mu.Unlock()
		return
	}
	quiet := 0
	if l != nil {
		quiet = l.quiet
	}
	if e.last == nil || len(e.last) >= maxKeys {
		e.last = make(map[key]*line)
	}
	e.last[k] = &line{at: now}
	e.mu.Unlock()
	if quiet > 0 {
		// The failures since the last line, which were not logged.
		args = append(args, "repeated", quiet, "since", l.at.UTC().Format(time.RFC3339))
	}
	e.logger.Log(context.Background(), level, msg, args...)
}
