package human

import (
	"errors"
	"testing"
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
