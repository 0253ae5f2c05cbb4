package seglog_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/cleaner"
	"github.com/seglog/seglog/internal/soak"
	"github.com/seglog/seglog/record"
)

// soakValue is what the soak writes at offset off in truncation epoch ep.
func soakValue(off int64, ep int) []byte {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d", off, ep)
	r := rand.New(rand.NewPCG(h.Sum64(), 3))
	v := []byte(fmt.Sprintf("%d|%d|", off, ep))
	for range 10 + r.IntN(150) {
		v = append(v, byte('a'+r.IntN(26)))
	}
	return v
}

// soakWritten is every (offset, epoch) the writer was about to append;
// readers check each record against it.
type soakWritten struct {
	mu sync.RWMutex
	m  map[int64][]int // offset → epochs written there
}

func (w *soakWritten) add(off int64, ep int) {
	w.mu.Lock()
	w.m[off] = append(w.m[off], ep)
	w.mu.Unlock()
}

// check verifies a record read: its value is soakValue of its own offset
// and of an epoch written at that offset.
func (w *soakWritten) check(r record.Record) error {
	parts := strings.SplitN(string(r.Value), "|", 3)
	if len(parts) != 3 {
		return fmt.Errorf("offset %d: malformed value %q", r.Offset, r.Value)
	}
	off, err1 := strconv.ParseInt(parts[0], 10, 64)
	ep, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil || off != r.Offset || string(soakValue(off, ep)) != string(r.Value) {
		return fmt.Errorf("offset %d holds a value written for offset %s epoch %s, or torn", r.Offset, parts[0], parts[1])
	}
	w.mu.RLock()
	defer w.mu.RUnlock()
	for _, e := range w.m[off] {
		if e == ep {
			return nil
		}
	}
	return fmt.Errorf("offset %d holds epoch %d, never written there (written: %v)", off, ep, w.m[off])
}

// benign are the errors a reader overtaken by a truncation or retention
// may get; it then reads again from elsewhere.
func benign(err error) bool {
	return errors.Is(err, seglog.ErrTruncated) || errors.Is(err, seglog.ErrSliceTruncated) || errors.Is(err, seglog.ErrOffsetOutOfRange)
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd") //vfs:allow counting this process's descriptors
	if err != nil {
		t.Skipf("cannot count open files: %v", err)
	}
	return len(ents)
}

