package seglog

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs"
)

// truncOptions rolls segments every few batches, so truncations and
// retention cross segment boundaries.
func truncOptions(fs vfs.FS, sync SyncMode) Options {
	return Options{
		FS: fs,
		LogConfig: LogConfig{
			SegmentBytes:       2048,
			IndexIntervalBytes: 256,
			MaxIndexBytes:      1024,
			Sync:               sync,
		},
		Logger: discardLogger(),
	}
}

// epochRecords returns n records for offsets base.., tagged with epoch in
// their keys: after a truncation the same offsets are written again under a
// new epoch, and a reader can tell which write it sees.
func epochRecords(base int64, n, epoch int) []record.Record {
	recs := make([]record.Record, n)
	for j := range recs {
		off := base + int64(j)
		recs[j] = record.Record{
			Key:       []byte(fmt.Sprintf("e%d", epoch)),
			Value:     crashValue(off, 10+int(off%40)),
			Timestamp: 1_700_000_000_000 + off,
		}
	}
	return recs
}

// appendEach appends n single-record batches tagged with epoch.
func appendEach(t *testing.T, l *Log, n, epoch int) {
	t.Helper()
	for i := 0; i < n; i++ {
		end := l.EndOffset()
		info, err := l.Append(epochRecords(end, 1, epoch)...)
		if err != nil {
			t.Fatalf("append at %d: %v", end, err)
		}
		if info.FirstOffset != end {
			t.Fatalf("appended at %d, end was %d", info.FirstOffset, end)
		}
	}
}

// readKeys returns the keys of every record from the start, checking that
// offsets run contiguously and values belong to their offsets.
func readKeys(t *testing.T, l *Log) []string {
	t.Helper()
	var keys []string
	next := l.StartOffset()
	for r, err := range l.Records(l.StartOffset()) {
		if err != nil {
			t.Fatalf("Records at %d: %v", next, err)
		}
		if r.Offset != next {
			t.Fatalf("offset %d follows %d", r.Offset, next-1)
		}
		if !bytes.Equal(r.Value, crashValue(r.Offset, len(r.Value))) {
			t.Fatalf("offset %d holds a value never written there", r.Offset)
		}
		keys = append(keys, string(r.Key))
		next++
	}
	if next != l.EndOffset() {
		t.Fatalf("read up to %d, end %d", next, l.EndOffset())
	}
	return keys
}

