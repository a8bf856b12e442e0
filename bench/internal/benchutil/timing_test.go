package benchutil

import (
	"errors"
	"testing"
	"time"
)

// TimeMedian calls f reps+1 times (one warm-up) and reports a time no
// shorter than the median run's sleep: the warm-up is not a timed run.
func TestTimeMedianWarmsUpOnceThenReportsTheMedianOfTheTimedRuns(t *testing.T) {
	// Warm-up 0, then 1, 20, 2 ms: the median of the timed runs is at
	// least 2 ms however slow the machine (sleeps only run long).
	sleeps := []time.Duration{0, time.Millisecond, 20 * time.Millisecond, 2 * time.Millisecond}
	calls := 0
	d, err := TimeMedian(3, func() error {
		time.Sleep(sleeps[calls])
		calls++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 4 {
		t.Errorf("f called %d times, want 4 (one warm-up, three timed)", calls)
	}
	if d < 2*time.Millisecond {
		t.Errorf("median %v, want at least 2ms (the middle of 1, 20 and 2 ms)", d)
	}
}

// An error of f, in the warm-up or in a timed run, ends the timing and
// is returned; no later run is made.
func TestTimeMedianStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	for _, failAt := range []int{0, 2} {
		calls := 0
		_, err := TimeMedian(5, func() error {
			calls++
			if calls-1 == failAt {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) {
			t.Errorf("fail at call %d: err %v, want boom", failAt, err)
		}
		if calls != failAt+1 {
			t.Errorf("fail at call %d: f called %d times, want %d", failAt, calls, failAt+1)
		}
	}
}

// Fewer than one timed repetition is refused before f runs.
func TestTimeMedianRefusesFewerThanOneRepetition(t *testing.T) {
	calls := 0
	if _, err := TimeMedian(0, func() error { calls++; return nil }); err == nil {
		t.Error("reps 0: no error")
	}
	if calls != 0 {
		t.Errorf("reps 0: f called %d times, want 0", calls)
	}
}
