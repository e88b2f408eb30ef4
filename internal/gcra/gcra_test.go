package gcra

import (
	"fmt"
	"testing"
	"time"
)

var start = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// An allowance of 3 refilling at one a minute: 3 attempts at once, then
// one a minute, and a full allowance again after 3 quiet minutes.
func TestTake(t *testing.T) {
	tab := NewTable(10)
	steps := []struct {
		at   time.Duration
		want time.Duration
	}{
		{0, 0}, {0, 0}, {0, 0},
		{0, time.Minute},
		{30 * time.Second, 30 * time.Second},
		{time.Minute, 0},
		{time.Minute, time.Minute},
		{5 * time.Minute, 0}, {5 * time.Minute, 0}, {5 * time.Minute, 0},
		{5 * time.Minute, time.Minute},
	}
	for i, s := range steps {
		if got := tab.Take("signin:a", 3, time.Minute, start.Add(s.at)); got != s.want {
			t.Errorf("step %d at +%v: wait %v, want %v", i, s.at, got, s.want)
		}
	}
}

func TestWait(t *testing.T) {
	for _, tc := range []struct {
		tat  time.Time
		want time.Duration
	}{
		{time.Time{}, 0},
		{start, 0},
		{start.Add(2 * time.Minute), 0},
		{start.Add(3 * time.Minute), time.Minute},
		{start.Add(150 * time.Second), 30 * time.Second},
	} {
		if got := Wait(tc.tat, 3, time.Minute, start); got != tc.want {
			t.Errorf("Wait(%v) = %v, want %v", tc.tat, got, tc.want)
		}
	}
}

// Refund gives back one attempt, Reset all of them; neither touches
// another key.
func TestRefundReset(t *testing.T) {
	tab := NewTable(10)
	for _, k := range []string{"signin:a", "signin:b"} {
		tab.Take(k, 1, time.Hour, start)
	}
	tab.Refund("signin:a", time.Hour, start)
	if got := tab.Take("signin:a", 1, time.Hour, start); got != 0 {
		t.Errorf("after a refund: wait %v", got)
	}
	tab.Reset("signin:a")
	if got := tab.Take("signin:a", 1, time.Hour, start); got != 0 {
		t.Errorf("after a reset: wait %v", got)
	}
	if got := tab.Take("signin:b", 1, time.Hour, start); got != time.Hour {
		t.Errorf("another key: wait %v, want 1h", got)
	}
}

// Each kind is bounded on its own: filling one drops its key closest to
// refilling, and no key of another kind.
func TestBoundPerKind(t *testing.T) {
	tab := NewTable(3)
	tab.Take("signin:victim", 1, time.Hour, start)
	for i := range 3 {
		tab.Take(fmt.Sprintf("reset:%d", i), 1, time.Duration(i+1)*time.Minute, start)
	}
	tab.Take("reset:new", 1, time.Hour, start)
	if got := tab.Take("signin:victim", 1, time.Hour, start); got != time.Hour {
		t.Errorf("a full kind dropped a key of another kind: wait %v", got)
	}
	if got := tab.Take("reset:0", 1, time.Minute, start); got != 0 {
		t.Errorf("the key closest to refilling was kept: wait %v", got)
	}
	for _, k := range []string{"reset:2", "reset:new"} {
		if got := tab.Take(k, 1, time.Hour, start); got == 0 {
			t.Errorf("%s dropped; want the key closest to refilling dropped", k)
		}
	}
}
