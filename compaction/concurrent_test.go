package compaction

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/fsck/fscktest"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// valueAt is the value written at an offset, so a reader can tell a
// record from one never written there.
func valueAt(off int64) []byte { return strconv.AppendInt([]byte("value-"), off, 10) }

// TestConcurrentReadersAndAppends runs compaction rounds while one
// goroutine appends and others read records and slices from the start:
// every record read was written at its offset, offsets only go up, and
// nothing below the checkpoint that survives compaction is skipped (the
// last value of every key is seen by a full read after the rounds).
func TestConcurrentReadersAndAppends(t *testing.T) {
	fsys := vfs.NewMem()
	l := openTestLog(t, fsys)
	defer fscktest.CheckCleanAtEnd(t, fsys, "/log")
	defer l.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var appended atomic.Int64
	errs := make(chan error, 8)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
		cancel()
	}
	wg.Add(1)
	go func() { // appender
		defer wg.Done()
		for i := 0; ctx.Err() == nil && i < 3000; i++ {
			end := l.EndOffset()
			recs := make([]record.Record, 3)
			for j := range recs {
				recs[j] = record.Record{Key: fmt.Appendf(nil, "k%d", (i*3+j)%50), Value: valueAt(end + int64(j))}
			}
			if _, err := l.Append(recs...); err != nil {
				report(err)
				return
			}
			appended.Add(3)
		}
	}()
	for range 2 {
		wg.Add(1)
		go func() { // records reader
			defer wg.Done()
			for ctx.Err() == nil {
				prev := int64(-1)
				for r, err := range l.Records(0) {
					if err != nil {
						report(err)
						return
					}
					if r.Offset <= prev || !bytes.Equal(r.Value, valueAt(r.Offset)) {
						report(fmt.Errorf("read offset %d (after %d) value %q", r.Offset, prev, r.Value))
						return
					}
					prev = r.Offset
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // slice reader
		defer wg.Done()
		for ctx.Err() == nil {
			off := int64(0)
			for ctx.Err() == nil && off < l.EndOffset() {
				sl, err := l.Read(off, 4096, seglog.ReadOptions{})
				if err != nil {
					report(err)
					return
				}
				if sl.Len() == 0 {
					sl.Close()
					break
				}
				data, err := io.ReadAll(io.NewSectionReader(sl, 0, sl.Len()))
				sl.Close()
				if err != nil {
					report(err)
					return
				}
				for len(data) >= record.HeaderSize {
					b := record.Batch(data)
					if b.Size() > len(data) {
						report(fmt.Errorf("slice at %d: partial batch", off))
						return
					}
					b = b[:b.Size()]
					if err := b.Validate(); err != nil {
						report(fmt.Errorf("slice at %d: %w", off, err))
						return
					}
					off = max(off, b.NextOffset())
					data = data[b.Size():]
				}
			}
		}
	}()

	om := NewOffsetMap(1<<14, 0)
	checkpoint := int64(0)
	rounds, removed := 0, int64(0)
	for ctx.Err() == nil && appended.Load() < 9000 {
		res, err := Clean(l, om, checkpoint, l.EndOffset(), Options{})
		if err != nil {
			report(err)
			break
		}
		checkpoint, removed = res.End, removed+res.RecordsRemoved
		rounds++
	}
	cancel()
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	if rounds < 2 || removed == 0 {
		t.Fatalf("%d rounds removed %d records", rounds, removed)
	}
	// Every key's last value is still there.
	last := map[string][]byte{}
	for r, err := range l.Records(0) {
		if err != nil {
			t.Fatal(err)
		}
		last[string(r.Key)] = bytes.Clone(r.Value)
	}
	if len(last) != 50 {
		t.Fatalf("%d keys left, want 50", len(last))
	}
}
