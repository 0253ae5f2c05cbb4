package segment

import "testing"

// TestLastBatchWithin compares the position-cut lookup with a walk over the
// model for every starting batch and many limits, on an active and a
// sealed segment.
func TestLastBatchWithin(t *testing.T) {
	envs(t, func(t *testing.T, e env) {
		s, err := Create(e.fs, e.dir, 0, Options{IndexIntervalBytes: 300, MaxIndexBytes: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		m := &model{}
		appendN(t, s, m, newGen(7, 0, 400), 120)
		check := func(label string) {
			for i, first := range m.batches {
				for _, extra := range []int64{0, 1, 60, 299, 300, 1000, 5000, 1 << 30} {
					limit := first.pos + first.size + extra
					want, wantOK := mbatch{}, false
					for _, b := range m.batches[i:] {
						if b.pos+b.size <= limit {
							want, wantOK = b, true
						}
					}
					got, ok, err := s.LastBatchWithin(first.pos, limit)
					if err != nil {
						t.Fatal(err)
					}
					if ok != wantOK || (ok && (got.Position != want.pos || got.LastOffset != want.last)) {
						t.Fatalf("%s: LastBatchWithin(%d, %d) = %+v %v; want batch at %d (last %d) %v",
							label, first.pos, limit, got, ok, want.pos, want.last, wantOK)
					}
				}
			}
		}
		check("active")
		if err := s.Seal(); err != nil {
			t.Fatal(err)
		}
		check("sealed")
	})
}
