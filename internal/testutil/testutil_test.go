package testutil_test

import (
	"slices"
	"testing"
	"time"

	"github.com/seglog/seglog"
	"github.com/seglog/seglog/internal/testutil"
	"github.com/seglog/seglog/record"
)

// The fake clocks are seglog.Clocks: a test hands one to seglog.Options,
// store.Options, the cleaner and the ui alike.
var (
	_ seglog.Clock = (*testutil.Clock)(nil)
	_ seglog.Clock = testutil.NowFunc(nil)
)

// TestClock: AfterFunc calls run in deadline order, each seeing its own
// deadline; a stopped one does not run; After's channel receives the new
// time once due; Pending lists what is still armed.
func TestClock(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	c := testutil.NewClock(start)
	var ran []time.Duration
	c.AfterFunc(3*time.Second, func() { ran = append(ran, c.Now().Sub(start)) })
	c.AfterFunc(1*time.Second, func() { ran = append(ran, c.Now().Sub(start)) })
	stopped := c.AfterFunc(2*time.Second, func() { t.Error("a stopped timer ran") })
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop reports wrongly whether the timer was armed")
	}
	ch := c.After(2 * time.Second)
	late := c.After(time.Hour)
	if got := len(c.Pending()); got != 4 {
		t.Fatalf("%d timers pending, want 4", got)
	}
	c.Advance(5 * time.Second)
	if want := []time.Duration{time.Second, 3 * time.Second}; !slices.Equal(ran, want) {
		t.Fatalf("AfterFunc calls ran at %v, want %v", ran, want)
	}
	select {
	case at := <-ch:
		if !at.Equal(start.Add(5 * time.Second)) {
			t.Fatalf("After delivered %v", at)
		}
	default:
		t.Fatal("a due After channel is empty")
	}
	select {
	case <-late:
		t.Fatal("an After an hour away fired")
	default:
	}
	if p := c.Pending(); len(p) != 1 || !p[0].Equal(start.Add(time.Hour)) {
		t.Fatalf("pending %v, want only the hour's", p)
	}
	if now := <-c.After(0); !now.Equal(c.Now()) {
		t.Fatalf("After(0) delivered %v", now)
	}
}

// TestCompareRecords: offsets, keys and values count, and a null key is
// not an empty one.
func TestCompareRecords(t *testing.T) {
	a := []record.Record{{Offset: 0, Key: []byte("k"), Value: []byte("v")}, {Offset: 1, Value: []byte("w")}}
	if err := testutil.CompareRecords(a, slices.Clone(a)); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]record.Record{
		"offset":    {a[0], {Offset: 2, Value: []byte("w")}},
		"value":     {a[0], {Offset: 1, Value: []byte("x")}},
		"empty key": {a[0], {Offset: 1, Key: []byte{}, Value: []byte("w")}},
		"missing":   {a[0]},
		"extra":     {a[0], a[1], a[1]},
	} {
		if err := testutil.CompareRecords(b, a); err == nil {
			t.Errorf("%s: no difference found", name)
		}
	}
}