// TestConcurrencySoak runs one writer (appends, and now and then a
// truncation), sixteen readers (eight iterating records, eight reading
// slices and parsing their batches), and a cleaner running size retention
// and compaction, all at once on one log, for a while (-soak.scale
// lengthens it). Every record any reader sees must hold the value written
// at its offset (in one of the truncation epochs that wrote there); the
// only errors allowed are those of a reader overtaken by a truncation or
// retention. Once everything stops and the log is closed, the process is
// back to its open files and (nearly) its goroutines.
func TestConcurrencySoak(t *testing.T) {
	fdsBefore, gBefore := openFDs(t), runtime.NumGoroutine()
	dir := t.TempDir()
	l, err := seglog.Open(dir, seglog.Options{LogConfig: seglog.LogConfig{SegmentBytes: 16 << 10, IndexIntervalBytes: 512, MaxIndexBytes: 4096}, MaxOpenSegmentFiles: 3, Logger: discard()})
	if err != nil {
		t.Fatal(err)
	}
	written := &soakWritten{m: map[int64][]int{}}
	duration := time.Duration(soak.Scale()) * 1500 * time.Millisecond
	// The soak runs for duration and, on a machine too loaded to get
	// through every kind of step by then, on until it has (at most 20 ×
	// duration): a time limit alone made it fail for want of a truncation.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var verified, truncations, passes atomic.Int64
	go func() {
		start := time.Now()
		for ctx.Err() == nil {
			elapsed := time.Since(start)
			exercised := verified.Load() > 0 && truncations.Load() > 0 && passes.Load() > 0
			if elapsed >= 20*duration || (elapsed >= duration && exercised) {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
		cancel()
	}

	wg.Add(1)
	go func() { // the writer
		defer wg.Done()
		r := rand.New(rand.NewPCG(soak.Seed(), 8))
		ep := 0
		for i := 0; ctx.Err() == nil; i++ {
			if i%40 == 39 && l.EndOffset() > l.StartOffset()+10 {
				ep++
				to := l.EndOffset() - 1 - r.Int64N(min(50, l.EndOffset()-l.StartOffset()-1))
				if err := l.TruncateTo(to); err != nil {
					fail(fmt.Errorf("truncate to %d: %w", to, err))
					return
				}
				truncations.Add(1)
				continue
			}
			end := l.EndOffset()
			n := 1 + r.IntN(4)
			recs := make([]record.Record, n)
			for j := range recs {
				off := end + int64(j)
				written.add(off, ep)
				recs[j] = record.Record{Key: []byte(fmt.Sprintf("k%d", off%97)), Value: soakValue(off, ep)}
			}
			if _, err := l.Append(recs...); err != nil {
				fail(fmt.Errorf("append at %d: %w", end, err))
				return
			}
		}
	}()

	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for ctx.Err() == nil {
				start, end := l.StartOffset(), l.EndOffset()
				from := end - r.Int64N(200)
				if g%4 == 0 {
					from = start + r.Int64N(end-start+1)
				}
				from = max(from, start)
				if g < 8 {
					n := 0
					for rec, err := range l.Records(from) {
						if err != nil {
							if !benign(err) {
								fail(fmt.Errorf("records from %d: %w", from, err))
							}
							break
						}
						if err := written.check(rec); err != nil {
							fail(fmt.Errorf("records from %d: %w", from, err))
							return
						}
						verified.Add(1)
						if n++; n > 300 {
							break
						}
					}
					continue
				}
				sl, err := l.Read(from, 8<<10, seglog.ReadOptions{})
				if err != nil {
					if !benign(err) {
						fail(fmt.Errorf("read at %d: %w", from, err))
					}
					continue
				}
				buf := make([]byte, sl.Len())
				_, err = sl.ReadAt(buf, 0)
				sl.Close()
				if err != nil {
					if !benign(err) {
						fail(fmt.Errorf("slice at %d: %w", from, err))
					}
					continue
				}
				for len(buf) >= record.HeaderSize {
					size, _, err := record.PeekEntry(buf)
					if err != nil || size > len(buf) {
						fail(fmt.Errorf("slice at %d: a partial batch (%v)", from, err))
						return
					}
					b := record.Batch(buf[:size])
					if err := b.Validate(); err != nil {
						fail(fmt.Errorf("slice at %d: %w", from, err))
						return
					}
					for rec, err := range b.Records() {
						if err != nil {
							fail(fmt.Errorf("slice at %d: %w", from, err))
							return
						}
						if rec.Offset < from {
							continue // a slice starts at the batch holding from
						}
						if err := written.check(rec); err != nil {
							fail(fmt.Errorf("slice at %d: %w", from, err))
							return
						}
						verified.Add(1)
					}
					buf = buf[size:]
				}
			}
		}()
	}

	c := cleaner.New(cleaner.Options{Logger: discard()})
	c.SetCompaction(cleaner.CompactionOptions{DedupeBufferBytes: 1 << 20, SegmentBytes: 16 << 10})
	p := cleaner.DefaultPolicy()
	p.CleanupPolicy = cleaner.CompactDelete
	p.RetentionBytes = 32 << 10
	p.FileDeleteDelay = 0
	if err := c.Add(cleaner.Wrap(l), p); err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { // retention and compaction
		defer wg.Done()
		for ctx.Err() == nil {
			if err := c.RunOnce(ctx); err != nil && ctx.Err() == nil {
				fail(fmt.Errorf("retention: %w", err))
				return
			}
			// A rewrite that a truncation or retention overtook is
			// discarded and retried: that is the contract, not a failure.
			_, err := c.Compact(ctx, cleaner.Wrap(l), p)
			if errors.Is(err, seglog.ErrSegmentsChanged) || errors.Is(err, seglog.ErrSegmentsBusy) {
				err = nil
			}
			if err != nil && ctx.Err() == nil && !benign(err) {
				fail(fmt.Errorf("compaction: %w", err))
				return
			}
			passes.Add(1)
			time.Sleep(5 * time.Millisecond) // pacing between compaction passes, not a wait for anything
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := c.Remove(cleaner.Wrap(l)); err != nil {
		t.Error(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d records verified, %d truncations, %d cleaner rounds, log [%d,%d)",
		verified.Load(), truncations.Load(), passes.Load(), l.StartOffset(), l.EndOffset())
	soak.Count(t, "records_verified", int(verified.Load()))
	if verified.Load() == 0 || truncations.Load() == 0 || passes.Load() == 0 {
		t.Errorf("the soak did not exercise everything: %d verified, %d truncations, %d cleaner rounds", verified.Load(), truncations.Load(), passes.Load())
	}
	// Descriptors come back exactly; goroutines may take a moment to
	// return (the runtime's own), so allow a few.
	deadline := time.Now().Add(5 * time.Second)
	for {
		fds, gs := openFDs(t), runtime.NumGoroutine()
		if fds <= fdsBefore && gs <= gBefore+2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after closing: %d open files (%d before), %d goroutines (%d before)", fds, fdsBefore, gs, gBefore)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
