package human

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestBytes(t *testing.T) {
	for b, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 3 << 29: "1.5 GiB", 2 << 40: "2.0 TiB"} {
		if got := Bytes(b); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", b, got, want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if OneLine(nil) != nil {
		t.Error("OneLine(nil) is not nil")
	}
	one := errors.New("one")
	if OneLine(one) != one {
		t.Error("a one-line error was not returned as it is")
	}
	if got := OneLine(errors.Join(one, errors.New("two"))).Error(); got != "one; two" {
		t.Errorf("OneLine(join) = %q", got)
	}
}

func TestPluralIsSUnlessOne(t *testing.T) {
	for n, want := range map[int]string{0: "s", 1: "", 2: "s", -1: "s"} {
		if got := Plural(n); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestMillisecondsKeepsFractions(t *testing.T) {
	if got := Milliseconds(1500 * time.Microsecond); got != 1.5 {
		t.Errorf("Milliseconds(1.5ms) = %v", got)
	}
	if got := Milliseconds(0); got != 0 {
		t.Errorf("Milliseconds(0) = %v", got)
	}
}

// Every unit boundary, on both sides, and the roundings that would have
// printed "1000.0 ms" or "60 s".
func TestDurationPrintsOneUnitWithASpaceRoundedBeforeTheUnitIsChosen(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0.00 ms"},
		{53 * time.Microsecond, "0.05 ms"},
		{4123 * time.Microsecond, "4.12 ms"},
		{9994 * time.Microsecond, "9.99 ms"},
		{9996 * time.Microsecond, "10.0 ms"},
		{57010552 * time.Nanosecond, "57.0 ms"}, // curio-task's "prove 57.010552ms"
		{609300 * time.Microsecond, "609.3 ms"},
		{999960 * time.Microsecond, "1.0 s"},
		{9300 * time.Millisecond, "9.3 s"},
		{9960 * time.Millisecond, "10 s"},
		{26 * time.Second, "26 s"},
		{59600 * time.Millisecond, "1 min"},
		{125 * time.Second, "2 min 5 s"},
		{59*time.Minute + 45*time.Second, "1 h"},
		{time.Hour + 3*time.Minute, "1 h 3 min"},
		{50 * time.Hour, "50 h"},
		{-1500 * time.Millisecond, "-1.5 s"},
	} {
		if got := Duration(c.d); got != c.want {
			t.Errorf("Duration(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	if got := Duration(math.MinInt64); got != "-2562047 h 47 min" {
		t.Errorf("Duration(MinInt64) = %q", got)
	}
}
