package store

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/vfs"
)

// TestViewAndWriterAfterShut: the handles a store gives out outlive the
// partition they name without reading or writing a closed Log: once the
// topic is deleted (or the store closed) a view's reads and a Writer's
// appends answer seglog.ErrClosed, and the view's bounds stay what they
// were.
func TestViewAndWriterAfterShut(t *testing.T) {
	for _, how := range []string{"delete topic", "close store"} {
		t.Run(how, func(t *testing.T) {
			s := openStore(t, vfs.NewMem(), newFakeClock())
			mustf(t, s.CreateTopic("t", 1, smallConfig()), "create")
			w, err := s.Writer("t", 0)
			mustf(t, err, "writer")
			for i := range 30 {
				_, err := w.Append(kv("k", fmt.Sprint(i)))
				mustf(t, err, "append %d", i)
			}
			v, err := s.Log("t", 0)
			mustf(t, err, "log")
			held, release, err := s.AcquireLog("t", 0)
			mustf(t, err, "acquire")
			defer release()
			if v.EndOffset() != 30 || w.View().EndOffset() != 30 || held.EndOffset() != 30 {
				t.Fatalf("ends %d, %d, %d; want 30", v.EndOffset(), w.View().EndOffset(), held.EndOffset())
			}
			if v.NumSegments() < 2 {
				t.Fatalf("%d segments: the test needs sealed ones", v.NumSegments())
			}
			if how == "delete topic" {
				mustf(t, s.DeleteTopic("t"), "delete topic")
			} else {
				mustf(t, s.Close(), "close")
			}
			for name, v := range map[string]seglog.View{"Log": v, "AcquireLog": held, "Writer.View": w.View()} {
				if _, err := v.Read(0, 1<<20, seglog.ReadOptions{}); !errors.Is(err, seglog.ErrClosed) {
					t.Errorf("%s: Read: %v, want ErrClosed", name, err)
				}
				var last error
				for _, err := range v.Records(0) {
					last = err
				}
				if !errors.Is(last, seglog.ErrClosed) {
					t.Errorf("%s: Records ended with %v, want ErrClosed", name, last)
				}
				if _, err := v.OffsetForTime(0); !errors.Is(err, seglog.ErrClosed) {
					t.Errorf("%s: OffsetForTime: %v, want ErrClosed", name, err)
				}
				if v.EndOffset() != 30 {
					t.Errorf("%s: end %d after the close, want 30", name, v.EndOffset())
				}
			}
			if _, err := w.Append(kv("k", "late")); !errors.Is(err, seglog.ErrClosed) {
				t.Errorf("Writer.Append after the partition closed: %v, want ErrClosed", err)
			}
			if how == "delete topic" {
				if _, err := s.Log("t", 0); !errors.Is(err, ErrUnknownTopic) {
					t.Errorf("Log of the deleted topic: %v, want ErrUnknownTopic", err)
				}
				mustf(t, s.Close(), "close")
			}
		})
	}
}

// TestViewDuringStoreWrites reads a partition through its view while a
// Writer appends and DeleteRecords and retention remove its oldest
// segments: the bounds are ordered and never go back, and every record
// read lies inside them, in order.
func TestViewDuringStoreWrites(t *testing.T) {
	s := openStore(t, vfs.NewMem(), newFakeClock())
	defer s.Close()
	mustf(t, s.CreateTopic("t", 1, smallConfig()), "create")
	w, err := s.Writer("t", 0)
	mustf(t, err, "writer")
	v, err := s.Log("t", 0)
	mustf(t, err, "log")
	const total = 1500
	errc := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range total {
			if _, err := w.Append(kv("", fmt.Sprint(i))); err != nil {
				errc <- err
				return
			}
			if i%100 == 99 {
				if _, err := s.DeleteRecords("t", 0, int64(i-40)); err != nil {
					errc <- err
					return
				}
			}
		}
	})
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
		next := start
		for r, err := range v.Records(start) {
			if errors.Is(err, seglog.ErrOffsetOutOfRange) {
				break // DeleteRecords overtook the iteration, as documented
			}
			if err != nil {
				t.Fatalf("records from %d: %v", start, err)
			}
			if r.Offset < next || string(r.Value) != fmt.Sprint(r.Offset) {
				t.Fatalf("record %d %q after %d", r.Offset, r.Value, next)
			}
			next = r.Offset + 1
		}
	}
	select {
	case err := <-errc:
		t.Fatal(err)
	default:
	}
	if v.EndOffset() != total || v.StartOffset() != total-41 {
		t.Fatalf("after the writes: [%d, %d), want [%d, %d)", v.StartOffset(), v.EndOffset(), total-41, total)
	}
}
