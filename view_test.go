package seglog

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/seglog/seglog/record"
)

// TestViewHasNoWrites pins what a View is for: the handle store and
// raftlog give their callers must offer nothing that changes the log.
func TestViewHasNoWrites(t *testing.T) {
	writes := map[string]bool{"Append": true, "AppendBatch": true, "AppendEpoch": true, "Roll": true,
		"DeleteBefore": true, "TruncateTo": true, "RestartAt": true, "Close": true, "Sync": true,
		"Refresh": true, "SetLimits": true, "SetFileDeleteDelay": true, "ExpireDeleted": true,
		"SetCleanerCheckpoint": true, "CleanerCheckpoint": true}
	vt := reflect.TypeFor[View]()
	for i := range vt.NumMethod() {
		if m := vt.Method(i).Name; writes[m] {
			t.Errorf("View has %s, which changes the log", m)
		}
	}
	if vt.NumField() != 1 || vt.Field(0).IsExported() {
		t.Errorf("View's fields: want one, unexported (the Log)")
	}
}

// TestViewClosedUnder: a View whose Log its owner closed answers ErrClosed
// for every read instead of reading a closed Log as empty, and keeps the
// bounds the Log had; writable and read-only Logs alike.
func TestViewClosedUnder(t *testing.T) {
	for _, ro := range []bool{false, true} {
		t.Run(fmt.Sprintf("readonly=%v", ro), func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 10 {
				if _, err := l.Append(record.Record{Value: []byte("v"), Timestamp: int64(1000 + i)}); err != nil {
					t.Fatal(err)
				}
				if i == 4 {
					if err := l.Roll(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if ro {
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				if l, err = Open(dir, Options{ReadOnly: true}); err != nil {
					t.Fatal(err)
				}
			}
			v := l.View()
			if got := len(v.Segments()); got != 2 {
				t.Fatalf("%d segments, want 2", got)
			}
			size := v.Size()
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			if sl, err := v.Read(0, 1<<20, ReadOptions{}); !errors.Is(err, ErrClosed) {
				t.Errorf("Read(0) after Close: %v, %v; want ErrClosed", sl, err)
			}
			if sl, err := v.Read(10, 1<<20, ReadOptions{}); !errors.Is(err, ErrClosed) {
				t.Errorf("Read(end) after Close: %v, %v; want ErrClosed", sl, err)
			}
			n := 0
			var last error
			for _, err := range v.Records(0) {
				n++
				last = err
			}
			if n != 1 || !errors.Is(last, ErrClosed) {
				t.Errorf("Records after Close: %d items, last error %v; want ErrClosed alone", n, last)
			}
			if off, err := v.OffsetForTime(1003); !errors.Is(err, ErrClosed) {
				t.Errorf("OffsetForTime after Close: %d, %v; want ErrClosed", off, err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for _, err := range v.Follow(ctx, 0) {
				if !errors.Is(err, ErrClosed) {
					t.Errorf("Follow after Close: %v; want ErrClosed", err)
				}
				break
			}
			if v.StartOffset() != 0 || v.EndOffset() != 10 || v.NumSegments() != 2 || v.Size() != size {
				t.Errorf("bounds after Close: [%d, %d) %d segments %d bytes; want [0, 10) 2 segments %d bytes",
					v.StartOffset(), v.EndOffset(), v.NumSegments(), v.Size(), size)
			}
			if segs := v.Segments(); len(segs) != 0 {
				t.Errorf("Segments after Close: %v, want none", segs)
			}
		})
	}
}

// TestViewDuringWrites reads through a View while its Log appends, rolls
// and deletes its oldest segments: the bounds it shows are ordered and
// never go back, and what it reads lies inside them.
func TestViewDuringWrites(t *testing.T) {
	l, err := Open(t.TempDir(), Options{LogConfig: LogConfig{SegmentBytes: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	v := l.View()
	const total = 2000
	var wg sync.WaitGroup
	wg.Add(1)
	writeErr := make(chan error, 1)
	go func() {
		defer wg.Done()
		for i := range total {
			if _, err := l.Append(record.Record{Value: fmt.Appendf(nil, "%d", i)}); err != nil {
				writeErr <- err
				return
			}
			if i%100 == 99 {
				if _, err := l.DeleteBefore(int64(i - 50)); err != nil {
					writeErr <- err
					return
				}
			}
		}
	}()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var prevStart, prevEnd int64
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		start, end := v.StartOffset(), v.EndOffset()
		if start > end || start < prevStart || end < prevEnd {
			t.Fatalf("bounds [%d, %d) after [%d, %d)", start, end, prevStart, prevEnd)
		}
		prevStart, prevEnd = start, end
		for r, err := range v.Records(start) {
			if errors.Is(err, ErrOffsetOutOfRange) {
				break // retention overtook the iteration, as documented
			}
			if err != nil {
				t.Fatalf("records from %d: %v", start, err)
			}
			if r.Offset < start || string(r.Value) != fmt.Sprint(r.Offset) {
				t.Fatalf("record %d %q read from %d", r.Offset, r.Value, start)
			}
		}
		sl, err := v.Read(start, 4096, ReadOptions{})
		switch {
		case errors.Is(err, ErrOffsetOutOfRange):
		case err != nil:
			t.Fatalf("read at %d: %v", start, err)
		default:
			if sl.Len() > 0 && (sl.FirstOffset() > start || sl.LastOffset() < start) {
				t.Fatalf("read at %d: slice [%d, %d]", start, sl.FirstOffset(), sl.LastOffset())
			}
			sl.Close()
		}
	}
	select {
	case err := <-writeErr:
		t.Fatal(err)
	default:
	}
	if v.EndOffset() != total || v.StartOffset() == 0 || v.NumSegments() < 2 {
		t.Fatalf("after the writes: [%d, %d) in %d segments", v.StartOffset(), v.EndOffset(), v.NumSegments())
	}
}