// TestTruncateBelowStartSurvivesCrash is issue 10's case 6: DeleteBefore
// (500), TruncateTo(300), 100 acknowledged appends, power loss. The old
// log start (500) must not survive the truncation, or the next Open finds
// every segment below it and deletes them all.
func TestTruncateBelowStartSurvivesCrash(t *testing.T) {
	mem := vfs.NewMem()
	l, err := Open("/t", truncOptions(mem, SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	for l.EndOffset() < 600 {
		if _, err := l.Append(epochRecords(l.EndOffset(), 5, 0)...); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.DeleteBefore(500); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(300); err != nil {
		t.Fatal(err)
	}
	if l.StartOffset() != 300 || l.EndOffset() != 300 {
		t.Fatalf("after TruncateTo(300) below the start 500: [%d, %d), want [300, 300)", l.StartOffset(), l.EndOffset())
	}
	appendEach(t, l, 100, 1)
	crashed := mem.CrashClone()
	l.Close()
	l, err = Open("/t", truncOptions(crashed, SyncAlways))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.StartOffset() != 300 || l.EndOffset() != 400 {
		t.Fatalf("after the crash: [%d, %d), want the 100 acknowledged records [300, 400)", l.StartOffset(), l.EndOffset())
	}
	for i, k := range readKeys(t, l) {
		if k != "e1" {
			t.Fatalf("offset %d: key %q, want e1", 300+i, k)
		}
	}
}

// TestTruncateBelowStartRestartsExactly: TruncateTo below the start
// restarts the log at the offset given, even where a batch holding that
// offset survives in a segment retention kept.
func TestTruncateBelowStartRestartsExactly(t *testing.T) {
	filesystems(t, func(t *testing.T, fs vfs.FS, dir string) {
		opts := truncOptions(fs, SyncNone)
		opts.SegmentBytes = 1 << 20 // one segment holds 33 and 55
		l, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		for l.EndOffset() < 100 {
			if _, err := l.Append(epochRecords(l.EndOffset(), 10, 0)...); err != nil { // batches [0,9], [10,19], ...
				t.Fatal(err)
			}
		}
		if _, err := l.DeleteBefore(55); err != nil {
			t.Fatal(err)
		}
		if err := l.TruncateTo(33); err != nil {
			t.Fatal(err)
		}
		if l.StartOffset() != 33 || l.EndOffset() != 33 {
			t.Fatalf("TruncateTo(33) below the start 55: [%d, %d), want [33, 33)", l.StartOffset(), l.EndOffset())
		}
		if info, err := l.Append(epochRecords(33, 2, 1)...); err != nil || info.FirstOffset != 33 {
			t.Fatalf("append after the truncation: %+v, %v; want it at 33", info, err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if l, err = Open(dir, opts); err != nil {
			t.Fatal(err)
		}
		if l.StartOffset() != 33 || l.EndOffset() != 35 {
			t.Fatalf("reopened: [%d, %d), want [33, 35)", l.StartOffset(), l.EndOffset())
		}
		if keys := readKeys(t, l); len(keys) != 2 || keys[0] != "e1" {
			t.Fatalf("reopened: keys %v", keys)
		}
	})
}

// TestRecordsAcrossTruncation is issue 10's case 6 for readers: an
// iteration that a truncation overtakes must neither yield the removed
// records after the truncation returned nor call the healthy log corrupt.
// It ends with ErrTruncated when the truncation removed its position or a
// record it already yielded, and otherwise goes on with the new data.
func TestRecordsAcrossTruncation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		to       int64 // TruncateTo after reading 5 records from 0
		wantErr  bool
		wantKeys int // records of epoch 1 the iteration goes on to yield
	}{
		{name: "below the position", to: 2, wantErr: true},
		{name: "below the start", to: 0, wantErr: true},
		{name: "at the position", to: 5, wantKeys: 40},
		{name: "ahead of the position", to: 30, wantKeys: 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := vfs.NewMem()
			l, err := Open("/r", truncOptions(mem, SyncNone))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			appendEach(t, l, 60, 0)
			if tc.name == "below the start" {
				if _, err := l.DeleteBefore(3); err != nil {
					t.Fatal(err)
				}
			}
			from := l.StartOffset()
			var got []record.Record
			var iterErr error
			for r, err := range l.Records(from) {
				if err != nil {
					iterErr = err
					break
				}
				got = append(got, record.Record{Offset: r.Offset, Key: bytes.Clone(r.Key)})
				if len(got) == 5 {
					if err := l.TruncateTo(tc.to); err != nil {
						t.Fatal(err)
					}
					// The new appends overwrite the bytes the iterator
					// was about to read.
					appendEach(t, l, int(from+45-l.EndOffset()), 1)
				}
			}
			fresh := 0
			for i, r := range got {
				if r.Offset != from+int64(i) {
					t.Fatalf("record %d has offset %d", i, r.Offset)
				}
				if i >= 5 && r.Offset >= tc.to && string(r.Key) != "e1" {
					t.Fatalf("offset %d after the truncation returned: key %q, a removed record", r.Offset, r.Key)
				}
				if string(r.Key) == "e1" {
					fresh++
				}
			}
			if errors.Is(iterErr, ErrCorrupt) {
				t.Fatalf("healthy log reported corrupt: %v", iterErr)
			}
			if tc.wantErr {
				if !errors.Is(iterErr, ErrTruncated) || len(got) != 5 {
					t.Fatalf("got %d records, then %v; want 5, then ErrTruncated", len(got), iterErr)
				}
				return
			}
			if iterErr != nil {
				t.Fatalf("iteration across a truncation above its position: %v", iterErr)
			}
			if fresh != tc.wantKeys || got[len(got)-1].Offset != from+44 {
				t.Fatalf("%d records of the new data, up to offset %d; want %d, up to %d", fresh, got[len(got)-1].Offset, tc.wantKeys, from+44)
			}
		})
	}
}

// TestSliceAcrossTruncation: a Slice that a later truncation cut into
// refuses to hand out its bytes (ReadAt and WriteTo both fail with
// ErrSliceTruncated, which matches ErrTruncated), even once new appends
// have filled the same file positions; a Slice wholly below the cut keeps
// its bytes.
func TestSliceAcrossTruncation(t *testing.T) {
	l, err := Open("/s", truncOptions(vfs.NewMem(), SyncNone))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendEach(t, l, 20, 0)
	low, err := l.Read(0, 1, ReadOptions{}) // one batch: offset 0
	if err != nil {
		t.Fatal(err)
	}
	defer low.Close()
	cut, err := l.Read(10, 1<<20, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer cut.Close()
	lowBytes := make([]byte, low.Len())
	if _, err := low.ReadAt(lowBytes, 0); err != nil {
		t.Fatal(err)
	}
	if err := l.TruncateTo(12); err != nil {
		t.Fatal(err)
	}
	appendEach(t, l, 8, 1)
	buf := make([]byte, cut.Len())
	if _, err := cut.ReadAt(buf, 0); !errors.Is(err, ErrSliceTruncated) || !errors.Is(err, ErrTruncated) {
		t.Fatalf("ReadAt of a slice cut by a truncation: %v, want ErrSliceTruncated", err)
	}
	if _, err := cut.WriteTo(&bytes.Buffer{}); !errors.Is(err, ErrSliceTruncated) {
		t.Fatalf("WriteTo of a slice cut by a truncation: %v, want ErrSliceTruncated", err)
	}
	again := make([]byte, low.Len())
	if _, err := low.ReadAt(again, 0); err != nil || !bytes.Equal(again, lowBytes) {
		t.Fatalf("slice below the cut: %v, bytes equal %v", err, bytes.Equal(again, lowBytes))
	}
}

// blockTruncate returns a filesystem on which the first File.Truncate of
// a .log file waits until release is closed, and a channel closed when it
// starts waiting: a truncation caught half-way.
func blockTruncate(fs vfs.FS) (vfs.FS, chan struct{}, <-chan struct{}) {
	release, waiting := make(chan struct{}), make(chan struct{})
	var once sync.Once
	return vfs.Inject(fs, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpTruncate && filepath.Ext(op.Path) == ".log" {
			once.Do(func() {
				close(waiting)
				<-release
			})
		}
		return nil
	})), release, waiting
}

// TestReadersDuringTruncation: readers that start while a TruncateTo is
// cutting the file they read (its new size published, the file not yet
// shrunk) neither report damage nor return removed records: Read of a
// removed offset ends ErrOffsetOutOfRange once the truncation is done, an
// iteration standing on a removed offset ends with ErrTruncated, and a
// time lookup answers from the truncated log.
func TestReadersDuringTruncation(t *testing.T) {
	fs, release, waiting := blockTruncate(vfs.NewMem())
	opts := truncOptions(fs, SyncNone)
	opts.SegmentBytes = 1 << 20
	l, err := Open("/d", opts)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	appendEach(t, l, 40, 0)
	// An iteration that has read offsets 0..24 when the truncation begins.
	next, stopIter := iter.Pull2(l.Records(0))
	defer stopIter()
	for i := 0; i < 25; i++ {
		if _, err, ok := next(); err != nil || !ok {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	truncated := make(chan error, 1)
	go func() { truncated <- l.TruncateTo(20) }()
	<-waiting
	type result struct {
		what string
		err  error
	}
	results := make(chan result, 3)
	go func() {
		s, err := l.Read(30, 1<<20, ReadOptions{})
		if err == nil {
			err = fmt.Errorf("a slice of [%d, %d]", s.FirstOffset(), s.LastOffset())
			s.Close()
		}
		results <- result{"Read(30)", err}
	}()
	go func() {
		off, err := l.OffsetForTime(1_700_000_000_000 + 30)
		if err == nil {
			err = fmt.Errorf("offset %d", off)
		}
		results <- result{"OffsetForTime", err}
	}()
	go func() {
		r, err, ok := next()
		if ok && err == nil {
			err = fmt.Errorf("offset %d", r.Offset)
		}
		results <- result{"Records", err}
	}()
	// Release the truncation only once all three readers wait on it
	// inside their calls: had they started after it, the outcome would be
	// the same, and the test would prove nothing about readers during one.
	// settle and settled: the prefix names both waits.
	testutil.WaitBlocked(t, "the three readers wait on the truncation under way", "seglog.(*truncationLog).settle", 3)
	close(release)
	if err := <-truncated; err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r := <-results
		var want error
		switch r.what {
		case "Read(30)":
			want = ErrOffsetOutOfRange
		case "OffsetForTime":
			want = ErrTimestampNotFound
		case "Records":
			want = ErrTruncated
		}
		if !errors.Is(r.err, want) {
			t.Errorf("%s during a truncation to 20: %v, want %v", r.what, r.err, want)
		}
	}
}

// TestRecordsAcrossRetention: an iteration that DeleteBefore overtakes ends
// with ErrOffsetOutOfRange at the first record below the new start instead
// of yielding it from the segment it still holds; one that retention stays
// behind goes on to the end.
func TestRecordsAcrossRetention(t *testing.T) {
	for _, tc := range []struct {
		to      int64
		wantErr bool
	}{{to: 30, wantErr: true}, {to: 5, wantErr: false}, {to: 3, wantErr: false}} {
		t.Run(fmt.Sprint(tc.to), func(t *testing.T) {
			l, err := Open("/ret", truncOptions(vfs.NewMem(), SyncNone))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			appendEach(t, l, 60, 0)
			var got []int64
			var iterErr error
			for r, err := range l.Records(0) {
				if err != nil {
					iterErr = err
					break
				}
				got = append(got, r.Offset)
				if len(got) == 5 {
					if _, err := l.DeleteBefore(tc.to); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tc.wantErr {
				if !errors.Is(iterErr, ErrOffsetOutOfRange) || len(got) != 5 {
					t.Fatalf("DeleteBefore(%d) at 5: %d records, then %v; want 5, then ErrOffsetOutOfRange", tc.to, len(got), iterErr)
				}
				return
			}
			if iterErr != nil || len(got) != 60 {
				t.Fatalf("DeleteBefore(%d) at 5: %d records, then %v; want all 60", tc.to, len(got), iterErr)
			}
		})
	}
}

// blockReads returns a filesystem on which, once armed, the first read of
// a .log file waits until release is closed, and a channel closed when it
// starts waiting: a reader caught half-way.
func blockReads(fs vfs.FS) (vfs.FS, *atomic.Bool, chan struct{}, <-chan struct{}) {
	var armed atomic.Bool
	release, waiting := make(chan struct{}), make(chan struct{})
	return vfs.Inject(fs, vfs.InjectorFunc(func(op vfs.Op) error {
		if op.Kind == vfs.OpRead && filepath.Ext(op.Path) == ".log" && armed.CompareAndSwap(true, false) {
			close(waiting)
			<-release
		}
		return nil
	})), &armed, release, waiting
}

// TestLookupsOvertakenByTruncation: a Read or OffsetForTime that has
// picked its segment when a TruncateTo removes what it was about to
// return, and resumes only after the truncation returned, does not return
// it: it starts over against the truncated log. An iteration whose
// position was removed that way ends with ErrTruncated.
func TestLookupsOvertakenByTruncation(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(l *Log) error
		want error
	}{
		{"Read", func(l *Log) error {
			s, err := l.Read(30, 1<<20, ReadOptions{})
			if err == nil {
				defer s.Close()
				return fmt.Errorf("a slice of [%d, %d]", s.FirstOffset(), s.LastOffset())
			}
			return err
		}, ErrOffsetOutOfRange},
		{"OffsetForTime", func(l *Log) error {
			off, err := l.OffsetForTime(1_700_000_000_000 + 30)
			if err == nil {
				return fmt.Errorf("offset %d", off)
			}
			return err
		}, ErrTimestampNotFound},
		{"Records", func(l *Log) error {
			for r, err := range l.Records(25) {
				if err == nil {
					return fmt.Errorf("offset %d", r.Offset)
				}
				return err
			}
			return errors.New("no record and no error")
		}, ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, armed, release, waiting := blockReads(vfs.NewMem())
			opts := truncOptions(fs, SyncNone)
			opts.SegmentBytes = 1 << 20
			l, err := Open("/o", opts)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			appendEach(t, l, 40, 0)
			armed.Store(true)
			result := make(chan error, 1)
			go func() { result <- tc.call(l) }()
			<-waiting
			if err := l.TruncateTo(20); err != nil {
				t.Fatal(err)
			}
			close(release)
			if err := <-result; !errors.Is(err, tc.want) {
				t.Fatalf("%s overtaken by TruncateTo(20): %v, want %v", tc.name, err, tc.want)
			}
		})
	}
}
