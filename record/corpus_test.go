package record

import (
	"path/filepath"
	"testing"
)

// TestCorpusBatches parses every batch a real Kafka client produced and
// checks it yields exactly the records the generator logged.
func TestCorpusBatches(t *testing.T) {
	for _, c := range Codecs {
		t.Run(c.String(), func(t *testing.T) {
			want := loadRecords(t, c.String())
			batches := splitEntries(t, readFile(t, filepath.Join(corpusDir, c.String()+".batches")))
			i, compressed := 0, 0
			for bi, b := range batches {
				if err := b.Validate(); err != nil {
					t.Fatalf("batch %d: %v", bi, err)
				}
				// franz-go sends a batch uncompressed when compressing
				// would not shrink it.
				if b.Codec() != c && b.Codec() != None {
					t.Fatalf("batch %d: codec %v, want %v", bi, b.Codec(), c)
				}
				if b.Codec() == c {
					compressed++
				}
				if err := ValidateProducerBatch(b, DefaultMaxBatchSize); err != nil {
					t.Errorf("batch %d: producer batch refused: %v", bi, err)
				}
				recs, err := decodeAll(b)
				if err != nil {
					t.Fatalf("batch %d: %v", bi, err)
				}
				if len(recs) != int(b.NumRecords()) {
					t.Fatalf("batch %d: %d records, header says %d", bi, len(recs), b.NumRecords())
				}
				for j, r := range recs {
					if r.Offset != int64(j) {
						t.Errorf("batch %d record %d: offset %d", bi, j, r.Offset)
					}
					if i >= len(want) {
						t.Fatalf("more records than the %d logged", len(want))
					}
					if d := diffRecord(r, want[i].Record); d != "" {
						t.Fatalf("batch %d record %d (#%d): %s", bi, j, i, d)
					}
					i++
				}
			}
			if i != len(want) {
				t.Fatalf("%d records in batches, %d logged", i, len(want))
			}
			if compressed == 0 {
				t.Fatalf("no batch uses %v", c)
			}
		})
	}
}

// TestCorpusBrokerLog walks the broker's stored log: offsets assigned in
// sequence, data records matching the log in order, and for zstd the
// transaction markers: an ABORT after every aborted transaction's records
// and a COMMIT after the others.
func TestCorpusBrokerLog(t *testing.T) {
	for _, c := range Codecs {
		t.Run(c.String(), func(t *testing.T) {
			want := loadRecords(t, c.String())
			batches := splitEntries(t, readFile(t, filepath.Join(corpusDir, c.String()+".broker-log")))
			var it Iterator
			next := int64(0)
			i := 0
			pending := map[int64][]bool{} // producer id -> aborted flags of its open transaction
			markers := map[ControlType]int{}
			for bi, b := range batches {
				if err := b.Validate(); err != nil {
					t.Fatalf("batch %d: %v", bi, err)
				}
				if b.BaseOffset() != next {
					t.Fatalf("batch %d: base offset %d, want %d", bi, b.BaseOffset(), next)
				}
				next = b.NextOffset()
				if err := it.Reset(b); err != nil {
					t.Fatalf("batch %d: %v", bi, err)
				}
				n := 0
				for it.Next() {
					r := it.Record()
					n++
					if r.Offset < b.BaseOffset() || r.Offset > b.LastOffset() {
						t.Fatalf("batch %d: record offset %d outside [%d, %d]", bi, r.Offset, b.BaseOffset(), b.LastOffset())
					}
					if b.IsControl() {
						m, err := ParseMarker(r)
						if err != nil {
							t.Fatalf("batch %d: %v", bi, err)
						}
						markers[m.Type]++
						flags := pending[b.ProducerID()]
						if len(flags) == 0 {
							t.Fatalf("batch %d: %v marker with no open transaction", bi, m.Type)
						}
						for _, aborted := range flags {
							if aborted != (m.Type == ControlAbort) {
								t.Fatalf("batch %d: %v marker closes a transaction with aborted=%v records", bi, m.Type, aborted)
							}
						}
						delete(pending, b.ProducerID())
						continue
					}
					if i >= len(want) {
						t.Fatalf("more records than the %d logged", len(want))
					}
					if d := diffRecord(r, want[i].Record); d != "" {
						t.Fatalf("batch %d (#%d): %s", bi, i, d)
					}
					if b.IsTransactional() {
						pending[b.ProducerID()] = append(pending[b.ProducerID()], want[i].Aborted)
					} else if want[i].Aborted {
						t.Fatalf("record #%d aborted outside a transaction", i)
					}
					i++
				}
				if err := it.Err(); err != nil {
					t.Fatalf("batch %d: %v", bi, err)
				}
				if n != int(b.NumRecords()) {
					t.Fatalf("batch %d: %d records, header says %d", bi, n, b.NumRecords())
				}
			}
			if i != len(want) {
				t.Fatalf("%d data records in log, %d logged", i, len(want))
			}
			if c == Zstd {
				if markers[ControlAbort] == 0 || markers[ControlCommit] == 0 {
					t.Fatalf("markers %v, want both COMMIT and ABORT", markers)
				}
				if len(pending) != 0 {
					t.Fatalf("transactions left open: %v", pending)
				}
			} else if len(markers) != 0 {
				t.Fatalf("unexpected markers %v", markers)
			}
			t.Logf("%d batches, markers %v", len(batches), markers)
		})
	}
}
