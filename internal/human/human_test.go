package human

import (
	"errors"
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
