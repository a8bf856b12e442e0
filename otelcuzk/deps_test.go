package otelcuzk

import (
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/internal/depstest"
)

// Curio imports this package: it must not pull in gnark or the cgo bridge
// (DESIGN.md, "Packages").
func TestPackageGraphHasNoGnarkAndNoCgoBridge(t *testing.T) {
	for _, p := range depstest.List(t, nil, ".", "./tracefile") {
		if strings.HasPrefix(p.ImportPath, "github.com/consensys/") || strings.HasPrefix(p.Module, "github.com/consensys/") {
			t.Errorf("depends on gnark: %s", p.ImportPath)
		}
		if strings.HasPrefix(p.ImportPath, "github.com/otelcuzk/otelcuzk/") && !strings.HasPrefix(p.ImportPath, "github.com/otelcuzk/otelcuzk/otelcuzk") {
			t.Errorf("depends on %s", p.ImportPath)
		}
		if strings.HasPrefix(p.ImportPath, "github.com/otelcuzk/otelcuzk/") && p.CgoFiles != 0 {
			t.Errorf("%s uses cgo", p.ImportPath)
		}
	}
}
