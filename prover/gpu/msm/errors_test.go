package msm

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/otelcuzk/otelcuzk/cudaspans"
	"github.com/otelcuzk/otelcuzk/otelcuzk"
)

func TestMSMErrorsHaveTheirErrorType(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("msm.g1.a: %w: %w", ErrTooLarge, cudaspans.ErrOutOfMemory), otelcuzk.ErrorTypeOutOfMemory},
		{fmt.Errorf("preload: %w", ErrBaseBudget), otelcuzk.ErrorTypeOverBudget},
		{fmt.Errorf("msm: %w", ErrBaseSetEvicted), otelcuzk.ErrorTypeEvicted},
		{fmt.Errorf("msm: %w", &cudaspans.Error{Call: "cuLaunchKernel", Code: 1}), otelcuzk.ErrorTypeCUDA},
		{fmt.Errorf("msm: %w", &cudaspans.Error{Call: "cuStreamSynchronize", Code: 700}), otelcuzk.ErrorTypeDeviceFault},
		{fmt.Errorf("msm: %w", context.Canceled), otelcuzk.ErrorTypeCanceled},
		{errors.New("msm: nil stream"), otelcuzk.ErrorTypeOther},
	} {
		if got := otelcuzk.ErrorType(tc.err); got != tc.want {
			t.Errorf("ErrorType(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
