package depstest

import "testing"

// The graph of this package lists it in its module and os/exec as the
// standard library's, and no runtime/cgo with CGO_ENABLED=0.
func TestListDescribesThisPackagesGraph(t *testing.T) {
	var self, std bool
	for _, p := range List(t, []string{"CGO_ENABLED=0"}, ".") {
		switch {
		case p.ImportPath == "github.com/otelcuzk/otelcuzk/internal/depstest":
			self = p.Module == "github.com/otelcuzk/otelcuzk" && !p.Standard && p.CgoFiles == 0
		case p.ImportPath == "os/exec":
			std = p.Standard && p.Module == ""
		case p.ImportPath == "runtime/cgo":
			t.Errorf("runtime/cgo listed with CGO_ENABLED=0")
		}
	}
	if !self || !std {
		t.Errorf("this package described right: %v; os/exec as standard: %v", self, std)
	}
}

// A package with cgo files is counted as such.
func TestListCountsCgoFiles(t *testing.T) {
	for _, p := range List(t, []string{"CGO_ENABLED=1"}, "runtime/cgo") {
		if p.ImportPath == "runtime/cgo" && p.CgoFiles > 0 {
			return
		}
	}
	t.Error("runtime/cgo listed without cgo files")
}
