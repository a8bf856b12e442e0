package msm

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk/semconv"
)

func TestMSMErrorsHaveTheirErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("msm.g1.a: %w: %w", ErrTooLarge, cudaspans.ErrOutOfMemory), semconv.ErrorTypeOutOfMemory},
		{fmt.Errorf("preload: %w", ErrBaseBudget), semconv.ErrorTypeOverBudget},
		{fmt.Errorf("msm: %w", ErrBaseSetEvicted), semconv.ErrorTypeEvicted},
		{fmt.Errorf("msm: %w", &cudaspans.Error{Call: "cuLaunchKernel", Code: 1}), semconv.ErrorTypeCUDA},
		{fmt.Errorf("msm: %w", &cudaspans.Error{Call: "cuStreamSynchronize", Code: 700}), semconv.ErrorTypeDeviceFault},
		{fmt.Errorf("msm: %w", context.Canceled), semconv.ErrorTypeCanceled},
		{errors.New("msm: nil stream"), semconv.ErrorTypeOther},
	} {
		if got := semconv.ErrorType(tc.err); got != tc.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
