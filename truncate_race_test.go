package seglog

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// doneTruncation is a TruncateTo that returned: it removed every record
// written before it (epoch below its own) at or after cut.
type doneTruncation struct {
	epoch int
	cut   int64
}

// removedBy reports whether a record of epoch at off was removed by one of
// the truncations.
func removedBy(ts []doneTruncation, epoch int, off int64) bool {
	for _, t := range ts {
		if t.epoch > epoch && t.cut <= off {
			return true
		}
	}
	return false
}

// epochOf parses the epoch an epochRecords key carries.
func epochOf(t *testing.T, key []byte) int {
	t.Helper()
	e, err := strconv.Atoi(string(bytes.TrimPrefix(key, []byte("e"))))
	if err != nil {
		t.Errorf("record key %q is not an epoch", key)
	}
	return e
}

// TestReadersNeverSeeTruncatedRecords runs readers (Records, Read with
// ReadAt, OffsetForTime) beside one writer that appends, truncates (inside
// the log and below its start) and applies retention. Every record a
// reader gets must hold its offset's value, and none may be one that a
// TruncateTo which returned before the reader asked for it removed (nor,
// for an iteration, one below a start DeleteBefore had set by then); a
// reader ends only with ErrTruncated, ErrOffsetOutOfRange or (for a
// lookup) ErrTimestampNotFound, never with a corruption error. Run it with
// -race.
func TestReadersNeverSeeTruncatedRecords(t *testing.T) {
	l, err := Open("/race", truncOptions(vfs.NewMem(), SyncNone))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var history atomic.Pointer[[]doneTruncation]
	history.Store(&[]doneTruncation{})
	var stop atomic.Bool
	var wg sync.WaitGroup

	wg.Add(1)
	go func() { // the writer
		defer wg.Done()
		defer stop.Store(true)
		r := rand.New(rand.NewPCG(5, 5))
		epoch := 0
		for i := 0; i < 600; i++ {
			start, end := l.StartOffset(), l.EndOffset()
			switch op := r.IntN(20); {
			case op < 2:
				to := max(0, start-5+r.Int64N(end-start+6))
				if err := l.TruncateTo(to); err != nil {
					t.Errorf("TruncateTo(%d): %v", to, err)
					return
				}
				epoch++
				h := append(append([]doneTruncation(nil), *history.Load()...), doneTruncation{epoch: epoch, cut: l.EndOffset()})
				history.Store(&h)
			case op < 3:
				to := start + r.Int64N(end-start+1)
				if _, err := l.DeleteBefore(to); err != nil {
					t.Errorf("DeleteBefore(%d): %v", to, err)
					return
				}
			default:
				if _, err := l.Append(epochRecords(end, 1+r.IntN(3), epoch)...); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		}
	}()

	// check fails the test for a record that is damaged or was removed by
	// a truncation in seen (those that returned before it was asked for).
	check := func(what string, seen []doneTruncation, off int64, key, value []byte) {
		if !bytes.Equal(value, crashValue(off, len(value))) {
			t.Errorf("%s: offset %d holds a value never written there", what, off)
		}
		if e := epochOf(t, key); removedBy(seen, e, off) {
			t.Errorf("%s: offset %d of epoch %d, removed by a truncation that had returned", what, off, e)
		}
	}
	allowed := func(what string, err error, more ...error) {
		if err == nil || errors.Is(err, ErrTruncated) || errors.Is(err, ErrOffsetOutOfRange) {
			return
		}
		for _, m := range more {
			if errors.Is(err, m) {
				return
			}
		}
		t.Errorf("%s: %v", what, err)
	}

	wg.Add(3)
	go func() { // iterations
		defer wg.Done()
		for !stop.Load() {
			seen, start := *history.Load(), l.StartOffset()
			for r, err := range l.Records(start) {
				if err != nil {
					allowed("Records", err)
					break
				}
				check("Records", seen, r.Offset, r.Key, r.Value)
				if r.Offset < start {
					t.Errorf("Records: offset %d below the start %d that retention had set", r.Offset, start)
				}
				// Before the iterator makes the next record.
				seen, start = *history.Load(), l.StartOffset()
			}
		}
	}()
	go func() { // fetches
		defer wg.Done()
		var it record.Iterator
		for !stop.Load() {
			seen := *history.Load()
			start, end := l.StartOffset(), l.EndOffset()
			if end < start {
				// Two loads, not one snapshot: a truncation below the
				// start came between them.
				continue
			}
			off := start + rand.Int64N(end-start+1)
			s, err := l.Read(off, 1<<10, ReadOptions{})
			if err != nil {
				allowed(fmt.Sprintf("Read(%d)", off), err)
				continue
			}
			buf := make([]byte, s.Len())
			_, err = s.ReadAt(buf, 0)
			s.Close()
			if err != nil {
				allowed(fmt.Sprintf("ReadAt of Read(%d)", off), err)
				continue
			}
			for len(buf) > 0 {
				size, _, err := record.PeekEntry(buf)
				if err != nil || size > len(buf) {
					t.Errorf("Read(%d): not a whole batch: %v", off, err)
					break
				}
				b := record.Batch(buf[:size])
				if err := b.Validate(); err != nil {
					t.Errorf("Read(%d): %v", off, err)
					break
				}
				if err := it.Reset(b); err != nil {
					t.Errorf("Read(%d): %v", off, err)
					break
				}
				for it.Next() {
					r := it.Record()
					check("Read", seen, r.Offset, r.Key, r.Value)
				}
				buf = buf[size:]
			}
		}
	}()
	go func() { // time lookups: timestamps grow with the offset
		defer wg.Done()
		for !stop.Load() {
			start, end := l.StartOffset(), l.EndOffset()
			if end < start { // as in the fetches
				continue
			}
			want := start + rand.Int64N(end-start+1)
			got, err := l.OffsetForTime(1_700_000_000_000 + want)
			allowed("OffsetForTime", err, ErrTimestampNotFound)
			if err == nil && got < want {
				t.Errorf("OffsetForTime(ts of %d) = %d", want, got)
			}
		}
	}()
	wg.Wait()
}
