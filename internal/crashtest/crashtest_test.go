package crashtest_test

import (
	"math/rand/v2"
	"testing"

	"github.com/seglog/seglog/internal/crashtest"
	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// TestRecorder: nothing is recorded disarmed; armed, every operation is
// cloned with (a copy of) the state as it stood, the even ones torn; Take
// drains.
func TestRecorder(t *testing.T) {
	mem := vfs.NewMem()
	rec := crashtest.New(mem, []int{0}, func(s []int) []int { return append([]int(nil), s...) },
		crashtest.Options{Rand: rand.New(rand.NewPCG(1, 2)), TornStream: 3, KeepUnsynced: 1})
	fs := vfs.Inject(mem, rec)
	vfstest.WriteFile(t, fs, "/a", []byte("synced"))
	if p := rec.Take(); len(p) != 0 {
		t.Fatalf("%d points recorded disarmed", len(p))
	}
	rec.Arm(true)
	for i := 1; i <= 4; i++ {
		rec.With(func(s *[]int) { (*s)[0] = i })
		if err := fs.MkdirAll("/d"); err != nil {
			t.Fatal(err)
		}
	}
	rec.Arm(false)
	if err := fs.MkdirAll("/e"); err != nil {
		t.Fatal(err)
	}
	points := rec.Take()
	if len(points) != 4 {
		t.Fatalf("%d points for 4 operations", len(points))
	}
	for i, p := range points {
		if p.N != int64(i+1) || p.State[0] != i+1 || p.Torn != (p.N%2 == 0) || p.Op.Kind != vfs.OpMkdirAll {
			t.Errorf("point %d: n %d state %v torn %v op %v", i, p.N, p.State, p.Torn, p.Op)
		}
	}
	if p := rec.Take(); len(p) != 0 {
		t.Fatalf("Take left %d points", len(p))
	}
}

// TestRecorderChance: with a Chance, only some operations are cloned, but
// every one is counted.
func TestRecorderChance(t *testing.T) {
	mem := vfs.NewMem()
	rec := crashtest.New(mem, 0, nil, crashtest.Options{Rand: rand.New(rand.NewPCG(1, 2)), Chance: 0.25})
	fs := vfs.Inject(mem, rec)
	rec.Arm(true)
	const ops = 400
	for range ops {
		if err := fs.MkdirAll("/d"); err != nil {
			t.Fatal(err)
		}
	}
	points := rec.Take()
	if len(points) < ops/8 || len(points) > ops/2 {
		t.Fatalf("%d of %d operations cloned at a chance of 1/4", len(points), ops)
	}
	if last := points[len(points)-1].N; last > ops {
		t.Fatalf("operation numbered %d of %d", last, ops)
	}
}
