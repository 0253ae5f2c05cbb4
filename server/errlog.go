package server

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// storageErrEvery is how often one partition's storage error is logged
// again while it keeps failing. A client retries a KAFKA_STORAGE_ERROR
// every retry.backoff.ms (100 ms in the Java client), and every client
// of the partition does: logging each one buries the first line, which
// says what the disk said, under thousands of copies of it.
const storageErrEvery = 30 * time.Second

// maxErrKeys bounds the partitions errLog remembers; past it the map
// starts again (a partition's next error is then logged at once).
const maxErrKeys = 4096

// errLog logs what keeps failing for a partition or a topic (storage
// errors, a topic that cannot be placed) each time a client retries: the
// first at once, then at most one line every storageErrEvery, saying how
// many it left out since the last. Safe for concurrent use.
type errLog struct {
	logger *slog.Logger
	now    func() time.Time // time.Now; tests pass a fake one

	mu   sync.Mutex
	last map[errKey]*errLine
}

// errKey is what one line is about: a partition (its directory, or
// topic and partition when it has none) or a topic, and what failed.
type errKey struct {
	partition string
	msg       string
}

// errLine is a key's last logged line and what was left out since.
type errLine struct {
	at    time.Time
	quiet int
}

// error logs msg with args about partition at Error, unless the same
// msg about it was logged less than storageErrEvery ago.
func (e *errLog) error(partition, msg string, args ...any) {
	e.log(slog.LevelError, partition, msg, args...)
}

// log is error at level.
func (e *errLog) log(level slog.Level, partition, msg string, args ...any) {
	now := e.now()
	k := errKey{partition, msg}
	e.mu.Lock()
	l := e.last[k]
	if l != nil && now.Sub(l.at) < storageErrEvery {
		l.quiet++
		e.mu.Unlock()
		return
	}
	quiet := 0
	if l != nil {
		quiet = l.quiet
	}
	if e.last == nil || len(e.last) >= maxErrKeys {
		e.last = make(map[errKey]*errLine)
	}
	e.last[k] = &errLine{at: now}
	e.mu.Unlock()
	if quiet > 0 {
		// The failures since the last line, which were not logged.
		args = append(args, "repeated", quiet, "since", l.at.UTC().Format(time.RFC3339))
	}
	e.logger.Log(context.Background(), level, msg, args...)
}
