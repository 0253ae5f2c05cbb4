// Package testutil holds the helpers seglog's tests share, so each lives
// once: waiting on a condition with a deadline (WaitFor), a fake clock
// (Clock), and reading back and comparing records (ReadRecords,
// CompareRecords). File helpers are in vfs/vfstest, the crash campaigns'
// recorder in internal/crashtest.
package testutil

import (
	"bytes"
	"fmt"
	"iter"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seglog/seglog/record"
)

// WaitTimeout bounds WaitFor. A wait is for progress, not a measure of
// speed, so it is generous: the race detector on a loaded two-core CI
// machine is slow.
const WaitTimeout = time.Minute

// WaitFor polls cond until it holds and fails the test, naming what it
// waited for, if it does not within WaitTimeout. Use it where a test
// would otherwise sleep and hope: the condition is what the sleep stood
// for.
func WaitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	for deadline := time.Now().Add(WaitTimeout); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatalf("gave up after %v waiting until %s", WaitTimeout, what)
		}
	}
}

// RecordSource is what ReadRecords reads: a seglog.Log, or anything else
// that serves records from an offset the same way.
type RecordSource interface {
	Records(from int64) iter.Seq2[record.Record, error]
}

// ReadRecords returns the records of src from offset from to its end,
// each cloned (Records lends its bytes only until the loop body returns),
// and fails the test on a read error.
func ReadRecords(tb testing.TB, src RecordSource, from int64) []record.Record {
	tb.Helper()
	var out []record.Record
	for r, err := range src.Records(from) {
		if err != nil {
			tb.Fatalf("reading records from %d: %v", from, err)
		}
		out = append(out, r.Clone())
	}
	return out
}

// CompareRecords returns nil when got and want hold the same records in
// the same order (offsets, keys and values, a null key or value told apart
// from an empty one), and otherwise an error describing the first
// difference. Headers and timestamps are not compared.
func CompareRecords(got, want []record.Record) error {
	for i := 0; i < len(got) || i < len(want); i++ {
		if i >= len(got) {
			return fmt.Errorf("missing record at offset %d (and %d more)", want[i].Offset, len(want)-i-1)
		}
		if i >= len(want) {
			return fmt.Errorf("extra record at offset %d (and %d more)", got[i].Offset, len(got)-i-1)
		}
		g, w := got[i], want[i]
		if g.Offset != w.Offset || !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) ||
			(g.Key == nil) != (w.Key == nil) || (g.Value == nil) != (w.Value == nil) {
			return fmt.Errorf("record %d: got offset %d key %q value %q, want offset %d key %q value %q",
				i, g.Offset, g.Key, g.Value, w.Offset, w.Key, w.Value)
		}
	}
	return nil
}

// WaitBlocked waits until at least n goroutines are blocked (on a lock, a
// channel or a select: not running) with fn in their stack, and fails the
// test, naming what it waited for, if that does not happen within
// WaitTimeout. fn is matched against the goroutine dump's function names,
// such as "seglog.(*Log).Read(". It stands where a test would sleep to
// "let a goroutine get under way": it proves the goroutine has reached the
// point the test means to catch it at.
func WaitBlocked(tb testing.TB, what, fn string, n int) {
	tb.Helper()
	WaitFor(tb, what, func() bool { return Blocked(fn) >= n })
}

// Blocked counts the goroutines blocked with fn in their stack (see
// WaitBlocked).
func Blocked(fn string) int {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, stack, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "[running]") || strings.Contains(header, "[runnable]") {
			continue
		}
		if strings.Contains(stack, fn) {
			count++
		}
	}
	return count
}

// LockedBuffer is a bytes.Buffer that several goroutines may write to
// (a Log's background goroutines logging, a pipe's reader) while a test
// reads what was written so far.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
