package raftbench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/seglog/seglog/vfs"
	"github.com/seglog/seglog/vfs/vfstest"
)

// inmem is raft's own in-memory store as a Store.
type inmem struct{ *raft.InmemStore }

func (inmem) Close() error { return nil }

func inmemPeer(name string) Peer {
	return Peer{name, func(string) (Store, error) { return inmem{raft.NewInmemStore()}, nil }}
}

// measure's ratio is the median of the per-round ratios, not the ratio of
// the medians; the order of the peers rotates by one each round; a peer
// that fails is not run again and carries its error, and no ratio is
// taken to it in a round it did not finish.
func TestMeasureRatiosAndRotation(t *testing.T) {
	peers := []Peer{{Name: PeerSeglog}, {Name: PeerWAL}, {Name: PeerBolt}}
	// Per round, ops/s of each peer. seglog ÷ wal per round: 2, 1, 4 →
	// median 2, where the ratio of the medians (300 ÷ 200) would be 1.5.
	rates := map[string][]float64{
		PeerSeglog: {400, 300, 200},
		PeerWAL:    {200, 300, 50},
		PeerBolt:   {100, 100, 100},
	}
	var order []string
	res, err := measure("shape", peers, 3, func(p Peer, round int) (float64, float64, error) {
		order = append(order, p.Name)
		r := rates[p.Name][round]
		return 1e9 / r, r, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantOrder := []string{PeerSeglog, PeerWAL, PeerBolt, PeerWAL, PeerBolt, PeerSeglog, PeerBolt, PeerSeglog, PeerWAL}
	if !slices.Equal(order, wantOrder) {
		t.Errorf("order %v, want %v", order, wantOrder)
	}
	byPeer := map[string]Result{}
	for _, r := range res {
		byPeer[r.Peer] = r
	}
	s := byPeer[PeerSeglog]
	if s.Ratio != 2 || s.RatioBolt != 3 || s.PerSec != 300 || s.Rounds != 3 || s.Test != "shape" {
		t.Errorf("seglog: %+v; want ratio to wal 2 (median of 2, 1, 4), to bolt 3, 300/s over 3 rounds", s)
	}
	if math.Abs(s.NsPerOp-1e9/300) > 1e-6 {
		t.Errorf("seglog ns/op %v, want the median of the rounds' %v", s.NsPerOp, 1e9/300)
	}
	if w := byPeer[PeerWAL]; w.Ratio != 1 || w.RatioBolt != 2 {
		t.Errorf("raft-wal: %+v; want ratio 1 to itself and 2 to bolt", w)
	}

	// raft-boltdb fails in the second round.
	calls := map[string]int{}
	res, err = measure("shape", peers, 3, func(p Peer, round int) (float64, float64, error) {
		calls[p.Name]++
		if p.Name == PeerBolt && round == 1 {
			return 0, 0, errors.New("disk full")
		}
		r := rates[p.Name][round]
		return 1e9 / r, r, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls[PeerBolt] != 2 || calls[PeerSeglog] != 3 {
		t.Errorf("calls %v: a failed peer must not run again, the others must", calls)
	}
	for _, r := range res {
		switch r.Peer {
		case PeerBolt:
			if r.Error != "disk full" || r.Rounds != 1 {
				t.Errorf("raft-boltdb: %+v; want its error and the one round it finished", r)
			}
		case PeerSeglog:
			if r.RatioBolt != 4 || r.Ratio != 2 {
				t.Errorf("seglog: %+v; want ÷ bolt from round 0 only (4), ÷ wal 2", r)
			}
		}
	}

	// A cancelled run ends the measurement instead of marking a store.
	if _, err := measure("shape", peers, 2, func(Peer, int) (float64, float64, error) {
		return 0, 0, context.Canceled
	}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// Run with --only runs just the shapes it matches, on every peer, for the
// rounds asked, writes their rows, and leaves nothing in its directory.
func TestRunOnly(t *testing.T) {
	dir := t.TempDir()
	var rows, progress bytes.Buffer
	res, err := Run(context.Background(), dir, Config{
		Peers:     []Peer{inmemPeer(PeerSeglog), inmemPeer(PeerWAL)},
		Rounds:    2,
		RoundTime: time.Millisecond,
		Commands:  10,
		Only:      regexp.MustCompile(`^(Set|Get) \(`),
		Progress:  &progress,
		Rows:      &rows,
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res {
		got = append(got, r.Test+"/"+r.Peer)
		if r.Error != "" || r.Rounds != 2 || r.NsPerOp <= 0 || r.PerSec <= 0 || r.Ratio <= 0 || r.RatioBolt != 0 {
			t.Errorf("%+v: want 2 rounds, times, a ratio to raft-wal and none to the absent raft-boltdb", r)
		}
	}
	want := []string{
		"Set (8-byte value, one key)/" + PeerSeglog, "Set (8-byte value, one key)/" + PeerWAL,
		"Get (one of two keys set)/" + PeerSeglog, "Get (one of two keys set)/" + PeerWAL,
	}
	if !slices.Equal(got, want) {
		t.Errorf("results %v, want %v", got, want)
	}
	out := rows.String()
	if strings.Count(out, "shape (µs/op") != 1 || !strings.Contains(out, "Set (8-byte value, one key)") || !strings.Contains(out, "Get (one of two keys set)") {
		t.Errorf("rows:\n%s", out)
	}
	if n := strings.Count(progress.String(), "\n"); n != 2*2*2 {
		t.Errorf("%d progress lines, want one per shape, round and peer (8):\n%s", n, progress.String())
	}
	if names, err := vfs.Default.List(dir); err != nil || len(names) != 0 {
		t.Errorf("Run left %v (%v)", names, err)
	}
}

// Every store shape runs against raft's InmemStore (a store that is
// right by definition): the ops check what they read back, so a shape
// that reads the wrong entry or key fails here.
func TestEveryShapeOnInmemStore(t *testing.T) {
	if testing.Short() {
		t.Skip("fills two 50 MiB logs")
	}
	res, err := Run(context.Background(), t.TempDir(), Config{
		Peers:     []Peer{inmemPeer(PeerSeglog)},
		Rounds:    1,
		RoundTime: time.Millisecond,
		Commands:  10,
		Only:      regexp.MustCompile(`^(StoreLogs|GetLog|Set|Get)`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != len(Shapes(10))-1 {
		t.Errorf("%d results, want every shape but the cluster (%d)", len(res), len(Shapes(10))-1)
	}
	for _, r := range res {
		if r.Error != "" || r.NsPerOp <= 0 {
			t.Errorf("%+v", r)
		}
	}
}

// A store that cannot open is shown as refused with its error, and the
// others still run.
func TestRunRefusedPeer(t *testing.T) {
	bad := Peer{PeerBolt, func(string) (Store, error) { return nil, fmt.Errorf("no such store") }}
	var rows bytes.Buffer
	res, err := Run(context.Background(), t.TempDir(), Config{
		Peers: []Peer{inmemPeer(PeerSeglog), bad}, Rounds: 1, RoundTime: time.Millisecond,
		Only: regexp.MustCompile(`^SetUint64`), Rows: &rows,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Error != "" || res[0].PerSec <= 0 || res[1].Error != "no such store" {
		t.Errorf("results %+v", res)
	}
	if out := rows.String(); !strings.Contains(out, "refused") || !strings.Contains(out, "raft-boltdb: no such store") {
		t.Errorf("rows:\n%s", out)
	}
}

// The cluster elects a leader and applies every command on raft's
// InmemStore.
func TestClusterRate(t *testing.T) {
	if testing.Short() {
		t.Skip("elects a leader of three in-process nodes")
	}
	rate, err := ClusterRate(inmemPeer("inmem"), t.TempDir(), 50)
	if err != nil || rate <= 0 {
		t.Fatalf("rate %v, err %v", rate, err)
	}
	if _, err := ClusterRate(inmemPeer("inmem"), t.TempDir(), 0); err == nil {
		t.Error("a cluster of 0 commands was measured")
	}
}

// TestFloorStore: the floor writes each call's entries after the last
// call's, durably (the file holds them), and refuses everything else.
func TestFloorStore(t *testing.T) {
	dir := t.TempDir()
	s, err := FloorPeer.Open(filepath.Join(dir, "store"))
	if err != nil {
		t.Fatal(err)
	}
	logs := []*raft.Log{{Index: 1, Term: 2, Data: []byte("abc")}, {Index: 2, Term: 2, Data: []byte("de")}}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLog(&raft.Log{Index: 3, Term: 3, Data: []byte("f")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.FirstIndex(); !errors.Is(err, errFloorOnly) {
		t.Errorf("FirstIndex: %v, want errFloorOnly", err)
	}
	if err := s.Set([]byte("k"), nil); !errors.Is(err, errFloorOnly) {
		t.Errorf("Set: %v, want errFloorOnly", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data := vfstest.ReadFile(t, vfs.Default, filepath.Join(dir, "store", "floor.log"))
	var want []byte
	for _, l := range append(logs, &raft.Log{Index: 3, Term: 3, Data: []byte("f")}) {
		want = binary.BigEndian.AppendUint64(want, l.Index)
		want = binary.BigEndian.AppendUint64(want, l.Term)
		want = binary.BigEndian.AppendUint32(want, uint32(len(l.Data)))
		want = append(want, l.Data...)
	}
	if len(data) < len(want) || !bytes.Equal(data[:len(want)], want) || bytes.Count(data[len(want):], []byte{0}) != len(data)-len(want) {
		t.Fatalf("floor.log starts %x, want %x then zeros", data[:min(len(data), len(want))], want)
	}
}

// TestWriteRowsFloor: the floor's column and seglog's ratio to it appear
// when the floor ran, and not otherwise.
func TestWriteRowsFloor(t *testing.T) {
	res := []Result{
		{Test: "StoreLogs 1 × 128 B", Peer: PeerSeglog, NsPerOp: 2000, PerSec: 500, Ratio: 1.5, RatioFloor: 0.8},
		{Test: "StoreLogs 1 × 128 B", Peer: PeerWAL, NsPerOp: 3000, PerSec: 333},
		{Test: "StoreLogs 1 × 128 B", Peer: PeerFloor, NsPerOp: 1600, PerSec: 625},
	}
	var b strings.Builder
	WriteRows(&b, res, true)
	if !regexp.MustCompile(`(?m)^shape .* seglog raftlog +raft-wal +floor +÷ wal +÷ floor$`).MatchString(b.String()) ||
		!regexp.MustCompile(`(?m)^StoreLogs 1 × 128 B +2\.0 +3\.0 +1\.6 +1\.50 +0\.80$`).MatchString(b.String()) {
		t.Fatalf("with the floor:\n%s", b.String())
	}
	b.Reset()
	WriteRows(&b, res[:2], true)
	if strings.Contains(b.String(), "floor") || !regexp.MustCompile(`(?m)^StoreLogs 1 × 128 B +2\.0 +3\.0 +1\.50$`).MatchString(b.String()) {
		t.Fatalf("without the floor:\n%s", b.String())
	}
}
