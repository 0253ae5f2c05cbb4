package bench

import (
	"testing"
	"time"
)

// TestBudgetFirstCall: a deadline already past still grants every writer its
// first call (so a round always has something to time and read back), and
// nothing after it; a call budget is exact.
func TestBudgetFirstCall(t *testing.T) {
	past := budget{deadline: time.Now().Add(-time.Second)}
	if !past.more(0) || past.more(1) {
		t.Fatalf("past deadline: more(0)=%v more(1)=%v, want true, false", past.more(0), past.more(1))
	}
	future := budget{deadline: time.Now().Add(time.Hour)}
	if !future.more(5) {
		t.Fatal("a future deadline refused a call")
	}
	calls := budget{calls: 2}
	if !calls.more(1) || calls.more(2) {
		t.Fatalf("2 calls: more(1)=%v more(2)=%v", calls.more(1), calls.more(2))
	}
}
