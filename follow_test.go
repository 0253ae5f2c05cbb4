package seglog

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seglog/seglog/vfs"
)

// canceledContext is a context that is already done.
func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// followGuard bounds a follower that would otherwise wait forever if a
// record never came; the tests stop their followers themselves long
// before.
const followGuard = 2 * time.Minute

// followN follows l from from until it has yielded n records, checking each
// against recordsAt, then cancels the follow and checks that the iteration
// ends without an error.
func followN(t *testing.T, l *Log, from int64, n int, each func(got int)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), followGuard)
	defer cancel()
	want, got := from, 0
	for r, err := range l.Follow(ctx, from) {
		if err != nil {
			t.Fatalf("follow at %d: %v", want, err)
		}
		w := recordsAt(want, 1)[0]
		if r.Offset != want || !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) || r.Timestamp != w.Timestamp {
			t.Fatalf("follow: got offset %d (value %d bytes), want %d", r.Offset, len(r.Value), want)
		}
		want++
		got++
		if each != nil {
			each(got)
		}
		if got == n {
			cancel()
		}
	}
	if got != n {
		t.Fatalf("follow ended after %d records, want %d (ctx: %v)", got, n, ctx.Err())
	}
}

// TestFollow follows a writable Log and a read-only view of it while the
// writer appends across several rolls, on both filesystems.
func TestFollow(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		name := map[bool]string{false: "writable", true: "read-only"}[readOnly]
		t.Run(name, func(t *testing.T) {
			damagedFilesystems(t, func(t *testing.T, fsys vfs.FS, dir string) {
				w := writeLog(t, fsys, dir, 40, 4)
				defer w.Close()
				l := w
				if readOnly {
					var err error
					if l, err = Open(dir, roOptions(fsys)); err != nil {
						t.Fatal(err)
					}
					defer l.Close()
				}
				const total = 400
				// The follower appends the next batches itself whenever
				// it has caught up, so the test needs no second goroutine
				// and every record is appended while the follower waits or
				// reads.
				followN(t, l, 10, total-10, func(got int) {
					end := w.EndOffset()
					if int64(10+got) != end {
						return
					}
					for off := end; off < min(total, end+16); off += 4 {
						if _, err := w.Append(recordsAt(off, 4)...); err != nil {
							t.Fatal(err)
						}
					}
				})
				if w.NumSegments() < 4 {
					t.Fatalf("the writer rolled only to %d segments", w.NumSegments())
				}
			})
		})
	}
}

// TestFollowEnds checks the ways a Follow ends: a done context (no error),
// an offset out of range, and Close of the Log while it waits.
func TestFollowEnds(t *testing.T) {
	fsys := vfs.NewMem()
	w := writeLog(t, fsys, "/log", 20, 4)
	defer w.Close()
	ro, err := Open("/log", roOptions(fsys))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []*Log{w, ro} {
		n := 0
		for _, err := range l.Follow(canceledContext(), 0) {
			if err != nil {
				t.Fatalf("follow with a done context yielded %v", err)
			}
			n++
		}
		if n > 0 {
			t.Fatalf("follow with a done context yielded %d records", n)
		}
		for _, err := range l.Follow(context.Background(), 21) {
			if !errors.Is(err, ErrOffsetOutOfRange) {
				t.Fatalf("follow past the end: %v, want ErrOffsetOutOfRange", err)
			}
		}
	}
	// Close while following at the end: the follower ends with ErrClosed.
	ctx, cancel := context.WithTimeout(context.Background(), followGuard)
	defer cancel()
	var last error
	n := 0
	for _, err := range ro.Follow(ctx, 0) {
		if err != nil {
			last = err
			break
		}
		if n++; n == 20 {
			if err := ro.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !errors.Is(last, ErrClosed) {
		t.Fatalf("follow after Close ended with %v, want ErrClosed", last)
	}
}

// TestFollowEmptyDirectory: a view of an empty directory is an empty log,
// and a follower of it gets the records of a writer that creates the log
// afterwards.
func TestFollowEmptyDirectory(t *testing.T) {
	fsys := vfs.NewMem()
	if err := fsys.MkdirAll("/log"); err != nil {
		t.Fatal(err)
	}
	l, err := Open("/log", roOptions(fsys))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.StartOffset() != 0 || l.EndOffset() != 0 || l.NumSegments() != 0 {
		t.Fatalf("view of an empty directory: [%d, %d) in %d segments", l.StartOffset(), l.EndOffset(), l.NumSegments())
	}
	// The writer creates the log and appends across rolls while the
	// follower waits or reads: whatever the interleaving, every record
	// must arrive once, in order.
	done := make(chan error, 1)
	go func() {
		w, err := Open("/log", Options{FS: fsys, LogConfig: LogConfig{SegmentBytes: 4 << 10, IndexIntervalBytes: 256, MaxIndexBytes: 4 << 10}})
		if err != nil {
			done <- err
			return
		}
		for off := int64(0); off < 60 && err == nil; off += 4 {
			_, err = w.Append(recordsAt(off, 4)...)
		}
		done <- errors.Join(err, w.Close())
	}()
	followN(t, l, 0, 60, nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
