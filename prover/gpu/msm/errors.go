package msm

import "github.com/otelcuzk/otelcuzk/otelcuzk/semconv"

// The errors callers branch on, each with its error.type
// (semconv.ErrorType).
var (
	// ErrTooLarge is returned (wrapped, with cudaspans.ErrOutOfMemory)
	// when an MSM does not fit in device memory even split into the
	// smallest chunks. error.type out_of_memory.
	ErrTooLarge = semconv.NewError(semconv.ErrorTypeOutOfMemory, "MSM does not fit in device memory")
	// ErrBaseSetEvicted is returned by an MSM over a base set that was
	// evicted before the MSM started. error.type evicted.
	ErrBaseSetEvicted = semconv.NewError(semconv.ErrorTypeEvicted, "base set evicted from the device")
	// ErrBaseBudget is returned by Preload when a base set does not fit in
	// the device budget (WithBaseBudget) even after evicting every idle set.
	// error.type over_budget.
	ErrBaseBudget = semconv.NewError(semconv.ErrorTypeOverBudget, "base set exceeds the device base budget")
)
