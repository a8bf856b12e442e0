package cudaspans

import (
	"errors"
	"fmt"
	"testing"
)

func TestStickyResultsMatchErrSticky(t *testing.T) {
	for code, want := range map[int]bool{700: true, 719: true, 214: true, 999: true, 46: true,
		2: false, 1: false, 100: false, 500: false, 600: false} {
		err := fmt.Errorf("msm: %w", &Error{Call: "cuStreamSynchronize", Code: code, Name: "X", Message: "m"})
		if got := errors.Is(err, ErrSticky); got != want {
			t.Errorf("CUresult %d: errors.Is(ErrSticky) = %v, want %v", code, got, want)
		}
	}
	if errors.Is(&Error{Code: 700}, ErrOutOfMemory) || errors.Is(&Error{Code: 2}, ErrSticky) {
		t.Error("out of memory and sticky errors are told apart")
	}
}
