package meta

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestSetClusterID(t *testing.T) {
	f := NewFSM()
	res := applyAll(t, f,
		&SetClusterID{ID: ""},
		&SetClusterID{ID: strings.Repeat("x", MaxClusterIDLen+1)},
		&SetClusterID{ID: "abc"},
		&SetClusterID{ID: "abc"},
		&SetClusterID{ID: "other"},
	)
	for i, want := range []error{ErrClusterID, ErrClusterID, nil, nil, ErrClusterID} {
		if !errors.Is(res[i].Err, want) {
			t.Errorf("command %d: %v, want %v", i, res[i].Err, want)
		}
	}
	if got := f.State().ClusterID(); got != "abc" {
		t.Fatalf("cluster id %q, want abc", got)
	}
	// The id survives a snapshot.
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := NewFSM()
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if got := g.State().ClusterID(); got != "abc" {
		t.Errorf("restored cluster id %q, want abc", got)
	}
}

// A version 1 snapshot, written before the cluster id was kept, still
// restores, with no cluster id.
func TestRestoreVersion1Snapshot(t *testing.T) {
	s := populated(t)
	b := EncodeState(s)
	b[len(snapshotMagic)] = 1
	b = b[:len(b)-2] // the empty cluster id and (version 3) no quotas: one length byte each
	got, err := DecodeState(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.ClusterID() != "" || !bytes.Equal(EncodeState(got), EncodeState(s)) {
		t.Errorf("version 1 snapshot decoded as %+v", got)
	}
}
