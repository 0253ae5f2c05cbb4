package segment

import (
	"bytes"
	"testing"

	"github.com/seglog/seglog/index"
)

// logOpen reports whether the segment's .log descriptor is open now.
func logOpen(s *Segment) bool { return s.lazy != nil && s.lazy.IsOpen() }

// TestFileCacheClosesOnlySyncedSealed: under a FileCache of one, a segment
// written here keeps its .log open while active and once sealed until a
// Flush covered its writes (a write-back error is only reported through
// the descriptors open when it happened), then closes for a newer one, and
// reads reopen it with the same bytes. Unsealing and Remove hold it open.
func TestFileCacheClosesOnlySyncedSealed(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{FileCache: index.NewCache(1)}
		a := mustCreate(t, e, 0, opts)
		defer a.Close()
		var ma model
		g := newGen(1, 0, 200)
		appendN(t, a, &ma, g, 20)
		if err := a.Seal(); err != nil {
			t.Fatal(err)
		}
		// Two other sealed segments, opened from disk and read.
		var others []*Segment
		for i, base := range []int64{1000, 2000} {
			s := mustCreate(t, e, base, Options{})
			var m model
			appendN(t, s, &m, newGen(uint64(i+2), base, 50), 5)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			o, err := Open(e.fs, e.dir, base, false, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer o.Close()
			others = append(others, o)
		}
		readOthers := func() {
			t.Helper()
			for _, o := range others {
				if _, err := o.ReadAt(make([]byte, 10), 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		readOthers()
		if !logOpen(a) {
			t.Fatal("a sealed segment was closed before a sync covered its writes")
		}
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		readOthers()
		if logOpen(a) {
			t.Fatal("a synced sealed segment kept its descriptor past the bound")
		}
		// Reads reopen it, with its bytes.
		for _, mb := range ma.batches {
			p := make([]byte, mb.size)
			if _, err := a.ReadAt(p, mb.pos); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(p, mb.bytes) {
				t.Fatalf("batch at %d reads other bytes after a reopen", mb.pos)
			}
		}
		// Unsealed (a truncation into it), it stays open whatever is read.
		if err := a.Unseal(); err != nil {
			t.Fatal(err)
		}
		readOthers()
		if !logOpen(a) {
			t.Fatal("an unsealed segment's descriptor was closed")
		}
		if _, err := a.TruncateTo(ma.batches[10].base); err != nil {
			t.Fatal(err)
		}
		appendN(t, a, &ma, g, 1) // appends where the truncation left the end
		if err := a.Seal(); err != nil {
			t.Fatal(err)
		}
		if err := a.Flush(); err != nil {
			t.Fatal(err)
		}
		readOthers()
		// Removed, it is held open for the readers that keep it alive, and
		// still reads from its renamed file.
		if !a.Acquire() {
			t.Fatal("acquire")
		}
		if err := a.Remove(); err != nil {
			t.Fatal(err)
		}
		readOthers()
		if !logOpen(a) {
			t.Fatal("a removed segment's descriptor was closed under its reader")
		}
		mb := ma.batches[0]
		p := make([]byte, mb.size)
		if _, err := a.ReadAt(p, mb.pos); err != nil || !bytes.Equal(p, mb.bytes) {
			t.Fatalf("removed segment read: %v", err)
		}
		a.Release()
	})
}
