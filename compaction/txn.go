package compaction

import (
	"fmt"
	"slices"

	"github.com/seglog/seglog/record"
)

// marker is a transaction marker's place and kind.
type marker struct {
	offset int64
	abort  bool
}

// txnState is what a round knows of producers and transactions from a
// first pass over the run: every marker, by producer, and each
// producer's last batch, whose header must survive (Kafka keeps the last
// batch of a producer so its epoch and sequence are not lost).
type txnState struct {
	markers   map[int64][]marker
	lastBatch map[int64]int64
	// retained says, per producer, whether the open transaction being
	// copied kept any data; its marker may go only if it kept none.
	retained map[int64]bool
}

func newTxnState() *txnState {
	return &txnState{markers: map[int64][]marker{}, lastBatch: map[int64]int64{}, retained: map[int64]bool{}}
}

// observe records b's producer and, for a marker, its kind.
func (t *txnState) observe(b record.Batch, it *record.Iterator) error {
	pid := b.ProducerID()
	if pid < 0 {
		return nil
	}
	t.lastBatch[pid] = b.BaseOffset()
	if !b.IsControl() || !b.IsTransactional() {
		return nil
	}
	m, ok, err := markerOf(b, it)
	if err != nil || !ok {
		return err
	}
	t.markers[pid] = append(t.markers[pid], marker{offset: b.BaseOffset(), abort: m.Type == record.ControlAbort})
	return nil
}

// markerOf returns the transaction marker a control batch holds, if any.
func markerOf(b record.Batch, it *record.Iterator) (record.Marker, bool, error) {
	if err := it.Reset(b); err != nil {
		return record.Marker{}, false, err
	}
	if !it.Next() {
		return record.Marker{}, false, it.Err()
	}
	r := it.Record()
	_, typ, err := record.ParseControlKey(r.Key)
	if err != nil {
		return record.Marker{}, false, fmt.Errorf("control batch at %d: %w", b.BaseOffset(), err)
	}
	if typ != record.ControlAbort && typ != record.ControlCommit {
		return record.Marker{}, false, nil
	}
	m, err := record.ParseMarker(r)
	return m, err == nil, err
}

// outcome of a transactional data batch.
type outcome int

const (
	committed outcome = iota
	aborted
	// undecided: no marker for it in the run. Its records are kept and not
	// mapped, since an abort may still come.
	undecided
)

// outcomeOf says how the transaction holding the data batch at offset of
// producer pid ended: the first marker of pid after offset decides.
func (t *txnState) outcomeOf(pid, offset int64) outcome {
	ms := t.markers[pid]
	i, _ := slices.BinarySearchFunc(ms, offset, func(m marker, o int64) int {
		switch {
		case m.offset < o:
			return -1
		case m.offset > o:
			return 1
		}
		return 0
	})
	if i == len(ms) {
		return undecided
	}
	if ms[i].abort {
		return aborted
	}
	return committed
}
