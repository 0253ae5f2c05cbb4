package segment

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/seglog/seglog/record"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestAppendDeferred: deferred batches are invisible until WriteDeferred,
// then exactly as if appended one by one — same .log bytes, same index
// files — whatever the mix of deferred and direct appends.
func TestAppendDeferred(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		opts := Options{IndexIntervalBytes: 200, MaxIndexBytes: 1 << 14}
		dirA, dirB := filepath.Join(e.dir, "direct"), filepath.Join(e.dir, "deferred")
		for _, d := range []string{dirA, dirB} {
			if err := e.fs.MkdirAll(d); err != nil {
				t.Fatal(err)
			}
		}
		direct, err := Create(e.fs, dirA, 0, opts)
		if err != nil {
			t.Fatal(err)
		}
		deferred, err := Create(e.fs, dirB, 0, opts)
		if err != nil {
			t.Fatal(err)
		}
		g1, g2 := newGen(3, 0, 300), newGen(3, 0, 300)
		m := &model{}
		for i := 0; i < 200; i++ {
			b1, b2 := g1.batch(t), g2.batch(t)
			if err := direct.Append(record.Batch(b1.bytes)); err != nil {
				t.Fatal(err)
			}
			m.batches = append(m.batches, b1)
			sizeBefore, nextBefore := deferred.Size(), deferred.NextOffset()
			switch i % 7 {
			case 0, 1, 2, 3:
				if err := deferred.AppendDeferred(record.Batch(b2.bytes)); err != nil {
					t.Fatal(err)
				}
				if deferred.Size() != sizeBefore || deferred.NextOffset() != nextBefore {
					t.Fatalf("batch %d: a deferred append was published", i)
				}
				if _, ok, err := deferred.FindPosition(b2.last); err != nil || ok {
					t.Fatalf("batch %d: deferred batch found before it was written (%v)", i, err)
				}
			case 4:
				if err := deferred.Append(record.Batch(b2.bytes)); err != nil { // writes pending first
					t.Fatal(err)
				}
			default:
				if err := deferred.AppendDeferred(record.Batch(b2.bytes)); err != nil {
					t.Fatal(err)
				}
				if err := deferred.WriteDeferred(); err != nil {
					t.Fatal(err)
				}
				if bp, ok, err := deferred.FindPosition(b2.last); err != nil || !ok || bp.LastOffset != b2.last {
					t.Fatalf("batch %d: not found after WriteDeferred: %+v %v %v", i, bp, ok, err)
				}
			}
		}
		if err := deferred.Seal(); err != nil { // writes what is pending
			t.Fatal(err)
		}
		if err := direct.Seal(); err != nil {
			t.Fatal(err)
		}
		for _, suffix := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
			a := vfstest.ReadFile(t, e.fs, filepath.Join(dirA, FileName(0, suffix)))
			b := vfstest.ReadFile(t, e.fs, filepath.Join(dirB, FileName(0, suffix)))
			if !bytes.Equal(a, b) {
				t.Fatalf("%s differs between deferred and direct appends (%d vs %d bytes)", suffix, len(b), len(a))
			}
		}
		direct.Close()
		deferred.Close()
	})
}
