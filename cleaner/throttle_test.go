package cleaner

import (
	"context"
	"errors"
	"math"
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
	clock.mu.Lock()
	armed := len(clock.waiters)
	clock.mu.Unlock()
	if armed != 0 {
		t.Fatal("a charge within the burst waited")
	}
	// 1,300 bytes at 1,000 B/s end 1.3 s from now: wait 1 s.
	done := make(chan error, 1)
	go func() { done <- th.Wait(ctx, 1000) }()
	clock.waitForTimers(t, 1)
	clock.mu.Lock()
	due := clock.waiters[0].at
	clock.mu.Unlock()
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
	clock.waitForTimers(t, 1)
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
