package main

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/trace/noop"

	"github.com/otelcuzk/otelcuzk/cupti"
)

// Without the CUDA driver the example says that, in one line, rather than
// listing the CUPTI paths it tried (CUPTI is of no use without a driver).
func TestRunWithoutADriverSaysSo(t *testing.T) {
	if cupti.LibraryLoads(cupti.DriverLibrary) == nil {
		t.Skip("this host has the CUDA driver (main_gpu_test.go runs the example)")
	}
	err := run(context.Background(), noop.NewTracerProvider(), 1, 16)
	if !errors.Is(err, errNoDriver) {
		t.Errorf("run without a driver: %v, want %v", err, errNoDriver)
	}
}
