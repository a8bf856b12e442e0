package otelcuzk

import (
	"strings"
	"testing"

	"github.com/otelcuzk/otelcuzk/internal/depstest"
)

// human is the one package of this module outside otelcuzk/ that
// otelcuzk's packages may import (tracefile writes its milliseconds and
// plurals with it): a leaf of the standard library, checked below.
const human = "github.com/otelcuzk/otelcuzk/internal/human"

// Curio imports this package: it must not pull in gnark or the cgo bridge
// (DESIGN.md, "Packages").
func TestPackageGraphHasNoGnarkAndNoCgoBridge(t *testing.T) {
	for _, p := range depstest.List(t, nil, ".", "./tracefile") {
		if strings.HasPrefix(p.ImportPath, "github.com/consensys/") || strings.HasPrefix(p.Module, "github.com/consensys/") {
			t.Errorf("depends on gnark: %s", p.ImportPath)
		}
		if strings.HasPrefix(p.ImportPath, "github.com/otelcuzk/otelcuzk/") && !strings.HasPrefix(p.ImportPath, "github.com/otelcuzk/otelcuzk/otelcuzk") && p.ImportPath != human {
			t.Errorf("depends on %s", p.ImportPath)
		}
		if strings.HasPrefix(p.ImportPath, "github.com/otelcuzk/otelcuzk/") && p.CgoFiles != 0 {
			t.Errorf("%s uses cgo", p.ImportPath)
		}
	}
}

// The one package of the module otelcuzk's may import besides their own
// imports the standard library only, so it brings nothing in.
func TestHumanIsALeafOfTheStandardLibrary(t *testing.T) {
	for _, p := range depstest.List(t, nil, human) {
		if !p.Standard && p.ImportPath != human {
			t.Errorf("%s depends on %s", human, p.ImportPath)
		}
	}
}
