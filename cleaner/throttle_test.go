package cleaner

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

func TestThrottleHoldsTheRate(t *testing.T) {
	clock := newFakeClock()
	th := NewThrottle(1000, clock)
	ctx := context.Background()
	// Within the 300 ms burst: no wait.
	if err := th.Wait(ctx, 300); err != nil {
		t.Fatal(err)
	}
	if armed := len(clock.Pending()); armed != 0 {
		t.Fatal("a charge within the burst waited")
	}
	// 1,300 bytes at 1,000 B/s end 1.3 s from now: wait 1 s.
	done := make(chan error, 1)
	go func() { done <- th.Wait(ctx, 1000) }()
	clock.WaitForTimers(t, 1)
	due := clock.Pending()[0]
	if want := now.Add(time.Second); !due.Equal(want) {
		t.Fatalf("waits until %v, want %v", due, want)
	}
	clock.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Cancelling ends a wait.
	cctx, cancel := context.WithCancel(ctx)
	go func() { done <- th.Wait(cctx, 5000) }()
	clock.WaitForTimers(t, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait = %v", err)
	}
}

func TestThrottleUnlimited(t *testing.T) {
	var nilThrottle *Throttle
	if err := nilThrottle.Wait(context.Background(), 1<<40); err != nil {
		t.Fatal(err)
	}
	for _, rate := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		th := NewThrottle(rate, newFakeClock())
		if !math.IsInf(th.Rate(), 1) {
			t.Fatalf("rate %v gives limit %v", rate, th.Rate())
		}
		if err := th.Wait(context.Background(), 1<<40); err != nil {
			t.Fatal(err)
		}
	}
	c := New(Options{Throttle: NewThrottle(10, nil)})
	if c.Throttle().Rate() != 10 {
		t.Fatal("the cleaner does not share its throttle")
	}
}

// TestThrottleSharedByWorkers: workers charging one Throttle at once share
// its rate: two charges of a second's worth each wait until 1 s and 2 s
// (less the burst), not both until 1 s as two private throttles would.
func TestThrottleSharedByWorkers(t *testing.T) {
	clock := newFakeClock()
	th := NewThrottle(1000, clock)
	done := make(chan error, 2)
	for range 2 {
		go func() { done <- th.Wait(context.Background(), 1000) }()
	}
	clock.WaitForTimers(t, 2)
	var dues []time.Duration
	for _, at := range clock.Pending() {
		dues = append(dues, at.Sub(now))
	}
	slices.Sort(dues)
	if want := []time.Duration{time.Second - Window, 2*time.Second - Window}; !slices.Equal(dues, want) {
		t.Fatalf("two workers wait %v, want %v", dues, want)
	}
	clock.Advance(2 * time.Second)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
